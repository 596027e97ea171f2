"""The asyncio exercise, graded for real (issue 34): ``tkchat selftest`` on the reference async
solution and on each wrong async file of ``lessons/exercises/wrong/``, with the same four
questions and targets as the threaded exercise.

Each grading is a real one — the window's own process, real X input, the scripted backend —
and takes tens of seconds, so there are few. A wrong file FAILs, and the check its mistake
breaks FAILs with the reason that names it, whatever the machine's load (a mistake is not
excused by a busy machine). The reference solution is not FAILed: PASS — or, on a machine
too busy to judge, BUSY, which says so and names no mistake.
"""

from __future__ import annotations

import pytest

from tkchat.course.lessons import lessons_dir
from tkchat.i18n import strings
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS

EN = strings("en")
EXERCISES = lessons_dir() / "exercises"
# Each wrong async file: its answers' length (a frozen window streams a short one), the check
# its mistake fails, and the reason that check gives.
WRONG_ASYNC = {
    "async_run_in_start": (1000, "q1", EN("selftest.why.q1")),
    "async_blocking_call": (None, "q4", EN("selftest.why.q4.model")),
}


def graded(file: str, tokens: int | None):  # type: ignore[no-untyped-def]
    from tkchat.lab.selftest import runner

    mode = f"{EXERCISES / file}:Pipeline"
    return runner.grade(runner.Setup(mode, "scripted", None, 2000.0, "en", 20.0, tokens=tokens))


@pytest.mark.gui
def test_the_reference_async_solution_is_graded_smooth(display: None) -> None:
    result = graded("async_pipeline_solution.py", None)
    out = "\n".join(result.lines)
    assert result.problem is None and "Traceback" not in out, out
    assert result.grade in (PASS, BUSY), out
    assert all(check.verdict != FAIL for check in result.checks), out
    assert {"q1", "q2", "q3", "q4", "text_wait"} <= {check.key for check in result.checks}


@pytest.mark.gui
@pytest.mark.parametrize("name", sorted(WRONG_ASYNC))
def test_each_wrong_async_file_fails_naming_its_mistake(display: None, name: str) -> None:
    tokens, key, why = WRONG_ASYNC[name]
    result = graded(f"wrong/{name}.py", tokens)
    out = "\n".join(result.lines)
    assert result.problem is None and result.grade == FAIL, out
    (check,) = [check for check in result.checks if check.key == key]
    assert check.verdict == FAIL and check.why == why, out
