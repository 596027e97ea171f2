"""The benchmark's targets, applied to one pipeline, against the same run's baselines.

- **lag p99**: the lag the window's process is answerable for — less the time its main
  thread waited for a core other programs held — within twice the lag of the model running
  alone in the same window (and at least ``tkchat bench``'s floor: 16 ms for a scripted
  flood, 2 ms for a model). Over it, the late probes are attributed: FAIL if the lag the
  pipeline's own calls caused is over the bound too, BUSY if not.
- **lag max / long tasks**: how long each call held the event loop — its work, and its
  waiting too where the method waits as a habit (a ``sleep`` in every ``show`` blocks the
  loop as much as work does), never the time it waited for a core
  (:mod:`.instruments`, :func:`~.attribution.charged_ms`), never the garbage collector's
  pauses (measured in the call, and taken off). A method fails when one call *worked* over
  the bound — once is a long task the class can see (a whole-answer render every tenth
  tick) — or when its calls held the loop over it *waiting* at least twice, and in one call
  in ten (the sleep in every ``show``); a rare wait is noted, not held against it (a thread
  the machine preempted). The reason says whether they worked or waited.
- **tokens/s**: at least :data:`TOKENS_RATIO_MIN` of the model alone's, measured in the same
  run; under it, FAIL if the streamed answers' time was mostly spent inside the pipeline's
  calls (a model loop in ``start``), or if the thread that reads the model slept through
  each token's extra time while no thread of the window waited for a core (a worker that
  sleeps per token: the machine was not slow, the pipeline was); BUSY otherwise.
- **the second witness**: where the window's main-thread sampler saw the pipeline's code hold
  the loop far longer than its calls did (its work done in a callback it scheduled), the lag
  is attributed on the sampler's account, and its long holds outside the calls count
  against the lag max and the long tasks as the calls' own would (:mod:`.attribution`).
- **text waits at most a frame for the screen**: from the moment the model gave a token to
  the moment the window next put text on screen, less the time the event loop was late
  meanwhile (that is the lag's to judge), 90 % of the tokens wait within a frame (the pump's
  16 ms tick) plus the lag allowed in the same run. A window that shows text only every so
  often — a loop stepped by a slow timer — keeps its lag low and its answer in bursts: it
  fails here, and only here.
- **Tk from the main thread only**, **nothing raised**: counted, not timed.
- **the window's figures agree with its heartbeat seen from outside**: every silence of the
  heartbeat the grader saw (while the grader itself was not stalled) must show in the lag the
  window reported; and every wait of the X server's pings for the window's answer
  (:mod:`tkchat.lab.xwitness`, outside the window's process) over :data:`X_SILENCE_S` must
  show in its lag and its heartbeat. A window whose figures were patched to look smooth, or
  whose heartbeat and reports were forged from inside its process, fails here.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from tkchat.lab.bench.figures import FLOOD_LAG_P99_MS, LAG_MAX_MS, LAG_P99_FLOOR_MS
from tkchat.lab.selftest.attribution import (
    Span,
    attribute,
    charged_ms,
    free_ms,
    late_spans,
    merged,
    spans_of,
    waiters,
    witnessed,
    work_ms,
)
from tkchat.lab.selftest.protocol import PipelineCall, Probed, Whose
from tkchat.lab.selftest.verdict import (
    BUSY,
    FAIL,
    INSIDE_MIN,
    LIMIT_MS,
    PASS,
    Check,
    Translate,
    percent,
    top_function,
    witness_notes,
)
from tkchat.lab.xwitness import OutsideSeen
from tkchat.stats import LONG_TASK_MS, percentile

# The model's speed with the window, against the same run's model alone. ``tkchat bench``
# asks 0.95 of a quiet machine; the grade must hold with both cores busy, where two passes of
# the same loop differ by more than that.
TOKENS_RATIO_MIN = 0.8
# A model slowed by the thread that reads it sleeping (a sleep per token, a lock held), not
# by the machine: at least this share of each token's extra time asleep, beyond anything the
# machine could have caused (:func:`_slept_share`).
SLEPT_MIN = 0.5
BASELINE_MIN_SAMPLES = 20
# The X server's witness: a window that took five times the 100 ms target to answer a ping,
# beyond the X server's own delay, has a main loop that stood still — its reports must say so.
X_SILENCE_S = 5 * LIMIT_MS / 1000
# Text waits for the screen: this share of the tokens within the bound (a tick's worth of
# tokens waits most; a few unlucky ones behind a late tick are the lag's business).
TEXT_WAIT_PERCENTILE = 90


@dataclass
class Measured:
    """What the grader gathered for the targets."""

    idle: list[Probed]  # lag samples while nothing streamed
    baseline: list[Probed]  # lag samples while the model ran with no window
    streaming: list[Probed]  # lag samples while questions 1 and 3 streamed
    raw_tokens_per_s: float | None  # the model loop with no window
    tokens_per_s: float | None  # the same loop while the window showed its answers
    flood: bool  # scripted backend: the bench's floor for a flood
    calls: list[PipelineCall] = field(default_factory=list)
    streamed: list[tuple[float, float]] = field(default_factory=list)  # answers' token spans
    tk_calls: int = 0  # calls into Tk from threads other than the main one
    first_tk_call: dict[str, str] | None = None  # thread, call, where
    raised: list[str] = field(default_factory=list)  # sentences: what escaped the pipeline
    lag_all: list[Probed] = field(default_factory=list)  # every probe firing reported
    gaps: list[tuple[float, float]] = field(default_factory=list)  # heartbeat silences, outside
    own_stalls: list[tuple[float, float]] = field(default_factory=list)  # the grader's own
    whose: list[Whose] = field(default_factory=list)  # the sampler's, of the streamed questions
    baseline_whose: list[Whose] = field(default_factory=list)  # ... of the baseline passes
    # Seconds per token, over the passes (None: Linux did not say): the thread that read the
    # model asleep (neither running nor waiting for a core), in the graded answers and in the
    # model alone; and every thread of the window's process waiting for a core.
    slept_per_token_s: float | None = None
    raw_slept_per_token_s: float | None = None
    queued_per_token_s: float | None = None
    outside: OutsideSeen | None = None  # the X server's witness (None: not asked)
    # The streamed answers' tokens (how many the model gave), and for each one shown, when
    # the model gave it and when the window next put text on screen (:func:`text_waits`).
    text_tokens: int = 0
    text_waits: list[tuple[float, float]] = field(default_factory=list)


def p99(samples: Sequence[Probed]) -> float | None:
    return percentile([s.lag_ms for s in samples], 99)


def own_p99(samples: Sequence[Probed]) -> float | None:
    """The p99 of the lateness the window's process is answerable for (less the time its
    main thread waited for a core other programs held)."""
    return percentile([s.own_ms for s in samples], 99)


def lag_bound(m: Measured) -> tuple[float, float | None]:
    """The lag p99 allowed, and the baseline it came from: twice the lag while the model ran
    with no window to read it (else while idle) — all of it, the machine's waits included,
    so that the bound grows with the machine's load, while what is held to it is the
    window's own lag, without them. What the pipeline's own code held the loop for while
    nothing streamed (a timer of its own: the sampler saw it) is the pipeline's, not the
    machine's: it is taken out of the baseline, or the pipeline would widen its own bound."""
    baseline = without_pipeline(m.baseline, m.baseline_whose)
    base = p99(baseline) if len(baseline) >= BASELINE_MIN_SAMPLES else p99(m.idle)
    floor = FLOOD_LAG_P99_MS if m.flood else LAG_P99_FLOOR_MS
    return max(floor, 2 * (base or 0.0)), base


