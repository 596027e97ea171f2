"""``tkchat selftest``: the grader's process. It starts the window in a child process, plays
the user (:mod:`.driver`), measures the heartbeat from outside, and computes and prints the
grade — and it never imports the pipeline's file.

**What the child gets.** A home of its own, made for this run and deleted after it
(``HOME``, and ``TKCHAT_DATA_DIR`` and the ``XDG_*`` folders in it where this environment
names them), as its working directory too, and the command line of an ordinary window
(``tkchat --mode FILE.py:CLASS``; the grader's setup goes on stdin, docs/security.md):
the teacher's saved conversations and settings are not where the student's code looks for
them. Where Linux allows, the process is fenced (:mod:`tkchat.lab.fence`: namespaces of its
own, so nothing it starts outlives it, it cannot signal this process, and it has no
network). It is *not* a sandbox for files: the file is Python, run with the teacher's rights,
and can read or change any file the teacher can (the lessons' README says so to the student
and to the teacher). What the separate process buys is a grade that the graded code cannot compute:
patching the grader, or the figures in its own process, cannot change what this process
measures itself — when it injected each input, and the window's heartbeat.

**Too busy to judge.** A check that was late mostly outside the pipeline's calls is BUSY,
not FAIL (:mod:`.verdict`). A run with BUSY checks and no FAIL is run again, baselines and
all; if the machine stays that busy, the grade says so — exit status 3, never advice aimed
at the student's code.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tkchat.i18n import strings
from tkchat.lab.display import ensure_display
from tkchat.lab.fence import covers_available, end_group, fence_available, fenced, hiding_plan
from tkchat.lab.selftest.attribution import outside_calls, spans_of
from tkchat.lab.selftest.driver import BASELINE_KEYS, Driver, GaveUp, Question
from tkchat.lab.selftest.protocol import (
    Commands,
    ModelRun,
    Probed,
    WindowState,
    read_reports,
    within,
)
from tkchat.lab.selftest.questions import question_check
from tkchat.lab.selftest.report import grade_of, label, report
from tkchat.lab.selftest.senses import Heartbeat, OwnStalls
from tkchat.lab.selftest.targets import Measured, target_checks, text_waits
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS, QUESTIONS, Check
from tkchat.lab.xwitness import OutsideSeen, XWitness
from tkchat.modes import split_outside_mode
from tkchat.stats import median
from tkchat.store.files import data_dir

TKCHAT_ROOT = Path(__file__).resolve().parents[3]  # the same tkchat as this process, for the child
ATTEMPTS = 3  # a run that stays too busy to judge after this many is reported as such
NONE = "none"  # not graded: the pipeline could not be used, or the self-test could not run
EXIT = {PASS: 0, FAIL: 1, NONE: 2, BUSY: 3}
CHILDREN = {"tk": "tkchat.lab.selftest.child", "qt": "tkchat.lab.selftest.qt_child"}
READY_S = 120.0  # model loading


@dataclass
class Setup:
    """One self-test, as asked on the command line."""

    mode: str
    backend: str
    model: str | None
    rate: float
    language: str
    limit_s: float
    tokens: int | None = None
    toolkit: str = "tk"
    quiet: bool = False  # the child's own output goes nowhere (a class at once)
    deadline: float | None = None  # time.monotonic() past which the window's process is ended
    hide: tuple[str, ...] = ()  # more places hidden from the window (a class's folder)


@dataclass
class Graded:
    grade: str  # PASS, FAIL, BUSY or NONE
    lines: list[str]
    checks: list[Check] = field(default_factory=list)
    sha256: str = ""
    problem: str | None = None
    timed_out: bool = False  # the deadline ended it


def file_of(mode: str) -> Path | None:
    parts = split_outside_mode(mode)
    return None if parts is None else Path(parts[0]).expanduser().resolve()


def sha256_of(path: Path | None) -> str:
    try:
        return "" if path is None else hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def run_selftest(setup: Setup) -> int:
    """The command: grade, print, and exit 0 (PASS), 1 (FAIL), 2 (not graded) or 3 (the
    machine was too busy to judge)."""
    t = strings(setup.language)
    if shutil.which("xdotool") is None:
        print(t("selftest.no_xdotool"), file=sys.stderr)
        return 2
    graded = grade(setup, on_retry=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(graded.lines))
    return EXIT[graded.grade]


@dataclass
class Attempt:
    """One run of the window, judged: its checks (or why there are none)."""

    checks: list[Check] = field(default_factory=list)
    measured: Measured | None = None
    complete: bool = False  # every question was asked
    ending: list[str] = field(default_factory=list)  # why the run ended early, if it did
    problem: str | None = None  # the pipeline could not be used: nothing was graded
    timed_out: bool = False


def grade(setup: Setup, on_retry: Callable[[str], None] = lambda _line: None) -> Graded:
    """Grade one pipeline. While some checks are BUSY and none fails, run it again,
    baselines and all: a check keeps the first verdict that judged it (PASS or FAIL), so a
    machine busy at different moments in different runs still gets every check judged."""
    t = strings(setup.language)
    ensure_display()
    path = file_of(setup.mode)
    digest = sha256_of(path)
    header = _header(setup, path, digest)
    decided: dict[str, tuple[Check, int]] = {}
    runs: list[Attempt] = []
    for number in range(1, ATTEMPTS + 1):
        run = attempt(setup)
        runs.append(run)
        if run.problem is not None:
            return Graded(NONE, [run.problem, t("selftest.grade.none")], [], digest, run.problem)
        for check in run.checks:
            if check.key not in decided or decided[check.key][0].verdict == BUSY:
                decided[check.key] = (check, number)
        busy = [check for check, _n in decided.values() if check.verdict == BUSY]
        failed = any(check.verdict == FAIL for check, _n in decided.values())
        if failed or not busy or not run.complete or run.timed_out or number == ATTEMPTS:
            break
        names = t("selftest.list_separator").join(label(t, check) for check in busy)
        line = t("selftest.retry", attempt=number + 1, total=ATTEMPTS, names=names)
        header.append(line)
        on_retry(line)
    for check, number in decided.values():
        if number > 1:
            check.notes.append(t("selftest.note.attempt", attempt=number))
    checks = [check for check, _n in decided.values()]
    complete = set(QUESTIONS) <= set(decided)
    lines = report(t, header, checks, runs[0].measured, complete=complete)
    lines[-1:-1] = runs[-1].ending
    grade_now = grade_of(checks, complete=complete)
    return Graded(grade_now, lines, checks, digest, timed_out=runs[-1].timed_out)


# The window's command line, as ``pip install --user tkchat`` would start it: a console
# script in the home's ``.local/bin``, whose code runs the window's process. (Its setup comes
# on stdin: :func:`tkchat.lab.selftest.child.read_setup`.)
LAUNCHER = """import sys

