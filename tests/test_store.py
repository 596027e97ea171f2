"""The conversation store: CRUD, search, export/import, the writer thread, and every failure.

No Tk and no timing assertions: waits are bounded polls for a condition, and batching is
counted in transactions. Faults (a full disk, a read-only file) are injected through the
store's connection seam, since a test cannot fill a real disk.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAVED_CONTENT, Faults, wait_until
from tkchat.conversation import Sampling
from tkchat.lab.bench.saving_bench import save_one, written_bytes
from tkchat.store import db
from tkchat.store import files as damaged
from tkchat.store.db import (
    EXPORT_FORMAT,
    SCHEMA_VERSION,
    ConversationStore,
    Role,
    StoreError,
    close_fences,
    open_store,
    sampling_from_settings,
    settings_from_sampling,
)
from tkchat.store.files import data_dir, database_path
from tkchat.store.writer import FLUSH_INTERVAL_S, MessageTicket, StoreWriter

REPO = Path(__file__).resolve().parent.parent
HAS_FTS5 = db.fts5_available(sqlite3.connect(":memory:"))
SEARCH_MODES = [
    pytest.param(True, id="fts5", marks=pytest.mark.skipif(not HAS_FTS5, reason="no FTS5")),
    pytest.param(False, id="scan"),
]
CODE_ANSWER = "Here you go:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nDone."


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture(autouse=True)
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timestamp is one second after the previous one: ordering is deterministic."""
    counter = itertools.count(1_700_000_000)
    monkeypatch.setattr(db, "_now", lambda: float(next(counter)))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "conversations.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[ConversationStore]:
    with ConversationStore(db_path) as opened:
        yield opened


def raw_rows(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Read with a separate plain connection: proves the data is committed to the file."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


class Errors(list[str]):
    """An on_error callback that records messages and the thread they arrived on."""

    threads: set[str]

    def __init__(self) -> None:
        super().__init__()
        self.threads = set()

    def __call__(self, message: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.append(message)


# --- paths ----------------------------------------------------------------------------------


def test_data_dir_follows_each_platform_convention(tmp_path: Path) -> None:
    home = Path("/home/ada")
    assert data_dir(platform="linux", environ={}, home=home) == home / ".local/share/tkchat"
    assert data_dir(platform="linux", environ={"XDG_DATA_HOME": "/xdg"}, home=home) == Path(
        "/xdg/tkchat"
    )
    # A relative XDG_DATA_HOME is invalid by the spec and ignored.
    assert data_dir(platform="linux", environ={"XDG_DATA_HOME": "rel"}, home=home) == (
        home / ".local/share/tkchat"
    )
    assert data_dir(platform="darwin", environ={}, home=home) == (
        home / "Library/Application Support/tkchat"
    )
    assert data_dir(
        platform="win32", environ={"APPDATA": "C:/Users/ada/AppData/Roaming"}, home=home
    ) == Path("C:/Users/ada/AppData/Roaming/tkchat")
    assert data_dir(platform="win32", environ={}, home=home) == home / "AppData/Roaming/tkchat"
    override = {"TKCHAT_DATA_DIR": str(tmp_path), "XDG_DATA_HOME": "/xdg"}
    assert data_dir(platform="linux", environ=override, home=home) == tmp_path
    assert database_path(platform="linux", environ=override, home=home) == (
        tmp_path / "conversations.sqlite3"
    )


def test_open_store_defaults_to_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path / "here"))
    store, warning = open_store()
    with store:
        assert warning is None and store.path is not None
        assert store.path == tmp_path / "here" / "conversations.sqlite3"
        assert store.path.exists()


# --- conversations --------------------------------------------------------------------------


