"""``tkchat bench --claims``'s rules and its table: every timing claim, judged on bench runs
against baselines of the same run, measured again when it fails, and failed only on a quiet
machine.

- An *attempt* is one bench run; each claim it measures gets a verdict: ``PASS`` (it
  holds), ``BUSY`` (it failed, but the machine was too busy to judge it: :class:`Machine`,
  or a lesson's own rule, its window having waited for a CPU) or ``FAIL``.
- A claim without a ``PASS`` is measured again, :data:`MAX_ATTEMPTS` times in all.
- Its outcome: ``PASS`` if an attempt passed; ``FAIL`` if none did and one failed on a quiet
  machine (it failed every time it could be judged); ``NOT JUDGED`` if every attempt was busy.
  The step fails on a ``FAIL`` only.
- A *known shortfall* (:data:`KNOWN_SHORTFALLS`) is a claim the product does not meet today
  on a quiet machine, with the open issue that owns it: it is measured once, printed with its
  figure, and its outcome is ``SHORT`` (its issue named in the summary) instead of ``FAIL``, so
  the step still fails on every claim that held before. One that passes says so: take it off
  the list.

*Too busy to judge* is decided by what the machine did besides the bench during the attempt:
the CPU time every other program used (the machine's, from ``/proc/stat``, less the bench's
own processes'), as a share of all its cores over the attempt. On a quiet machine that is a
few percent; with a CPU hog on each core, most of it. Above :data:`BUSY_SHARE` the attempt is
busy. Where the system does not say (no ``/proc/stat``), every attempt is judged.

Tk-free: plain data and arithmetic, any thread (tkchat/lab/bench/claim_runs.py runs the
attempts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tkchat.lab.bench.figures import Check

MAX_ATTEMPTS = 3
BUSY_SHARE = 0.2  # other programs' share of the machine's CPU that makes an attempt too busy
PASS, FAIL, BUSY = "PASS", "FAIL", "BUSY"
NOT_JUDGED = "NOT JUDGED"
SHORT = "SHORT"  # a known shortfall that fell short again (not the step's failure)
COMPLETES = "the run completes"  # a run that crashed or hung: the code's fault, never the load

SMOOTHNESS = "issue 38 (smoother than the simplest peer)"
OPENS_200 = "200-message conversation opens and scrolls: no long task, lag p99 <= 16 ms"
# (run, claim) -> the open issue that owns it. On a quiet 2-core machine on 2026-12-03
# (tkchat bench --claims, load 0.1-1), the first three failed every attempt: lesson 11's p99
# 21.8 ms, the flood's max 24 ms (its p99 9.9 ms holds), the 1,000-message chat's max 76 ms;
# the others failed one or two attempts of three, each a long task at the edge (issue 38:
# "no long task at any size"). CI's machine (2026-12-03, quiet: 0 attempts too busy) failed
# two more every attempt: the fixed pipeline's lag p99 on the model, 3.75 ms against a bound
# of 2 ms (idle 0.83 ms), and the flood's markdown slices while streaming, 22.6 ms.
# Taken off after holding on CI's machine and here, quiet, on the code of 2026-12-03 evening
# (the transcript read-only by its bindings, code fonts shared): lesson 11's p99 (4.1-8.2 ms),
# lesson 10's Chinese demo with no long task, the flood's 200-message chat.
KNOWN_SHORTFALLS: dict[tuple[str, str], str] = {
    ("model", "fixed lag p99 <= 2 x idle's (at least 2 ms)"): SMOOTHNESS,
    # its lag max half is the 1,000-message max (below) against the 100-message one (failed
    # two attempts of three here, 2026-12-03, at a main-thread CPU of 1.17 x)
    ("long chat", "growth: 1,000 messages against 100: main-thread CPU <= 1.5 x, lag max <= 2 x"): (
        SMOOTHNESS
    ),
    ("flood", "markdown slices while streaming <= 16 ms"): SMOOTHNESS,
    ("flood", "flood lag max <= 16 ms"): SMOOTHNESS,
    ("long chat", "1,000 messages: no long task, lag max <= 50 ms"): SMOOTHNESS,
    ("model", OPENS_200): SMOOTHNESS,
}


@dataclass(frozen=True)
class Machine:
    """What the machine did besides the bench during one attempt: ``others_share``, the CPU
    time of every other program over ``seconds`` on ``cores`` cores (None: unknown)."""

    others_share: float | None
    cores: int
    seconds: float

    @property
    def busy(self) -> bool:
        """Too busy to judge a claim that failed: other programs used more than
        :data:`BUSY_SHARE` of the machine's CPU."""
        return self.others_share is not None and self.others_share > BUSY_SHARE

    def describe(self) -> str:
        if self.others_share is None:
            return f"{self.seconds:.0f} s; other programs' CPU unknown: judged"
        verdict = "too busy to judge a failure" if self.busy else "quiet enough to judge"
        return (
            f"{self.seconds:.0f} s; other programs used {self.others_share:.0%} of "
            f"{self.cores} cores' CPU (judged under {BUSY_SHARE:.0%}): {verdict}"
        )


