"""The exercises: a pipeline of one's own, loaded safely, run in the window, and graded.

- Unit: ``FILE.py:CLASS`` is a mode; a file that raises, never returns, is not Python, lacks
  the class or does not fit the protocol gets one sentence, in English and Chinese; the
  shipped template, solution and wrong solutions all load; the README's two languages give
  the same commands and the same published answers. (The grade's arithmetic, without a
  window: ``tests/test_selftest_grade.py``.)
- Window: the window survives every bad file (banner, fixed pipeline, answers still stream);
  a student's pipeline streams; one that raises ends its answer with a sentence; a Tk call
  from another thread is stopped, not made — whatever the thread is called.
- ``tkchat selftest`` (real X input, subprocesses): every command of the README, run as
  written, gives its published answer — each shipped wrong pipeline FAILs the checks the
  answers name, the reference solution is never FAILed; a class folder is graded into a
  table, with a file that tampers with the window's figures caught and a throwaway home; a
  ``start`` that never returns is interrupted at the time limit and fails with figures; a
  bad file is not graded.

Each run of the self-test costs seconds, so each is made once and asserted on fully: no
two tests run the same command.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
import tkinter as tk
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.cli import build_parser, main
from tkchat.course.lessons import lessons_dir, load_lessons, repo_root
from tkchat.events import Done, Error
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.i18n import STRINGS
from tkchat.lab.selftest.report import label
from tkchat.lab.selftest.verdict import Check
from tkchat.modes import FIXED, check_mode, is_outside_mode, split_outside_mode
from tkchat.threads import own_thread
from tkchat.ui.base.translator import Translator
from tkchat.ui.teaching import outside
from tkchat.ui.teaching.outside import (
    TK_THREADS,
    GuardedPipeline,
    OutsidePipelineError,
    TkCalledFromThread,
    load_outside_class,
)

EXERCISES = lessons_dir() / "exercises"
SOLUTION = f"{EXERCISES / 'pipeline_solution.py'}:Pipeline"
TEMPLATE = f"{EXERCISES / 'pipeline_template.py'}:Pipeline"
WRONG = {path.stem: f"{path}:Pipeline" for path in sorted((EXERCISES / "wrong").glob("*.py"))}
EN, ZH = Translator("en"), Translator("zh")
CJK = re.compile(r"[\u4e00-\u9fff]")

# Files a student might hand in, each wrong in its own way.
BAD_FILES = {
    "raises": ("import math\n\nVALUE = 1 / 0\n", "raised", ["ZeroDivisionError", "line 3"]),
    "hangs": ("while True:\n    pass\n", "hangs", ["endless loop"]),
    "not_python": ("class Pipeline(\n    def start(self)\n", "syntax", ["line"]),
    "no_class": ("class Other:\n    pass\n", "no_class", ["Pipeline", "Other"]),
    "not_a_class": ("Pipeline = 3\n", "not_class", ["Pipeline"]),
    "no_show": (
        "class Pipeline:\n"
        "    def __init__(self, host):\n        self.host = host\n"
        "    def start(self, view, request):\n        pass\n"
        "    def finish(self, view, *, stopped, error):\n        pass\n",
        "protocol",
        ["show(self, view, chunks)"],
    ),
}


@pytest.fixture
def quick_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with an endless loop is given up on after 3 s rather than 10."""
    monkeypatch.setattr(outside, "IMPORT_LIMIT_S", 3.0)


