"""A blocking loop for the grader's hostile files (not a test module): the model's tokens
iterated in ``start`` on the main thread, each shown and slept on (2 ms), so that every
answer holds the main loop for seconds whatever the machine — the mistake the files below
try to hide from the grade."""

from __future__ import annotations

import threading
import time

from tkchat.events import Done, Error, GenerationStats
from tkchat.generate.backend import BackendError, GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView

PER_TOKEN_S = 0.002


class BlockingPipeline:
    name = "blocking"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller
        gen = controller.new_gen()
        started = time.perf_counter()
        tokens = 0
        assembler = Utf8Assembler()
        try:
            with controller.model_lock:
                for piece in controller.backend.stream(request, threading.Event()):
                    if isinstance(piece, PromptProgress):
                        continue
                    tokens += 1
                    text = assembler.feed(piece)
                    if text:
                        self.host.transcript.append(view, text)
                        self.host.redraw()
                    time.sleep(PER_TOKEN_S)
        except BackendError as exc:
            self.host.end_answer(Error(gen, tokens + 1, exc.kind, str(exc)))
            return
        stats = GenerationStats(tokens=tokens, elapsed_s=time.perf_counter() - started)
        self.host.end_answer(Done(gen, tokens + 1, "stop", stats))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: ``start`` wrote the text itself."""

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
