"""Event-loop lag: how late the Tk main loop runs a timer it was asked to run.

The probe re-arms ``after(interval)`` and records, each time it fires, how much later than
asked it ran. A free main loop fires within a fraction of a millisecond; a main loop stuck in a
long callback fires late by the length of that callback. A late firing over 50 ms is a
*long task* (the browser's Long Tasks threshold): the user felt a freeze.

The arithmetic is :class:`tkchat.stats.LagWindow`, the Qt window's too; this module adds Tk's
timer and the longer history the lag timeline draws.
"""

from __future__ import annotations

import tkinter as tk
from collections import deque

from tkchat.stats import LAG_WINDOW_S, LONG_TASK_MS, PROBE_MS, KeptLag, LagSample, LagWindow
from tkchat.ui.scheduler import AfterScheduler

__all__ = ["LONG_TASK_MS", "LagProbe", "LagSample"]

PROBING = "lag-probe"
STARTING = "lag-probe-start"
SHOWN_POLL_MS = 10  # how often :meth:`LagProbe.start_once_shown` looks for the window
# A window its window manager never shows (started minimised, say) is measured after this.
SHOWN_WAIT_MS = 2000


class LagProbe(LagWindow):
    """Main thread only. Keeps a window of recent samples for the live display, a longer
    bounded ``history`` for the lag timeline and, while ``recording``, every sample for the
    benchmark."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        interval_ms: int = PROBE_MS,
        window_s: float = LAG_WINDOW_S,
        history_s: float = 30.0,
    ):
        super().__init__(interval_ms, window_s)
        self.scheduler = scheduler
        # A ring: at most one sample per interval, so ``history_s`` seconds always fit, and
        # appending to a deque with a maxlen costs the 5 ms probe no trimming loop. Plain
        # tuples, which the garbage collector stops tracking (:data:`~tkchat.stats.KeptLag`).
        self.history: deque[KeptLag] = deque(maxlen=int(history_s * 1000 / interval_ms) + 1)

    def _schedule(self, delay_ms: int) -> None:
        self.scheduler.once(PROBING, delay_ms, self._fire_and_keep)

    def _cancel(self) -> None:
        self.scheduler.cancel(PROBING)

    def start_once_shown(self, window: tk.Misc) -> None:
        """Main thread, before the loop starts. Stop, and start again once ``window`` is on
        screen and drawn.

        The loop's first work is the window's first layout and drawing: 34 to 97 ms on the
        bundled model with the lessons open (1280x720, 2026-12-05), a freeze band on a fresh
        timeline before anything could be clicked. That is the window's build, not the
        loop's answer to anyone. Tk draws a widget in an idle callback queued when the
        server says it is exposed, just after it is mapped; a callback queued from the idle
        pass that runs those runs in the next, after them."""
        self.stop()
        waited = 0

        def start_after_drawing() -> None:
            self.scheduler.when_idle(STARTING, self.start)

        def look() -> None:
            nonlocal waited
            if window.winfo_viewable() or waited >= SHOWN_WAIT_MS:
                self.scheduler.when_idle(STARTING, start_after_drawing)
                return
            waited += SHOWN_POLL_MS
            self.scheduler.once(STARTING, SHOWN_POLL_MS, look)

        self.scheduler.once(STARTING, 0, look)

    def _fire_and_keep(self) -> None:
        at, lag_ms, waited_ms = self._fire()
        self.history.append((at, lag_ms, waited_ms))
