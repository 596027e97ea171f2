"""Regenerate keeps every answer ("◀ 2/3 ▶"), on a real window (Xvfb): the links are clicked
with real mouse events, the version chosen is what the next question is asked after, what is
saved, reopened and exported."""

from __future__ import annotations

import tkinter as tk
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tests.test_answer_figures import line_of, reopened
from tests.test_chat_controls import (
    WAIT_S,
    RecordingBackend,
    ask,
    click_link,
    finish,
    history_open,
    link_index,
    saved,
)
from tkchat.conversation import Message, Sampling
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import TokenGate
from tkchat.ui.transcript.transcript import AnswerView, UserView
from tkchat.ui.window.chat_window import ChatApp

pytestmark = pytest.mark.gui

QUESTION = "tell me a version"
VERSIONS = ("Version **one**.", "Version **two**.", "Version **three**.")
SHOWN = ("Version one.", "Version two.", "Version three.")  # as rendered


def header(app: ChatApp, view: AnswerView) -> str:
    text = app.transcript.text
    start = text.index(view.head_mark)
    return text.get(start, f"{start} lineend")


def last_answer(app: ChatApp) -> AnswerView:
    view = app.transcript.entries[-1]
    assert isinstance(view, AnswerView)
    return view


def rendered(root: tk.Misc, app: ChatApp) -> None:
    pump_until(root, lambda: not app.transcript.painter.busy, timeout=WAIT_S, what="render")


def three_versions(root: tk.Misc, app: ChatApp, backend: RecordingBackend) -> AnswerView:
    """Ask once and regenerate twice: the answer then has three versions, the last shown."""
    backend.text = VERSIONS[0]
    ask(root, app, QUESTION)
    assert "◀" not in header(app, last_answer(app))  # one version: no links
    for count, version in ((2, VERSIONS[1]), (3, VERSIONS[2])):
        backend.text = version
        assert app.flow.regenerate()
        finish(root, app, count)
    return last_answer(app)


def only(text: str, wanted: str) -> bool:
    """``wanted`` is in ``text`` and no other version is."""
    return wanted in text and all(other not in text for other in SHOWN if other != wanted)


