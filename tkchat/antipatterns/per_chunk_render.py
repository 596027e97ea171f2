"""BROKEN ON PURPOSE — ``per-chunk-render``: re-render the whole answer for every chunk.

The worker, the queue and the 16 ms tick are all fine. But for each chunk the answer's whole
markdown is converted to HTML again and handed to a tkhtmlview widget (``set_html``), the way
``element.innerHTML = marked(fullText)`` is done on every chunk in a browser. Each render costs
more than the last because the answer keeps growing: the total is quadratic, and long answers
freeze the window more and more as they go.
"""

from __future__ import annotations

import time
from typing import Any

from tkchat.generate.backend import GenerationRequest
from tkchat.render.safe_markdown import (  # (asyncio-render renders through it too)
    convert_whole_document as convert_whole_document,
)
from tkchat.ui.look.html_fonts import stock_tkhtmlview
from tkchat.ui.look.theme import set_role
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView

ANSWER_HEIGHT_LINES = 16


class RenderEveryChunk:
    name = "per-chunk-render"
    broken = True
    coalesce = False

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.widgets: dict[int, Any] = {}  # answer number -> its HTMLScrolledText
        self.render_costs: list[tuple[int, float]] = []  # (answer chars, ms) per re-render

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.embed(view)
        self.host.consumer.follow(self.host.controller.start(request))

    def embed(self, view: AnswerView) -> None:
        """The answer lives in its own HTML widget, embedded in the transcript."""
        from tkhtmlview import HTMLScrolledText

        widget = HTMLScrolledText(
            self.host.transcript.text,
            height=ANSWER_HEIGHT_LINES,
            width=88,
            background="white",
            borderwidth=0,
        )
        set_role(widget, "keep")  # tkhtmlview's black text needs its white page, in any theme
        # no wider than the chat (88 characters were cut at the right of a half-screen
        # window: compare on a 1280-pixel projector)
        room = self.host.transcript.text.winfo_width() - 40
        if 1 < room < widget.winfo_reqwidth():
            widget.configure(width=max(20, 88 * room // widget.winfo_reqwidth()))
        self.host.transcript.embed(view, widget)
        self.widgets[view.number] = widget

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        widget = self.widgets[view.number]
        for chunk in chunks:
            self.host.transcript.record(view, chunk)
            # THE MISTAKE: the whole answer, parsed and rendered again, for every chunk.
            started = time.perf_counter()
            with stock_tkhtmlview():
                widget.set_html(convert_whole_document(view.text))
            widget.see("end")
            self.render_costs.append((len(view.text), (time.perf_counter() - started) * 1000))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.widgets.pop(view.number, None)
        self.host.transcript.finish(view, stopped=stopped, error=error, render=False)
