"""The Qt window's health bar: the same figures as the Tk window's, measured the same way.

- a heartbeat clock, re-armed at the next whole second: when it stalls, the GUI thread is stuck;
- the event-loop lag: a ``QTimer`` re-armed every 5 ms, recording how late each firing is
  (shown: now, p99 and max of the last 5 s);
- the model's tokens/s next to the window's updates/s, each over the last second;
- a Ping button to click while an answer streams (the self-test clicks it with real X events).

The arithmetic of the lag and the rates is :mod:`tkchat.stats`' (``LagWindow``, ``RateMeter``),
the one the Tk window's probe and bar use: only the timers here are Qt's.

Everything here runs on the GUI thread. Every timer is owned by a widget, so Qt stops them all
when the window goes: the Qt counterpart of the Tk window's ``AfterScheduler``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QWidget

from tkchat.stats import PROBE_MS, LagWindow, RateMeter

REFRESH_MS = 250


class QtLagProbe(LagWindow):
    """The lag probe on Qt's loop: a precise single-shot ``QTimer`` re-armed every
    ``PROBE_MS``; the figures are :class:`~tkchat.stats.LagWindow`'s, as the Tk probe's."""

    def __init__(self, parent: QObject, interval_ms: int = PROBE_MS) -> None:
        super().__init__(interval_ms)
        self._timer = QTimer(parent)
        self._timer.setSingleShot(True)
        # A precise timer: Qt's default "coarse" one may fire a little late on purpose, and the
        # probe must measure the loop, not the timer's slack.
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._fire)  # its sample is for the Tk probe's history

    def _schedule(self, delay_ms: int) -> None:
        self._timer.start(delay_ms)

    def _cancel(self) -> None:
        self._timer.stop()


class HealthBar(QWidget):
    """One row: heartbeat, lag, rates, Ping. ``read_tokens``/``read_updates`` are counters."""

    def __init__(
        self,
        translate: Callable[..., str],
        read_tokens: Callable[[], int],
        read_updates: Callable[[], int],
    ) -> None:
        super().__init__()
        self.t = translate
        self.read_tokens = read_tokens
        self.read_updates = read_updates
        self.probe = QtLagProbe(self)
        self._tokens, self._updates = RateMeter(), RateMeter()
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.heartbeat, self.lag, self.rates, self.pong = (QLabel(), QLabel(), QLabel(), QLabel())
        for label in (self.heartbeat, self.lag, self.rates, self.pong):
            label.setFont(fixed)
        self.ping_button = QPushButton(translate("health.ping"))
        # Like the Tk window's Ping: clicking it must not take the keyboard from the input box.
        self.ping_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.ping_button.clicked.connect(self._ping)
        self.ping_times: list[float] = []  # perf_counter of every handled click
        self.beats = 0
        # Two rows, as in the Tk window: heartbeat and lag, then the rates; Ping on the right.
        # The pong label has a fixed width: a label that grows would move the button away
        # from under the pointer.
        self.pong.setMinimumWidth(self.pong.fontMetrics().horizontalAdvance("x" * 28))
        self.pong.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        grid = QGridLayout(self)
        grid.setContentsMargins(8, 2, 8, 2)
        grid.addWidget(self.heartbeat, 0, 0)
        grid.addWidget(self.lag, 0, 1)
        grid.addWidget(self.rates, 1, 1)
        grid.addWidget(self.pong, 0, 2)
        grid.addWidget(self.ping_button, 0, 3, 2, 1)
        grid.setColumnStretch(2, 1)
        self._beat_timer = self._timer(self._beat, precise=True)
        self._refresh_timer = self._timer(self._refresh, precise=False)

    def _timer(self, slot: Callable[[], None], *, precise: bool) -> QTimer:
        timer = QTimer(self)
        timer.setSingleShot(True)
        if precise:
            timer.setTimerType(Qt.TimerType.PreciseTimer)
        timer.timeout.connect(slot)
        return timer

    def start(self) -> None:
        self.probe.start()
        self._beat()
        self._refresh()

    def _ping(self) -> None:
        self.ping_times.append(time.perf_counter())
        self.pong.setText(
            self.t("health.pong", count=len(self.ping_times), time=time.strftime("%H:%M:%S"))
        )

    def _beat(self) -> None:
        self.beats += 1
        self.heartbeat.setText("♥ " + time.strftime("%H:%M:%S"))
        # Re-armed at the next whole second, so the clock ticks on the second when healthy.
        self._beat_timer.start(1000 - int(time.time() * 1000) % 1000)

    def _refresh(self) -> None:
        probe = self.probe
        lag = self.t("health.lag", now=f"{probe.now_ms():5.1f}", p99=f"{probe.p99_ms():5.1f}")
        # the separator between the heartbeat and the lag, on the same row (the rates, under
        # the lag, begin without one: a separator is never first on a row)
        self.lag.setText("│ " + lag + " " + self.t("qt.lag_max", max=f"{probe.max_ms():.1f}"))
        tokens = self._tokens.sample(self.read_tokens())
        updates = self._updates.sample(self.read_updates())
        self.rates.setText(
            self.t("health.rates", tokens=f"{tokens:4.0f}", updates=f"{updates:3.0f}")
        )
        self._refresh_timer.start(REFRESH_MS)
