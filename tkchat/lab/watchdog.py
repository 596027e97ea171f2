"""``tkchat watchdog``: a second window that draws the chat window's heartbeat going silent.

A frozen Tk window cannot draw its own freeze: every figure in its health bar is painted by
the loop that is stuck. This is a separate process with a free main loop of its own. The
chat window sends it a beat every 50 ms (see :mod:`tkchat.ui.teaching.watchdog_link`); this window
plots, for the last 15 seconds, how long ago the last beat came. Healthy, that stays near
zero (a green line). When the chat window freezes, the beats stop, and here a red area rises
with the silence while a big counter says "FROZEN 3.2 s" and counts up — during the freeze,
not after it. Once beats come back, the gap stays on the chart with its length written on it.

It never imports the app: the beats arrive as lines on stdin, read by a thread that only
records when each came; the Tk main thread turns them into the picture. Besides the beats, the
chat window's sampler (``tkchat/trace/``) sends a ``culprit`` line while a freeze lasts: the
frozen process samples its own main thread from a helper thread and says who holds the loop,
in the chat window's language. The chart's caption shows it ("now: 3.2 s in
GenerateInClickHandler.start → … — the model ran on the main thread"), and keeps the last one
once the beats come back. End-of-file on stdin
(the app closed the pipe, exited, or was killed) closes the window, and so does a parent that
is gone after a long silence.

It opens beside the chat window where the screen has room (``--window`` says where the
window is); else over ``--room``, the part of the window a freeze leaves the class nothing to
see in: the lesson's lag timeline, which the frozen loop cannot redraw. Over the window, it
stays in front while the window is frozen and steps behind it when the beats come back, so
that the timeline, drawn again, shows the freeze. Esc closes it; M moves it to the other side
of the screen and back.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import time
import tkinter as tk
import tkinter.font as tkfont
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Literal

from tkchat.i18n.watchdog import STRINGS
from tkchat.lab.watchdog_place import (
    SIZE,
    Rect,
    geometry_of,
    inside_frame,
    other_side,
    overlap,
    parse_geometry,
    placement,
)
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import LIGHT, Palette, palette_named
from tkchat.ui.look.scaling import dp
from tkchat.ui.scheduler import AfterScheduler

Anchor = Literal["nw", "n", "ne", "w", "center", "e", "sw", "s", "se"]
TITLE = STRINGS["en"]["wd.title"]
SPAN_S = 15.0  # the chart's width in seconds
TICK_MS = 40  # how often this window looks at the beats and redraws
READABLE_PX = 13  # the smallest text a shrunk watchdog shows (10 points at 96 dpi)
FROZEN_AFTER_S = 0.25  # silence this long (five beats missed) is a freeze
PARENT_GONE_AFTER_S = 5.0  # silence this long, with the parent gone, ends the watchdog
CAPTION = STRINGS["en"]["wd.caption"]
MOVE_KEYS = ("<KeyPress-m>", "<KeyPress-M>")


@dataclass
class Gap:
    """One silence of the chat window: from its last beat before, to its first beat after."""

    start: float
    end: float | None = None  # None while it lasts

    def length(self, now: float) -> float:
        return (now if self.end is None else self.end) - self.start


class HeartbeatTrace:
    """What the chart shows, from the times beats arrived (``time.monotonic`` seconds).
    Tk-free; main thread of the watchdog."""

    def __init__(self, span_s: float = SPAN_S, frozen_after_s: float = FROZEN_AFTER_S) -> None:
        self.span_s = span_s
        self.frozen_after_s = frozen_after_s
        self.last_beat: float | None = None
        self.beats = 0
        self.samples: deque[tuple[float, float]] = deque()  # (when, seconds since last beat)
        self.gaps: deque[Gap] = deque()
        self._recent_beats: deque[float] = deque()  # the last second's, for the rate

    @property
    def open_gap(self) -> Gap | None:
        return self.gaps[-1] if self.gaps and self.gaps[-1].end is None else None

    def beat(self, at: float) -> None:
        gap = self.open_gap
        if gap is not None:
            gap.end = at
        elif self.last_beat is not None and at - self.last_beat >= self.frozen_after_s:
            self.gaps.append(Gap(self.last_beat, at))  # a silence that fell between two looks
        self.last_beat = at
        self.beats += 1
        self._recent_beats.append(at)

    def update(self, now: float) -> float | None:
        """Take one sample at ``now``; return the silence (None before the first beat)."""
        if self.last_beat is None:
            return None
        silence = max(0.0, now - self.last_beat)
        self.samples.append((now, silence))
        if silence >= self.frozen_after_s and self.open_gap is None:
            self.gaps.append(Gap(self.last_beat))
        oldest = now - self.span_s
        while self.samples and self.samples[0][0] < oldest:
            self.samples.popleft()
        while self.gaps and self.gaps[0].end is not None and self.gaps[0].end < oldest:
            self.gaps.popleft()
        while self._recent_beats and self._recent_beats[0] < now - 1.0:
            self._recent_beats.popleft()
        return silence

    def beats_per_s(self) -> int:
        return len(self._recent_beats)


class BeatReader:
    """Reads beat lines from ``fd`` on its own thread and records when each arrived. The Tk
    main thread takes them with :meth:`take`; the thread never touches Tk."""

    def __init__(self, fd: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.fd = fd
        self.clock = clock
        self.arrived: deque[float] = deque(maxlen=4096)  # deque appends are thread-safe
        # the latest culprit line: {"now": […], "after": […]} (a reference swapped whole)
        self.culprit: dict[str, list[str]] | None = None
        self.eof = False
        self._thread = threading.Thread(target=self._run, name="beat-reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        pending = b""  # a line cut by the read, if the pipe held more than one read
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                self.eof = True
                return
            now = self.clock()
            *lines, pending = (pending + data).split(b"\n")
            pending = pending[-4096:]  # a line is shorter (PIPE_BUF): anything longer is not one
            for line in lines:
                if line.startswith(b"beat "):
                    self.arrived.append(now)
                elif line.startswith(b"culprit "):
                    self.culprit = _culprit_text(line[len(b"culprit ") :])

    def take(self) -> list[float]:
        """Main thread: every arrival since the last call, oldest first."""
        taken = []
        while self.arrived:
            taken.append(self.arrived.popleft())
        return taken


def _culprit_text(body: bytes) -> dict[str, list[str]] | None:
    """A culprit line's sentences, already in the chat window's language: ``now`` (while the
    freeze lasts) and ``after`` (once it is over), each longest first (the window shows the
    first that fits). None for ``-`` or anything else."""
    try:
        payload = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    said: dict[str, list[str]] = {}
    for key in ("now", "after"):
        value = payload.get(key)
        variants = [value] if isinstance(value, str) else value
        if isinstance(variants, list) and all(isinstance(v, str) for v in variants) and variants:
            said[key] = [v[:400] for v in variants[:4]]
    return said or None


def sayer(language: str) -> Callable[..., str]:
    """The window's strings in ``language`` ("en" when it has none): ``say(key, **values)``."""
    strings = STRINGS.get(language, STRINGS["en"])
    return lambda key, **values: strings[key].format(**values)


