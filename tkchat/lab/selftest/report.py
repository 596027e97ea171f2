"""What ``tkchat selftest`` prints: each check with its figure, why a failed one usually
fails, and the grade — in the student's language. And, for a class, the table.

No Tk, no window: checks in, lines out.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from tkchat.lab.bench.figures import LAG_MAX_MS
from tkchat.lab.selftest.targets import TOKENS_RATIO_MIN, Measured, lag_bound, p99
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS, QUESTIONS, Check, Translate
from tkchat.stats import LONG_TASK_MS

KEYS = QUESTIONS + (
    "lag_p99",
    "lag_max",
    "long_tasks",
    "tokens",
    "text_wait",
    "tk_thread",
    "raised",
    "figures",
)


def label(t: Translate, check: Check) -> str:
    """A check's name, with its bound."""
    if check.key == "lag_p99":
        return t("selftest.target.lag_p99", bound=f"{check.figures['bound_ms']:g}")
    if check.key == "lag_max":
        return t("selftest.target.lag_max", bound=f"{LAG_MAX_MS:g}")
    if check.key == "long_tasks":
        return t("selftest.target.long_tasks", threshold=f"{LONG_TASK_MS:g}")
    if check.key == "text_wait":
        return t("selftest.target.text_wait", bound=f"{check.figures.get('bound_ms', 0):g}")
    if check.key == "tokens":
        return t("selftest.target.tokens", ratio=f"{TOKENS_RATIO_MIN:g}")
    return t(f"selftest.{'question' if check.key in QUESTIONS else 'target'}.{check.key}")


def verdict_word(t: Translate, verdict: str) -> str:
    return t({PASS: "selftest.pass", FAIL: "selftest.fail", BUSY: "selftest.busy"}[verdict])


def report(
    t: Translate,
    header: list[str],
    checks: Sequence[Check],
    m: Measured | None,
    *,
    complete: bool = True,
) -> list[str]:
    """Every line ``tkchat selftest`` prints: what ran, each check with its figures and, for
    a failed one, why it usually fails; then the grade."""
    lines = list(header)
    width = max(len(verdict_word(t, v)) for v in (PASS, FAIL, BUSY))
    section: str | None = None
    for check in checks:
        kind = "questions" if check.key in QUESTIONS else "targets"
        if kind != section:
            section = kind
            lines.append(_section(t, kind, m))
        verdict = verdict_word(t, check.verdict).ljust(width)
        lines.append(f"  {verdict}  {label(t, check)}{t('selftest.colon')}{check.detail}")
        indent = " " * (width + 4)
        if check.key in QUESTIONS and check.figures:
            lines.append(indent + ", ".join(f"{k} {v}" for k, v in check.figures.items()))
        lines += [indent + note for note in check.notes]
        if check.why is not None:
            lines.append(indent + t("selftest.why", why=check.why))
    lines.append(grade_line(t, checks, complete=complete))
    return lines


def _section(t: Translate, kind: str, m: Measured | None) -> str:
    if kind == "questions" or m is None:
        return t("selftest.section.questions")
    idle = p99(m.idle)
    _bound, base = lag_bound(m)
    return t(
        "selftest.section.targets",
        idle="-" if idle is None else f"{idle:.2f}",
        base="-" if base is None else f"{base:.2f}",
        raw="-" if m.raw_tokens_per_s is None else f"{m.raw_tokens_per_s:.0f}",
    )


def grade_of(checks: Sequence[Check], *, complete: bool = True) -> str:
    """PASS, FAIL or BUSY for the whole run."""
    verdicts = {check.verdict for check in checks}
    if FAIL in verdicts or not complete:
        return FAIL
    return BUSY if BUSY in verdicts else PASS


def grade_line(t: Translate, checks: Sequence[Check], *, complete: bool = True) -> str:
    failed = [check for check in checks if check.verdict == FAIL]
    if not failed and not complete:
        return t("selftest.grade.incomplete")
    if failed:
        return t(
            "selftest.grade.fail",
            failed=len(failed),
            total=len(checks),
            names=t("selftest.list_separator").join(label(t, check) for check in failed),
        )
    if grade_of(checks) == BUSY:
        return t("selftest.grade.busy")
    return t("selftest.grade.pass", total=len(checks))


# -- a class at once ---------------------------------------------------------------------------


@dataclass
class Row:
    """One student's file in the class table."""

    file: str
    sha256: str
    grade: str  # PASS, FAIL, BUSY, or NONE (not graded)
    verdicts: dict[str, str]  # check key -> PASS / FAIL / BUSY
    reason: str  # the first failed check, or why it was not graded


# The checks that name a mistake itself rather than what it caused: Tk called from a worker
# makes "the model never ran long enough to die" fail first, and that told the teacher nothing.
NAMES_THE_MISTAKE = ("tk_thread", "raised", "figures")


def first_reason(t: Translate, checks: Sequence[Check]) -> str:
    """The class table's reason: the failed check that names the mistake (one of
    :data:`NAMES_THE_MISTAKE`), else the first failed one, else the first too busy to
    judge; with what usually causes it (the culprit the sampler named, say) where known."""
    failed = [check for check in checks if check.verdict == FAIL]
    naming = [check for check in failed if check.key in NAMES_THE_MISTAKE]
    busy = [check for check in checks if check.verdict == BUSY]
    for check in (*naming, *failed, *busy)[:1]:
        reason = f"{label(t, check)}{t('selftest.colon')}{check.detail}"
        return f"{reason} — {check.why}" if check.verdict == FAIL and check.why else reason
    return ""


def class_table(t: Translate, rows: Sequence[Row]) -> tuple[str, str]:
    """The table as Markdown and as CSV."""
    names = [t("selftest.class.file"), "sha256", *KEYS, t("selftest.class.grade")]
    names.append(t("selftest.class.reason"))
    cells = [
        [row.file, row.sha256[:12], *(row.verdicts.get(k, "-") for k in KEYS), row.grade]
        + [row.reason.replace("|", "/")]
        for row in rows
    ]
    markdown = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    markdown += ["| " + " | ".join(line) + " |" for line in cells]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([t("selftest.class.file"), "sha256", *KEYS, "grade", "reason"])
    for row in rows:
        writer.writerow(
            [row.file, row.sha256, *(row.verdicts.get(k, "") for k in KEYS), row.grade, row.reason]
        )
    return "\n".join(markdown) + "\n", buffer.getvalue()
