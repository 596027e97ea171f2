"""The class plan (lessons/plan.en.md, lessons/plan.zh.md) and the lessons' "Try it" commands:
every lesson the plan names exists, every command it or a lesson gives parses, the two languages
plan the same class — and every command of the plan runs, as written, and sets up what the
plan says: the window opens with the lessons and large text, the pre-class check changes
nothing and says what a failed claim means, the page's server floods the page at the plan's
rate and each broken switch of the page moves the work it names onto the page's main thread,
compare's broken window streams long enough to act in, lesson 16's measurement runs, and the
self-test's commands grade what the plan answers (from the figures each pipeline makes).
How long the broken page and windows freeze on a given machine is the bench's to measure."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import tkinter as tk
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import test_browser
from tests.conftest import pump_until, tkchat_windows, wait_until, window_name
from tkchat.cli import build_parser, main
from tkchat.course.lessons import LANGUAGES, Lesson, lessons_dir, load_lessons, plan_path
from tkchat.trace.culprit import Culprit
from tkchat.ui.look.fit import text_as_written

# The page, the browser and the server come from test_browser's fixtures.
browser = test_browser.browser
open_page = test_browser.open_page
serve = test_browser.serve

PLANS = {lang: plan_path(lang).read_text(encoding="utf-8") for lang in LANGUAGES}
COMMAND_RE = re.compile(r"`(tkchat(?: [^`]*)?)`")
# How the Chinese plan begins each compare command: walked in Chinese, the plan's compare
# commands opened two English windows in a Chinese class.
ZH_COMPARE = "tkchat compare --lang zh"


def named_lessons(plan: str) -> set[str]:
    """Lesson numbers the plan names: in its headings, in the lesson column of its tables,
    and in the demos it asks the teacher to check before class (``--only``)."""
    numbers: set[str] = set()
    for line in plan.splitlines():
        if line.startswith("### "):
            numbers |= set(re.findall(r"\b(\d\d)\b", line.split("（")[0].split("(")[0]))
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if len(cells) >= 2:
                numbers |= set(re.findall(r"(?<![\d–])\b(\d\d)\b(?![\d–])", cells[1]))
    for only in re.findall(r"--only ([\d,]+)", plan):
        numbers |= set(only.split(","))
    return numbers


def commands(text: str) -> list[str]:
    return COMMAND_RE.findall(text)


def test_every_lesson_the_plan_names_exists_in_both_languages() -> None:
    ids = {lang: {lesson.id[:2] for lesson in load_lessons(lang)} for lang in LANGUAGES}
    for lang, plan in PLANS.items():
        named = named_lessons(plan)
        assert {"01", "04", "12", "16", "17"} <= named, named  # the parse finds them
        assert named <= ids[lang], f"plan.{lang}.md names lessons that do not exist"
    assert named_lessons(PLANS["en"]) == named_lessons(PLANS["zh"])


def in_english(command: str) -> str:
    """A command of the Chinese plan as the English plan gives it."""
    return command.replace(ZH_COMPARE, "tkchat compare")


def test_the_two_plans_give_the_same_commands_and_both_lengths() -> None:
    """The same commands, the Chinese plan's compare commands in Chinese (``--lang zh``)."""
    zh = commands(PLANS["zh"])
    compares = [command for command in zh if command.startswith("tkchat compare")]
    assert compares and all(command.startswith(ZH_COMPARE) for command in compares), compares
    assert commands(PLANS["en"]) == [in_english(command) for command in zh]
    assert "## The 45-minute version" in PLANS["en"] and "## 45 分钟的版本" in PLANS["zh"]
    assert PLANS["en"].count("**Predict:**") == PLANS["zh"].count("**先猜：**") >= 8
    assert PLANS["en"].count("**Answer:**") == PLANS["en"].count("**Predict:**")
    assert PLANS["zh"].count("**答案：**") == PLANS["zh"].count("**先猜：**")


def _lesson_texts() -> list[tuple[str, str]]:
    texts = [(f"plan.{lang}.md", plan) for lang, plan in PLANS.items()]
    for lang in LANGUAGES:
        texts += [(f"{lang}/{x.id}", x.body) for x in load_lessons(lang)]
    return texts


@pytest.mark.parametrize(
    ("where", "command"),
    [(where, command) for where, text in _lesson_texts() for command in commands(text)],
)
def test_every_command_parses(where: str, command: str) -> None:
    parser = build_parser()
    try:
        parser.parse_args(shlex.split(command)[1:])
    except SystemExit as exc:
        pytest.fail(f"{where}: `{command}` does not parse (exit {exc.code})")


def test_a_command_that_does_not_parse_is_caught() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--no-such-flag"])


def test_the_plan_is_found_beside_the_lessons() -> None:
    assert plan_path("zh") == lessons_dir() / "plan.zh.md"
    assert Path(plan_path("en")).is_file()


