"""The window's process: what it tells the grader, and what the grader may ask of it.

Toolkit-free: the Tk child (:mod:`.child`) and the Qt child (:mod:`.qt_child`) each start a
:class:`WindowReport` and :class:`ChildCommands`, both on threads of their own. The report
reads the window as every lab tool does (:class:`~tkchat.lab.window.LabWindow`): plain
attributes the window's handlers leave behind (never a widget: only the main
thread touches those) and sends what is new every :data:`TICK_S` — from its own thread, so
that a main thread stuck in the pipeline does not stop it: the text a blocking loop pushes
onto the screen is seen as it comes. A time in a line is the time the handler noted, not the
report's, so the report's own delay changes no figure.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tkchat.conversation import Message, Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.faults import FaultInjector
from tkchat.lab.selftest.instruments import TokenMeter, path_waited_ms
from tkchat.lab.selftest.protocol import PipelineCall, Point, Probed, Reporter
from tkchat.stats import LagSample
from tkchat.threads import own_thread
from tkchat.trace.sampler import LoopSampler, Sample
from tkchat.trace.whose import add_whose, whose_each_late
from tkchat.transport.channel import EventChannel

if TYPE_CHECKING:
    from tkchat.lab.window import LabWindow

# Long answers, from the bundled model too: every question needs one to act in.
PROMPT = "Write a long explanation, with code, of why a chat window can freeze."


@dataclass
class Sources:
    """What the child measures besides the window's own attributes (main thread writes)."""

    inputs: dict[str, list[float]] = field(default_factory=dict)  # scroll, key, stop: times
    stop_chars: list[int] = field(default_factory=list)  # the answer's length at each Stop
    calls: list[PipelineCall] = field(default_factory=list)
    tk_calls: Callable[[], tuple[int, dict[str, str] | None]] = lambda: (0, None)
    raised: list[list[str]] = field(default_factory=list)  # lists that grow: sentences
    points: dict[str, Point] = field(default_factory=dict)  # where to click, kept up to date
    probe: list[Probed] = field(default_factory=list)  # the grade's own lag probe


TICK_S = 0.02


def note_inputs(window: LabWindow, sources: Sources) -> None:
    """Main thread: from now on, when the window handled each of the driver's scrolls, keys
    and Stops (:data:`~tkchat.lab.window.INPUTS`), and the answer's length at each Stop."""
    for kind in ("scroll", "key", "stop"):
        sources.inputs.setdefault(kind, [])

    def note(kind: str) -> None:
        if kind == "stop":
            answers = window.answers
            sources.stop_chars.append(len(answers[-1].text) if answers else 0)
        sources.inputs[kind].append(time.perf_counter())

    window.watch_inputs(note)


def publish_points(window: LabWindow, sources: Sources) -> None:
    """Main thread: where the driver's clicks go, once the window is shown — again and
    again, since its layout may still move (its size applied late, a banner shown)."""
    points = window.points()
    if points:
        sources.points.update(points)


