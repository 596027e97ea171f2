"""The conversation view: one read-only Text widget, written only from the main thread.

Each answer lives between two marks, so appending never computes a character offset — which
matters because Tk 8.6 counts a character above U+FFFF (😀, 𝄞) as two index positions, and
any Python-side offset arithmetic would cut such characters in half.

A line longer than :data:`~tkchat.limits.DISPLAY_LINE_CHARS` is shown with line ends added
(:func:`~tkchat.render.soft_breaks.soft_break`): Tk lays a logical line out as a whole, so one
line of megabytes froze the window. Chinese gets a break between its characters, as in print:
an elided space (:mod:`~tkchat.ui.look.chinese_wrap`). Only the widget sees either; a
message's ``text`` (what Copy, export and history use) is always exactly what arrived, and
a selection is copied as shown, without the break spaces.

This module builds the widget and writes the messages: a question, an answer as it streams
and its end, a saved chat, what an edit or a regenerate removes. Beside it, the transcript's
other parts, mixed into :class:`Transcript`: :mod:`.header_links` (every message's header
line: its links, a click on one, its labels in a new language) and :mod:`.rewrites` (an
answer written again in place: another version shown, painted near the view, plain far from
it: :mod:`.paint_zone` decides which). A saved chat is written plain and painted around the
view.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from tkinter import ttk

from tkchat.render.soft_breaks import soft_break
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.chinese_wrap import insert_args, with_breaks
from tkchat.ui.look.fit import BREAK_TAG, NO_BREAK
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, set_role
from tkchat.ui.readonly import read_only, writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.answer_figures import FiguresLines
from tkchat.ui.transcript.found import FoundMarks
from tkchat.ui.transcript.header_links import ACTIONS, EARLIER_TAG, HeaderLinks
from tkchat.ui.transcript.markdown_looks import body_family
from tkchat.ui.transcript.markdown_view import COPY_CODE_TAG, MarkdownPainter
from tkchat.ui.transcript.message_views import (
    AnswerView,
    Branch,
    UserView,
    header_args,
)
from tkchat.ui.transcript.paint_zone import PaintZone
from tkchat.ui.transcript.rewrites import AnswerRewrites
from tkchat.ui.transcript.view_keeper import EndFollower, ViewKeeper, lines_between

__all__ = ["BODY_FONT_SIZE", "AnswerView", "Branch", "Transcript", "UserView"]

BODY_FONT_SIZE = 11


# A tick's text up to this long is a few lines: a reader at the end follows it with ``see``,
# which scrolls by its height (ViewKeeper.restore); more (a tick after a stall) is followed
# as any other change.
STREAMED_MAX_CHARS = 2000
CLEAR_SLICE_LINES = 200  # lines deleted at a time when the transcript is cleared (clear)


class Transcript(HeaderLinks, AnswerRewrites, ttk.Frame):
    """The conversation on screen. Main thread only."""

    def __init__(self, master: tk.Misc, scheduler: AfterScheduler, translate: Translator) -> None:
        super().__init__(master)
        self.t = translate
        # Named fonts are deleted when their Python object is collected: keep them here.
        self.body_font = lasting_font(family=body_family(master), size=BODY_FONT_SIZE)
        self.text = tk.Text(
            self,
            wrap="word",
            padx=dp(master, 12),
            pady=dp(master, 8),
            borderwidth=0,
            highlightthickness=0,
            undo=False,
            spacing3=2,
            font=self.body_font,
        )
        read_only(self.text)  # not state="disabled": a relayout per streamed insert (readonly.py)
        scroll = ttk.Scrollbar(self, orient="vertical", command=self.text.yview)
        self._follower = EndFollower(self.text, scroll.set)  # a reader at the end stays there
        self.text.configure(yscrollcommand=self._scrolled)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        self._style_tags(master)
        translate.on_change(lambda _lang: self.relabel())
        self.scheduler = scheduler
        self._labels: list[tuple[str, str]] = []  # (tag, its text now) while relabelling
        self.painter = MarkdownPainter(
            self.text, scheduler, copy_code_label=lambda: self.t("transcript.copy_code")
        )
        self._hide_breaks()
        self.zone = PaintZone(self, scheduler)  # which answers are painted: those near the view
        self.found = FoundMarks(self.text)  # a search's matches, in the chat it opened
        self.painter.swapped = self.found.repaint
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
        # A saved chat's messages left out above the first on screen (ui/chats/opening.py),
        # and what a click on the line that says so asks for: on_earlier().
        self.left_out = 0
        self.on_earlier: Callable[[], None] | None = None
        translate.on_change(lambda _lang: self._say_left_out())

    def _style_tags(self, master: tk.Misc) -> None:
        """The messages' tags: headers, margins, links (a hand over them), the line of
        messages left out."""
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
        self.text.tag_configure(EARLIER_TAG, justify="center", spacing1=dp(master, 6))

    def _scrolled(self, first: float, last: float) -> None:
        """Tk says the view changed (its first and last fraction shown)."""
        self._follower.scrolled(first, last)
        self.zone.moved()

    # -- writing -------------------------------------------------------------------------------

    def _write(self, index: str, *args: object) -> None:
        with writable(self.text):
            self.text.insert(index, *args)  # type: ignore[arg-type]

    def _adding_at_end(self, *, streamed: bool = False) -> ViewKeeper:
        """Before writing at the end: a reader at the bottom will follow (``_restore()``
        after writing); someone who scrolled up to read keeps their place. ``streamed``: a
        few lines of a tick's tokens (:meth:`ViewKeeper.changing`)."""
        if self._bulk is not None:
            return self._bulk
        keeper = ViewKeeper(self.text)
        keeper.changing(at_end=True, streamed=streamed)
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

    def leave_out(self, count: int) -> None:
        """The chat about to be written starts after ``count`` messages left out: a line
        at the top says so (a click on it asks for them: ``on_earlier``)."""
        self.left_out = count
        self._say_left_out()

    def _say_left_out(self) -> None:
        """The line, always the first, says it (again, in a new language): the new line goes
        in above the old one, which is then deleted, so that the first message's marks stay
        below it (written at 1.0 after a delete, it would have gone below them)."""
        had = bool(self.text.tag_ranges(EARLIER_TAG))
        with writable(self.text):
            if self.left_out:
                label = self.t("transcript.earlier", count=f"{self.left_out:,}")
                self.text.insert("1.0", label + "\n", (EARLIER_TAG, "action"))
            if had:
                old = 2 if self.left_out else 1
                self.text.delete(f"{old}.0", f"{old + 1}.0")

    @property
    def painting(self) -> bool:
        """Is painting near the view still to come (a chat just put on screen, an answer
        that has ended with blocks left)?"""
        return self.painter.busy

    def position(self, view: UserView | AnswerView) -> int:
        """Where ``view`` is in the whole chat (counting the messages left out above)."""
        return self.left_out + self.entries.index(view)

    def add_user(
        self,
        message: str,
        versions: list[str] | None = None,
        branches: list[Branch] | None = None,
        shown: int | None = None,
        *,
        follow: bool = False,
    ) -> UserView:
        """A question at the end; ``versions`` (with their ``branches``), if it was edited:
        ``shown`` is the one this is (by default the last). ``follow``: the user has just
        sent it: the view goes to the end even if they had scrolled up, so the question is
        in sight and the answer is followed."""
        keeper = self._adding_at_end()
        if follow:
            keeper.to_end()
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
        runs, _breaks = with_breaks(shown_text + "\n", ("user",))
        self._write("end", *header, *insert_args(runs))
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
        # The widget shows long lines cut (soft_break); the painter reads the markdown as it
        # arrived, and counts its lines as shown (a display-only cut must not open a fence).
        shown, view.column = soft_break(text, view.column)
        runs, view.breaks = with_breaks(shown, ("answer",), view.breaks)  # Chinese's breaks
        keeper = self._adding_at_end(streamed=live and len(shown) <= STREAMED_MAX_CHARS)
        self._write(view.end_mark, *insert_args(runs))
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
        """The figures line under ``view``, for its version (ui/chats/answer_figures.py);
        within :meth:`adding_many`, its keeper puts the view back once, after them all."""
        self.figures.show(view, hold=hold, keep_view=self._bulk is None)

    def clear(self) -> None:
        # Marks go before the text: once it is deleted they all sit on one line, and Tk
        # unlinks each by walking that line (tests/tools/tk_costs.py: 5,000 marks and their
        # text, 118 ms of CPU that way, 12 ms the other).
        self.painter.cancel()
        self.zone.forget()
        self._stop_relabelling()
        self._unset_marks(self.entries)
        self.painter.forget_all_codes()
        self.found.clear()
        with writable(self.text):
            # From the top, a slice at a time: Tk deletes a long, richly tagged text in one
            # piece at about twice the cost (a chat of 455,000 characters with 18,656 tag
            # ranges, left for a new one: the frame 28-54 ms that way, 22-27 ms this way, in
            # the long-chat bench's "leave"; a synthetic 450,000 with 20,000 ranges: 35 ms
            # against 20). Either way it is one callback: what is on screen is gone at once.
            for _slice in range(lines_between(self.text, "1.0", "end") // CLEAR_SLICE_LINES):
                self.text.delete("1.0", f"1.0+{CLEAR_SLICE_LINES} lines")
            self.text.delete("1.0", "end")
        self.answers.clear()
        self.entries.clear()
        self.left_out = 0

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
        self.found.set_palette(palette)

    def _hide_breaks(self) -> None:
        """Where Chinese may break: a space in BREAK_TAG, elided, which Tk's word wrap breaks
        at and which the selection, search and ``get -displaychars`` leave out
        (ui/look/chinese_wrap.py). Tk's own copy would not: Ctrl+C copies as shown."""
        self.text.tag_configure(BREAK_TAG, elide=True)
        self.text.bind("<<Copy>>", self._copy_selection)

    def _copy_selection(self, _event: object = None) -> str:
        """Ctrl+C, the menu's Copy: the selection as shown. Tk's own copy (``get``) would
        take the hidden break spaces along, and a block's rendered pieces not shown yet."""
        if self.text.tag_ranges("sel"):
            self.text.clipboard_clear()
            self.text.clipboard_append(self._shown_between("sel.first", "sel.last"))
        return "break"

    def plain_text(self) -> str:
        """Everything visible, for tests and copy (elided, not-yet-shown text excluded)."""
        return self._shown_between("1.0", "end-1c")

    def _shown_between(self, start: str, end: str) -> str:
        """The text from ``start`` to ``end`` as shown: without what is elided."""
        return str(self.text.tk.call(str(self.text), "get", "-displaychars", start, end))
