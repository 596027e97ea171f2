"""A typical wrong solution: ``show`` that waits, to pace the text.

Generation and transport are right. But the student wanted the text to come out at a
steady, typewriter-like pace, so ``show`` sleeps 40 ms after each insert. A sleep does no
work at all — the CPU is idle — and yet for those 40 ms the main thread is not in the event
loop: no click, no key, no redraw, no timer. For the window, waiting inside a callback is
exactly as bad as working in it, and the self-test counts the time from call to return, not
only the CPU time.

Predict which checks of the self-test fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/sleepy_show.py:Pipeline``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import time

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView

PACE_S = 0.040


class Pipeline:
    name = "sleepy-show"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))
        time.sleep(PACE_S)  # THE MISTAKE: the main thread waits here, every tick

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
