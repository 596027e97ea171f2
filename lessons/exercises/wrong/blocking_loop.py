"""A typical wrong solution: the model loop runs in ``start``, on the main thread.

The text streams, because every token is inserted and the widget redrawn — but the main
thread does not return to the event loop until the whole answer is generated, so clicks,
keys and scrolling wait, and the heartbeat stands still.

Predict which of the self-test's questions fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/blocking_loop.py:Pipeline --tokens 1000``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import threading
import time

from tkchat.events import Done, Error, GenerationStats
from tkchat.generate.backend import BackendError, GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "blocking-loop"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller
        gen = controller.new_gen()
        started = time.perf_counter()
        tokens = 0
        assembler = Utf8Assembler()  # a character's bytes may come in two tokens
        try:
            with controller.model_lock:
                # THE MISTAKE: the model's tokens, iterated right here, in the Send handler.
                for piece in controller.backend.stream(request, threading.Event()):
                    if isinstance(piece, PromptProgress):
                        continue  # the prompt being read (the model reports it): no text yet
                    tokens += 1
                    text = assembler.feed(piece)
                    if text:
                        self.host.transcript.append(view, text)
                        self.host.redraw()  # the text appears; no click or key is handled
        except BackendError as exc:
            self.host.end_answer(Error(gen, tokens + 1, exc.kind, str(exc)))
            return
        stats = GenerationStats(tokens=tokens, elapsed_s=time.perf_counter() - started)
        self.host.end_answer(Done(gen, tokens + 1, "stop", stats))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: no events travel, ``start`` wrote the text itself."""

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
