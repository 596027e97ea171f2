"""docs/security.md's side of ``python -m tests.tools.hostile``: the rows and sentences a run
writes, and where the page's copy of them and a fresh run part ways.

docs/security.md keeps the table of :data:`tests.tools.hostile.CASES` and two sentences (the
server under half-open sockets, the page's markdown) between markers. (The module and its
``README_*`` names date from when they were in the README.) ``python -m tests.tools.hostile``
prints them from its run, to paste in; tests/test_bench_hostile.py reads them back and lists
every disagreement with its own run (the table: what each attack ends in) or with the bench's
set-up and bounds (the two sentences, read back by :func:`quoted_serve_figures` and
:func:`quoted_page_figures`). Figures that depend on load (lag, memory,
round trips) are held to their bounds; those that do not (pieces, characters, bounds, set-up
figures) must read the same; baselines must agree within a factor. No Tk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.tools.hostile import (
    CASES,
    MIN_BASELINE_RATIO,
    TRICKLE_ATTACK,
    TRICKLE_BEFORE,
    TRICKLE_ID,
    CaseFigures,
    case_by_id,
    outcome,
)
from tests.tools.hostile_page import INPUTS, SLACK_MS, PageFigures, readme_sentence
from tests.tools.hostile_serve import (
    HALF_OPEN,
    HEALTH_BOUND_MS,
    MAX_DESCRIPTORS,
    SLOWDOWN_BOUND,
    HalfOpenFigures,
)
from tests.tools.hostile_serve import readme_row as serve_readme_row

SECURITY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "security.md"  # the markers' page
# Numbers in "what the window shows" must read the same, except amounts of time and of bytes
# read (a read more or less, a handshake that fails 0.1 s later): those within 5 %.
OUTCOME_MARGIN = 0.05
_LOOSE_UNITS = (" s", " kB")
README_BEGIN = "<!-- bench --hostile: begin -->"
README_END = "<!-- bench --hostile: end -->"
SERVE_BEGIN = "<!-- bench --hostile serve: begin -->"
SERVE_END = "<!-- bench --hostile serve: end -->"
PAGE_BEGIN = "<!-- bench --hostile page: begin -->"
PAGE_END = "<!-- bench --hostile page: end -->"


README_HEADER = (
    "| attack | before the budget | what the window shows now | lag max, long tasks (bound) "
    "| RSS growth (bound) | unprotected, same run (÷ lag max, at least 1 ms) |\n"
    "|---|---|---|---|---|---|"
)


def readme_rows(runs: Iterable[CaseFigures]) -> str:
    """security.md's table, written from one run (``python -m tests.tools.hostile`` prints it)."""
    rows = [README_HEADER]
    for f in runs:
        if f.id == TRICKLE_ID:
            rows.append(f"| {TRICKLE_ATTACK} | {TRICKLE_BEFORE} | {outcome(f)} | – | – | – |")
            continue
        case = case_by_id(f.id)
        baseline = "–"
        if f.baseline_ms is not None and f.ratio is not None:
            baseline = (
                f"{case.baseline_what}: {f.baseline_ms:,.0f} ms = {f.ratio:,.0f} × the lag max"
            )
        rows.append(
            f"| {case.attack} | {case.before} | {outcome(f)} "
            f"| {f.lag_max_ms} ms, {f.long_tasks} long (< {case.lag_bound_ms:g} ms) "
            f"| +{f.rss_growth_mb} MB (< {case.rss_bound_mb:g} MB) | {baseline} |"
        )
    return "\n".join(rows)


@dataclass(frozen=True)
class QuotedRow:
    """One row of security.md's table, as a reader sees it."""

    attack: str
    before: str
    shown: str
    lag: str
    rss: str
    baseline: str


def quoted_rows(readme: str) -> dict[str, QuotedRow]:
    """The rows between security.md's markers, by attack."""
    start = readme.index(README_BEGIN) + len(README_BEGIN)
    body = readme[start : readme.index(README_END)]
    rows: dict[str, QuotedRow] = {}
    for line in body.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) != 6:
            raise ValueError(f"not a row of the hostile table: {line!r}")
        rows[cells[0]] = QuotedRow(*cells)
    return rows


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers(cell: str) -> list[float]:
    return [float(n.replace(",", "")) for n in _NUMBER.findall(cell)]


