"""A graded file cannot wreck the class (issue 35): nothing it starts outlives its grading,
it cannot signal the grader, it cannot change a classmate's grade by rewriting their file,
and the table is the grader's — printed first, written whole, its digest on the terminal,
a refusing disk one sentence.

The fence is tested on real processes (a daemon that holds a lock, a victim it tries to kill):
whether it worked is read from the lock and the victim, never from a time. The class run is
tested with a stand-in for one file's grading (the real grading's own tests are in
test_exercises.py and test_selftest_grade.py): what is asserted is which bytes were graded
and what reached the terminal and the disk.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tkchat.cli import main
from tkchat.lab.fence import covers_available, end_group, fence_available, fenced, hiding_plan
from tkchat.lab.selftest import classroom
from tkchat.lab.selftest.report import KEYS
from tkchat.lab.selftest.runner import Graded, Setup, file_of
from tkchat.lab.selftest.verdict import Check

# A student's file at its worst: a daemon left behind (forked twice; in a session of its own
# when SESSION is true), holding a lock for as long as it lives, and a kill aimed at a
# process outside — what a file that stops the grader does.
HOSTILE = textwrap.dedent(
    """
    import fcntl, os, signal, sys, time
    lock, victim, record, session = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        if session == "1":
            os.setsid()
        if os.fork() == 0:
            handle = open(lock, "w")
            fcntl.flock(handle, fcntl.LOCK_EX)
            os.write(ready_w, b"1")
            while True:
                time.sleep(60)
        os._exit(0)
    os.read(ready_r, 1)  # the daemon holds the lock
    try:
        os.kill(victim, signal.SIGKILL)
        outcome = "killed"
    except OSError as exc:
        outcome = type(exc).__name__
    with open(record, "w") as out:
        out.write(outcome)
    """
)


def lock_is_free(lock: Path) -> bool:
    with lock.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def run_hostile(tmp_path: Path, *, fence: bool, session: bool) -> tuple[Path, str, bool]:
    """Run HOSTILE as the grader runs a window (fenced or not, its own session, its group
    ended after it); returns the lock, what its kill did, and whether the victim lives."""
    lock, record = tmp_path / "daemon.lock", tmp_path / "kill.txt"
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        command = [sys.executable, "-c", HOSTILE, str(lock), str(victim.pid), str(record)]
        command.append("1" if session else "0")
        process = subprocess.Popen(fenced(command, fence=fence), start_new_session=True)
        assert process.wait(60) == 0
        end_group(process)
        return lock, record.read_text(), victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


needs_fence = pytest.mark.skipif(not fence_available(), reason="no user namespaces here")


@needs_fence
def test_inside_the_fence_nothing_outlives_the_run_and_no_kill_reaches_outside(
    tmp_path: Path,
) -> None:
    lock, outcome, victim_lives = run_hostile(tmp_path, fence=True, session=True)
    # The kernel ended the daemon (a session of its own included) before unshare returned.
    assert lock_is_free(lock), "a process started inside the fence outlived it"
    assert outcome == "ProcessLookupError" and victim_lives  # a number outside is no one


def test_without_the_fence_the_run_s_process_group_is_ended(tmp_path: Path) -> None:
    """No fence (a system without user namespaces): a daemon left in the run's own session
    is ended with it. (One that starts a session of its own survives: the report says the run
    was not fenced.)"""
    lock, outcome, _ = run_hostile(tmp_path, fence=False, session=False)
    assert outcome == "killed"  # nothing stops it here: the fence is what would
    wait_until(lambda: lock_is_free(lock), what="the daemon ended with its group")


def test_the_plan_covers_everything_but_what_the_window_needs(tmp_path: Path) -> None:
    """The teacher's home: covered entry by entry down to what is kept (the venv's packages),
    each other entry whole; a symbolic link is never covered (that would cover where it
    points); a place inside a kept one, or under a place already covered, adds nothing."""
    home = tmp_path / "teacher"
    for folder in ("docs", ".ssh", "venv/lib/site-packages", "venv/include", ".local/share/tkchat"):
        (home / folder).mkdir(parents=True)
    (home / "notes.txt").write_text("marks", encoding="utf-8")
    (home / "to-docs").symlink_to(home / "docs")
    kept = home / "venv" / "lib" / "site-packages"
    plan = hiding_plan([home, home / ".local" / "share" / "tkchat", kept / "x"], [kept])
    assert plan == [
        home / ".local",
        home / ".ssh",
        home / "docs",
        home / "notes.txt",
        home / "venv" / "include",
    ]


needs_covers = pytest.mark.skipif(not covers_available(), reason="no user namespaces here")

# Inside the fence: what the covered places show, and whether a cover comes off.
LOOK = textwrap.dedent(
    """
    import json, os, subprocess, sys
    secret, kept = sys.argv[1], sys.argv[2]
    off = subprocess.run(["umount", secret], capture_output=True).returncode
    print(json.dumps({
        "secret": os.listdir(secret), "kept": open(kept, encoding="utf-8").read(), "off": off,
        "after": os.listdir(secret),
    }))
    """
)


@needs_covers
def test_covered_places_show_nothing_inside_the_fence_and_cannot_be_uncovered(
    tmp_path: Path,
) -> None:
    home = tmp_path / "teacher"
    (home / "chats").mkdir(parents=True)
    (home / "chats" / "conversations.sqlite3").write_text("private", encoding="utf-8")
    (home / "tools").mkdir()
    kept = home / "tools" / "needed.txt"
    kept.write_text("readable", encoding="utf-8")
    plan = hiding_plan([home], [kept.parent])
    command = [sys.executable, "-c", LOOK, str(home / "chats"), str(kept)]
    done = subprocess.run(fenced(command, hide=plan), capture_output=True, text=True, timeout=60)
    seen = json.loads(done.stdout)
    assert seen["secret"] == [] and seen["after"] == []  # covered, and it stays covered
    assert seen["off"] != 0  # umount refused: the cover was made outside the fence
    assert seen["kept"] == "readable"
    assert (home / "chats" / "conversations.sqlite3").read_text(encoding="utf-8") == "private"


def class_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "a_tamperer.py").write_text("class Pipeline:\n    pass\n", encoding="utf-8")
    (folder / "b_honest.py").write_text("class Pipeline:\n    honest = 1\n", encoding="utf-8")
    return folder


def every_file_gets(verdict: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One file's grading stood in for: ``verdict`` on every check."""
    checks = [Check(key, verdict, "a figure") for key in KEYS]
    monkeypatch.setattr(classroom, "grade", lambda setup: Graded(verdict, [], checks))


