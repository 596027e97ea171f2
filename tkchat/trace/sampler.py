"""The main-thread sampler: every few milliseconds, what the Tk main thread is doing.

A helper thread wakes every ``interval_s`` while the loop is late (every ``calm_interval_s``
while it keeps time, when it is told how: ``overdue``) and reads the main thread's Python
stack with ``sys._current_frames()``. That works however stuck the main thread is: Tkinter
releases the GIL while Tcl runs, a blocked call (a sleep, a lock, a queue, the model's C
code) releases it too, and Python code hands it over every few milliseconds — and a blocked
thread's stack still shows the frame it is blocked in.

Each :class:`Sample` says what the time since the previous one was spent on, its *kind*:

- ``python``: Python code of a callback ran;
- ``native``: a C call that had released the GIL ran (the model's matrix work): the thread
  used a core, yet the sampler got the GIL at once (Python code makes it wait for the
  interpreter's switch interval: 5 ms by CPython's default, 1 ms in a window);
- ``wait``: a callback was blocked (a sleep, a lock, a queue: the thread used no core);
- ``tk``: Tk's own work — between callbacks (redisplay, layout, geometry: the loop frame
  innermost and the thread busy), or asked for inside one (``update_idletasks``, a widget
  call);
- ``idle``: the loop waited for the next event;
- ``other-program``: the thread hardly ran: it was ready, but waited for a core another
  program had.

The last two need the thread's clocks, read from the kernel (its CPU clock: time run;
``/proc/self/task/N/schedstat``: time waited for a core; where neither exists, every loop
sample counts as idle). What is kept is bounded: the last ``keep_s`` seconds, and while
recording (the bench, a saved trace) at most ``limit`` samples.

The sampler thread never touches Tk; :meth:`LoopSampler.between` and the recording are read
from any thread (under a lock).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from tkchat.trace.core_waits import CoreWaits, others_waited
from tkchat.trace.frames import (
    TK,
    FrameBook,
    FrameRef,
    between_callbacks,
    blame_of,
)
from tkchat.trace.ledger import CallbackLedger

PYTHON = "python"
NATIVE = "native"
WAIT = "wait"
TK_WORK = "tk"
IDLE = "idle"
OTHER_PROGRAM = "other-program"
KINDS = (PYTHON, NATIVE, WAIT, TK_WORK, IDLE, OTHER_PROGRAM)

INTERVAL_S = 0.005  # between samples while the loop is late
# Between looks while the loop keeps time. Each wake takes the GIL, and the main thread pays
# for getting it back (a switch, and on a busy core the wait for its turn): at a look every
# 5 ms the fixed pipeline on the bundled model had a lag max of 21-25 ms, with every look
# 16 ms apart 14-16 ms (without the sampler 8-15 ms; three runs each, 2026-12-03). A freeze
# is still found within a frame, and sampled every INTERVAL_S from then on.
CALM_INTERVAL_S = 0.016
KEEP_S = 30.0  # what the lag timeline (20 s) and a saved trace can ask for
RECORD_LIMIT = 240_000  # samples kept by one recording: 20 minutes at 5 ms
BUSY = 0.3  # a thread that ran this share of a sample's time was working, not waiting


@dataclass(frozen=True, slots=True)
class Sample:
    """What the main thread did during the ``span`` seconds up to ``at`` (perf_counter)."""

    at: float
    span: float
    stack: tuple[FrameRef, ...]  # outermost first
    kind: str
    ran: float | None = None  # seconds the thread ran on a core (None: no clock here)
    queued: float | None = None  # seconds it was ready but waited for a core
    others: float | None = None  # seconds the process's other threads ran (the sampler's not)
    blocked: str | None = None  # not running: the kernel function it sleeps in (wchan)
    timer: str | None = None  # the scheduler's timer running, if any
    after: str | None = None  # between callbacks: the function that ran last
    counters: tuple[float, ...] | None = None  # the sampler's counters, in their order
    # for a ``wait`` or ``tk`` sample (asleep in a callback: the GIL's holder may have been the
    # one kept off a core), seconds the process's other threads waited for a core meanwhile
    others_queued: float | None = None

    @property
    def between_callbacks(self) -> bool:
        return self.kind in (TK_WORK, IDLE) and between_callbacks(self.stack)


class ThreadClock:
    """How long one thread has run, and waited for a core, in seconds. Any thread.

    The time run comes from the thread's CPU clock (brought up to date by the kernel when it
    is read; schedstat's own figure lags by a scheduler tick for a thread that is running),
    the time waited for a core from ``/proc/self/task/N/schedstat`` (Linux)."""

    def __init__(self, native_id: int | None, ident: int) -> None:
        self._fd: int | None = None
        self._cpu: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._cpu = time.pthread_getcpuclockid(ident)
        self._wchan: int | None = None
        if native_id is not None:
            with contextlib.suppress(OSError):
                self._fd = os.open(f"/proc/self/task/{native_id}/schedstat", os.O_RDONLY)
            with contextlib.suppress(OSError):
                self._wchan = os.open(f"/proc/self/task/{native_id}/wchan", os.O_RDONLY)

    @property
    def knows_queue(self) -> bool:
        return self._fd is not None

    def blocked_in(self) -> str | None:
        """Where in the kernel the thread sleeps (``futex_do_wait``: a lock, the GIL;
        ``poll_schedule_timeout``: waiting on a socket, the X server's reply or the next
        event), or None (running, or this system cannot say)."""
        if self._wchan is None:
            return None
        with contextlib.suppress(OSError, UnicodeDecodeError):
            name = os.pread(self._wchan, 64, 0).decode().strip()
            return name if name and name != "0" else None
        return None

    def read(self) -> tuple[float | None, float | None]:
        """(run so far, waited for a core so far); None where this system cannot say."""
        ran: float | None = None
        queued: float | None = None
        if self._cpu is not None:
            with contextlib.suppress(OSError):
                ran = time.clock_gettime(self._cpu)
        if self._fd is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                run_ns, queued_ns = os.pread(self._fd, 128, 0).split()[:2]
                queued = int(queued_ns) / 1e9
                if ran is None:
                    ran = int(run_ns) / 1e9
        return ran, queued

    def close(self) -> None:
        for fd in (self._fd, self._wchan):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._wchan = None


# The sampler waited this share of the interpreter's switch interval for the GIL: Python code
# was running (a thread in C that lets the GIL go hands it over at once; one running Python
# keeps it until the interval is up). A share, not a time: a window hands the GIL over every
# 1 ms (tkchat.threads.favour_the_gui_thread), CPython's default is 5 ms.
GIL_WAIT_SHARE = 0.4


def classify(
    stack: tuple[FrameRef, ...],
    span: float,
    ran: float | None,
    queued: float | None,
    *,
    gil_wait: float,
) -> str:
    """The kind of one sample (see the module's docstring). ``gil_wait``: how late the
    sampler woke for it (mostly: how long it waited for the GIL)."""
    busy = ran is not None and span > 0 and ran >= BUSY * span
    if queued is not None and span > 0 and queued >= 0.5 * span and not busy:
        return OTHER_PROGRAM
    if between_callbacks(stack):
        return TK_WORK if busy else IDLE
    if stack and stack[-1].role == TK:
        return TK_WORK
    if ran is not None and not busy:
        return WAIT
    return PYTHON if gil_wait >= GIL_WAIT_SHARE * sys.getswitchinterval() else NATIVE


class LoopSampler:
    """Samples ``target``'s stack (the main thread by default) on a helper thread.

    ``ledger``: the scheduler's (which timer runs, which ran last). ``counters``: figures read
    at every sample, kept with it while recording (queue depth, chunks coalesced: for the
    trace). ``watchers`` are called on the sampler thread after each sample (the watchdog's
    live culprit); they must be quick and must not touch Tk."""

    def __init__(
        self,
        target: threading.Thread | None = None,
        *,
        interval_s: float = INTERVAL_S,
        calm_interval_s: float = CALM_INTERVAL_S,
        keep_s: float = KEEP_S,
        ledger: CallbackLedger | None = None,
        book: FrameBook | None = None,
    ) -> None:
        self.target = target or threading.main_thread()
        self.interval_s = interval_s
        self.calm_interval_s = max(interval_s, calm_interval_s)
        self.ledger = ledger
        self.book = book or FrameBook()
        self.counters: dict[str, Callable[[], float]] = {}
        # When the loop is late since (the lag probe's ``overdue_since``; None: on time):
        # where a thread that did not run was asleep is read only then.
        self.overdue: Callable[[], float | None] | None = None
        self.watchers: list[Callable[[LoopSampler, float], None]] = []
        self._recent: deque[Sample] = deque(maxlen=max(16, int(keep_s / interval_s)))
        self._recorded: list[Sample] | None = None
        self._limit = RECORD_LIMIT
        self._lock = threading.Lock()
        self._graveyard: list[FrameType] = []  # frames to free on the main thread (_let_go)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken = 0  # samples taken so far
        self.wakes = 0  # times the sampler woke (a sample taken or not)
        self.cost_s = 0.0  # the sampler thread's own CPU time, summed (wakes without a sample too)
        self.knows_queue = False  # the kernel tells this sampler about waits for a core
        self._skip: set[int] = set()  # the main thread and the sampler, by native id
        self._waits: CoreWaits | None = None  # the sampler thread's reader (Linux)

    # -- control (any thread) ----------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tkchat-loop-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """The calling thread (the main one, in the window) also frees what the sampler
        thread could not (:meth:`bury`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.bury()

    def _let_go(self, frame: FrameType) -> None:
        """Sampler thread. A frame that finished while it was read (the main thread ran on)
        is only this thread's now: dropping it here would free its locals here — and a Tk
        interpreter freed off the main thread aborts the process ("Tcl_AsyncDelete: async
        handler deleted by the wrong thread"). It waits for :meth:`bury`, on the main thread."""
        # (held by: this argument, the caller's name, getrefcount's; a live one by its thread too)
        if sys.getrefcount(frame) <= 3:
            self._graveyard.append(frame)

    def bury(self) -> None:
        """Main thread: free the frames :meth:`_let_go` kept (the witness calls it every
        second; :meth:`stop` too)."""
        self._graveyard.clear()

    def request_stop(self) -> None:
        """Any thread, the sampler's own too: stop after the current sample."""
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def recent(self) -> list[Sample]:
        with self._lock:
            return list(self._recent)

    def between(self, start: float, end: float) -> list[Sample]:
        """The kept samples whose time overlaps ``start`` … ``end`` (perf_counter)."""
        with self._lock:
            kept = list(self._recent)
        return [s for s in kept if s.at > start and s.at - s.span < end]

    def start_recording(self, limit: int = RECORD_LIMIT) -> None:
        with self._lock:
            self._recorded, self._limit = [], limit

    def stop_recording(self) -> list[Sample]:
        with self._lock:
            samples, self._recorded = self._recorded or [], None
        return samples

    # -- the sampler thread ------------------------------------------------------------------

    def _run(self) -> None:
        clock = ThreadClock(self.target.native_id, self.target.ident or 0)
        self._skip = {self.target.native_id or 0, threading.get_native_id()}
        self._waits = CoreWaits() if clock.knows_queue else None
        self.knows_queue = clock.knows_queue
        state = _State(time.perf_counter(), *clock.read(), process=time.process_time())
        calm = False  # did the last look find the loop keeping time?
        try:
            while True:
                wait = self.calm_interval_s if calm else self.interval_s
                due = time.perf_counter() + wait
                if self._stop.wait(wait):
                    return
                began = time.thread_time()
                now = time.perf_counter()
                # (woken this late, the sampler itself was held up: what happened meanwhile
                # may have been a late moment that has just ended; sample it)
                on_time = self.overdue is not None and self.overdue() is None
                calm = on_time and now - due < self.interval_s
                if calm:
                    # The loop keeps time: nothing to attribute, and every read would cost
                    # the main thread a GIL switch. Only the next sample's clocks start anew.
                    state.at, state.ran, state.queued, state.waits = now, None, None, None
                else:
                    # How late it woke is mostly how long the GIL was held (its own wait for
                    # a core too, on a busy machine: not read, since each read of a kernel
                    # file lets the GIL go, and taking it back costs the main thread a switch).
                    sample = self._take(clock, state, now - due)
                    if sample is None:
                        return  # the main thread is gone
                    with self._lock:
                        self._recent.append(sample)
                        if self._recorded is not None and len(self._recorded) < self._limit:
                            self._recorded.append(sample)
                    self.taken += 1
                for watcher in self.watchers:
                    watcher(self, now)
                self.wakes += 1
                self.cost_s += time.thread_time() - began
        finally:
            clock.close()
            if self._waits is not None:
                self._waits.close()

    def _take(self, clock: ThreadClock, state: _State, late: float) -> Sample | None:
        frames = sys._current_frames()
        frame = frames.pop(self.target.ident or 0, None)
        # Every other thread's frame too may have finished since it was read, leaving this
        # dict its last holder: dropped here, its locals would be freed on this thread (an
        # OpenAI client's __del__ ran here once). They wait for bury() as well.
        for other in frames.values():
            if sys.getrefcount(other) <= 3:  # (the dict, this name, getrefcount's)
                self._graveyard.append(other)
        del frames
        if frame is None:
            return None
        now = time.perf_counter()
        stack = self.book.stack(frame)
        if stack == state.stack:  # the same as last time (an idle loop): keep one tuple
            stack = state.stack
        self._let_go(frame)
        del frame
        ran, queued = clock.read()  # (after the frame is let go: a read lets the GIL go)
        span = now - state.at
        ran_s, queued_s = _delta(ran, state.ran), _delta(queued, state.queued)
        process = time.process_time()
        others = None
        if ran_s is not None:  # the process's CPU, less the main thread's and the sampler's
            own = self.cost_s - state.cost
            others = max(0.0, process - state.process - ran_s - own)
        state.process, state.cost = process, self.cost_s
        kind = classify(stack, span, ran_s, queued_s, gil_wait=late)
        # Where a thread that did not run was asleep matters only while the loop is late
        # (each read lets the GIL go, and the main thread pays for taking it back).
        overdue = self.overdue() if self.overdue is not None else now
        blocked = clock.blocked_in() if kind in (IDLE, WAIT) and overdue is not None else None
        timer, after = self._timer_and_after(stack, kind, now, state)
        counters = None
        if self.counters:
            counters = tuple(_read(read) for read in self.counters.values())
        waits, others_queued = self._others_queued(kind, state)
        state.at, state.ran, state.queued, state.stack = now, ran, queued, stack
        state.waits = waits
        return Sample(
            now,
            span,
            stack,
            kind,
            ran_s,
            queued_s,
            others,
            blocked,
            timer,
            after,
            counters,
            others_queued,
        )

    def _others_queued(
        self, kind: str, state: _State
    ) -> tuple[dict[int, int] | None, float | None]:
        """Every thread's wait for a core now, read at every sample while the loop is late (not
        while it keeps time: each read lets the GIL go, and taking it back costs the main
        thread a switch); and, for a ``wait`` or ``tk`` sample, how long the other threads
        waited since the previous sample, if that one read them too. (The first sample after
        a calm moment has none, as it has no clocks of the main thread: its time is not
        excused.)"""
        waits = self._waits.read() if self._waits is not None else None
        before = state.waits
        if waits is None or before is None or kind not in (WAIT, TK_WORK):
            return waits, None
        return waits, others_waited(before, waits, self._skip)

    def _timer_and_after(
        self, stack: tuple[FrameRef, ...], kind: str, now: float, state: _State
    ) -> tuple[str | None, str | None]:
        """The timer running now, and — for Tk's work between callbacks — what ran just
        before it: the function last sampled inside a callback, or the ledger's last
        callback if that one ended later and was never sampled."""
        ledger = self.ledger
        current = ledger.current if ledger is not None else None
        timer = current[0] if current is not None else None
        if kind not in (TK_WORK, IDLE) or not between_callbacks(stack):
            known = state.last_ref
            blame = known[1] if known is not None and known[0] is stack else blame_of(stack)
            state.last_ref = (stack, blame)
            if blame is not None and blame.role != TK:
                state.last_blame = (now, blame.function)
            return timer, None
        last = ledger.last if ledger is not None else None
        sampled = state.last_blame
        if last is not None and (sampled is None or sampled[0] < last.start):
            return timer, last.function
        return timer, sampled[1] if sampled is not None else None


@dataclass
class _State:
    """What the sampler thread remembers from one sample to the next."""

    at: float
    ran: float | None
    queued: float | None
    process: float = 0.0  # the process's CPU time at the last sample
    cost: float = 0.0  # the sampler's own CPU time then
    stack: tuple[FrameRef, ...] = ()
    waits: dict[int, int] | None = None  # every thread's wait for a core, at the last sample
    last_blame: tuple[float, str] | None = None
    # the last stack blame_of() was worked out for, and its answer
    last_ref: tuple[tuple[FrameRef, ...], FrameRef | None] | None = None


def _delta(now: float | None, before: float | None) -> float | None:
    return None if now is None or before is None else max(0.0, now - before)


def _read(read: Callable[[], float]) -> float:
    """A counter's value; a counter that fails reads as NaN (the trace leaves it out)."""
    try:
        return float(read())
    except Exception:
        return float("nan")
