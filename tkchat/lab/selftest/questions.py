"""The four questions, judged: each :class:`~.driver.Question`'s raw figures become a
:class:`~.verdict.Check`.

1. While an answer streams, is a click on another button (Ping) handled within 100 ms?
2. When the model dies mid-answer, is the window usable again within 100 ms, with a clear
   message?
3. While a long answer streams, are scrolling and keystrokes handled within 100 ms?
4. Stop, pressed mid-answer: handled within 100 ms, no text after it, and the model loop
   left within about two tokens — counted at the backend, where the tokens come out, not
   on screen (a pipeline that only stops showing the text fails here).

A late input is the pipeline's fault only when its wait fell mostly inside the pipeline's
calls (:mod:`.attribution`); otherwise the question is BUSY, not FAIL. Where the window's
sampler saw the pipeline's code hold the loop outside its calls (a callback it scheduled),
the question is judged on the sampler's account instead, and says so; either way it says
whose the late time was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tkchat.lab.bench.figures import LAG_MAX_MS
from tkchat.lab.selftest.attribution import (
    Span,
    attribute,
    free_ms,
    late_spans,
    queued_ms,
    witnessed,
)
from tkchat.lab.selftest.driver import Question
from tkchat.lab.selftest.protocol import ModelRun, Probed, Whose
from tkchat.lab.selftest.verdict import (
    FAIL,
    LIMIT_MS,
    Check,
    Translate,
    judge_inputs,
    judge_late,
    latency_figures,
    top_function,
    witness_notes,
    worse,
    worst_ms,
)

STOP_TOKENS = 2  # "within about two token periods": tokens the model may give after Stop
# ... or, with the event loop free, within this long of Stop once its cancel reached the
# model: a frame for a cancel delivered at the next tick (an asyncio loop Tk steps every
# 16 ms hands it over there), and a frame for a timer's drift and the model's last token. At
# 2,000 scripted tokens a second a frame is 32 tokens; with a real model, about one.
STOP_FREE_MS = 2 * LAG_MAX_MS
# The reasons a late question gives, which a pipeline that hides its work outside its calls
# gets in the sampler's words instead.
LATE_WHYS = {"q1": "selftest.why.q1", "q3": "selftest.why.q3", "q4": "selftest.why.q4.late"}


def question_check(
    t: Translate,
    q: Question,
    spans: Sequence[Span],
    probes: Sequence[Probed] = (),
    whose: Whose | None = None,
) -> Check:
    """One question's check; ``whose``: the sampler's account of it, the second witness."""
    spans, witnesses = witnessed(whose, spans)
    if whose is not None and witnesses is not None:
        q = replace(q, notes=[*q.notes, *witness_notes(t, whose, witnesses)])
    check = _question(t, q, spans, probes)
    if witnesses is not None and witnesses.hidden and check.verdict == FAIL:
        late_why = LATE_WHYS.get(q.key)
        if late_why is not None and check.why == t(late_why):
            check.why = t("selftest.why.hidden", function=top_function(whose))
    return check


def _question(
    t: Translate, q: Question, spans: Sequence[Span], probes: Sequence[Probed] = ()
) -> Check:
    if q.key == "q2":
        return _model_dies(t, q, spans, probes)
    if q.key == "q4":
        return _stop(t, q, spans, probes)
    notes = list(q.notes)
    verdict = judge_inputs(t, q.inputs, spans, notes, probes)
    detail = t(f"selftest.detail.{q.key}", ms=worst_ms(q.inputs))
    why = t(f"selftest.why.{q.key}") if verdict == FAIL else None
    return Check(q.key, verdict, detail, latency_figures(q.inputs), notes, why)


def _model_dies(
    t: Translate, q: Question, spans: Sequence[Span], probes: Sequence[Probed]
) -> Check:
    notes = list(q.notes)
    died, final = q.extra.get("died"), q.extra.get("final")
    if died is None:
        return Check("q2", FAIL, t("selftest.detail.q2_never"), {}, notes, t("selftest.why.q2"))
    ended: float | None = final.get("t") if final is not None else None
    message = str(final.get("message") or "") if final is not None else ""
    clear = final is not None and final.get("end") == "error" and "stopped responding" in message
    shown_ms = None if ended is None else (ended - died) * 1000
    # the slowest thread on the error's way to the main one waited this long for a core
    path_ms = float(final.get("path_queued_ms") or 0.0) if final is not None else 0.0
    if shown_ms is not None and shown_ms > LIMIT_MS and path_ms > 0:
        notes.append(t("selftest.note.path_queued", ms=f"{min(path_ms, shown_ms):.1f}"))
    verdict = judge_inputs(t, q.inputs, spans, notes, probes) if q.inputs else FAIL
    if shown_ms is None or not clear:
        verdict = FAIL
    elif ended is not None and free_ms(died, ended, late_spans(probes)) - path_ms > LIMIT_MS:
        verdict = FAIL  # the loop was free, and the error waited: for the pipeline alone
    elif ended is not None and shown_ms - queued_ms(died, ended, probes) - path_ms > LIMIT_MS:
        late = [attribute(died, ended, spans)]
        verdict = worse(verdict, judge_late(t, late, LIMIT_MS, notes))
    click = worst_ms(q.inputs) if q.inputs else "∞"
    detail = t(
        "selftest.detail.q2",
        shown="∞" if shown_ms is None else f"{shown_ms:.1f}",
        click=click,
        message=t("selftest.message", message=message) if clear else t("selftest.no_message"),
    )
    figures = {
        "error_shown_ms": None if shown_ms is None else round(shown_ms, 1),
        "click_after_ms": None if click in ("∞", "-") else float(click),
    }
    why = t("selftest.why.q2") if verdict == FAIL else None
    return Check("q2", verdict, detail, figures, notes, why)


def after_stop(
    runs: Sequence[ModelRun], stop_at: float, counts: dict[int, int]
) -> tuple[int, float | None]:
    """Tokens the model gave after ``stop_at``, and when its last loop was left (None: one
    is still running). A pass still running has reported only how many tokens it has
    given: those since Stop are counted from ``counts`` (its count when Stop was seen)."""
    tokens = 0
    for run in runs:
        if run.closed is not None:
            tokens += sum(1 for at in run.times if at > stop_at)
        elif (run.last or 0) > stop_at:
            tokens += max(1, run.tokens - counts.get(run.number, 0))
    closed = [run.closed for run in runs if run.closed is not None]
    return tokens, None if len(closed) < len(runs) else max(closed, default=stop_at)


def _stop(t: Translate, q: Question, spans: Sequence[Span], probes: Sequence[Probed]) -> Check:
    notes = list(q.notes)
    (sent, handled), runs = q.inputs[0], list(q.extra.get("runs", []))
    verdict = judge_inputs(t, q.inputs, spans, notes, probes)
    figures: dict[str, float | int | None] = {
        "stop_ms": None if handled is None else round((handled - sent) * 1000, 1)
    }
    if handled is None:
        detail = t("selftest.detail.q4_never")
        return Check("q4", FAIL, detail, figures, notes, t("selftest.why.q4.late"))
    tokens, closed = after_stop(runs, handled, q.extra.get("counts_at_stop", {}))
    text = max(0, int(q.extra.get("chars_after") or 0) - int(q.extra.get("chars_at_stop") or 0))
    loop_ms = None if closed is None else (closed - handled) * 1000
    figures.update(text_after=text, tokens_after=tokens, loop_left_ms=_rounded(loop_ms))
    if runs and all(run.closed is not None and run.closed < sent for run in runs):
        notes.append(t("selftest.note.q4_ended_before"))
    why = t("selftest.why.q4.late") if verdict == FAIL else None
    if text > 0:
        verdict, why = FAIL, t("selftest.why.q4.text")
    if closed is None or tokens > STOP_TOKENS:
        verdict, why = _model_after_stop(t, runs, handled, closed, probes, verdict, why)
    detail = t(
        "selftest.detail.q4",
        ms=worst_ms(q.inputs),
        text=text,
        tokens=tokens,
        loop=t("selftest.never") if loop_ms is None else f"{max(0.0, loop_ms):.1f}",
    )
    return Check("q4", verdict, detail, figures, notes, why)


def _model_after_stop(
    t: Translate,
    runs: Sequence[ModelRun],
    handled: float,
    closed: float | None,
    probes: Sequence[Probed],
    verdict: str,
    why: str | None,
) -> tuple[str, str | None]:
    """The model gave tokens after Stop. Its cancel reached it (every pass that was open
    ended cancelled) within :data:`STOP_FREE_MS` of a free event loop: a cancel handed over
    at the next tick, as correct as one at once — the verdict stands. Reached it later: FAIL,
    Stop came late. Never reached it: FAIL, the model kept computing."""
    open_at_stop = [run for run in runs if run.closed is None or run.closed >= handled]
    reached = bool(open_at_stop) and all(run.cancelled for run in open_at_stop)
    if closed is None or not reached:
        return FAIL, t("selftest.why.q4.model")
    free = free_ms(handled, closed, late_spans(probes))
    if free <= STOP_FREE_MS:
        return verdict, why
    return FAIL, t("selftest.why.q4.model_late", ms=f"{free:.0f}")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
