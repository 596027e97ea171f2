"""The always-visible health bar: heartbeat clock, event-loop lag, tokens/s next to UI updates/s.

The heartbeat is the simplest proof that the main loop is alive: a clock that must tick every
second. When it stalls, the window is frozen, whatever the model is doing. The two rates side
by side separate the two halves of the problem: the model's speed (the kitchen) and how
often the window actually shows new text (the waiter). The rates and the lag figures are
counted by :mod:`tkchat.stats`, as in the Qt window's bar.
"""

from __future__ import annotations

import time
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

from tkchat.stats import RateMeter
from tkchat.ui.base.translator import Translator
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.scaling import dp, dp_pad
from tkchat.ui.look.theme import WATCH_STYLE
from tkchat.ui.scheduler import AfterScheduler

REFRESH_MS = 250
SEPARATOR = "│"  # between two figures on the same row (the rates' text has one inside)


class HealthBar(ttk.Frame):
    """Main thread only. ``read_tokens`` and ``read_updates`` return growing counters."""

    def __init__(
        self,
        master: tk.Misc,
        scheduler: AfterScheduler,
        probe: LagProbe,
        read_tokens: Callable[[], int],
        read_updates: Callable[[], int],
        translate: Translator,
    ) -> None:
        super().__init__(master, padding=dp_pad(master, 8, 2))
        self.scheduler = scheduler
        self.probe = probe
        self.read_tokens = read_tokens
        self.read_updates = read_updates
        self.t = translate
        self._tokens = RateMeter()
        self._updates = RateMeter()
        # The heartbeat and the lag are the figures a class watches: in projector mode they
        # get a font of their own, larger than the rest (set_big).
        self._big = lasting_font(root=self, family=_family("TkFixedFont", self), weight="bold")
        self.heartbeat = ttk.Label(self, width=11, font="TkFixedFont")
        # Between the heartbeat and the lag while they share a row, never first on one: a
        # widget of its own, laid out with them (as the first character of the lag's text it
        # began a row when the lag wrapped under the heartbeat). Two characters wide: the
        # separator and a space, as "│ " looked in the text.
        self.separator = ttk.Label(self, text=SEPARATOR, font="TkFixedFont", width=2)
        self.lag = ttk.Label(self, font="TkFixedFont")
        self.rates = ttk.Label(self, font="TkFixedFont")
        # A button to click while an answer streams: in a broken mode the count stands still
        # until the answer is over. (The self-test clicks it with real X events.)
        self.ping_button = ttk.Button(self, width=6, command=self._ping, takefocus=False)
        translate.bind(self.ping_button, "health.ping")
        # fixed width: a label that changes size makes Tk lay out the whole window again
        self.ping_label = ttk.Label(self, text="", font="TkFixedFont", width=24, anchor="e")
        self.ping_times: list[float] = []  # perf_counter of every handled click
        # The chat-only view's one line: the heartbeat and the lag now, in the window's top
        # bar (a child of the chat, so the bar can hold it; see TeachingControls).
        self.compact = ttk.Label(master, font="TkFixedFont")
        self.is_compact = False
        # Two rows, so the figures fit beside the lesson panel too; three when even that is
        # too narrow (big text, a projector), with Ping on a row of its own.
        self._rows = 0
        self._fitted: tuple[int, str, int, int] | None = None  # what the last fit saw
        self._fixed = tkfont.nametofont("TkFixedFont", root=self)
        self._reflow(2)
        self.bind("<Configure>", lambda e: self._fit(e.width), add="+")
        self.beats = 0

    def _fit(self, width: int) -> None:
        """Lay the figures out in as many rows as ``width`` needs; on four rows, the lag
        that is still too wide for the bar (large text beside the lesson panel) wraps onto a
        second line instead of being cut at the bar's edge."""
        rows = self._rows_needed(width)
        self._reflow(rows)
        room = width - dp(self, 20)
        wrap = room if rows == 4 and self._one_line(self.lag) > room else 0
        if int(str(self.lag.cget("wraplength")) or 0) != wrap:
            self.lag.configure(wraplength=wrap)

    def _one_line(self, label: ttk.Label) -> int:
        """How wide ``label``'s text is on one line (a wrapped label asks for less)."""
        font = self._big if str(label.cget("font")) == str(self._big) else self._fixed
        return font.measure(str(label.cget("text"))) + dp(self, 4)

    def _rows_needed(self, width: int) -> int:
        """2 rows when the figures fit beside the Ping button, 3 when Ping needs a row of its
        own, 4 when even the heartbeat and the lag do not fit side by side (projector)."""
        beat = self.heartbeat.winfo_reqwidth() + self.separator.winfo_reqwidth()
        lag = self._one_line(self.lag)
        ping = self.ping_label.winfo_reqwidth() + self.ping_button.winfo_reqwidth()
        if beat + max(lag, self.rates.winfo_reqwidth()) + ping + dp(self, 40) <= width:
            return 2
        margin = dp(self, 20)
        if beat + lag + margin <= width and self.rates.winfo_reqwidth() + margin <= width:
            return 3
        return 4

    def _reflow(self, rows: int) -> None:
        if rows == self._rows:
            return
        self._rows = rows
        parts = (self.heartbeat, self.separator, self.lag, self.rates)
        for widget in (*parts, self.ping_label, self.ping_button):
            widget.grid_forget()
        self.heartbeat.grid(row=0, column=0, sticky="w")
        gap = dp(self, 4)
        if rows < 4:  # the lag beside the heartbeat, the separator between them
            self.separator.grid(row=0, column=1, sticky="w", padx=(gap, 0))
            self.lag.grid(row=0, column=2, columnspan=3 if rows == 3 else 1, sticky="w")
        if rows == 2:  # the rates under the lag, Ping at the right
            self.rates.grid(row=1, column=2, sticky="w")
            self.ping_label.grid(row=0, column=3, sticky="e", padx=(0, dp(self, 6)))
            self.ping_button.grid(row=0, column=4, rowspan=2, sticky="e")
        else:
            if rows == 4:  # the lag under the heartbeat: each figure on its own line
                self.lag.grid(row=1, column=0, columnspan=5, sticky="w")
            self.rates.grid(row=rows - 2, column=0, columnspan=5, sticky="w")
            self.ping_button.grid(row=rows - 1, column=0, sticky="w", pady=(dp(self, 2), 0))
            self.ping_label.grid(row=rows - 1, column=1, columnspan=4, sticky="w", padx=(gap, 0))
        for column in range(5):
            self.columnconfigure(column, weight=1 if (rows == 2 and column == 3) else 0)

    def relayout(self) -> None:
        """The text size changed: the figures may need more rows, or fewer."""
        self.update_idletasks()
        self._fit(self.winfo_width())

    def set_big(self, size: int | None) -> None:
        """Projector mode: the heartbeat and the lag in a bold font of ``size`` points (None:
        back to the others' size)."""
        if size is not None:
            self._big.configure(size=size)
        font: tkfont.Font | str = self._big if size is not None else "TkFixedFont"
        for label in (self.heartbeat, self.separator, self.lag):
            label.configure(font=font)
        self.relayout()  # the rows may no longer fit

    def start(self) -> None:
        self._beat()
        self._refresh()

    def stop(self) -> None:
        """The clock and the figures stand still until :meth:`start` (the bench measures
        what the bar costs the window this way)."""
        self.scheduler.cancel("heartbeat")
        self.scheduler.cancel("health")

    @property
    def running(self) -> bool:
        return self.scheduler.pending("health")

    def highlight(self, what: str | None) -> None:
        """Mark what a lesson asks to watch: "heartbeat", "lag" or "rates" (None: nothing)."""
        for name, label in (
            ("heartbeat", self.heartbeat),
            ("lag", self.lag),
            ("rates", self.rates),
        ):
            label.configure(style=WATCH_STYLE if name == what else "TLabel")

    def _ping(self) -> None:
        self.ping_times.append(time.perf_counter())
        self.ping_label.configure(
            text=self.t("health.pong", count=len(self.ping_times), time=time.strftime("%H:%M:%S"))
        )

    def _beat(self) -> None:
        self.beats += 1
        self.heartbeat.configure(text="♥ " + time.strftime("%H:%M:%S"))
        if self.is_compact:
            self._draw_compact()
        # Re-armed at the next whole second, so the clock ticks on the second when healthy.
        self.scheduler.once("heartbeat", 1000 - int(time.time() * 1000) % 1000, self._beat)

    def _refresh(self) -> None:
        lag = self.t(
            "health.lag", now=f"{self.probe.now_ms():5.1f}", p99=f"{self.probe.p99_ms():5.1f}"
        )
        self.lag.configure(text=lag)
        tokens = self._tokens.sample(self.read_tokens())
        updates = self._updates.sample(self.read_updates())
        rates = self.t("health.rates", tokens=f"{tokens:4.0f}", updates=f"{updates:3.0f}")
        self.rates.configure(text=rates)
        # The figures' text grew (the first one, a language switch): wrap onto more rows
        # rather than be cut at the bar's right edge. Measured again only then (the figures
        # keep their width: a measure four times a second was most of this callback).
        width = self.winfo_width()
        fitted = (width, self.t.lang, len(lag), len(rates))
        if width > 1 and fitted != self._fitted:
            self._fitted = fitted
            self._fit(width)
        if self.is_compact:
            self._draw_compact()
        self.scheduler.once("health", REFRESH_MS, self._refresh)

    def set_compact(self, on: bool) -> None:
        """The chat-only view: :attr:`compact` shows the heartbeat and the lag on one line
        (whoever hides this bar shows that label)."""
        self.is_compact = on
        if on:
            self._draw_compact()

    def _draw_compact(self) -> None:
        lag = self.t("health.compact_lag", now=f"{self.probe.now_ms():5.1f}")
        self.compact.configure(text=f"{self.heartbeat.cget('text')}  {lag}")


def _family(named: str, widget: tk.Misc) -> str:
    return str(tkfont.nametofont(named, root=widget).actual()["family"])
