"""The class plan (lessons/plan.en.md, lessons/plan.zh.md) and the lessons' "Try it" commands:
every lesson the plan names exists, every command it or a lesson gives parses, the two languages
plan the same class, and the command lesson 16 tells a class to run really runs."""

from __future__ import annotations

import re
import shlex
import tkinter as tk
from pathlib import Path

import pytest

from tests.conftest import pump_for
from tkchat.cli import build_parser, main
from tkchat.course.lessons import LANGUAGES, lessons_dir, load_lessons, plan_path
from tkchat.ui.look.fit import text_as_written

PLANS = {lang: plan_path(lang).read_text(encoding="utf-8") for lang in LANGUAGES}
COMMAND_RE = re.compile(r"`(tkchat(?: [^`]*)?)`")


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


def test_the_two_plans_give_the_same_commands_and_both_lengths() -> None:
    assert commands(PLANS["en"]) == commands(PLANS["zh"])
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
    assert main(shlex.split(command)[1:] + ["--tokens", "20"]) == 0
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
    pump_for(root, 0.1)
    assert panel.plan_button.cget("text") == "Class plan"
    panel.plan_button.invoke()
    shown = text_as_written(panel.text)
    assert "The 90-minute class" in shown and "Predict:" in shown
    panel.picker.current(3)  # picking a lesson brings the lesson back
    panel.picker.event_generate("<<ComboboxSelected>>")
    pump_for(root, 0.1)
    assert "The 90-minute class" not in text_as_written(panel.text)
    language["now"] = "zh"
    panel.set_language("zh")
    assert panel.plan_button.cget("text") == "课堂计划"
    panel.plan_button.invoke()
    assert "先猜" in text_as_written(panel.text)  # without the break spaces
    panel.destroy()
