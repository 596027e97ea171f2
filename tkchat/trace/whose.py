"""Whose time was it: an interval of the main thread's, split by whose it was.

For the fairness question of a grade (``tkchat selftest``): a late window is the student's
fault only for the time the student's pipeline held the loop, not for what Tk's redisplay or
another program took. From the sampler's samples (:mod:`tkchat.trace.sampler`), an interval
is split into the pipeline's time (its code on the main thread's stack), tkchat's own, Tk's
redisplay, other programs' (the main thread ready to run, another program on the core; or
asleep on the GIL while the thread holding it waited for a core), the window's other
threads' (the loop waiting for the GIL), idle, and what no sample covered;
the pipeline's part also by the function that held the loop, and with its waits for a core
and its time on a core said apart, so that a grade can charge it as it charges a timed call.

Tk-free, any thread.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from tkchat.stats import LONG_TASK_MS, LagSample
from tkchat.trace.culprit import group_of, overlap_s
from tkchat.trace.frames import PIPELINE
from tkchat.trace.sampler import CALM_INTERVAL_S, TK_WORK, WAIT, Sample

# What a sample without the main thread's clocks (the first after a calm moment) vouches
# for: the stack it saw, for about the interval the sampler slept, not its whole span. Woken
# 120 ms late on a loaded machine, the sampler found Pipeline.show() on the stack, and the
# 120 ms before it, when show() was not running (the timed calls said so), were charged to
# the pipeline as work hidden from them: a correct file FAILed. The rest is "unsampled".
CLOCKLESS_VOUCH_S = 2 * CALM_INTERVAL_S
# Where a thread sleeps because its code asked to (a kernel's wait channel names it): never
# the machine's time. Asleep on a lock (the GIL) or in poll (the X server's reply), it may be.
OWN_SLEEPS = ("nanosleep",)


@dataclass(frozen=True)
class WhoseTime:
    """An interval's time, split by whose it was (milliseconds)."""

    pipeline: float = 0.0  # inside a callback, with the pipeline under study on the stack
    app: float = 0.0  # inside a callback, tkchat's own code (or a test's) only
    tk: float = 0.0  # Tk's own work between callbacks: redisplay, layout
    # ready to run, but another program had the core; or asleep on the GIL inside a callback
    # while our thread holding it was kept off a core
    other_program: float = 0.0
    other_threads: float = 0.0  # the loop waited for the GIL another thread of ours held
    idle: float = 0.0  # the loop was free
    unsampled: float = 0.0  # no sample covered it (the sampler was late or not running)

    @property
    def main(self) -> str:
        """Whose share was largest: "pipeline", "app", "tk", "other_program",
        "other_threads" or "idle"."""
        shares = {
            "pipeline": self.pipeline,
            "app": self.app,
            "tk": self.tk,
            "other_program": self.other_program,
            "other_threads": self.other_threads,
            "idle": self.idle,
        }
        return max(shares, key=lambda name: shares[name])


@dataclass(frozen=True)
class Split:
    """An interval's :class:`WhoseTime`, and the pipeline's part of it in more detail (ms)."""

    whose: WhoseTime
    functions: dict[str, float] = field(default_factory=dict)  # ``pipeline``, by function
    pipeline_wall: float = 0.0  # its code on the stack, its waits for a core included
    pipeline_ran: float = 0.0  # of that, on a core (where the kernel does not say: all)


def whose_part(sample: Sample) -> str:
    """Whose a sample's time was (all but its wait for a core): "pipeline", "app", "tk",
    "other_program", "other_threads" or "idle"."""
    group = group_of(sample)[0]
    if group == "display":
        return "tk"  # Tk waiting on the X server is Tk's redisplay too
    if group in ("other", "gil", "idle"):
        return {"other": "other_program", "gil": "other_threads"}.get(group, "idle")
    if sample.between_callbacks:
        return "tk"
    return "pipeline" if any(ref.role == PIPELINE for ref in sample.stack) else "app"