def attempt_verdict(check: Check, machine: Machine) -> str:
    """One attempt's verdict on one claim (a run that did not complete fails, busy or not)."""
    if check.ok:
        return PASS
    if (machine.busy and check.name != COMPLETES) or not check.judged:
        return BUSY
    return FAIL


@dataclass
class Claim:
    """One claim across its attempts: which run measures it, its name, each attempt's
    verdict, and the check of its latest attempt (its figure, baseline, bound)."""

    run: str
    name: str
    check: Check
    attempts: list[str] = field(default_factory=list)

    @property
    def known_issue(self) -> str | None:
        """The open issue that owns this claim, if it is a known shortfall."""
        return KNOWN_SHORTFALLS.get((self.run, self.name))

    @property
    def outcome(self) -> str:
        if PASS in self.attempts:
            return PASS
        if FAIL in self.attempts:
            return SHORT if self.known_issue else FAIL
        return NOT_JUDGED

    @property
    def open(self) -> bool:
        """Measured again in the next attempt of its run: no pass yet, attempts left (a
        known shortfall is measured once: another attempt would only cost minutes)."""
        limit = 1 if self.known_issue else MAX_ATTEMPTS
        return PASS not in self.attempts and len(self.attempts) < limit


class ClaimBook:
    """Every claim of every run, attempt after attempt, in the order first measured."""

    def __init__(self) -> None:
        self.claims: dict[tuple[str, str], Claim] = {}

    def note(self, run: str, checks: Iterable[Check], machine: Machine) -> None:
        """An attempt of ``run``: each claim measured for the first time, or still open,
        gets its verdict; a claim already settled keeps its attempts (it is not re-judged)."""
        for check in checks:
            claim = self.claims.get((run, check.name))
            if claim is None:
                claim = self.claims[(run, check.name)] = Claim(run, check.name, check)
            elif not claim.open:
                continue
            claim.check = check
            claim.attempts.append(attempt_verdict(check, machine))

    def open_runs(self, runs: Sequence[str]) -> list[str]:
        """Which of ``runs`` have a claim to measure again."""
        return [run for run in runs if any(c.open for c in self.of(run))]

    def open_claims(self, run: str) -> list[Claim]:
        return [claim for claim in self.of(run) if claim.open]

    def of(self, run: str) -> list[Claim]:
        return [claim for claim in self.claims.values() if claim.run == run]

    @property
    def failed(self) -> list[Claim]:
        return [claim for claim in self.claims.values() if claim.outcome == FAIL]

    def summary(self) -> str:
        outcomes = [claim.outcome for claim in self.claims.values()]
        text = (
            f"{len(outcomes)} claims: {outcomes.count(PASS)} hold, {outcomes.count(FAIL)} "
            f"fail on a quiet machine, {outcomes.count(NOT_JUDGED)} not judged (the machine "
            "was too busy every time)"
        )
        short = [c for c in self.claims.values() if c.outcome == SHORT]
        if short:
            owners = sorted({str(c.known_issue) for c in short})
            text += f"; {len(short)} known shortfalls still short, owned by " + ", ".join(owners)
        mended = [c for c in self.claims.values() if c.known_issue and c.outcome == PASS]
        for claim in mended:
            text += f"\nnow holds, take it off KNOWN_SHORTFALLS: {claim.run}: {claim.name}"
        return text


# -- the table -------------------------------------------------------------------------------

FIGURE_WIDTH = 32  # a figure without a number of its own is cut to this (the JSON has all)
HEADERS = ("claim", "figure", "baseline", "ratio", "target", "1", "2", "3", "outcome")


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".strip()


def row(claim: Claim) -> tuple[str, ...]:
    """A claim as the table shows it: its latest figure, the baseline beside it (which, and
    its value), their ratio, the target, each attempt's verdict and the outcome."""
    check = claim.check
    figure = _number(check.value, check.unit) if check.value is not None else check.figure
    if len(figure) > FIGURE_WIDTH:
        figure = figure[: FIGURE_WIDTH - 1] + "…"
    baseline = "-"
    if check.baseline is not None:
        baseline = f"{check.baseline_of} {_number(check.baseline, check.unit)}".strip()
    ratio = f"{check.ratio:.2f} x" if check.ratio is not None else "-"
    attempts = [*claim.attempts, *["-"] * (MAX_ATTEMPTS - len(claim.attempts))]
    name = f"{claim.run}: {claim.name}"
    return (name, figure, baseline, ratio, check.bound or "-", *attempts, claim.outcome)


def format_claims(claims: Iterable[Claim]) -> str:
    """Every claim as a text table (:data:`HEADERS`), one claim a line."""
    rows = [HEADERS, *(row(claim) for claim in claims)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)
