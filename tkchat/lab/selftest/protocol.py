"""What the window under test and the grader say to each other, one JSON object a line.

The grader (:mod:`.runner`, :mod:`.driver`) never imports a student's file: the window and
the pipeline run in a child process (:mod:`.child`), which reports *raw figures* — when each
handler ran, every lag probe, every call into the pipeline, every token the model gave —
on a pipe of its own. The grader turns them into a grade, checked against what it measures
itself from outside: when it injected each input, and the window's heartbeat (a second pipe,
the watchdog's beats: :mod:`tkchat.ui.teaching.watchdog_link`).

Lines from the child (``k``: the kind; times are ``time.perf_counter()`` seconds, which on
Linux is ``CLOCK_MONOTONIC``, the same clock in every process of the machine)::

    problem   text                  the pipeline cannot be used (a sentence): not graded
    ready     ping, transcript, input, stop: [x, y]   the model is loaded, the window shown
                                                       (again whenever those move)
    window    id                    its top-level's X window (the grader's X witness pings it:
                                    :mod:`tkchat.lab.xwitness`)
    answers   chars: [n, ...], open: bool              the answers' lengths, when they change
    shown     t: [...]                                 text reached the screen (the transcript)
    input     what (ping|scroll|key|stop), t, chars    a handler ran (stop: the answer's length)
    final     end (done|error), reason, message, t     an answer's final event was handled
              path_queued_ms                           (an injected death's error: the
                                                       slowest thread on its way to the
                                                       screen waited this long for a core)
    lag       s: [[at, lag_ms, queued_ms], ...]        lag probe firings since the last line
    calls     c: [[method, at, wall, cpu, held, main], ...]   calls into the pipeline
    run_start n, raw, started                          a pass through the model loop began
    running   r: [[n, tokens, last], ...]              open passes, as their tokens come
    run       n, raw, started, times: [...], closed, cancelled
                                                       a pass ended (every token's time; its
                                                       cancel event set or not)
    died      t                                        the injected fault fired
    tk        count, first: {thread, call, where}      Tk calls from other threads, stopped
    raised    text                                     something escaped the pipeline
    whose     q, start, end, sampled, toolkit, parts: {pipeline, app, tk, other_program,
              other_threads, idle, unsampled}, functions: [[name, ms], ...],
              late: [[at, lag_ms, pipeline_ms, wall_ms, ran_ms, function], ...]
                                  the main-thread sampler's account of one question: of the
                                  time the window was late, whose it was (ms), the pipeline's
                                  part by function, and each late firing's pipeline part
    bye                                                the window has closed

Commands to the child, one word a line on its stdin: ``raw`` (run the model with no window,
for the baseline), ``arm N`` (the next answer dies after N tokens), ``interrupt`` (the main
thread is stuck: interrupt it), ``question`` and ``answered KEY`` (a question begins, ends:
the sampler records it), ``close``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from tkchat.threads import own_thread

Point = tuple[int, int]


class Reporter:
    """The child's side: writes report lines to ``fd``, from any thread (one lock). A grader
    that has gone away ends the child: nobody would read its figures."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        data = (json.dumps({"k": kind, **fields}, ensure_ascii=False) + "\n").encode()
        with self._lock:
            try:
                while data:
                    data = data[os.write(self.fd, data) :]
            except OSError:  # the grader is gone
                os._exit(3)


@dataclass(frozen=True)
class Probed:
    """One firing of the window's lag probe: when, how late, and how much of the time since
    the last firing the main thread spent waiting for a core (another program's, the
    machine's doing; 0 where Linux does not say)."""

    at: float
    lag_ms: float
    queued_ms: float = 0.0

    @property
    def own_ms(self) -> float:
        """The lateness the window's process is answerable for: all but the machine's."""
        return max(0.0, self.lag_ms - self.queued_ms)


@dataclass(frozen=True)
class PipelineCall:
    """One call from the window into the pipeline, timed in the window's process."""

    method: str  # start, show or finish
    at: float  # when it began
    wall_ms: float  # from call to return
    cpu_ms: float  # the calling thread's CPU time in it: the work it did
    held_ms: float  # wall minus the time spent waiting for a core: how long the call held it
    main: bool = True  # made on the main thread (it held the event loop)
    gc_ms: float = 0.0  # of its time, the garbage collector's pauses on the main thread

    @property
    def end(self) -> float:
        return self.at + self.wall_ms / 1000

    def row(self) -> list[Any]:
        return [
            self.method,
            self.at,
            self.wall_ms,
            self.cpu_ms,
            self.held_ms,
            self.main,
            self.gc_ms,
        ]