def test_a_new_database_has_the_schema_and_its_pragmas(
    store: ConversationStore, db_path: Path
) -> None:
    assert raw_rows(db_path, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    assert raw_rows(db_path, "PRAGMA journal_mode") == [("wal",)]
    conn = store._connection()
    assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL


def test_reopening_migrates_nothing_and_keeps_everything(db_path: Path) -> None:
    with ConversationStore(db_path) as first:
        conversation = first.create("kept")
        first.add_message(conversation.id, "user", "still here")
    with ConversationStore(db_path) as second:
        assert db.migrate(second._connection()) == SCHEMA_VERSION
        assert [m.content for m in second.messages(conversation.id)] == ["still here"]


def test_create_rename_get_and_list_newest_first(store: ConversationStore) -> None:
    first = store.create("First")
    second = store.create("  Second \n chat  ")
    third = store.create("")
    assert (second.title, third.title) == ("Second chat", "New chat")
    assert [c.id for c in store.list_conversations()] == [third.id, second.id, first.id]
    store.add_message(first.id, "user", "bump")  # activity moves a conversation to the top
    store.rename(second.id, "Renamed")
    assert store.get(second.id).title == "Renamed"
    assert [c.id for c in store.list_conversations()] == [second.id, first.id, third.id]
    with pytest.raises(StoreError) as info:
        store.rename(999, "nobody")
    assert info.value.kind == "not_found"


def test_messages_keep_their_order_and_are_committed_at_once(
    store: ConversationStore, db_path: Path
) -> None:
    conversation = store.create()
    turns: list[tuple[Role, str]] = [("system", "be brief"), ("user", "hi"), ("assistant", "hello")]
    ids = [store.add_message(conversation.id, role, text) for role, text in turns]
    # A second connection sees the message as soon as add_message returned: committed.
    assert raw_rows(
        db_path, "SELECT " + SAVED_CONTENT + " FROM messages WHERE id = ?", (ids[1],)
    ) == [("hi",)]
    stored = store.messages(conversation.id)
    assert [(m.id, m.position, m.role, m.status) for m in stored] == [
        (ids[0], 0, "system", "complete"),
        (ids[1], 1, "user", "complete"),
        (ids[2], 2, "assistant", "complete"),
    ]
    assert stored[2].as_message().content == "hello"
    store.update_message(ids[2], content="hello there", status="stopped")
    assert (store.message(ids[2]).content, store.message(ids[2]).status) == (
        "hello there",
        "stopped",
    )


@pytest.mark.parametrize(
    ("role", "status", "content"),
    [("bot", "complete", "x"), ("user", "done", "x"), ("user", "complete", None)],
)
def test_invalid_messages_are_refused(
    store: ConversationStore, role: str, status: str, content: object
) -> None:
    conversation = store.create()
    with pytest.raises(StoreError) as info:
        store.add_message(conversation.id, role, content, status)  # type: ignore[arg-type]
    assert info.value.kind == "invalid"
    with pytest.raises(StoreError) as missing:
        store.add_message(12345, "user", "to nobody")
    assert missing.value.kind == "not_found"
    assert store.messages(conversation.id) == []


def test_soft_delete_restore_and_purge(store: ConversationStore, db_path: Path) -> None:
    keep, doomed = store.create("keep"), store.create("doomed")
    store.add_message(doomed.id, "user", "a unique sentence about lighthouses")
    store.delete(doomed.id)
    assert [c.id for c in store.list_conversations()] == [keep.id]
    listed = store.list_conversations(include_deleted=True)
    assert {c.id for c in listed} == {keep.id, doomed.id}
    assert store.get(doomed.id).deleted_at is not None
    assert store.search("lighthouses") == []
    assert len(store.messages(doomed.id)) == 1  # still there: undo is possible

    store.restore(doomed.id)  # undo: back in its old place, messages intact
    assert [c.id for c in store.list_conversations()] == [doomed.id, keep.id]
    assert store.get(doomed.id).updated_at == doomed.updated_at + 1  # only the message bumped
    assert [c.id for c, _ in store.search("lighthouses")] == [doomed.id]

    store.delete(doomed.id)
    assert store.purge_deleted(older_than_s=3600) == 0  # deleted too recently
    assert store.purge_deleted(older_than_s=0) == 1
    assert [c.id for c in store.list_conversations(include_deleted=True)] == [keep.id]
    assert raw_rows(db_path, "SELECT COUNT(*) FROM messages") == [(0,)]
    assert store.search("lighthouses") == []


def test_system_prompt_and_settings_round_trip(store: ConversationStore, db_path: Path) -> None:
    conversation = store.create("tuned", system_prompt="You are terse.")
    sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=256, seed=42)
    store.set_settings(conversation.id, {**settings_from_sampling(sampling), "note": "试试 🎉"})
    store.set_system_prompt(conversation.id, "Réponds en français.")
    with ConversationStore(db_path) as reopened:
        loaded = reopened.get(conversation.id)
    assert loaded.system_prompt == "Réponds en français."
    assert loaded.settings["note"] == "试试 🎉"
    assert sampling_from_settings(loaded.settings) == sampling
    # Bad values in a stored file fall back to defaults instead of breaking generation.
    assert sampling_from_settings({"temperature": "hot", "seed": 1.5, "max_tokens": 99}) == (
        Sampling(max_tokens=99)
    )
    loaded.settings["temperature"] = 9  # a returned dict is a copy
    assert store.get(conversation.id).settings["temperature"] == 0.7
    for bad in ({"temperature": float("nan")}, {"x": object()}, {1: "int key"}):
        with pytest.raises(StoreError) as info:
            store.set_settings(conversation.id, bad)  # type: ignore[arg-type]
        assert info.value.kind == "invalid"


# --- search ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fts", SEARCH_MODES)
def test_search_titles_and_messages_in_any_script(db_path: Path, fts: bool) -> None:
    with ConversationStore(db_path, fts=fts) as store:
        assert store.fts is fts
        english = store.create("Python questions")
        store.add_message(english.id, "user", "How do I reverse a LIST in Python?")
        chinese = store.create("中文")
        store.add_message(chinese.id, "user", "请用中文解释一下事件循环。")
        store.add_message(chinese.id, "assistant", "好的！事件循环就像一个队列 🎉 很简单。")
        french = store.create("Café")
        store.add_message(french.id, "user", 'ÉCOLE and the "quoted" word')

        def found(text: str) -> list[int]:
            return [c.id for c, _ in store.search(text)]

        assert found("list in python") == [english.id]  # case-insensitive, 3+ chars
        assert found("python") == [english.id]  # title and message: listed once
        assert found("questions") == [english.id]  # title only
        assert found("事件循环") == [chinese.id]
        assert found("队列") == [chinese.id]  # two characters: below the trigram size
        assert found("🎉") == [chinese.id]
        assert found("école") == [french.id]  # non-ASCII case folding
        assert found('"quoted"') == [french.id]  # quotes cannot break the FTS query
        assert found("no such text") == []
        assert found("   ") == []
        ((_, snippet),) = store.search("队列")
        assert "队列" in snippet and "\n" not in snippet


def test_search_snippet_is_short_and_marked_when_cut(store: ConversationStore) -> None:
    conversation = store.create()
    store.add_message(conversation.id, "user", "x" * 200 + " needle " + "y" * 200)
    ((_, snippet),) = store.search("NEEDLE")
    assert "needle" in snippet and snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) < 120