from {module} import main

if __name__ == "__main__":
    sys.exit(main())
"""


@contextmanager
def _child(setup: Setup) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """The window's process, with its own home; yields it and the report and beat pipes."""
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / _user()
        launcher = home / ".local" / "bin" / "tkchat"
        launcher.parent.mkdir(parents=True)
        launcher.write_text(LAUNCHER.format(module=CHILDREN[setup.toolkit]), encoding="utf-8")
        report_r, report_w = os.pipe()
        beat_r, beat_w = os.pipe()
        mode = setup.mode
        path = file_of(mode)
        keep = kept_for_window(home, setup.model)
        if path is not None:
            mode = f"{path}:{split_outside_mode(mode)[1]}"  # type: ignore[index]
            keep.append(path.parent)  # what it imports beside it (a class: its turn's copy)
        hide = hiding_plan([Path.home(), data_dir(), *map(Path, setup.hide)], keep)
        out = subprocess.DEVNULL if setup.quiet else sys.stderr
        process = subprocess.Popen(
            fenced([sys.executable, str(launcher), "--mode", mode], hide=hide),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=out,
            pass_fds=(report_w, beat_w),
            env=child_env(home),
            cwd=home,
            start_new_session=True,  # its process group is ended after it (no fence)
        )
        os.close(report_w)
        os.close(beat_w)
        _send_setup(process, setup, mode, (report_w, beat_w))
        left = None if setup.deadline is None else setup.deadline - time.monotonic()
        timer = threading.Timer(max(0.0, left or 0.0), process.kill)
        if left is not None:
            timer.daemon = True
            timer.start()
        try:
            yield process, report_r, beat_r
        finally:
            timer.cancel()
            _end(process)


