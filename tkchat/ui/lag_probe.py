"""Event-loop lag: how late the Tk main loop runs a timer it was asked to run.

The probe re-arms ``after(interval)`` and records, each time it fires, how much later than
asked it ran. A free main loop fires within a fraction of a millisecond; a main loop stuck in a
long callback fires late by the length of that callback. A late firing over 50 ms is a
*long task* (the browser's Long Tasks threshold): the user felt a freeze.
"""

from __future__ import annotations

import time
from collections import deque

from tkchat.stats import LagSample, percentile
from tkchat.ui.scheduler import AfterScheduler

LONG_TASK_MS = 50.0


class LagProbe:
    """Main thread only. Keeps a window of recent samples for the live display, a longer
    bounded ``history`` for the lag timeline and, while ``recording``, every sample for the
    benchmark."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        interval_ms: int = 5,
        window_s: float = 5.0,
        history_s: float = 30.0,
    ):
        self.scheduler = scheduler
        self.interval_ms = interval_ms
        self.window_s = window_s
        self.recent: deque[LagSample] = deque()
        # A ring: at most one sample per interval, so ``history_s`` seconds always fit, and
        # appending to a deque with a maxlen costs the 5 ms probe no trimming loop.
        self.history: deque[LagSample] = deque(maxlen=int(history_s * 1000 / interval_ms) + 1)
        self.recorded: list[LagSample] | None = None
        self._expected = 0.0
        self._running = False
        self.peak_ms = 0.0  # worst lag since reset_peaks() (the lesson panel's live figure)
        self.long_tasks = 0  # firings later than LONG_TASK_MS since reset_peaks()

    def start(self) -> None:
        self._running = True
        self._arm()

    def stop(self) -> None:
        self._running = False

    def _arm(self) -> None:
        self._expected = time.perf_counter() + self.interval_ms / 1000
        self.scheduler.once("lag-probe", self.interval_ms, self._fire)

    def _fire(self) -> None:
        now = time.perf_counter()
        sample = LagSample(now, max(0.0, (now - self._expected) * 1000))
        self.recent.append(sample)
        self.history.append(sample)
        while self.recent and now - self.recent[0].at > self.window_s:
            self.recent.popleft()
        if self.recorded is not None:
            self.recorded.append(sample)
        self.peak_ms = max(self.peak_ms, sample.lag_ms)
        if sample.lag_ms > LONG_TASK_MS:
            self.long_tasks += 1
        if self._running:
            self._arm()

    # -- reading -------------------------------------------------------------------------------

    def now_ms(self) -> float:
        """Lag of the latest firing — or, if the probe is overdue, how overdue it is."""
        overdue = (time.perf_counter() - self._expected) * 1000
        last = self.recent[-1].lag_ms if self.recent else 0.0
        return max(last, overdue if self._running else 0.0)

    def p99_ms(self) -> float:
        return percentile([s.lag_ms for s in self.recent], 99) or 0.0

    def reset_peaks(self) -> None:
        self.peak_ms = 0.0
        self.long_tasks = 0

    def start_recording(self) -> None:
        self.recorded = []

    def stop_recording(self) -> list[LagSample]:
        samples, self.recorded = self.recorded or [], None
        return samples