@pytest.mark.skipif(not HAS_FTS5, reason="no FTS5 in this SQLite")
def test_search_index_is_rebuilt_after_a_session_without_fts5(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        conversation = store.create()
        store.add_message(conversation.id, "user", "written with the index")
    with ConversationStore(db_path, fts=False) as without:  # as on a build without FTS5
        without.add_message(conversation.id, "user", "written while it was off")
        assert len(without.search("while it was off")) == 1
    with ConversationStore(db_path) as again:
        assert again.fts
        assert len(again.search("while it was off")) == 1  # the index caught up
        assert len(again.search("with the index")) == 1


# --- mark_interrupted -----------------------------------------------------------------------


def test_mark_interrupted_marks_only_streaming_answers(store: ConversationStore) -> None:
    conversation = store.create()
    done = store.add_message(conversation.id, "assistant", "finished")
    live = store.add_message(conversation.id, "assistant", "half an ans", "streaming")
    stopped = store.add_message(conversation.id, "assistant", "cut", "stopped")
    assert store.mark_interrupted() == 1
    assert [store.message(i).status for i in (done, live, stopped)] == [
        "complete",
        "interrupted",
        "stopped",
    ]
    assert store.message(live).content == "half an ans"
    assert store.mark_interrupted() == 0


# --- export and import ----------------------------------------------------------------------


def make_conversation(store: ConversationStore) -> int:
    conversation = store.create("Adding numbers 🧮", system_prompt="Answer with code.")
    store.set_settings(conversation.id, {"temperature": 0.2, "seed": 7})
    store.add_message(conversation.id, "user", "How do I add two numbers? 用 Python")
    store.add_message(conversation.id, "assistant", CODE_ANSWER)
    store.add_message(conversation.id, "user", "And in a loop?")
    store.add_message(conversation.id, "assistant", "Sure:\n\n```python\nfor i in", "interrupted")
    return conversation.id


def test_export_markdown_is_readable_with_code_intact(store: ConversationStore) -> None:
    text = store.export_markdown(make_conversation(store))
    assert text.startswith("# Adding numbers 🧮\n\n## System prompt\n\nAnswer with code.\n")
    assert re.findall(r"^## (.+)$", text, re.MULTILINE) == [
        "System prompt",
        "User",
        "Assistant",
        "User",
        "Assistant",
    ]
    assert "## User\n\nHow do I add two numbers? 用 Python\n" in text
    assert CODE_ANSWER in text  # the code block, byte for byte
    # The interrupted answer's open fence is closed, then its status is shown.
    assert text.endswith("```python\nfor i in\n```\n\n*[interrupted]*\n")


def test_close_fences() -> None:
    assert close_fences("```\ncode\n```") == "```\ncode\n```"
    assert close_fences("````md\n```\ninner\n") == "````md\n```\ninner\n\n````"
    assert close_fences("~~~\nx") == "~~~\nx\n~~~"
    assert close_fences("inline ```code``` here") == "inline ```code``` here"


def test_json_export_round_trips_through_import(store: ConversationStore, db_path: Path) -> None:
    original_id = make_conversation(store)
    exported = store.export_json(original_id)
    assert (exported["format"], exported["version"]) == (EXPORT_FORMAT, 1)
    text = json.dumps(exported, ensure_ascii=False)  # as written to a file

    with ConversationStore(db_path.with_name("other.sqlite3")) as other:
        imported = other.import_json(text.encode("utf-8"))
        again = other.export_json(imported.id)
        assert (imported.title, imported.system_prompt, imported.settings) == (
            "Adding numbers 🧮",
            "Answer with code.",
            {"temperature": 0.2, "seed": 7},
        )
        assert again["conversation"]["messages"] == exported["conversation"]["messages"]
        assert again["conversation"]["created_at"] == exported["conversation"]["created_at"]
        assert other.export_markdown(imported.id) == store.export_markdown(original_id)
    assert store.import_json(exported).id != original_id  # always a new conversation


def test_import_turns_a_streaming_answer_into_interrupted(store: ConversationStore) -> None:
    data = {
        "format": EXPORT_FORMAT,
        "version": 1,
        "conversation": {
            "title": "minimal",
            "messages": [{"role": "assistant", "content": "par", "status": "streaming"}],
        },
    }
    conversation = store.import_json(data)
    (message,) = store.messages(conversation.id)
    assert (message.status, message.content, conversation.settings) == ("interrupted", "par", {})


def valid_export() -> dict[str, object]:
    return {
        "format": EXPORT_FORMAT,
        "version": 1,
        "conversation": {"title": "t", "messages": [{"role": "user", "content": "hi"}]},
    }


def with_change(path: str, value: object) -> dict[str, object]:
    data = json.loads(json.dumps(valid_export()))
    target = data
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("{not json", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        ("[1, 2]", "the file must be a JSON object"),
        (with_change("format", "chatgpt"), '"format" must be'),
        (with_change("version", 99), "newer tkchat"),
        (with_change("version", "1"), '"version" must be'),
        (with_change("conversation", None), "conversation must be an object"),
        (with_change("conversation.messages", {}), "conversation.messages must be a list"),
        (with_change("conversation.messages.0.role", "bot"), "messages[0].role"),
        (with_change("conversation.messages.0.content", 5), "messages[0].content"),
        (with_change("conversation.messages.0.status", "??"), "messages[0].status"),
        (with_change("conversation.messages.0.created_at", "noon"), "messages[0].created_at"),
        (with_change("conversation.settings", [1]), "conversation.settings"),
        (with_change("conversation.title", 3), "conversation.title"),
    ],
)
def test_malformed_import_raises_a_clear_store_error(
    store: ConversationStore, data: object, expected: str
) -> None:
    with pytest.raises(StoreError) as info:
        store.import_json(data)  # type: ignore[arg-type]
    assert info.value.kind == "invalid"
    assert expected in str(info.value)
    assert str(info.value).startswith("This is not a conversation tkchat can import")
    assert store.list_conversations(include_deleted=True) == []  # nothing half-imported