def without_pipeline(samples: Sequence[Probed], accounts: Sequence[Whose]) -> list[Probed]:
    """``samples`` with each late firing less the ms the sampler saw the pipeline's code
    hold the loop in it (firings matched by time)."""
    held = {x.at: x.pipeline_ms for whose in accounts for x in whose.late}
    return [Probed(s.at, max(0.0, s.lag_ms - held.get(s.at, 0.0)), s.queued_ms) for s in samples]


def target_checks(t: Translate, m: Measured) -> list[Check]:
    spans = spans_of(m.calls)
    account = merged(m.whose)
    return [
        _lag_p99(t, m, spans, account),
        _held(t, m, "lag_max", LAG_MAX_MS, account),
        _held(t, m, "long_tasks", LONG_TASK_MS, account),
        _tokens(t, m, spans),
        _text_wait(t, m),
        _tk_thread(t, m),
        _raised(t, m),
        _figures(t, m),
    ]


def _lag_p99(
    t: Translate, m: Measured, spans: Sequence[Span], account: Whose | None = None
) -> Check:
    """The lateness the window's process is answerable for decides (the machine's part, the
    main thread waiting for a core, is left out); over the bound, the lag the pipeline itself
    caused — each probe's lateness, but no more of it than its calls held the loop (or, where
    the sampler saw its work hidden from them, its code) — says whether it was the
    pipeline's."""
    spans, witnesses = witnessed(account, spans)
    hidden = witnesses is not None and witnesses.hidden
    bound, _base = lag_bound(m)
    figures: dict[str, float | int | None] = {"bound_ms": round(bound, 2)}
    value, own = p99(m.streaming), own_p99(m.streaming)
    if value is None or own is None:
        return Check("lag_p99", FAIL, t("selftest.unmeasured"), figures, [], None)
    notes: list[str] = []
    verdict = PASS
    if value > bound:
        notes.append(t("selftest.note.lag_own", ms=f"{own:.2f}"))
    if own > bound:
        caused = [
            min(s.lag_ms, 1000 * attribute(s.at - s.lag_ms / 1000, s.at, spans).inside_s)
            for s in m.streaming
        ]
        mine = percentile(caused, 99) or 0.0
        figures["caused_p99_ms"] = round(mine, 2)
        verdict = FAIL if mine > bound else BUSY
        notes.append(t(f"selftest.note.lag_{verdict}", ms=f"{mine:.2f}"))
        if hidden and witnesses is not None and account is not None:
            notes += witness_notes(t, account, witnesses)
    why = t("selftest.why.lag_p99") if verdict == FAIL else None
    if hidden and verdict == FAIL:
        why = t("selftest.why.hidden", function=top_function(account))
    return Check("lag_p99", verdict, t("selftest.ms", ms=f"{value:.2f}"), figures, notes, why)


