"""Sending, as someone leaving GPT4All or LM Studio expects it (issue 37), on a real window on
Xvfb: Enter while an answer streams keeps the question in the box and says how to send it
(the answer goes on: nothing typed ahead cuts it short), and a question sent while the
reader had scrolled up is brought into view. The answers stream through a token gate the
test steps, so "while it streams" is a state the test holds, not a race with a pace.
"""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import pump_until
from tests.x_input import click, focus_window, needs_xdotool, press, type_text
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.scripted import ScriptedBackend, TokenGate, long_answer, scripted_tokens
from tkchat.i18n.window import STRINGS
from tkchat.ui.transcript.transcript import UserView

pytestmark = pytest.mark.gui

SLOW = "slow " * 400  # an answer the test lets through a few tokens at a time
LONG = long_answer(8_000)  # several screens: room to scroll up


def shown(tokens: int, text: str = SLOW) -> str:
    return "".join(scripted_tokens(text)[:tokens])


@needs_xdotool
def test_enter_while_an_answer_streams_keeps_the_draft_and_says_how_to_send_it(
    root: tk.Tk, make_app
) -> None:
    """Reported: Enter while an answer streamed stopped it and sent the new question, without
    a word (4 of 8 answers in a quick series ended "stopped"). Real keys and clicks: the
    answer streams on, the box keeps what was typed, Send is greyed and a click on it does
    nothing, the status line says how (in both languages); Esc, then Enter sends it."""
    gate = TokenGate()
    app = make_app(ScriptedBackend(gate=gate, text=SLOW))
    focus_window(root)
    assert app.flow.send("first")
    first = app.flow.answering.answer
    gate.release(5)
    pump_until(root, lambda: first.text == shown(5), what="5 tokens on screen")
    app.input.focus_set()
    type_text(root, "second")
    press(root, "Return")
    assert app.flow.answering.answer is first and app.controller.is_generating()
    assert app.input.draft == "second"  # untouched: no newline, nothing cleared
    assert [entry.text for entry in app.transcript.entries] == ["first", first.text]
    assert app.status.get() == STRINGS["en"]["app.busy_answering"]
    assert app.send_button.instate(["disabled"]) and app.stop_button.instate(["!disabled"])
    click(root, app.send_button)  # greyed: nothing happens
    assert app.flow.answering.answer is first and app.input.draft == "second"
    app.toggle_language()  # the same sentence, in Chinese
    assert app.status.get() == STRINGS["zh"]["app.busy_answering"]
    app.toggle_language()
    gate.release(3)  # the answer goes on: Enter did not stop it
    pump_until(root, lambda: first.text == shown(8), what="3 more tokens")
    app.input.focus_set()
    press(root, "Escape")  # the way to end it
    assert first.status == "stopped" and app.send_button.instate(["!disabled"])
    press(root, "Return")
    assert app.input.draft == ""
    assert [entry.text for entry in app.transcript.entries[2:3]] == ["second"]
    gate.release(10**6)
    pump_until(root, lambda: len(app.flow.answering.finished) == 1, what="the second answer")
    assert isinstance(app.flow.answering.finished[-1], Done)
    assert app.transcript.answers[-1].text == shown(10**6)  # whole: nothing of it was cut
    assert app.send_button.instate(["!disabled"])  # ready for the next question


def question_in_view(app, question: UserView) -> bool:
    return app.transcript.text.dlineinfo(question.head_mark) is not None


def shows_end(app) -> bool:
    return app.transcript.text.dlineinfo("end-1c") is not None


def test_a_question_sent_while_scrolled_up_is_brought_into_view(root: tk.Tk, make_app) -> None:
    """Reported: sending while scrolled up did not bring the question into view. The view
    goes to the end with the question (read back with yview and the question's line on
    screen), and follows the answer from there; a reader who scrolls up while it streams
    is left where they are."""
    backend = ScriptedBackend(rate=0, text=LONG)
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    assert app.flow.send("a long one")
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and not app.transcript.painter.busy,
        timeout=60,
        what="the long answer, rendered",
    )
    text = app.transcript.text
    text.yview_moveto(0.0)  # the reader scrolls back to the top to read
    root.update()
    assert text.yview()[0] == 0.0 and not shows_end(app)
    gate = backend.gate = TokenGate()
    backend.text = SLOW
    app.input.set_draft("and then?")
    assert app.flow.send()
    question = app.transcript.entries[-2]
    assert isinstance(question, UserView) and question.text == "and then?"
    root.update()
    pump_until(
        root,
        lambda: question_in_view(app, question) and text.yview()[1] >= 0.999,
        timeout=5,
        what="the question in view, at the end",
    )
    assert text.yview()[0] > 0.5  # the end of a long chat, not its top
    gate.release(5)
    answer = app.transcript.answers[-1]
    pump_until(root, lambda: answer.text == shown(5), what="5 tokens on screen")
    assert shows_end(app)  # the view follows the answer from there
    text.yview_moveto(0.0)  # scrolled up while it streams: left there
    root.update()
    gate.release(5)
    pump_until(root, lambda: answer.text == shown(10), what="5 more tokens")
    root.update()
    assert text.yview()[0] == 0.0 and not shows_end(app)
    app.flow.stop()
