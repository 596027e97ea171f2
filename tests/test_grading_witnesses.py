"""The grader is not fooled by a file that tries (issue 35): a file that looks for signs of
the grader finds none, and reports forged from inside the graded process are checked against
the X server's witness, which watches the window from outside it
(:mod:`tkchat.lab.xwitness`).

The verdict is tested from constructed figures (the witness says the loop stood still, the
reports say it was fine: FAIL, saying the reports disagree with what the window did; both
agree: as before). Two real gradings of hostile files from ``tests/graded/`` (a blocking loop
that forges its heartbeat and reports; one that hands in tkchat's own pipeline when it sees
the grader): neither passes — asserted on the checks and on what the file saw, never on a
time. (The reference solution's real grading: tests/test_exercises.py.)
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.test_selftest_grade import lags, measured
from tkchat.i18n import strings
from tkchat.lab.selftest import runner
from tkchat.lab.selftest.protocol import Probed
from tkchat.lab.selftest.report import grade_of
from tkchat.lab.selftest.targets import target_checks
from tkchat.lab.selftest.verdict import FAIL, PASS, Check
from tkchat.lab.xwitness import OutsideSeen

EN, ZH = strings("en"), strings("zh")
CJK = re.compile(r"[\u4e00-\u9fff]")
GRADED = Path(__file__).parent / "graded"


def blocked(start: float = 100.0, until: float = 102.0) -> OutsideSeen:
    """The X server's account of a window that answered every ping at once, but for those
    sent from ``start`` to ``until``: answered only at ``until``. The last ping is never
    answered (the run ended)."""
    seen = OutsideSeen("watched")
    for number in range(1, 201):
        at = 99.0 + 0.05 * number
        seen.echoes[number] = at
        seen.answers[number] = until + 0.001 if start <= at < until else at + 0.001
    seen.answers.pop(200)
    return seen


def figures(**changes: object) -> Check:
    checks = target_checks(EN, measured(**changes))
    return next(check for check in checks if check.key == "figures")


def test_the_x_server_s_silences_are_its_answers_late_beyond_their_echoes() -> None:
    seen = blocked()
    assert seen.silences(0.5) == [(100.0, 102.001)]
    assert OutsideSeen("watched", {1: 5.0}, {}).silences(0.5) == []  # never answered: none


def test_a_silence_while_the_witness_itself_stood_still_proves_nothing() -> None:
    """The witness read a ping's echo, then was given no core for 0.6 s (a loaded machine)
    and read the answer — sent at once — late: no echo was read meanwhile, so the silence
    is its own, not the window's (class of 20 correct files, 2026-12-04: two FAILs so)."""
    seen = OutsideSeen("watched")
    for number in range(1, 41):
        at = 99.0 + 0.05 * number  # read every 50 ms, but none from 100.0 to 100.6
        seen.echoes[number] = at if not 100.0 < at < 100.6 else 100.6
        seen.answers[number] = seen.echoes[number] + 0.001
    seen.answers[20] = 100.6 + 0.002  # the echo of 100.0 read on time, its answer late
    assert seen.silences(0.5) == []
    assert figures(outside=seen, lag_all=lags(*([0.4] * 400)), gaps=[]).verdict == PASS


def test_reports_that_say_fine_while_the_x_server_saw_the_loop_stand_still_fail() -> None:
    """A blocking loop whose process forged its lag figures and its heartbeat: the reports
    and the heartbeat agree with each other, the X server does not."""
    check = figures(outside=blocked(), lag_all=lags(*([0.4] * 400)), gaps=[])
    assert check.verdict == FAIL
    assert check.why == EN("selftest.why.x_disagree")
    assert "went on beating" in check.detail and "2001 ms" in check.detail
    assert grade_of([Check("q1", PASS, ""), check]) == FAIL
    # the lag figures honest, only the heartbeat forged: as false
    honest = [*lags(*([0.4] * 100)), Probed(102.0, 2000.0)]
    only_beat = figures(outside=blocked(), lag_all=honest, gaps=[])
    assert only_beat.verdict == FAIL and "went on beating" in only_beat.detail
    zh = next(c for c in target_checks(ZH, measured(outside=blocked())) if c.key == "figures")
    assert zh.verdict == FAIL and CJK.search(zh.detail) and CJK.search(zh.why or "")


def test_a_window_the_reports_name_that_is_not_its_own_fails() -> None:
    check = figures(outside=OutsideSeen("refused"))
    assert check.verdict == FAIL and check.why == EN("selftest.why.x_disagree")


def test_reports_and_the_x_server_agreeing_change_nothing() -> None:
    honest = [*lags(*([0.4] * 100)), Probed(102.0, 2000.0)]
    check = figures(outside=blocked(), lag_all=honest, gaps=[(100.0, 102.0)])
    assert check.verdict == PASS
    assert any("pinged the window 199 times" in note for note in check.notes), check.notes
    smooth = OutsideSeen("watched", {1: 5.0, 2: 5.05}, {1: 5.001, 2: 5.051})
    assert figures(outside=smooth).verdict == PASS
    # no witness (no libX11; a window that answered no ping): the heartbeat alone, as before
    for none in (None, OutsideSeen("unavailable"), OutsideSeen("watched", {1: 5.0}, {})):
        check = figures(outside=none)
        assert check.verdict == PASS and EN("selftest.note.x_none") in check.notes


# -- real gradings of hostile files ------------------------------------------------------------


def graded(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, **fill: str
) -> runner.Graded:
    """One real grading (one attempt, short answers) of ``tests/graded/NAME.py``, copied with
    the blocking loop it builds on; ``fill``: its module constants, set in the copy."""
    shutil.copy(GRADED / "blocking.py", tmp_path / "blocking.py")
    source = (GRADED / f"{name}.py").read_text(encoding="utf-8")
    for constant, value in fill.items():
        source = source.replace(f'{constant} = ""', f"{constant} = {value!r}")
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.setattr(runner, "ATTEMPTS", 1)
    mode = f"{tmp_path / name}.py:Pipeline"
    return runner.grade(runner.Setup(mode, "scripted", None, 2000.0, "en", 20.0, tokens=1000))


@pytest.mark.gui
def test_a_blocking_loop_that_forges_its_witnesses_does_not_pass(
    display: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = graded(tmp_path, "forging", monkeypatch)
    out = "\n".join(result.lines)
    assert result.problem is None and result.grade != PASS, out
    # Caught by a witness outside its process: the X server's, or — where its forged beats
    # left a silence the loop's reported lag does not show — the heartbeat's, checked first.
    check = next(c for c in result.checks if c.key == "figures")
    caught = {EN("selftest.why.x_disagree"), EN("selftest.why.figures")}
    assert check.verdict == FAIL and check.why in caught, out


@pytest.mark.gui
def test_a_file_that_looks_for_the_grader_finds_nothing_and_does_not_pass(
    display: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.txt"
    result = graded(tmp_path, "watched", monkeypatch, SEEN=str(seen))
    out = "\n".join(result.lines)
    assert result.problem is None and result.grade != PASS, out
    looked = seen.read_text(encoding="utf-8").splitlines()
    assert looked and set(looked) == {"[]"}, looked  # it looked at every answer, saw nothing