def disagreements(quoted: dict[str, QuotedRow], runs: Iterable[CaseFigures]) -> list[str]:
    """Where security.md's rows and a fresh run part ways; empty when they agree.

    - every case has its row, and every row its case;
    - "what the window shows" reads the same: pieces, characters and lengths exactly (they
      do not depend on load), seconds and kB within :data:`OUTCOME_MARGIN` (the bytes read
      before a stream of blank lines is given up differ by a read or two);
    - the bounds quoted are the bounds of :data:`CASES`, and the quoted figures keep them;
    - a case with a baseline quotes one, and its quoted ratio keeps :data:`MIN_BASELINE_RATIO`.

    Lag, memory and the baselines' times are load-dependent: this run is held to the bounds
    and the ratios (see :func:`verdicts`), the quoted figures too, not to each other (a busy
    machine made the unprotected path 7 times slower than quoted).
    """
    problems: list[str] = []
    runs = list(runs)
    labels = {TRICKLE_ID: TRICKLE_ATTACK} | {case.id: case.attack for case in CASES}
    missing = set(quoted) - set(labels.values())
    problems += [f"security.md has a row for no case: {attack!r}" for attack in sorted(missing)]
    for f in runs:
        row = quoted.get(labels[f.id])
        if row is None:
            problems.append(f"{f.id}: no security.md row {labels[f.id]!r}")
            continue
        if f.id != TRICKLE_ID and row.before != case_by_id(f.id).before:
            problems.append(f"{f.id}: security.md's 'before' is not the case list's")
        live = outcome(f)
        if _NUMBER.sub("#", row.shown) != _NUMBER.sub("#", live) or not _same_outcome(
            row.shown, live
        ):
            problems.append(f"{f.id}: security.md shows {row.shown!r}, this run {live!r}")
        if f.id == TRICKLE_ID:
            continue
        case = case_by_id(f.id)
        problems += _within_bound(f.id, "lag max", row.lag, case.lag_bound_ms)
        problems += _within_bound(f.id, "RSS growth", row.rss, case.rss_bound_mb)
        quoted_base = numbers(row.baseline.rpartition(":")[2])
        if case.baseline is None:  # (the case list says which cases have one, measured or not)
            if quoted_base:
                problems.append(f"{f.id}: security.md quotes a baseline the case has not")
            continue
        if len(quoted_base) != 2:
            problems.append(f"{f.id}: no baseline and ratio quoted in {row.baseline!r}")
            continue
        _base_ms, ratio = quoted_base
        if ratio < MIN_BASELINE_RATIO:
            problems.append(
                f"{f.id}: security.md's ratio {ratio:g} is under {MIN_BASELINE_RATIO:g}"
            )
    return problems


def _same_sentence(
    readme: str, begin: str, end: str, live: str, exact: tuple[int, ...]
) -> tuple[list[str], list[float], list[float]]:
    """security.md's sentence between ``begin`` and ``end`` against this run's ``live``: the
    same words (figures aside), and the figures numbered ``exact`` the same. Returns the
    problems, then both sentences' figures for the caller's own bounds (none when the words
    differ: that is the one problem)."""
    start = readme.index(begin) + len(begin)
    quoted = " ".join(readme[start : readme.index(end)].split())
    if _NUMBER.sub("#", quoted) != _NUMBER.sub("#", live):
        return [f"security.md says {quoted!r}, this run {live!r}"], [], []
    q, v = numbers(quoted), numbers(live)
    problems = [
        f"security.md's figure {q[i]:g} is not this run's {v[i]:g}" for i in exact if q[i] != v[i]
    ]
    return problems, q, v


