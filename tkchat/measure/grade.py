"""The grade ``tkchat selftest`` gives: the three questions and the benchmark's targets as
checks, and the report, printed in the student's language.

No Tk here: a check is figures and sentences. The targets are ``tkchat bench``'s
(:mod:`tkchat.measure.figures`), measured against this run's own baselines — idle lag before
the first question, and the same model loop with no window (``raw``) for tokens/s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tkchat.measure.figures import (
    FLOOD_LAG_P99_MS,
    LAG_MAX_MS,
    TOKENS_RATIO_MIN,
    lag_figures,
    lag_p99_bound,
)
from tkchat.stats import LagSample
from tkchat.ui.lag_probe import LONG_TASK_MS

Translate = Callable[..., str]
QUESTIONS = ("q1", "q2", "q3")


@dataclass
class Check:
    """One line of the grade. ``key``: q1, q2, q3 (the questions) or a target: lag_p99,
    lag_max, long_tasks, tokens, tk_thread, raised."""

    key: str
    passed: bool
    detail: str  # the figure that decided it, in words
    figures: dict[str, float | int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. what the time limit had to do


@dataclass(frozen=True)
class PipelineCall:
    """One call from the window into the pipeline."""

    method: str  # start, show or finish
    wall_ms: float  # from call to return
    cpu_ms: float  # the calling thread's CPU time in it: the work it did


@dataclass
class Measured:
    """What the driver gathered for the targets."""

    idle: list[LagSample]  # lag samples while nothing streamed
    streaming: list[LagSample]  # lag samples while questions 1 and 3 streamed
    raw_tokens_per_s: float | None  # the model loop with no window
    tokens_per_s: float | None  # the same loop while the window showed its answers
    flood: bool  # scripted backend: judged as ``tkchat bench`` judges a flood
    calls: list[PipelineCall] = field(default_factory=list)  # every call into the pipeline
    tk_calls: int = 0  # calls into Tk from threads other than the main one
    first_tk_call: dict[str, str] | None = None  # thread, call, where
    raised: list[str] = field(default_factory=list)  # sentences: what escaped the pipeline


def target_checks(t: Translate, m: Measured) -> list[Check]:
    """The benchmark's targets, applied to one pipeline."""
    lag = lag_figures(m.streaming)
    idle = lag_figures(m.idle)
    p99, worst, long_tasks = lag["lag_p99_ms"], lag["lag_max_ms"], lag["long_tasks"]
    bound = FLOOD_LAG_P99_MS if m.flood else lag_p99_bound(idle["lag_p99_ms"] or 0.0)
    unmeasured = t("selftest.unmeasured")
    busiest = max(m.calls, key=lambda call: call.cpu_ms, default=None)
    long_calls = sum(1 for call in m.calls if call.cpu_ms > LONG_TASK_MS)
    window_worst = "-" if worst is None else f"{worst:.2f}"
    checks = [
        Check(
            "lag_p99",
            p99 is not None and p99 <= bound,
            unmeasured if p99 is None else t("selftest.ms", ms=f"{p99:.2f}"),
            {"bound_ms": round(bound, 2)},
        ),
        # The bench's lag max and long tasks, attributed: the work the pipeline's own calls
        # did on the main thread (CPU time), which another program's load does not inflate.
        # The probe's figures, whatever held the main thread, are given beside them.
        Check(
            "lag_max",
            busiest is not None and busiest.cpu_ms <= LAG_MAX_MS,
            unmeasured
            if busiest is None
            else t(
                "selftest.busiest_call",
                method=busiest.method,
                cpu=f"{busiest.cpu_ms:.2f}",
                wall=f"{busiest.wall_ms:.2f}",
                window=window_worst,
            ),
        ),
        Check(
            "long_tasks",
            bool(m.calls) and long_calls == 0,
            t("selftest.long_calls", count=long_calls, window=long_tasks),
        ),
    ]
    ratio = None
    if m.tokens_per_s and m.raw_tokens_per_s:
        ratio = m.tokens_per_s / m.raw_tokens_per_s
    checks.append(
        Check(
            "tokens",
            ratio is not None and ratio >= TOKENS_RATIO_MIN,
            unmeasured
            if ratio is None
            else t(
                "selftest.tokens_figure",
                ratio=f"{ratio:.3f}",
                app=f"{m.tokens_per_s:.0f}",
                raw=f"{m.raw_tokens_per_s:.0f}",
            ),
        )
    )
    checks.append(
        Check(
            "tk_thread",
            m.tk_calls == 0,
            t("selftest.tk_none")
            if m.first_tk_call is None
            else t("selftest.tk_calls", count=m.tk_calls, **m.first_tk_call),
        )
    )
    checks.append(
        Check(
            "raised",
            not m.raised,
            t("selftest.raised_none") if not m.raised else m.raised[0],
            {"count": len(m.raised)},
        )
    )
    return checks


