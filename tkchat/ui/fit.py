"""Text that fits its widget: an ellipsis where a line is too long, a break only where a
reader expects one.

Tk cuts a label's text at its edge without a sign, and wraps Chinese (which has no spaces)
anywhere, "16 毫秒" and "125 token/s" included. These helpers fix both for the window's
labels and the lesson panel.

``ellipsize`` needs a font (Tk); ``breakable`` is plain text. :class:`FlowRow` lays out a
bar of buttons on as many rows as it needs. Main thread only.
"""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont
from tkinter import ttk
from typing import Any

ELLIPSIS = "…"
NO_BREAK = "\u00a0"  # Tk does not break a line here (tested), so a number keeps its unit
BREAK_OPPORTUNITY = "\u200b"  # zero width; Tk's word wrap may break here (tested)

_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}])(?=[{_CJK}])")
_KEEP_TOGETHER = ("毫秒",)  # units written in Chinese: "16 毫 / 秒" must not happen
_NUMBER_UNIT = re.compile(
    r"(?<=\d) (?=(?:ms|s|MB|tokens/s|token/s|tokens?|updates/s)\b|毫秒|秒|个|次)"
)


def ellipsize(font: tkfont.Font, text: str, width: int) -> str:
    """``text`` if it fits in ``width`` pixels, else its longest start that does, with "…"."""
    if width <= 0 or font.measure(text) <= width:
        return text
    low, high = 0, len(text)
    while low < high:  # the longest prefix whose "prefix…" fits
        middle = (low + high + 1) // 2
        if font.measure(text[:middle].rstrip() + ELLIPSIS) <= width:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + ELLIPSIS


def breakable(text: str) -> str:
    """Text laid out the way a reader expects in Tk's word wrap: Chinese may break between
    any two characters (as it does in print), but never inside a Latin word or a number, and
    never between a number and its unit."""
    text = _BETWEEN_CJK.sub(BREAK_OPPORTUNITY, _NUMBER_UNIT.sub(NO_BREAK, text))
    for word in _KEEP_TOGETHER:
        text = text.replace(BREAK_OPPORTUNITY.join(word), word)
    return text


def unbreakable(text: str) -> str:
    """The text as written (for copying): no zero-width break marks."""
    return text.replace(BREAK_OPPORTUNITY, "")


class FlowRow(ttk.Frame):
    """Groups of widgets side by side, from the right edge leftwards, on as many rows as the
    width needs: one row when there is room, more when the text is big or the window narrow.
    A group (a label and its box) always stays together. Main thread only."""

    def __init__(self, master: tk.Misc, **options: Any) -> None:
        super().__init__(master, **options)
        self._groups: list[tuple[tuple[tk.Widget, ...], int]] = []
        self._rows: list[ttk.Frame] = []
        self._shape: tuple[int, ...] = ()
        self.bind("<Configure>", lambda e: self._reflow(e.width), add="+")

    def add(self, *widgets: tk.Widget, gap: int = 6) -> None:
        """Add a group, to the left of those added before (widgets listed right to left)."""
        self._groups.append((widgets, gap))
        self._shape = ()
        self._reflow(self.winfo_width())

    def relayout(self) -> None:
        """The widgets' sizes changed (the text size did): wrap again."""
        self.update_idletasks()
        self._reflow(self.winfo_width())

    def _width(self, group: tuple[tuple[tk.Widget, ...], int]) -> int:
        widgets, gap = group
        return sum(widget.winfo_reqwidth() + gap for widget in widgets)

    def _reflow(self, width: int) -> None:
        rows: list[list[tuple[tuple[tk.Widget, ...], int]]] = [[]]
        used = 0
        for group in self._groups:
            needed = self._width(group)
            if rows[-1] and width > 1 and used + needed > width:
                rows.append([])
                used = 0
            rows[-1].append(group)
            used += needed
        shape = tuple(len(row) for row in rows)
        if shape == self._shape:
            return
        self._shape = shape
        while len(self._rows) < len(rows):
            self._rows.append(ttk.Frame(self))
        for index, frame in enumerate(self._rows):
            if index < len(rows):
                frame.pack(side="top", fill="x", pady=(0 if index == 0 else 4, 0))
            else:
                frame.pack_forget()
        for frame, row in zip(self._rows, rows, strict=False):
            for widgets, gap in row:
                for widget in widgets:
                    widget.pack(in_=frame, side="right", padx=(gap, 0))
                    widget.lift(frame)  # stacked above the row frame it is packed into
