"""The header line of every message on screen: what a click on one of its links does, and its
labels in a new language.

Every message starts with a header line ("You · Copy · Edit", "Assistant · Copy"): the links
are text with a tag, not widgets, so 200 messages cost no widgets at all. A click finds its
message by comparing the click's index with each message's ``head_mark`` (a binary search).
A code block's "Copy code" link copies its code as it arrived.

:class:`HeaderLinks` is this part of :class:`~tkchat.ui.transcript.transcript.Transcript`
(mixed into it, which builds the widget and writes the messages). Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable

from tkchat.render.soft_breaks import unbreak
from tkchat.ui.base.translator import Translator
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.markdown_view import COPY_CODE_TAG, MarkdownPainter
from tkchat.ui.transcript.message_views import (
    NAV_TAG,
    VERSION_STEPS,
    AnswerView,
    UserView,
    label_tag,
)

RELABEL_MARK = "relabel_from"  # (no "-": it is used in index arithmetic)
RELABEL_LINES = 400  # lines relabelled at a time, from the end back
RELABEL_BUDGET_MS = 6.0  # per callback
EARLIER_TAG = "earlier"  # the line above a chat whose start is left out; a click shows more
ACTIONS = ("copy", "edit")  # header links; "copy" on every message, "edit" on the user's


class HeaderLinks:
    """The messages' header links: clicks, and relabelling. Main thread only."""

    text: tk.Text
    t: Translator
    scheduler: AfterScheduler
    painter: MarkdownPainter
    entries: list[UserView | AnswerView]  # every message on screen, in order
    # What a click on a header link asks for: on_edit(view) for "Edit"; on_copied(what)
    # after a copy ("message" or "code"); on_version(view, step) for "◀" (-1), "▶" (+1).
    on_edit: Callable[[UserView], None] | None
    on_version: Callable[[UserView | AnswerView, int], object] | None
    on_copied: Callable[[str], None] | None
    on_earlier: Callable[[], None] | None  # a click on the line of messages left out
    _labels: list[tuple[str, str]]  # (tag, its text now) while relabelling

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

    def _stop_relabelling(self) -> None:
        """The text is being cleared (what comes next is written in the new language)."""
        self.scheduler.cancel("relabel")
        self.text.mark_unset(RELABEL_MARK)

    # -- clicks ---------------------------------------------------------------------------------

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
        if EARLIER_TAG in tags:
            if self.on_earlier is not None:
                self.on_earlier()
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
        self.text.clipboard_clear()
        self.text.clipboard_append(text)
        if self.on_copied is not None:
            self.on_copied(what)