def test_a_file_that_rewrites_a_classmate_s_changes_nothing_of_their_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = class_folder(tmp_path)
    honest = (folder / "b_honest.py").read_bytes()
    graded: dict[str, bytes] = {}

    def grade(setup: Setup) -> Graded:  # stands in for one file's grading
        path = file_of(setup.mode)
        assert path is not None and path.parent != folder  # a copy, in a folder of its own
        graded[path.name] = path.read_bytes()
        if path.name == "a_tamperer.py":  # what the tamperer's window does while graded
            (folder / "b_honest.py").write_text("class Pipeline:\n    evil = 1\n")
        verdict = "pass" if b"evil" not in path.read_bytes() else "fail"
        return Graded(verdict, [], [Check(key, verdict, "a figure") for key in KEYS])

    monkeypatch.setattr(classroom, "grade", grade)
    assert main(["selftest", "--lang", "en", "--mode", f"{folder}/"]) == 0
    assert graded["b_honest.py"] == honest  # read before any file ran
    table = (folder / "selftest-grades.md").read_text(encoding="utf-8")
    honest_row = next(line for line in table.splitlines() if "b_honest.py" in line)
    assert hashlib.sha256(honest).hexdigest()[:12] in honest_row and "PASS" in honest_row
    assert not list(tmp_path.glob("**/tkchat-graded-*"))  # the copies are gone


def test_the_table_is_printed_first_and_its_digests_name_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = class_folder(tmp_path)
    every_file_gets("pass", monkeypatch)
    assert main(["selftest", "--lang", "en", "--mode", f"{folder}/"]) == 0
    out = capsys.readouterr().out
    for name in ("selftest-grades.md", "selftest-grades.csv"):
        digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert f"{folder / name} (SHA-256 {digest})" in out
    assert out.index("| a_tamperer.py") < out.index("Written:")


def test_a_disk_that_refuses_the_table_loses_no_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = class_folder(tmp_path)
    every_file_gets("fail", monkeypatch)

    def full(path: Path, payload: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(classroom, "write_atomically", full)
    assert main(["selftest", "--lang", "zh", "--mode", f"{folder}/"]) == 1  # the grade stands
    out = capsys.readouterr().out
    assert "| b_honest.py" in out and "Traceback" not in out
    assert out.count("No space left on device") == 2 and "唯一的副本" in out
    assert not (folder / "selftest-grades.md").exists()