def _held(t: Translate, m: Measured, key: str, bound: float, account: Whose | None = None) -> Check:
    check = _held_in_calls(t, m, key, bound)
    if account is not None and check.verdict == PASS:
        _held_outside_calls(t, check, account, spans_of(m.calls), bound)
    return check


def _held_outside_calls(
    t: Translate, check: Check, account: Whose, spans: Sequence[Span], bound: float
) -> None:
    """Where the sampler saw the pipeline's work hidden from its calls: its code's long
    holds of the loop outside them (each late firing's, less what the calls held of it)
    fail the check as the calls' own would — at least twice, not once by bad luck."""
    _spans, witnesses = witnessed(account, spans)
    if witnesses is None or not witnesses.hidden:
        return
    outside = [
        (
            x,
            x.pipeline_ms
            - min(x.lag_ms, 1000 * attribute(x.at - x.lag_ms / 1000, x.at, spans).inside_s),
        )
        for x in account.late
    ]
    over = [(x, ms) for x, ms in outside if ms > bound]
    if len(over) < 2:
        return
    longest, ms = max(over, key=lambda item: item[1])
    function = longest.function or top_function(account)
    check.verdict = FAIL
    check.notes.append(
        t(
            "selftest.note.sampled_long",
            bound=f"{bound:g}",
            count=len(over),
            function=function,
            ms=f"{ms:.0f}",
        )
    )
    check.why = t("selftest.why.hidden", function=function)


