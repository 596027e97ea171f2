"""``tkchat selftest --mode FOLDER/``: a class at once.

Every ``*.py`` in the folder with a ``Pipeline`` class is graded — found by reading the file,
never by importing it — each in its own process with a time limit, as one file is
(:mod:`.runner`), one after the other (two at once on the same screen would share the
pointer, and the cores). A file that is not valid Python is listed too, not graded: it may
well be a student's. The table — file, its SHA-256, each question, each target, the grade and
the first reason — is written as ``selftest-grades.md`` and ``selftest-grades.csv`` in the
folder, and the Markdown is printed.
"""

from __future__ import annotations

import ast
import sys
import time
from dataclasses import replace
from pathlib import Path

from tkchat.i18n import strings
from tkchat.lab.selftest.report import Row, class_table, first_reason
from tkchat.lab.selftest.runner import (
    EXIT,
    NONE,
    Setup,
    grade,
    sha256_of,
)
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS

CLASS = "Pipeline"
TABLE = "selftest-grades"


def pipeline_files(folder: Path) -> list[tuple[Path, str | None]]:
    """The folder's files to grade, each with why it cannot be (None: it can)."""
    found: list[tuple[Path, str | None]] = []
    for path in sorted(folder.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            found.append((path, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"))
            continue
        if any(isinstance(node, ast.ClassDef) and node.name == CLASS for node in tree.body):
            found.append((path, None))
    return found


def limit_for(setup: Setup) -> float:
    """One file's wall-clock budget, every attempt included: loading, the baselines, four
    answers at their limit each, three times over."""
    return 3 * (120 + 6 * setup.limit_s)


def run_class(setup: Setup, folder: Path) -> int:
    """Grade every pipeline of ``folder``; 0 if all pass, 1 if any fails, 3 if none fails
    but some could not be judged, 2 if nothing was graded."""
    t = strings(setup.language)
    rows: list[Row] = []
    for path, problem in pipeline_files(folder):
        print(t("selftest.class.grading", file=path.name), file=sys.stderr, flush=True)
        if problem is not None:
            rows.append(Row(path.name, sha256_of(path), NONE.upper(), {}, problem))
            continue
        seconds = limit_for(setup)
        deadline = time.monotonic() + seconds
        mode = f"{path}:{CLASS}"
        graded = grade(replace(setup, mode=mode, quiet=True, deadline=deadline))
        verdicts = {check.key: check.verdict.upper() for check in graded.checks}
        reason = graded.problem or first_reason(t, graded.checks)
        if graded.timed_out:
            reason = t("selftest.class.timeout", seconds=f"{seconds:.0f}")
        rows.append(Row(path.name, graded.sha256, graded.grade.upper(), verdicts, reason))
    markdown, table = class_table(t, rows)
    (folder / f"{TABLE}.md").write_text(markdown, encoding="utf-8")
    (folder / f"{TABLE}.csv").write_text(table, encoding="utf-8")
    print(markdown)
    print(t("selftest.class.written", md=folder / f"{TABLE}.md", csv=folder / f"{TABLE}.csv"))
    grades = {row.grade.lower() for row in rows}
    for worst in (FAIL, BUSY, PASS):
        if worst in grades:
            return EXIT[worst]
    return EXIT[NONE]