class WindowReport:
    """Sends what is new, every :data:`TICK_S`, from a thread of its own (:meth:`start`)."""

    def __init__(
        self,
        window: LabWindow,
        meter: TokenMeter,
        faults: FaultInjector,
        sources: Sources,
        out: Reporter,
    ) -> None:
        self.window = window
        self.meter = meter
        self.faults = faults
        self.sources = sources
        self.out = out
        self._sent: dict[str, int] = {}
        self._answers: tuple[list[int], bool] = ([], False)
        self._points: dict[str, Point] = {}
        self._died: float | None = None
        self._tk = 0
        self._rows: list[list[float]] = []
        self._lock = threading.Lock()  # the report's thread, and the main thread's last tick

    def start(self, closing: threading.Event) -> None:
        own_thread(self._run, args=(closing,), name="tkchat-status").start()

    def _run(self, closing: threading.Event) -> None:
        while not closing.wait(TICK_S):
            self.tick()

    def _new(self, name: str, items: Sequence[object]) -> list[object]:
        """The items of ``items`` not sent yet under ``name``."""
        done = self._sent.get(name, 0)
        self._sent[name] = len(items)
        return list(items[done:])

    def tick(self) -> None:
        with self._lock:
            self._tick()

    def _tick(self) -> None:
        window, out = self.window, self.out
        points = dict(self.sources.points)
        if window.model_ready and points and points != self._points:
            self._points = points  # the first time: ready; later: the window's layout moved
            out.send("ready", **{k: list(v) for k, v in points.items()})
        # The answers first, their finals sent before them: a final is in ``finished`` before
        # its answer closes (``LabWindow.finished``), so every answer this reading sees closed
        # has its final in the list read next, and the grader, reading the lines in order,
        # has the final before it sees the answer closed. (Sent after it, a final handled with
        # the ping of question 2 in one tick came a line too late: the grader, taking the
        # closed answer for its end, read no final and graded "error shown ∞ ms".)
        answers = ([len(a.text) for a in window.answers], window.answer is not None)
        self._finals()
        if answers != self._answers:
            self._answers = answers
            out.send("answers", chars=answers[0], open=answers[1])
        self._inputs()
        self._shown()
        lag = self._new("lag", self.sources.probe)
        if lag:
            rows = [[s.at, round(s.lag_ms, 3), round(s.queued_ms, 3)] for s in lag]  # type: ignore[attr-defined]
            out.send("lag", s=rows)
        calls = self._new("calls", self.sources.calls)
        if calls:
            out.send("calls", c=[call.row() for call in calls])  # type: ignore[attr-defined]
        self._faults()
        self._running()

    def _shown(self) -> None:
        """When text reached the screen since the last tick, in every answer (the Tk
        window's transcript notes each insert; a window without it sends nothing)."""
        instruments = self.window.instruments
        if instruments is None:
            return
        times: list[float] = []
        for index in range(len(self.window.answers)):
            arrivals = instruments.answer_times(index).arrivals
            done = self._sent.get(f"shown-{index}", 0)
            new = list(arrivals[done:])  # (one read: the main thread appends meanwhile)
            self._sent[f"shown-{index}"] = done + len(new)
            times += [at for at, _chars in new]
        if times:
            self.out.send("shown", t=sorted(times))

    def _running(self) -> None:
        """The passes of the model loop still open, as their tokens come."""
        rows = [
            [run.number, len(run.times), run.times[-1]]
            for run in list(self.meter.open.values())
            if run.times
        ]
        if rows and rows != self._rows:
            self._rows = rows
            self.out.send("running", r=rows)

    def _inputs(self) -> None:
        kinds = {"ping": self.window.ping_times, **self.sources.inputs}
        for what, times in kinds.items():
            new = self._new(what, times)
            chars = self._new("stop-chars", self.sources.stop_chars) if what == "stop" else []
            for index, at in enumerate(new):
                extra = {"chars": chars[index]} if index < len(chars) else {}
                self.out.send("input", what=what, t=at, **extra)

    def _finals(self) -> None:
        for final in self._new("finals", self.window.finished):
            fields: dict[str, object]
            if isinstance(final, Error):
                fields = {"end": "error", "message": self.window.last_error or final.message}
                fields.update(self._path_waited())
            else:
                assert isinstance(final, Done)
                fields = {"end": "done", "reason": final.reason}
            self.out.send("final", t=self.window.final_handled_at, **fields)

    def _path_waited(self) -> dict[str, float]:
        """For the error of an injected death: how long the slowest thread on its way to the
        screen waited for a core since (the main thread's wait is the probe's; this thread's
        is its own). Read a report tick after the error was shown: at most :data:`TICK_S` of
        waiting too many."""
        before, self.meter.waits_at_death = self.meter.waits_at_death, None
        if before is None:
            return {}
        skip = {threading.main_thread().native_id or 0, threading.get_native_id()}
        return {"path_queued_ms": round(path_waited_ms(before, self.meter.clock.waits(), skip), 3)}

    def _faults(self) -> None:
        if self.faults.died_at is not None and self.faults.died_at != self._died:
            self._died = self.faults.died_at
            self.out.send("died", t=self._died)
        count, first = self.sources.tk_calls()
        if count != self._tk:
            self._tk = count
            self.out.send("tk", count=count, first=first)
        for index, sentences in enumerate(self.sources.raised):
            for text in self._new(f"raised-{index}", sentences):
                self.out.send("raised", text=text)


# A probe firing this late is attributed by the sampler: two of its samples (5 ms) at least.
LATE_MS = 10.0
MOST_LATE = 2000  # late firings sent per question, at most (the latest)
TOP_FUNCTIONS = 8


