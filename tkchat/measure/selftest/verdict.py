"""A check, and how a timing is judged: PASS, FAIL — or BUSY, when what was late fell
mostly outside the pipeline and the machine, not the student, must answer for it.

No Tk, no window: figures in, verdicts out. :mod:`.questions` and :mod:`.targets` make the
checks; :mod:`.report` prints them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tkchat.measure.selftest.attribution import (
    Lateness,
    Span,
    attribute,
    busiest_method,
    inside_share,
)
from tkchat.stats import percentile, rounded

Translate = Callable[..., str]
PASS, FAIL, BUSY = "pass", "fail", "busy"
QUESTIONS = ("q1", "q2", "q3", "q4")
LIMIT_MS = 100.0  # RAIL's "respond within 100 ms"; Nielsen's "feels instant"
# A late thing is the pipeline's when at least this share of its lateness fell inside the
# pipeline's calls; below it, the lateness was mostly the machine's (or Tk's own drawing).
INSIDE_MIN = 0.5


@dataclass
class Check:
    """One line of the grade. ``key``: q1-q4 (the questions) or a target: lag_p99,
    lag_max, long_tasks, tokens, tk_thread, raised, figures."""

    key: str
    verdict: str  # PASS, FAIL or BUSY
    detail: str  # the figure that decided it, in words
    figures: dict[str, float | int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. what the time limit had to do
    why: str | None = None  # for a FAIL: what usually causes it, in words

    @property
    def passed(self) -> bool:
        return self.verdict == PASS


def percent(share: float) -> str:
    return f"{100 * share:.0f}"


def judge_lateness(t: Translate, late: Sequence[Lateness], notes: list[str]) -> str:
    """FAIL when the lateness fell mostly inside the pipeline's calls, BUSY when mostly
    outside; says which, as a note, either way."""
    share = inside_share(late)
    method = busiest_method(late)
    if share >= INSIDE_MIN:
        notes.append(t("selftest.note.inside", share=percent(share), method=method or "-"))
        return FAIL
    notes.append(t("selftest.note.outside", share=percent(share)))
    return BUSY


def judge_inputs(
    t: Translate,
    inputs: Sequence[tuple[float, float | None]],
    spans: Sequence[Span],
    notes: list[str],
) -> str:
    """Inputs handled within 100 ms pass; one never handled fails; late ones are judged by
    where their wait fell."""
    late = [(sent, done) for sent, done in inputs if done is None or done - sent > LIMIT_MS / 1e3]
    if not inputs:
        return FAIL
    if not late:
        return PASS
    missing = sum(1 for _sent, done in late if done is None)
    if missing:
        notes.append(t("selftest.note.unhandled", missing=missing, events=len(inputs)))
        return FAIL
    return judge_lateness(
        t, [attribute(sent, done, spans) for sent, done in late if done is not None], notes
    )


def worst_ms(inputs: Sequence[tuple[float, float | None]]) -> str:
    """The slowest input's latency in words ("∞": one was never handled)."""
    if any(done is None for _sent, done in inputs):
        return "∞"
    finite = [(done - sent) * 1000 for sent, done in inputs if done is not None]
    return f"{max(finite):.1f}" if finite else "-"


def latency_figures(inputs: Sequence[tuple[float, float | None]]) -> dict[str, float | int | None]:
    finite = [(done - sent) * 1000 for sent, done in inputs if done is not None]
    return {
        "events": len(inputs),
        "handled": len(finite),
        "p50_ms": rounded(percentile(finite, 50), 1),
        "p99_ms": rounded(percentile(finite, 99), 1),
        "max_ms": rounded(max(finite) if finite else None, 1),
    }


def worse(*verdicts: str) -> str:
    """The worst of some verdicts: FAIL, then BUSY, then PASS."""
    return FAIL if FAIL in verdicts else BUSY if BUSY in verdicts else PASS


def overall(checks: Sequence[Check], *, complete: bool = True) -> str:
    """The grade: FAIL if anything failed (or not every question could be asked), else BUSY
    if anything could not be judged, else PASS."""
    verdicts = {check.verdict for check in checks}
    if FAIL in verdicts or not complete:
        return FAIL
    return BUSY if BUSY in verdicts else PASS
