"""What a lesson claims its demo shows, as checkable statements, and the figures it quotes.

A lesson's header says, for example::

    claims: lag_max_ms >= 5000; long_tasks == 1; ui_updates_per_s < 0.5 x tokens_per_s

Each claim compares one figure of the demo's run with a number, with another figure of the
same run (``lag_max_ms >= 0.8 x answer_ms``: frozen for the whole answer), or with a baseline
measured just before it (``idle.lag_p99_ms``: the window open and doing nothing;
``raw.tokens_per_s``: the model alone, no window). A claim that the window stays smooth is
made about its *own* lag (``own_lag_p99_ms``: each late timer less the time the window waited
for a CPU that other programs held), so a busy machine does not break it; and where a busy
machine alone could still break a claim (:attr:`Claim.load_can_break`) and the run was busy
(the window waited for a CPU more than :data:`BUSY_CPU_WAIT_SHARE` of the time), a failure
is reported as *not judged*, never as the lesson being wrong.

``tkchat bench --lessons`` (and ``tkchat bench --claims``, a step of CI) checks every claim
on a real run; tests/test_demos.py checks, without the clock, that each demo is set up as its
lesson says and that its mechanism happens. No test compares a run with the figures a lesson
*quotes* (``{{figure lag_max_ms}}``): those come from a kept run (``lessons/figures.json``,
written by ``tkchat bench --lessons --write``, which says where and when it measured them), so
no number in a lesson is typed by hand and none pretends to be this machine's.

Tk-free: plain data and arithmetic, any thread.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

Figures = Mapping[str, float | None]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
}
BASELINES = ("idle", "raw")
# A run in which the window waited for a CPU more than this share of the time ran on a busy
# machine: too busy to judge a claim that load alone can break (two programs keeping both
# cores of a laptop busy give about 0.05-0.3; a quiet one under 0.02).
BUSY_CPU_WAIT_SHARE = 0.1
BUSY_FIGURE = "cpu_wait_share"
_CLAIM_RE = re.compile(
    r"^\s*(?P<metric>[a-z_0-9]+)\s*(?P<op><=|>=|==|<|>)\s*"
    r"(?:(?P<number>-?[0-9][0-9_.]*)(?:\s*x\s*(?P<ref>[a-z_0-9.]+))?|(?P<only_ref>[a-z_.][a-z_0-9.]*))"
    r"\s*$"
)
FIGURE_RE = re.compile(r"\{\{figure\s+(?P<metric>[a-z_0-9]+)\s*\}\}")


class ClaimError(ValueError):
    """A claim that does not parse."""


@dataclass(frozen=True, slots=True)
class Claim:
    metric: str
    op: str
    number: float  # the bound, or the factor when ``ref`` is given
    ref: str | None  # another figure ("tokens_per_s") or a baseline's ("raw.tokens_per_s")

    @classmethod
    def parse(cls, text: str) -> Claim:
        match = _CLAIM_RE.match(text)
        if match is None:
            raise ClaimError(f"not a claim: {text!r} (e.g. 'lag_max_ms >= 5000')")
        ref = match.group("ref") or match.group("only_ref")
        number = float(match.group("number")) if match.group("number") else 1.0
        if ref is not None and "." in ref and ref.split(".", 1)[0] not in BASELINES:
            raise ClaimError(f"{text!r}: a baseline is one of {', '.join(BASELINES)}")
        return cls(match.group("metric"), match.group("op"), number, ref)

    def bound(self, figures: Figures, baselines: Mapping[str, Figures]) -> float | None:
        """The value the figure is compared with (None when a figure it needs is missing)."""
        if self.ref is None:
            return self.number
        if "." in self.ref:
            base, name = self.ref.split(".", 1)
            value = baselines.get(base, {}).get(name)
        else:
            value = figures.get(self.ref)
        return None if value is None else self.number * value

    @property
    def load_can_break(self) -> bool:
        """Whether a busy machine alone can make this claim fail: a bound from above on a
        time or on a count of stalls (lag, long tasks, a delay), or from below on a rate.
        (A freeze at least as long as the answer only grows on a busy machine.)"""
        timed = self.metric.endswith(("_ms", "long_tasks", "token_periods"))
        rate = self.metric.endswith("_per_s")
        return (timed and self.op in ("<", "<=", "==")) or (rate and self.op in (">", ">="))

    def holds(self, figures: Figures, baselines: Mapping[str, Figures]) -> bool:
        value, bound = figures.get(self.metric), self.bound(figures, baselines)
        return value is not None and bound is not None and _OPS[self.op](value, bound)

    def judge(self, figures: Figures, baselines: Mapping[str, Figures]) -> Verdict:
        """This claim on a run: it holds, it fails, or — failing on a busy machine, where
        the load alone could explain it — it is not judged."""
        holds = self.holds(figures, baselines)
        busy = (figures.get(BUSY_FIGURE) or 0.0) > BUSY_CPU_WAIT_SHARE
        judged = holds or not (busy and self.load_can_break)
        value, bound = figures.get(self.metric), self.bound(figures, baselines)
        if holds:
            word = "holds"
        elif judged:
            word = "FAILS"
        else:
            share = figures.get(BUSY_FIGURE) or 0.0
            word = (
                "not judged: the machine was busy "
                f"(the window waited for a CPU {share:.0%} of the time)"
            )
        line = f"{self} — {self.metric} = {_short(value)}, bound {_short(bound)}: {word}"
        return Verdict(self, holds, judged, line)

    def __str__(self) -> str:
        if self.ref is None:
            return f"{self.metric} {self.op} {_short(self.number)}"
        factor = "" if self.number == 1.0 else f"{_short(self.number)} x "
        return f"{self.metric} {self.op} {factor}{self.ref}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A claim checked on one run: ``holds``; or it does not, and then ``judged`` says
    whether that means anything (False: a busy machine alone could explain it)."""

    claim: Claim
    holds: bool
    judged: bool
    line: str  # for a report: the claim, the figures compared, the verdict

    @property
    def ok(self) -> bool:
        """Nothing wrong was found (it holds, or could not be judged)."""
        return self.holds or not self.judged


