"""A typical wrong solution: Stop stops the screen, not the model.

The model runs on a thread of its own, its text travels through the window's queue, and the
16 ms tick shows it: the window stays smooth, and Stop ends the answer on screen at once. But
the model loop was handed a fresh ``threading.Event()`` that no one else holds. Stop sets the
event of the controller's own worker — and this pipeline never started one — so the loop
never hears it: the model goes on computing the rest of the answer, unseen, holding the model
(and a core) until it is done. The next question waits for it.

Predict what the self-test says, then run:
``tkchat selftest --mode lessons/exercises/wrong/stop_not_wired.py:Pipeline``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import threading
import time

from tkchat.events import GenerationStats
from tkchat.generate.backend import BackendError, GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.transport.channel import GenerationSender
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "stop-not-wired"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller
        gen = controller.new_gen()
        self.host.consumer.follow(gen)  # right: the tick shows this generation's text
        worker = threading.Thread(target=self._generate, args=(gen, request), daemon=True)
        worker.start()  # right: the main thread returns at once

    def _generate(self, gen: int, request: GenerationRequest) -> None:
        """The worker thread: the model loop, its text sent through the window's queue."""
        controller = self.host.controller
        sender = GenerationSender(controller.channel, gen)
        started = time.perf_counter()
        tokens = 0
        assembler = Utf8Assembler()
        # THE MISTAKE: a new Event that nothing else holds. Stop can never set it.
        cancel = threading.Event()
        try:
            with controller.model_lock:
                for piece in controller.backend.stream(request, cancel):
                    if isinstance(piece, PromptProgress):
                        continue  # the prompt being read: no text yet
                    tokens += 1
                    sender.text(assembler.feed(piece))
        except BackendError as exc:
            sender.error(exc.kind, str(exc), GenerationStats(tokens=tokens))
            return
        sender.text(assembler.finish())
        stats = GenerationStats(tokens=tokens, elapsed_s=time.perf_counter() - started)
        sender.done("stop", stats)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
