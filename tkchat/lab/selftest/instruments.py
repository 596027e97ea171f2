"""The window's process: what measures the pipeline from inside, as raw figures.

No Tk here. :class:`TimedPipeline` times every call into the pipeline three ways; the
:class:`TokenMeter` notes every token the model gives, whoever iterates the stream. Neither
judges anything: the figures go to the grader (:mod:`.protocol`), which does.

**Time waiting for a core is not the pipeline's.** A call's time from call to return counts
against the pipeline — a ``sleep`` holds the event loop exactly as long as work does — except
the part the main thread spent *runnable but not running*, waiting for a core that other
programs held. Linux says how long, per thread (``/proc/self/task/<tid>/schedstat``: time on
a core, time waiting for one). A call may also wait on another thread of the window that
waits for a core: for the GIL, held by a worker the machine has just preempted, or in
``Thread.start``, which returns only once the new thread has had its first turn. So what the
other threads waited for a core during the call is taken off too (at most the time the call
itself spent waiting). On a system without these files the wall time counts whole.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from tkchat.conversation import Sampling
from tkchat.generate.backend import (
    Backend,
    GenerationRequest,
    PromptProgress,
    TokenStream,
    WrappedBackend,
)
from tkchat.generate.factory import LlamaOptions, ScriptedOptions, make_backend
from tkchat.generate.faults import FaultInjector, ModelDied
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.lab.selftest.protocol import ModelRun, PipelineCall, Probed, Reporter
from tkchat.stats import PROBE_MS
from tkchat.trace.core_waits import CoreWaits, available, others_waited
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.transcript.transcript import AnswerView

T = TypeVar("T")
# per-chunk-render's cost is quadratic in the answer: a 3,000-token scripted answer would keep
# one question frozen for minutes. 400 tokens show the same failure in seconds.
SCRIPTED_TOKENS = {"per-chunk-render": 400}
SCRIPTED_CHARS = 20_000  # about 3,700 tokens: 1.9 s at 2,000 tokens/s, long enough to act in


class SchedClock:
    """How long each thread of this process has waited for a core (ns), from Linux."""

    def __init__(self) -> None:
        self.available = available()
        self._local = threading.local()  # a CoreWaits a thread: each keeps its files open

    def waits(self) -> dict[int, int]:
        """Every thread's total wait for a core so far (empty where Linux does not say)."""
        if not self.available:
            return {}
        reader: CoreWaits | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = self._local.reader = CoreWaits()
        return reader.read()


def path_waited_ms(before: dict[int, int], after: dict[int, int], skip: set[int]) -> float:
    """The longest any one thread not in ``skip`` waited for a core between two readings, in
    ms. The error of question 2 goes from the model's thread (and a student's own threads) to
    the main one, one thread after another: what the slowest of them waited is time the
    machine, not the pipeline, kept the error off the screen. (The longest, not the sum:
    threads off the error's way wait side by side and would add up to more than the wall.)"""
    waited = [wait - before.get(tid, 0) for tid, wait in after.items() if tid not in skip]
    return max(0, *waited) / 1e6 if waited else 0.0


def held_ms(
    wall_ms: float, cpu_ms: float, before: dict[int, int], after: dict[int, int], me: int
) -> float:
    """How long a call held the event loop: its wall time, less the calling thread's wait
    for a core, less — out of the time it was neither working nor runnable — what the
    process's other threads waited for a core meanwhile: a call waits for the GIL while the
    thread holding it waits for a core (a thread born in the call, for its first turn)."""
    queued = (after.get(me, 0) - before.get(me, 0)) / 1e6
    waiting = max(0.0, wall_ms - cpu_ms - queued)
    others = others_waited(before, after, {me}) * 1000
    return max(cpu_ms, wall_ms - queued - min(waiting, max(0.0, others)))