def _held_in_calls(t: Translate, m: Measured, key: str, bound: float) -> Check:
    calls = [call for call in m.calls if call.main]
    if not calls:
        return Check(key, FAIL, t("selftest.unmeasured"), {"bound_ms": bound}, [], None)
    waiting = waiters(calls)
    worst = max(calls, key=lambda call: call.held_ms)
    over = [call for call in calls if charged_ms(call, waiting) > bound]
    worked = {call.method for call in over if work_ms(call) > bound}  # once is enough
    failing = [
        method
        for method in sorted({call.method for call in over})
        if method in worked
        or _often([c for c in over if c.method == method], [c for c in calls if c.method == method])
    ]
    notes: list[str] = []
    rare = [call for call in over if call.method not in failing]
    if rare:
        notes.append(t("selftest.note.rare", count=len(rare), bound=f"{bound:g}"))
    collected = [
        c for c in calls if c.gc_ms and charged_ms(c, waiting) <= bound < c.gc_ms + c.held_ms
    ]
    if collected:
        notes.append(t("selftest.note.collected", count=len(collected), bound=f"{bound:g}"))
    unlucky = sum(1 for c in calls if c.held_ms > bound and charged_ms(c, waiting) <= bound)
    if unlucky:
        notes.append(t("selftest.note.unlucky", count=unlucky, bound=f"{bound:g}"))
    verdict, why = PASS, None
    if failing:
        verdict = FAIL
        why = (
            t("selftest.why.waited", method=failing[0])
            if failing[0] in waiting
            else t(f"selftest.why.{key}")
        )
    window = [s.lag_ms for s in m.streaming]
    detail = t(
        "selftest.held" if key == "lag_max" else "selftest.held_count",
        count=len(over),
        method=worst.method,
        held=f"{worst.held_ms:.2f}",
        cpu=f"{worst.cpu_ms:.2f}",
        wait=f"{max(0.0, worst.held_ms - worst.cpu_ms):.2f}",
        queued=f"{max(0.0, worst.wall_ms - worst.held_ms):.2f}",
        window=f"{max(window):.1f}" if window else "-",
        long=sum(1 for lag in window if lag > LONG_TASK_MS),
    )
    return Check(key, verdict, detail, {"bound_ms": bound}, notes, why)


def _often(over: Sequence[PipelineCall], calls: Sequence[PipelineCall]) -> bool:
    """A method that held the loop over the bound waiting as a habit — in at least two
    calls, and one in ten — not once by bad luck (a worker preempted while it held the
    GIL)."""
    return len(over) >= 2 and 10 * len(over) >= len(calls)


def _tokens(t: Translate, m: Measured, spans: Sequence[Span]) -> Check:
    figures: dict[str, float | int | None] = {"ratio_min": TOKENS_RATIO_MIN}
    if not m.tokens_per_s or not m.raw_tokens_per_s:
        return Check("tokens", FAIL, t("selftest.unmeasured"), figures)
    ratio = m.tokens_per_s / m.raw_tokens_per_s
    detail = t(
        "selftest.tokens_figure",
        ratio=f"{ratio:.3f}",
        app=f"{m.tokens_per_s:.0f}",
        raw=f"{m.raw_tokens_per_s:.0f}",
    )
    notes: list[str] = []
    verdict = PASS
    why = None
    if ratio < TOKENS_RATIO_MIN:
        inside = sum(attribute(start, end, spans).inside_s for start, end in m.streamed)
        share = inside / max(1e-9, sum(end - start for start, end in m.streamed))
        verdict = FAIL if share >= INSIDE_MIN else BUSY
        notes.append(t(f"selftest.note.tokens_{verdict}", share=percent(share)))
        why = t("selftest.why.tokens") if verdict == FAIL else None
        slept = _slept_share(m)
        if verdict == BUSY and slept is not None:
            if slept >= SLEPT_MIN:  # not the machine: the note that said so goes
                verdict, why, notes = FAIL, t("selftest.why.tokens_slept"), []
            notes.append(t("selftest.note.tokens_slept", share=percent(slept)))
    return Check("tokens", verdict, detail, figures, notes, why)


