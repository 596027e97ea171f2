"""BROKEN ON PURPOSE — ``asyncio-render``: re-render the whole answer in an ``async for``.

Everything asyncio is right: the model computes on a worker thread, the loop is Tk's own
(``asyncio-tk``: a Tk timer steps it every 16 ms), and the coroutine ``async for``s the
tokens. But for each chunk it converts the whole answer's markdown to HTML again and hands it
to a tkhtmlview widget — what ``per-chunk-render`` does, here inside the coroutine. ``async``
does not make CPU work free: the conversion runs on the loop's thread, which is Tk's, and
costs more with every chunk because the answer keeps growing (quadratic in all). A step that
takes a dozen chunks renders a dozen times before Tk gets the thread back.
"""

from __future__ import annotations

import time

from tkchat.aio.tk_loop import AsyncioTkPipeline, StepOut
from tkchat.antipatterns import per_chunk_render
from tkchat.antipatterns.per_chunk_render import RenderEveryChunk
from tkchat.generate.backend import GenerationRequest
from tkchat.ui.look.html_fonts import stock_tkhtmlview
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class RenderInTheCoroutine(AsyncioTkPipeline):
    name = "asyncio-render"
    broken = True

    def __init__(self, host: PipelineHost) -> None:
        super().__init__(host)
        self.render = RenderEveryChunk(host)  # its widget per answer, and how it ends

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread, from the Send handler."""
        self.render.embed(view)
        super().start(view, request)

    def make_out(self, view: AnswerView, gen: int) -> StepOut:
        """Each chunk drawn the moment the coroutine has it."""
        return StepOut(gen, on_text=lambda text: self.draw(view, text))

    def draw(self, view: AnswerView, text: str) -> None:
        """Main thread, inside the coroutine (its loop is Tk's)."""
        self.host.transcript.record(view, text)
        widget = self.render.widgets[view.number]
        # THE MISTAKE: the whole answer, parsed and rendered again for every chunk, in the
        # coroutine — on the loop's thread, which is Tk's.
        started = time.perf_counter()
        with stock_tkhtmlview():
            widget.set_html(per_chunk_render.convert_whole_document(view.text))
        widget.see("end")
        self.render_costs.append((len(view.text), (time.perf_counter() - started) * 1000))

    @property
    def render_costs(self) -> list[tuple[int, float]]:
        """(answer chars, ms) per re-render, kept in ``per-chunk-render``'s list: the
        pipeline view's Tk lane reads them."""
        return self.render.render_costs

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.out = self.view = None
        self.render.finish(view, stopped=stopped, error=error)
