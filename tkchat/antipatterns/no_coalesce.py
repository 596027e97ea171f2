"""BROKEN ON PURPOSE — ``no-coalesce``: one insert and one forced redraw per token.

Generation and transport are fine, but the consumer treats every token as its own screen
update: insert, then ``update_idletasks()`` to force the redraw, token after token. A redraw
costs about as much at 5 characters as at 500, so at a few hundred tokens per second the main
thread spends its time redrawing; in a flood it falls behind for good. The sender's
coalescing is off too, so every token really arrives on its own.
"""

from __future__ import annotations

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import EndsInTranscript
from tkchat.ui.transcript.transcript import AnswerView


class InsertEveryToken(EndsInTranscript):
    name = "no-coalesce"
    broken = True
    coalesce = False

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        for chunk in chunks:
            # THE MISTAKE: a widget update and a full redraw for each single token.
            self.host.transcript.append(view, chunk)
            self.host.redraw()