def student_file(folder: Path, name: str, source: str) -> str:
    """Write a student's file; return its mode."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return f"{path}:Pipeline"


# -- the mode, on the command line -------------------------------------------------------------


def test_a_file_and_class_is_a_mode_and_other_shapes_are_not() -> None:
    assert split_outside_mode("mine.py:Pipeline") == ("mine.py", "Pipeline")
    assert split_outside_mode("C:\\work\\mine.py:Pipeline") == ("C:\\work\\mine.py", "Pipeline")
    for wrong in ("mine.py", "mine.txt:Pipeline", "mine.py:1st", "turbo", "mine.py:"):
        assert not is_outside_mode(wrong)
        with pytest.raises(ValueError, match="FILE.py:CLASS"):
            check_mode(wrong)
    check_mode("fixed")
    check_mode("dir/mine.py:Pipeline")


def test_every_command_takes_a_pipeline_of_ones_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    parser = build_parser()
    assert parser.parse_args(["--mode", "mine.py:Pipeline"]).mode == "mine.py:Pipeline"
    args = parser.parse_args(["selftest", "--mode", "mine.py:P", "--lang", "zh", "--limit", "3"])
    assert (args.mode, args.lang, args.limit) == ("mine.py:P", "zh", 3.0)
    # the backend the README names: scripted (at 2,000 tokens/s), for the self-test alone
    assert (args.backend, args.rate) == ("scripted", None)
    assert parser.parse_args(["bench"]).backend == "llama"
    assert parser.parse_args(["selftest", "--mode", f"{tmp_path}/"]).mode == f"{tmp_path}/"
    with pytest.raises(SystemExit):
        parser.parse_args(["selftest", "--mode", f"{tmp_path / 'none'}/"])
    assert parser.parse_args(["compare", "--broken", "mine.py:P"]).broken == "mine.py:P"
    with pytest.raises(SystemExit):
        parser.parse_args(["--mode", "mine.txt"])
    assert "FILE.py:CLASS" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["compare", "--broken", FIXED])


def test_bench_and_compare_refuse_a_bad_file_with_its_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mode = student_file(tmp_path, "broken_file", "class Pipeline(:\n")
    assert main(["bench", "--backend", "scripted", "--modes", f"fixed,{mode}"]) == 2
    assert "broken_file.py is not valid Python" in capsys.readouterr().err
    assert main(["compare", "--backend", "scripted", "--broken", mode]) == 2
    assert "broken_file.py is not valid Python" in capsys.readouterr().err


# -- loading: one sentence for each way a file can be wrong ------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_gets_one_clear_sentence_in_both_languages(
    tmp_path: Path, quick_import: None, name: str
) -> None:
    source, kind, said = BAD_FILES[name]
    mode = student_file(tmp_path, name, source)
    with pytest.raises(OutsidePipelineError) as caught:
        load_outside_class(mode)
    error = caught.value
    assert error.kind == kind
    english = error.sentence(EN)
    assert f"{name}.py" in english and english.endswith((".", "?"))
    assert "\n" not in english and "Traceback" not in english
    for part in said:
        assert part in english, english
    chinese = error.sentence(ZH)
    assert CJK.search(chinese) and f"{name}.py" in chinese
    assert str(error) == english  # what a command line prints without a translator


def test_a_missing_file_is_said_too(tmp_path: Path) -> None:
    with pytest.raises(OutsidePipelineError, match="does not exist"):
        load_outside_class(f"{tmp_path / 'nowhere.py'}:Pipeline")


def test_the_hang_check_can_tell_a_slow_file_from_an_endless_one(tmp_path: Path) -> None:
    """The child process is killed at the limit, not before: a file that takes a moment at
    import (here 0.5 s) loads."""
    source = (
        "import time\n\ntime.sleep(0.5)\n\n"
        "from tkchat.ui.pipeline import FixedPipeline as Pipeline  # noqa: E402\n"
    )
    mode = student_file(tmp_path, "slow", source)
    assert load_outside_class(mode).__name__ == "FixedPipeline"


@pytest.mark.parametrize("mode", [SOLUTION, TEMPLATE, *WRONG.values()])
def test_the_shipped_exercise_files_load(mode: str) -> None:
    cls = load_outside_class(mode)
    assert {"start", "show", "finish"} <= set(vars(cls))


def test_the_exercises_stay_out_of_the_lessons() -> None:
    """``lessons/exercises`` sits beside the lessons; the lesson loader must not read it."""
    for lang in ("en", "zh"):
        assert all(lesson.path.parent.name == lang for lesson in load_lessons(lang))
    assert sorted(p.name for p in EXERCISES.glob("README.*.md")) == ["README.en.md", "README.zh.md"]
    assert list(EXERCISES.glob("*solution*.py")) == [EXERCISES / "pipeline_solution.py"]


def test_the_exercise_instructions_are_in_step_and_name_real_files() -> None:
    en = (EXERCISES / "README.en.md").read_text(encoding="utf-8")
    zh = (EXERCISES / "README.zh.md").read_text(encoding="utf-8")

    def shape(text: str) -> tuple[int, list[str]]:
        headings = [line for line in text.splitlines() if line.startswith("#")]
        commands = re.findall(r"^(?:tkchat|cp|python) .*$", text, flags=re.M)
        return len(headings), commands

    assert shape(en) == shape(zh)  # the same sections and the very same commands
    assert CJK.search(zh) and not CJK.search(en.replace("中文说明", ""))  # (the link to zh)
    named = set(re.findall(r"[\w/]+\.py", en + zh))
    for path in named:
        if path not in ("mine.py", "pipeline.py"):
            assert (EXERCISES / path).is_file() or (repo_root() / path).is_file(), path


# -- the README: its commands and its published answers ------------------------------------------

# The Answers table's names for the report's checks.
CHECK_NAMES = {
    "Q1": "q1", "Q2": "q2", "Q3": "q3", "Q4": "q4", "lag p99": "lag_p99", "lag max": "lag_max",
    "long tasks": "long_tasks", "tokens/s": "tokens", "Tk thread": "tk_thread", "raised": "raised",
}  # fmt: skip


def readme(lang: str) -> str:
    return (EXERCISES / f"README.{lang}.md").read_text(encoding="utf-8")


def commands_of(text: str) -> list[str]:
    """Every command in the README's ``bash`` blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def answers_of(text: str) -> dict[str, tuple[set[str], set[str]]]:
    """The Answers table: each wrong file's checks that fail, and those that pass."""
    found = {}
    for name, fails, passes in re.findall(r"^\| `(\w+)` \| ([^|]*) \| ([^|]*) \|$", text, re.M):
        found[name] = tuple(
            {CHECK_NAMES[item.strip()] for item in cell.split(",")} for cell in (fails, passes)
        )
    return found  # type: ignore[return-value]