# --- the writer -----------------------------------------------------------------------------


def test_writer_saves_on_its_own_thread_and_reports_ids(
    store: ConversationStore, db_path: Path
) -> None:
    conversation = store.create()
    saved: list[tuple[int, str]] = []
    errors = Errors()
    writer = StoreWriter(store, on_error=errors)
    try:
        question = writer.add_message(
            conversation.id,
            "user",
            "hello?",
            on_saved=lambda mid: saved.append((mid, threading.current_thread().name)),
        )
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert isinstance(question, MessageTicket) and question != answer
        writer.append(answer, "Hel")
        writer.append(answer, "lo ")
        writer.append(answer, "世界 🎉")
        writer.finish(answer, "complete")
        assert writer.flush(timeout=10)
    finally:
        assert writer.close(timeout=10)
    assert errors == []
    ((message_id, thread_name),) = saved
    assert thread_name == "tkchat-store-writer"  # the UI must hop back to its own thread
    assert raw_rows(
        db_path, "SELECT role, " + SAVED_CONTENT + ", status FROM messages ORDER BY position"
    ) == [
        ("user", "hello?", "complete"),
        ("assistant", "Hello 世界 🎉", "complete"),
    ]
    assert store.message(message_id).content == "hello?"


def test_many_appends_are_written_in_one_transaction(
    store: ConversationStore, db_path: Path
) -> None:
    conversation = store.create()
    # A long interval: only the explicit flush writes, so the count is exact.
    writer = StoreWriter(store, flush_interval=60.0)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert writer.flush(timeout=10)
        before = writer.commits
        for i in range(1000):
            writer.append(answer, f"t{i} ")
        assert writer.flush(timeout=10)
        assert writer.commits - before == 1
    finally:
        writer.close(timeout=10)
    (content,) = raw_rows(
        db_path, "SELECT " + SAVED_CONTENT + " FROM messages WHERE role = 'assistant'"
    )[0]
    assert content == "".join(f"t{i} " for i in range(1000))


# --- linear saving (issue 27) -------------------------------------------------------------


@pytest.mark.parametrize("rate", ["flood", "model"])
def test_saving_an_answer_writes_bytes_linear_in_its_size(tmp_path: Path, rate: str) -> None:
    """Each flush used to rewrite the whole answer (``content = content || ?``): bytes grew
    with the square of the answer (1,000,000 characters: 410 MB). With appended parts they
    grow with it: ten times the answer, about ten times the bytes, at the same pace."""
    if written_bytes() is None:
        pytest.skip("no /proc/self/io here")
    small, large = (20_000, 200_000) if rate == "flood" else (4_000, 40_000)
    first = save_one(tmp_path, small, rate)
    second = save_one(tmp_path, large, rate)
    assert second.commits >= 9 * first.commits  # the same pace: ten times the flushes
    growth = second.bytes_per_char / first.bytes_per_char
    assert growth < 1.5, (first, second)  # linear: flat per character (quadratic: ~10)
    assert first.wal_bytes == second.wal_bytes == 0  # the log emptied after each answer


def test_a_streaming_answer_is_written_as_parts_and_collapsed_once_at_its_end(
    store: ConversationStore, db_path: Path
) -> None:
    conversation = store.create()
    answer = store.add_message(conversation.id, "assistant", "", status="streaming")
    for piece in ("one ", "two ", "three"):
        store.append_text({answer: piece})
    # Nothing rewrote the message: its text so far is in three parts, and every reader
    # sees it whole.
    assert raw_rows(db_path, "SELECT content FROM messages WHERE id = ?", (answer,)) == [("",)]
    assert raw_rows(db_path, "SELECT COUNT(*) FROM message_parts") == [(3,)]
    assert store.message(answer).content == "one two three"
    assert [m.content for m in store.messages(conversation.id)] == ["one two three"]
    assert store.export_json(conversation.id)["conversation"]["messages"][0]["content"] == (
        "one two three"
    )
    store.update_message(answer, status="complete", more=" four")  # its end: one commit
    assert raw_rows(db_path, "SELECT content, status FROM messages") == [
        ("one two three four", "complete")
    ]
    assert raw_rows(db_path, "SELECT COUNT(*) FROM message_parts") == [(0,)]
    if store.fts:
        assert [c.id for c, _ in store.search("three four")] == [conversation.id]
    store.append_text({answer: "late"})  # an answer that ended takes no more text
    assert store.message(answer).content == "one two three four"


def test_an_answer_cut_off_by_a_crash_keeps_its_parts_when_marked_interrupted(
    store: ConversationStore, db_path: Path
) -> None:
    conversation = store.create()
    answer = store.add_message(conversation.id, "assistant", "", status="streaming")
    store.append_text({answer: "saved before "})
    store.append_text({answer: "the kill"})
    assert store.mark_interrupted() == 1
    assert raw_rows(db_path, "SELECT content, status FROM messages") == [
        ("saved before the kill", "interrupted")
    ]
    assert raw_rows(db_path, "SELECT COUNT(*) FROM message_parts") == [(0,)]


def test_an_answers_last_text_and_its_end_are_one_commit(
    store: ConversationStore, db_path: Path
) -> None:
    """A kill between two commits (the last text, then the status) left a whole answer
    marked interrupted at the next start."""
    conversation = store.create()
    writer = StoreWriter(store, flush_interval=60.0)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert writer.flush(timeout=10)
        before = writer.commits
        writer.append(answer, "the last words")
        writer.finish(answer, "complete")
        assert writer.flush(timeout=10)
        assert writer.commits - before == 1
    finally:
        writer.close(timeout=10)
    assert raw_rows(db_path, "SELECT content, status FROM messages") == [
        ("the last words", "complete")
    ]


