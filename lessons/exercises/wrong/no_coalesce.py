"""A typical wrong solution: one insert and one forced redraw per token.

Generation and transport are right, but ``show`` treats every token as its own screen
update, and forces a redraw after each (``host.redraw()``), and the worker is told never to
merge chunks. A redraw costs about as much for 5 characters as for 500: at a few tokens a
second nobody notices; at thousands the main thread spends its time redrawing.

Predict which checks of the self-test fail, at 50 and at 5,000 tokens/s:
``tkchat selftest --mode lessons/exercises/wrong/no_coalesce.py:Pipeline --rate 5000``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "no-coalesce"
    broken = False
    coalesce = False  # every token travels alone

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        for chunk in chunks:
            # THE MISTAKE: a widget update and a full redraw for every single token.
            self.host.transcript.append(view, chunk)
            self.host.redraw()

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