def test_the_readme_gives_the_same_commands_and_answers_in_both_languages() -> None:
    en, zh = readme("en"), readme("zh")
    assert commands_of(en) == commands_of(zh)
    assert answers_of(en) == answers_of(zh)
    answers = answers_of(en)
    assert set(answers) == set(WRONG), "every shipped wrong pipeline has its published answer"
    graded = [c for c in commands_of(en) if c.startswith("tkchat selftest")]
    for name in WRONG:
        assert any(f"wrong/{name}.py:Pipeline" in c for c in graded), name
    for fails, passes in answers.values():
        assert fails and not fails & passes


def test_the_readme_window_commands_parse_and_name_pipelines_that_load(tmp_path: Path) -> None:
    """The commands that open a window (run by hand in class) parse, and what they name
    loads; the self-test's commands are run as written below."""
    parser = build_parser()
    for command in commands_of(readme("en")):
        if not command.startswith("tkchat ") or command.startswith("tkchat selftest"):
            continue
        args = parser.parse_args(command.split()[1:])
        mode = getattr(args, "broken", None) or args.mode
        load_outside_class(mode.replace("mine.py", TEMPLATE.split(":")[0]))


# -- in the window -------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.parametrize("name", ["raises", "hangs", "not_python", "no_class", "no_show"])
def test_the_window_survives_a_bad_file(
    root: tk.Tk, make_app, tmp_path: Path, quick_import: None, name: str
) -> None:
    mode = student_file(tmp_path, name, BAD_FILES[name][0])
    text = long_answer(800)
    app = make_app(ScriptedBackend(rate=0, text=text), mode=mode)
    assert app.flow.answering.pipeline.name == FIXED and app.teaching.mode == FIXED
    assert app.pipelines.problem is not None and f"{name}.py" in app.pipelines.problem
    banner = app.pipelines.banner
    assert banner is not None and banner.shown and app.pipelines.problem in banner.text
    assert "fixed pipeline" in banner.text
    app.flow.send("and yet it answers")
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and bool(app.flow.answering.finished),
        what="the answer",
    )
    assert (
        isinstance(app.flow.answering.finished[-1], Done)
        and app.transcript.answers[-1].text == text
    )