def test_the_write_ahead_log_is_bounded_and_emptied_after_each_answer(
    store: ConversationStore, db_path: Path
) -> None:
    wal = db_path.with_name(db_path.name + "-wal")
    assert raw_rows(db_path, "PRAGMA journal_size_limit") == [(-1,)]  # a plain connection's
    assert store._connection().execute("PRAGMA journal_size_limit").fetchone()[0] > 0
    assert store._connection().execute("PRAGMA wal_autocheckpoint").fetchone()[0] <= 256
    conversation = store.create()
    writer = StoreWriter(store, flush_interval=0.01)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        for _ in range(200):
            writer.append(answer, "x" * 1000)
        assert writer.flush(timeout=10)
        assert wal.stat().st_size > 0  # the answer's parts are in the log
        writer.finish(answer, "complete")
        assert writer.flush(timeout=10)
        assert wal.stat().st_size == 0  # emptied once the answer ended
    finally:
        writer.close(timeout=10)


class ManualClock:
    """The writer's flush clock, moved by the test; it counts how often it is read (the
    writer reads it only while some text is due: an idle writer never looks)."""

    def __init__(self, step: float = 0.0) -> None:
        self.now = 0.0
        self.step = step  # moved this much at each reading
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


def test_a_writer_with_nothing_to_write_waits_without_a_deadline(
    store: ConversationStore,
) -> None:
    """An answer whose end arrived before its text's batch was due took that text with it,
    and left the batch's deadline set: the writer then polled its queue with no wait, for
    good, holding the GIL (the window's Tcl calls took 300 x longer after a flood). A writer
    with a deadline reads its clock at every turn of its loop; one with nothing to write
    waits on its queue and never reads it: a flush (one turn) reads it not at all."""
    conversation = store.create()
    clock = ManualClock()  # never moves: the batch is never due by itself
    writer = StoreWriter(store, clock=clock)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert writer.flush(timeout=10)
        assert clock.reads == 0  # nothing was due yet
        writer.append(answer, "the last words")
        writer.finish(answer, "complete")  # before the batch is due
        assert writer.flush(timeout=10)
        reads = clock.reads
        assert writer.flush(timeout=10)  # a turn of the loop, with nothing to write
        assert clock.reads == reads, "a deadline outlived the text it was for"
    finally:
        writer.close(timeout=10)
    assert store.message(store.messages(conversation.id)[0].id).content == "the last words"


def test_appends_are_written_by_the_timer_without_a_flush(
    store: ConversationStore, db_path: Path
) -> None:
    """Text is due FLUSH_INTERVAL_S after its first append by the writer's clock, from an
    answer's first moments (the first flush used to come 0.5 s after the first text, so a
    kill in an answer's first half second kept none of it). Not before: the writer looked at
    the clock, saw it early and wrote nothing."""
    conversation = store.create()
    clock = ManualClock()
    writer = StoreWriter(store, clock=clock)
    on_disk = lambda: raw_rows(db_path, "SELECT " + SAVED_CONTENT + " FROM messages")  # noqa: E731
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert writer.flush(timeout=10)
        writer.append(answer, "arrives by itself")
        wait_until(lambda: clock.reads > 0, what="the writer to take the text (at 0 s)")
        clock.now = FLUSH_INTERVAL_S * 0.9
        reads = clock.reads
        wait_until(lambda: clock.reads >= reads + 2, what="the writer to look at its clock")
        assert on_disk() == [("",)]  # early: not written
        clock.now = FLUSH_INTERVAL_S
        wait_until(lambda: on_disk() == [("arrives by itself",)], what="the timed batch")
    finally:
        writer.close(timeout=10)


def test_a_flood_is_written_as_it_comes_not_once_at_its_end(
    store: ConversationStore, db_path: Path
) -> None:
    """The deadline is checked after every operation, so a flood that never lets the queue
    run empty is written every FLUSH_INTERVAL_S all the same. The clock moves a quarter of
    the interval at each reading, and the writer reads it at least once per operation: a
    batch is due at most five operations after it began."""
    conversation = store.create()
    writer = StoreWriter(store, clock=ManualClock(step=FLUSH_INTERVAL_S / 4))
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        assert writer.flush(timeout=10)
        before = writer.commits
        for index in range(200):
            writer.append(answer, f"w{index} ")
        assert writer.flush(timeout=10)
        assert writer.commits - before >= 200 // 6
    finally:
        writer.close(timeout=10)
    (content,) = raw_rows(db_path, "SELECT " + SAVED_CONTENT + " FROM messages")[0]
    assert content == "".join(f"w{index} " for index in range(200))


def test_finish_can_replace_the_streamed_text(store: ConversationStore) -> None:
    conversation = store.create()
    message_id = store.add_message(conversation.id, "assistant", "", "streaming")
    writer = StoreWriter(store, flush_interval=60.0)
    try:
        writer.append(message_id, "partial tex")  # a real id works as well as a ticket
        writer.finish(message_id, "stopped", content="the window's final text")
        assert writer.flush(timeout=10)
    finally:
        writer.close(timeout=10)
    message = store.message(message_id)
    assert (message.content, message.status) == ("the window's final text", "stopped")


def test_submit_runs_store_operations_on_the_writer(store: ConversationStore) -> None:
    results: list[int] = []
    writer = StoreWriter(store)
    try:
        writer.submit(lambda s: s.create("made on the writer").id, results.append)
        assert writer.flush(timeout=10)
    finally:
        writer.close(timeout=10)
    assert store.get(results[0]).title == "made on the writer"


