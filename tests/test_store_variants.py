"""Versions of a regenerated answer in the store (schema 2), and opening a schema-1 file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tkchat.store import ConversationStore, Kept, StoreError, StoreWriter
from tkchat.store.schema import _MIGRATIONS, SCHEMA_VERSION


def old_file(path: Path, version: int = 1) -> None:
    """A history as tkchat wrote it at schema ``version`` (1: before versions): one question,
    one answer. tests/test_store_figures.py makes a schema-2 file with it too."""
    conn = sqlite3.connect(path)
    for statement in (statement for v in range(1, version + 1) for statement in _MIGRATIONS[v]):
        conn.execute(statement)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    conn.execute(
        "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (1, 'Old', 1, 1)"
    )
    for position, (role, content) in enumerate((("user", "Hi?"), ("assistant", "Hello."))):
        conn.execute(
            "INSERT INTO messages (conversation_id, position, role, content, status, created_at)"
            " VALUES (1, ?, ?, ?, 'complete', 1)",
            (position, role, content),
        )
    conn.commit()
    conn.close()


def test_an_old_file_opens_reads_as_before_and_takes_versions(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    old_file(path)
    with ConversationStore(path) as store:
        messages = store.messages(1)
        assert [(m.role, m.content, m.variant, m.variants) for m in messages] == [
            ("user", "Hi?", 0, 1),
            ("assistant", "Hello.", 0, 1),
        ]
        answer = messages[1].id
        assert store.new_variant(1) == answer
        store.update_message(answer, content="Hey there.", status="complete")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    conn.close()
    with ConversationStore(path) as store:  # reopened: the new version shown, both kept
        last = store.messages(1)[-1]
        assert (last.content, last.variant, last.variants) == ("Hey there.", 1, 2)
        assert store.variant_texts(answer) == [("Hello.", "complete"), ("Hey there.", "complete")]


def test_choosing_a_version_is_what_the_chat_and_export_hold() -> None:
    with ConversationStore(None) as store:
        chat = store.create("C").id
        store.add_message(chat, "user", "Q")
        answer = store.add_message(chat, "assistant", "first", "stopped")
        for text in ("second", "third"):
            assert store.new_variant(chat) == answer
            store.append_text({answer: text})
            store.update_message(answer, status="complete")
        assert store.messages(chat)[-1].variants == 3
        store.choose_variant(answer, 0)
        shown = store.messages(chat)[-1]
        assert (shown.content, shown.status, shown.variant) == ("first", "stopped", 0)
        assert "first" in store.export_markdown(chat)
        assert "third" not in store.export_markdown(chat)
        exported = store.export_json(chat)["conversation"]["messages"]
        assert [m["content"] for m in exported] == ["Q", "first"]
        assert store.variant_texts(answer) == [
            ("first", "stopped"),
            ("second", "complete"),
            ("third", "complete"),
        ]
        store.choose_variant(answer, 2)
        assert store.messages(chat)[-1].content == "third"
        with pytest.raises(StoreError):
            store.choose_variant(answer, 3)
        # Editing the question puts the answer, with its versions, into the old branch; the
        # new branch's answer starts with no versions of its own.
        store.new_question_variant(chat, 0, "Q, edited")
        add_again = store.add_message(chat, "assistant", "new")
        assert store.variant_texts(add_again) == [("new", "complete")]
        # Removing the conversation for good takes every version with it.
        store.delete(chat)
        assert store.purge_deleted(0) == 1
        count = store._conn.execute("SELECT COUNT(*) FROM message_variants").fetchone()  # noqa: SLF001
        assert count == (0,)


def test_a_question_last_has_no_answer_to_regenerate() -> None:
    with ConversationStore(None) as store:
        chat = store.create("C").id
        store.add_message(chat, "user", "Q")
        with pytest.raises(StoreError):
            store.new_variant(chat)


def test_the_writer_streams_a_new_version_into_the_same_message(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    store = ConversationStore(path)
    chat = store.create("C").id
    store.add_message(chat, "user", "Q")
    first = store.add_message(chat, "assistant", "one")
    writer = StoreWriter(store)
    try:
        ticket = writer.new_variant(chat)
        writer.append(ticket, "tw")
        writer.append(ticket, "o")
        writer.finish(ticket, "complete")
        assert writer.flush()
    finally:
        writer.close()
    messages = store.messages(chat)
    assert len(messages) == 2
    assert (messages[1].id, messages[1].content, messages[1].variant) == (first, "two", 1)
    assert store.variant_texts(first) == [("one", "complete"), ("two", "complete")]
    store.close()


def test_an_edited_question_keeps_its_branch_and_choosing_swaps_the_branches(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite3"
    with ConversationStore(path) as store:
        chat = store.create("C").id
        first = store.add_message(chat, "user", "Q1")
        store.add_message(chat, "assistant", "A1")
        question = store.add_message(chat, "user", "Q2")
        store.add_message(chat, "assistant", "A2", "stopped")
        store.new_variant(chat)  # A2 regenerated: a branch keeps both its versions
        store.update_message(store.messages(chat)[-1].id, content="A2b", status="complete")
        store.add_message(chat, "user", "Q3")
        assert store.new_question_variant(chat, 2, "Q2 edited") == question
        store.add_message(chat, "assistant", "A2 edited")

        def chat_now() -> list[tuple[str, str]]:
            return [(m.role, m.content) for m in store.messages(chat)]

        assert chat_now() == [
            ("user", "Q1"),
            ("assistant", "A1"),
            ("user", "Q2 edited"),
            ("assistant", "A2 edited"),
        ]
        shown = store.messages(chat)[2]
        assert (shown.variant, shown.variants) == (1, 2)
        assert store.variant_tails(question) == [
            [
                Kept(
                    "assistant",
                    "A2b",
                    "complete",
                    versions=(("A2", "stopped", None), ("A2b", "complete", None)),
                    shown=1,
                ),
                Kept("user", "Q3", "complete"),
            ],
            [],
        ]
        assert "A2b" not in store.export_markdown(chat)

        store.choose_variant(question, 0)  # the old branch comes back, the new one is kept
        assert chat_now() == [
            ("user", "Q1"),
            ("assistant", "A1"),
            ("user", "Q2"),
            ("assistant", "A2b"),
            ("user", "Q3"),
        ]
        assert store.variant_tails(question) == [
            [],
            [Kept("assistant", "A2 edited", "complete")],
        ]
        assert [m["content"] for m in store.export_json(chat)["conversation"]["messages"]] == [
            "Q1",
            "A1",
            "Q2",
            "A2b",
            "Q3",
        ]
        assert store.search("A2 edited") == []  # what is put aside is not the chat
        # The first question edited, with everything after it.
        assert store.new_question_variant(chat, 0, "Q1 again") == first
        assert chat_now() == [("user", "Q1 again")]
        with pytest.raises(StoreError):
            store.new_question_variant(chat, 1, "no question there")
    with ConversationStore(path) as store:  # reopened: all of it is still there
        store.choose_variant(first, 0)
        messages = store.messages(chat)
        assert [m.content for m in messages] == ["Q1", "A1", "Q2", "A2b", "Q3"]
        # Inside a branch put aside a question keeps only the version shown: Q2's own is
        # gone; an answer keeps its versions (A2's two, through both branches put aside).
        assert (messages[2].variant, messages[2].variants) == (0, 1)
        assert (messages[3].variant, messages[3].variants) == (1, 2)
        assert store.variant_texts(messages[3].id) == [("A2", "stopped"), ("A2b", "complete")]
        assert store.variant_tails(first) == [[], []]
