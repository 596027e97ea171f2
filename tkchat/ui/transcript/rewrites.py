"""An answer's text written again where it stands: another of its versions shown, its markdown
painted when it comes near the reader's view, or put back to plain text far from it.

An answer regenerated keeps its earlier versions: its header then also shows "◀ 2/3 ▶", links
drawn the same way as the others (not links while that answer streams). Showing another
version replaces the answer's text and its end note ([stopped], the error) in place, and
paints it in slices like a saved answer; what follows it on screen does not move. A question
edited and sent again has versions too, each with the branch that followed it
(ui/chats/answer_versions.py). Only the answers near the reader's view are rich text
(:mod:`.paint_zone` decides which, and calls :meth:`AnswerRewrites.paint` and
:meth:`AnswerRewrites.unpaint`).

:class:`AnswerRewrites` is this part of :class:`~tkchat.ui.transcript.transcript.Transcript`
(mixed into it, which builds the widget and writes the messages). Main thread only.
"""

from __future__ import annotations

import tkinter as tk

from tkchat.render.soft_breaks import soft_break
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.chinese_wrap import insert_args, with_breaks
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.readonly import writable
from tkchat.ui.transcript.markdown_view import MarkdownPainter, PaintJob
from tkchat.ui.transcript.message_views import NAV_TAG, AnswerView, UserView, version_links
from tkchat.ui.transcript.view_keeper import ViewKeeper


class AnswerRewrites:
    """Versions shown, answers painted and unpainted, in place. Main thread only."""

    text: tk.Text
    t: Translator
    painter: MarkdownPainter

    def _write(self, index: str, *args: object) -> None:
        raise NotImplementedError  # the Transcript's

    def show_version(self, view: AnswerView, number: int) -> None:
        """Show version ``number`` of an answer that has ended, in its place: its text and
        end note are replaced, and its markdown is painted in slices (as a saved answer's
        is). Its header stays where it is on screen."""
        if view.job is not None:
            self.painter.drop(view.job)
        view.versions[view.shown] = (view.text, view.status)
        text, status = view.versions[number]
        keeper = ViewKeeper(self.text)
        keeper.hold(view.head_mark)  # its ◀ ▶ stay under the pointer that clicked one
        self.painter.forget_codes_in(view.start_mark, view.end_mark)
        with writable(self.text):
            # The newline after the text stays: it ends the new note's last line, so nothing
            # is ever inserted where the next message's header mark is.
            self.text.delete(view.notes_mark, view.tail_mark)
            self.text.delete(view.start_mark, view.end_mark)
            note = self._end_note(status)
            if note:
                self.text.insert(view.start_mark, "\n" + note[0], note[1])
            self.text.mark_set(view.notes_mark, f"{self.text.index(view.start_mark)} + 1c")
            self.text.mark_set(view.end_mark, view.start_mark)
        view.shown, view.status, view.rendered = number, status, False
        view.text, view.column = text, 0
        view.job = self._paint_job(view)
        shown, view.column = soft_break(text, 0)
        runs, view.breaks = with_breaks(shown, ("answer",))
        self._write(view.end_mark, *insert_args(runs))
        self.painter.feed(view.job, text, None)
        if text.strip():
            self.painter.end(view.job)
        else:
            self.painter.drop(view.job)
        self._redraw_version_links(view)
        keeper.restore()

    def _redraw_version_links(self, view: UserView | AnswerView) -> None:
        """Write an answer's "◀ n/m ▶" again (after a regenerate ended, or another version
        was shown); in its header line, where it was or at the line's end."""
        # (The index first: in "head-3 lineend" Tk would read the mark's name up to its "-".)
        line_end = self.text.index(f"{self.text.index(view.head_mark)} lineend")
        with writable(self.text):
            found = self.text.tag_nextrange(NAV_TAG, view.head_mark, line_end)
            where = str(found[0]) if found else self.text.index(line_end)
            if found:
                self.text.delete(*found)
            links = version_links(view)
            if links:
                self.text.insert(where, *links)  # type: ignore[arg-type]

    def _end_note(self, status: str) -> tuple[str, tuple[str, ...]] | None:
        """The note under an answer that ended this way, as :meth:`finish` writes it (an
        error's own message is not kept with a version: it says that it failed)."""
        if status in ("stopped", "interrupted"):
            return self.t(f"transcript.{status}"), ("note",)
        if status == "error":
            return "⚠" + NO_BREAK + self.t("transcript.failed"), ("error",)
        return None

    def _paint_job(self, view: AnswerView) -> PaintJob:
        return self.painter.begin(
            view.start_mark, view.end_mark, extra_tags=("answer",), on_done=lambda: _rendered(view)
        )

    def paint(self, view: AnswerView) -> None:
        """Paint an answer that ended and is shown as plain text (it came near the view)."""
        view.job = self._paint_job(view)
        self.painter.feed(view.job, view.text, None)  # as it arrived (see append)
        self.painter.end(view.job)

    def unpaint(self, view: AnswerView) -> None:
        """Put a painted answer far from the view back to its plain text (its markdown
        source, with the line ends the display adds), as it was before it was painted."""
        keeper = ViewKeeper(self.text)
        keeper.changing()
        shown, view.column = soft_break(view.text, 0)
        runs, view.breaks = with_breaks(shown, ("answer",))
        with writable(self.text):
            self.painter.forget_codes_in(view.start_mark, view.end_mark)
            self.text.delete(view.start_mark, view.end_mark)
            self.text.insert(view.end_mark, *insert_args(runs))  # type: ignore[arg-type]
        view.rendered, view.job = False, None
        keeper.restore()


def _rendered(view: AnswerView) -> None:
    view.rendered = True
    view.job = None  # done: the painter has let go of it
