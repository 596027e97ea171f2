"""A typical wrong solution: the slow work moved out of ``show``, into a callback it schedules.

Generation and transport are right. The student read that ``show`` must return at once, and
made it: ``show`` only keeps the chunks and asks Tk to call ``_catch_up`` as soon as it can
(``after(0, ...)``). But ``_catch_up`` renders the whole answer so far as markdown again for
every chunk — the work that grows with the answer, the same mistake as ``per_chunk_render``.
Tk calls it on the same main thread, from the same event loop: while it runs, no click, no
key, no redraw. Moving work into a callback moves it nowhere: ``show`` is fast, the window
is not — and a grade that only timed the three methods would never see it.

Predict which checks of the self-test fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/hidden_in_after.py:Pipeline --tokens 800``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

from tkchat.generate.backend import GenerationRequest
from tkchat.render.safe_markdown import markdown_to_safe_html
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "hidden-in-after"
    broken = False
    coalesce = False  # every token a chunk of its own, as in per_chunk_render

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.pending: dict[int, list[str]] = {}  # answer number -> chunks not written yet
        self.preview = ""  # the answer so far, as HTML (for a preview nobody looks at)

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.pending.setdefault(view.number, []).extend(chunks)
        # THE MISTAKE: the work is still on the main thread, only later.
        self.host.transcript.text.after(0, lambda: self._catch_up(view))

    def _catch_up(self, view: AnswerView) -> None:
        chunks = self.pending.pop(view.number, [])
        if not chunks or view.status != "streaming":
            return
        so_far = view.text
        for chunk in chunks:
            so_far += chunk
            self.preview = markdown_to_safe_html(so_far)  # the whole answer, every chunk
        self.host.transcript.append(view, "".join(chunks))  # one insert: that part is right

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.pending.pop(view.number, None)
        self.host.transcript.finish(view, stopped=stopped, error=error)
