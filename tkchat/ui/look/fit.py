"""Text that fits its widget: an ellipsis where a line is too long, a break only where a
reader expects one.

Tk cuts a label's text at its edge without a sign, and wraps Chinese (which has no spaces)
anywhere, "16 毫秒" and "125 token/s" included. These helpers fix both for the window's
labels and the lesson panel.

``ellipsize`` needs a font (Tk); ``breakable`` is plain text. :class:`FlowRow` lays out a
bar of buttons on as many rows as it needs. Main thread only.
"""

from __future__ import annotations

import itertools
import re
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable, Iterator, Sequence
from tkinter import ttk
from typing import Any

from tkchat.ui.look.full_text import FullTextTip
from tkchat.ui.look.scaling import dp

ELLIPSIS = "…"
NO_BREAK = "\u00a0"  # Tk does not break a line here (tested), so a number keeps its unit
# Where Chinese may break. Tk 8.6 wraps only at a plain space (or a tag boundary): not at this
# zero-width space, nor at a thin or hair space (measured by layout). So this is only a mark:
# :func:`insert_breakable` makes each one a real space in a one-pixel font.
BREAK_OPPORTUNITY = "\u200b"
BREAK_TAG = "break-opportunity"

_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
# Chinese print's rule: no line starts with a closing mark (，。）…) and none ends with an
# opening one (（「…). Seen at 1280×720: a lesson's lines began with "，".
NO_LINE_START = "，。、；：！？）」』》〉】〕…％"
NO_LINE_END = "（「『《〈【〔"
_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}])(?<![{NO_LINE_END}])(?=[{_CJK}])(?![{NO_LINE_START}])")
# Units written in Chinese, two characters each: "16 毫 / 秒" must not happen.
_KEEP_TOGETHER = frozenset({"毫秒"})
_NUMBER_UNIT = re.compile(
    r"(?<=\d) (?=(?:ms|s|MB|tokens/s|token/s|tokens?|updates/s)\b|毫秒|秒|个|次)"
)


def ellipsize(font: tkfont.Font, text: str, width: int) -> str:
    """``text`` if it fits in ``width`` pixels, else its longest start that does, with "…"
    (nothing at all if not even "…" fits)."""
    if width <= 0:
        return text
    whole = font.measure(text)
    if whole <= width:
        return text
    if font.measure(ELLIPSIS) > width:
        return ""  # not even "…" fits: nothing, rather than a cut "…"

    def fits(count: int) -> bool:
        return font.measure(text[:count].rstrip() + ELLIPSIS) <= width

    # Start where the average character width says the cut is (a list of a thousand titles
    # is fitted after every resize: a few measures per title, not a dozen).
    count = _longest(fits, int(len(text) * width / whole), len(text))
    return text[:count].rstrip() + ELLIPSIS


def _longest(fits: Callable[[int], bool], guess: int, most: int) -> int:
    """The largest ``n`` in 0..most with ``fits(n)`` (``fits`` is true up to some point,
    then false; ``fits(0)`` is taken as true), searched outwards from ``guess``."""
    guess = max(0, min(most, guess))
    step = 1
    if fits(guess):  # gallop up until it stops fitting, then search the last stride
        low = guess
        while low + step <= most and fits(low + step):
            low += step
            step *= 2
        high = min(most, low + step - 1)
    else:  # gallop down until it fits
        high = guess - 1
        low = max(0, guess - step)
        while low > 0 and not fits(low):
            high = low - 1
            step *= 2
            low = max(0, guess - step)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def ellipsize_around(font: tkfont.Font, text: str, start: int, end: int, width: int) -> str:
    """``text`` cut to ``width`` pixels around ``text[start:end]`` (a search hit), which
    stays visible: as much context on each side as fits, with "…" wherever text was cut.
    A hit too long to fit keeps its start."""
    if width <= 0 or font.measure(text) <= width:
        return text
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    if font.measure(_piece(text, start, end)) > width:
        return ellipsize(font, _piece(text, start, len(text)), width)

    def fits(left: int, right: int) -> bool:
        return font.measure(_piece(text, left, right)) <= width

    low, high = 0, len(text)  # the most context on both sides that fits
    while low < high:
        middle = (low + high + 1) // 2
        if fits(max(0, start - middle), min(len(text), end + middle)):
            low = middle
        else:
            high = middle - 1
    left, right = max(0, start - low), min(len(text), end + low)
    # One side may have reached the text's edge: give the room left to the other side.
    grow_low, grow_high = 0, len(text)
    while grow_low < grow_high:
        middle = (grow_low + grow_high + 1) // 2
        if fits(max(0, left - middle), min(len(text), right + middle)):
            grow_low = middle
        else:
            grow_high = middle - 1
    if grow_low:
        left, right = max(0, left - grow_low), min(len(text), right + grow_low)
    return _piece(text, left, right)