def _slept_share(m: Measured) -> float | None:
    """Of the time each token took beyond the model alone's, the share the thread reading
    the model spent asleep — neither running nor waiting for a core — beyond what it slept
    per token with the model alone, less every second any thread of the window waited for a
    core meanwhile (a thread the machine preempted while it held the GIL makes the reader
    sleep too: the machine's, so it is taken off). A throttled worker (a sleep per token)
    sleeps nearly all of it; a busy machine makes threads wait for a core instead."""
    slept, raw_slept, queued = m.slept_per_token_s, m.raw_slept_per_token_s, m.queued_per_token_s
    if slept is None or raw_slept is None or queued is None:
        return None
    if not m.tokens_per_s or not m.raw_tokens_per_s or m.tokens_per_s >= m.raw_tokens_per_s:
        return None
    extra = 1 / m.tokens_per_s - 1 / m.raw_tokens_per_s
    return max(0.0, min(1.0, (slept - raw_slept - queued) / extra))


def text_waits(tokens: Sequence[float], shown: Sequence[float]) -> list[tuple[float, float]]:
    """Each token (when the model gave it) with the first time text reached the screen at or
    after it (both sorted). Tokens after the last text shown are left out: Stop dropped them,
    or nothing would have shown them."""
    found: list[tuple[float, float]] = []
    for at in tokens:
        i = bisect.bisect_left(shown, at)
        if i < len(shown):
            found.append((at, shown[i]))
    return found


def text_bound(m: Measured) -> float:
    """How long a token may wait for the screen with the loop free: a frame (the tick that
    drains it), plus the lag allowed in this run (:func:`lag_bound`)."""
    return LAG_MAX_MS + lag_bound(m)[0]


def _text_wait(t: Translate, m: Measured) -> Check:
    """Of each token's wait for the screen, the part the event loop was free (the probe saw
    it on time): a window that shows text only now and then fails, however smooth its lag."""
    bound = text_bound(m)
    figures: dict[str, float | int | None] = {"bound_ms": round(bound, 2)}
    if not m.text_tokens:
        return Check("text_wait", FAIL, t("selftest.unmeasured"), figures)
    if not m.text_waits:
        detail = t("selftest.text_never", tokens=m.text_tokens)
        return Check("text_wait", FAIL, detail, figures, [], t("selftest.why.text_never"))
    late = late_spans(m.lag_all)
    waits = [(shown - given) * 1000 for given, shown in m.text_waits]
    free = [free_ms(given, shown, late) for given, shown in m.text_waits]
    value = percentile(waits, TEXT_WAIT_PERCENTILE) or 0.0
    own = percentile(free, TEXT_WAIT_PERCENTILE) or 0.0
    figures.update(p90_ms=round(value, 1), free_p90_ms=round(own, 1), tokens=len(waits))
    detail = t("selftest.text_wait", ms=f"{value:.1f}", free=f"{own:.1f}", tokens=len(waits))
    if own <= bound:
        return Check("text_wait", PASS, detail, figures)
    lag = p99(m.streaming)
    if lag is not None and lag > lag_bound(m)[0]:
        # The window was late past its bound meanwhile (the machine, or the lag checks'
        # business): the threads that carry the text waited for cores as well. Not judged.
        notes = [t("selftest.note.text_busy", ms=f"{lag:.1f}")]
        return Check("text_wait", BUSY, detail, figures, notes)
    return Check("text_wait", FAIL, detail, figures, [], t("selftest.why.text_wait"))