@dataclass(frozen=True)
class SampledLate:
    """One late firing of the probe, as the main-thread sampler saw it: how long of its
    lateness the pipeline's code was on the main thread's stack — less the time the thread
    waited for a core, with it, and on a core — and the function it was in the most."""

    at: float
    lag_ms: float
    pipeline_ms: float  # its code on the stack, less its waits for a core
    wall_ms: float = 0.0  # ... with them
    ran_ms: float = 0.0  # ... of which on a core: the work it did
    function: str = ""


@dataclass
class Whose:
    """The sampler's account of one question (a ``whose`` line): of the time the window was
    late, whose it was — ms by :class:`~tkchat.trace.whose.WhoseTime`'s fields."""

    key: str
    start: float
    end: float
    sampled: bool  # the sampler ran (else it saw nothing, and says nothing)
    parts: dict[str, float] = field(default_factory=dict)
    functions: list[tuple[str, float]] = field(default_factory=list)  # the pipeline's, by ms
    late: list[SampledLate] = field(default_factory=list)
    toolkit: str = "Tk"  # whose redisplay "tk" is

    @property
    def late_ms(self) -> float:
        return sum(x.lag_ms for x in self.late)

    @property
    def pipeline_ms(self) -> float:
        return sum(x.pipeline_ms for x in self.late)


def _whose(state: WindowState, line: dict[str, Any]) -> None:
    state.whose[line["q"]] = Whose(
        line["q"],
        line["start"],
        line["end"],
        bool(line["sampled"]),
        dict(line["parts"]),
        [(name, ms) for name, ms in line["functions"]],
        [SampledLate(*row) for row in line["late"]],
        str(line.get("toolkit", "Tk")),
    )


@dataclass
class ModelRun:
    """One pass through the model loop, as the backend saw it."""

    number: int
    raw: bool  # the baseline: the model with no window
    started: float
    times: list[float] = field(default_factory=list)  # when each token came out
    closed: float | None = None  # when the loop was left (None: still running)
    tokens: int = 0  # so far (a pass still running reports only this, and ``last``)
    last: float | None = None  # when its latest token came out
    # Over the pass (None where Linux does not say): how long the thread that read the model
    # neither ran nor waited for a core — it slept, or waited on a lock — and how long every
    # thread of the process waited for a core (what the machine took).
    slept_s: float | None = None
    queued_s: float | None = None
    cancelled: bool | None = None  # its cancel event was set when it ended (None: not said)

    @property
    def tokens_per_s(self) -> float | None:
        """As the worker computes it: (tokens - 1) / (last - first token)."""
        if len(self.times) < 2 or self.times[-1] <= self.times[0]:
            return None
        return (len(self.times) - 1) / (self.times[-1] - self.times[0])


@dataclass
class WindowState:
    """The grader's picture of the window, from the child's lines (appended by the reader
    thread; the driver reads). Nothing here came from the grader's own clock but ``seen``."""

    problem: str | None = None
    window: int | None = None  # the X window the window's process named as its own
    points: dict[str, Point] = field(default_factory=dict)
    answers: list[int] = field(default_factory=list)  # characters of each answer so far
    answer_open: bool = False
    opened: set[int] = field(default_factory=set)  # the answers seen streaming (open)
    inputs: dict[str, list[float]] = field(default_factory=dict)  # handler times by kind
    stop_chars: list[int] = field(default_factory=list)  # the answer's length at each Stop
    finals: list[dict[str, Any]] = field(default_factory=list)
    lag: list[Probed] = field(default_factory=list)
    shown: list[float] = field(default_factory=list)  # each time text reached the screen
    calls: list[PipelineCall] = field(default_factory=list)
    runs: list[ModelRun] = field(default_factory=list)
    died: list[float] = field(default_factory=list)
    tk_calls: int = 0
    first_tk_call: dict[str, str] | None = None
    raised: list[str] = field(default_factory=list)
    whose: dict[str, Whose] = field(default_factory=dict)  # by question: the sampler's account
    ended: bool = False  # the pipe closed: the child exited (or crashed)
    closed: bool = False  # it said goodbye first

    def times(self, what: str) -> list[float]:
        return self.inputs.setdefault(what, [])

    def take(self, line: dict[str, Any]) -> None:
        """The reader thread: one line from the child."""
        handler = _HANDLERS.get(str(line.get("k")))
        if handler is not None:
            handler(self, line)