def test_lesson_16s_measurement_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The command lesson 16 and the plan give a class, as given (two short scripted answers)."""
    pytest.importorskip("uvicorn")
    command = "tkchat bench --serve-loop --backend scripted --rate 50"
    assert command in PLANS["en"] and command in load_lessons("en")[15].body
    assert main(shlex.split(command)[1:]) == 0
    out = capsys.readouterr().out
    assert "BROKEN ON PURPOSE" in out
    rows = {
        line.split()[0]: line for line in out.splitlines() if line.startswith(("fixed", "broken"))
    }
    assert set(rows) == {"fixed", "broken"}


@pytest.mark.gui
def test_the_lesson_panel_opens_the_plan_in_its_language(root: tk.Tk) -> None:
    from tkchat.i18n.lesson_panel import STRINGS
    from tkchat.ui.teaching.lesson_panel import LessonPanel

    language = {"now": "en"}
    panel = LessonPanel(
        root,
        language="en",
        on_setup_demo=lambda _lesson: None,
        read_figure=lambda _metric: None,
        translate=lambda key: STRINGS[language["now"]][key],
    )
    panel.pack(fill="both", expand=True)
    root.update()
    assert panel.plan_button.cget("text") == "Class plan"
    panel.plan_button.invoke()
    pump_until(root, lambda: not panel.rendering, what="the plan painted")
    shown = text_as_written(panel.text)
    assert "The 90-minute class" in shown and "Predict:" in shown
    panel.picker.current(3)  # picking a lesson brings the lesson back
    panel.picker.event_generate("<<ComboboxSelected>>")
    pump_until(root, lambda: not panel.rendering, what="the lesson painted")
    assert "The 90-minute class" not in text_as_written(panel.text)
    language["now"] = "zh"
    panel.set_language("zh")
    assert panel.plan_button.cget("text") == "课堂计划"
    panel.plan_button.invoke()
    pump_until(root, lambda: not panel.rendering, what="the plan painted")
    assert "先猜" in text_as_written(panel.text)  # without the break spaces
    panel.destroy()


# -- every command of the plan, run as written --------------------------------------------------

PRE_CLASS = "tkchat bench --lessons --only 01,04,05,06,07,11,12,16,17,19,20"
PAGE_SERVER = "tkchat serve --backend scripted --rate 2000 --tokens 4000"
COMPARE = "tkchat compare --projector --backend scripted --rate 300"
COMPARE_ASYNCIO = f"{COMPARE} --broken asyncio-slow-poll"
SELFTEST_RUN = "test_the_plans_selftest_commands_grade_what_the_plan_answers"
# Each command the plans give, and the test that runs it as written (the self-test's two: the
# grade they set up, from the figures their pipelines make; their real runs are the selftest
# bench's).
RUN_BY = {
    "tkchat --teach --projector": "test_the_window_opens_with_the_lessons_and_large_text",
    PRE_CLASS: "test_the_pre_class_check_checks_changes_nothing_and_says_what_a_failure_means",
    PAGE_SERVER: "test_the_page_server_floods_and_each_switch_moves_work_to_the_main_thread",
    "tkchat compare": "test_compare_as_the_plan_gives_it_opens_two_windows",
    COMPARE: "test_compare_as_the_plan_gives_it_opens_two_windows",
    COMPARE_ASYNCIO: "test_compare_as_the_plan_gives_it_opens_two_windows",
    "tkchat bench --serve-loop --backend scripted --rate 50": "test_lesson_16s_measurement_runs",
    "tkchat selftest --mode blocking": SELFTEST_RUN,
    "tkchat selftest": SELFTEST_RUN,
}


def test_every_command_of_the_plan_is_run_by_a_test() -> None:
    assert set(commands(PLANS["en"])) == set(RUN_BY)
    for test in RUN_BY.values():
        assert callable(getattr(sys.modules[__name__], test, None)), test


@pytest.mark.gui
@pytest.mark.model
def test_the_window_opens_with_the_lessons_and_large_text(root: tk.Tk) -> None:
    """ "`tkchat --teach --projector` opens the window with the lesson panel and large text"
    (it opened without the panel); the bundled model, as the command gives it."""
    from tkchat.cli.from_args import backend_options
    from tkchat.cli.window import _app_options
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import make_backend
    from tkchat.store.settings import load_settings
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.settings.text_size import PROJECTOR_SIZE
    from tkchat.ui.window.chat_window import ChatApp

    args = build_parser().parse_args(shlex.split("tkchat --teach --projector")[1:])
    settings, _warning = load_settings()
    backend = make_backend(backend_options(args, faults=True))
    controller = GenerationController(backend, EventChannel())
    app = ChatApp(root, controller, _app_options(args, settings, None))
    controller.load_async()
    pump_until(root, lambda: app.flow.model_ready, timeout=120, what="the bundled model")
    panel = app.teaching.lesson_panel
    assert panel is not None and panel.winfo_ismapped()
    assert app.text_size.projector and app.fonts.size >= PROJECTOR_SIZE
    assert app.teaching.mode_box.winfo_ismapped() and app.health.winfo_ismapped()
    app.close()


@pytest.mark.gui
@pytest.mark.model
def test_the_pre_class_check_checks_changes_nothing_and_says_what_a_failure_means(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan's check, in the bench's real window, both languages of the nine lessons it
    names. The demos themselves are tests/test_demos.py's (run there, once each): here each
    reports its lesson's kept figures, then one fails, to see what the teacher reads."""
    from tkchat.course.claims import figures_path, load_figures
    from tkchat.lab.bench import lesson_demos

    ran: list[tuple[str, str]] = []
    failing: set[str] = set()

    def kept_run(app: object, lesson: Lesson, out: list, **_: object) -> Iterator[float]:
        ran.append((lesson.id[:2], lesson.language))
        figures = _quiet_run(load_figures(figures_path(lessons_dir()))[lesson.id][lesson.language])
        if lesson.id[:2] in failing:
            figures.update(lag_max_ms=1.0, answer_ms=6000.0, cpu_wait_share=0.0)
        baselines = lesson_demos.kept_baselines(figures)
        out.append(lesson_demos.DemoRun(lesson, figures, baselines, _named_culprit(lesson)))
        yield 0.01

    monkeypatch.setattr(lesson_demos, "run_demo", kept_run)
    monkeypatch.setattr(lesson_demos, "BENCH_IDLE_S", 0.3)
    monkeypatch.setattr(lesson_demos, "too_busy", lambda _idle: None)
    kept = figures_path(lessons_dir()).read_bytes()
    assert main(shlex.split(PRE_CLASS)[1:]) == 0
    out = capsys.readouterr().out
    wanted = PRE_CLASS.split("--only ")[1].split(",")
    assert sorted(ran) == sorted((n, lang) for n in wanted for lang in LANGUAGES)
    assert f"{len(ran)} of {len(ran)} demos show what their lesson claims" in out
    assert "Nothing was written" in out and figures_path(lessons_dir()).read_bytes() == kept
    failing.add("04")
    ran.clear()
    assert main(shlex.split(PRE_CLASS)[1:]) == 1
    out = capsys.readouterr().out
    assert "FAILS" in out and "does not show what its lesson says" in out
    assert figures_path(lessons_dir()).read_bytes() == kept