class WatchdogWindow:
    """The strip chart in ``root``. Main thread only. ``take_beats()`` returns the arrival
    times of new beats, ``source_gone()`` says the chat window's side has ended; ``state_out``
    (optional) gets one JSON line per redraw with what is on screen (for tests)."""

    def __init__(
        self,
        root: tk.Tk,
        take_beats: Callable[[], list[float]],
        source_gone: Callable[[], bool],
        *,
        state_out: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        palette: Palette = LIGHT,
        language: str = "en",
    ) -> None:
        self.root = root
        # the chat window's latest word on who holds its loop (run_watchdog sets it)
        self.culprit: Callable[[], dict[str, list[str]] | None] = lambda: None
        self.say = sayer(language)  # the chat window's language
        self.take_beats = take_beats
        self.source_gone = source_gone
        self.state_out = state_out
        self.clock = clock
        self.trace = HeartbeatTrace()
        self.scheduler = AfterScheduler(root)
        self.parent_pid = os.getppid()
        self.closed = False
        root.title(self.say("wd.title"))
        with contextlib.suppress(tk.TclError):  # stays in view over the frozen chat window
            root.attributes("-topmost", True)
        root.protocol("WM_DELETE_WINDOW", self.close)
        root.bind("<Escape>", lambda _e: self.close())
        # where M moves it, in turn (run_watchdog sets them: its place and the other side's)
        self.places: list[Rect] = []
        self.frame_to_fit = False  # are places to lose the title bar's height, once known?
        # Over the chat window (run_watchdog says): in front only while it is frozen.
        self.steps_aside = False
        self.in_front = True  # it opens in front, as any new window
        self._was_frozen = False
        for key in MOVE_KEYS:
            root.bind(key, lambda _e: self.move())
        family = tkfont.nametofont("TkDefaultFont", root=root).cget("family")
        self.big_font = lasting_font(root=root, family=family, size=30, weight="bold")
        self.label_font = lasting_font(root=root, family=family, size=14, weight="bold")
        self.axis_font = lasting_font(root=root, family=family, size=12)
        self._points = [(font, int(font.cget("size"))) for font in self.fonts]  # the design
        # The chat window's theme (``--theme``): healthy green, frozen red, the chart's whole
        # background blushing while the chat window is frozen.
        self.palette = palette
        root.configure(background=palette.surface)
        self.canvas = tk.Canvas(root, background=palette.surface, highlightthickness=0)
        self.canvas.configure(width=dp(root, SIZE[0]), height=dp(root, SIZE[1]))
        self.canvas.pack(fill="both", expand=True)
        self.canvas.bind("<Configure>", self._fit_fonts, add="+")
        self.counter = self.canvas.create_text(
            16,
            12,
            anchor="nw",
            font=self.big_font,
            fill=palette.muted,
            text=self.say("wd.waiting"),
        )

    @property
    def fonts(self) -> tuple[tkfont.Font, ...]:
        return (self.big_font, self.label_font, self.axis_font)

    def _fit_fonts(self, event: tk.Event) -> None:
        """A window smaller than its design (:data:`SIZE` at this density: a small screen
        holds :data:`SCREEN_SHARE` of it) gets its text smaller by as much, never cut, and
        never under :data:`READABLE_PX` pixels (on a 1280×720 projector the axis and the
        caption were 8 px: unreadable from the back of a room); the chart is laid out from
        the fonts' sizes, so it gives up height instead."""
        scale = dp(self.root, 1000) / 1000
        fit = min(1.0, event.width / (SIZE[0] * scale), event.height / (SIZE[1] * scale))
        floor = math.ceil(READABLE_PX / float(self.root.tk.call("tk", "scaling")))
        for font, points in self._points:
            font.configure(size=max(min(points, floor), round(points * fit)))

    def start(self) -> None:
        self._tick()

    def _fit_frame(self) -> None:
        """Once the window manager has framed the window (if there is one): its places less
        the title bar's height (:func:`inside_frame`)."""
        if not self.root.winfo_ismapped():
            return
        fitted = [inside_frame(self.root, rect) for rect in self.places]
        if fitted != self.places:
            self.places = fitted
            self.root.geometry(geometry_of(fitted[0]))
            self.frame_to_fit = False

    def move(self) -> None:
        """To the next of :attr:`places` (the other side of the screen, and back)."""
        if len(self.places) > 1:
            self.places.append(self.places.pop(0))
            self.root.geometry(geometry_of(self.places[0]))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.scheduler.close()
        self.root.destroy()

    def _tick(self) -> None:
        now = self.clock()
        for at in self.take_beats():
            self.trace.beat(at)
        silence = self.trace.update(now)
        if self.source_gone() or self._parent_gone(silence):
            self.close()
            return
        if self.frame_to_fit:
            self._fit_frame()
        self._stand(self.trace.open_gap is not None)
        self.draw(now, silence)
        self._report(now, silence)
        self.scheduler.once("watchdog-tick", TICK_MS, self._tick)

    def _stand(self, frozen: bool) -> None:
        """When the chat window freezes or answers again: over the window (:attr:`steps_aside`),
        come to the front for the freeze (what it covers is a picture the frozen loop cannot
        redraw) and go behind the window after it, whose timeline then draws the freeze."""
        if frozen == self._was_frozen:
            return
        self._was_frozen = frozen
        if not self.steps_aside:
            return
        with contextlib.suppress(tk.TclError):  # a window manager without the attribute
            self.root.attributes("-topmost", frozen)
        if frozen:
            self.root.lift()
        else:
            self.root.lower()
        self.in_front = frozen

    def _parent_gone(self, silence: float | None) -> bool:
        """A second guard besides end-of-file: the parent is no longer ours (POSIX re-parents
        an orphan) and nothing has come for a long time."""
        quiet = silence is None or silence > PARENT_GONE_AFTER_S
        return quiet and os.getppid() != self.parent_pid

    # -- drawing -------------------------------------------------------------------------------

    def draw(self, now: float, silence: float | None) -> None:
        """Redraw the chart for ``now``: a few dozen items, rebuilt each tick (cheap)."""
        canvas, trace = self.canvas, self.trace
        canvas.delete("chart")
        frozen = trace.open_gap is not None
        p = self.palette
        canvas.configure(background=p.chart_frozen_background if frozen else p.surface)
        width = max(200, canvas.winfo_width())
        height = max(150, canvas.winfo_height())
        axis_line = self.axis_font.metrics("linespace")
        top = 12 + self.big_font.metrics("linespace") + axis_line + 16
        left = 16 + self.axis_font.measure(self.say("wd.axis", n=10)) + 8
        right, bottom = width - 20, height - 12 - axis_line
        span = trace.span_s
        tallest = max([g.length(now) for g in trace.gaps] + [silence or 0.0, 0.0])
        ymax = max(1.0, math.ceil(tallest * 1.15))
        step = 1 if ymax <= 6 else 2 if ymax <= 12 else 5

        def x(at: float) -> float:
            return left + (at - (now - span)) / span * (right - left)

        def y(seconds: float) -> float:
            return bottom - min(seconds, ymax) / ymax * (bottom - top)

        def text(
            at_x: float,
            at_y: float,
            what: str,
            anchor: Anchor,
            font: tkfont.Font,
            fill: str = p.chart_ink,
        ) -> int:
            return canvas.create_text(
                at_x, at_y, text=what, anchor=anchor, font=font, fill=fill, tags="chart"
            )

        self._draw_caption(top, frozen)
        for value in range(0, int(ymax) + 1, step):
            canvas.create_line(left, y(value), right, y(value), fill=p.chart_grid, tags="chart")
            text(left - 8, y(value), self.say("wd.axis", n=value), "e", self.axis_font)
        for ago in range(0, int(span) + 1, 5):
            if ago == 0:
                text(right, bottom + 4, self.say("wd.now"), "ne", self.axis_font)
            else:
                text(x(now - ago), bottom + 4, self.say("wd.ago", n=ago), "n", self.axis_font)
        canvas.create_line(left, bottom, right, bottom, fill=p.chart_ink, width=2, tags="chart")
        points = [coord for at, quiet in trace.samples for coord in (x(at), y(quiet))]
        if len(points) >= 4:
            canvas.create_line(*points, fill=p.chart_good, width=4, tags="chart")
        for gap in trace.gaps:
            end, length = (now if gap.end is None else gap.end), gap.length(now)
            # The red area is the time with no beat; one begun off the chart is tall at its edge.
            x0, x1, at_edge = x(max(gap.start, now - span)), x(end), now - span - gap.start
            shape = (x0, bottom, x0, y(max(0.0, at_edge)), x1, y(length), x1, bottom)
            canvas.create_polygon(
                *shape,
                fill=p.chart_frozen_ink,
                outline=p.chart_frozen_ink,
                width=2,
                tags=("chart", "gap"),
            )
            label = self.say("wd.gap", seconds=self._seconds(length))
            fits_left = x1 - self.label_font.measure(label) > left
            item = text(
                x1,
                y(length) - 4,
                label,
                "se" if fits_left else "sw",
                self.label_font,
                p.chart_frozen_ink,
            )
            canvas.addtag_withtag("gap-label", item)
        label, colour = self._counter_look(silence)
        canvas.itemconfigure(self.counter, text=label, fill=colour)

    def _draw_caption(self, top: float, frozen: bool) -> None:
        """Over the chart: what it plots; during and after a freeze, who held the loop (as
        the frozen window's sampler said), in red while the freeze lasts."""
        said = self.culprit() or {}
        text, ink = self.say("wd.caption"), self.palette.chart_ink
        variants = said.get("now" if frozen else "after")
        if variants:
            room = max(100, self.canvas.winfo_width() - 32)
            text = next((v for v in variants if self.axis_font.measure(v) <= room), variants[-1])
            ink = self.palette.chart_frozen_ink if frozen else ink
        self.canvas.create_text(
            16,
            top - 8,
            text=text,
            anchor="sw",
            font=self.axis_font,
            fill=ink,
            tags=("chart", "caption"),
        )

    def shown_caption(self) -> str:
        items = self.canvas.find_withtag("caption")
        return self.shown_text(items[0]) if items else ""

    def _counter_look(self, silence: float | None) -> tuple[str, str]:
        if silence is None:
            return self.say("wd.waiting"), self.palette.muted
        if self.trace.open_gap is not None:
            frozen = self.say("wd.frozen_now", seconds=self._seconds(silence))
            return frozen, self.palette.chart_frozen_ink
        return self.say("wd.alive", beats=self.trace.beats_per_s()), self.palette.chart_good

    def _seconds(self, seconds: float) -> str:
        return self.say("wd.seconds", value=f"{seconds:.1f}")

    def shown_text(self, item: int | str) -> str:
        """The text a canvas item shows (what a test or the state line reads)."""
        return str(self.canvas.tk.call(str(self.canvas), "itemcget", item, "-text"))

    def _report(self, now: float, silence: float | None) -> None:
        if self.state_out is None:
            return
        state = {
            "t": round(now, 4),
            "beats": self.trace.beats,
            "silence_ms": None if silence is None else round(silence * 1000, 1),
            "frozen": self.trace.open_gap is not None,
            "in_front": self.in_front,
            "counter": self.shown_text(self.counter),
            "caption": self.shown_caption(),
            "gap_labels": [self.shown_text(item) for item in self.canvas.find_withtag("gap-label")],
            "gaps_ms": [round(g.length(now) * 1000, 1) for g in self.trace.gaps if g.end],
        }
        try:
            self.state_out.write(json.dumps(state, ensure_ascii=False) + "\n")
            self.state_out.flush()
        except (OSError, ValueError):  # nobody reads any more
            self.state_out = None


