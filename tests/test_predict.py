"""Predict, then observe: a lesson's question before its demo, its answer after it.

The parser reads the ``predict:`` header line (and its absence); the lesson panel, on a real
Tk window, keeps the expected figure hidden until the demo's answer has ended (counted by a
stand-in the test steps, no clock) or *Show the answer* is pressed, then shows it with the
choice the class picked; and the lesson's *What you see* section, which tells the result, is
folded until then."""

from __future__ import annotations

import tkinter as tk
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.course.lessons import LessonFormatError, load_lessons, parse_lesson, render_body
from tkchat.course.prediction import (
    OBSERVED,
    Prediction,
    PredictionError,
    hide_observed,
    parse_prediction,
)
from tkchat.i18n.lesson_panel import STRINGS as PANEL_STRINGS
from tkchat.ui.look.fit import text_as_written, unbreakable

ASKED = ("03", "04", "05", "06", "11", "19", "20")  # the class plan's Predict questions


def test_a_prediction_is_a_question_and_its_choices() -> None:
    assert parse_prediction("") is None
    assert parse_prediction("  ") is None
    assert parse_prediction("Smooth? | yes | no ") == Prediction("Smooth?", ("yes", "no"))
    assert parse_prediction("What happens?") == Prediction("What happens?", ())


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("| a | b", "question comes first"),
        ("Q? | a | | b", "empty choice"),
        ("Q? | a |", "empty choice"),
        ("Q? | a", "one choice"),
        ("Q? | a | b | c | d | e", "at most 4"),
        ("Q? | a | a", "same choice twice"),
    ],
)
def test_a_prediction_that_cannot_be_asked_says_why(text: str, why: str) -> None:
    with pytest.raises(PredictionError, match=why):
        parse_prediction(text)


def _lesson_file(tmp_path: Path, extra: str) -> Path:
    header = (
        "id: 99-try\ntitle: Try\nmode: fixed\nbackend: scripted\nwatch: lag\n"
        "expect_mode: fixed\nexpect_metric: lag_max_ms\nexpect: low\n"
        "code: tkchat/ui/pipeline.py::FixedPipeline.show\n"
    )
    path = tmp_path / "99-try.md"
    path.write_text(f"---\n{header}{extra}---\n## What you see\n", encoding="utf-8")
    return path


def test_the_lesson_parser_reads_predict_and_its_absence(tmp_path: Path) -> None:
    asked = parse_lesson(_lesson_file(tmp_path, "predict: Smooth? | yes | no\n"), "en")
    assert asked.predict == Prediction("Smooth?", ("yes", "no"))
    assert parse_lesson(_lesson_file(tmp_path, ""), "en").predict is None
    with pytest.raises(LessonFormatError, match="99-try.md: predict: one choice"):
        parse_lesson(_lesson_file(tmp_path, "predict: Smooth? | yes\n"), "en")


def test_the_plans_questions_are_asked_in_both_languages_alike() -> None:
    en, zh = load_lessons("en"), load_lessons("zh")
    for english, chinese in zip(en, zh, strict=True):
        assert (english.predict is None) == (chinese.predict is None), english.id
        if english.predict and chinese.predict:
            assert len(english.predict.choices) == len(chinese.predict.choices), english.id
            assert english.predict.question != chinese.predict.question
    assert {f"{lesson.number:02d}" for lesson in en if lesson.predict} >= set(ASKED)


