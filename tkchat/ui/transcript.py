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
again has versions too, each with the branch that followed it (ui/answer_versions.py).
"""

from __future__ import annotations

import time
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from dataclasses import dataclass, field
from tkinter import ttk

from tkchat.render.soft_breaks import LineState, soft_break, unbreak
from tkchat.store import AnswerFigures, MessageRef
from tkchat.ui.answer_figures import FiguresLines
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, set_role
from tkchat.ui.markdown_view import COPY_CODE_TAG, MarkdownPainter, PaintJob
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.view_keeper import EndFollower, ViewKeeper
from tkchat.ui.window.translator import Translator

BODY_FONT_SIZE = 11
ACTIONS = ("copy", "edit")  # header links; "copy" on every message, "edit" on the user's
VERSION_STEPS = {"prev": -1, "next": 1}  # the "◀ n/m ▶" links of an answer with versions
NAV_TAG = "versions"  # the whole "◀ n/m ▶" of a header, to find it again and redraw it


Branch = list[tuple[str, str, str]]  # messages after a question's version: (role, text, status)


@dataclass
class UserView:
    """One question on screen."""

    number: int
    head_mark: str  # the start of its header line
    text: str
    role: str = "user"
    # Every version of an edited question (from 0), with the branch that followed each; the
    # one shown's entries are brought up to date when another is shown. Empty: only one.
    versions: list[str] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    shown: int = 0
    saved_as: int | None = None  # its message's id in the store, once it has versions


@dataclass
class AnswerView:
    """Where one streaming answer is in the widget, and what it holds so far."""

    number: int
    start_mark: str
    end_mark: str
    text: str = ""
    head_mark: str = ""  # the start of its header line
    role: str = "assistant"
    rendered: bool = False
    started_at: float = 0.0  # perf_counter when the answer began (the question was sent)
    first_text_at: float | None = None  # perf_counter when its first text was on screen
    arrivals: list[tuple[float, int]] = field(default_factory=list)  # (when, chars so far)
    column: LineState | int = 0  # where the last line on display is (for the next soft break)
    job: PaintJob | None = None  # its markdown painting, block by block as it streams
    status: str = "streaming"  # then how it ended: complete, stopped, error or interrupted
    # Every version of a regenerated answer, (text, status) by number from 0, and which one
    # is shown. Empty: only the one shown. The shown one's entry is brought up to date when
    # it ends and when another is shown (``text`` and ``status`` are the truth for it).
    versions: list[tuple[str, str]] = field(default_factory=list)
    shown: int = 0
    saved_as: MessageRef | None = None  # its message in the store (History sets it)
    # Around the note its end wrote ([stopped], the error): from notes_mark to tail_mark.
    notes_mark: str = ""
    tail_mark: str = ""
    figures: dict[int, AnswerFigures] = field(default_factory=dict)  # by version shown


class Transcript(ttk.Frame):
    """Main thread only."""

    def __init__(self, master: tk.Misc, scheduler: AfterScheduler, translate: Translator) -> None:
        super().__init__(master)
        self.t = translate
        # Named fonts are deleted when their Python object is collected: keep them here.
        self.body_font = tkfont.Font(family=_body_family(master), size=BODY_FONT_SIZE)
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
        self.text.configure(yscrollcommand=EndFollower(self.text, scroll.set).scrolled)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        bold = tkfont.Font(family=_body_family(master), size=BODY_FONT_SIZE, weight="bold")
        self._fonts = [bold]
        margin = dp(master, 12)
        self.text.tag_configure("who", font=bold, spacing1=dp(master, 10))
        self.text.tag_configure("user", lmargin1=margin, lmargin2=margin)
        self.text.tag_configure("answer", lmargin1=margin, lmargin2=margin)
        self._fonts.append(tkfont.Font(family=_body_family(master), size=BODY_FONT_SIZE - 2))
        self.text.tag_configure("action", font=self._fonts[-1])
        self.text.tag_configure(COPY_CODE_TAG, font=self._fonts[-1])
        # A widget binding, not a tag binding: only a widget binding's "break" stops the Text
        # class binding, which would otherwise take the focus and start a selection.
        self.text.bind("<Button-1>", self._on_click)
        for tag in ("action", COPY_CODE_TAG):
            self.text.tag_bind(tag, "<Enter>", lambda _e: self.text.configure(cursor="hand2"))
            self.text.tag_bind(tag, "<Leave>", lambda _e: self.text.configure(cursor="xterm"))
        translate.on_change(lambda _lang: self.relabel())
        self.painter = MarkdownPainter(
            self.text, scheduler, copy_code_label=lambda: self.t("transcript.copy_code")
        )
        set_role(self.text, "surface")
        follow_theme(self, self.apply_palette)
        self.answers: list[AnswerView] = []
        self.entries: list[UserView | AnswerView] = []  # every message on screen, in order
        self.figures = FiguresLines(self.text, translate, self.entries)
        self._marks = 0  # a counter for unique mark names
        self.inserts = 0  # widget inserts of streamed text: the "UI updates" of the window
        # What a click on a header link asks for: on_edit(view) for "Edit"; on_copied(what)
        # after a copy ("message" or "code"), so the app can say so; on_version(view, step)
        # for "◀" (-1) and "▶" (+1).
        self.on_edit: Callable[[UserView], None] | None = None
        self.on_version: Callable[[UserView | AnswerView, int], object] | None = None
        self.on_copied: Callable[[str], None] | None = None

    # -- writing -------------------------------------------------------------------------------

    def _write(self, index: str, *args: object) -> None:
        with writable(self.text):
            self.text.insert(index, *args)  # type: ignore[arg-type]

    def _adding_at_end(self) -> ViewKeeper:
        """Before writing at the end: a reader at the bottom will follow (``restore()``
        after writing); someone who scrolled up to read keeps their place."""
        keeper = ViewKeeper(self.text)
        keeper.changing(at_end=True)
        return keeper

    def _head_mark(self) -> str:
        """A mark at the start of the message about to be written at the end."""
        self._marks += 1
        mark = f"head-{self._marks}"
        self.text.mark_set(mark, "end-1c")
        self.text.mark_gravity(mark, "left")  # text written after it leaves it in place
        return mark

    def _header(
        self, who: str, actions: tuple[str, ...], view: UserView | AnswerView | None = None
    ) -> list[object]:
        """Insert arguments for a header line: who, then the links (then an answer's
        versions, if it has several)."""
        args: list[object] = [self.t(who), ("who", _label_tag(who))]
        for action in actions:
            args += [
                "   ",
                ("who",),
                self.t(f"transcript.{action}"),
                ("who", "action", f"act-{action}"),
            ]
        if view is not None:
            args += _version_links(view)
        return [*args, "\n", ("who",)]

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
        header = self._header("transcript.you", ACTIONS, view)
        self._write("end", *header, shown_text + "\n", ("user",))
        self.entries.append(view)
        keeper.restore()
        return view

    def add_note(self, message: str, kind: str = "note") -> None:
        keeper = self._adding_at_end()
        self._write("end", message + "\n", (kind,))
        keeper.restore()

    def begin_answer(
        self, versions: list[tuple[str, str]] | None = None, shown: int | None = None
    ) -> AnswerView:
        """A new answer at the end, empty. ``versions``: the versions it has (a regenerate:
        the earlier ones and this new one, a saved answer: all of them); ``shown``: the
        one this is (by default the last)."""
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
        header = self._header("transcript.assistant", ("copy",), view)
        self._write("end", *header, "\n")
        # Both marks sit just before that last newline; text inserted at the end mark pushes
        # it along (right gravity) while the start mark stays put (left gravity).
        self.text.mark_set(view.start_mark, "end-2c")
        self.text.mark_gravity(view.start_mark, "left")
        self.text.mark_set(view.end_mark, "end-2c")
        self.text.mark_gravity(view.end_mark, "right")
        # Its blocks are rendered one by one as they complete, while it streams.
        view.job = self.painter.begin(
            view.start_mark,
            view.end_mark,
            extra_tags=("answer",),
            on_done=lambda: _rendered(view),
        )
        self.answers.append(view)
        self.entries.append(view)
        keeper.restore()
        return view

    def append(self, view: AnswerView, text: str, *, live: bool = True) -> None:
        """One insert for everything that arrived this tick; then the painter renders the
        markdown blocks this text completed, within a few milliseconds (the rest in its
        own slices). ``live=False``: text put on screen in bulk (a saved answer), whose
        blocks are all left to the painter's slices."""
        keeper = self._adding_at_end()
        # The painter counts the widget's lines, so it is fed what is shown; the view keeps
        # the text as it arrived.
        shown, view.column = soft_break(text, view.column)
        self._write(view.end_mark, shown, ("answer",))
        self.record(view, text)
        if view.job is not None:
            self.painter.feed(view.job, shown, keeper if live else None)
        keeper.restore()  # once, for the text and what was painted with it

    def record(self, view: AnswerView, text: str) -> None:
        """Account for text shown (by :meth:`append`, or by a demo that draws it elsewhere)."""
        view.text += text
        self.inserts += 1
        now = time.perf_counter()
        view.arrivals.append((now, len(view.text)))
        if view.first_text_at is None:
            view.first_text_at = now

    def embed(self, view: AnswerView, widget: tk.Misc) -> None:
        """Show ``widget`` as the answer's body (the per-chunk-render demo's HTML widget)."""
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
        keeper.restore()
        if view.job is not None:
            if render and view.text.strip():
                self.painter.end(view.job)
            else:
                self.painter.drop(view.job)

    def show_figures(self, view: AnswerView, *, hold: bool = False) -> None:
        """The figures line under ``view``, for the version it shows (ui/answer_figures)."""
        self.figures.show(view, hold=hold)

    def clear(self) -> None:
        self.painter.cancel()
        with writable(self.text):
            self.text.delete("1.0", "end")
        self._unset_marks(self.entries)
        self.painter.forget_codes()
        self.answers.clear()
        self.entries.clear()

    def remove_from(self, view: UserView | AnswerView) -> None:
        """Delete ``view`` and everything after it (edit and resend, regenerate)."""
        index = self.entries.index(view)
        gone = self.entries[index:]
        for removed in gone:  # their painting stops; earlier answers' goes on
            if isinstance(removed, AnswerView) and removed.job is not None:
                self.painter.drop(removed.job)
        with writable(self.text):
            self.text.delete(view.head_mark, "end-1c")
        self._unset_marks(gone)
        self.painter.forget_codes()
        del self.entries[index:]
        # The answers removed are the last ones, as the messages removed are.
        del self.answers[sum(isinstance(e, AnswerView) for e in self.entries) :]

    def _unset_marks(self, views: list[UserView | AnswerView]) -> None:
        for view in views:
            self.text.mark_unset(view.head_mark)
            if isinstance(view, AnswerView):
                self.text.mark_unset(view.start_mark, view.end_mark)
                self.text.mark_unset(view.notes_mark, view.tail_mark)

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
        self.painter.forget_codes()
        view.shown, view.status, view.rendered = number, status, False
        view.text, view.column = text, 0
        view.job = self.painter.begin(
            view.start_mark,
            view.end_mark,
            extra_tags=("answer",),
            on_done=lambda: _rendered(view),
        )
        shown, view.column = soft_break(text, 0)
        self._write(view.end_mark, shown, ("answer",))
        self.painter.feed(view.job, shown, None)
        if text.strip():
            self.painter.end(view.job)
        else:
            self.painter.drop(view.job)
        self._redraw_version_links(view)
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
        """Put a saved message (or one of a branch shown again) on screen at the end, its
        markdown left to the painter's slices. ``versions``/``shown``: its versions, if it
        has several, as (text, status); ``branches``: a question's."""
        if role == "user":
            texts = [version for version, _status in versions or []]
            return self.add_user(text, texts, branches, shown)
        view = self.begin_answer(versions, shown)
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
            links = _version_links(view)
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
        language (the messages themselves are content, and stay as they are)."""
        labels = [(_label_tag(key), key) for key in ("transcript.you", "transcript.assistant")]
        labels += [(f"act-{action}", f"transcript.{action}") for action in ACTIONS]
        labels.append((COPY_CODE_TAG, "transcript.copy_code"))
        with writable(self.text):
            for tag, key in labels:
                ranges = self.text.tag_ranges(tag)
                new = self.t(key)
                # Last first, so the indices of the ranges still to do stay valid.
                for start, end in reversed(list(zip(ranges[::2], ranges[1::2], strict=True))):
                    tags = self.text.tag_names(start)
                    self.text.insert(end, new, tags)
                    self.text.delete(start, end)

    # -- links ---------------------------------------------------------------------------------

    def entry_at(self, index: str) -> UserView | AnswerView | None:
        """The message whose header starts at or before ``index``."""
        low, high = 0, len(self.entries)
        while low < high:
            middle = (low + high) // 2
            if self.text.compare(self.entries[middle].head_mark, "<=", index):
                low = middle + 1
            else:
                high = middle
        return self.entries[low - 1] if low else None

    def link_index(self, view: UserView | AnswerView, action: str) -> str | None:
        """Where ``view``'s link for ``action`` is (for tests and keyboard users)."""
        found = self.text.tag_nextrange(f"act-{action}", view.head_mark)
        if not found or self.entry_at(found[0]) is not view:
            return None
        return str(found[0])

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


