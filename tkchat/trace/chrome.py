"""A run as a Chrome trace-event file: what Perfetto (ui.perfetto.dev, or its offline build)
and ``chrome://tracing`` open, so a student can scroll and zoom through what each thread did.

Each run (one answer in one mode) is a process of its own, its clock starting at Send, so
two runs line up one above the other. Its lanes:

- **Tk main thread — callbacks**: every ``after`` callback the scheduler ran, exactly
  (``EventPump._tick``, the painter's slices, the lag probe…);
- **Tk main thread — who held it**: the sampler's view, every few milliseconds merged into
  slices named by the function held responsible (a binding such as Send's, which the
  scheduler never sees; Tk's own redisplay between callbacks), each with its stack;
- **Tk main thread — long tasks**: each firing of the lag probe more than 50 ms late, named
  by its culprit;
- **worker — generation**: reading the prompt, then each token;
- counters: the lag, the queue's depth, the chunks coalesced, the text on screen;
- flow arrows from a token's production to the callback that painted it (one per painting
  tick, from the oldest token it painted).

The format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
(``ph`` "X" complete slices, "C" counters, "s"/"f" flows, "M" names; ``ts`` in microseconds).
Tk-free, any thread.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkchat.stats import LONG_TASK_MS, LagSample
from tkchat.trace.culprit import LOOP, Culprit, describe, group_of
from tkchat.trace.ledger import Ran
from tkchat.trace.sampler import Sample

CALLBACKS, HELD, LONG, WORKER = 1, 2, 3, 4
LANES = {
    CALLBACKS: "Tk main thread — callbacks (from the scheduler)",
    HELD: "Tk main thread — who held it (sampled)",
    LONG: f"Tk main thread — long tasks (over {LONG_TASK_MS:.0f} ms late)",
    WORKER: "worker — generation",
}
MAX_TOKEN_SLICES = 10_000  # beyond this, tokens are drawn in groups (a 100,000-token flood)
STACK_FRAMES = 16  # frames of a stack written into a slice's arguments


@dataclass
class TraceRun:
    """Everything recorded during one run, on the ``perf_counter`` clock."""

    name: str
    origin: float  # time 0 of the run (Send)
    samples: Sequence[Sample] = ()
    callbacks: Sequence[Ran] = ()
    lags: Sequence[LagSample] = ()
    culprits: Sequence[Culprit] = ()  # the long tasks
    tokens: Sequence[float] = ()  # when the worker produced each token that carried text
    prompt: tuple[float, float] | None = None  # the worker started, its first token
    arrivals: Sequence[tuple[float, int]] = ()  # text reached the screen: (when, chars)
    counter_names: tuple[str, ...] = ()  # the samples' counters, in order
    notes: dict[str, Any] = field(default_factory=dict)


def _us(at: float, origin: float) -> float:
    return round((at - origin) * 1e6, 1)


class _Writer:
    def __init__(self, pid: int, run: TraceRun, lang: str) -> None:
        self.pid, self.run, self.lang = pid, run, lang
        self.events: list[dict[str, Any]] = []

    def slice(self, tid: int, name: str, start: float, end: float, **args: Any) -> None:
        """A slice, cut at the run's time 0 (nothing before Send is drawn). Its start and end
        are rounded each, not its length: a slice inside another stays inside it."""
        origin = self.run.origin
        if end <= origin:
            return
        ts, until = _us(max(start, origin), origin), _us(end, origin)
        event: dict[str, Any] = {
            "ph": "X",
            "pid": self.pid,
            "tid": tid,
            "name": name,
            "ts": ts,
            "dur": round(max(0.0, until - ts), 1),
        }
        if args:
            event["args"] = args
        self.events.append(event)

    def counter(self, name: str, at: float, value: float) -> None:
        if at < self.run.origin:
            return
        self.events.append(
            {
                "ph": "C",
                "pid": self.pid,
                "name": name,
                "ts": _us(at, self.run.origin),
                "args": {"value": value},
            }
        )

    def meta(self, what: str, tid: int | None = None, **args: Any) -> None:
        event: dict[str, Any] = {"ph": "M", "pid": self.pid, "name": what, "args": args}
        if tid is not None:
            event["tid"] = tid
        self.events.append(event)

    def names(self) -> None:
        self.meta("process_name", name=self.run.name)
        self.meta("process_sort_index", sort_index=self.pid)
        for tid, lane in LANES.items():
            self.meta("thread_name", tid, name=lane)
            self.meta("thread_sort_index", tid, sort_index=tid)


def _held_slices(w: _Writer) -> None:
    """The sampler's samples, consecutive ones with the same culprit merged into a slice."""
    run: list[Sample] = []
    ended = [-math.inf]  # where the last slice ended: the next begins there, not before

    def flush() -> None:
        if not run:
            return
        group, name = group_of(run[0])
        # A loop asleep (on a lock, in poll) is an idle loop unless a timer was due: only the
        # long-task lane, which knows, says what such a sleep was.
        if group not in ("idle", "gil", "display"):
            label = {
                "loop": f"{LOOP} redisplay after {name}" if name else f"{LOOP} redisplay",
                "other": "another program had the core",
            }.get(group, name or "?")
            kinds: dict[str, float] = {}
            for sample in run:
                kinds[sample.kind] = kinds.get(sample.kind, 0.0) + sample.span * 1000
            last = run[-1].stack
            w.slice(
                HELD,
                label,
                max(run[0].at - run[0].span, ended[0]),
                run[-1].at,
                kinds_ms={kind: round(ms, 1) for kind, ms in kinds.items()},
                samples=len(run),
                stack=[ref.where for ref in reversed(last[-STACK_FRAMES:])],
            )
        ended[0] = run[-1].at
        run.clear()

    for sample in w.run.samples:
        if run and group_of(run[-1]) != group_of(sample):
            flush()
        run.append(sample)
    flush()