def parse_claims(text: str) -> tuple[Claim, ...]:
    return tuple(Claim.parse(part) for part in text.split(";") if part.strip())


def _short(value: float | None) -> str:
    if value is None:
        return "missing"
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


# -- the figures a lesson quotes -------------------------------------------------------------


def figures_path(lessons_dir: Path) -> Path:
    return lessons_dir / "figures.json"


def load_figures(path: Path) -> dict[str, dict[str, dict[str, float | None]]]:
    """``{lesson id: {language: {metric: value}}}`` from the last measured run ({} if none)."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    lessons = data.get("lessons", {}) if isinstance(data, dict) else {}
    return lessons if isinstance(lessons, dict) else {}


_UNITS = (
    ("seconds", "s"),
    ("_ms", "ms"),
    ("tokens_per_s", "tokens/s"),
    ("updates_per_s", "updates/s"),
    ("_mb", "MB"),
    ("_s", "s"),
)
_UNITS_ZH = {"ms": "毫秒", "tokens/s": "token/s", "updates/s": "次/秒", "MB": "MB", "s": "秒"}


def format_figure(metric: str, value: float, language: str = "en") -> str:
    """A figure for people: a sensible number of digits, and its unit (no-break space
    between them, so a line never ends between a number and its unit)."""
    unit = next((name for suffix, name in _UNITS if metric.endswith(suffix)), "")
    if language == "zh":
        unit = _UNITS_ZH.get(unit, unit)
    if float(value).is_integer() and abs(value) >= 10:
        number = f"{int(value):,}"
    elif abs(value) >= 100:
        number = f"{value:,.0f}"
    elif abs(value) >= 10:
        number = f"{value:.1f}"
    else:
        number = f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"
    return f"{number}\u00a0{unit}" if unit else number


def fill_figures(text: str, figures: Figures, language: str) -> str:
    """``text`` with every ``{{figure metric}}`` replaced by the measured value ("—" when
    the figure was never measured: a lesson must not make one up)."""

    def figure(match: re.Match[str]) -> str:
        metric = match.group("metric")
        value = figures.get(metric)
        return "—" if value is None else format_figure(metric, value, language)

    return FIGURE_RE.sub(figure, text)


def quoted_figures(text: str) -> set[str]:
    return {match.group("metric") for match in FIGURE_RE.finditer(text)}
