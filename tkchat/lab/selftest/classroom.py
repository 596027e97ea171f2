"""``tkchat selftest --mode FOLDER/``: a class at once.

Every ``*.py`` in the folder with a ``Pipeline`` class is graded — found by reading the file,
never by importing it — each in its own process with a time limit, as one file is
(:mod:`.runner`), one after the other (two at once on the same screen would share the
pointer, and the cores). A file that is not valid Python is listed too, not graded: it may
well be a student's. The table — file, its SHA-256, each question, each target, the grade and
the first reason — is printed, then written as ``selftest-grades.md`` and
``selftest-grades.csv`` in the folder.

**One file cannot change another's grade.** Every file is read before any runs, and each is
graded from that copy, written into a folder of its own just before its turn and deleted
after it: a file that overwrites a classmate's submission changes what is in the class
folder, not what is graded (the table's SHA-256 is the digest of what was). Nothing a file
starts outlives its grading, nor can it stop this process, where the window's process is
fenced (:mod:`tkchat.lab.fence`).

**The table is the grader's.** It is printed before it is written, so a disk that cannot
take it (full, read-only) loses no grade: the sentence that says so comes after the table.
Each file is written whole or not at all, and its SHA-256 is printed: a table edited later
no longer matches the digest on the teacher's terminal (``sha256sum selftest-grades.md``).
"""

from __future__ import annotations

import ast
import hashlib
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from tkchat.i18n import strings
from tkchat.lab.selftest.report import Row, class_table, first_reason
from tkchat.lab.selftest.runner import EXIT, NONE, Setup, grade
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS, Translate
from tkchat.store.files import write_atomically

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
    found = [(path, problem, _read(path)) for path, problem in pipeline_files(folder)]
    for path, problem, source in found:  # every file read before any runs
        print(t("selftest.class.grading", file=path.name), file=sys.stderr, flush=True)
        if problem is not None or source is None:
            why = problem or t("selftest.class.unreadable")
            rows.append(Row(path.name, _digest(source), NONE.upper(), {}, why))
            continue
        rows.append(_graded_copy(setup, folder, path.name, source))
    markdown, table = class_table(t, rows)
    print(markdown)  # first: whatever the disk does next, no grade is lost
    _write_table(t, folder, markdown, table)
    grades = {row.grade.lower() for row in rows}
    for worst in (FAIL, BUSY, PASS):
        if worst in grades:
            return EXIT[worst]
    return EXIT[NONE]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _digest(source: bytes | None) -> str:
    return "" if source is None else hashlib.sha256(source).hexdigest()


def _graded_copy(setup: Setup, folder: Path, name: str, source: bytes) -> Row:
    """Grade ``source`` (the file as read before any file ran) from a copy in a folder of
    its own, made for its turn and deleted after it, with the class ``folder`` hidden."""
    t = strings(setup.language)
    seconds = limit_for(setup)
    with tempfile.TemporaryDirectory(prefix="tkchat-graded-") as turn:
        copy = Path(turn) / name
        copy.write_bytes(source)
        deadline = time.monotonic() + seconds
        mode = f"{copy}:{CLASS}"
        hide = (*setup.hide, str(folder))  # the class: classmates' files, the table
        graded = grade(replace(setup, mode=mode, quiet=True, deadline=deadline, hide=hide))
    verdicts = {check.key: check.verdict.upper() for check in graded.checks}
    reason = graded.problem or first_reason(t, graded.checks)
    if graded.timed_out:
        reason = t("selftest.class.timeout", seconds=f"{seconds:.0f}")
    return Row(name, _digest(source), graded.grade.upper(), verdicts, reason)


def _write_table(t: Translate, folder: Path, markdown: str, table: str) -> None:
    """Write the table's two files, each whole or not at all, and print their digests; a
    disk that refuses is one sentence (the table is on the terminal already)."""
    for name, text in ((f"{TABLE}.md", markdown), (f"{TABLE}.csv", table)):
        payload = text.encode("utf-8")
        try:
            write_atomically(folder / name, payload)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            print(t("selftest.class.not_written", file=folder / name, reason=reason))
            continue
        digest = hashlib.sha256(payload).hexdigest()
        print(t("selftest.class.written", file=folder / name, sha256=digest))
