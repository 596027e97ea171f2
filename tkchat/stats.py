"""Small statistics and process figures that every layer may use (no numpy, no Tk, no Qt).

The lag probe in the window, the benchmark and the server's health figures all count the same
way: nearest-rank percentiles, the median of repeated runs, and resident memory. The health
bars of the Tk and the Qt window share their arithmetic here too (:class:`LagWindow`,
:class:`RateMeter`), so that the two windows' figures are one definition, not two copies that
could drift: only the timer that drives them is each toolkit's own.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

PROBE_MS = 5  # a lag probe's timer interval
LAG_WINDOW_S = 5.0  # the live lag figures cover the last five seconds
LONG_TASK_MS = 50.0  # a firing this late is a long task (the browsers' Long Tasks threshold)


class LagSample(NamedTuple):
    """One firing of an event-loop lag probe (Tk's or Qt's): when, and how late; and, when
    the system tells (:func:`cpu_wait_ms`), how much of that lateness the loop's thread, or
    the display server it waits on, spent ready to run but waiting for a CPU that other
    programs held: the machine's share, not the window's.

    A tuple: where thousands are kept for long (the lag timeline's 30 s), they are kept as
    plain tuples, which Python's garbage collector stops tracking (see :data:`KeptLag`)."""

    at: float  # perf_counter when the probe fired
    lag_ms: float
    waited_ms: float = 0.0  # of lag_ms, waiting for a CPU (0 when not measured)

    @property
    def own_ms(self) -> float:
        """The lateness the window's own work caused: the lag less the wait for a CPU."""
        return max(0.0, self.lag_ms - self.waited_ms)


# A lag sample kept as a plain ``(at, lag_ms, waited_ms)`` tuple: the collector untracks a
# tuple of floats, not a class instance (a named tuple included). Every full collection walks
# every tracked object: a teaching window held 16,700 after 34 s of an answer (9,400 kept
# callbacks, 6,000 kept lag samples), 2,500 since; a bench run's full collection in the tick
# that ended an answer took 65 ms of the main thread over 68,000 (2026-12-04, loaded).
KeptLag = tuple[float, float, float]


class Schedstat:
    """A thread's or process's ``schedstat`` (Linux), kept open and read again in place:
    (ran, waited) in ms, as :func:`cpu_times_ms`, or None where it cannot be read. For a
    reader read hundreds of times a second (the recording lag probe): an ``open`` of /proc
    each time cost the loop 0.05 ms a firing, 0.09 ms with the rest of the read (2026-12-03).
    ``/proc/thread-self`` is the thread that opens it: open it on the thread it describes."""

    def __init__(self, where: str = "thread-self") -> None:
        try:
            self._fd: int | None = os.open(f"/proc/{where}/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def times_ms(self) -> tuple[float, float] | None:
        if self._fd is None:
            return None
        try:
            fields = os.pread(self._fd, 128, 0).split()
            return int(fields[0]) / 1e6, int(fields[1]) / 1e6
        except (OSError, IndexError, ValueError):  # the process is gone
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def cpu_wait_ms(native_id: int | None = None, *, process: int | None = None) -> float | None:
    """Any thread: how long a thread of this process (the calling one, or the one whose
    ``threading.Thread.native_id`` is given), or the main thread of another ``process``, has
    waited in all, since it started, for a CPU while it was ready to run (Linux: the second
    field of its ``schedstat``, in ns); None where the system does not say or the thread is
    gone. On a busy machine a late timer or a slow Stop is mostly this wait: other programs
    had the cores."""
    times = cpu_times_ms(native_id, process=process)
    return None if times is None else times[1]


def cpu_times_ms(
    native_id: int | None = None, *, process: int | None = None
) -> tuple[float, float] | None:
    """:func:`cpu_wait_ms`, with the time the thread ran on a CPU before it: (ran, waited)."""
    if process is not None:
        where = str(process)
    else:
        where = "thread-self" if native_id is None else f"self/task/{native_id}"
    reader = Schedstat(where)
    try:
        return reader.times_ms()
    finally:
        reader.close()


def display_server_pid(display: str | None = None) -> int | None:
    """The process id of the X server of ``display`` (``$DISPLAY`` by default) when it runs
    on this machine: X servers (Xorg, Xvfb, Xwayland) write it in ``/tmp/.X<n>-lock``. None
    for a display on another host, no display, or no lock file to read."""
    name = os.environ.get("DISPLAY", "") if display is None else display
    host, colon, rest = name.rpartition(":")
    number = rest.split(".")[0]
    if not colon or host not in ("", "unix") or not number.isdigit():
        return None
    try:
        with open(f"/tmp/.X{number}-lock", "rb") as handle:
            return int(handle.read())  # "      8673\n": int() takes the padding
    except (OSError, ValueError):
        return None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no data."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float | None:
    """The nearest-rank median (a value that was measured, never an average of two); None
    for no data."""
    return percentile(values, 50)


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def rss_mb() -> float:
    """Current resident set size of this process in MB."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * resource.getpagesize() / 1e6
    except OSError:  # not Linux: peak is the best we can read
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1e6 if sys.platform == "darwin" else peak / 1e3


class _Reading(NamedTuple):
    """What a recording lag probe reads at a firing: when, its thread's CPU times (ran,
    waited; :func:`cpu_times_ms`) and its display server's wait (:func:`cpu_wait_ms`)."""

    at: float
    own: tuple[float, float] | None
    server_waited: float | None


class LagWindow:
    """An event-loop lag probe without its timer. A toolkit's probe subclasses it and gives
    :meth:`_schedule` (ask the loop to call :meth:`_fire` in so many ms) and :meth:`_cancel`;
    the rest is here: each firing records how much later than asked it ran. A free loop fires
    within a fraction of a millisecond; a loop stuck in a long callback, late by that long.

    Keeps the samples of the last ``window_s`` seconds (``recent``, for now / p99 / max), the
    worst lag and the long tasks since :meth:`reset_peaks`, and, while recording, every
    sample (``recorded``). Used on the one thread that runs the toolkit's loop."""

    def __init__(self, interval_ms: int = PROBE_MS, window_s: float = LAG_WINDOW_S) -> None:
        self.interval_ms = interval_ms
        self.window_s = window_s
        self.recent: deque[LagSample] = deque()
        self.recorded: list[LagSample] | None = None
        self.peak_ms = 0.0  # worst lag since reset_peaks() (the lesson panel's live figure)
        self.long_tasks = 0  # firings later than LONG_TASK_MS since reset_peaks()
        self.running = False
        self._expected = 0.0
        # while recording: the loop thread's schedstat and the local X server's
        self._own: Schedstat | None = None
        self._server: Schedstat | None = None
        self._last: _Reading | None = None  # the last firing's reading, while recording

    def start(self) -> None:
        """Fire every interval from now on. Again while running: its pending firing is
        forgotten and it counts from now (what ran before is not the loop's to answer for:
        the Tk window's probe starts again once the window is drawn,
        :meth:`tkchat.ui.lag_probe.LagProbe.start_once_shown`)."""
        if self.running:
            self._cancel()
        self.running = True
        self._arm()

    def stop(self) -> None:
        self.running = False
        self._cancel()

    def _schedule(self, delay_ms: int) -> None:
        """The toolkit's part: call :meth:`_fire` once, ``delay_ms`` from now."""
        raise NotImplementedError

    def _cancel(self) -> None:
        """The toolkit's part: forget a pending firing (nothing to do if the next one is
        simply not scheduled again)."""

    def _arm(self) -> None:
        self._expected = time.perf_counter() + self.interval_ms / 1000
        self._schedule(self.interval_ms)

    def _fire(self) -> LagSample:
        """The timer ran: record how late, re-arm while running, and return the sample.
        While recording, the sample also says how much of the lateness was a wait for a CPU
        (two small reads of /proc per firing, only then)."""
        now = time.perf_counter()
        lag_ms = max(0.0, (now - self._expected) * 1000)
        waited_ms = 0.0
        if self.recorded is not None:
            reading = self._reading(now)
            if self._last is not None:
                waited_ms = min(lag_ms, self._machine_wait_ms(self._last, reading))
            self._last = reading
        sample = LagSample(now, lag_ms, waited_ms)
        self.recent.append(sample)
        while self.recent and now - self.recent[0].at > self.window_s:
            self.recent.popleft()
        if self.recorded is not None:
            self.recorded.append(sample)
        self.peak_ms = max(self.peak_ms, sample.lag_ms)
        if sample.lag_ms > LONG_TASK_MS:
            self.long_tasks += 1
        if self.running:
            self._arm()
        return sample

    def now_ms(self) -> float:
        """Lag of the latest firing — or, if the probe is overdue, how overdue it is."""
        overdue = (time.perf_counter() - self._expected) * 1000
        last = self.recent[-1].lag_ms if self.recent else 0.0
        return max(last, overdue if self.running else 0.0)

    def overdue_since(self) -> float | None:
        """Any thread: when the probe was due, if it still has not fired (the loop is stuck
        since then); None while it keeps time. (Two floats read: no lock needed.)"""
        expected = self._expected
        if not self.running or time.perf_counter() <= expected:
            return None
        return expected

    def p99_ms(self) -> float:
        return percentile([s.lag_ms for s in self.recent], 99) or 0.0

    def max_ms(self) -> float:
        return max((s.lag_ms for s in self.recent), default=0.0)

    def reset_peaks(self) -> None:
        self.peak_ms = 0.0
        self.long_tasks = 0

    def _reading(self, now: float) -> _Reading:
        own = None if self._own is None else self._own.times_ms()
        server = None if self._server is None else self._server.times_ms()
        return _Reading(now, own, None if server is None else server[1])

    def _machine_wait_ms(self, before: _Reading, after: _Reading) -> float:
        """From ``before`` to ``after``, how long the loop's thread waited for a CPU, and how
        long its display server did while the loop's thread was off the CPU without waiting
        for one (asleep: in the toolkit, on the X server's reply). A window waits on its X
        server, and an X server waiting for a core that other programs hold stalls it as
        much as a wait of its own: on CI one demo's window was held 81 ms "waiting for the
        display server" while its own thread hardly waited. A server's wait while the loop
        computes (a callback's own work) or idles on time does not count: it delayed
        nothing."""
        if before.own is None or after.own is None:
            return 0.0
        ran, waited = after.own[0] - before.own[0], after.own[1] - before.own[1]
        # asleep beyond the probe's own interval (an idle loop sleeps that long, on time)
        asleep = (after.at - before.at) * 1000 - ran - waited - self.interval_ms
        server_waited = 0.0
        if before.server_waited is not None and after.server_waited is not None:
            server_waited = after.server_waited - before.server_waited
        return max(0.0, waited) + max(0.0, min(server_waited, asleep))

    def start_recording(self) -> None:
        """On the loop's thread (its schedstat is opened here)."""
        self.recorded = []
        self._close_readers()
        self._own = Schedstat()
        pid = display_server_pid()
        self._server = None if pid is None else Schedstat(str(pid))
        self._last = self._reading(time.perf_counter())

    def stop_recording(self) -> list[LagSample]:
        samples, self.recorded = self.recorded or [], None
        self._last = None
        self._close_readers()
        return samples

    def _close_readers(self) -> None:
        for reader in (self._own, self._server):
            if reader is not None:
                reader.close()
        self._own = self._server = None


class RateMeter:
    """A growing counter (tokens, widget updates) as a per-second rate over the last
    ``window_s`` seconds. Used on the thread that samples it."""

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
