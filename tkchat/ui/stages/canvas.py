"""The pipeline drawn: one lane per stage, a bar and a line of figures each.

:func:`lane_texts` says what each lane shows of a :class:`~tkchat.ui.stages.feed.Lanes`
(in the window's language); :class:`StageCanvas` draws it. A lane where work happened in the
moment shown is lit (the tick that drained, the handler that inserted outside any tick), so
in ``blocking`` the main thread's lane lights and the tick's stays dark.

Drawing costs little and only what changed: every item is made once; a drawing compares each
lane with what it drew last and moves or relabels only the lanes that differ
(``item_updates`` counts them, for the bench and the tests).

Main thread only.
"""

from __future__ import annotations

import math
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable

from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.theme import follow_theme
from tkchat.ui.stages.feed import Lanes

Words = Callable[..., str]

LANES = ("worker", "queue", "tick", "main", "tk")
MIN_SIZE = 10  # the lanes' text shrinks to fit the height, not below this
BAR_DECADES = 4.0  # a bar's full length is 10,000 (log scale: 1, 10, 100 and 1,000 show)


def lane_texts(lanes: Lanes, t: Words) -> dict[str, str]:
    """What each lane says of ``lanes``."""
    token = lanes.token.replace("\n", "⏎")[:24]
    if lanes.worker:
        worker = t("stages.worker.tokens", tokens=lanes.tokens, token=token)
    elif lanes.tokens:
        worker = t("stages.worker.none_main", tokens=lanes.tokens)
    else:
        worker = t("stages.worker.idle")
    tk_line = t(
        "stages.tk.inserts", inserts=lanes.inserts, chars=lanes.chars, last=lanes.last_insert
    )
    if lanes.renders:
        tk_line += t("stages.tk.renders", renders=lanes.renders, rendered=lanes.rendered)
    if lanes.redraws:
        tk_line += t("stages.tk.redraws", redraws=lanes.redraws)
    return {
        "worker": worker,
        "queue": t(
            "stages.queue.depth",
            queued=lanes.queued,
            waiting=lanes.waiting_pieces,
            merged=lanes.merged,
        ),
        "tick": t(
            "stages.tick.last",
            ticks=lanes.ticks,
            drained=lanes.drained,
            inserts=lanes.tick_inserts,
            ms=f"{lanes.tick_ms:.1f}",
        ),
        "main": _main_line(t, lanes),
        "tk": tk_line,
    }


def _main_line(t: Words, lanes: Lanes) -> str:
    """Inserts outside the tick: in one handler that never gave the loop back, or from a
    timer of its own between whose runs the loop went on (an asyncio loop Tk steps)."""
    if not lanes.outside_inserts:
        return t("stages.main.free")
    if lanes.outside_spells > 1:
        return t("stages.main.stepped", inserts=lanes.outside_inserts, runs=lanes.outside_spells)
    return t("stages.main.inserts", inserts=lanes.outside_inserts)


def lane_amounts(lanes: Lanes) -> dict[str, int]:
    """How long each lane's bar is (before the log scale)."""
    return {
        "worker": lanes.tokens if lanes.worker else 0,  # none: the main thread made them
        "queue": lanes.queued + lanes.waiting_pieces,
        "tick": lanes.tick_inserts if lanes.ticks else 0,
        "main": lanes.outside_inserts,
        "tk": lanes.rendered if lanes.renders else lanes.last_insert,
    }


def lit_lanes(lanes: Lanes, before: Lanes | None) -> frozenset[str]:
    """The lanes where work happened since ``before`` (the moment drawn before it)."""
    before = before or Lanes()
    lit = set()
    if lanes.tokens != before.tokens and lanes.worker:
        lit.add("worker")
    if lanes.queued or lanes.waiting_pieces:
        lit.add("queue")
    if lanes.ticks != before.ticks:
        lit.update(("tick", "tk"))
    if lanes.outside_inserts != before.outside_inserts:
        lit.update(("main", "tk"))
    return frozenset(lit)


def bar_fraction(amount: int) -> float:
    return min(1.0, math.log10(1 + max(0, amount)) / BAR_DECADES)


