"""Whose lateness it was: inside the pipeline's calls, or outside them.

When the window is late — a lag probe fired late, a click waited — the main thread was busy
with something. If it was inside one of the pipeline's calls, holding the loop, that part of
the lateness is the pipeline's. The rest fell outside: other programs holding the cores, Tk's
own redisplay, the rest of the app. The grade fails a pipeline only on what fell inside.

The evidence is a list of :class:`Span`: intervals when the main thread was inside the
pipeline, each with the share of it the pipeline held (a call that waited for a core held
less than its wall time). They come from timing the pipeline's calls (:func:`spans_of`).

**A second witness.** The window's main-thread sampler (:mod:`tkchat.trace`) says of each
late firing how much of it the pipeline's code was on the stack (:class:`~.protocol.Whose`),
inside its calls or not — and :func:`sampled_spans` gives that the same shape. The two
agree for every pipeline that does its work in its calls. They disagree badly for one that
does its work elsewhere on the main thread, in a callback it scheduled (``after(0, …)``):
its calls are short, yet its code held the loop. There (:attr:`Witnesses.hidden`) the
grade judges on the sampler's account (:func:`witnessed`). Where the calls saw more than
the sampler — it missed samples, or counted a working call's wait for a core as other
programs' — the calls, exact about their own time, stay the evidence.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tkchat.lab.selftest.protocol import PipelineCall, Probed, SampledLate, Whose
from tkchat.stats import LONG_TASK_MS, PROBE_MS, median

WAIT_HABIT_MS = 16.0  # a frame: a typical call that waits longer than that waits on purpose
# The witnesses disagree badly when one saw the pipeline hold the loop for this share of
# the late time more than the other did, and a long task's worth at least.
DISAGREE_SHARE = 0.5
DISAGREE_MIN_MS = LONG_TASK_MS


@dataclass(frozen=True)
class Span:
    """The main thread inside the pipeline, from ``start`` to ``end`` (seconds)."""

    start: float
    end: float
    share: float = 1.0  # of that time, how much the pipeline held the loop (0..1)
    method: str = ""


@dataclass(frozen=True)
class Lateness:
    """One late thing — a probe, an input — and how much of its lateness fell inside."""

    start: float  # when it should have happened
    end: float  # when it did
    inside_s: float  # of that, seconds inside the pipeline's spans (share-weighted)
    by_method: tuple[tuple[str, float], ...] = ()

    @property
    def total_s(self) -> float:
        return max(0.0, self.end - self.start)


def waiters(calls: Iterable[PipelineCall]) -> set[str]:
    """The methods whose calls wait as a habit: the typical (median) call waits inside over
    :data:`WAIT_HABIT_MS` — a ``sleep`` in every ``show``, a ``join`` in every ``start``."""
    waits: dict[str, list[float]] = {}
    for c in calls:
        if c.main:
            waits.setdefault(c.method, []).append(max(0.0, c.held_ms - c.cpu_ms))
    return {method for method, found in waits.items() if (median(found) or 0.0) > WAIT_HABIT_MS}


def work_ms(call: PipelineCall) -> float:
    """The call's own work: its CPU time, less the garbage collector's pauses in it (a
    collection runs in whatever code allocated last; the call did not ask for it)."""
    return max(0.0, call.cpu_ms - call.gc_ms)


def charged_ms(call: PipelineCall, waiting: set[str]) -> float:
    """How long a call is held to have held the loop (the collector's pauses never count).

    - A call that *worked* over a frame (:data:`WAIT_HABIT_MS` of CPU): all of its wall
      time — a busy machine only stretched a call that was too long already (and a loop that
      never ends is interrupted only after the machine has stretched it).
    - A method that waits as a habit: all but the time it waited for a core.
    - Any other call: its work alone. A call that normally returns at once and, once, waited
      long was waiting on the machine — for a core, for the GIL held by a thread the machine
      had preempted, for the disk — not on anything the pipeline does.
    """
    if work_ms(call) > WAIT_HABIT_MS:
        return max(0.0, call.wall_ms - call.gc_ms)
    held = max(0.0, call.held_ms - call.gc_ms)
    return held if call.method in waiting else min(held, work_ms(call))


def spans_of(calls: Iterable[PipelineCall]) -> list[Span]:
    """The main thread's calls into the pipeline, as spans, in order, each with the share of
    it that is charged to the pipeline (:func:`charged_ms`)."""
    main = [c for c in calls if c.main]
    waiting = waiters(main)
    return sorted(
        (
            Span(
                c.at,
                c.end,
                min(1.0, charged_ms(c, waiting) / c.wall_ms) if c.wall_ms > 0 else 1.0,
                c.method,
            )
            for c in main
        ),
        key=lambda span: span.start,
    )


def attribute(start: float, end: float, spans: Sequence[Span]) -> Lateness:
    """How much of ``[start, end]`` fell inside ``spans`` (sorted by start, not overlapping:
    one main thread)."""
    inside = 0.0
    methods: dict[str, float] = {}
    first = max(0, bisect.bisect_left([s.end for s in spans], start))
    for span in spans[first:]:
        if span.start >= end:
            break
        overlap = (min(end, span.end) - max(start, span.start)) * span.share
        if overlap > 0:
            inside += overlap
            methods[span.method] = methods.get(span.method, 0.0) + overlap
    return Lateness(start, end, inside, tuple(sorted(methods.items())))


def outside_calls(probes: Sequence[Probed], calls: Iterable[PipelineCall]) -> list[Probed]:
    """The probe's firings, with only the waits for a core that are the machine's left as
    such: outside the pipeline's calls, or inside a call for the part of it not charged to
    the pipeline (:func:`charged_ms`). A core that a call which was working waited for would
    only have let it go on working: that waiting excuses nothing."""
    spans = spans_of(calls)
    starts = [span.start for span in spans]
    found: list[Probed] = []
    before = probes[0].at - PROBE_MS / 1000 if probes else 0.0
    for probe in probes:
        charged = 0.0
        for span in spans[max(0, bisect.bisect_left(starts, before) - 1) :]:
            if span.start >= probe.at:
                break
            charged += max(0.0, min(span.end, probe.at) - max(span.start, before)) * span.share
        length = probe.at - before
        free = 1.0 if length <= 0 else max(0.0, 1.0 - charged / length)
        found.append(Probed(probe.at, probe.lag_ms, probe.queued_ms * free))
        before = probe.at
    return found


def queued_ms(start: float, end: float, probes: Sequence[Probed]) -> float:
    """Of ``[start, end]``, how long the main thread waited for a core (the machine's part),
    from the probe's firings: each tells how long it waited since the one before."""
    total = 0.0
    first = bisect.bisect_left([p.at for p in probes], start)
    for i in range(max(1, first), len(probes)):
        before, probe = probes[i - 1].at, probes[i]
        if before >= end:
            break
        overlap = min(end, probe.at) - max(start, before)
        if overlap > 0 and probe.at > before:
            span_ms = (probe.at - before) * 1000
            total += min(probe.queued_ms, span_ms) * overlap * 1000 / span_ms
    return total


def late_spans(probes: Sequence[Probed]) -> list[Span]:
    """When the main thread was not free, as the lag probe saw it: each firing's lateness,
    from when it was due to when it ran (whatever held the loop: the pipeline, the app, Tk,
    another program)."""
    return [Span(p.at - p.lag_ms / 1000, p.at) for p in probes if p.lag_ms > 0]


def free_ms(start: float, end: float, late: Sequence[Span]) -> float:
    """Of ``[start, end]``, the ms the main thread was free — its event loop not late
    (``late``: :func:`late_spans`). What waited then waited for nothing the loop was doing."""
    return max(0.0, (end - start) - attribute(start, end, late).inside_s) * 1000


def busiest_method(late: Sequence[Lateness]) -> str | None:
    """The method most of the inside lateness fell in."""
    totals: dict[str, float] = {}
    for x in late:
        for method, seconds in x.by_method:
            totals[method] = totals.get(method, 0.0) + seconds
    return max(totals, key=lambda m: totals[m]) if totals else None


# -- the second witness: the main-thread sampler ------------------------------------------------


def sampled_spans(whose: Whose) -> list[Span]:
    """The sampler's account as spans: each late firing's lateness, the share of it the
    pipeline's code held the loop, and the function it was in."""
    return sorted(
        (
            Span(
                x.at - x.lag_ms / 1000,
                x.at,
                min(1.0, x.pipeline_ms / x.lag_ms) if x.lag_ms > 0 else 0.0,
                x.function,
            )
            for x in whose.late
        ),
        key=lambda span: span.start,
    )


@dataclass(frozen=True)
class Witnesses:
    """Of the late firings the sampler saw, how long the pipeline held the loop: by the
    sampler's account and by the timed calls' (ms)."""

    late_ms: float
    sampled_ms: float
    timed_ms: float
    others_ms: float = 0.0  # of the late time, what other programs held the core for

    def _apart(self, more: float, less: float) -> bool:
        # Against the late time the window itself spent: with both cores busy, other
        # programs' share of it grew, and a pipeline holding most of the rest hid behind it
        # ("BUSY" where it had held the loop 649 of the 698 ms that were not the machine's).
        own = max(0.0, self.late_ms - self.others_ms)
        return more - less >= max(DISAGREE_MIN_MS, DISAGREE_SHARE * own)

    @property
    def hidden(self) -> bool:
        """The sampler saw the pipeline's code hold the loop far longer than its calls did:
        its work ran outside them."""
        return self._apart(self.sampled_ms, self.timed_ms)

    @property
    def unseen(self) -> bool:
        """The calls held the loop far longer than the sampler saw."""
        return self._apart(self.timed_ms, self.sampled_ms)


def merged(accounts: Sequence[Whose]) -> Whose | None:
    """Several questions' accounts as one (None: none was sampled)."""
    sampled = [whose for whose in accounts if whose.sampled]
    if not sampled:
        return None
    late: list[SampledLate] = [x for whose in sampled for x in whose.late]
    functions: dict[str, float] = {}
    parts: dict[str, float] = {}
    for whose in sampled:
        for name, ms in whose.functions:
            functions[name] = functions.get(name, 0.0) + ms
        for name, ms in whose.parts.items():
            parts[name] = parts.get(name, 0.0) + ms
    first, last = sampled[0], sampled[-1]
    top = sorted(functions.items(), key=lambda item: -item[1])
    key = "+".join(whose.key for whose in sampled)
    return Whose(key, first.start, last.end, True, parts, top, late, first.toolkit)


def compare(whose: Whose, spans: Sequence[Span]) -> Witnesses:
    """The two witnesses, over the late firings the sampler saw."""
    timed = sum(
        min(x.lag_ms, 1000 * attribute(x.at - x.lag_ms / 1000, x.at, spans).inside_s)
        for x in whose.late
    )
    others = whose.parts.get("other_program", 0.0)
    return Witnesses(whose.late_ms, whose.pipeline_ms, timed, others)


def witnessed(
    whose: Whose | None, spans: Sequence[Span]
) -> tuple[Sequence[Span], Witnesses | None]:
    """The spans to judge on — the sampler's where it saw the pipeline's work hidden from
    the timed calls, else the calls' — and how the witnesses compared (None: no sampler)."""
    if whose is None or not whose.sampled:
        return spans, None
    witnesses = compare(whose, spans)
    return (sampled_spans(whose) if witnesses.hidden else spans), witnesses
