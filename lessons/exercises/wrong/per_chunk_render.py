"""A typical wrong solution: the whole answer's markdown rendered again for every chunk.

The worker, the queue and the 16 ms tick are right. But each chunk makes ``show`` convert the
*whole* answer so far to HTML and hand it to an HTML widget, the way
``element.innerHTML = marked(fullText)`` is done in a browser. Each render costs more than
the last, because the answer keeps growing, and a tick may bring dozens of chunks: smooth at
first, then longer and longer freezes.

Predict which checks of the self-test fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/per_chunk_render.py:Pipeline --tokens 400``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

from typing import Any

from tkchat.generate.backend import GenerationRequest
from tkchat.render.safe_markdown import markdown_to_safe_html
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "per-chunk-render"
    broken = False
    # Every token stays a chunk of its own, as in tkchat's own per-chunk-render demo. (With
    # True, the worker merges the chunks still queued while the window is busy rendering:
    # fewer renders, each of the whole answer all the same.)
    coalesce = False

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.widgets: dict[int, Any] = {}  # answer number -> its HTML widget

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        from tkhtmlview import HTMLScrolledText

        widget = HTMLScrolledText(self.host.transcript.text, height=16, width=88)
        self.host.transcript.embed(view, widget)  # the answer shows in its own HTML widget
        self.widgets[view.number] = widget
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        widget = self.widgets[view.number]
        for chunk in chunks:
            self.host.transcript.record(view, chunk)  # view.text: the answer so far
            # THE MISTAKE: the whole answer, parsed and rendered again, for every chunk.
            widget.set_html(markdown_to_safe_html(view.text))
            widget.see("end")

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.widgets.pop(view.number, None)
        self.host.transcript.finish(view, stopped=stopped, error=error, render=False)
