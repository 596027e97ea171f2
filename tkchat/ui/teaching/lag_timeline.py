"""The lag timeline: the last 20 seconds of the event loop's lag, as a picture for a classroom.

The health bar gives one number; this draws the story. A thick line is the lag probe's lateness
(log scale: a healthy loop sits at the bottom, around a millisecond; a freeze reaches up to
seconds). Every firing more than 50 ms late is a *long task*: the interval it covers — from
when the probe was due to when it finally ran, the time the loop was stuck — is shaded red
and labelled with its length. Ticks along the bottom mark each moment text reached the
screen: under a red band, text that still streamed while no click could get through (the
``blocking`` mode paints each token itself), or no ticks at all and a burst after it.

The window draws this with its own loop, so a freeze shows only once it is over; the
watchdog (``tkchat watchdog``) is the picture *during* a freeze. A redraw, a few times a
second, must cost far less than the probe's 5 ms interval: it reads only the samples that are
new since the last one, keeps the worst lag per pixel column, moves two long-lived polylines
(the lag, and the arrival ticks as one comb) and rebuilds only the few freeze items; the grid
and the labels are drawn again only when the size or the scale changes.

With the window's sampler running (:mod:`tkchat.ui.teaching.loop_witness`), each band is
labelled with its culprit instead — "4.0 s in GenerateInClickHandler.start →
ScriptedBackend.stream — the model ran on the main thread" — and a click on it opens its
stacks. A label too long for its place is shortened (the why, then the innermost frame
left out), down to the band's length alone.

A recorded run (``tkchat replay FILE``) adds a second, dashed line: the lag the recording
machine measured for the same answer, placed where the replayed answer began, so a class sees
the lag measured there beside the lag of this window replaying it.

A class can stop the picture to talk about a moment: **Space** (or the *‖ pause* button on the
canvas) freezes the drawing, not the window — the loop runs on, the probe goes on sampling and
the timeline goes on keeping what it samples (:mod:`~tkchat.ui.teaching.lag_record`, two
minutes of it). Paused, **←** and **→** (or a drag along the plot) scroll back through what
was kept, and the axis says how long before the pause each moment was; **Space**, **End** or
*▶ live* go back to the moment now. The keys work once the timeline has the focus (a click
on it gives it).

Main thread only.
"""

from __future__ import annotations

import math
import time
import tkinter as tk
import tkinter.font as tkfont
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tkchat.stats import KeptLag, LagSample
from tkchat.trace.culprit import Culprit, labels
from tkchat.ui.base.translator import Translator
from tkchat.ui.lag_probe import LONG_TASK_MS
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, palette_of
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.lag_record import (
    SPAN_S,
    Arrival,
    Column,
    Freeze,
    LagRecord,
    RecordedColumns,
)
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE

Words = Callable[..., str]  # a Translator: key and values in, the window's language out

Anchor = Literal["nw", "n", "ne", "w", "center", "e", "sw", "s", "se"]

REFRESH_MS = 250
FLOOR_MS = 1.0  # the bottom of the log scale: anything under a millisecond is "healthy"
CAPTION_X = 12  # the caption starts at the canvas's left margin, as the axis labels do
STEP_S = 1.0  # what ← and → scroll a paused timeline by
DRAG_PX = 4  # a press that moves further than this is a drag (scrolling), not a click
KEYS: dict[str, str] = {  # the timeline's keys (with the focus) -> what they do
    "<space>": "toggle",
    "<Left>": "older",
    "<Right>": "newer",
    "<End>": "resume",
}


def freeze_label(seconds: float, translate: Words | None = None) -> str:
    """ "frozen 340 ms", "frozen 1.70 s" (in the window's language, given its translator)."""
    t = translate or Translator("en")
    if seconds < 1:
        return t("timeline.frozen_ms", ms=f"{seconds * 1000:.0f}")
    return t("timeline.frozen_s", seconds=f"{seconds:.2f}")


@dataclass(frozen=True)
class Layout:
    """Where things go on the canvas, for one size and one font size."""

    width: int
    height: int
    left: int
    right: int
    top: int  # the top of the plot (labels of frozen intervals stand on it)
    bottom: int  # the plot's baseline: FLOOR_MS
    band: int  # the line the arrival ticks stand on
    tick_h: int


