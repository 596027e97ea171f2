"""Each answer's figures in the store (schema 4): kept per version, read back by chat, gone
with their message, refused when they are not figures; and a schema-2 file opens and takes
them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.test_store_variants import old_file
from tkchat.store import AnswerFigures, ConversationStore, StoreError, StoreWriter
from tkchat.store.schema import SCHEMA_VERSION

FAST = AnswerFigures(tokens=52, tokens_per_s=128.5, ttft_s=0.21, ended="stop")
CUT = AnswerFigures(tokens=512, tokens_per_s=44.0, ttft_s=1.5, ended="length")
STOPPED = AnswerFigures(tokens=3, tokens_per_s=None, ttft_s=None, ended="stopped")


def a_chat(store: ConversationStore) -> tuple[int, int]:
    chat = store.create("C").id
    store.add_message(chat, "user", "Q?")
    return chat, store.add_message(chat, "assistant", "A.")


def test_figures_are_kept_for_each_version_of_an_answer() -> None:
    with ConversationStore(None) as store:
        chat, answer = a_chat(store)
        store.set_figures(answer, FAST)
        assert store.figures(chat) == {(answer, 0): FAST}
        assert store.new_variant(chat) == answer  # regenerate: version 1 streams
        store.update_message(answer, content="A, again.", status="stopped")
        store.set_figures(answer, STOPPED)
        assert store.figures(chat) == {(answer, 0): FAST, (answer, 1): STOPPED}
        store.choose_variant(answer, 0)  # showing another version keeps both
        store.set_figures(answer, CUT)  # (the version shown now: 0)
        assert store.figures(chat) == {(answer, 0): CUT, (answer, 1): STOPPED}
        other, second = a_chat(store)
        store.set_figures(second, FAST)
        assert store.figures(other) == {(second, 0): FAST}  # by chat


def test_figures_go_with_their_message_and_their_chat() -> None:
    with ConversationStore(None) as store:
        chat, answer = a_chat(store)
        store.set_figures(answer, FAST)
        store.delete(chat)
        store.purge_deleted(0)
        with pytest.raises(StoreError) as raised:
            store.set_figures(answer, FAST)
        assert raised.value.kind == "not_found"
        conn = store._connection()
        assert conn.execute("SELECT COUNT(*) FROM answer_figures").fetchone() == (0,)


@pytest.mark.parametrize(
    "figures",
    [
        AnswerFigures(-1, None, None, "stop"),
        AnswerFigures(True, None, None, "stop"),  # type: ignore[arg-type]
        AnswerFigures(3, float("nan"), None, "stop"),
        AnswerFigures(3, None, -0.5, "stop"),
        AnswerFigures(3, None, float("inf"), "stop"),
        AnswerFigures(3, None, None, "cancelled"),  # type: ignore[arg-type]
    ],
)
def test_what_is_not_a_figure_is_refused_before_the_file(figures: AnswerFigures) -> None:
    with ConversationStore(None) as store:
        _chat, answer = a_chat(store)
        with pytest.raises(StoreError) as raised:
            store.set_figures(answer, figures)
        assert raised.value.kind == "invalid"
    writer = StoreWriter(ConversationStore(None))
    try:
        with pytest.raises(ValueError):  # the writer refuses it on the caller's thread
            writer.save_figures(1, figures)
    finally:
        assert writer.close(timeout=10)  # (its thread left running would outlive the test)


def test_the_writer_saves_figures_after_the_answers_end(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with ConversationStore(path) as store:
        chat = store.create("C").id
        store.add_message(chat, "user", "Q?")
    writer = StoreWriter(path)
    ticket = writer.add_message(chat, "assistant", "", status="streaming")
    writer.append(ticket, "An answer.")
    writer.finish(ticket, "complete")
    writer.save_figures(ticket, FAST)  # a ticket: the message's id is not known yet
    assert writer.close(timeout=10)
    with ConversationStore(path) as store:
        answer = store.messages(chat)[-1]
        assert (answer.content, answer.status) == ("An answer.", "complete")
        assert store.figures(chat) == {(answer.id, 0): FAST}


def test_a_schema_2_file_opens_with_no_figures_and_takes_them(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    old_file(path, version=2)  # as tkchat wrote it before schema 3 (and 4)
    with ConversationStore(path) as store:
        assert [m.content for m in store.messages(1)] == ["Hi?", "Hello."]
        assert store.figures(1) == {}  # an older answer has none, and shows none
        answer = store.messages(1)[-1].id
        store.set_figures(answer, CUT)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    conn.close()
    with ConversationStore(path) as store:
        assert store.figures(1) == {(answer, 0): CUT}
