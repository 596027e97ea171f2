"""A typical wrong solution: the worker thread writes into the window.

The model runs on a thread of its own, so the main thread never waits and the window stays
smooth. But that thread also writes each piece of text into the text widget itself. Tk is
not thread-safe; tkinter quietly hands such a call over to the main thread and waits for it,
so it *seems* to work — until the main thread is not in its event loop ("RuntimeError: main
thread is not in main loop"), or the two threads end up waiting for each other.

Predict what the self-test says, then run:
``tkchat selftest --mode lessons/exercises/wrong/tk_from_worker.py:Pipeline``
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
    name = "tk-from-worker"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        worker = threading.Thread(target=self._generate, args=(view, request), daemon=True)
        worker.start()  # right: the main thread returns at once

    def _generate(self, view: AnswerView, request: GenerationRequest) -> None:
        """The worker thread."""
        controller = self.host.controller
        gen = controller.new_gen()
        started = time.perf_counter()
        tokens = 0
        assembler = Utf8Assembler()
        try:
            with controller.model_lock:
                for piece in controller.backend.stream(request, threading.Event()):
                    if isinstance(piece, PromptProgress):
                        continue  # the prompt being read (the model reports it): no text yet
                    tokens += 1
                    text = assembler.feed(piece)
                    if text:
                        # THE MISTAKE: a widget, written from a thread that is not the main one.
                        self.host.transcript.append(view, text)
        except BackendError as exc:
            self.host.end_answer(Error(gen, tokens + 1, exc.kind, str(exc)))  # (again)
            return
        stats = GenerationStats(tokens=tokens, elapsed_s=time.perf_counter() - started)
        self.host.end_answer(Done(gen, tokens + 1, "stop", stats))  # (and again)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: no events travel, the worker wrote the text itself."""

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