def label(t: Translate, check: Check) -> str:
    """A check's name, with its bound."""
    if check.key == "lag_p99":
        return t("selftest.target.lag_p99", bound=f"{check.figures['bound_ms']:g}")
    if check.key == "lag_max":
        return t("selftest.target.lag_max", bound=f"{LAG_MAX_MS:g}")
    if check.key == "long_tasks":
        return t("selftest.target.long_tasks", threshold=f"{LONG_TASK_MS:g}")
    if check.key == "tokens":
        return t("selftest.target.tokens", ratio=f"{TOKENS_RATIO_MIN:g}")
    return t(f"selftest.{'question' if check.key in QUESTIONS else 'target'}.{check.key}")


def report(
    t: Translate,
    header: list[str],
    checks: list[Check],
    m: Measured | None,
    *,
    complete: bool = True,
) -> list[str]:
    """Every line ``tkchat selftest`` prints: what ran, each check with its figures and, for
    a failed one, why it usually fails; then the grade (a FAIL if not every question could
    be asked: ``complete`` False)."""
    lines = list(header)
    width = max(len(t("selftest.pass")), len(t("selftest.fail")))
    section: str | None = None
    for check in checks:
        kind = "questions" if check.key in QUESTIONS else "targets"
        if kind != section:
            section = kind
            if kind == "questions":
                lines.append(t("selftest.section.questions"))
            elif m is not None:
                idle = lag_figures(m.idle)["lag_p99_ms"]
                lines.append(
                    t(
                        "selftest.section.targets",
                        idle="-" if idle is None else f"{idle:.2f}",
                        raw="-" if m.raw_tokens_per_s is None else f"{m.raw_tokens_per_s:.0f}",
                    )
                )
        verdict = t("selftest.pass" if check.passed else "selftest.fail").ljust(width)
        lines.append(f"  {verdict}  {label(t, check)}{t('selftest.colon')}{check.detail}")
        indent = " " * (width + 4)
        if check.key in QUESTIONS and check.figures:
            lines.append(indent + ", ".join(f"{k} {v}" for k, v in check.figures.items()))
        lines += [indent + note for note in check.notes]
        if not check.passed:
            lines.append(indent + t("selftest.why", why=t(f"selftest.why.{check.key}")))
    lines.append(grade_line(t, checks, complete=complete))
    return lines


def all_passed(checks: list[Check]) -> bool:
    return all(check.passed for check in checks)


def grade_line(t: Translate, checks: list[Check], *, complete: bool = True) -> str:
    failed = [check for check in checks if not check.passed]
    if not complete:
        return t("selftest.grade.incomplete")
    if not failed:
        return t("selftest.grade.pass", total=len(checks))
    return t(
        "selftest.grade.fail",
        failed=len(failed),
        total=len(checks),
        names=t("selftest.list_separator").join(label(t, check) for check in failed),
    )