def _input(state: WindowState, line: dict[str, Any]) -> None:
    state.times(line["what"]).append(line["t"])
    if line["what"] == "stop":
        state.stop_chars.append(line.get("chars", 0))


def _answers(state: WindowState, line: dict[str, Any]) -> None:
    state.answers = list(line["chars"])
    state.answer_open = bool(line["open"])
    if state.answer_open and state.answers:
        state.opened.add(len(state.answers) - 1)


def _tk(state: WindowState, line: dict[str, Any]) -> None:
    state.tk_calls = line["count"]
    state.first_tk_call = state.first_tk_call or line.get("first")


def _run_numbered(state: WindowState, number: int) -> ModelRun | None:
    for run in reversed(state.runs):
        if run.number == number:
            return run
    return None


def _running(state: WindowState, line: dict[str, Any]) -> None:
    for number, tokens, last in line["r"]:
        run = _run_numbered(state, number)
        if run is not None and run.closed is None:
            run.tokens, run.last = tokens, last


def _run(state: WindowState, line: dict[str, Any]) -> None:
    run = _run_numbered(state, line["n"])
    if run is None:
        run = ModelRun(line["n"], line["raw"], line["started"])
        state.runs.append(run)
    run.times = list(line["times"])
    run.tokens = len(run.times)
    run.last = run.times[-1] if run.times else None
    run.closed = line["closed"]
    run.slept_s, run.queued_s = line.get("slept"), line.get("queued")
    run.cancelled = line.get("cancelled")


_HANDLERS: dict[str, Callable[[WindowState, dict[str, Any]], None]] = {
    "problem": lambda s, x: setattr(s, "problem", x["text"]),
    "ready": lambda s, x: s.points.update({k: tuple(v) for k, v in x.items() if k != "k"}),
    "window": lambda s, x: setattr(s, "window", int(x["id"])),
    "answers": _answers,
    "input": _input,
    "final": lambda s, x: s.finals.append(x),
    "lag": lambda s, x: s.lag.extend(Probed(*sample) for sample in x["s"]),
    "shown": lambda s, x: s.shown.extend(x["t"]),
    "calls": lambda s, x: s.calls.extend(PipelineCall(*row) for row in x["c"]),
    "run_start": lambda s, x: s.runs.append(ModelRun(x["n"], x["raw"], x["started"])),
    "running": _running,
    "run": _run,
    "died": lambda s, x: s.died.append(x["t"]),
    "tk": _tk,
    "raised": lambda s, x: s.raised.append(x["text"]),
    "whose": _whose,
    "bye": lambda s, x: setattr(s, "closed", True),
}


def read_reports(stream: IO[bytes], state: WindowState) -> threading.Thread:
    """Start a thread that feeds ``state`` from the child's report pipe until it closes.
    A line that is not JSON (it cannot come from the reporter) is ignored."""

    def run() -> None:
        try:
            for raw in stream:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(line, dict):
                    state.take(line)
        finally:
            state.ended = True

    thread = own_thread(run, name="tkchat-grader-reports")
    thread.start()
    return thread


class Commands:
    """The grader's side of the child's stdin. Any thread."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self._lock = threading.Lock()

    def send(self, *words: object) -> bool:
        """False if the child is gone."""
        with self._lock:
            try:
                self.stream.write((" ".join(map(str, words)) + "\n").encode())
                self.stream.flush()
            except (OSError, ValueError):
                return False
        return True


def within(ready: Callable[[], bool], timeout: float, step: float = 0.005) -> bool:
    """Whether ``ready()`` became true within ``timeout`` seconds."""
    deadline = time.monotonic() + max(0.0, timeout)
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