@pytest.mark.gui
def test_a_students_pipeline_streams_in_the_window_and_says_whose_it_is(
    root: tk.Tk, make_app
) -> None:
    text = long_answer(2_000)
    app = make_app(ScriptedBackend(rate=2000, text=text), mode=SOLUTION)
    assert (
        isinstance(app.flow.answering.pipeline, GuardedPipeline)
        and app.flow.answering.pipeline.name == SOLUTION
    )
    assert app.pipelines.banner is None
    root.update()
    assert SOLUTION in app.teaching.mode_box.cget("values")
    assert app.teaching.warning.winfo_ismapped()
    assert f"tkchat selftest --mode {SOLUTION}" in app.teaching.warning.cget("text")
    assert SOLUTION in root.title() and "BROKEN" not in root.title()
    for mode in (SOLUTION, FIXED, SOLUTION):  # away and back: made again, from the same class
        app.teaching.set_mode(mode)
        app.flow.new_chat()
        app.flow.send("stream, please")
        pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
        assert app.flow.answering.pipeline.name == mode
        assert (
            isinstance(app.flow.answering.finished[-1], Done)
            and app.transcript.answers[-1].text == text
        )


@pytest.mark.gui
def test_the_untouched_template_ends_its_answer_with_a_sentence(root: tk.Tk, make_app) -> None:
    """``start`` raises NotImplementedError (and so does ``finish``): the answer ends at
    once, saying so, and the next answer in the fixed pipeline streams as usual."""
    app = make_app(ScriptedBackend(rate=0, text="hello there"), mode=TEMPLATE)
    app.flow.send("hello")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer to end")
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Error) and "start()" in final.message
    assert "NotImplementedError" in final.message and "line" in final.message
    assert final.message in app.transcript.plain_text()
    assert isinstance(app.flow.answering.pipeline, GuardedPipeline)
    assert any("finish()" in sentence for sentence in app.flow.answering.pipeline.raised)
    app.teaching.set_mode(FIXED)
    app.flow.send("again")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the next answer")
    assert isinstance(app.flow.answering.finished[-1], Done)
    assert app.transcript.answers[-1].text == "hello there"


@pytest.mark.gui
def test_a_show_that_raises_ends_the_answer_and_the_window_goes_on(
    root: tk.Tk, make_app, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mode = student_file(
        tmp_path,
        "bad_show",
        "from tkchat.ui.pipeline import FixedPipeline\n\n\n"
        "class Pipeline(FixedPipeline):\n"
        "    def show(self, view, chunks):\n"
        "        raise KeyError('no such chunk')\n",
    )
    app = make_app(ScriptedBackend(rate=200, text=long_answer(800)), mode=mode)
    app.flow.send("hello")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer to end")
    said = "Your pipeline's show() raised KeyError: 'no such chunk' (line 6)"
    assert said in app.status.get() and said in app.transcript.plain_text()
    assert not app.controller.is_generating()  # Stop means the model stops
    assert any("tick failed" in r.getMessage() for r in caplog.records)
    caplog.clear()  # the pump logs a failing tick once: expected here


@pytest.mark.gui
def test_a_tk_call_from_another_thread_is_stopped_not_made(root: tk.Tk) -> None:
    TK_THREADS.install()
    before = TK_THREADS.count
    caught: list[BaseException] = []

    def worker() -> None:
        try:
            root.tk.call("info", "patchlevel")
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=worker, name="student-thread")
    thread.start()
    thread.join(10)
    assert len(caught) == 1 and isinstance(caught[0], TkCalledFromThread)
    assert not isinstance(caught[0], Exception)  # ``except Exception`` cannot swallow it
    first = TK_THREADS.first_since(before)
    assert first is not None and first.thread == "student-thread"
    assert first.where.startswith("test_exercises.py line ")
    assert "only the main thread" in str(caught[0])
    root.tk.call("info", "patchlevel")  # the main thread is not watched


