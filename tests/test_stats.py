"""The health figures both windows show, counted once (tkchat.stats): a lag probe's window of
samples and a counter's rate, driven here by a clock the test sets (no Tk, no Qt, no waiting).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

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


def test_a_probe_started_again_counts_from_then(clock: Clock) -> None:
    """Started again while running, a probe forgets its pending firing and the time before
    counts for nothing (the window's build, before its loop ran, was once a long task named
    'freeze_what_is_alive' on a fresh timeline)."""
    probe = ManualProbe()
    probe.start()
    clock.now += 0.2  # the rest of the build, and the collection
    probe.start()
    assert probe.cancelled == 1 and probe.asked == [5, 5] and probe.running
    clock.now += 0.005
    probe._fire()
    assert probe.recent[-1].lag_ms == pytest.approx(0.0) and probe.long_tasks == 0


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


class Proc:
    """What /proc would say: this thread's (ran, waited) and the X server's wait, in ms;
    ``reader`` stands in for :class:`stats.Schedstat` (the loop thread's or the server's)."""

    def __init__(self) -> None:
        self.ran, self.waited, self.server_waited = 0.0, 0.0, 0.0
        self.closed = 0
        proc = self

        class Reader:
            def __init__(self, where: str = "thread-self") -> None:
                assert where in ("thread-self", "4242")  # the loop's; the server's, by its lock
                self.where = where

            def times_ms(self) -> tuple[float, float]:
                if self.where == "4242":
                    return 0.0, proc.server_waited
                return proc.ran, proc.waited

            def close(self) -> None:
                proc.closed += 1

        self.reader = Reader


@pytest.mark.parametrize("server", [4242, None], ids=["local X server", "no server to read"])
def test_the_machine_s_share_of_a_late_firing_counts_the_x_server_only_while_waited_on(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, server: int | None
) -> None:
    """A loop asleep 81 ms on an X server that waited 70 ms for a core: the machine's doing.
    The same 70 ms while the loop computed its own 80 ms: the window's."""
    proc = Proc()
    monkeypatch.setattr(stats, "Schedstat", proc.reader)
    monkeypatch.setattr(stats, "display_server_pid", lambda: server)
    probe = ManualProbe()
    probe.start()
    probe.start_recording()

    def late_firing(ran: float, waited: float, server_waited: float) -> stats.LagSample:
        clock.now += (5 + 81) / 1000  # the interval, then 81 ms late
        proc.ran += ran
        proc.waited += waited
        proc.server_waited += server_waited
        probe._fire()
        sample = probe.recent[-1]
        assert sample.lag_ms == pytest.approx(81)
        return sample

    asleep_on_x = late_firing(ran=1, waited=2, server_waited=70)
    computing = late_firing(ran=80, waited=1, server_waited=70)
    if server is None:
        assert asleep_on_x.waited_ms == pytest.approx(2)  # its own wait only
    else:
        assert asleep_on_x.waited_ms == pytest.approx(72) and asleep_on_x.own_ms < 10
    assert computing.waited_ms == pytest.approx(1) and computing.own_ms == pytest.approx(80)
    assert len(probe.stop_recording()) == 2
    assert proc.closed == (1 if server is None else 2)  # what recording opened, it closes


def test_the_x_server_is_found_by_its_lock_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Local displays only: X servers write their pid in /tmp/.X<n>-lock."""
    number = next(n for n in range(7000, 7100) if not Path(f"/tmp/.X{n}-lock").exists())
    lock = Path(f"/tmp/.X{number}-lock")
    lock.write_text(f"{os.getpid():>10}\n")
    try:
        for display in (f":{number}", f":{number}.0", f"unix:{number}"):
            assert stats.display_server_pid(display) == os.getpid(), display
        monkeypatch.setenv("DISPLAY", f":{number}")
        assert stats.display_server_pid() == os.getpid()
        for display in (f"otherhost:{number}", "", "wayland-0", f":{number + 1000}"):
            assert stats.display_server_pid(display) is None, display
    finally:
        lock.unlink()
    waited = stats.cpu_wait_ms(process=os.getpid())  # a live process: its main thread's
    assert waited is None or waited >= 0.0
    assert stats.cpu_wait_ms(process=2**22 + 1) is None  # no such process


def test_a_rate_is_over_the_last_second_and_restarts_with_its_counter() -> None:
    meter = RateMeter()
    samples = [(0.0, 0), (0.25, 40), (0.5, 90), (1.4, 200), (1.6, 5), (1.9, 60)]
    rates = [meter.sample(count, at) for at, count in samples]
    assert rates == pytest.approx([0.0, 160.0, 180.0, 110 / 0.9, 0.0, 55 / 0.3])


def test_a_kept_open_schedstat_reads_the_thread_that_opened_it_anew_each_time() -> None:
    """The recording probe's reader: opened once, read in place; what it reads moves with
    the thread's CPU time, and a reader of a process that is gone says None."""
    if not Path("/proc/thread-self/schedstat").exists():
        pytest.skip("no /proc/thread-self/schedstat on this system")
    reader = stats.Schedstat()
    before = reader.times_ms()
    assert before is not None
    started = time.thread_time()
    while time.thread_time() - started < 0.02:  # 20 ms of this thread's CPU
        pass
    after = reader.times_ms()
    assert after is not None and after[0] - before[0] >= 15
    reader.close()
    assert reader.times_ms() is None
    assert stats.Schedstat("999999999").times_ms() is None