class QueueProbe:
    """Main thread: the lag probe the grade reads — like the window's own (re-armed every
    :data:`~tkchat.stats.PROBE_MS`, noting how late each firing is), and besides, how long
    the main thread waited for a core since the last firing: the part of the lateness that
    other programs caused (at most all of it). ``schedule(ms, callback)`` is the toolkit's
    timer."""

    def __init__(self, schedule: Callable[[int, Callable[[], None]], object]) -> None:
        self.schedule = schedule
        self.samples: list[Probed] = []
        self.running = False
        self._fd: int | None = None
        self._queued = 0
        self._expected = 0.0

    def start(self) -> None:
        """Main thread (``thread-self`` is the thread that opens it)."""
        try:
            self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None
        self._queued = self._read()
        self.running = True
        self._arm()

    def _read(self) -> int:
        if self._fd is None:
            return 0
        try:
            return int(os.pread(self._fd, 128, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return self._queued

    def _arm(self) -> None:
        self._expected = time.perf_counter() + PROBE_MS / 1000
        self.schedule(PROBE_MS, self._fire)

    def _fire(self) -> None:
        now = time.perf_counter()
        lag = max(0.0, (now - self._expected) * 1000)
        queued, self._queued = self._queued, self._read()
        self.samples.append(Probed(now, lag, min(lag, (self._queued - queued) / 1e6)))
        if self.running:
            self._arm()


class GcClock:
    """How long the main thread has spent in the garbage collector so far (``total_s``):
    ``gc.callbacks`` say when each collection starts and stops, on the thread it runs on.
    A collection pauses whatever code allocated the object that triggered it; once in a
    while that is a pipeline's call, which did not ask for it. Runs on the thread that
    collects; :meth:`close` on the main thread."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self._began: float | None = None
        self._main = threading.main_thread().ident
        gc.callbacks.append(self._note)

    def _note(self, phase: str, _info: dict[str, int]) -> None:
        if threading.get_ident() != self._main:
            return
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            self.total_s += time.perf_counter() - self._began
            self._began = None

    def close(self) -> None:
        if self._note in gc.callbacks:
            gc.callbacks.remove(self._note)


class CallTimer:
    """Times calls four ways — from call to return, the calling thread's CPU time, how long
    it held the loop (see the module), and how much of it the garbage collector paused the
    main thread (:class:`GcClock`) — and keeps them in ``calls``. Calls come on the main
    thread — and on a worker, for a pipeline that wrongly ends its answer from one (those are
    marked: they do not hold the event loop)."""

    def __init__(self, clock: SchedClock, collector: GcClock | None = None) -> None:
        self.clock = clock
        self.collector = collector
        self.calls: list[PipelineCall] = []

    def run(self, method: str, call: Callable[[], T]) -> T:
        main = threading.current_thread() is threading.main_thread()
        before = self.clock.waits() if main else {}
        collected = self.collector.total_s if self.collector is not None else 0.0
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return call()
        finally:
            wall_ms = (time.perf_counter() - started) * 1000
            cpu_ms = (time.thread_time() - cpu) * 1000
            after = self.clock.waits() if main else {}
            held = held_ms(wall_ms, cpu_ms, before, after, threading.get_native_id())
            gc_ms = 0.0
            if main and self.collector is not None:
                gc_ms = min(cpu_ms, (self.collector.total_s - collected) * 1000)
            self.calls.append(PipelineCall(method, started, wall_ms, cpu_ms, held, main, gc_ms))


class TimedPipeline:
    """The window's pipeline, with every call into it timed (:class:`CallTimer`)."""

    def __init__(self, inner: Pipeline, timer: CallTimer) -> None:
        self.inner = inner
        self.name = inner.name
        self.broken = inner.broken
        self.coalesce = inner.coalesce
        self.timer = timer

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.timer.run("start", lambda: self.inner.start(view, request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.timer.run("show", lambda: self.inner.show(view, chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.timer.run("finish", lambda: self.inner.finish(view, stopped=stopped, error=error))


def own_schedstat() -> tuple[int, int] | None:
    """The calling thread's time on a core and waiting for one so far (ns), from Linux."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as stat:
            ran, queued = stat.read().split()[:2]
        return int(ran), int(queued)
    except (OSError, ValueError):
        return None


def pass_waits(
    wall_s: float,
    own_before: tuple[int, int] | None,
    own_after: tuple[int, int] | None,
    waits_before: dict[int, int],
    clock: SchedClock,
) -> tuple[float | None, float | None]:
    """Over a pass of ``wall_s`` seconds: how long the thread that read the model slept (it
    neither ran nor waited for a core), and how long every thread of the process waited for a
    core. (None, None) where Linux does not say."""
    if own_before is None or own_after is None or not clock.available:
        return None, None
    ran = (own_after[0] - own_before[0]) / 1e9
    own_queued = (own_after[1] - own_before[1]) / 1e9
    after = clock.waits()
    queued = sum(wait - waits_before.get(tid, 0) for tid, wait in after.items()) / 1e9
    return round(max(0.0, wall_s - ran - own_queued), 6), round(max(0.0, queued), 6)


class TokenMeter(WrappedBackend):
    """A backend wrapper that notes every token, whoever iterates the stream — tkchat's
    worker, a student's thread or a blocking loop on the main thread — so tokens/s, and
    whether the model went on after Stop, are measured at the backend for every pipeline
    and for the ``raw`` baseline. Each pass is reported when its loop is left."""

    def __init__(self, inner: Backend, reporter: Reporter, clock: SchedClock | None = None) -> None:
        super().__init__(inner)
        self.reporter = reporter
        self.clock = clock or SchedClock()
        self.runs = 0
        self.raw_next = False  # the next pass is the baseline (set by the command thread)
        self.open: dict[int, ModelRun] = {}  # passes still running (read by the report tick)
        # every thread's wait for a core when the injected fault fired (question 2): the
        # error's way to the screen starts there (:func:`path_waited_ms`)
        self.waits_at_death: dict[int, int] | None = None

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """The thread that iterates it."""
        self.runs += 1
        run = ModelRun(self.runs, self.raw_next, time.perf_counter())
        self.raw_next = False
        self.reporter.send("run_start", n=run.number, raw=run.raw, started=run.started)
        self.open[run.number] = run
        # The pass's wall time for pass_waits brackets its schedstat reads (clock first, then
        # the reads; the reads, then the clock): a preemption next to a read is then in the
        # wall time as well as in the waits, never in the waits alone (which took 3 ms of
        # five 10 ms sleeps off "slept" with two CPU hogs running).
        bracket_from = time.perf_counter()
        own_before, waits_before = own_schedstat(), self.clock.waits()
        tokens = self.inner.stream(request, cancel)
        try:
            while True:
                try:
                    piece = next(tokens)
                except StopIteration as end:
                    return end.value or "stop"
                except ModelDied:
                    self.waits_at_death = self.clock.waits()
                    raise
                if not isinstance(piece, PromptProgress):
                    run.times.append(time.perf_counter())
                yield piece
        finally:
            tokens.close()
            run.closed = time.perf_counter()
            self.open.pop(run.number, None)
            own_after = own_schedstat()
            slept, queued = pass_waits(
                time.perf_counter() - bracket_from, own_before, own_after, waits_before, self.clock
            )
            self.reporter.send(
                "run",
                n=run.number,
                raw=run.raw,
                started=run.started,
                times=[round(at, 6) for at in run.times],
                closed=run.closed,
                cancelled=cancel.is_set(),  # Stop reached it (else it ran to its end)
                slept=slept,
                queued=queued,
            )


def selftest_backend(
    mode: str, backend_kind: str, model: str | None, rate: float, tokens: int | None = None
) -> tuple[FaultInjector, Sampling]:
    """The backend every window's self-test asks (wrapped so question 2 can kill it), and
    the sampling of its answers. ``tokens``: the answers' length limit (a flood)."""
    # scripted: the answer is ``tokens`` long (the text repeated: a flood), and no longer
    scripted = backend_kind == "scripted"
    inner = make_backend(
        ScriptedOptions(rate=rate, tokens=tokens) if scripted else LlamaOptions(model)
    )
    sampling = Sampling(max_tokens=tokens or 400, seed=7)  # about 3 s with the bundled model
    if isinstance(inner, ScriptedBackend):
        inner.text = long_answer(SCRIPTED_CHARS)
        sampling = Sampling(max_tokens=tokens or SCRIPTED_TOKENS.get(mode, 0), seed=7)
    return FaultInjector(inner), sampling
