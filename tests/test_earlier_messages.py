"""A long saved chat opens with its end on screen; its start is a click away (issue 38).

Tk works out the height of every line its text holds, however far from the view, after each
insert and each change of width: so a chat puts on screen only its last ``SHOWN_CHARS``
characters (from a question on), and says how many earlier messages it left out. The model
still reads the whole chat, and every place that counts messages (an edit, the context's
rewind, the store's versions) counts those left out too.

Real window on Xvfb, saved chats of generated text (~3,333 characters a message); the
budget is made small so that a few dozen messages are "long". Counted, never timed.
"""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.bench.scenarios.chat_text import long_conversation
from tkchat.ui.chats import opening
from tkchat.ui.chats.opening import first_shown
from tkchat.ui.transcript.header_links import EARLIER_TAG

pytestmark = pytest.mark.gui

WAIT_S = 120
BUDGET = 20_000  # about six messages of the generated chat
MESSAGES = 30


def test_the_start_shown_holds_the_budget_and_begins_with_a_question() -> None:
    chat = [("user", 10), ("assistant", 100)] * 3
    assert first_shown(chat, 6, 1000) == 0  # all of it fits
    assert first_shown(chat, 6, 110) == 4  # the last question and answer, exactly
    assert first_shown(chat, 6, 105) == 4  # the answer fits alone: its question comes too
    assert first_shown(chat, 6, 50) == 4  # nothing fits: still the last, with its question
    assert first_shown(chat, 4, 110) == 2  # more of the start: the pair before position 4
    assert first_shown(chat, 0, 110) == 0
    assert first_shown([], 0, 110) == 0


def saved(app, texts: list[tuple[str, str]]) -> int:
    store = app.archive.store
    chat = store.create("a long chat")
    for role, text in texts:
        store.add_message(chat.id, role, text)
    return int(chat.id)


def settled(app) -> bool:
    return not app.flow.showing_conversation and not app.transcript.painter.busy


def opened(root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch, texts=None, search=""):
    """A saved chat of ``texts`` (by default the generated one), opened as the sidebar
    opens it (from the results of ``search``, if given)."""
    monkeypatch.setattr(opening, "SHOWN_CHARS", BUDGET)
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    texts = texts or long_conversation(MESSAGES)
    chat = saved(app, texts)
    app.conversations.sidebar.search_var.set(search)
    app.conversations.show(chat)
    pump_until(root, lambda: settled(app), timeout=WAIT_S, what="the chat, on screen")
    return app, [text for _role, text in texts]


def click_earlier(root: tk.Tk, app) -> None:
    """A click on the line above the first message, as the mouse makes it."""
    text = app.transcript.text
    text.yview_moveto(0.0)
    root.update()
    x, y, _width, height = text.bbox("1.0")
    text.event_generate("<Button-1>", x=x + 4, y=y + height // 2)
    root.update()


def chat_in_model(app) -> list[str]:
    return [m.content for m in app.session.messages if m.role != "system"]


def test_a_long_chat_opens_with_its_end_and_the_model_reads_all_of_it(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, said = opened(root, make_app, monkeypatch)
    transcript = app.transcript
    left = transcript.left_out
    assert 0 < left < MESSAGES and left % 2 == 0, left  # from a question
    assert [entry.text for entry in transcript.entries] == said[left:]
    assert sum(len(text) for text in said[left + 1 :]) <= BUDGET < sum(map(len, said[left - 1 :]))
    assert chat_in_model(app) == said
    line = transcript.text.get("1.0", "1.end")
    assert line == app.t("transcript.earlier", count=left)
    assert EARLIER_TAG in transcript.text.tag_names("1.0")


def test_an_edit_counts_the_messages_left_out(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first question on screen is message left_out + 1 of the chat: editing it says so,
    and sending it keeps the model's context (and the store's chat) up to it, not the first
    few messages."""
    app, said = opened(root, make_app, monkeypatch)
    left = app.transcript.left_out
    app.flow.edit(app.transcript.entries[0])
    assert app.status.get() == app.t("app.editing", number=left + 1)
    app.input.set_draft("Asked again, differently?")
    app.controller.backend.text = "Answered again."
    assert app.flow.send()
    pump_until(root, lambda: app.flow.answering.answer is None, timeout=WAIT_S, what="answer")
    now = [*said[:left], "Asked again, differently?", "Answered again."]
    assert chat_in_model(app) == now
    assert app.transcript.left_out == left  # the line above still counts the same
    app.conversations.show(app.archive.conversation_id)  # the store has it so too
    pump_until(root, lambda: settled(app), timeout=WAIT_S, what="the chat, opened again")
    assert chat_in_model(app) == now


def test_a_click_on_the_line_shows_more_of_the_start_where_the_reader_was(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, said = opened(root, make_app, monkeypatch)
    transcript = app.transcript
    left = transcript.left_out
    first = transcript.entries[0].saved_as
    store = app.archive.store
    whole: list[int] = []
    real = store.messages
    monkeypatch.setattr(store, "messages", lambda cid: whole.append(cid) or real(cid))
    click_earlier(root, app)
    pump_until(root, lambda: settled(app), timeout=WAIT_S, what="the chat, shown again")
    more = transcript.left_out
    assert more < left and [entry.text for entry in transcript.entries] == said[more:]
    assert sum(len(text) for text in said[more + 1 : left]) <= BUDGET
    # The message that was first on screen is at the top of the view; what came before it
    # is above, a scroll away.
    (was_first,) = [entry for entry in transcript.entries if entry.saved_as == first]
    top = transcript.text.index("@0,0").split(".")[0]
    assert top == transcript.text.index(was_first.head_mark).split(".")[0]
    assert chat_in_model(app) == said and whole == []  # the model's context is not read again
    while transcript.left_out:  # once nothing is left out, the line is gone
        click_earlier(root, app)
        pump_until(root, lambda: settled(app), timeout=WAIT_S, what="more of the start")
    assert [entry.text for entry in transcript.entries] == said
    assert transcript.text.tag_ranges(EARLIER_TAG) == ()


def test_the_start_waits_while_a_question_is_edited(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _said = opened(root, make_app, monkeypatch)
    left = app.transcript.left_out
    app.flow.edit(app.transcript.entries[-2])
    app.input.set_draft("half typed")
    click_earlier(root, app)
    assert app.status.get() == app.t("app.earlier_later")
    assert not app.flow.showing_conversation and app.transcript.left_out == left
    assert app.input.draft == "half typed"  # nothing typed is lost


def test_a_chat_opened_from_a_search_shows_its_first_match(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = long_conversation(MESSAGES)
    texts[3] = ("assistant", texts[3][1] + " A zebra crossed the river.")
    app, _said = opened(root, make_app, monkeypatch, texts, search="ZEBRA")
    assert app.transcript.left_out == 2  # from the question of the answer that matched
    match = app.transcript.text.tag_ranges("found")
    assert match and app.transcript.text.get(match[0], match[1]) == "zebra"


def test_a_new_language_says_the_line_again_above_the_first_message(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _said = opened(root, make_app, monkeypatch)
    transcript = app.transcript
    left = transcript.left_out
    app.toggle_language()
    root.update()
    assert transcript.text.get("1.0", "1.end") == app.t("transcript.earlier", count=left)
    assert transcript.text.index(transcript.entries[0].head_mark) == "2.0"  # below the line
    assert len(transcript.text.tag_ranges(EARLIER_TAG)) == 2  # one line, not two
