"""The conversation view: one read-only Text widget, written only from the main thread.

Each answer lives between two marks, so appending never computes a character offset — which
matters because Tk 8.6 counts a character above U+FFFF (😀, 𝄞) as two index positions, and
any Python-side offset arithmetic would cut such characters in half.

A line longer than :data:`~tkchat.limits.DISPLAY_LINE_CHARS` is shown with line ends added
(:func:`~tkchat.render.soft_breaks.soft_break`): Tk lays a logical line out as a whole, so one
line of megabytes froze the window. Only the widget sees them; a message's ``text`` (what Copy,
export and history use) is always exactly what arrived.

Every message starts with a header line ("You · Copy · Edit", "Assistant · Copy"): the links
are text with a tag, not widgets, so 200 messages cost no widgets at all. A click finds its
message by comparing the click's index with each message's ``head_mark`` (a binary search).

An answer regenerated keeps its earlier versions: its header then also shows "◀ 2/3 ▶", links
drawn the same way (not links while that answer streams). Showing another version replaces
the answer's text and its end note ([stopped], the error) in place, and paints it in slices
like a saved answer; what follows it on screen does not move. A question edited and sent
again has versions too, each with the branch that followed it (ui/chats/answer_versions.py).

Only the answers near the reader's view are rich text (:mod:`.paint_zone`): a saved chat is
written plain and painted around the view; an answer far away goes back to plain text.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from tkinter import ttk

from tkchat.render.soft_breaks import soft_break, unbreak
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, set_role
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.answer_figures import FiguresLines
from tkchat.ui.transcript.markdown_looks import body_family
from tkchat.ui.transcript.markdown_view import COPY_CODE_TAG, MarkdownPainter, PaintJob
from tkchat.ui.transcript.message_views import (
    NAV_TAG,
    VERSION_STEPS,
    AnswerView,
    Branch,
    UserView,
    header_args,
    label_tag,
    version_links,
)
from tkchat.ui.transcript.paint_zone import PaintZone
from tkchat.ui.transcript.view_keeper import EndFollower, ViewKeeper

__all__ = ["BODY_FONT_SIZE", "AnswerView", "Branch", "Transcript", "UserView"]

BODY_FONT_SIZE = 11
RELABEL_MARK = "relabel_from"  # (no "-": it is used in index arithmetic)
RELABEL_LINES = 400  # lines relabelled at a time, from the end back
RELABEL_BUDGET_MS = 6.0  # per callback
ACTIONS = ("copy", "edit")  # header links; "copy" on every message, "edit" on the user's


class Transcript(ttk.Frame):
    """Main thread only."""

    def __init__(self, master: tk.Misc, scheduler: AfterScheduler, translate: Translator) -> None:
        super().__init__(master)
        self.t = translate
        # Named fonts are deleted when their Python object is collected: keep them here.
        self.body_font = lasting_font(family=body_family(master), size=BODY_FONT_SIZE)
        self.text = tk.Text(
            self,
            wrap="word",
            state="disabled",
            padx=dp(master, 12),
            pady=dp(master, 8),
            borderwidth=0,
            highlightthickness=0,
            undo=False,
            spacing3=2,
            font=self.body_font,
        )
        scroll = ttk.Scrollbar(self, orient="vertical", command=self.text.yview)
        self._follower = EndFollower(self.text, scroll.set)  # a reader at the end stays there
        self.text.configure(yscrollcommand=self._scrolled)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        bold = lasting_font(family=body_family(master), size=BODY_FONT_SIZE, weight="bold")
        self._fonts = [bold]
        margin = dp(master, 12)
        self.text.tag_configure("who", font=bold, spacing1=dp(master, 10))
        self.text.tag_configure("user", lmargin1=margin, lmargin2=margin)
        self.text.tag_configure("answer", lmargin1=margin, lmargin2=margin)
        self._fonts.append(lasting_font(family=body_family(master), size=BODY_FONT_SIZE - 2))
        self.text.tag_configure("action", font=self._fonts[-1])
        self.text.tag_configure(COPY_CODE_TAG, font=self._fonts[-1])
        # A widget binding, not a tag binding: only a widget binding's "break" stops the Text
        # class binding, which would otherwise take the focus and start a selection.
        self.text.bind("<Button-1>", self._on_click)
        for tag in ("action", COPY_CODE_TAG):
            self.text.tag_bind(tag, "<Enter>", lambda _e: self.text.configure(cursor="hand2"))
            self.text.tag_bind(tag, "<Leave>", lambda _e: self.text.configure(cursor="xterm"))
        translate.on_change(lambda _lang: self.relabel())
        self.scheduler = scheduler
        self._labels: list[tuple[str, str]] = []  # (tag, its text now) while relabelling
        self.painter = MarkdownPainter(
            self.text, scheduler, copy_code_label=lambda: self.t("transcript.copy_code")
        )
        self.zone = PaintZone(self, scheduler)  # which answers are painted: those near the view
        self._bulk: ViewKeeper | None = None  # the one keeper of several writes (adding_many)
        set_role(self.text, "surface")
        follow_theme(self, self.apply_palette)
        self.answers: list[AnswerView] = []
        self.entries: list[UserView | AnswerView] = []  # every message on screen, in order
        self.figures = FiguresLines(self.text, translate, self.entries)
        self._marks = 0  # a counter for unique mark names
        self.inserts = 0  # widget inserts of streamed text: the "UI updates" of the window
        # What a click on a header link asks for: on_edit(view) for "Edit"; on_copied(what)
        # after a copy ("message" or "code"); on_version(view, step) for "◀" (-1), "▶" (+1).
        self.on_edit: Callable[[UserView], None] | None = None
        self.on_version: Callable[[UserView | AnswerView, int], object] | None = None
        self.on_copied: Callable[[str], None] | None = None

    def _scrolled(self, first: float, last: float) -> None:
        """Tk says the view changed (its first and last fraction shown)."""
        self._follower.scrolled(first, last)
        self.zone.moved()

    # -- writing -------------------------------------------------------------------------------

    def _write(self, index: str, *args: object) -> None:
        with writable(self.text):
            self.text.insert(index, *args)  # type: ignore[arg-type]

    def _adding_at_end(self) -> ViewKeeper:
        """Before writing at the end: a reader at the bottom will follow (``_restore()``
        after writing); someone who scrolled up to read keeps their place."""
        if self._bulk is not None:
            return self._bulk
        keeper = ViewKeeper(self.text)
        keeper.changing(at_end=True)
        return keeper

    def _restore(self, keeper: ViewKeeper) -> None:
        if keeper is not self._bulk:  # (else once, when adding_many ends)
            keeper.restore()

    @contextmanager
    def adding_many(self) -> Iterator[None]:
        """Several messages written at the end in one callback (a saved chat being put on
        screen): the reader's view is looked at once before them and put back once after
        them, not three times a message."""
        keeper = self._adding_at_end()
        self._bulk = keeper
        try:
            yield
        finally:
            self._bulk = None
            keeper.restore()
            self.zone.moved(changed=True)

    def _head_mark(self) -> str:
        """A mark at the start of the message about to be written at the end."""
        self._marks += 1
        mark = f"head-{self._marks}"
        self.text.mark_set(mark, "end-1c")
        self.text.mark_gravity(mark, "left")  # text written after it leaves it in place
        return mark

    def add_user(
        self,
        message: str,
        versions: list[str] | None = None,
        branches: list[Branch] | None = None,
        shown: int | None = None,
    ) -> UserView:
        """A question at the end; ``versions`` (with their ``branches``), if it was edited:
        ``shown`` is the one this is (by default the last)."""
        keeper = self._adding_at_end()
        view = UserView(
            len(self.entries) + 1,
            self._head_mark(),
            message,
            versions=list(versions or []),
            branches=list(branches or []),
            shown=len(versions or [1]) - 1 if shown is None else shown,
        )
        shown_text, _column = soft_break(message, 0)
        header = header_args(self.t, "transcript.you", ACTIONS, view)
        self._write("end", *header, shown_text + "\n", ("user",))
        self.entries.append(view)
        self._restore(keeper)
        self.zone.moved(changed=True)
        return view

    def add_note(self, message: str, kind: str = "note") -> None:
        keeper = self._adding_at_end()
        self._write("end", message + "\n", (kind,))
        self._restore(keeper)

    def begin_answer(
        self,
        versions: list[tuple[str, str]] | None = None,
        shown: int | None = None,
        *,
        paint: bool = True,
    ) -> AnswerView:
        """A new answer at the end, empty. ``versions``: the versions it has (a regenerate:
        the earlier ones and this new one, a saved answer: all of them); ``shown``: the
        one this is (by default the last). ``paint=False``: it stays plain text until the
        zone paints it (a saved answer: painted only once it is near the view)."""
        keeper = self._adding_at_end()
        head = self._head_mark()
        number = self._marks
        view = AnswerView(
            len(self.answers) + 1,
            f"answer-{number}-start",
            f"answer-{number}-end",
            started_at=time.perf_counter(),
            head_mark=head,
            versions=list(versions or []),
            shown=len(versions or [1]) - 1 if shown is None else shown,
            notes_mark=f"answer_{number}_notes",  # no "-": see ANCHOR_MARK
            tail_mark=f"answer_{number}_tail",
        )
        header = header_args(self.t, "transcript.assistant", ("copy",), view)
        self._write("end", *header, "\n")
        # Both marks sit just before that last newline; text inserted at the end mark pushes
        # it along (right gravity) while the start mark stays put (left gravity).
        self.text.mark_set(view.start_mark, "end-2c")
        self.text.mark_gravity(view.start_mark, "left")
        self.text.mark_set(view.end_mark, "end-2c")
        self.text.mark_gravity(view.end_mark, "right")
        if paint:  # its blocks are rendered one by one as they complete, while it streams
            view.job = self._paint_job(view)
        self.answers.append(view)
        self.entries.append(view)
        self._restore(keeper)
        self.zone.moved(changed=True)
        return view

    def append(self, view: AnswerView, text: str, *, live: bool = True) -> None:
        """One insert for everything that arrived this tick; then the painter renders the
        markdown blocks this text completed, within a few milliseconds (the rest in its
        own slices). ``live=False``: text put on screen in bulk (a saved answer), whose
        blocks are all left to the painter's slices."""
        keeper = self._adding_at_end()
        # The widget shows long lines cut (soft_break); the painter reads the markdown as it
        # arrived, and counts its lines as shown (a display-only cut must not open a fence).
        shown, view.column = soft_break(text, view.column)
        self._write(view.end_mark, shown, ("answer",))
        self.record(view, text)
        if view.job is not None:
            self.painter.feed(view.job, text, keeper if live else None)
        self._restore(keeper)  # once, for the text and what was painted with it

    def record(self, view: AnswerView, text: str) -> None:
        """Account for text shown (by :meth:`append`, or by a demo that draws it elsewhere)."""
        view.add_text(text)
        self.inserts += 1
        now = time.perf_counter()
        view.arrivals.append((now, view.length))
        if view.first_text_at is None:
            view.first_text_at = now

    def embed(self, view: AnswerView, widget: tk.Misc) -> None:
        """Show ``widget`` as the answer's body (the per-chunk-render demo's HTML widget)."""
        view.paintable = False
        with writable(self.text):
            self.text.window_create(view.end_mark, window=widget, padx=8)
        self.text.see("end")

    def finish(
        self,
        view: AnswerView,
        *,
        stopped: bool = False,
        error: str | None = None,
        render: bool = True,
        interrupted: bool = False,
    ) -> None:
        """Mark the end of an answer; its last markdown block is then painted (and any
        before it not painted yet), in slices. ``render=False``: it stays as it is shown.
        ``interrupted``: a saved answer the app was closed (or killed) in the middle of."""
        keeper = self._adding_at_end()
        ended = "interrupted" if interrupted else "stopped" if stopped else "complete"
        view.status = "error" if error else ended
        self.text.mark_set(view.notes_mark, "end-1c")
        self.text.mark_gravity(view.notes_mark, "left")
        if stopped or interrupted:
            key = "transcript.interrupted" if interrupted else "transcript.stopped"
            self._write("end-1c", self.t(key) + "\n", ("note",))
        if error:
            self._write("end-1c", f"⚠{NO_BREAK}{error}\n", ("error",))
        self.text.mark_set(view.tail_mark, "end-1c")
        self.text.mark_gravity(view.tail_mark, "left")  # what is written next goes after it
        if view.versions:  # its version is final: the links work now
            view.versions[view.shown] = (view.text, view.status)
            self._redraw_version_links(view)
        self._restore(keeper)
        view.paintable = render
        if view.job is not None:
            if render and view.text.strip():
                self.painter.end(view.job)
            else:
                self.painter.drop(view.job)

    def show_figures(self, view: AnswerView, *, hold: bool = False) -> None:
        """The figures line under ``view``, for its version (ui/chats/answer_figures.py)."""
        self.figures.show(view, hold=hold)

    def clear(self) -> None:
        # Marks go before the text: once it is deleted they all sit on one line, and Tk
        # unlinks each by walking that line (tests/tools/tk_costs.py: 5,000 marks and their
        # text, 118 ms of CPU that way, 12 ms the other).
        self.painter.cancel()
        self.zone.forget()
        self.scheduler.cancel("relabel")  # (the new text is written in the new language)
        self.text.mark_unset(RELABEL_MARK)
        self._unset_marks(self.entries)
        self.painter.forget_all_codes()
        with writable(self.text):
            self.text.delete("1.0", "end")
        self.answers.clear()
        self.entries.clear()

    def remove_from(self, view: UserView | AnswerView) -> None:
        """Delete ``view`` and everything after it (edit and resend, regenerate)."""
        index = self.entries.index(view)
        gone = self.entries[index:]
        for removed in gone:  # their painting stops; earlier answers' goes on
            if isinstance(removed, AnswerView) and removed.job is not None:
                self.painter.drop(removed.job)
        start = self.text.index(view.head_mark)
        self.painter.forget_codes_in(start, "end")
        self._unset_marks(gone)  # (before the text: see clear)
        with writable(self.text):
            self.text.delete(start, "end-1c")
        del self.entries[index:]
        # The answers removed are the last ones, as the messages removed are.
        del self.answers[sum(isinstance(e, AnswerView) for e in self.entries) :]
        self.zone.moved(changed=True)

    def _unset_marks(self, views: list[UserView | AnswerView]) -> None:
        names: list[str] = []
        for view in views:
            names.append(view.head_mark)
            if isinstance(view, AnswerView):
                names += [view.start_mark, view.end_mark, view.notes_mark, view.tail_mark]
        names = [name for name in names if name]  # (an answer not ended has no note marks)
        if names:
            self.text.mark_unset(*names)

    # -- versions of an answer -----------------------------------------------------------------

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
        self._write(view.end_mark, shown, ("answer",))
        self.painter.feed(view.job, text, None)
        if text.strip():
            self.painter.end(view.job)
        else:
            self.painter.drop(view.job)
        self._redraw_version_links(view)
        keeper.restore()

    # -- painted near the view, plain far from it (the zone's calls) ----------------------

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
        with writable(self.text):
            self.painter.forget_codes_in(view.start_mark, view.end_mark)
            self.text.delete(view.start_mark, view.end_mark)
            self.text.insert(view.end_mark, shown, ("answer",))
        view.rendered, view.job = False, None
        keeper.restore()

    def _end_note(self, status: str) -> tuple[str, tuple[str, ...]] | None:
        """The note under an answer that ended this way, as :meth:`finish` writes it (an
        error's own message is not kept with a version: it says that it failed)."""
        if status in ("stopped", "interrupted"):
            return self.t(f"transcript.{status}"), ("note",)
        if status == "error":
            return "⚠" + NO_BREAK + self.t("transcript.failed"), ("error",)
        return None

    def add_saved(
        self,
        role: str,
        text: str,
        status: str,
        versions: list[tuple[str, str]] | None = None,
        shown: int | None = None,
        branches: list[Branch] | None = None,
    ) -> UserView | AnswerView:
        """Put a saved message (or one of a branch shown again) on screen at the end, as
        plain text: its markdown is painted once it is near the view (:class:`PaintZone`).
        ``versions``/``shown``: its versions, if it has several, as (text, status);
        ``branches``: a question's."""
        if role == "user":
            texts = [version for version, _status in versions or []]
            return self.add_user(text, texts, branches, shown)
        view = self.begin_answer(versions, shown, paint=False)
        self.append(view, text, live=False)
        self.finish(
            view,
            stopped=status == "stopped",
            interrupted=status == "interrupted",
            error=self.t("transcript.failed") if status == "error" else None,
        )
        return view

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

    def set_font_size(self, size: int) -> None:
        """The font size setting: body, headers, links and rendered markdown."""
        self.body_font.configure(size=size)
        bold, links = self._fonts
        bold.configure(size=size)
        links.configure(size=max(6, size - 2))
        self.painter.set_body_size(size)

    def apply_palette(self, palette: Palette) -> None:
        """The theme's colours (light or dark): the page, the message tags, rendered text."""
        self.text.configure(background=palette.surface, foreground=palette.foreground)
        for tag, colour in (
            ("who", palette.muted),
            ("user", palette.user_text),
            ("note", palette.note),
            ("error", palette.error),
            ("action", palette.link),
            (COPY_CODE_TAG, palette.link),
        ):
            self.text.tag_configure(tag, foreground=colour)
        self.painter.set_palette(palette)

    def relabel(self) -> None:
        """After a language change: the headers and links already on screen, in the new
        language (the messages themselves are content, and stay as they are). From the end
        back, in slices: a thousand messages' headers in one callback took 85 ms."""
        labels = [(label_tag(key), key) for key in ("transcript.you", "transcript.assistant")]
        labels += [(f"act-{action}", f"transcript.{action}") for action in ACTIONS]
        labels.append((COPY_CODE_TAG, "transcript.copy_code"))
        self._labels = [(tag, self.t(key)) for tag, key in labels]
        # A relabelling still under way (a switch back before it was done) starts again from
        # the end: its next slice must not run after this one has removed the mark.
        self.scheduler.cancel("relabel")
        self.text.mark_set(RELABEL_MARK, "end")  # what is above it is still to do
        self.text.mark_gravity(RELABEL_MARK, "left")
        self._relabel_some()

    def _relabel_some(self) -> None:
        """Relabel blocks of lines, from the mark up, until this callback's budget is spent.
        (A label never spans a line end, so no label is cut by a block's edge.)"""
        started = time.perf_counter()
        with writable(self.text):
            while self.text.compare(RELABEL_MARK, ">", "1.0"):
                if (time.perf_counter() - started) * 1000 > RELABEL_BUDGET_MS:
                    self.scheduler.once("relabel", 1, self._relabel_some)
                    return
                top = self.text.index(f"{RELABEL_MARK} - {RELABEL_LINES} lines linestart")
                for tag, new in self._labels:
                    below = RELABEL_MARK
                    # Last first, so the indices of the ranges still to do stay valid.
                    while found := self.text.tag_prevrange(tag, below, top):
                        start, end = str(found[0]), str(found[1])
                        self.text.insert(end, new, self.text.tag_names(start))
                        self.text.delete(start, end)
                        below = start
                self.text.mark_set(RELABEL_MARK, top)
        self.text.mark_unset(RELABEL_MARK)

    # -- links ---------------------------------------------------------------------------------

    def entry_at(self, index: str) -> UserView | AnswerView | None:
        """The message whose header starts at or before ``index``."""
        number = self.entry_number(index)
        return None if number is None else self.entries[number]

    def entry_number(self, index: str) -> int | None:
        """Where in ``entries`` the message whose header starts at or before ``index`` is."""
        low, high = 0, len(self.entries)
        while low < high:
            middle = (low + high) // 2
            if self.text.compare(self.entries[middle].head_mark, "<=", index):
                low = middle + 1
            else:
                high = middle
        return low - 1 if low else None

    def _on_click(self, event: tk.Event) -> str | None:
        """A click on a link does what the link says; anywhere else, what Text does."""
        index = self.text.index(f"@{event.x},{event.y}")
        tags = self.text.tag_names(index)
        if COPY_CODE_TAG in tags:
            self.copy_code_at(index)
            return "break"
        for action in (*ACTIONS, *VERSION_STEPS):
            if f"act-{action}" in tags:
                view = self.entry_at(index)
                if view is not None:
                    self.act(action, view)
                return "break"  # no focus change, no selection starts from a link
        if NAV_TAG in tags:
            return "break"  # the disabled links of an answer streaming, or "n/m"
        return None

    def copy_code_at(self, index: str) -> None:
        """The "Copy code" link at ``index``: its code as it arrived (the display may have
        added line ends to a long line; the message's own text has none)."""
        code = self.painter.code_at(index)
        if code is None:
            return
        view = self.entry_at(index)
        self.copy(code if view is None else unbreak(code, view.text), "code")

    def act(self, action: str, view: UserView | AnswerView) -> None:
        """What a header link does: copy the message (its markdown source) or edit it."""
        if action == "copy":
            self.copy(view.text, "message")
        elif action == "edit" and isinstance(view, UserView) and self.on_edit is not None:
            self.on_edit(view)
        elif action in VERSION_STEPS and self.on_version is not None:
            self.on_version(view, VERSION_STEPS[action])

    def copy(self, text: str, what: str) -> None:
        """Put ``text`` on the clipboard (Tk's, which the desktop's paste reads)."""
        self.clipboard_clear()
        self.clipboard_append(text)
        if self.on_copied is not None:
            self.on_copied(what)

    def plain_text(self) -> str:
        """Everything visible, for tests and copy (elided, not-yet-shown text excluded)."""
        return str(self.text.tk.call(str(self.text), "get", "-displaychars", "1.0", "end-1c"))


def _rendered(view: AnswerView) -> None:
    view.rendered = True
    view.job = None  # done: the painter has let go of it
