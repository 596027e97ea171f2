"""Who held the loop: the samples of a late moment, summed into one culprit and a sentence.

A late probe firing says the loop was stuck from when the probe was due to when it ran. The
sampler's samples over that interval are grouped by the function held responsible (see
:func:`tkchat.trace.frames.blame_of`), Tk's own work between callbacks by what ran just before
it, and the heaviest group is the culprit: "4.0 s in GenerateInClickHandler.start →
ScriptedBackend.stream — the model ran on the main thread", "180 ms in Tk's redisplay after
Transcript.append".

Whose time an interval was — the pipeline's, tkchat's, Tk's redisplay, another program's —
is :mod:`tkchat.trace.whose`.

Tk-free, any thread.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tkchat.i18n import STRINGS
from tkchat.stats import LONG_TASK_MS, LagSample
from tkchat.trace.frames import (
    MODEL,
    FrameRef,
    between_callbacks,
    blame_of,
    callback_name,
)
from tkchat.trace.sampler import BUSY, IDLE, OTHER_PROGRAM, TK_WORK, Sample

K = TypeVar("K")
# Not a sample's kind but what idle-looking samples inside a late moment were: the loop could
# not go on because another thread of this program held the GIL.
GIL = "gil"
DISPLAY = "display"  # ... or: asleep in poll() inside Tk while a timer was due: X's reply
LOOP = "Tk"  # the culprit's function when Tk's own work between callbacks held the loop
TOP_STACKS = 3
MODEL_SHARE = 0.3  # the model ran on the main thread: its frames in this share of the time


@dataclass(frozen=True)
class Culprit:
    """What held the loop from ``start`` to ``end`` (perf_counter seconds)."""

    start: float
    end: float
    function: str  # "GenerateInClickHandler.start"; LOOP for Tk's own work; "" for none
    blame: FrameRef | None  # its frame (None for Tk's own work, another program, idle)
    innermost: FrameRef | None  # the innermost frame of its heaviest stack
    kind: str  # the kind of sample that took most of its time
    ms: float  # its time within the interval
    share: float  # of the interval's sampled time
    sampled: float = 1.0  # the share of the interval the samples covered (the rest: unseen)
    callback: str | None = None  # the function Tk called
    timer: str | None = None  # the scheduler's name for that callback, if a timer
    after: str | None = None  # Tk's own work: the function that ran just before it
    model: bool = False  # the generation stage was on its stack
    kinds: tuple[tuple[str, float], ...] = ()  # its time by kind (ms), largest first
    stacks: tuple[tuple[float, tuple[FrameRef, ...]], ...] = field(default=(), repr=False)

    @property
    def held_by(self) -> str:
        """The code to look at: the function blamed, or — for Tk's own work between
        callbacks — the function that ran just before it and left Tk that work."""
        return self.after or "" if self.function == LOOP else self.function

    @property
    def length_ms(self) -> float:
        return (self.end - self.start) * 1000

    def as_json(self, lang: str = "en") -> dict[str, object]:
        """For ``tkchat bench --json`` and the trace: names, places, kinds, the sentence."""
        return {
            "function": self.function,
            "held_by": self.held_by,
            "at": self.blame.where if self.blame else None,
            "innermost": self.innermost.where if self.innermost else None,
            "kind": self.kind,
            "callback": self.callback,
            "timer": self.timer,
            "after": self.after,
            "model": self.model,
            "share": round(self.share, 3),
            "sampled": round(self.sampled, 3),
            "ms": round(self.ms, 1),
            "kinds_ms": {kind: round(ms, 1) for kind, ms in self.kinds},
            "label": describe(self, lang),
        }


def overlap_s(sample: Sample, start: float, end: float, span: float | None = None) -> float:
    """Seconds of ``sample``'s span (or of the last ``span`` seconds of it) within
    ``start`` … ``end``."""
    span = sample.span if span is None else span
    return max(0.0, min(sample.at, end) - max(sample.at - span, start))


def group_of(sample: Sample) -> tuple[str, str]:
    """The group a sample's time goes to: the function blamed (even while another program
    had the core: that code still held the loop), or the loop's own state."""
    if sample.between_callbacks or (sample.kind == OTHER_PROGRAM and _in_loop_only(sample)):
        if sample.kind == OTHER_PROGRAM:
            return ("other", OTHER_PROGRAM)
        if sample.kind == TK_WORK:
            return ("loop", sample.after or "")
        if sample.others is not None and sample.others >= BUSY * sample.span > 0:
            return ("gil", GIL)  # the loop wanted to call Python; another thread had the GIL
        blocked = sample.blocked or ""
        if "futex" in blocked:
            # Asleep on a lock while a timer was due: Tk had the callback to run and waited
            # for the GIL to enter Python (an idle loop sleeps on one too — Tcl's notifier —
            # but an idle loop is not late).
            return ("gil", GIL)
        if "poll" in blocked or "select" in blocked:
            return ("display", DISPLAY)  # asleep in poll while a timer was due: the X server
        return ("idle", IDLE)
    blame = blame_of(sample.stack)
    return ("code", blame.function if blame else "")


