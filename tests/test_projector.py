"""Projector mode and big text: nothing cut, nothing overlapping, on a 1280×720 screen.

Checked by widget geometry (tests/conftest.py ``layout_problems``), not by eye: every widget
inside its parent, every label and button as wide as its text, with the sidebar, the lesson
panel, the BROKEN banner and a streamed answer all on screen, in English and in Chinese.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont

import pytest

from tests.conftest import layout_problems, pump_for, pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.ui.app import PROJECTOR_SIZE
from tkchat.ui.fit import BREAK_OPPORTUNITY, NO_BREAK, breakable

pytestmark = pytest.mark.gui

SCREEN_720P = "1280x690+0+0"  # the client area of a 1280×720 screen, below the menu bar


def crowded_window(root: tk.Tk, make_app, lang: str):
    app = make_app(ScriptedBackend(rate=400), language=lang, history=True, show_lessons=True)
    root.geometry(SCREEN_720P)
    app.teaching.set_mode("blocking")  # the red BROKEN banner, as in a class
    app.teaching.set_mode("fixed")
    app.teaching.set_mode("no-coalesce")
    app.send("A question with a long answer, to fill the transcript.")
    pump_until(root, lambda: app.answer is None, what="the answer")
    pump_for(root, 0.3)
    return app


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_projector_mode_at_720p_cuts_nothing(root: tk.Tk, make_app, lang: str) -> None:
    app = crowded_window(root, make_app, lang)
    app.set_projector(True)
    pump_for(root, 0.3)
    assert app.fonts.size >= PROJECTOR_SIZE
    panel = app.teaching.lesson_panel
    assert panel is not None
    # the open lesson follows the text size live, and the heartbeat is larger still
    assert tkfont.Font(root=root, font=panel.text.cget("font")).actual()["size"] >= PROJECTOR_SIZE
    big = tkfont.Font(root=root, font=app.health.heartbeat.cget("font")).actual()["size"]
    assert big > app.fonts.size
    assert layout_problems(root) == []
    app.set_projector(False)
    pump_for(root, 0.2)
    assert app.fonts.size < PROJECTOR_SIZE
    assert layout_problems(root) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_four_steps_bigger_at_720p_cuts_nothing(root: tk.Tk, make_app, lang: str) -> None:
    app = crowded_window(root, make_app, lang)
    for _ in range(4):
        app.change_font_size(+1)
    pump_for(root, 0.3)
    assert layout_problems(root) == []


def test_the_layout_check_can_fail(root: tk.Tk) -> None:
    frame = tk.Frame(root, width=100, height=40)
    frame.pack_propagate(False)
    frame.pack()
    tk.Label(frame, text="a label far too long for its hundred pixels").pack()
    pump_for(root, 0.1)
    assert any("text cut" in problem for problem in layout_problems(root))


def test_chinese_breaks_between_characters_but_never_inside_a_figure() -> None:
    text = breakable("模型每秒 125 token/s，窗口每 16 毫秒更新一次")
    assert f"125{NO_BREAK}token/s" in text and f"16{NO_BREAK}毫秒" in text
    assert f"模{BREAK_OPPORTUNITY}型" in text
    assert "token/s" in text and BREAK_OPPORTUNITY not in "".join(c for c in text if c.isascii())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_projector_mode_with_a_lesson_running_cuts_nothing(root: tk.Tk, make_app, lang) -> None:
    """As a class sees it: projector on, a lesson's demo set up from the panel, sent."""
    app = make_app(ScriptedBackend(rate=400), language=lang, history=True, show_lessons=True)
    root.geometry(SCREEN_720P)
    app.set_projector(True)
    panel = app.teaching.lesson_panel
    for lesson in ("11-backpressure", "02-two-metrics", "14-heartbeat-selftest"):
        panel.select(lesson)
        pump_for(root, 0.2)
        assert layout_problems(root) == [], lesson
