"""The health figures both windows show, counted once (tkchat.stats): a lag probe's window of
samples and a counter's rate, driven here by a clock the test sets (no Tk, no Qt, no waiting).
"""

from __future__ import annotations

import pytest

from tkchat import stats
from tkchat.stats import LONG_TASK_MS, LagWindow, RateMeter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ManualProbe(LagWindow):
    """A probe whose "timer" is the test: it notes each request, and the test fires it."""

    def __init__(self) -> None:
        super().__init__(interval_ms=5, window_s=1.0)
        self.asked: list[int] = []
        self.cancelled = 0

    def _schedule(self, delay_ms: int) -> None:
        self.asked.append(delay_ms)

    def _cancel(self) -> None:
        self.cancelled += 1


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(stats.time, "perf_counter", fake)
    return fake


def test_a_lag_probe_counts_lateness_long_tasks_and_its_window(clock: Clock) -> None:
    probe = ManualProbe()
    probe.start()
    assert probe.asked == [5] and probe.running
    clock.now += 0.0052  # on time, give or take 0.2 ms
    probe._fire()
    assert probe.recent[-1].lag_ms == pytest.approx(0.2)
    assert probe.asked == [5, 5]  # re-armed while running
    clock.now += 0.005 + (LONG_TASK_MS + 10) / 1000  # a callback held the loop 60 ms
    probe._fire()
    assert probe.long_tasks == 1
    assert probe.peak_ms == probe.max_ms() == probe.p99_ms() == pytest.approx(60)
    assert probe.now_ms() == pytest.approx(60)
    clock.now += 0.5  # the next firing is 495 ms overdue: "now" says so before it runs
    assert probe.now_ms() == pytest.approx(495)
    clock.now += 1.0
    probe._fire()  # the two older samples have left the 1 s window; the peak has not
    assert [s.lag_ms for s in probe.recent] == [pytest.approx(1495)]
    assert probe.long_tasks == 2 and probe.peak_ms == pytest.approx(1495)
    probe.reset_peaks()
    assert (probe.peak_ms, probe.long_tasks) == (0.0, 0)
    probe.stop()
    assert probe.cancelled == 1 and not probe.running
    probe._fire()  # a firing already under way when stopped does not re-arm
    assert len(probe.asked) == 4


def test_recording_keeps_every_sample_until_stopped(clock: Clock) -> None:
    probe = ManualProbe()
    probe.start()
    probe.start_recording()
    for _ in range(3):
        clock.now += 0.006
        probe._fire()
    samples = probe.stop_recording()
    assert [round(s.lag_ms, 6) for s in samples] == [1.0, 1.0, 1.0]
    assert probe.recorded is None


def test_a_rate_is_over_the_last_second_and_restarts_with_its_counter() -> None:
    meter = RateMeter()
    samples = [(0.0, 0), (0.25, 40), (0.5, 90), (1.4, 200), (1.6, 5), (1.9, 60)]
    rates = [meter.sample(count, at) for at, count in samples]
    assert rates == pytest.approx([0.0, 160.0, 180.0, 110 / 0.9, 0.0, 55 / 0.3])