def default_place(root: tk.Misc, room: Rect | None = None, window: Rect | None = None) -> Rect:
    """Where the watchdog opens on this screen (:func:`placement`)."""
    screen = root.winfo_screenwidth(), root.winfo_screenheight()
    return placement(*screen, dp(root, 1000) / 1000, room=room, window=window)


def default_geometry(root: tk.Misc) -> str:
    return geometry_of(default_place(root))


def run_watchdog(
    *,
    state: bool = False,
    geometry: str | None = None,
    theme: str | None = None,
    language: str = "en",
    room: str | None = None,
    chat_window: str | None = None,
) -> int:
    """The ``tkchat watchdog`` command: beats on stdin, the chart on screen, until stdin ends
    or the window is closed (or Esc). ``theme``: "light" or "dark", as the chat window that
    opened it; ``room``, ``chat_window``: where it may go and where the chat window is (Tk
    geometries: :func:`~tkchat.lab.watchdog_place.placement`); ``geometry`` overrides
    them."""
    try:
        root = tk.Tk(className="tkchat-watchdog")
    except tk.TclError as exc:
        print(f"tkchat watchdog: cannot open a window ({exc})", file=sys.stderr)
        return 2
    place = default_place(root, parse_geometry(room), parse_geometry(chat_window))
    root.geometry(geometry or geometry_of(place))
    reader = BeatReader(sys.stdin.fileno())
    window = WatchdogWindow(
        root,
        reader.take,
        lambda: reader.eof and not reader.arrived,
        state_out=sys.stdout if state else None,
        palette=palette_named(theme),
        language=language,
    )
    window.culprit = lambda: reader.culprit
    if geometry is None:  # (a geometry given is kept as it is)
        window.places = [place, other_side(place, root.winfo_screenwidth())]
        window.frame_to_fit = True  # its title bar kept inside that place
        chat = parse_geometry(chat_window)
        window.steps_aside = chat is not None and overlap(place, chat)
    reader.start()
    window.start()
    root.mainloop()
    return 0