class QuestionWitness:
    """The main-thread sampler's account of one question at a time: of the time the window
    was late, whose it was — the pipeline's (and in which of its functions), tkchat's,
    the toolkit's redisplay, other programs'. The grader's ``question`` … ``answered KEY``
    come on the command thread; the sampler records meanwhile on its own thread, and the
    probe's firings are the grade's own (:class:`~.instruments.QueueProbe`). With no
    sampler (the Qt window) every question's line says it saw nothing."""

    def __init__(
        self, sampler: LoopSampler | None, probe: list[Probed], out: Reporter, toolkit: str = "Tk"
    ) -> None:
        self.sampler = sampler
        self.probe = probe
        self.out = out
        self.toolkit = toolkit  # whose redisplay the sampler's "tk" time is
        self._since = time.perf_counter()

    def begin(self) -> None:
        if self.sampler is not None:
            self.sampler.start_recording()
        self._since = time.perf_counter()

    def end(self, key: str) -> None:
        """Command thread: stop recording, and send the question's ``whose`` line
        (:mod:`.protocol`) from a thread of its own — the next command (``arm``: the answer
        about to start must die) is not to wait while the samples are added up. The grader
        waits for the line before it asks the next question."""
        sampler = self.sampler
        samples = sampler.stop_recording() if sampler is not None else []
        sampled = sampler is not None and sampler.running  # (False: nothing could be seen)
        span = (self._since, time.perf_counter())
        own_thread(self._send, args=(key, samples, span, sampled), name="tkchat-trace-sum").start()

    def _send(
        self, key: str, samples: list[Sample], span: tuple[float, float], sampled: bool
    ) -> None:
        since, now = span
        lags = [LagSample(p.at, p.lag_ms) for p in list(self.probe) if since < p.at <= now]
        rows: list[list[object]] = []
        parts = []
        functions: dict[str, float] = {}
        for lag, split in whose_each_late(samples, lags, LATE_MS):
            parts.append(split.whose)
            held = split.functions
            top = max(held, key=lambda name: held[name]) if held else ""
            figures = (split.whose.pipeline, split.pipeline_wall, split.pipeline_ran)
            rows.append([lag.at, round(lag.lag_ms, 2), *(round(ms, 2) for ms in figures), top])
            for name, ms in held.items():
                functions[name] = functions.get(name, 0.0) + ms
        total = add_whose(parts)
        self.out.send(
            "whose",
            q=key,
            start=since,
            end=now,
            sampled=sampled,
            toolkit=self.toolkit,
            parts={name: round(ms, 2) for name, ms in total.__dict__.items()},
            functions=[
                [name, round(ms, 2)]
                for name, ms in sorted(functions.items(), key=lambda item: -item[1])
            ][:TOP_FUNCTIONS],
            late=rows[-MOST_LATE:],
        )


class ChildCommands:
    """The grader's commands, read from stdin on a thread of the window's process."""

    def __init__(self, meter: TokenMeter, faults: FaultInjector, sampling: Sampling) -> None:
        self.meter = meter
        self.faults = faults
        self.sampling = sampling
        self.closing = threading.Event()  # the window's timer closes it
        self.interrupt_requested = False
        self.witness: QuestionWitness | None = None  # the window's sampler, where it has one

    def start(self, controller: GenerationController) -> None:
        own_thread(self._read, args=(controller,), name="tkchat-stdin").start()

    def _read(self, controller: GenerationController) -> None:
        for line in sys.stdin:
            word, *rest = line.split() or [""]
            if word == "raw":
                self._raw(controller, int(rest[0]) if rest else 0)
            elif word == "arm":
                self.faults.arm(after_tokens=int(rest[0]))
            elif word == "interrupt":
                self.interrupt_requested = True
                ident = threading.main_thread().ident
                if ident is not None:
                    signal.pthread_kill(ident, signal.SIGINT)  # wakes a sleep or a lock too
            elif word in ("question", "answered") and self.witness is not None:
                self._witness(word, rest)
            elif word == "close":
                break
        self.closing.set()  # "close", or the grader has gone (end of file)

    def _witness(self, word: str, rest: list[str]) -> None:
        assert self.witness is not None
        if word == "question":
            self.witness.begin()
        else:
            self.witness.end(rest[0] if rest else "")

    def _raw(self, controller: GenerationController, tokens: int) -> None:
        """The model loop with no window reading its events: the baseline (this thread)."""
        limit = min(filter(None, (tokens, self.sampling.max_tokens)), default=0)
        sampling = Sampling(max_tokens=limit, seed=self.sampling.seed)
        request = GenerationRequest((Message("user", PROMPT),), sampling)
        self.meter.raw_next = True
        worker = controller.new_worker(request, EventChannel(), gen=0)
        worker.start()
        worker.join()


def report_fd(number: int) -> Reporter:
    """The report pipe the grader passed (inherited by number), made blocking."""
    os.set_blocking(number, True)
    return Reporter(number)