def kept_for_window(home: Path, model: str | None) -> list[Path]:
    """What the window's process needs to read where the teacher's files are hidden: Python
    and its packages (this process's ``sys.path``, less the folder it was started in), this
    tkchat, the model, the display's key, and its own home."""
    here = {"", os.getcwd()}
    keep = [Path(entry) for entry in sys.path if entry not in here and os.path.exists(entry)]
    keep += [Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    keep += [Path(sys.executable).parent, Path(os.path.realpath(sys.executable)), home]
    keep.append(TKCHAT_ROOT)
    for named in (model, os.environ.get("TKCHAT_MODEL"), os.environ.get("XAUTHORITY")):
        if named:
            keep.append(Path(named).expanduser())
    keep.append(Path.home() / ".Xauthority")
    return keep


def _user() -> str:
    """The home's name: the teacher's user name, as a home's usually is."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        name = ""
    return name if name.isidentifier() else "user"


def _send_setup(
    process: subprocess.Popen[bytes], setup: Setup, mode: str, fds: tuple[int, int]
) -> None:
    """The window's setup, its first line on stdin (the descriptors keep their numbers)."""
    given = {
        "mode": mode,
        "backend": setup.backend,
        "rate": setup.rate,
        "lang": setup.language,
        "limit": setup.limit_s,
        "report_fd": fds[0],
        "beat_fd": fds[1],
        "model": str(Path(setup.model).expanduser().resolve()) if setup.model else None,
        "tokens": setup.tokens,
    }
    assert process.stdin is not None
    with contextlib.suppress(OSError):  # it died at once: its report pipe says so
        process.stdin.write((json.dumps(given) + "\n").encode())
        process.stdin.flush()


def child_env(home: Path) -> dict[str, str]:
    """The environment of the window's process: this one's, with a home of its own — and
    the data and XDG folders moved into it where this environment names them (where it does
    not, tkchat finds them in the home, as an ordinary window's environment would leave
    it)."""
    env = dict(os.environ)
    if "XAUTHORITY" not in env and (Path.home() / ".Xauthority").exists():
        env["XAUTHORITY"] = str(Path.home() / ".Xauthority")  # the display's key stays
    if "TKCHAT_MODEL" in env:
        env["TKCHAT_MODEL"] = str(Path(env["TKCHAT_MODEL"]).expanduser())
    root = str(TKCHAT_ROOT)
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    paths = [root, *env.get("PYTHONPATH", "").split(os.pathsep), user_site]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["HOME"] = str(home)
    for name, folder in (
        ("TKCHAT_DATA_DIR", ".local/share/tkchat"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        if name in env:
            env[name] = str(home / folder)
    return env


def _end(process: subprocess.Popen[bytes]) -> None:
    """Ask the window to close; past a few seconds, end it."""
    if process.stdin is not None:
        try:
            process.stdin.write(b"close\n")
            process.stdin.close()
        except OSError:
            pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    end_group(process)  # what it started is gone too (tkchat/lab/fence.py)


def attempt(setup: Setup) -> Attempt:
    """One run of the window, judged — the X server's witness watching it from outside."""
    x = XWitness()
    if setup.toolkit == "tk":
        x.start()  # before the window's process: the windows there now are not its
    try:
        return _attempt(setup, x)
    finally:
        x.stop()


def _attempt(setup: Setup, x: XWitness) -> Attempt:
    t = strings(setup.language)
    with _child(setup) as (process, report_fd, beat_fd):
        state = WindowState()
        reader = read_reports(os.fdopen(report_fd, "rb"), state)
        heartbeat = Heartbeat(beat_fd)
        heartbeat.start()
        stalls = OwnStalls()
        stalls.start()
        assert process.stdin is not None
        driver = Driver(
            state,
            Commands(process.stdin),
            heartbeat,
            backend=setup.backend,
            limit_s=setup.limit_s,
            t=t,
        )
        within(lambda: bool(state.points or state.problem or state.ended), READY_S)
        if state.problem is not None or (state.ended and not state.points):
            reader.join(5)
            return Attempt(problem=state.problem or t("selftest.window_ended", code=process.poll()))
        ending: list[str] = []
        x.watch(state.window)
        try:
            driver.run()
        except GaveUp:
            ending.append(t("selftest.gave_up"))
            process.kill()
        except (TimeoutError, OSError, subprocess.SubprocessError) as exc:
            ending.append(t("selftest.could_not_finish", error=exc))
        finally:
            driver.x.close()
            outside = x.stop()  # (before the window closes: its last pings go unanswered)
        stalls.running = False
    reader.join(5)
    checks, measured = judge(setup, driver, state, heartbeat, stalls, outside)
    complete = len(driver.questions) == len(QUESTIONS)
    if ending and ending[0] == t("selftest.gave_up"):
        checks = _unanswered(t, checks)
    late = setup.deadline is not None and time.monotonic() >= setup.deadline
    return Attempt(checks, measured, complete, ending, timed_out=late)


def _unanswered(t: Callable[..., str], checks: list[Check]) -> list[Check]:
    """The questions a window that never came back was not asked: each a FAIL that says so
    (the grade is a FAIL anyway; the report names every question the pipeline lost)."""
    asked = {check.key for check in checks}
    lost = [
        Check(key, FAIL, t("selftest.unanswered"), why=t("selftest.why.unanswered"))
        for key in QUESTIONS
        if key not in asked
    ]
    questions = sorted([c for c in checks if c.key in QUESTIONS] + lost, key=lambda c: c.key)
    return questions + [c for c in checks if c.key not in QUESTIONS]


def _header(setup: Setup, path: Path | None, digest: str) -> list[str]:
    t = strings(setup.language)
    rate = t("selftest.rate", rate=f"{setup.rate:g}") if setup.backend == "scripted" else ""
    mode = setup.mode if setup.toolkit == "tk" else f"Qt {setup.mode}"
    lines = [t("selftest.title", mode=mode, backend=setup.backend, rate=rate)]
    if path is not None:
        lines.append(t("selftest.file", path=path, sha256=digest or "?"))
    lines.append(t("selftest.isolated"))
    fence = "fenced_hidden" if covers_available() else "fenced"
    lines.append(t(f"selftest.{fence}" if fence_available() else "selftest.unfenced"))
    lines.append(t("selftest.limit", seconds=f"{setup.limit_s:g}"))
    return lines


def _lags(probes: list[Probed], spans: list[tuple[float, float]]) -> list[Probed]:
    return [s for s in probes if any(start <= s.at <= end for start, end in spans)]


def _per_token(runs: list[ModelRun], figure: str) -> float | None:
    """A pass figure (``slept_s``, ``queued_s``) summed over ``runs``, per token they gave;
    None where a pass did not say, or no token came."""
    values = [getattr(run, figure) for run in runs]
    tokens = sum(len(run.times) for run in runs)
    if not runs or tokens == 0 or any(value is None for value in values):
        return None
    return float(sum(values)) / tokens


def judge(
    setup: Setup,
    driver: Driver,
    state: WindowState,
    heartbeat: Heartbeat,
    stalls: OwnStalls,
    outside: OutsideSeen | None = None,
) -> tuple[list[Check], Measured | None]:
    """The checks, from what the driver gathered and the window reported."""
    t = strings(setup.language)
    spans = spans_of(state.calls)
    probes = outside_calls(state.lag, state.calls)
    asked = sorted(driver.questions, key=lambda q: q.key)
    checks = [question_check(t, q, spans, probes, state.whose.get(q.key)) for q in asked]
    if setup.toolkit != "tk":
        return checks, None  # the Qt window loads no pipeline of one's own: questions only
    streamed = [q for q in asked if q.key in ("q1", "q3")]
    whose = [state.whose[q.key] for q in streamed if q.key in state.whose]
    runs = [run for q in streamed for run in q.extra.get("runs", [])]
    raw = driver.raw
    measured = Measured(
        idle=_lags(probes, [driver.idle] if driver.idle else []),
        baseline=_lags(probes, [(r.started, r.closed or r.started) for r in raw]),
        streaming=_lags(probes, [q.span for q in streamed]),
        raw_tokens_per_s=median([r.tokens_per_s for r in raw if r.tokens_per_s is not None]),
        tokens_per_s=median([r.tokens_per_s for r in runs if r.tokens_per_s is not None]),
        flood=setup.backend == "scripted",
        calls=state.calls,
        streamed=[(r.times[0], r.times[-1]) for r in runs if len(r.times) > 1],
        slept_per_token_s=_per_token(runs, "slept_s"),
        raw_slept_per_token_s=_per_token(raw, "slept_s"),
        queued_per_token_s=_per_token(runs, "queued_s"),
        tk_calls=state.tk_calls,
        first_tk_call=state.first_tk_call,
        raised=state.raised,
        lag_all=state.lag,
        gaps=heartbeat.gaps(),
        own_stalls=stalls.stalls,
        whose=whose,
        baseline_whose=[state.whose[key] for key in BASELINE_KEYS if key in state.whose],
        outside=outside,
        text_tokens=sum(len(r.times) for r in runs),
        text_waits=_text_waits(streamed, state.shown),
    )
    return checks + target_checks(t, measured), measured


def _text_waits(streamed: list[Question], shown: list[float]) -> list[tuple[float, float]]:
    """Each streamed question's tokens with the next time text reached the screen in it."""
    found: list[tuple[float, float]] = []
    for q in streamed:
        start, end = q.span
        screen = sorted(at for at in shown if start <= at <= end)
        tokens = sorted(at for run in q.extra.get("runs", []) for at in run.times)
        found += text_waits(tokens, screen)
    return found
