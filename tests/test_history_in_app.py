"""Saved conversations in the real window: restored after a restart, intact after kill -9,
and a damaged database never stops the app (nor gets emptied)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import tkinter as tk
from pathlib import Path

import pytest

from tests.conftest import pump_until, saved_content, wait_until
from tests.x_input import keyboard_focus
from tkchat.events import Done
from tkchat.generate.backend import LoadWatch
from tkchat.generate.controller import GenerationController
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.store import ConversationStore, database_path, open_store
from tkchat.transport.channel import EventChannel
from tkchat.ui.chats import history as history_module
from tkchat.ui.chats.sidebar import ConversationSidebar
from tkchat.ui.window.chat_window import AppOptions, ChatApp

pytestmark = pytest.mark.gui
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path))
    return tmp_path


def rows(sidebar: ConversationSidebar) -> list[int]:
    """The conversation ids the sidebar lists, top to bottom (read off its tree)."""
    return [int(iid) for iid in sidebar.tree.get_children() if iid.isdigit()]


def ask(root: tk.Misc, app: ChatApp, text: str) -> None:
    count = len(app.flow.answering.finished)
    assert app.flow.send(text)
    pump_until(root, lambda: len(app.flow.answering.finished) > count, what="the answer")
    pump_until(root, lambda: not app.transcript.painter.busy, what="render")


def test_conversation_is_saved_and_reopened_after_a_restart(data_dir: Path, display: None) -> None:
    root = tk.Tk()
    controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
    app = ChatApp(root, controller, AppOptions(history=True, language="en"))
    controller.load_async()
    pump_until(
        root,
        lambda: app.flow.model_ready and app.archive is not None and app.archive.ready,
        what="model and history",
    )
    ask(root, app, "first question")
    ask(root, app, "second question")
    app.close()  # flushes the writer

    store = ConversationStore(database_path())
    [conversation] = store.list_conversations()
    assert conversation.title == "first question"
    stored = store.messages(conversation.id)
    pair = [("user", "complete"), ("assistant", "complete")]
    assert [(m.role, m.status) for m in stored] == pair * 2
    assert stored[1].content == SCRIPT and stored[2].content == "second question"
    store.close()

    root2 = tk.Tk()
    controller2 = GenerationController(ScriptedBackend(rate=0), EventChannel())
    app2 = ChatApp(root2, controller2, AppOptions(history=True, language="en"))
    controller2.load_async()
    try:
        pump_until(
            root2,
            lambda: len(app2.transcript.answers) == 2 and not app2.flow.showing_conversation,
            what="the reopened chat",
        )
        pump_until(root2, lambda: not app2.transcript.painter.busy, what="render")
        shown = app2.transcript.plain_text()
        assert "first question" in shown and "second question" in shown
        assert [m.role for m in app2.session.messages] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        app2.flow.new_chat()
        pump_until(root2, lambda: app2.flow.model_ready, what="model")
        ask(root2, app2, "a new chat")
    finally:
        app2.close()
    store = ConversationStore(database_path())
    assert len(store.list_conversations()) == 2
    store.close()


def saved_answer() -> str:
    """The first answer in the history another process is writing ("" when there is none),
    read through a read-only connection: opening the store writes, and a test that opened it
    while the app opened its own made the app find the file locked (its history then went
    to memory, and nothing ever reached the disk)."""
    if not database_path().exists():
        return ""
    try:
        conn = sqlite3.connect(f"{database_path().resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                f"SELECT {saved_content(conn)} FROM messages WHERE role = 'assistant'"
                " ORDER BY id LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return ""  # not all there yet (the app is creating it): look again
    return str(row[0]) if row is not None and row[0] else ""


def test_kill_9_mid_answer_keeps_what_was_saved(data_dir: Path, display: None) -> None:
    """The window killed mid-answer: the question and all of the answer that had reached
    the disk are there at the next start, the answer marked interrupted. (How much a kill
    loses at most, FLUSH_INTERVAL_S of text, is the bench's to measure; what the writer does
    at a kill: tests/test_store.py.)"""
    env = {**os.environ, "TKCHAT_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tkchat",
            "--backend",
            "scripted",
            "--rate",
            "200",
            "--tokens",
            "100000",
            "--max-tokens",
            "0",
            "--lang",
            "en",
            "--prompt",
            "tell me everything",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    answer = ""

    def answer_saved() -> bool:
        nonlocal answer
        answer = saved_answer()
        return len(answer) >= 40

    try:
        wait_until(answer_saved, timeout=60, what="the streaming answer to be saved", interval=0.1)
        proc.send_signal(signal.SIGKILL)  # while it streams on
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    store, warning = open_store()
    assert warning is None
    assert store.mark_interrupted() == 1
    [conversation] = store.list_conversations()
    question, reply = store.messages(conversation.id)
    assert (question.role, question.content, question.status) == (
        "user",
        "tell me everything",
        "complete",
    )
    assert reply.status == "interrupted", reply
    assert len(reply.content) >= len(answer), (reply.content, answer)
    assert (SCRIPT * 1000).startswith(reply.content), reply.content
    store.close()


@pytest.mark.parametrize("first", ["model", "history"])
def test_a_damaged_database_is_kept_and_the_app_works(
    first: str, data_dir: Path, root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model and the history open on their own threads, in either order. The warning goes
    to the status line, which the next status replaces ("Ready — ..." when the model comes
    second: this test once failed so), and to the banner, which stays until dismissed: the
    banner is what is promised. Both orders are forced (each side waits at a gate)."""
    data_dir.mkdir(exist_ok=True)
    garbage = b"this is not a database, but it is someone's history" * 100
    database_path().write_bytes(garbage)
    gates = {"model": threading.Event(), "history": threading.Event()}
    real_open_store = history_module.open_store

    def open_store_at_the_gate() -> tuple[ConversationStore, str | None]:
        gates["history"].wait(60)  # (bounded: a failed test leaves no thread waiting forever)
        return real_open_store()

    class LoadsAtTheGate(ScriptedBackend):
        def load(self, watch: LoadWatch | None = None) -> None:
            gates["model"].wait(60)
            super().load(watch)

    monkeypatch.setattr(history_module, "open_store", open_store_at_the_gate)
    app = make_app(LoadsAtTheGate(rate=0), wait=False, history=True)
    opened = {
        "model": lambda: app.flow.model_ready,
        "history": lambda: app.archive is not None and app.archive.ready,
    }
    second = "history" if first == "model" else "model"
    for side in (first, second):
        gates[side].set()
        pump_until(root, opened[side], what=f"the {side} to open")

    kept = [p for p in data_dir.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes() == garbage  # never emptied, never lost
    assert app.storage_banner.shown
    assert "damaged" in app.storage_banner.text and str(kept[0]) in app.storage_banner.text
    ask(root, app, "still works?")
    assert isinstance(app.flow.answering.finished[-1], Done)
    assert app.storage_banner.shown and str(kept[0]) in app.storage_banner.text  # it stays
    assert app.archive is not None and app.archive.store is not None  # the new, empty history
    [conversation] = app.archive.store.list_conversations()
    question = app.archive.store.messages(conversation.id)[0]
    assert (question.role, question.content) == ("user", "still works?")  # and it saves


def test_sidebar_switches_renames_deletes_with_undo_and_searches(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.archive is not None and app.archive.ready, what="history")
    sidebar, archive = app.conversations.sidebar, app.archive
    assert sidebar is not None and archive is not None
    ask(root, app, "about tea")
    first = archive.conversation_id
    app.flow.new_chat()  # (what Ctrl+N does; no key: the X focus may be elsewhere)
    ask(root, app, "about coffee")
    second = archive.conversation_id
    assert first != second and rows(sidebar)[:2] == [second, first]

    app.conversations.show(first)  # what a click in the list does (on_select)
    pump_until(root, lambda: not app.flow.showing_conversation, what="the conversation on screen")
    assert "about tea" in app.transcript.plain_text()
    assert "about coffee" not in app.transcript.plain_text()
    assert app.session.messages[1].content == "about tea"

    app.conversations.rename(first, "Tea notes")
    assert archive.store is not None and archive.store.get(first).title == "Tea notes"
    app.conversations.delete(second)
    assert second not in rows(sidebar)
    app.conversations.undelete(second)
    assert second in rows(sidebar)

    sidebar.focus_search()
    root.update()
    app.conversations.search("coffee")
    results = archive.search("coffee")
    assert [c.id for c, _snippet in results] == [second]


def on_screen(root: tk.Misc, app: ChatApp) -> str:
    """The transcript's text once the chat being opened is all on screen."""
    pump_until(root, lambda: not app.flow.showing_conversation, what="the chat on screen")
    return app.transcript.plain_text()


def delete_key(root: tk.Misc, sidebar: ConversationSidebar, cid: int) -> None:
    """The Delete key on a chat's row, as the user presses it there."""
    sidebar.tree.focus(str(cid))
    keyboard_focus(root, sidebar.tree)
    sidebar.tree.event_generate("<KeyPress-Delete>")
    root.update()


def test_deleting_the_open_chat_opens_the_next_and_undo_brings_it_back_on_screen(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    """Reported (issue 37): after Delete no other chat opened (the pane showed the chat that
    was gone), and after Delete then Undo the chat came back in the list but not in the
    pane. Now the chat listed after it opens (before it, for the last; a new empty chat
    when none is left), and Undo puts the deleted chat back in the list and on screen,
    unless the user has moved on to another chat since."""
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.archive is not None and app.archive.ready, what="history")
    sidebar, archive = app.conversations.sidebar, app.archive
    chats = []
    for question in ("about tea", "about coffee", "about cocoa"):
        app.flow.new_chat()
        ask(root, app, question)
        chats.append(archive.conversation_id)
    tea, coffee, cocoa = chats
    assert rows(sidebar) == [cocoa, coffee, tea] and sidebar.selected_id() == cocoa

    delete_key(root, sidebar, cocoa)  # the open chat
    shown = on_screen(root, app)
    assert archive.conversation_id == coffee and "about coffee" in shown
    assert "about cocoa" not in shown and app.session.messages[1].content == "about coffee"
    assert rows(sidebar) == [coffee, tea] and sidebar.selected_id() == coffee

    sidebar.undo_button.invoke()  # Undo: in the list and in the pane
    shown = on_screen(root, app)
    assert rows(sidebar) == [cocoa, coffee, tea] and sidebar.selected_id() == cocoa
    assert archive.conversation_id == cocoa and "about cocoa" in shown
    assert app.session.messages[1].content == "about cocoa"

    delete_key(root, sidebar, cocoa)  # again: coffee opens; the user moves on to tea
    assert archive.conversation_id == coffee
    app.conversations.show(tea)  # what a click in the list does
    on_screen(root, app)
    sidebar.undo_button.invoke()  # back in the list; the pane stays where the user went
    assert rows(sidebar) == [cocoa, coffee, tea]
    assert archive.conversation_id == tea and "about tea" in on_screen(root, app)

    delete_key(root, sidebar, tea)  # the last row: the one before it opens
    assert archive.conversation_id == coffee and "about coffee" in on_screen(root, app)
    delete_key(root, sidebar, coffee)
    delete_key(root, sidebar, cocoa)  # the only one left: a new, empty chat
    on_screen(root, app)
    assert rows(sidebar) == [] and archive.conversation_id is None
    assert app.transcript.entries == [] and len(app.session.messages) == 1  # (the system's)
    sidebar.undo_button.invoke()
    assert rows(sidebar) == [cocoa] and "about cocoa" in on_screen(root, app)


def test_the_title_follows_an_edited_first_question_unless_renamed(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.archive is not None and app.archive.ready, what="history")
    archive = app.archive
    assert archive is not None and archive.store is not None
    ask(root, app, "about tea")
    chat = archive.conversation_id
    assert chat is not None

    def resend_first(text: str) -> None:
        app.transcript.act("edit", app.transcript.entries[0])  # the header's Edit link
        app.input.set_draft(text)
        count = len(app.flow.answering.finished)
        assert app.flow.send()
        pump_until(root, lambda: len(app.flow.answering.finished) > count, what="the answer")

    resend_first("about green tea")
    assert archive.store.get(chat).title == "about green tea"
    assert archive.conversation_id == chat
    app.conversations.rename(chat, "Tea notes")
    resend_first("about black tea")
    assert archive.store.get(chat).title == "Tea notes"


def test_a_prompt_from_the_command_line_starts_its_own_chat(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    """``tkchat --prompt ... --seed 3``: a new chat with the command line's sampling, not a
    follow-up in yesterday's conversation with yesterday's sampling."""
    from tkchat.conversation import Sampling

    with ConversationStore(database_path()) as store:
        old = store.create("yesterday", settings={"seed": 99, "max_tokens": 5})
        store.add_message(old.id, "user", "old question")
        store.add_message(old.id, "assistant", "old answer")
    app = make_app(
        ScriptedBackend(rate=0, tokens=6),
        history=True,
        autosend="fresh question",
        sampling=Sampling(seed=3, max_tokens=6),
    )
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the --prompt answer")
    assert "old question" not in app.transcript.plain_text()
    assert app.session.sampling.seed == 3
    assert app.archive is not None and app.archive.store is not None
    new_id = app.archive.conversation_id
    assert new_id is not None and new_id != old.id
    assert [m.content for m in app.archive.store.messages(old.id)] == ["old question", "old answer"]


def test_undo_while_searching_brings_the_chat_back_into_the_results(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    """Seen by hand: search "capital", delete the chat found, press Undo — the chat was back
    in the store but the list still said "No chats match", until the search was cleared."""
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.archive is not None and app.archive.ready, what="history")
    sidebar = app.conversations.sidebar
    ask(root, app, "about coffee")
    found = app.archive.conversation_id
    app.flow.new_chat()  # (what Ctrl+N does; no key: the X focus may be elsewhere)
    ask(root, app, "about tea")
    sidebar.search_var.set("coffee")  # as typing in the search box does (debounced)
    pump_until(root, lambda: rows(sidebar) == [found], what="the search results")
    app.conversations.delete(found)  # the Delete key or the menu's Delete
    pump_until(root, lambda: rows(sidebar) == [], what="the chat to leave the results")
    app.conversations.undelete(found)  # the Undo button
    pump_until(root, lambda: rows(sidebar) == [found], what="the chat back in the results")
    assert sidebar.search_var.get() == "coffee"


def test_a_deleted_chat_leaves_the_file_when_the_window_closes(
    data_dir: Path, display: None
) -> None:
    """Delete is undoable while the window lives; after it closes, the chat and its
    messages are gone from the database (not just hidden), and one never deleted stays."""
    root = tk.Tk()
    controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
    app = ChatApp(root, controller, AppOptions(history=True, language="en"))
    controller.load_async()
    pump_until(root, lambda: app.flow.model_ready and app.archive.ready, what="model and history")
    ask(root, app, "keep this one")
    kept = app.archive.conversation_id
    app.flow.new_chat()  # (what Ctrl+N does; no key: the X focus may be elsewhere)
    ask(root, app, "a secret to forget")
    doomed = app.archive.conversation_id
    app.conversations.delete(doomed)
    app.conversations.undelete(doomed)  # undone: it would stay...
    app.conversations.delete(doomed)  # ...but deleted again, it goes at close
    app.close()

    with ConversationStore(database_path()) as store:
        assert [c.id for c in store.list_conversations()] == [kept]
        rows = store._conn.execute(  # noqa: SLF001 - what is in the file, deleted or not
            "SELECT COUNT(*) FROM messages WHERE content LIKE '%secret%'"
        ).fetchone()
        assert rows == (0,)
        assert store.search("secret") == []


def test_a_chat_deleted_long_ago_leaves_the_file_at_the_next_start(
    data_dir: Path, display: None
) -> None:
    """A window that crashed never closed: its deletions are removed by the next window
    to open, once older than the undo could still be offered."""
    with ConversationStore(database_path()) as store:
        old = store.create("deleted before the crash").id
        store.add_message(old, "user", "gone soon")
        recent = store.create("deleted a moment ago").id
        store.delete(old)
        store.delete(recent)
        store._conn.execute(  # noqa: SLF001 - an hour ago, as a crash would have left it
            "UPDATE conversations SET deleted_at = deleted_at - 3600 WHERE id = ?", (old,)
        )
    root = tk.Tk()
    controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
    app = ChatApp(root, controller, AppOptions(history=True, language="en"))
    pump_until(root, lambda: app.archive.ready, what="history")
    app.close()
    with ConversationStore(database_path()) as store:
        ids = {row[0] for row in store._conn.execute("SELECT id FROM conversations")}  # noqa: SLF001
        assert ids == {recent}


def test_a_chat_opened_from_a_search_opens_at_the_match_with_every_match_marked(
    data_dir: Path, root: tk.Tk, make_app
) -> None:
    """Reported (issue 37): search opened the chat at its end and highlighted nothing. Now it
    opens at the first match, every match highlighted (case ignored), and a match in an
    answer stays highlighted after the answer's markdown is painted over its plain text."""
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.archive is not None and app.archive.ready, what="history")
    store = app.archive.store
    assert store is not None
    chat = store.create("long chat")
    for i in range(40):
        store.add_message(chat.id, "user", f"question {i}" + (" about a zebra" if i == 3 else ""))
        answer = f"answer {i}: " + "some words " * 30
        store.add_message(chat.id, "assistant", answer + ("**Zebra** facts" if i == 4 else ""))
    store.add_message(chat.id, "assistant", "```python\nprint('zebra')  # a zebra in code\n```")
    other = store.create("other")
    store.add_message(other.id, "user", "nothing to find")
    app.conversations.refresh()
    sidebar = app.conversations.sidebar
    sidebar.search_var.set("zebra")
    app.conversations.search("zebra")
    app.conversations.show(chat.id)  # a click on the result
    on_screen(root, app)
    pump_until(root, lambda: not app.transcript.painter.busy, what="the paint near the match")
    root.update()
    text = app.transcript.text
    ranges = text.tag_ranges("found")
    found = [text.get(a, b) for a, b in zip(ranges[::2], ranges[1::2], strict=True)]
    assert [f.lower() for f in found] == ["zebra"] * 4, found
    assert text.bbox(ranges[0]) is not None  # the first match is in view...
    assert text.yview()[1] < 1.0  # ...and the view is not the chat's end
    bold = [tag for tag in text.tag_names(ranges[2]) if tag != "found"]
    assert bold, "the answer's match was painted as markdown and marked again"
    # Seen in the field: a match in highlighted code showed no highlight, the code's tags,
    # made after the mark's, drawn over it. The mark is the top tag wherever it is.
    pump_until(root, lambda: not app.transcript.painter.busy, what="the code painted too")
    ranges = text.tag_ranges("found")
    assert len(ranges) == 8
    for start in ranges[::2]:
        assert text.tag_names(start)[-1] == "found", text.tag_names(start)
    sidebar.search_var.set("")  # opened from the list, not a search: nothing marked
    app.conversations.show(other.id)
    on_screen(root, app)
    assert text.tag_ranges("found") == ()