def test_writer_shares_an_in_memory_store() -> None:
    memory = ConversationStore(None)
    conversation = memory.create()
    writer = StoreWriter(memory)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        writer.append(answer, "kept in memory")
        writer.finish(answer, "complete")
        assert writer.flush(timeout=10)
    finally:
        assert writer.close(timeout=10)
    assert [m.content for m in memory.messages(conversation.id)] == ["kept in memory"]
    assert memory.list_conversations()  # the shared store is still open after close


def test_flush_and_close_never_hang(store: ConversationStore) -> None:
    release = threading.Event()
    writer = StoreWriter(store)
    writer.submit(lambda _s: release.wait(30))  # the writer is stuck (a dead disk, say)
    assert writer.flush(timeout=0.2) is False
    assert writer.close(timeout=0.2) is False
    release.set()
    assert writer.close(timeout=10) is True


def test_callback_errors_and_late_calls_are_reported_not_raised(store: ConversationStore) -> None:
    conversation = store.create()
    errors = Errors()
    writer = StoreWriter(store, on_error=errors)

    def broken(_mid: int) -> None:
        raise RuntimeError("UI bug")

    writer.add_message(conversation.id, "user", "still saved", on_saved=broken)
    writer.submit(lambda s: s.rename(424242, "nobody"))
    assert writer.flush(timeout=10) is False
    assert writer.close(timeout=10)
    writer.append(7, "after close")
    assert [m.content for m in store.messages(conversation.id)] == ["still saved"]
    assert any("RuntimeError: UI bug" in e for e in errors)
    assert any("no conversation 424242" in e for e in errors)
    assert "closed" in errors[-1]
    assert "tkchat-store-writer" in errors.threads


