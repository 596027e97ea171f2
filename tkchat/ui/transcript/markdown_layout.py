"""Two layouts tkhtmlview does not draw well, drawn here for :class:`~tkchat.ui.transcript.
markdown_looks.MarkdownLooks`: a pipe table as aligned columns, and a list item whose wrapped
lines hang under its text.

tkhtmlview puts a table's columns 40 pixels apart whatever they hold, and lays a list item out
as ``"\\t" + "\\t\\t" per level below the first + its marker + "\\t"`` with tab stops 30 pixels a
level apart (the marker right-aligned at 30, the text at 35) and no margin: a wrapped line
starts under the marker. Main thread only.
"""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont

from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp

Run = tuple[str, tuple[str, ...]]  # (text, tags)

TABLE_TAG = "md-table"  # a table's rows ...
TABLE_HEAD_TAG = "md-table-head"  # ... its header row
TABLE_GAP_PX = 14  # between a table's columns (design pixels)
_ITEM_RE = re.compile(r"^(\t+)[^\t\n]*\t")  # a list item's line, as tkhtmlview lays it out
LIST_STEP_PX, LIST_TEXT_PX = 30, 35  # tkhtmlview's tab stops: a level's step, the item's text


class TableLayout:
    """Tables as aligned columns: each table's tab stops as wide as its widest cells,
    measured (Chinese is not monospace), the header row bold on the code background."""

    def __init__(self, text: tk.Text, body: tkfont.Font, head: tkfont.Font) -> None:
        """``body`` and ``head``: the rows' fonts (the looks rescale them with the text)."""
        self.text = text
        self.head = head
        self._tags: dict[tuple[tuple[str, ...], ...], str] = {}  # rows -> their tab stops' tag
        margin = dp(text, 6)
        for tag, font, below in ((TABLE_TAG, body, 1), (TABLE_HEAD_TAG, head, dp(text, 3))):
            text.tag_configure(
                tag, font=font, wrap="none", lmargin1=margin, lmargin2=margin, spacing3=below
            )

    def runs(self, rows: list[list[str]]) -> list[Run]:
        """A table's runs: one line per row, its cells separated by tabs."""
        key = tuple(tuple(row) for row in rows)
        tag = self._tags.get(key)
        if tag is None:
            tag = self._tags[key] = f"md-tabs-{len(self._tags)}"
            self.text.tag_configure(tag, tabs=self._tab_stops(key))
        return [
            ("\t".join(row) + "\n", (TABLE_HEAD_TAG if number == 0 else TABLE_TAG, tag))
            for number, row in enumerate(rows)
        ]

    def measure_again(self) -> None:
        """The fonts changed size: every table's columns are measured again."""
        for rows, tag in self._tags.items():
            self.text.tag_configure(tag, tabs=self._tab_stops(rows))

    def set_palette(self, palette: Palette) -> None:
        self.text.tag_configure(TABLE_HEAD_TAG, background=palette.code_background)

    def _tab_stops(self, rows: tuple[tuple[str, ...], ...]) -> tuple[int, ...] | str:
        widths = [
            max((self.head.measure(row[column]) for row in rows if column < len(row)), default=0)
            for column in range(max(len(row) for row in rows))
        ]
        stops: list[int] = []
        x = 0
        for width in widths[:-1]:
            x += width + dp(self.text, TABLE_GAP_PX)
            stops.append(x)
        return tuple(stops) or ""


class ListHanging:
    """A list's lines, each tagged so that a wrapped line starts under its item's text (and an
    item's later paragraphs with it). The tags are lowered, as the looks' styles are: a
    view's own margins on top win (the transcript's messages have theirs; the lesson panel's
    text has none)."""

    def __init__(self, text: tk.Text) -> None:
        self.text = text
        self._tags: set[str] = set()

    def hang(self, runs: list[Run]) -> list[Run]:
        lines: list[list[Run]] = [[]]
        for text, tags in runs:
            for number, part in enumerate(text.split("\n")):
                if number:
                    lines[-1].append(("\n", tags))
                    lines.append([])
                if part:
                    lines[-1].append((part, tags))
        out: list[Run] = []
        level = 0
        for line in lines:
            item = _ITEM_RE.match("".join(chunk for chunk, _tags in line))
            if item:
                level = (len(item.group(1)) + 1) // 2
            tag = self._tag(level, continued=not item) if level else None
            out += [(chunk, (*tags, tag)) for chunk, tags in line] if tag else line
        return out

    def _tag(self, level: int, *, continued: bool) -> str:
        """The tag of an item's lines at ``level``: its wrapped lines start under its text;
        a line of its own after the first (a later paragraph) as well."""
        tag = f"md-item-{level}{'-more' if continued else ''}"
        if tag not in self._tags:
            self._tags.add(tag)
            text_at = LIST_STEP_PX * (level - 1) + LIST_TEXT_PX
            self.text.tag_configure(tag, lmargin1=text_at if continued else 0, lmargin2=text_at)
            self.text.tag_lower(tag)
        return tag