class _Scale:
    """Seconds and milliseconds to canvas coordinates, for one redraw."""

    def __init__(self, layout: Layout, start: float, span_s: float, top_ms: float) -> None:
        self.left, self.bottom = layout.left, layout.bottom
        self.start = start
        self.px_per_s = (layout.right - layout.left) / span_s
        self.px_per_decade = (layout.bottom - layout.top) / math.log10(top_ms / FLOOR_MS)

    def x(self, at: float) -> float:
        return self.left + (at - self.start) * self.px_per_s

    def y(self, lag_ms: float) -> float:
        return self.bottom - math.log10(max(lag_ms, FLOOR_MS) / FLOOR_MS) * self.px_per_decade

    def point(self, at: float, lag_ms: float) -> tuple[float, float]:
        return self.x(at), self.y(lag_ms)


class LagTimeline(tk.Canvas):
    """A canvas that redraws itself every ``refresh_ms`` while shown.

    ``samples()`` returns the probe's samples, oldest first (``LagProbe.history``; only the
    ones newer than the last redraw are read again, from the end); ``arrivals()`` the recent
    text arrivals, oldest first (see :func:`answer_arrivals`). Both in ``time.perf_counter``
    seconds, as ``clock``. Sizes follow ``font_size``; wire it to the text size setting with
    ``font_sizer.on_change(timeline.set_font_size)``. ``recorded()``, if given, returns a
    recording's lag samples on the same clock, oldest first: drawn as a dashed line.
    :meth:`pause`, :meth:`scroll` and :meth:`resume` (the keys, the drag and the button call
    them) stop the drawing, move it back through what was kept, and go live again."""

    def __init__(
        self,
        master: tk.Misc,
        scheduler: AfterScheduler,
        samples: Callable[[], Sequence[KeptLag]],
        arrivals: Callable[[], Sequence[Arrival]],
        *,
        span_s: float = SPAN_S,
        refresh_ms: int = REFRESH_MS,
        font_size: int = BODY_FONT_SIZE,
        clock: Callable[[], float] = time.perf_counter,
        recorded: Callable[[], Sequence[LagSample]] | None = None,
        translate: Translator | None = None,
    ) -> None:
        super().__init__(master, highlightthickness=0)
        self.t: Words = translate or Translator("en")
        if translate is not None:
            translate.on_change(self._relabel)  # a bound method: dropped with the canvas
        self.recorded = recorded
        # Set by the window's sampler, when it runs (loop_witness.py): who held the loop
        # during a band, what a click on one shows, and the lesson panel's Save trace.
        self.culprits: Callable[[Freeze], Culprit | None] | None = None
        self.on_pick: Callable[[Freeze], None] | None = None
        self.save_trace: Callable[[], str] | None = None
        self._band_items: dict[int, Freeze] = {}  # canvas item -> the freeze it draws
        self._recorded_columns = RecordedColumns()
        self.palette = palette_of(self)  # its colours: light or dark, as the window
        self.scheduler = scheduler
        self.samples = samples
        self.arrivals = arrivals
        self.span_s = span_s
        self.refresh_ms = refresh_ms
        self.clock = clock
        self.timer = f"lag-timeline{self}"
        self.redraw_ms: deque[float] = deque(maxlen=240)  # what each redraw cost, for the bench
        family = tkfont.nametofont("TkDefaultFont", root=self).cget("family")
        # Kept here: a named font is deleted when its Python object is collected.
        self.label_font = lasting_font(root=self, family=family, weight="bold")
        self.axis_font = lasting_font(root=self, family=family)
        self._line = self._label_line = 0  # the fonts' line heights, read once per size
        self.line_width = 3
        # What the last redraw left for the next: the layout, scale and view the fixed items
        # were drawn for (and the room they left above the plot), and the record of what
        # was seen (lag per pixel column, freezes, arrivals), which the new samples update.
        self._drawn: tuple[Layout, float, float | None] | None = None
        self._upper: list[tuple[float, float]] = []
        self.record = LagRecord()
        # Paused: the moment the drawing stopped at, and how far before it the view ends.
        self.paused_at: float | None = None
        self.back_s = 0.0
        self._end = 0.0  # where the last redraw's view ended
        self._drag: tuple[int, float] | None = None  # a press's x and back_s, to drag from
        self._lag_item = self.create_line(0, 0, 0, 0, tags="lag")
        self._comb_item = self.create_line(0, 0, 0, 0, width=2, tags="arrivals")
        self._recorded_item = self.create_line(
            0, 0, 0, 0, width=2, dash=(6, 4), state="hidden", tags="recorded"
        )
        self.set_font_size(font_size, redraw=False)
        follow_theme(self, self.set_palette)
        self._bind_input()

    # -- running -------------------------------------------------------------------------------

    def start(self) -> None:
        self._tick()

    def stop(self) -> None:
        self.scheduler.cancel(self.timer)

    def destroy(self) -> None:
        """A panel that goes away takes its redraw loop with it."""
        self.stop()
        super().destroy()

    def _tick(self) -> None:
        if self.winfo_viewable():  # hidden (another lesson, a closed panel): skip the work
            self.refresh()
        self.scheduler.once(self.timer, self.refresh_ms, self._tick)

    def refresh(self) -> None:
        """What the timer does: live, draw; paused, only keep what is new (drawn later, if
        the class scrolls to it or goes live)."""
        if self.paused_at is None:
            self.redraw()
        elif self.record.column_s:
            self.record.take(self.samples(), self.arrivals(), self.clock(), self.record.column_s)

    # -- pause and scroll back -----------------------------------------------------------------

    def pause(self) -> None:
        """Stop the drawing where it is (the loop, the probe and the record go on)."""
        if self.paused_at is None:
            self.paused_at, self.back_s = self._end or self.clock(), 0.0
            self.redraw()

    def resume(self) -> None:
        """Live again: the view jumps to the moment now."""
        self.paused_at, self.back_s = None, 0.0
        self.redraw()

    def toggle(self) -> None:
        if self.paused_at is None:
            self.pause()
        else:
            self.resume()

    def scroll(self, seconds: float) -> None:
        """Move a paused view ``seconds`` further back (negative: forward), within what was
        kept and no later than the pause; live, it pauses first."""
        self.pause()
        assert self.paused_at is not None
        oldest = self.record.oldest()
        most = 0.0 if oldest is None else max(0.0, self.paused_at - self.span_s - oldest)
        self.back_s = min(max(0.0, self.back_s + seconds), most)
        self.redraw()

    def _bind_input(self) -> None:
        """A press (the button, a band, a drag's start), a drag, and the keys."""
        self.bind("<Button-1>", self._pressed, add="+")
        self.bind("<B1-Motion>", self._dragged, add="+")
        self.bind("<ButtonRelease-1>", self._released, add="+")
        for sequence, control in KEYS.items():
            self.bind(sequence, self._key(control))

    def _key(self, control: str) -> Callable[[tk.Event], str]:
        actions: dict[str, Callable[[], None]] = {
            "toggle": self.toggle,
            "older": lambda: self.scroll(STEP_S),
            "newer": lambda: self.scroll(-STEP_S),
            "resume": self.resume,
        }

        def handler(_event: tk.Event) -> str:
            actions[control]()
            return "break"

        return handler

    def _pressed(self, event: tk.Event) -> None:
        """A press: on the button, pause or go live; on a band, its culprit; elsewhere, the
        start of a drag. It gives the timeline the focus (for its keys)."""
        self.focus_set()
        self._drag = None
        button = self.bbox("control")
        if button and button[0] <= event.x <= button[2] and button[1] <= event.y <= button[3]:
            self.toggle()
        elif not self._picked(event):
            self._drag = (event.x, self.back_s if self.paused_at is not None else 0.0)

    def _dragged(self, event: tk.Event) -> None:
        """Drag the picture: to the right brings older moments into view."""
        if self._drag is None or abs(event.x - self._drag[0]) <= DRAG_PX:
            return
        layout = self._measure()
        seconds_per_px = self.span_s / max(1, layout.right - layout.left)
        wanted = self._drag[1] + (event.x - self._drag[0]) * seconds_per_px
        self.scroll(wanted - (self.back_s if self.paused_at is not None else 0.0))

    def _released(self, _event: tk.Event) -> None:
        self._drag = None

    def _relabel(self, _lang: str) -> None:
        """Another language: the labels are drawn again in it."""
        self._drawn = None
        if self.winfo_viewable():
            self.redraw()

    def set_palette(self, palette: Palette) -> None:
        """The theme's colours (the fixed items are drawn again at the next redraw)."""
        self.palette = palette
        self.configure(background=palette.surface)
        self.itemconfigure(self._lag_item, fill=palette.chart_line)
        self.itemconfigure(self._comb_item, fill=palette.chart_good)
        self.itemconfigure(self._recorded_item, fill=palette.chart_ink)
        self._drawn = None

    def set_font_size(self, size: int, *, redraw: bool = True) -> None:
        """Labels a little larger than the body text, lines thick enough for a projector."""
        self.label_font.configure(size=round(size * 1.3))
        self.axis_font.configure(size=round(size * 1.1))
        self._line = int(self.axis_font.metrics("linespace"))
        self._label_line = int(self.label_font.metrics("linespace"))
        self.line_width = max(3, round(size / 3.5))
        self.itemconfigure(self._lag_item, width=self.line_width)
        self.configure(width=round(size * 58), height=max(dp(self, 260), 13 * self._line))
        self._drawn = None  # new sizes: the fixed items are drawn again
        if redraw:
            self.redraw()

    # -- drawing -------------------------------------------------------------------------------

    def redraw(self, now: float | None = None) -> float:
        """Take in what is new up to ``now`` and draw the last ``span_s`` seconds to it (paused:
        the span that ends ``back_s`` before the pause); return what it cost in ms."""
        started = time.perf_counter()
        now = self.clock() if now is None else now
        layout = self._measure()
        column_s = self.span_s / max(1, layout.right - layout.left)  # one pixel column
        self.record.take(self.samples(), self.arrivals(), now, column_s)
        end = now if self.paused_at is None else self.paused_at - self.back_s
        start, self._end = end - self.span_s, end
        columns = self.record.columns_in(start, end)
        recorded_samples = self.recorded() if self.recorded is not None else ()
        recorded = self._recorded_columns.span(recorded_samples, column_s, start, end)
        peak = max((worst for _column, worst in (*columns, *recorded)), default=0.0)
        top_ms = max(1000.0, 10 ** math.ceil(math.log10(max(peak, 1.0) * 1.2)))
        view = None if self.paused_at is None else self.back_s
        if self._drawn != (layout, top_ms, view):
            self._draw_fixed(layout, top_ms)
            self._drawn = (layout, top_ms, view)
        scale = _Scale(layout, start, self.span_s, top_ms)
        self._draw_line(self._lag_item, scale, column_s, columns)
        self._draw_line(self._recorded_item, scale, column_s, recorded)
        self._draw_freezes(scale, layout, self.record.freezes_in(start, end))
        self._draw_arrivals(scale, layout, self.record.arrivals_in(start, end))
        cost = (time.perf_counter() - started) * 1000
        self.redraw_ms.append(cost)
        return cost

    def _measure(self) -> Layout:
        width, height = self.winfo_width(), self.winfo_height()
        if width <= 1:  # not laid out yet: the size it asked for
            width, height = int(self.cget("width")), int(self.cget("height"))
        tick_h = max(10, self._line * 2 // 3)
        band = height - 8 - self._line - 6
        return Layout(
            width=width,
            height=height,
            left=12 + self.axis_font.measure(self.t("timeline.ms", value="100")) + 8,
            right=width - 12,
            top=8 + 2 * self._label_line + 8,  # the caption, then a row for freeze labels
            bottom=band - tick_h - 10,
            band=band,
            tick_h=tick_h,
        )

    def _text(
        self,
        at_x: float,
        at_y: float,
        text: str,
        anchor: Anchor,
        font: tkfont.Font,
        fill: str | None = None,
        tags: str | tuple[str, ...] = "fixed",
    ) -> int:
        ink = fill or self.palette.chart_ink
        return self.create_text(
            at_x, at_y, text=text, anchor=anchor, font=font, fill=ink, tags=tags
        )

    def _draw_fixed(self, layout: Layout, top_ms: float) -> None:
        """The items that change only with the size, the scale or the theme: grid, axes,
        legend."""
        self.delete("fixed")
        p = self.palette
        scale = _Scale(layout, 0.0, self.span_s, top_ms)
        left, right = layout.left, layout.right
        # every decade a line; a label only every ``step`` decades, a line of type apart (a
        # short strip, projector type and six decades: "100 ms" was written over "10 ms")
        line = int(self.axis_font.metrics("linespace"))
        step = max(1, math.ceil(line / max(scale.px_per_decade, 1.0)))
        value, decade = FLOOR_MS, 0
        while value <= top_ms:
            at_y = scale.y(value)
            self.create_line(left, at_y, right, at_y, fill=p.chart_grid, width=1, tags="fixed")
            if decade % step == 0:
                if value < 1000:
                    text = self.t("timeline.ms", value=f"{value:.0f}")
                else:
                    text = self.t("timeline.s", value=f"{value / 1000:.0f}")
                self._text(left - 6, at_y, text, "e", self.axis_font)
            value, decade = value * 10, decade + 1
        limit = scale.y(LONG_TASK_MS)
        self.create_line(
            left, limit, right, limit, fill=p.chart_frozen_ink, width=2, dash=(8, 6), tags="fixed"
        )
        self._text(
            left + 6,
            limit - 2,
            self.t("timeline.long_task", ms=f"{LONG_TASK_MS:.0f}"),
            "sw",
            self.axis_font,
            p.chart_frozen_ink,
        )
        self.create_line(
            left, layout.bottom, right, layout.bottom, fill=p.chart_ink, width=2, tags="fixed"
        )
        self._draw_top_row(layout)
        self._text(
            left - 6, layout.band, self.t("timeline.text"), "e", self.axis_font, p.chart_good
        )
        self._draw_time_axis(layout)
        self.tag_raise("recorded")
        self.tag_raise("lag")
        self.tag_raise("arrivals")

    def _draw_top_row(self, layout: Layout) -> None:
        """The pause or live button (top right), the recorded run's legend beside it, and the
        caption (top left: live, what the picture is; paused, how to scroll, shortened to
        the room left); what they take of the row is kept for the freeze labels (one was
        seen written over them)."""
        button = "timeline.pause" if self.paused_at is None else "timeline.live"
        item = self._text(layout.right - 6, 8, self.t(button), "ne", self.axis_font)
        self.addtag_withtag("control", item)
        x0, y0, x1, y1 = self.bbox(item)
        ink = self.palette.chart_ink
        self.create_rectangle(
            x0 - 6, y0 - 2, x1 + 6, y1 + 2, outline=ink, tags=("fixed", "control")
        )
        self._upper = [self._taken(item)]
        if self.recorded is not None:
            legend = self.t("timeline.recorded")
            item = self._text(x0 - 18, 8, legend, "ne", self.label_font)
            self._upper.append(self._taken(item))
        room = self._upper[-1][0] - CAPTION_X
        if self.paused_at is None:
            captions = [self.t("timeline.caption", seconds=f"{self.span_s:.0f}")]
        else:
            captions = [self.t("timeline.paused"), self.t("timeline.paused_short")]
        fits = [text for text in captions if self.label_font.measure(text) <= room]
        # From the canvas's edge, not the plot's: after the axis labels' width, a large text
        # size in a narrow lesson panel pushed its end off the canvas.
        item = self._text(CAPTION_X, 8, (fits or captions[-1:])[0], "nw", self.label_font)
        self._upper.append(self._taken(item))

    def _taken(self, item: int) -> tuple[float, float]:
        x0, _y0, x1, _y1 = self.bbox(item)
        return x0 - 6.0, x1 + 6.0

    def _draw_time_axis(self, layout: Layout) -> None:
        """Seconds along the bottom, every 5: live, before now; paused, before the pause (the
        right edge says how far back the view is)."""
        left, right = layout.left, layout.right
        for step in range(0, int(self.span_s) + 1, 5):
            at_x = right - step * (right - left) / self.span_s
            ago = step + (self.back_s if self.paused_at is not None else 0.0)
            if step:
                text = self.t("timeline.ago", seconds=f"{ago:.0f}")
            elif self.paused_at is None:
                text = self.t("timeline.now")
            elif ago < 0.5:
                text = self.t("timeline.paused_now")
            else:
                text = self.t("timeline.ago", seconds=f"{ago:.0f}")
            self._text(at_x, layout.band + 6, text, "n" if step else "ne", self.axis_font)

    def _draw_line(
        self, item: int, scale: _Scale, column_s: float, columns: Sequence[Column]
    ) -> None:
        """One polyline, one point per pixel column: the column's worst lag (the live lag's,
        or the recording's)."""
        points = [c for column, worst in columns for c in scale.point(column * column_s, worst)]
        if len(points) >= 4:
            self.coords(item, points)
            self.itemconfigure(item, state="normal")
        else:
            self.itemconfigure(item, state="hidden")

    def _picked(self, event: tk.Event) -> bool:
        """A click on a band (anywhere across it, the lag line over it too) or on its label:
        show who held the loop then (True: it did)."""
        if self.on_pick is None:
            return False
        x, y = self.canvasx(event.x), self.canvasy(event.y)
        for item, freeze in self._band_items.items():
            x0, y0, x1, y1 = self.bbox(item)
            if x0 - 2 <= x <= x1 + 2 and y0 <= y <= y1:
                self.on_pick(freeze)
                return True
        return False

    def _labels(self, freeze: Freeze) -> list[str]:
        """The labels to try for a band, the most telling first: its culprit (with the
        sampler running), then its length alone."""
        short = freeze_label(freeze.length_s, self.t)
        culprit = self.culprits(freeze) if self.culprits is not None else None
        if culprit is None:
            return [short]
        return [*labels(culprit, getattr(self.t, "lang", "en")), short]

    def _draw_freezes(self, scale: _Scale, layout: Layout, freezes: list[Freeze]) -> None:
        """Shade each frozen interval and write its length above it, the longest first; a
        label that would overlap one already placed goes a row higher, or is left out (the
        shading stays)."""
        self.delete("frozen", "frozen-label")
        left, right = layout.left, layout.right
        # The x-ranges taken in each row; the upper row is the caption's (_draw_top_row).
        placed: list[list[tuple[float, float]]] = [[], list(self._upper)]
        self._band_items = {}
        for freeze in sorted(freezes, key=lambda f: -f.length_s):
            x0, x1 = max(left, scale.x(freeze.start)), min(right, scale.x(freeze.end))
            if x1 <= left:
                continue
            shade = (x0, layout.top, max(x1, x0 + 2), layout.bottom)
            band = self.create_rectangle(
                *shade, fill=self.palette.chart_frozen_fill, width=0, tags="frozen"
            )
            self._band_items[band] = freeze
            label = self._place_label(freeze, (x0 + x1) / 2, layout, placed)
            if label is not None:
                self._band_items[label] = freeze
        self.tag_lower("frozen")

    def _place_label(
        self,
        freeze: Freeze,
        middle: float,
        layout: Layout,
        placed: list[list[tuple[float, float]]],
    ) -> int | None:
        """Write the first of the band's labels that fits in a free row above the plot;
        return its item (None: none fitted, the shading stays alone). A culprit's labels
        that give the length are tried in the axis's smaller type too before its function's
        name alone, and that before the length alone: a lesson panel at 1280x720 had no room
        for "GenerateInClickHandler.start" in the label's type, and in Chinese its bands
        named the function without the length the lesson quotes."""
        left, right = layout.left, layout.right
        *named, short = self._labels(freeze)
        with_length, name_alone = (named[:-1], named[-1:]) if len(named) > 1 else (named, [])
        fonts = (self.label_font, self.axis_font)
        tries = [
            (text, font) for texts in (with_length, name_alone) for font in fonts for text in texts
        ]
        tries += [(short, self.label_font)]
        for text, font in tries:
            half = font.measure(text) / 2 + 6
            if 2 * half > right - left:
                continue
            centre = min(max(middle, left + half), right - half)
            for row, taken in enumerate(placed):
                if all(centre + half < a or centre - half > b for a, b in taken):
                    taken.append((centre - half, centre + half))
                    at_y = layout.top - row * self._label_line
                    ink = self.palette.chart_frozen_ink
                    return self._text(centre, at_y, text, "s", font, ink, "frozen-label")
        return None

    def _draw_arrivals(self, scale: _Scale, layout: Layout, arrivals: list[float]) -> None:
        """A comb: one polyline along the band with a tooth wherever text arrived (at most
        one per two pixels), so a flood of arrivals is still one canvas item."""
        teeth = sorted({int(scale.x(at)) // 2 for at in arrivals})
        band, tip = layout.band, layout.band - layout.tick_h
        points: list[float] = [layout.left, band]
        for tooth in teeth:
            points += [tooth * 2, band, tooth * 2, tip, tooth * 2, band]
        points += [layout.right, band]
        self.coords(self._comb_item, points)