KILLED_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tkchat.store.db import ConversationStore
    from tkchat.store.writer import StoreWriter

    store = ConversationStore(Path(sys.argv[1]))
    conversation = store.create("killed mid-answer")
    writer = StoreWriter(store)  # the app's writer, its own timer running
    writer.add_message(conversation.id, "user", "Tell me a long story.")
    answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
    assert writer.flush(10)
    words = 0
    while True:  # a flood, flushed now and then: each flush says how much is on disk
        for _ in range(100):
            writer.append(answer, f"w{words} ")
            words += 1
        assert writer.flush(10)
        print(words, flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_kill_9_mid_answer_keeps_the_question_and_what_was_flushed(db_path: Path) -> None:
    """What the writer had committed is on disk after a kill -9 mid-answer, whatever it was
    doing then: the question, and the answer's words up to at least the last flush the
    child reported, an exact prefix of what it appended. (How much a kill can lose at most,
    FLUSH_INTERVAL_S of text, is the bench's to measure.)"""
    db_path.parent.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, str(db_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    guard = threading.Timer(60, child.kill)  # a hung child must not hang the suite
    guard.start()
    try:
        assert child.stdout is not None
        flushed = [child.stdout.readline() for _ in range(3)]  # three flushes on disk
        assert all(line.strip().isdigit() for line in flushed), (
            flushed,
            child.stderr.read() if child.stderr else "",
        )
        os.kill(child.pid, signal.SIGKILL)  # while it goes on appending
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        guard.cancel()
        child.kill()
        child.wait()
    with ConversationStore(db_path) as store:
        (conversation,) = store.list_conversations()
        question, answer = store.messages(conversation.id)
        assert (question.content, question.status) == ("Tell me a long story.", "complete")
        assert answer.status == "streaming"
        words = answer.content.split()
        assert len(words) >= int(flushed[-1])  # at least what the last flush reported
        assert words == [f"w{i}" for i in range(len(words))]  # an exact prefix
        assert store.mark_interrupted() == 1
        assert store.message(answer.id).status == "interrupted"


# --- failures when opening ------------------------------------------------------------------


def test_damaged_file_is_moved_aside_byte_for_byte(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    garbage = os.urandom(3000) + b"not a database"
    db_path.write_bytes(garbage)
    (db_path.parent / (db_path.name + "-wal")).write_bytes(b"stale wal")
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "damaged" in warning
        (aside,) = db_path.parent.glob("conversations.sqlite3.damaged-*[0-9]")
        assert aside.read_bytes() == garbage
        assert str(aside) in warning
        assert Path(f"{aside}-wal").read_bytes() == b"stale wal"  # still paired with it
        assert store.path is not None and store.path == db_path  # a fresh history, on disk
        conversation = store.create("after the damage")
        store.add_message(conversation.id, "user", "works")
    assert raw_rows(db_path, "SELECT " + SAVED_CONTENT + " FROM messages") == [("works",)]


def test_integrity_failure_counts_as_damage(db_path: Path) -> None:
    with ConversationStore(db_path) as store:
        store.add_message(store.create().id, "user", "precious")
    # Swap two indexes' root pages: every page is valid SQLite, yet integrity_check fails.
    conn = sqlite3.connect(db_path, isolation_level=None)
    roots = dict(
        conn.execute(
            "SELECT name, rootpage FROM sqlite_master WHERE name IN "
            "('conversations_by_recency', 'messages_by_status')"
        )
    )
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET rootpage = ? WHERE name = 'conversations_by_recency'",
        (roots["messages_by_status"],),
    )
    conn.execute(
        "UPDATE sqlite_master SET rootpage = ? WHERE name = 'messages_by_status'",
        (roots["conversations_by_recency"],),
    )
    conn.close()
    damaged = db_path.read_bytes()
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "damaged" in warning
        (aside,) = db_path.parent.glob("conversations.sqlite3.damaged-*[0-9]")
        assert aside.read_bytes() == damaged
        assert store.list_conversations() == []


def test_damaged_file_that_cannot_be_moved_is_left_untouched(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"garbage" * 500)

    def refuse(_source: Path, _target: Path) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(damaged, "_move_file", refuse)  # looked up where move_aside is
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "left untouched" in warning and "not be saved" in warning
        assert not store.path is not None
        store.add_message(store.create().id, "user", "in memory")
    assert db_path.read_bytes() == b"garbage" * 500
    assert sorted(p.name for p in db_path.parent.iterdir()) == ["conversations.sqlite3"]


@pytest.mark.parametrize("wal", [False, True], ids=["new-file", "wal-file"])
def test_locked_database_falls_back_to_memory(db_path: Path, wal: bool) -> None:
    if wal:
        ConversationStore(db_path).close()
    else:
        db_path.parent.mkdir(parents=True)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("CREATE TABLE IF NOT EXISTS other_program (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store, warning = open_store(db_path, busy_timeout_s=0.1)
        with store:
            assert warning is not None and "in use by another program" in warning
            assert "not be saved" in warning and not store.path is not None
            store.add_message(store.create().id, "user", "works in memory")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with ConversationStore(db_path) as unlocked:  # nothing was damaged by the attempt
        assert unlocked.list_conversations() == []


@pytest.mark.parametrize(
    ("where", "error"),
    [
        ("write", "attempt to write a readonly database"),
        ("connect", "unable to open database file"),
    ],
)
def test_read_only_database_falls_back_to_memory(
    db_path: Path, faults: Faults, where: str, error: str
) -> None:
    if where == "write":
        faults.write_error = error
    else:
        faults.connect_error = error
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "may not write" in warning and "not be saved" in warning
        assert not store.path is not None
        store.add_message(store.create().id, "user", "works in memory")


def test_folder_that_cannot_be_created_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the folder should be")
    store, warning = open_store(blocker / "conversations.sqlite3")
    with store:
        assert warning is not None and "not be saved" in warning and str(tmp_path) in warning
        assert not store.path is not None
    assert blocker.read_text() == "a file where the folder should be"


def read_only_folder(base: Path, with_history: bool) -> Path:
    """A folder nobody may write to (mode 555), empty or holding an existing history."""
    folder = base / "readonly"
    folder.mkdir()
    if with_history:
        with ConversationStore(folder / "conversations.sqlite3") as old:
            old.create("old")
    folder.chmod(0o555)
    return folder / "conversations.sqlite3"


READ_ONLY_MODES = pytest.mark.parametrize(
    "with_history", [False, True], ids=["empty-folder", "existing-history"]
)
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@READ_ONLY_MODES
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.skipif(
    IS_ROOT,
    reason="root ignores chmod: see the unprivileged-child variant and the injected read-only test",
)
def test_real_read_only_folder_falls_back_to_memory(tmp_path: Path, with_history: bool) -> None:
    path = read_only_folder(tmp_path, with_history)
    try:
        store, warning = open_store(path)
        with store:
            assert warning is not None and "may not write" in warning
            assert not store.path is not None
    finally:
        path.parent.chmod(0o755)


UNPRIVILEGED_CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from tkchat.store.db import open_store  # imported while still root

    os.setgid(65534)
    os.setuid(65534)  # nobody: now chmod applies
    store, warning = open_store(Path(sys.argv[1]))
    titles = [c.title for c in store.list_conversations()]
    if not store.read_only:
        store.add_message(store.create().id, "user", "works in memory")
    print(json.dumps({
        "warning": warning, "persistent": store.path is not None, "read_only": store.read_only,
        "titles": titles,
    }))
    """
)


@READ_ONLY_MODES
@pytest.mark.skipif(not IS_ROOT, reason="needs root to drop privileges; the plain test runs")
def test_real_read_only_folder_as_an_unprivileged_child(with_history: bool) -> None:
    # pytest's tmp_path is private to root (0700): the child needs a folder it can reach.
    base = Path(tempfile.mkdtemp(prefix="tkchat-ro-"))
    base.chmod(0o755)
    try:
        path = read_only_folder(base, with_history)
        before = path.read_bytes() if with_history else None
        result = subprocess.run(
            [sys.executable, "-c", UNPRIVILEGED_CHILD, str(path)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert "may not write" in report["warning"]
        if before is None:  # nothing to show: a session in memory
            assert report["persistent"] is False and "not be saved" in report["warning"]
        else:  # the history that is there is shown, read-only, and left exactly as it was
            assert report["read_only"] is True and report["titles"] == ["old"]
            assert "read-only" in report["warning"] and "nothing new" in report["warning"]
            assert path.read_bytes() == before
    finally:
        (base / "readonly").chmod(0o755)
        shutil.rmtree(base)


def test_full_disk_at_start_falls_back_to_memory(db_path: Path, faults: Faults) -> None:
    with ConversationStore(db_path) as first:
        first.create("saved before the disk filled")
    faults.write_error = "database or disk is full"
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "is full" in warning and "not be saved" in warning
        assert not store.path is not None
    faults.write_error = None
    assert raw_rows(db_path, "SELECT title FROM conversations") == [
        ("saved before the disk filled",)
    ]


def test_database_from_a_newer_tkchat_is_left_untouched(db_path: Path) -> None:
    ConversationStore(db_path).close()
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.close()
    before = db_path.read_bytes()
    store, warning = open_store(db_path)
    with store:
        assert warning is not None and "newer version" in warning and not store.path is not None
    assert db_path.read_bytes() == before


# --- failures during a session --------------------------------------------------------------


def test_store_write_errors_say_the_disk_is_full(db_path: Path, faults: Faults) -> None:
    with ConversationStore(db_path) as store:
        conversation = store.create("before")
        store.add_message(conversation.id, "user", "first")
        faults.write_error = "database or disk is full"
        with pytest.raises(StoreError) as info:
            store.add_message(conversation.id, "user", "second")
        assert info.value.kind == "full"
        assert "the disk is full" in str(info.value) and "saved earlier are intact" in str(
            info.value
        )
        with pytest.raises(StoreError):
            store.rename(conversation.id, "after")
        faults.write_error = None
        store.add_message(conversation.id, "user", "third")  # the store still works
    assert raw_rows(db_path, "SELECT title FROM conversations") == [("before",)]
    assert raw_rows(
        db_path, "SELECT " + SAVED_CONTENT + ", position FROM messages ORDER BY position"
    ) == [
        ("first", 0),
        ("third", 1),
    ]


def test_writer_reports_a_full_disk_once_and_retries_the_text(
    db_path: Path, faults: Faults
) -> None:
    store = ConversationStore(db_path)
    conversation = store.create()
    errors = Errors()
    writer = StoreWriter(db_path, on_error=errors, flush_interval=60.0)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        writer.append(answer, "safe ")
        assert writer.flush(timeout=10)
        faults.write_error = "database or disk is full"
        writer.append(answer, "pending ")
        assert writer.flush(timeout=10) is False
        writer.append(answer, "more")
        assert writer.flush(timeout=10) is False
        assert len(errors) == 1 and "the disk is full" in errors[0]  # said once, not per flush
        assert errors.threads == {"tkchat-store-writer"}
        assert raw_rows(db_path, "SELECT " + SAVED_CONTENT + " FROM messages") == [
            ("safe ",)
        ]  # intact
        faults.write_error = None  # space was freed: the kept text is written
        writer.finish(answer, "complete")
        assert writer.flush(timeout=10)
    finally:
        writer.close(timeout=10)
        store.close()
    assert raw_rows(db_path, "SELECT " + SAVED_CONTENT + ", status FROM messages") == [
        ("safe pending more", "complete")
    ]


def test_writer_keeps_an_answers_end_the_full_disk_refused_and_writes_it_later(
    db_path: Path, faults: Faults
) -> None:
    """Without the retry the text got in but the status stayed "streaming": the next start
    marked a complete answer interrupted."""
    store = ConversationStore(db_path)
    conversation = store.create()
    writer = StoreWriter(db_path, on_error=Errors(), flush_interval=0.05)
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        writer.append(answer, "all of it")
        assert writer.flush(timeout=10)
        faults.write_error = "database or disk is full"
        writer.finish(answer, "complete", content="all of it, finished")
        assert writer.flush(timeout=10) is False  # not written yet: flush says so
        assert raw_rows(db_path, "SELECT status FROM messages") == [("streaming",)]
        faults.write_error = None
        wait_until(  # the next batch deadline writes it, unasked (no flush before this)
            lambda: raw_rows(db_path, "SELECT status FROM messages") == [("complete",)],
            what="the refused end of the answer to be written by the writer's own retry",
        )
        assert writer.flush(timeout=10)
    finally:
        writer.close(timeout=10)
        store.close()
    assert raw_rows(db_path, "SELECT " + SAVED_CONTENT + ", status FROM messages") == [
        ("all of it, finished", "complete")
    ]


def test_writer_that_cannot_open_the_database_reports_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    errors = Errors()
    writer = StoreWriter(blocker / "conversations.sqlite3", on_error=errors)
    ticket = writer.add_message(1, "user", "lost")
    writer.append(ticket, "also lost")
    assert writer.flush(timeout=10) is False
    assert writer.close(timeout=10)  # the failures were reported; closing itself is clean
    assert errors and "Could not open the conversation history" in errors[0]


def test_streaming_answers_enter_the_search_index_only_when_they_end(tmp_path: Path) -> None:
    """Re-indexing a growing answer on every append was quadratic; it is indexed once."""
    store = ConversationStore(tmp_path / "fts.sqlite3")
    if not store.fts:
        pytest.skip("this SQLite has no FTS5")
    conv = store.create("chat")
    answer = store.add_message(conv.id, "assistant", "", status="streaming")
    store.append_text({answer: "the kettle whistles"})
    store.append_text({answer: " while the teapot waits"})
    assert store.search("teapot") == []  # not indexed while streaming
    store.update_message(answer, status="complete")
    assert [c.id for c, _ in store.search("teapot")] == [conv.id]
    interrupted = store.add_message(
        conv.id, "assistant", "half a sentence about mugs", status="streaming"
    )
    assert store.mark_interrupted() == 1
    assert [c.id for c, _ in store.search("about mugs")] == [conv.id]
    other = store.create("Other")
    gone = store.add_message(other.id, "assistant", "a stray streaming line", status="streaming")
    store.delete(other.id)
    assert store.purge_deleted(0) == 1  # deletes `gone` with its conversation
    integrity = store._conn.execute(  # noqa: SLF001 - the index's own consistency check
        "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')"
    )
    assert integrity is not None and gone != interrupted
    store.close()


def test_a_second_process_on_the_same_history_leaves_the_firsts_live_answer_alone(
    tmp_path: Path,
) -> None:
    """A second window (or tkchat --server) opened on the folder while the first streams:
    its start-up marked the first's live answer ``interrupted``. Only a store that opened
    alone marks; once the others are closed, the next one alone does (a crash's answers)."""
    path = tmp_path / "history.sqlite3"
    first = ConversationStore(path)
    assert not first.others_open
    conversation = first.create()
    live = first.add_message(conversation.id, "assistant", "still streaming", "streaming")
    second = ConversationStore(path)  # its own open file: as another process's
    assert second.others_open and second.mark_interrupted() == 0
    assert second.message(live).status == "streaming"
    first.close()
    second.close()
    third = ConversationStore(path)  # alone: what is still streaming is a dead process's
    assert not third.others_open and third.mark_interrupted() == 1
    assert third.message(live).status == "interrupted"
    third.close()