def _in_loop_only(sample: Sample) -> bool:
    return between_callbacks(sample.stack)


def culprit_of(samples: Iterable[Sample], start: float, end: float) -> Culprit | None:
    """The culprit of ``start`` … ``end`` from ``samples`` (None if none overlaps it)."""
    groups: dict[tuple[str, str], list[tuple[float, Sample]]] = defaultdict(list)
    total = 0.0
    for sample in samples:
        weight = overlap_s(sample, start, end)
        if weight > 0:
            groups[group_of(sample)].append((weight, sample))
            total += weight
    if not groups:
        return None
    key, members = max(groups.items(), key=lambda item: sum(w for w, _s in item[1]))
    culprit = _summarise(key, members, start, end, total)
    return replace(culprit, sampled=min(1.0, total / (end - start)) if end > start else 1.0)


def _summarise(
    key: tuple[str, str],
    members: list[tuple[float, Sample]],
    start: float,
    end: float,
    total: float,
) -> Culprit:
    weight = sum(w for w, _s in members)
    kinds: dict[str, float] = defaultdict(float)
    stacks: dict[tuple[FrameRef, ...], float] = defaultdict(float)
    callbacks: dict[str, float] = defaultdict(float)
    timers: dict[str, float] = defaultdict(float)
    for w, sample in members:
        kinds[sample.kind] += w
        stacks[sample.stack] += w
        name = callback_name(sample.stack)
        if name is not None:
            callbacks[name] += w
        if sample.timer is not None:
            timers[sample.timer] += w
    heaviest = _top(stacks)[0][0]
    group, name = key
    blame = blame_of(heaviest) if group == "code" else None
    # Another program slowing the code down does not make it another program's fault: the
    # kind named is what the thread did when it ran.
    ran = [(kind, w) for kind, w in _top(kinds) if kind != OTHER_PROGRAM] or _top(kinds)
    model_time = sum(w for w, sample in members if any(r.role == MODEL for r in sample.stack))
    return Culprit(
        start=start,
        end=end,
        function=LOOP if group == "loop" else (name if group == "code" else ""),
        blame=blame,
        innermost=heaviest[-1] if heaviest and group == "code" else None,
        kind=group if group in (GIL, DISPLAY) else ran[0][0],
        ms=weight * 1000,
        share=weight / total if total else 0.0,
        callback=_top(callbacks)[0][0] if callbacks else None,
        timer=_top(timers)[0][0] if timers else None,
        after=(name or None) if group == "loop" else None,
        model=group == "code" and model_time >= MODEL_SHARE * weight,
        kinds=tuple((kind, seconds * 1000) for kind, seconds in _top(kinds)),
        stacks=tuple((w * 1000, stack) for stack, w in _top(stacks)[:TOP_STACKS]),
    )


def _top(weights: dict[K, float]) -> list[tuple[K, float]]:
    """Heaviest first."""
    return sorted(weights.items(), key=lambda item: -item[1])