def _piece(text: str, left: int, right: int) -> str:
    """``text[left:right]`` with "…" on each side where text was left out."""
    middle = text[left:right].strip()
    return (ELLIPSIS if left > 0 else "") + middle + (ELLIPSIS if right < len(text) else "")


def break_points(text: str, before: str = "") -> Iterator[int]:
    """Where Chinese may break in ``text``, as in print: each offset ``at`` allows a line end
    before ``text[at]``. Between two CJK characters, unless the second is a closing mark or
    the first an opening one, and never inside a unit (毫秒). ``before``: the text shown just
    before ``text`` (its last character decides a break at offset 0). Linear in ``text``."""
    lead = before[-1:]
    joined = lead + text
    for match in _BETWEEN_CJK.finditer(joined, len(lead)):
        at = match.start()
        if joined[at - 1 : at + 1] not in _KEEP_TOGETHER:
            yield at - len(lead)


def breakable(text: str) -> str:
    """Text laid out the way a reader expects in Tk's word wrap: Chinese may break between
    any two characters (:func:`break_points`), but never inside a Latin word or a number, and
    never between a number and its unit."""
    text = _NUMBER_UNIT.sub(NO_BREAK, text)
    cuts = [0, *break_points(text), len(text)]
    return BREAK_OPPORTUNITY.join(text[start:end] for start, end in itertools.pairwise(cuts))


def unbreakable(text: str) -> str:
    """The text as written (for copying): no zero-width break marks."""
    return text.replace(BREAK_OPPORTUNITY, "")


def configure_breaks(widget: tk.Text) -> None:
    """Make :data:`BREAK_TAG` a space one pixel wide, above every other tag (a bold or code
    font must not widen it). Call it again after configuring or adding font tags."""
    widget.tag_configure(BREAK_TAG, font=("TkDefaultFont", -1))
    widget.tag_raise(BREAK_TAG)


def insert_breakable(widget: tk.Text, text: str, tags: tuple[str, ...]) -> None:
    """Insert :func:`breakable` ``text`` at the end of ``widget``, each break mark made a real
    break opportunity: a space in :data:`BREAK_TAG`'s one-pixel font, which Tk's word wrap
    breaks at and a reader does not see. Without it a line ended at the last plain space
    before a Chinese run, however much room was left ("点" alone on its line). One insert call,
    however many marks: a lesson of thousands of characters stays one Tk command."""
    pieces = text.split(BREAK_OPPORTUNITY)
    args: list[str | tuple[str, ...]] = []
    for number, piece in enumerate(pieces):
        if number:
            args += [" ", (*tags, BREAK_TAG)]
        if piece:
            args += [piece, tags]
    if args and isinstance(args[0], str):  # (always: pieces and spaces come first)
        widget.insert("end", args[0], *args[1:])