def _tk_thread(t: Translate, m: Measured) -> Check:
    if m.first_tk_call is None or not m.tk_calls:
        return Check("tk_thread", PASS, t("selftest.tk_none"))
    detail = t("selftest.tk_calls", count=m.tk_calls, **m.first_tk_call)
    return Check("tk_thread", FAIL, detail, {}, [], t("selftest.why.tk_thread"))


def _raised(t: Translate, m: Measured) -> Check:
    if not m.raised:
        return Check("raised", PASS, t("selftest.raised_none"), {"count": 0})
    return Check(
        "raised", FAIL, m.raised[0], {"count": len(m.raised)}, [], t("selftest.why.raised")
    )


def _figures(t: Translate, m: Measured) -> Check:
    """Every silence seen from outside must show in the window's own figures: the
    heartbeat's in its lag, and the X server's in its lag and its heartbeat."""
    longest = max((end - start for start, end in m.gaps), default=0.0)
    for start, end in m.gaps:
        if any(a < end and b > start for a, b in m.own_stalls):
            continue  # the grader itself stood still then: this silence proves nothing
        reported = _reported_ms(m, start, end)
        if reported < 500 * (end - start) - 50:
            detail = t(
                "selftest.figures_disagree",
                ms=f"{(end - start) * 1000:.0f}",
                reported=f"{reported:.0f}",
            )
            return Check("figures", FAIL, detail, {}, [], t("selftest.why.figures"))
    detail = t("selftest.figures_agree", ms=f"{longest * 1000:.0f}", share=percent(1.0))
    check = Check("figures", PASS, detail, {"silence_ms": round(longest * 1000, 1)})
    return _outside(t, m, check)


def _reported_ms(m: Measured, start: float, end: float) -> float:
    """The most lag the window reported from ``start`` to a second after ``end`` (its probe
    fires, late, once the loop is back)."""
    return max((s.lag_ms for s in m.lag_all if start <= s.at <= end + 1.0), default=0.0)


def _outside(t: Translate, m: Measured, check: Check) -> Check:
    """The X server's witness (:mod:`tkchat.lab.xwitness`): every time the window took
    :data:`X_SILENCE_S` or more to answer a ping, beyond the X server's own delay, its
    reports must show the main loop late as long (at least half of it, as the heartbeat's
    silences must) and its heartbeat stopped. Where they do not, the reports disagree with
    what the window did: FAIL, whatever else they say."""
    seen = m.outside
    if (
        seen is None
        or seen.status == "unavailable"
        or (seen.status == "watched" and not seen.answers)
    ):
        check.notes.append(t("selftest.note.x_none"))
        return check
    why = t("selftest.why.x_disagree")
    if seen.status == "refused":
        return Check("figures", FAIL, t("selftest.x_refused"), {}, [], why)
    silences = seen.silences(X_SILENCE_S)
    for start, end in silences:
        reported = _reported_ms(m, start, end)
        stopped = any(a < end and b > start for a, b in m.gaps)
        if reported < 500 * (end - start) - 50 or not stopped:
            beat = t("selftest.x_beat.stopped" if stopped else "selftest.x_beat.went_on")
            ms, said = f"{(end - start) * 1000:.0f}", f"{reported:.0f}"
            detail = t("selftest.x_disagree", ms=ms, reported=said, beat=beat)
            return Check("figures", FAIL, detail, {"x_silence_ms": float(ms)}, [], why)
    waits = [seen.answers[n] - echo for n, echo in seen.echoes.items() if n in seen.answers]
    longest = max(waits, default=0.0) * 1000
    check.figures["x_wait_ms"] = round(longest, 1)
    check.notes.append(t("selftest.note.x_agree", pings=len(waits), ms=f"{longest:.0f}"))
    return check
