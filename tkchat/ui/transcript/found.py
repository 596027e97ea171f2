"""A search's matches, marked in the chat it opened: the chat scrolls to the first match and
every match in it is highlighted, as a reader of any chat app's search expects.

Matches are found with the Text widget's own search (case ignored, as the sidebar's search
ignores it), at most :data:`MAX_MARKED` of them. The painter replaces an answer's plain text
with its rendered markdown some time after the chat is on screen (in slices, near the view),
and the highlight is a tag on the old text: so each swap tells :meth:`FoundMarks.repaint`,
which marks the matches in the new text again. Main thread only.
"""

from __future__ import annotations

import tkinter as tk

from tkchat.ui.look.palette import Palette

FOUND_TAG = "found"
MAX_MARKED = 500  # a search for "e" in a long chat would otherwise tag every line


class FoundMarks:
    """The matches of one query in ``text``. Main thread only."""

    def __init__(self, text: tk.Text) -> None:
        self.text = text
        self.query = ""
        text.tag_configure(FOUND_TAG)

    def show(self, query: str) -> str | None:
        """Mark every match of ``query`` in the whole chat; the index of the first (None:
        no match: the view is left where it is)."""
        self.query = query.strip()
        self.text.tag_remove(FOUND_TAG, "1.0", "end")
        return self._mark("1.0", "end") if self.query else None

    def repaint(self, start: str, end: str) -> None:
        """The text between ``start`` and ``end`` was replaced (rendered): mark it again."""
        if self.query:
            self._mark(start, end)

    def clear(self) -> None:
        self.query = ""
        self.text.tag_remove(FOUND_TAG, "1.0", "end")

    def set_palette(self, palette: Palette) -> None:
        self.text.tag_configure(
            FOUND_TAG, background=palette.watch_background, foreground=palette.watch_text
        )

    def _mark(self, start: str, end: str) -> str | None:
        # Over every other tag (code's background and its tokens' colours): a tag made later
        # is drawn over the earlier ones, and a code block's tags are made as it is painted.
        self.text.tag_raise(FOUND_TAG)
        count = tk.IntVar(self.text)
        first: str | None = None
        where = start
        for _ in range(MAX_MARKED):
            found = self.text.search(self.query, where, end, nocase=True, count=count)
            if not found or count.get() <= 0:
                break
            after = f"{found} + {count.get()} chars"
            self.text.tag_add(FOUND_TAG, found, after)
            first = first or found
            where = after
        return first