def _named_culprit(lesson: Lesson) -> Culprit:
    """What the sampler names in a broken demo (test_demos checks that it does): the class
    the registry of modes names for the lesson's mode."""
    from tkchat.modes import PIPELINES

    name = PIPELINES[lesson.mode].rpartition(":")[2] + ".start"
    return Culprit(0.0, 1.0, name, None, None, "python", 1000.0, 1.0)


def _quiet_run(kept: dict[str, float | None]) -> dict[str, float | None]:
    """A run like the kept one, on a quiet machine (a test double): what the kept run
    predates follows from it there — the window's own lag is its lag, the answer lasted its
    seconds."""
    run = dict(kept)
    for name in ("lag_p99_ms", "lag_max_ms", "long_tasks", "cancel_p99_token_periods"):
        if name in kept:
            run.setdefault(f"own_{name}", kept[name])
    if kept.get("seconds") is not None:
        run.setdefault("answer_ms", 1000 * float(kept["seconds"] or 0))
    run.setdefault("cpu_wait_share", 0.0)
    return run


@pytest.mark.gui
def test_the_page_server_floods_and_each_switch_moves_work_to_the_main_thread(
    serve: Callable[..., Any], open_page: Callable[..., Any]
) -> None:
    """The server the plan starts before class, as its command configures it (on a port of
    the test's own): a scripted flood of 2,000 tokens/s. Fixed, the page reads on a worker
    and updates its text at most once a frame; the main-thread reader switch reads every
    chunk on the page's main thread and updates the text per chunk; with markdown per chunk
    too, the whole answer is rendered again for every chunk. That holds for an answer of any
    length: 300 tokens here. (At the 50 tokens/s the plan gave, neither switch froze
    anything; how long they freeze the page at 2,000 tokens/s and the 1,000 tokens the plan
    asks is a bench claim.)"""
    from tkchat.cli.from_args import backend_options
    from tkchat.generate.factory import make_backend
    from tkchat.generate.scripted import ScriptedBackend

    backend = make_backend(backend_options(build_parser().parse_args(shlex.split(PAGE_SERVER)[1:])))
    assert isinstance(backend, ScriptedBackend) and PAGE_SERVER in load_lessons("en")[16].body
    assert (backend.rate, backend.tokens) == (2000, 4000)
    page = open_page(serve(backend))
    page.fill("#max-tokens", "300")
    fixed = _answer(page, {})
    assert fixed["reader"] == "worker" and fixed["textUpdates"] <= fixed["frames"] + 1
    reader = _answer(page, SWITCHES["main-thread reader"])
    assert reader["reader"] == "main-thread" and reader["textUpdates"] == reader["chunks"]
    markdown = _answer(page, SWITCHES["markdown per chunk"])
    assert markdown["reader"] == "main-thread"
    assert markdown["renders"] == markdown["chunks"] + 1  # the whole answer, per chunk
    for st in (fixed, reader, markdown):
        assert st["lastEvent"]["type"] == "done" and st["seqs"][-1] == st["lastEvent"]["seq"]