def breakable_runs(
    runs: list[tuple[str, tuple[str, ...]]], keep: Callable[[tuple[str, ...]], bool]
) -> list[tuple[str, tuple[str, ...]]]:
    """(text, tags) runs made :func:`breakable`, each break mark a run of its own: a space in
    :data:`BREAK_TAG` (what :func:`insert_breakable` inserts). Runs whose tags ``keep``
    (code) stay as they are."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for text, tags in runs:
        if keep(tags):
            out.append((text, tags))
            continue
        for number, piece in enumerate(breakable(text).split(BREAK_OPPORTUNITY)):
            if number:
                out.append((" ", (*tags, BREAK_TAG)))
            if piece:
                out.append((piece, tags))
    return out


def text_as_written(widget: tk.Text, start: str = "1.0", end: str = "end-1c") -> str:
    """The text of ``widget`` between ``start`` and ``end`` without the break spaces of
    :func:`insert_breakable` (what the reader sees, as it was written)."""
    out: list[str] = []
    index = widget.index(start)
    end = widget.index(end)
    while widget.compare(index, "<", end):
        found = widget.tag_nextrange(BREAK_TAG, index, end)
        if not found:
            out.append(widget.get(index, end))
            break
        out.append(widget.get(index, found[0]))
        index = found[1]
    return "".join(out)


class FittedLabel(ttk.Label):
    """A one-line label that shows as much of its text as its width allows, ending with
    "…" where cut, and asks for no width of its own (it takes what its row leaves it, and
    never pushes its neighbours away). :attr:`full` is the whole text; where it is cut, a
    tip shows it all (:class:`~tkchat.ui.look.full_text.FullTextTip`: the pointer resting
    on the label, or a click)."""

    def __init__(self, master: tk.Misc, **options: Any) -> None:
        options.setdefault("width", 1)
        super().__init__(master, **options)
        self.full = ""
        self.bind("<Configure>", lambda _e: self._fit(), add="+")
        self.tip = FullTextTip(self, lambda: self.full if self.cut else None)

    @property
    def cut(self) -> bool:
        """Whether the label shows less than its whole text."""
        return str(self.cget("text")) != self.full

    def set_full(self, text: str) -> None:
        self.full = text
        self._fit()

    def _fit(self) -> None:
        font = tkfont.nametofont(str(self.cget("font") or "TkDefaultFont"), root=self)
        self.configure(text=ellipsize(font, self.full, self.winfo_width() - 4))
        self.tip.refresh()


def wrap_rows(widths: Sequence[int], width: int) -> list[list[int]]:
    """The items of ``widths`` (pixels each, their gap included), in order, on rows of
    ``width`` pixels: each row as the indices of its items. An item that does not fit where a
    row has others starts the next; one wider than a row has a row of its own; an unknown
    width (``<= 1``: not laid out yet) is one row."""
    rows: list[list[int]] = [[]]
    used = 0
    for index, needed in enumerate(widths):
        if rows[-1] and width > 1 and used + needed > width:
            rows.append([])
            used = 0
        rows[-1].append(index)
        used += needed
    return rows


class FlowRow(ttk.Frame):
    """Groups of widgets side by side, from the right edge leftwards, on as many rows as the
    width needs: one row when there is room, more when the text is big or the window narrow.
    A group (a label and its box) always stays together. Main thread only."""

    def __init__(self, master: tk.Misc, **options: Any) -> None:
        super().__init__(master, **options)
        self._groups: list[tuple[tuple[tk.Widget, ...], int]] = []
        self._hidden: set[tuple[tk.Widget, ...]] = set()  # groups left out (chat-only view)
        self._rows: list[ttk.Frame] = []
        self._shape: tuple[int, ...] = ()
        self.bind("<Configure>", lambda e: self._reflow(e.width), add="+")

    def add(self, *widgets: tk.Widget, gap: int = 6) -> None:
        """Add a group, to the left of those added before (widgets listed right to left)."""
        self._groups.append((widgets, gap))
        self._shape = ()
        self._reflow(self.winfo_width())

    def set_visible(self, widget: tk.Widget, visible: bool) -> None:
        """Show or leave out the group ``widget`` belongs to (the others close up)."""
        for widgets, _gap in self._groups:
            if widget in widgets:
                if visible:
                    self._hidden.discard(widgets)
                else:
                    self._hidden.add(widgets)
                    for member in widgets:
                        member.pack_forget()
        self._shape = ()
        self._reflow(self.winfo_width())

    def relayout(self) -> None:
        """The widgets' sizes changed (the text size did): wrap again."""
        self.update_idletasks()
        self._reflow(self.winfo_width())

    def _width(self, group: tuple[tuple[tk.Widget, ...], int]) -> int:
        widgets, gap = group
        return sum(widget.winfo_reqwidth() + dp(self, gap) for widget in widgets)

    def _inner(self, width: int) -> int:
        """The width the groups have: the frame's less its padding on the left and right."""
        pads = [int(float(str(value))) for value in (self.cget("padding") or ())]
        left = pads[0] if pads else 0
        right = pads[2] if len(pads) > 2 else left
        return width - left - right

    def _reflow(self, width: int) -> None:
        width = self._inner(width) if width > 1 else width
        shown = [group for group in self._groups if group[0] not in self._hidden]
        places = wrap_rows([self._width(group) for group in shown], width)
        rows = [[shown[index] for index in row] for row in places]
        shape = tuple(len(row) for row in rows)
        if shape == self._shape:
            return
        self._shape = shape
        while len(self._rows) < len(rows):
            self._rows.append(ttk.Frame(self))
        for index, frame in enumerate(self._rows):
            if index < len(rows):
                frame.pack(side="top", fill="x", pady=(0 if index == 0 else dp(self, 4), 0))
            else:
                frame.pack_forget()
        for frame, row in zip(self._rows, rows, strict=False):
            for widgets, gap in row:
                for widget in widgets:
                    widget.pack(in_=frame, side="right", padx=(dp(self, gap), 0))
                    widget.lift(frame)  # stacked above the row frame it is packed into