class Ended:
    """Stands in for the window's count of ended answers: the test ends the demo's answer."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        return self.count


def _panel(root: tk.Tk, lang: str, setups: list[str]):  # type: ignore[no-untyped-def]
    from tkchat.ui.teaching.lesson_panel import LessonPanel

    language = {"now": lang}
    panel = LessonPanel(
        root,
        language=lang,
        on_setup_demo=lambda lesson: setups.append(lesson.id),
        read_figure=lambda _metric: 2500.0,
        translate=lambda key: PANEL_STRINGS[language["now"]][key],
    )
    panel.pack(fill="both", expand=True)
    return panel, language


def _figure(panel) -> str:  # type: ignore[no-untyped-def]
    return unbreakable(str(panel.figure_label.cget("text")))


@pytest.mark.gui
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_expectation_waits_for_the_demos_answer_then_shows_the_pick(
    root: tk.Tk, lang: str
) -> None:
    strings = PANEL_STRINGS[lang]
    setups: list[str] = []
    panel, _language = _panel(root, lang, setups)
    ended = panel.answers_ended = Ended()
    ended.count = 3  # answers before this lesson: they reveal nothing
    panel.select("06-heavy-per-chunk")
    pump_until(root, lambda: not panel.rendering, what="the lesson painted")
    lesson = panel.current
    assert lesson is not None and lesson.predict is not None
    box = panel.prediction
    root.update()
    assert box.winfo_ismapped() and box.waiting
    assert lesson.predict.question in unbreakable(str(box.question.cget("text")))
    assert [b.cget("text") for b in box.buttons] == list(lesson.predict.choices)
    assert all(b.winfo_ismapped() for b in box.buttons)
    # the expectation, and what to watch, stay out of sight while the class predicts
    assert not panel.figure_label.winfo_ismapped() and not panel.watch_label.winfo_ismapped()

    box.buttons[2].invoke()  # the class picks "janky as it grows"
    panel.refresh_figure()
    assert box.waiting and not panel.figure_label.winfo_manager()
    panel.setup_button.invoke()
    assert setups == ["06-heavy-per-chunk"]
    panel.refresh_figure()  # the demo runs: its answer has not ended
    assert box.waiting and not panel.figure_label.winfo_manager()

    ended.count += 1  # the demo's answer ends
    panel.refresh_figure()
    assert not box.waiting
    root.update()
    assert panel.figure_label.winfo_ismapped() and panel.watch_label.winfo_ismapped()
    shown = _figure(panel)
    assert lesson.expect.split("{{")[0].strip() in shown
    assert "2,500\u00a0" in shown.rpartition("·")[2]  # the live figure beside it, as before
    picked = strings["predict.picked"].format(choice=lesson.predict.choices[2])
    root.update()
    assert unbreakable(str(box.picked_label.cget("text"))) == picked
    assert box.picked_label.winfo_ismapped() and not box.row.winfo_ismapped()
    assert not box.question.winfo_ismapped()  # answered: the pick, in one line
    panel.destroy()


@pytest.mark.gui
def test_show_the_answer_reveals_it_at_once_and_a_language_switch_keeps_it(root: tk.Tk) -> None:
    panel, language = _panel(root, "en", [])
    panel.select("04-blocking")
    box = panel.prediction
    assert box.waiting and not panel.figure_label.winfo_manager()
    assert box.show_button.cget("text") == PANEL_STRINGS["en"]["predict.show"]
    box.show_button.invoke()  # no demo run, no answer ended: the teacher shows it
    assert not box.waiting and panel.figure_label.winfo_manager()
    assert _figure(panel).startswith("expected: about the whole generation")
    assert (
        unbreakable(str(box.picked_label.cget("text")))
        == PANEL_STRINGS["en"]["predict.none_picked"]
    )

    language["now"] = "zh"
    panel.set_language("zh")  # the same lesson in Chinese: still answered
    assert not box.waiting and "预期" in _figure(panel)
    assert (
        unbreakable(str(box.picked_label.cget("text")))
        == PANEL_STRINGS["zh"]["predict.none_picked"]
    )

    panel.select("05-main-thread-reader")  # the next lesson asks afresh
    assert box.waiting and not panel.figure_label.winfo_manager()
    panel.select("07-three-stages")  # a lesson that asks nothing shows its expectation
    root.update()
    assert not box.winfo_ismapped() and not box.waiting
    assert panel.figure_label.winfo_ismapped() and "预期" in _figure(panel)
    panel.destroy()


def test_every_prediction_string_is_in_both_languages() -> None:
    keys = {
        "predict.ask",
        "predict.show",
        "predict.picked",
        "predict.none_picked",
        "predict.observed_hidden",
    }
    for lang in ("en", "zh"):
        assert keys <= set(PANEL_STRINGS[lang]), lang
        assert all(PANEL_STRINGS[lang][key].strip() for key in keys)
    assert "{choice}" in PANEL_STRINGS["zh"]["predict.picked"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_question_s_lesson_folds_what_it_shows_and_nothing_else(lang: str) -> None:
    """Each lesson that asks has the section to fold (else the fold would silently do
    nothing); folded, its text is gone, its heading and every other section stay."""
    asked = [lesson for lesson in load_lessons(lang) if lesson.predict is not None]
    assert {f"{lesson.number:02d}" for lesson in asked} >= set(ASKED)
    heading = f"## {OBSERVED[lang]}"
    for lesson in asked:
        body = render_body(lesson, strict=False)
        before, _, rest = body.partition(f"{heading}\n")
        assert rest, f"{lesson.id}: no '{heading}' section"
        section, _, after = rest.partition("\n## ")
        folded = hide_observed(body, lang, "NOTE")
        assert folded == f"{before}NOTE\n\n## {after}", lesson.id


def test_the_fold_ends_at_the_next_heading_outside_a_code_block() -> None:
    body = "## What you see\n\nIt froze.\n\n```\n## a comment\n```\n## Why\n\nBecause.\n"
    assert hide_observed(body, "en", "*later*") == "*later*\n\n## Why\n\nBecause.\n"
    assert hide_observed("## Why\n\nBecause.\n", "en", "x") == "## Why\n\nBecause.\n"


@pytest.mark.gui
@pytest.mark.parametrize(
    ("lang", "shown"),
    [("en", "updates/s still near"), ("zh", "界面更新仍在每秒")],
)
def test_the_panel_shows_what_you_see_only_once_the_answer_is_out(
    root: tk.Tk, lang: str, shown: str
) -> None:
    """Lesson 11 says the window updates about 60 times a second — the answer to its
    question: not in the panel's text until the answer is shown; there after."""
    panel, _language = _panel(root, lang, [])
    panel.select("11-backpressure")
    pump_until(root, lambda: not panel.rendering, what="the lesson painted")
    text = text_as_written(panel.text)  # (without Chinese's break spaces)
    note = PANEL_STRINGS[lang]["predict.observed_hidden"].strip("*")
    assert text.startswith(note)  # one line says the section waits for the prediction
    assert shown not in text
    panel.prediction.show_button.invoke()
    pump_until(root, lambda: not panel.rendering, what="the whole lesson painted")
    text = text_as_written(panel.text)
    assert shown in text and note not in text
    panel.destroy()