def _worker(w: _Writer) -> list[tuple[float, int]]:
    """The worker's lane; returns each token slice's (end, flow id base) for the arrows."""
    run = w.run
    if run.prompt is not None:
        w.slice(WORKER, "reading the prompt", run.prompt[0], run.prompt[1])
    tokens = list(run.tokens)
    step = max(1, math.ceil(len(tokens) / MAX_TOKEN_SLICES))
    previous = run.prompt[1] if run.prompt is not None else (tokens[0] if tokens else 0.0)
    for first in range(0, len(tokens), step):
        group = tokens[first : first + step]
        name = f"token {first + 1}" if step == 1 else f"tokens {first + 1}–{first + len(group)}"
        w.slice(WORKER, name, min(previous, group[0]), group[-1])
        previous = group[-1]
    return [(at, index) for index, at in enumerate(tokens)]


def _flows(w: _Writer, tokens: list[tuple[float, int]]) -> None:
    """An arrow from the oldest token each painting callback showed, to that callback."""
    run = w.run
    starts = [ran.start for ran in run.callbacks]
    times = [at for at, _index in tokens]
    shown_until = -math.inf
    for flow_id, (at, _chars) in enumerate(run.arrivals, start=1):
        index = bisect.bisect_right(starts, at) - 1
        painted = bisect.bisect_right(times, at)
        oldest = bisect.bisect_right(times, shown_until)
        shown_until = at
        if index < 0 or run.callbacks[index].end < at or oldest >= painted:
            continue
        made = times[oldest]
        # ids are the whole file's: a run's arrows are numbered after its process's id
        flow = {
            "pid": w.pid,
            "cat": "paint",
            "name": "token → screen",
            "id": w.pid * 10**7 + flow_id,
        }
        w.events.append({**flow, "ph": "s", "tid": WORKER, "ts": _us(made, run.origin) - 0.5})
        w.events.append({**flow, "ph": "f", "bp": "e", "tid": CALLBACKS, "ts": _us(at, run.origin)})


def _counters(w: _Writer) -> None:
    run = w.run
    for lag in run.lags:
        w.counter("lag (ms)", lag.at, round(lag.lag_ms, 2))
    for name_index, name in enumerate(run.counter_names):
        last: float | None = None
        for sample in run.samples:
            if sample.counters is None or name_index >= len(sample.counters):
                continue
            value = sample.counters[name_index]
            if not math.isnan(value) and value != last:
                w.counter(name, sample.at, value)
                last = value
    for at, chars in run.arrivals:
        w.counter("text on screen (characters)", at, chars)


def run_events(pid: int, run: TraceRun, lang: str = "en") -> list[dict[str, Any]]:
    """One run's trace events, as process ``pid``."""
    w = _Writer(pid, run, lang)
    w.names()
    for ran in run.callbacks:
        w.slice(CALLBACKS, ran.function, ran.start, ran.end, timer=ran.timer)
    _held_slices(w)
    for culprit in run.culprits:
        w.slice(LONG, describe(culprit, lang), culprit.start, culprit.end, **culprit.as_json(lang))
    tokens = _worker(w)
    _flows(w, tokens)
    _counters(w)
    return w.events


def trace_document(runs: Iterable[TraceRun], lang: str = "en", **about: Any) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for pid, run in enumerate(runs, start=1):
        events += run_events(pid, run, lang)
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": about}


def write_trace(path: Path, runs: Iterable[TraceRun], lang: str = "en", **about: Any) -> Path:
    """Write ``runs`` to ``path`` as Chrome trace-event JSON; ``about`` goes to its
    ``otherData`` (the command, the machine)."""
    document = trace_document(runs, lang, **about)
    path.parent.mkdir(parents=True, exist_ok=True)
    # whole or not at all, and a link at ``path`` is replaced, never its target overwritten
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path