def test_regenerate_keeps_every_answer_and_the_one_chosen_is_the_chat(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    backend = RecordingBackend(rate=0)
    app = make_app(backend, history=True)
    history_open(root, app)
    answer = three_versions(root, app, backend)
    assert header(app, answer).endswith("◀ 3/3 ▶")
    assert link_index(app, answer, "next") is None  # nothing after the newest
    assert only(app.transcript.plain_text(), SHOWN[2])

    click_link(root, app, answer, "prev")
    rendered(root, app)
    assert header(app, answer).endswith("◀ 2/3 ▶")
    assert only(app.transcript.plain_text(), SHOWN[1])  # in its place, rendered
    assert answer.rendered and answer.text == VERSIONS[1]
    assert app.session.messages[-1] == Message("assistant", VERSIONS[1])
    assert saved(app)[-1] == ("assistant", VERSIONS[1], "complete")
    chat = app.archive.conversation_id
    assert chat is not None and app.archive.store is not None
    assert app.archive.store.variant_texts(app.archive.store.messages(chat)[-1].id) == [
        (version, "complete") for version in VERSIONS
    ]

    path = tmp_path / "chat.md"
    app.archive.export(chat, "markdown", path)
    exported = path.read_text(encoding="utf-8")
    assert VERSIONS[1] in exported and VERSIONS[0] not in exported
    assert VERSIONS[2] not in exported

    # Another chat, then this one again from the store: the version chosen, still 2/3.
    app.flow.new_chat()
    ask(root, app, "something else")
    app.conversations.show(chat)
    pump_until(root, lambda: not app.flow.showing_conversation, timeout=WAIT_S, what="the chat")
    rendered(root, app)
    reopened = last_answer(app)
    assert header(app, reopened).endswith("◀ 2/3 ▶")
    assert only(app.transcript.plain_text(), SHOWN[1])
    click_link(root, app, reopened, "next")  # its other versions came back too
    rendered(root, app)
    assert header(app, reopened).endswith("◀ 3/3 ▶")
    assert only(app.transcript.plain_text(), SHOWN[2])
    click_link(root, app, reopened, "prev")
    rendered(root, app)

    # The next question is asked after version 2, and the chat goes on from it.
    backend.text = "And then."
    ask(root, app, "and then?")
    assert backend.requests[-1].messages[-3:] == (
        Message("user", QUESTION),
        Message("assistant", VERSIONS[1]),
        Message("user", "and then?"),
    )
    assert [content for _role, content, _status in saved(app)] == [
        QUESTION,
        VERSIONS[1],
        "and then?",
        "And then.",
    ]
    assert "◀ 2/3 ▶" in header(app, reopened)  # an earlier answer keeps its links

    # Chosen in the middle of the chat: replaced in its place, what follows stays after it.
    click_link(root, app, reopened, "prev")
    rendered(root, app)
    text = app.transcript.plain_text()
    assert only(text, SHOWN[0])
    assert text.index(SHOWN[0]) < text.index("and then?") < text.index("And then.")
    assert header(app, reopened).endswith("◀ 1/3 ▶")
    assert app.session.messages[-3] == Message("assistant", VERSIONS[0])
    assert saved(app)[1] == ("assistant", VERSIONS[0], "complete")


def test_a_stopped_version_shows_its_note_and_links_wait_while_one_streams(
    root: tk.Tk, make_app
) -> None:
    backend = RecordingBackend(rate=0, text="Complete answer.")
    app = make_app(backend, history=True)
    history_open(root, app)
    ask(root, app, "q")
    backend.gate, backend.text = TokenGate(), "slow " * 400  # 5 tokens, then it waits
    assert app.flow.regenerate()
    streaming = app.flow.answering.answer
    assert streaming is not None
    backend.gate.release(5)
    pump_until(root, lambda: streaming.text.count("slow") == 5, timeout=WAIT_S, what="some text")
    assert header(app, streaming).endswith("◀ 2/2 ▶")
    # While it streams its links do nothing (drawn, but not links).
    assert link_index(app, streaming, "prev") is None
    assert not app.flow.show_version(streaming, -1)
    app.flow.stop()
    rendered(root, app)
    stopped = last_answer(app)
    note = app.t("transcript.stopped")
    assert app.transcript.plain_text().rstrip().endswith(note)

    click_link(root, app, stopped, "prev")
    rendered(root, app)
    text = app.transcript.plain_text().rstrip()
    assert "Complete answer." in text and note not in text  # its note went with it ...
    assert text.endswith("finished")  # ... and that version's own figures came back
    assert header(app, stopped).endswith("◀ 1/2 ▶")
    click_link(root, app, stopped, "next")
    rendered(root, app)
    assert app.transcript.plain_text().rstrip().endswith(note)  # and comes back with its version
    assert saved(app)[-1][2] == "stopped"


def test_a_regenerate_after_reopening_takes_a_seed_no_version_had(root: tk.Tk, make_app) -> None:
    backend = RecordingBackend(rate=0)
    app = make_app(backend, history=True, sampling=Sampling(seed=5))
    history_open(root, app)
    three_versions(root, app, backend)
    chat = app.archive.conversation_id
    app.flow.new_chat()
    app.conversations.show(chat)
    pump_until(root, lambda: not app.flow.showing_conversation, timeout=WAIT_S, what="the chat")
    assert app.session.regenerations == 0
    backend.text = "Version four."
    assert app.flow.regenerate()
    finish(root, app, 4)
    assert [request.sampling.seed for request in backend.requests] == [5, 6, 7, 8]
    assert header(app, last_answer(app)).endswith("◀ 4/4 ▶")


@pytest.mark.model
def test_the_real_model_regenerates_and_the_first_answer_is_one_click_back(
    root: tk.Tk, make_app
) -> None:
    bundled = bundled_model_path()
    assert bundled is not None
    app = make_app(
        LlamaBackend(str(bundled)), sampling=Sampling(seed=11, max_tokens=16, temperature=1.0)
    )
    app.flow.send("Name a colour.")
    finish(root, app, 1)
    first = last_answer(app).text
    assert app.flow.regenerate()
    finish(root, app, 2)
    answer = last_answer(app)
    assert header(app, answer).endswith("◀ 2/2 ▶")
    click_link(root, app, answer, "prev")
    rendered(root, app)
    assert answer.text == first and app.session.messages[-1] == Message("assistant", first)
    assert header(app, answer).endswith("◀ 1/2 ▶")


# -- an edited question keeps its branch ---------------------------------------------------------

TURNS = (("alpha?", "Alpha."), ("bravo?", "Bravo."), ("charlie?", "Charlie."))


def question_header(app: ChatApp, index: int) -> str:
    view = app.transcript.entries[index]
    assert isinstance(view, UserView)
    start = app.transcript.text.index(view.head_mark)
    return app.transcript.text.get(start, f"{start} lineend")


def chat_on_screen(app: ChatApp) -> list[tuple[str, str]]:
    return [(entry.role, entry.text) for entry in app.transcript.entries]


def branch_shown(root: tk.Misc, app: ChatApp) -> None:
    pump_until(root, lambda: not app.flow.showing_conversation, timeout=WAIT_S, what="the branch")
    rendered(root, app)


def test_an_edited_question_keeps_the_old_branch_one_click_away(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    backend = RecordingBackend(rate=0)
    app = make_app(backend, history=True)
    history_open(root, app)
    for question, reply in TURNS:
        backend.text = reply
        ask(root, app, question)
    old = [
        (role, text)
        for question, reply in TURNS
        for role, text in (("user", question), ("assistant", reply))
    ]
    assert "◀" not in question_header(app, 2)

    click_link(root, app, app.transcript.entries[2], "edit")
    app.input.set_draft("bravo, revised?")
    backend.text = "Revised."
    count = len(app.flow.answering.finished)
    assert app.flow.send()
    finish(root, app, count + 1)
    new = [*old[:2], ("user", "bravo, revised?"), ("assistant", "Revised.")]
    assert chat_on_screen(app) == new
    assert question_header(app, 2).endswith("◀ 2/2 ▶")
    assert saved(app) == [(role, text, "complete") for role, text in new]

    # ◀ on the question: the old question and everything that followed it, in order.
    assert app.status.get().startswith("Done")
    click_link(root, app, app.transcript.entries[2], "prev")
    branch_shown(root, app)
    assert chat_on_screen(app) == old
    assert app.status.get().startswith("Ready")  # the "Done" was about the branch put away
    assert question_header(app, 2).endswith("◀ 1/2 ▶")
    text = app.transcript.plain_text()
    positions = [text.index(content) for _role, content in old]
    assert positions == sorted(positions) and "Revised." not in text
    assert [(m.role, m.content) for m in app.session.messages[1:]] == old
    assert saved(app) == [(role, text, "complete") for role, text in old]
    chat = app.archive.conversation_id
    path = tmp_path / "chat.md"
    app.archive.export(chat, "markdown", path)
    exported = path.read_text(encoding="utf-8")
    assert "Charlie." in exported and "Revised." not in exported

    # The next question goes on from the branch shown.
    backend.text = "Delta."
    ask(root, app, "delta?")
    assert backend.requests[-1].messages[1:] == tuple(
        Message(role, text) for role, text in [*old, ("user", "delta?")]
    )

    # Reopened from the store: the branch chosen, and the other one still a click away.
    app.flow.new_chat()
    ask(root, app, "elsewhere")
    app.conversations.show(chat)
    branch_shown(root, app)
    assert chat_on_screen(app) == [*old, ("user", "delta?"), ("assistant", "Delta.")]
    assert question_header(app, 2).endswith("◀ 1/2 ▶")
    click_link(root, app, app.transcript.entries[2], "next")
    branch_shown(root, app)
    assert chat_on_screen(app) == new
    assert [(m.role, m.content) for m in app.session.messages[1:]] == new
    assert saved(app) == [(role, text, "complete") for role, text in new]
    click_link(root, app, app.transcript.entries[2], "prev")  # and back, with "delta?" in it
    branch_shown(root, app)
    assert chat_on_screen(app)[-2:] == [("user", "delta?"), ("assistant", "Delta.")]


def test_showing_another_branch_stops_the_answer_streaming_in_this_one(
    root: tk.Tk, make_app
) -> None:
    backend = RecordingBackend(rate=0, text="First.")
    app = make_app(backend, history=True)
    history_open(root, app)
    ask(root, app, "one?")
    click_link(root, app, app.transcript.entries[0], "edit")
    app.input.set_draft("one, again?")
    backend.gate, backend.text = TokenGate(), "slow " * 400  # 5 tokens, then it waits
    assert app.flow.send()
    streaming = app.flow.answering.answer
    assert streaming is not None
    backend.gate.release(5)
    pump_until(root, lambda: streaming.text.count("slow") == 5, timeout=WAIT_S, what="some text")
    click_link(root, app, app.transcript.entries[0], "prev")
    branch_shown(root, app)
    assert app.flow.answering.answer is None  # detached from the branch put away at once
    # The stop reached the worker: it leaves the gate's wait and ends (on its own time).
    pump_until(root, lambda: not app.controller.is_generating(), timeout=WAIT_S, what="the stop")
    assert chat_on_screen(app) == [("user", "one?"), ("assistant", "First.")]
    click_link(root, app, app.transcript.entries[0], "next")  # kept as it was stopped
    branch_shown(root, app)
    assert app.transcript.plain_text().rstrip().endswith(app.t("transcript.stopped"))
    assert saved(app)[-1][2] == "stopped"


def test_a_long_branch_is_put_on_screen_in_slices(root: tk.Tk, make_app) -> None:
    """300 messages in one callback would be a long task (200 took 85 ms): the click
    draws the question, the branch follows in slices, and nothing is sent meanwhile."""
    app = make_app(RecordingBackend(rate=0), history=True)
    history_open(root, app)
    store = app.archive.store
    assert store is not None
    chat = store.create("Long").id
    store.add_message(chat, "user", "first?")
    for number in range(150):
        store.add_message(chat, "assistant", f"Answer **{number}**.")
        store.add_message(chat, "user", f"question {number}?")
    store.new_question_variant(chat, 0, "first, shorter?")
    store.add_message(chat, "assistant", "Short.")
    app.conversations.show(chat)
    branch_shown(root, app)
    assert len(app.transcript.entries) == 2

    text = app.transcript.text
    index = link_index(app, app.transcript.entries[0], "prev")
    assert index is not None
    text.see(index)
    root.update()
    x, y, width, height = text.bbox(index)
    text.event_generate("<Button-1>", x=x + width // 2, y=y + height // 2)  # handled now
    assert len(app.transcript.entries) == 1  # the question; its branch comes in slices
    assert app.flow.showing_conversation and not app.flow.send("not now")
    sizes = []
    while app.flow.showing_conversation:  # one event at a time: how far each slice got
        root.tk.dooneevent(0)
        sizes.append(len(app.transcript.entries))
    assert len(set(sizes)) > 2, sizes
    branch_shown(root, app)
    assert len(app.transcript.entries) == 301
    assert app.transcript.entries[-1].text == "question 149?"
    assert len(app.session.chat) == 301 and len(saved(app)) == 301


def test_without_history_the_branches_live_in_the_window(root: tk.Tk, make_app) -> None:
    backend = RecordingBackend(rate=0)
    app = make_app(backend)
    for question, reply in TURNS[:2]:
        backend.text = reply
        ask(root, app, question)
    click_link(root, app, app.transcript.entries[0], "edit")
    app.input.set_draft("alpha, again?")
    backend.text = "Again."
    count = len(app.flow.answering.finished)
    assert app.flow.send()
    finish(root, app, count + 1)
    assert chat_on_screen(app) == [("user", "alpha, again?"), ("assistant", "Again.")]
    ask(root, app, "more?")
    click_link(root, app, app.transcript.entries[2], "edit")  # an edit under way ...
    assert app.flow.editing is not None
    click_link(root, app, app.transcript.entries[0], "prev")
    branch_shown(root, app)
    assert app.flow.editing is None and app.input.draft == ""  # ... went with its branch
    assert app.status.get() == "Edit cancelled."
    expected = [
        ("user", "alpha?"),
        ("assistant", "Alpha."),
        ("user", "bravo?"),
        ("assistant", "Bravo."),
    ]
    assert chat_on_screen(app) == expected
    assert [(m.role, m.content) for m in app.session.chat] == expected
    assert question_header(app, 0).endswith("◀ 1/2 ▶")


@pytest.mark.parametrize("history", [False, True], ids=["in-the-window", "with-history"])
def test_a_branch_put_aside_keeps_its_regenerated_answers_versions(
    root: tk.Tk, make_app, fresh_app, history: bool
) -> None:
    """An answer regenerated (◀ 1/2 ▶, the first shown), then its question edited and sent:
    ◀ on the question brings the answer back with both versions, the one it showed, and each
    version's own figures; the same after the branches are flipped again, and after a restart."""
    backend = RecordingBackend(rate=0, text="First.")
    app = make_app(backend, history=history, persist_settings=history)
    if history:
        history_open(root, app)
    ask(root, app, "one?")
    backend.text = "Second, a longer one."
    assert app.flow.regenerate()
    finish(root, app, 2)
    answer = last_answer(app)
    assert header(app, answer).endswith("◀ 2/2 ▶")
    lines = {2: line_of(app, answer)}
    click_link(root, app, answer, "prev")
    rendered(root, app)
    lines[1] = line_of(app, answer)
    assert None not in lines.values() and lines[1] != lines[2]  # each version's own figures

    click_link(root, app, app.transcript.entries[0], "edit")
    app.input.set_draft("one, again?")
    backend.text = "Again."
    assert app.flow.send()
    finish(root, app, 3)
    assert chat_on_screen(app) == [("user", "one, again?"), ("assistant", "Again.")]

    def flipped(window: tk.Misc, chat: ChatApp, shown: int) -> AnswerView:
        """◀ on the question: the old branch, its answer at version ``shown`` of 2."""
        click_link(window, chat, chat.transcript.entries[0], "prev")
        branch_shown(window, chat)
        back = last_answer(chat)
        assert header(chat, back).endswith(f"◀ {shown}/2 ▶")
        assert back.text == ("First.", "Second, a longer one.")[shown - 1]
        assert line_of(chat, back) == lines[shown]
        return back

    def stepped(window: tk.Misc, chat: ChatApp, back: AnswerView, step: str, shown: int) -> None:
        """▶ or ◀ on the answer brought back: the other version, on screen and in the chat."""
        click_link(window, chat, back, step)
        rendered(window, chat)
        text = ("First.", "Second, a longer one.")[shown - 1]
        assert header(chat, back).endswith(f"◀ {shown}/2 ▶") and back.text == text
        assert text in chat.transcript.plain_text() and line_of(chat, back) == lines[shown]
        assert chat.session.messages[-1] == Message("assistant", text)
        if history:
            assert saved(chat)[-1] == ("assistant", text, "complete")

    back = flipped(root, app, 1)
    assert "Second" not in app.transcript.plain_text()
    stepped(root, app, back, "next", 2)
    # ▶ on the question and ◀ again: the branch is put aside once more, at version 2 now.
    click_link(root, app, app.transcript.entries[0], "next")
    branch_shown(root, app)
    assert chat_on_screen(app) == [("user", "one, again?"), ("assistant", "Again.")]
    back = flipped(root, app, 2)
    stepped(root, app, back, "prev", 1)
    if not history:
        return
    click_link(root, app, app.transcript.entries[0], "next")  # put aside at version 1
    branch_shown(root, app)
    app.close()
    again = reopened(fresh_app, RecordingBackend(rate=0))
    assert chat_on_screen(again) == [("user", "one, again?"), ("assistant", "Again.")]
    back = flipped(again.root, again, 1)
    stepped(again.root, again, back, "next", 2)