def serve_disagreements(readme: str, figures: HalfOpenFigures) -> list[str]:
    """Where security.md's sentence on half-open sockets and a fresh run part ways.

    The sentence reads the same, its set-up figures (sockets, limits, requests, bound, lines
    logged) exactly; the descriptors within 10 %; the quoted times keep their bounds (they
    depend on load, as the window's lag does)."""
    # half_open, limit, descriptors, most, p50, requests, idle p50, max, bound, logged
    live = serve_readme_row(figures)
    problems, q, v = _same_sentence(readme, SERVE_BEGIN, SERVE_END, live, (0, 1, 3, 5, 8, 9))
    if not q:
        return problems
    if not 0 < q[2] <= MAX_DESCRIPTORS or not _close([q[2]], [v[2]], 0.1):
        problems.append(f"security.md's {q[2]:g} descriptors, this run's {v[2]:g}")
    if not (q[4] < HEALTH_BOUND_MS and q[7] < HEALTH_BOUND_MS):
        problems.append(f"security.md's /health times {q[4]:g}, {q[7]:g} ms break the bound")
    if q[4] / max(q[6], 0.01) > SLOWDOWN_BOUND:
        problems.append(f"security.md's /health slowdown {q[4]:g} / {q[6]:g} ms is over the bound")
    return problems


def quoted_serve_figures(readme: str) -> HalfOpenFigures:
    """security.md's sentence on half-open sockets read back as figures, with this checkout's
    set-up in place of the quoted one (sockets, no line logged): held against the sentence by
    :func:`serve_disagreements`, they show whether it quotes the set-up the bench runs and
    figures within the bounds, without a run."""
    start = readme.index(SERVE_BEGIN) + len(SERVE_BEGIN)
    q = numbers(readme[start : readme.index(SERVE_END)])
    if len(q) != 10:
        return HalfOpenFigures(HALF_OPEN, None, None, None, None, None, [])  # words differ
    return HalfOpenFigures(HALF_OPEN, q[6], None, q[4], q[7], int(q[2]), [])


def quoted_page_figures(readme: str) -> PageFigures:
    """security.md's sentence on the page's markdown read back as figures, with this
    checkout's inputs and no block over the budget (the bench's claim): see
    :func:`quoted_serve_figures`."""
    start = readme.index(PAGE_BEGIN) + len(PAGE_BEGIN)
    q = numbers(readme[start : readme.index(PAGE_END)])
    if len(q) != 7:
        return PageFigures(0.0, dict.fromkeys(INPUTS, 0.0), 0)  # the words differ: said so
    return PageFigures(q[4], {name: q[3] for name in INPUTS}, 0)


def page_disagreements(readme: str, figures: PageFigures) -> list[str]:
    """Where security.md's sentence on the page's markdown and a fresh run part ways: the
    same words, the set-up figures exact, and the quoted worst within its bound (ordinary
    markdown's time is this machine's, now: not compared with the quoted one)."""
    # chars, repeats, inputs, worst, ordinary, slack, fallbacks
    live = readme_sentence(figures)
    problems, q, v = _same_sentence(readme, PAGE_BEGIN, PAGE_END, live, (0, 1, 2, 5, 6))
    if not q:
        return problems
    if q[3] > q[4] + SLACK_MS:
        problems.append(f"security.md's worst input {q[3]:g} ms breaks its bound")
    return problems


def _same_outcome(quoted: str, live: str) -> bool:
    """Same numbers (the words were compared already): exact, or close for a loose unit."""
    pairs = zip(_NUMBER.finditer(quoted), _NUMBER.finditer(live), strict=True)
    for q, v in pairs:
        loose = live[v.end() :].startswith(_LOOSE_UNITS)
        margin = OUTCOME_MARGIN if loose else 0.0
        if not _close(numbers(q.group()), numbers(v.group()), margin):
            return False
    return True


def _close(quoted: list[float], live: list[float], margin: float) -> bool:
    return len(quoted) == len(live) and all(
        abs(q - v) <= margin * max(abs(v), 1.0) for q, v in zip(quoted, live, strict=True)
    )


def _within_bound(case_id: str, what: str, cell: str, bound: float) -> list[str]:
    """A cell "figure …(< bound)": the bound is this case's, and the figure keeps it."""
    found = numbers(cell)
    if not found or found[-1] != bound:
        return [f"{case_id}: security.md's {what} bound in {cell!r} is not {bound:g}"]
    if found[0] >= bound:
        return [f"{case_id}: security.md's {what} {found[0]:g} breaks its bound {bound:g}"]
    return []