@pytest.mark.gui
def test_a_thread_is_known_by_what_started_it_never_by_its_name(root: tk.Tk) -> None:
    """A student's thread named like tkchat's own is stopped at its first call into Tk; a
    thread tkchat started is not watched at all."""
    TK_THREADS.install()
    before = TK_THREADS.count
    caught: list[BaseException] = []

    def worker() -> None:
        try:
            root.tk.call("info", "patchlevel")
        except BaseException as exc:
            caught.append(exc)

    feeder = threading.Thread(target=worker, name="tkchat-feeder")
    feeder.start()
    feeder.join(10)
    assert len(caught) == 1 and isinstance(caught[0], TkCalledFromThread)
    first = TK_THREADS.first_since(before)
    assert first is not None and first.thread == "tkchat-feeder"
    own = own_thread(lambda: None, name="no-prefix-needed")
    own.start()
    own.join(10)
    assert TK_THREADS.count == before + 1


# -- tkchat selftest: the grade, with real X input ----------------------------------------------

REPORTED = ("q1", "q2", "q3", "q4", "lag_p99", "lag_max", "long_tasks", "tokens", "tk_thread")
CORRECT = """\
class Pipeline:
    name = "mine"
    broken = False
    coalesce = True

    def __init__(self, host):
        self.host = host

    def start(self, view, request):
        gen = self.host.controller.start(request)
        self.host.consumer.follow(gen)

    def show(self, view, chunks):
        text = ""
        for chunk in chunks:
            text += chunk
        self.host.transcript.append(view, text)

    def finish(self, view, *, stopped, error):
        self.host.transcript.finish(view, stopped=stopped, error=error)
"""
# A blocking pipeline that hides it: the figures the window reports are made smooth, the
# grader's own functions are replaced in the window's process, and it notes where it ran.
TAMPER = """\
import os
import time
from pathlib import Path

from tkchat.lab.selftest import protocol, report
from tkchat.ui.pipeline import FixedPipeline

Path({seen!r}).write_text(f"{{Path.home()}}\\n{{os.environ.get('TKCHAT_DATA_DIR')}}\\n")
send = protocol.Reporter.send


def smooth(self, kind, **fields):
    if kind == "lag":
        fields["s"] = [[at, 0.0] for at, _lag in fields["s"]]
    return send(self, kind, **fields)


protocol.Reporter.send = smooth
report.grade_line = lambda *a, **k: "Grade: PASS - patched."


class Pipeline(FixedPipeline):
    def start(self, view, request):
        time.sleep(0.6)
        super().start(view, request)
"""


ENDLESS = """\
from tkchat.ui.pipeline import FixedPipeline


class Pipeline(FixedPipeline):
    def start(self, view, request):
        while True:
            pass
"""
# Not a README command: a start() that never returns, interrupted at a short limit.
INTERRUPTED = "tkchat selftest --lang en --mode endless.py:Pipeline --limit 2"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the README's commands run as written: the repository's lessons, the
    ``cp`` of the template done, and a class's folder of submissions."""
    folder = tmp_path_factory.mktemp("exercise")
    (folder / "lessons").symlink_to(repo_root() / "lessons")
    for command in commands_of(readme("en")):
        if command.startswith("cp "):
            source, target = command.split()[1:]
            (folder / target).write_bytes((folder / source).read_bytes())
    submissions = folder / "submissions"
    submissions.mkdir()
    (submissions / "correct.py").write_text(CORRECT, encoding="utf-8")
    seen = folder / "seen.txt"
    (submissions / "tamper.py").write_text(TAMPER.format(seen=str(seen)), encoding="utf-8")
    (submissions / "broken.py").write_text("class Pipeline(:\n", encoding="utf-8")
    (submissions / "helper.py").write_text("HELP = 1\n", encoding="utf-8")
    (folder / "endless.py").write_text(ENDLESS, encoding="utf-8")
    return folder