def _held_off(sample: Sample) -> float:
    """Of a sample in which the main thread slept (``wait`` inside a callback; or ``tk``,
    inside a call into Tk or between callbacks, that it did not run in: back from Tcl, it
    waits for the GIL), seconds that were the machine's: while it slept on a lock (the GIL,
    most likely), the process's other threads waited that long for a core — the GIL's
    holder among them, kept off a core by another program; or in a call into Tk, asleep in
    ``poll`` for the X server's reply, the display server kept off a core as well. The timed
    calls of a graded pipeline excuse the same time
    (:func:`tkchat.lab.selftest.instruments.held_ms`): the two witnesses agree. (Between
    callbacks the time was Tk's otherwise, never the pipeline's: the grade is the same
    either way.) Not a sleep the code asked for (``time.sleep``: the kernel says where it
    slept, where it can), nor time it ran."""
    if sample.kind not in (WAIT, TK_WORK) or not sample.others_queued or sample.ran is None:
        return 0.0  # (a ``tk`` sample in which it did not run: asleep coming back from Tk)
    if sample.blocked is not None and any(asked in sample.blocked for asked in OWN_SLEEPS):
        return 0.0
    asleep = max(0.0, sample.span - (sample.ran or 0.0) - (sample.queued or 0.0))
    return min(asleep, sample.others_queued)


def pipeline_function(sample: Sample) -> str:
    """The pipeline's innermost function on a sample's stack: the one that held the loop."""
    inner = next((ref for ref in reversed(sample.stack) if ref.role == PIPELINE), None)
    return inner.function if inner is not None else ""


def whose_split(samples: Iterable[Sample], start: float, end: float) -> Split:
    """:func:`whose_time`, with the pipeline's part by the function that held the loop (its
    innermost frame: ``Pipeline.show``, or a callback it scheduled) and its waits for a core."""
    parts: dict[str, float] = defaultdict(float)
    functions: dict[str, float] = defaultdict(float)
    covered = wall = ran = 0.0
    for sample in samples:
        span = sample.span if sample.ran is not None else min(sample.span, CLOCKLESS_VOUCH_S)
        weight = overlap_s(sample, start, end, span)
        if weight <= 0:
            continue
        covered += weight
        scale = weight / span if span else 0.0
        queued = min(weight, (sample.queued or 0.0) * scale + _held_off(sample) * scale)
        parts["other_program"] += queued
        part = whose_part(sample)
        parts[part] += weight - queued
        if part == "pipeline":
            functions[pipeline_function(sample)] += (weight - queued) * 1000
            wall += weight
            ran += weight if sample.ran is None else min(weight, sample.ran * scale)
    unsampled = max(0.0, (end - start) - covered)
    whose = WhoseTime(
        **{name: value * 1000 for name, value in parts.items()}, unsampled=unsampled * 1000
    )
    return Split(whose, dict(functions), wall * 1000, ran * 1000)


def whose_time(samples: Iterable[Sample], start: float, end: float) -> WhoseTime:
    """Of ``start`` … ``end``, whose time was it? ``samples``: the sampler's
    (``LoopSampler.between(start, end)``, or a recording)."""
    return whose_split(samples, start, end).whose


def whose_each_late(
    samples: Sequence[Sample], lags: Iterable[LagSample], threshold_ms: float = LONG_TASK_MS
) -> Iterator[tuple[LagSample, Split]]:
    """For every probe firing later than ``threshold_ms``: :func:`whose_split` of its
    lateness (from when it was due to when it fired), from ``samples`` (in the order taken)."""
    ends = [sample.at for sample in samples]
    for lag in lags:
        if lag.lag_ms <= threshold_ms:
            continue
        start = lag.at - lag.lag_ms / 1000
        first, last = bisect.bisect_right(ends, start), bisect.bisect_left(ends, lag.at + 1.0)
        yield lag, whose_split(samples[first:last], start, lag.at)


def whose_late_time(
    samples: Sequence[Sample], lags: Iterable[LagSample], threshold_ms: float = LONG_TASK_MS
) -> WhoseTime:
    """:func:`whose_time`, summed over every probe firing later than ``threshold_ms`` of a
    run: of all the time the window was late, whose was it? ``tkchat selftest`` calls it
    with the sampler's recording and the probe's firings of the same question
    (``app.witness.sampler.start_recording()`` … ``stop_recording()``, beside the probe's)."""
    return add_whose(split.whose for _lag, split in whose_each_late(samples, lags, threshold_ms))


def add_whose(parts: Iterable[WhoseTime]) -> WhoseTime:
    total: dict[str, float] = defaultdict(float)
    for part in parts:
        for name, value in part.__dict__.items():
            total[name] += value
    return WhoseTime(**total)