def _label_tag(key: str) -> str:
    """The tag that finds a header's role word again ("transcript.you" -> "label-you")."""
    return "label-" + key.rsplit(".", 1)[-1]


def _version_links(view: UserView | AnswerView) -> list[object]:
    """Insert arguments for "◀ n/m ▶" (nothing for a message with one version). A link that
    leads nowhere, or any while the answer streams, is drawn without its ``act-`` tag."""
    count = len(view.versions)
    if count < 2:
        return []
    ended = not isinstance(view, AnswerView) or view.status != "streaming"

    def link(symbol: str, step: str, possible: bool) -> list[object]:
        tags = ("who", NAV_TAG, "action", f"act-{step}") if ended and possible else ("who", NAV_TAG)
        return [symbol, tags]

    return [
        "   ",
        ("who", NAV_TAG),
        *link("◀", "prev", view.shown > 0),
        f" {view.shown + 1}/{count} ",
        ("who", NAV_TAG),
        *link("▶", "next", view.shown < count - 1),
    ]


def _rendered(view: AnswerView) -> None:
    view.rendered = True


def _body_family(widget: tk.Misc) -> str:
    """A font with good Unicode coverage if the system has one; Tk falls back per glyph
    (fontconfig) for Chinese and emoji either way."""
    families = {name.lower(): name for name in tkfont.families(widget)}
    for wanted in ("noto sans", "dejavu sans", "liberation sans", "helvetica"):
        if wanted in families:
            return families[wanted]
    return "TkDefaultFont"