def verdicts_of(out: str) -> dict[str, str]:
    """Each check's verdict by key, from an English report."""
    found: dict[str, str] = {}
    for key in REPORTED:
        name = label(EN, Check(key, "pass", "", {"bound_ms": 16.0}))
        name = re.escape(name).replace("16", r"[\d.]+")
        verdict = re.search(rf"^  (PASS|FAIL|BUSY)\s+{name}:", out, flags=re.M)
        if verdict:
            found[key] = verdict.group(1)
    return found


def run_readme(command: str, cwd: Path, display: str | None = None) -> tuple[int, str, str]:
    """One of the README's commands, as a student types it (``tkchat`` is this tkchat)."""
    env = dict(os.environ, **({"DISPLAY": display} if display else {}))
    done = subprocess.run(
        [sys.executable, "-m", "tkchat", *command.split()[1:]],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env=env,
    )
    return done.returncode, done.stdout, done.stderr


SELFTESTS = [c for c in commands_of(readme("en")) if c.startswith("tkchat selftest")]


@contextmanager
def second_screen() -> Iterator[str]:
    """A virtual screen of its own, so that two self-tests can run at once: each clicks
    where its own window is."""
    for number in range(200, 300):
        if Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():
            continue
        xvfb = subprocess.Popen(
            ["Xvfb", f":{number}", "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            pump = time.monotonic() + 10
            while not Path(f"/tmp/.X11-unix/X{number}").exists() and xvfb.poll() is None:
                if time.monotonic() > pump:
                    break
                time.sleep(0.05)
            if xvfb.poll() is None:
                yield f":{number}"
                return
        finally:
            xvfb.terminate()
            xvfb.wait(10)
    raise RuntimeError("no free display number for a second virtual screen")


@pytest.fixture(scope="module")
def readme_runs(display: None, workspace: Path) -> dict[str, tuple[int, str, str]]:
    """Every self-test command of the README, run as written, and the endless ``start``,
    two at a time (each on a screen of its own): a wrong pipeline must FAIL whatever else
    the machine does, and the right ones may come out BUSY but never FAIL — so the load they
    put on each other is part of the test, and the file takes half the time."""
    order = sorted([*SELFTESTS, INTERRUPTED], key=lambda c: "submissions" not in c)
    with second_screen() as screen, ThreadPoolExecutor(2) as pool:
        free: queue.Queue[str | None] = queue.Queue()
        for one in (None, screen):  # None: the session's own screen
            free.put(one)

        def run(command: str) -> tuple[int, str, str]:
            mine = free.get()  # one self-test a screen at a time
            try:
                return run_readme(command, workspace, mine)
            finally:
                free.put(mine)

        futures = {command: pool.submit(run, command) for command in order}
        return {command: future.result() for command, future in futures.items()}


def _command_id(command: str) -> str:
    words = command.split()[2:]
    return "-".join(Path(w.split(":")[0]).stem if ":" in w else w.strip("-/") for w in words)


@pytest.mark.gui
@pytest.mark.parametrize("command", SELFTESTS, ids=[_command_id(c) for c in SELFTESTS])
def test_the_readme_selftest_command_gives_its_published_answer(
    readme_runs: dict[str, tuple[int, str, str]], workspace: Path, command: str
) -> None:
    code, out, err = readme_runs[command]
    # (what the student's code itself prints, a traceback included, goes to stderr)
    assert "Traceback" not in out, out + err
    if "submissions/" in command:
        return check_the_class(code, out, workspace)
    verdicts = verdicts_of(out)
    wrong = re.search(r"wrong/(\w+)\.py", command)
    if "--lang zh" in command:
        assert code == 1 and STRINGS["zh"]["selftest.pass"] in out  # the template, in Chinese
        assert re.search("^评分：未通过", out, flags=re.M), out
    elif wrong:
        fails, passes = answers_of(readme("en"))[wrong.group(1)]
        assert code == 1, out
        assert {key for key in fails if verdicts.get(key) != "FAIL"} == set(), out
        assert {key for key in passes if verdicts.get(key, "PASS") == "FAIL"} == set(), out
    elif "mine.py" in command:  # the untouched template: start() raises
        assert code == 1 and verdicts["q2"] == "FAIL", out
        assert "start() raised NotImplementedError" in out
    else:  # the reference solution: never FAILed
        assert "pipeline_solution.py" in command
        assert code in (0, 3) and "FAIL" not in verdicts.values(), out
        assert len(verdicts) == len(REPORTED) and re.search(r"SHA-256 [0-9a-f]{64}", out)


def check_the_class(code: int, out: str, workspace: Path) -> None:
    """The class at once: a table of the folder's pipelines (not the helper), the tampering
    file FAILed on its figures whatever it patched, and every file run with a home of its
    own."""
    folder = workspace / "submissions"
    table = (folder / "selftest-grades.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()[2:]}
    assert set(rows) == {"broken.py", "correct.py", "tamper.py"}, table
    assert code == 1 and table in out + "\n", out
    assert " NONE " in rows["broken.py"] and "SyntaxError" in rows["broken.py"]
    assert " FAIL " not in rows["correct.py"], rows["correct.py"]
    tamper = rows["tamper.py"].split(" | ")
    assert tamper[-2] == "FAIL" and tamper[-3] == "FAIL", rows["tamper.py"]  # figures, grade
    assert "patched" not in out
    home, data = (workspace / "seen.txt").read_text(encoding="utf-8").split()
    assert Path(home) != Path.home() and not Path(home).exists()  # made for the run, gone
    assert Path(data).is_relative_to(home)
    csv_rows = (folder / "selftest-grades.csv").read_text(encoding="utf-8").splitlines()
    assert len(csv_rows) == 4 and csv_rows[0].startswith("file,sha256,q1,")


@pytest.mark.gui
def test_selftest_interrupts_a_start_that_never_returns(
    readme_runs: dict[str, tuple[int, str, str]],
) -> None:
    code, out, err = readme_runs[INTERRUPTED]
    assert code == 1, out + err
    verdicts = verdicts_of(out)
    assert verdicts["q1"] == verdicts["q3"] == "FAIL"
    assert "wall-clock limit of 2 s" in out and "the self-test interrupted it" in out
    clicks = re.search(r"worst click handled ([\d.]+) ms", out)
    assert clicks and float(clicks.group(1)) > 100  # handled, late: a figure, not "never"
    assert "start() had not returned after 2 s" in out


@pytest.mark.gui
def test_selftest_does_not_grade_a_file_it_cannot_load(display: None, tmp_path: Path) -> None:
    mode = student_file(tmp_path, "typo", "class Pipeline:\n    def start(self\n")
    said = {"en": "is not valid Python", "zh": "不是合法的 Python"}
    with ThreadPoolExecutor(2) as pool:  # no window opens: the two languages at once
        futures = {
            lang: pool.submit(run_readme, f"tkchat selftest --lang {lang} --mode {mode}", tmp_path)
            for lang in said
        }
    runs = {lang: future.result() for lang, future in futures.items()}
    for lang, (code, out, err) in runs.items():
        assert code == 2, out + err
        assert said[lang] in out and "typo.py" in out
        assert STRINGS[lang]["selftest.grade.none"] in out
        assert "Traceback" not in out + err