def long_task_culprits(
    samples: Sequence[Sample], lags: Iterable[LagSample], threshold_ms: float = LONG_TASK_MS
) -> list[Culprit]:
    """A culprit for every probe firing more than ``threshold_ms`` late (the long tasks of a
    run), from that run's samples (in the order they were taken)."""
    ends = [sample.at for sample in samples]
    found = []
    for lag in lags:
        if lag.lag_ms <= threshold_ms:
            continue
        start = lag.at - lag.lag_ms / 1000
        first = bisect.bisect_right(ends, start)
        last = bisect.bisect_left(ends, lag.at + 1.0)  # a sample may end just after it
        culprit = culprit_of(samples[first:last], start, lag.at)
        if culprit is not None:
            found.append(culprit)
    return found


# -- the sentence ------------------------------------------------------------------------------


def length_text(ms: float, lang: str = "en") -> str:
    """ "180 ms", "4.0 s" (in ``lang``)."""
    strings = STRINGS[lang]
    if ms < 1000:
        return strings["culprit.ms"].format(ms=f"{ms:.0f}")
    return strings["culprit.s"].format(seconds=f"{ms / 1000:.1f}")


def chain(culprit: Culprit) -> str:
    """ "GenerateInClickHandler.start → ScriptedBackend.stream": the function blamed, then
    the innermost frame it was in (when that is another function)."""
    names = [culprit.function]
    inner = culprit.innermost
    if inner is not None and inner.function != culprit.function:
        names.append(inner.function)
    return " → ".join(names)


def why_key(culprit: Culprit) -> str:
    if culprit.model and culprit.kind != TK_WORK:
        return "model"
    return culprit.kind


def describe(culprit: Culprit, lang: str = "en") -> str:
    """The label a lag band carries: how long, in what, and why."""
    strings = STRINGS[lang]
    length = length_text(culprit.length_ms, lang)
    if culprit.function == LOOP:
        if culprit.after:
            return strings["culprit.label.loop"].format(length=length, after=culprit.after)
        return strings["culprit.label.loop_unknown"].format(length=length)
    if not culprit.function:
        other = {OTHER_PROGRAM: "other", GIL: "gil", DISPLAY: "display"}.get(culprit.kind, "idle")
        return strings[f"culprit.label.{other}"].format(length=length)
    why = strings[f"culprit.why.{why_key(culprit)}"]
    return strings["culprit.label"].format(length=length, chain=chain(culprit), why=why)


def labels(culprit: Culprit, lang: str = "en") -> list[str]:
    """The band's label, longest first, for a place that may not hold it all: the whole
    sentence, then without the why, then the function with the length, then the function's
    name alone (a lesson panel at projector size had room for no more: its bands said only
    "frozen 3.00 s", the culprit never named)."""
    whole = describe(culprit, lang)
    if culprit.function in ("", LOOP):
        return [whole]
    strings = STRINGS[lang]
    length = length_text(culprit.length_ms, lang)
    shorter = [whole]
    for named in (chain(culprit), culprit.function):
        text = strings["culprit.label.short"].format(length=length, chain=named)
        if text not in shorter:
            shorter.append(text)
    return [*shorter, culprit.function]


def stacks_text(culprit: Culprit, lang: str = "en") -> str:
    """What clicking a band shows: the sentence, what Tk called, the time by kind, and the
    heaviest stacks, innermost frame first, one ``file:line:function`` a line."""
    s = STRINGS[lang]
    lines = [describe(culprit, lang), ""]
    if culprit.callback is not None:
        called = culprit.callback
        if culprit.timer is not None:
            called += " — " + s["culprit.stacks.timer"].format(timer=culprit.timer)
        lines.append(s["culprit.stacks.callback"].format(callback=called))
    else:
        lines.append(s["culprit.stacks.none"])
    kinds = ", ".join(
        f"{s['culprit.kind.' + kind]} {length_text(ms, lang)}" for kind, ms in culprit.kinds
    )
    lines += [s["culprit.stacks.kinds"].format(kinds=kinds), ""]
    sampled = sum(ms for ms, _stack in culprit.stacks) or 1.0
    for ms, stack in culprit.stacks:
        share = f"{ms / max(culprit.ms, sampled) * 100:.0f} %"
        lines.append(s["culprit.stacks.stack"].format(ms=f"{ms:.0f}", share=share))
        lines += [f"    {ref.where}" for ref in reversed(stack)]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
