"""What a lesson claims its demo shows, as checkable statements, and the figures it quotes.

A lesson's header says, for example::

    claims: lag_max_ms >= 5000; long_tasks == 1; ui_updates_per_s < 0.5 x tokens_per_s

Each claim compares one figure of the demo's run with a number, with another figure of the
same run, or with a baseline measured in the same session (``idle.lag_p99_ms``: the window
open and doing nothing; ``raw.tokens_per_s``: the model alone, no window). The test of each
lesson's demo (tests/test_demos.py) and ``tkchat bench --lessons`` check every claim on a real
run; the figures a lesson *quotes* (``{{figure lag_max_ms}}``) come from the last such run,
kept in ``lessons/figures.json``, so no number in a lesson is typed by hand.

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

    def holds(self, figures: Figures, baselines: Mapping[str, Figures]) -> bool:
        value, bound = figures.get(self.metric), self.bound(figures, baselines)
        return value is not None and bound is not None and _OPS[self.op](value, bound)

    def describe(self, figures: Figures, baselines: Mapping[str, Figures]) -> str:
        """One line for a report: the claim, the figures it compared, and the verdict."""
        value, bound = figures.get(self.metric), self.bound(figures, baselines)
        verdict = "holds" if self.holds(figures, baselines) else "FAILS"
        return f"{self} — {self.metric} = {_short(value)}, bound {_short(bound)}: {verdict}"

    def __str__(self) -> str:
        if self.ref is None:
            return f"{self.metric} {self.op} {_short(self.number)}"
        factor = "" if self.number == 1.0 else f"{_short(self.number)} x "
        return f"{self.metric} {self.op} {factor}{self.ref}"


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