SWITCHES = {  # the page's broken switches, as its check boxes set them
    "main-thread reader": {"mainThread": True},
    "markdown per chunk": {"mainThread": True, "perChunk": True},
}


def _answer(page: Any, switches: dict[str, bool]) -> dict[str, Any]:
    """One answer with the page's broken ``switches`` on (as its check boxes set them):
    the page's own account of how it read and showed it."""
    from tests.test_browser import ask, wait_answer

    page.evaluate("(s) => window.tkchat.setBroken(s)", switches)
    ask(page)
    st = wait_answer(page)
    page.evaluate("() => { window.tkchat.setBroken({}); window.tkchat.newChat(); }")
    return st


def test_the_plans_selftest_commands_grade_what_the_plan_answers() -> None:
    """Lesson 14's two commands, as the plan gives them: ``--mode blocking`` and the fixed
    pipeline, on the scripted backend. Graded from the figures each pipeline makes
    (tests/test_selftest_grade.py's grading run): blocking fails the click, the scrolling and
    Stop and passes the dying model; the fixed pipeline passes all four — the plan's answer."""
    from tests.test_selftest_grade import KINDS, GradingRun

    parser = build_parser()
    blocking, fixed = "tkchat selftest --mode blocking", "tkchat selftest"
    assert {blocking, fixed} <= set(commands(PLANS["en"]))
    modes = {c: parser.parse_args(shlex.split(c)[1:]) for c in (blocking, fixed)}
    assert modes[blocking].mode == "blocking" and modes[fixed].mode == "fixed"
    assert modes[blocking].backend == modes[fixed].backend == "scripted"
    questions = ("q1", "q2", "q3", "q4")
    graded = GradingRun(KINDS["blocking_loop"]).grade()
    assert {q: graded[q].verdict for q in questions} == {
        "q1": "fail", "q2": "pass", "q3": "fail", "q4": "fail",
    }  # fmt: skip
    graded = GradingRun(KINDS["fixed"]).grade()
    assert {graded[q].verdict for q in questions} == {"pass"}


@pytest.mark.gui
@pytest.mark.parametrize(
    "command",
    ["tkchat compare", COMPARE, COMPARE_ASYNCIO, COMPARE.replace("tkchat compare", ZH_COMPARE)],
)
def test_compare_as_the_plan_gives_it_opens_two_windows(display: None, command: str) -> None:
    """Both compare commands, as written: two windows, one BROKEN; the scripted one's answer
    lasts about 6 s (it lasted half a second: no time to try anything in the frozen window),
    read from the windows' own command lines; as the Chinese plan gives it, both in Chinese."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tkchat", *shlex.split(command)[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(tkchat_windows()) >= 2, timeout=60, what="two windows", interval=0.2)
        names = [window_name(window) for window in tkchat_windows()]
        broken_said = "故障模式" if "--lang zh" in command else "BROKEN"  # the title's language
        assert len(names) == 2 and sum(broken_said in name for name in names) == 1, names
        if "--broken" in command:  # the broken window is the mode the plan asks for
            broken = shlex.split(command)[-1]
            assert any(_option(child, "--mode") == broken for child in _child_commands(proc.pid))
        children = _child_commands(proc.pid)
        assert len(children) == 2
        if "--projector" in command:  # both windows in large text, for the room
            assert all("--projector" in child for child in children), children
        if "--lang" in command:
            assert all(_option(child, "--lang") == "zh" for child in children), children
        if "scripted" in command:
            for child in children:
                seconds = float(_option(child, "--tokens")) / float(_option(child, "--rate"))
                assert 5 <= seconds <= 7 and _option(child, "--max-tokens") == _option(
                    child, "--tokens"
                ), child
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert tkchat_windows() == [], "a compare window outlived compare"


def _child_commands(pid: int) -> list[list[str]]:
    """The command lines of ``pid``'s children (Linux's /proc)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [Path(f"/proc/{child}/cmdline").read_text().split("\0")[:-1] for child in children]


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]
