"""The always-visible health bar: heartbeat clock, event-loop lag, tokens/s next to UI updates/s.

The heartbeat is the simplest proof that the main loop is alive: a clock that must tick every
second. When it stalls, the window is frozen, whatever the model is doing. The two rates side
by side separate the two halves of the problem: the model's speed (the kitchen) and how
often the window actually shows new text (the waiter).
"""

from __future__ import annotations

import time
import tkinter as tk
from collections import deque
from collections.abc import Callable
from tkinter import ttk

from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.translator import Translator

REFRESH_MS = 250


class RateMeter:
    """Turns a growing counter into a per-second rate over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = 1.0) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def sample(self, count: int, now: float | None = None) -> float:
        now = time.perf_counter() if now is None else now
        if self._samples and count < self._samples[-1][1]:
            self._samples.clear()  # the counter restarted (a new generation)
        self._samples.append((now, count))
        while len(self._samples) > 2 and now - self._samples[0][0] > self.window_s:
            self._samples.popleft()
        first_at, first = self._samples[0]
        span = now - first_at
        return (count - first) / span if span > 0 else 0.0


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
        super().__init__(master, padding=(8, 2))
        ttk.Style(self).configure("Watch.TLabel", background="#ffe27a")
        self.scheduler = scheduler
        self.probe = probe
        self.read_tokens = read_tokens
        self.read_updates = read_updates
        self.t = translate
        self._tokens = RateMeter()
        self._updates = RateMeter()
        self.heartbeat = ttk.Label(self, width=11, font="TkFixedFont")
        self.lag = ttk.Label(self, font="TkFixedFont")
        self.rates = ttk.Label(self, font="TkFixedFont")
        # A button to click while an answer streams: in a broken mode the count stands still
        # until the answer is over. (The self-test clicks it with real X events.)
        self.ping_button = ttk.Button(self, width=6, command=self._ping, takefocus=False)
        translate.bind(self.ping_button, "health.ping")
        # fixed width: a label that changes size makes Tk lay out the whole window again
        self.ping_label = ttk.Label(self, text="", font="TkFixedFont", width=24, anchor="e")
        self.ping_times: list[float] = []  # perf_counter of every handled click
        # Two rows, so the figures fit beside the lesson panel too.
        self.heartbeat.grid(row=0, column=0, sticky="w")
        self.lag.grid(row=0, column=1, sticky="w", padx=(4, 0))
        self.rates.grid(row=1, column=1, sticky="w", padx=(4, 0))
        self.ping_label.grid(row=0, column=2, sticky="e", padx=(0, 6))
        self.ping_button.grid(row=0, column=3, rowspan=2, sticky="e")
        self.columnconfigure(2, weight=1)
        self.beats = 0

    def start(self) -> None:
        self._beat()
        self._refresh()

    def highlight(self, what: str | None) -> None:
        """Mark what a lesson asks to watch: "heartbeat", "lag" or "rates" (None: nothing)."""
        for name, label in (
            ("heartbeat", self.heartbeat),
            ("lag", self.lag),
            ("rates", self.rates),
        ):
            label.configure(style="Watch.TLabel" if name == what else "TLabel")

    def _ping(self) -> None:
        self.ping_times.append(time.perf_counter())
        self.ping_label.configure(
            text=self.t("health.pong", count=len(self.ping_times), time=time.strftime("%H:%M:%S"))
        )

    def _beat(self) -> None:
        self.beats += 1
        self.heartbeat.configure(text="♥ " + time.strftime("%H:%M:%S"))
        # Re-armed at the next whole second, so the clock ticks on the second when healthy.
        self.scheduler.once("heartbeat", 1000 - int(time.time() * 1000) % 1000, self._beat)

    def _refresh(self) -> None:
        self.lag.configure(
            text=self.t(
                "health.lag", now=f"{self.probe.now_ms():5.1f}", p99=f"{self.probe.p99_ms():5.1f}"
            )
        )
        tokens = self._tokens.sample(self.read_tokens())
        updates = self._updates.sample(self.read_updates())
        self.rates.configure(
            text=self.t("health.rates", tokens=f"{tokens:4.0f}", updates=f"{updates:3.0f}")
        )
        self.scheduler.once("health", REFRESH_MS, self._refresh)