class StageCanvas(tk.Canvas):
    """The lanes, one under another: a title (the stage and its thread) at the left, a bar,
    and the lane's figures under the bar. :meth:`draw` shows one moment."""

    def __init__(self, master: tk.Misc, translate: Words, size: int = 11) -> None:
        super().__init__(master, highlightthickness=0, borderwidth=0)
        self.t = translate
        family = tkfont.nametofont("TkDefaultFont", root=self).actual()["family"]
        self.wanted_size = size
        self.font = lasting_font(root=self, family=family, size=size)
        self.bold = lasting_font(root=self, family=family, size=size, weight="bold")
        self.item_updates = 0  # items moved or relabelled so far
        self.drawn: Lanes | None = None
        self._said: dict[str, tuple[str, float, bool]] = {}  # lane -> (text, bar, lit)
        self._items: dict[str, dict[str, int]] = {}
        for lane in LANES:
            self._items[lane] = {
                "band": self.create_rectangle(0, 0, 0, 0, width=0),
                "title": self.create_text(0, 0, anchor="nw", font=self.bold),
                "thread": self.create_text(0, 0, anchor="nw", font=self.font),
                "track": self.create_rectangle(0, 0, 0, 0, width=0),
                "bar": self.create_rectangle(0, 0, 0, 0, width=0),
                "figures": self.create_text(0, 0, anchor="nw", font=self.font),
            }
        self.palette: Palette | None = None
        self._geometry = (0, 0, 0)  # the bars' left and right, a line's height
        self._before: Lanes | None = None
        follow_theme(self, self.set_palette)
        self.bind("<Configure>", lambda _e: self.relayout(), add="+")
        self.relabel()

    # -- what changes seldom: size, language, colours -------------------------------------

    def set_font_size(self, size: int) -> None:
        """The window's text size: the lanes' too, as far as they fit (:meth:`relayout`)."""
        self.wanted_size = size
        self._set_size(size)
        self.relayout()

    def _set_size(self, size: int) -> None:
        self.font.configure(size=size)
        self.bold.configure(size=size)

    def relabel(self) -> None:
        for lane, items in self._items.items():
            self.itemconfigure(items["title"], text=self.t(f"stages.lane.{lane}"))
            self.itemconfigure(items["thread"], text=self.t(f"stages.thread.{lane}"))
        self._redraw_all()

    def set_palette(self, palette: Palette) -> None:
        self.palette = palette
        self.configure(background=palette.surface)
        for items in self._items.values():
            self.itemconfigure(items["title"], fill=palette.foreground)
            self.itemconfigure(items["thread"], fill=palette.muted)
            self.itemconfigure(items["figures"], fill=palette.foreground)
            self.itemconfigure(items["track"], fill=palette.chart_grid)
        self._redraw_all()

    def relayout(self) -> None:
        """Place every lane for the canvas's size and the font's: the window's text size,
        smaller where five lanes would not fit the height (a projector at 720 lines)."""
        width, height = max(self.winfo_width(), 400), self.winfo_height()
        size = self.wanted_size
        if int(self.font.cget("size")) != size:  # the room may have grown back
            self._set_size(size)
        while True:
            line = self.font.metrics("linespace")
            row = 4 * line + line // 2  # a title and a bar, then two lines of figures
            if height <= 1 or len(LANES) * row <= height or size <= MIN_SIZE:
                break
            size -= 1
            self._set_size(size)
        left = max(self.bold.measure(self.t(f"stages.lane.{lane}")) for lane in LANES)
        left = max(left, *(self.font.measure(self.t(f"stages.thread.{lane}")) for lane in LANES))
        left += 2 * line
        self._geometry = (left, width - line, line)
        for index, items in enumerate(self._items.values()):
            top = index * row
            self.coords(items["band"], 0, top, width, top + row - 2)
            self.coords(items["title"], line // 2, top + line // 2)
            self.coords(items["thread"], line // 2, top + line // 2 + line)
            self.coords(items["track"], left, top + line // 2, width - line, top + 3 * line // 2)
            self.coords(items["figures"], left, top + 2 * line)
            self.itemconfigure(items["figures"], width=width - left - line)
        if height <= 1:  # not laid out yet: ask for the room the lanes take
            self.configure(height=len(LANES) * row)
        self._redraw_all()

    # -- one moment -----------------------------------------------------------------------

    def draw(self, lanes: Lanes, before: Lanes | None = None) -> None:
        """Show ``lanes`` (``before``: the moment drawn before it, which says what is lit).
        Only the lanes that differ from what is on the canvas are touched."""
        self.drawn = lanes
        self._before = before
        texts, amounts, lit = (
            lane_texts(lanes, self.t),
            lane_amounts(lanes),
            lit_lanes(lanes, before),
        )
        for lane in LANES:
            said = (texts[lane], bar_fraction(amounts[lane]), lane in lit)
            if self._said.get(lane) != said:
                self._say(lane, *said)

    def figures(self, lane: str) -> str:
        """The figures lane ``lane`` shows now (tests, a reader)."""
        return str(self.tk.call(str(self), "itemcget", self._items[lane]["figures"], "-text"))

    def lit(self, lane: str) -> bool:
        return self._said.get(lane, ("", 0.0, False))[2]

    def _say(self, lane: str, text: str, fraction: float, lit: bool) -> None:
        self._said[lane] = (text, fraction, lit)
        self.item_updates += 1
        items = self._items[lane]
        left, right, _line = self._geometry
        _x0, y0, _x1, y1 = self.coords(items["track"]) or (0, 0, 0, 0)
        self.coords(items["bar"], left, y0, left + fraction * (right - left), y1)
        self.itemconfigure(items["figures"], text=text)
        if self.palette is not None:
            hot = self.palette.chart_frozen_fill if lane == "main" else self.palette.selection
            self.itemconfigure(items["band"], fill=hot if lit else self.palette.surface)
            bar = self.palette.chart_frozen_ink if lane == "main" else self.palette.chart_good
            self.itemconfigure(items["bar"], fill=bar)

    def _redraw_all(self) -> None:
        """Size, language or colours changed: every lane again."""
        self._said.clear()
        if self.drawn is not None:
            self.draw(self.drawn, self._before)
