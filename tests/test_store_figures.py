"""Each answer's figures in the store (schema 4): kept per version, read back by chat, gone
with their message, refused when they are not figures; and a schema-2 file opens and takes
them. What each answer was made with (schema 5: its model and system prompt): a schema-4 file
opens and takes them, an export writes them (Markdown and JSON) and an import reads them back,
and a branch put aside keeps its answers' figures."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.test_store_variants import old_file
from tkchat.store import AnswerFigures, ConversationStore, Kept, StoreError, StoreWriter
from tkchat.store.schema import SCHEMA_VERSION
from tkchat.store.variants import tail_from_json

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


# -- what each answer was made with (schema 5): kept, exported, imported, kept in a branch -------

MADE = AnswerFigures(42, 18.25, 0.31, "stop", model="smollm2-135m", system_prompt="Be brief.")
LATER = AnswerFigures(7, None, 0.5, "length", model="other-1b", system_prompt="Answer in French.")


def test_a_schema_4_file_keeps_its_figures_and_takes_a_model_and_prompt(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    old_file(path, version=4)  # as tkchat wrote it before answers kept what made them
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO answer_figures (message_id, slot, tokens, tokens_per_s, ttft_s, ended) "
        "VALUES (2, 0, 52, 128.5, 0.21, 'stop')"
    )
    conn.commit()
    conn.close()
    with ConversationStore(path) as store:
        assert store.figures(1) == {(2, 0): FAST}  # model and prompt: not known, None
        assert "tokens" in store.export_markdown(1) and "smollm2" not in store.export_markdown(1)
        exported = store.export_json(1)["conversation"]["messages"][1]
        assert "model" not in exported and "system_prompt" not in exported
        store.set_figures(2, MADE)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    conn.close()
    with ConversationStore(path) as store:
        assert store.figures(1) == {(2, 0): MADE}


def made_chat(store: ConversationStore) -> int:
    """Two answers made with different system prompts (the chat's changed between them)
    and models, and a third saved before tkchat kept figures."""
    chat = store.create("Made with", system_prompt="Be brief.").id
    store.add_message(chat, "user", "Q1?")
    store.set_figures(store.add_message(chat, "assistant", "A1."), MADE)
    store.set_system_prompt(chat, "Answer in French.")
    store.add_message(chat, "user", "Q2?")
    store.set_figures(store.add_message(chat, "assistant", "A2.", "stopped"), LATER)
    store.add_message(chat, "user", "Q3?")
    store.add_message(chat, "assistant", "A3.")
    return chat


def test_export_writes_what_each_answer_was_made_with(tmp_path: Path) -> None:
    with ConversationStore(None) as store:
        chat = made_chat(store)
        markdown = store.export_markdown(chat)
        messages = store.export_json(chat)["conversation"]["messages"]
    assert "## System prompt\n\nAnswer in French.\n" in markdown  # the chat's, now
    assert (
        "A1.\n\n*smollm2-135m · 42 tokens · 18.2 tokens/s · first token 0.31 s*\n\n"
        "*System prompt for this answer:*\n\n> Be brief.\n\n## User"
    ) in markdown
    assert (
        "A2.\n\n*[stopped]*\n\n*other-1b · 7 tokens · first token 0.50 s · "
        "cut at the length limit*\n\n## User"
    ) in markdown  # its prompt is the chat's: no note
    assert markdown.endswith("A3.\n") and markdown.count("System prompt for this answer") == 1
    assert messages[1]["model"] == "smollm2-135m"
    assert messages[1]["figures"] == {
        "tokens": 42,
        "tokens_per_s": 18.25,
        "ttft_s": 0.31,
        "ended": "stop",
    }
    assert messages[1]["system_prompt"] == "Be brief."
    assert messages[3]["model"] == "other-1b" and "system_prompt" not in messages[3]
    assert not {"model", "figures", "system_prompt"} & (messages[0].keys() | messages[5].keys())


def test_an_export_round_trips_what_each_answer_was_made_with(tmp_path: Path) -> None:
    with ConversationStore(None) as store:
        chat = made_chat(store)
        exported = store.export_json(chat)
        markdown = store.export_markdown(chat)
    with ConversationStore(tmp_path / "other.sqlite3") as other:
        imported = other.import_json(json.dumps(exported).encode("utf-8")).id
        answers = [m.id for m in other.messages(imported) if m.role == "assistant"]
        assert other.figures(imported) == {(answers[0], 0): MADE, (answers[1], 0): LATER}
        again = other.export_json(imported)["conversation"]["messages"]
        assert again == exported["conversation"]["messages"]
        assert other.export_markdown(imported) == markdown
        # A file from before (no model, figures or prompt per answer) imports as before.
        for message in exported["conversation"]["messages"]:
            for key in ("model", "figures", "system_prompt"):
                message.pop(key, None)
        assert other.figures(other.import_json(exported).id) == {}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"figures": "fast"}, "conversation.messages[1].figures must be an object, not str"),
        ({"figures": {"ended": "stop"}}, "figures.tokens must be a whole number ≥ 0, not None"),
        ({"figures": {"tokens": -1, "ended": "stop"}}, "figures.tokens must be a whole number"),
        (
            {"figures": {"tokens": 1, "tokens_per_s": "fast", "ended": "stop"}},
            "figures.tokens_per_s must be a number ≥ 0, not 'fast'",
        ),
        ({"figures": {"tokens": 1, "ended": "done"}}, "figures.ended must be one of stop, "),
        ({"figures": {"tokens": 1, "ended": "stop"}, "model": 3}, "[1].model must be str"),
        (
            {"figures": {"tokens": 1, "ended": "stop"}, "system_prompt": ["x"]},
            "[1].system_prompt must be str, not list",
        ),
    ],
)
def test_an_answers_bad_figures_are_refused_in_one_sentence(
    change: dict[str, object], said: str
) -> None:
    data = {
        "format": "tkchat-conversation",
        "version": 1,
        "conversation": {
            "messages": [
                {"role": "user", "content": "Q?"},
                {"role": "assistant", "content": "A.", **change},
            ]
        },
    }
    with ConversationStore(None) as store:
        with pytest.raises(StoreError) as raised:
            store.import_json(data)
        assert raised.value.kind == "invalid" and said in str(raised.value)
        assert store.list_conversations() == []  # refused whole


def test_a_branch_put_aside_keeps_its_answers_figures(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with ConversationStore(path) as store:
        chat = store.create("Branches").id
        first = store.add_message(chat, "user", "Q1?")
        store.set_figures(store.add_message(chat, "assistant", "A1."), MADE)
        store.add_message(chat, "user", "Q2?")
        store.set_figures(store.add_message(chat, "assistant", "A2."), LATER)
        assert store.new_question_variant(chat, 0, "Q1, again?") == first
        store.set_figures(store.add_message(chat, "assistant", "Again."), FAST)
        assert store.variant_tails(first)[0] == [
            Kept("assistant", "A1.", "complete", MADE),
            Kept("user", "Q2?", "complete"),
            Kept("assistant", "A2.", "complete", LATER),
        ]
        store.choose_variant(first, 0)  # ◀: the old branch, its figures under its answers
    with ConversationStore(path) as store:  # (and after a restart)
        answers = [m.id for m in store.messages(chat) if m.role == "assistant"]
        assert store.figures(chat) == {(answers[0], 0): MADE, (answers[1], 0): LATER}
        store.choose_variant(first, 1)  # ▶: the new one's back too
        (again,) = [m.id for m in store.messages(chat) if m.role == "assistant"]
        assert store.figures(chat) == {(again, 0): FAST}


def test_a_branch_put_aside_keeps_a_regenerated_answers_versions(tmp_path: Path) -> None:
    """An answer regenerated (2 versions, the first one shown) in a branch put aside comes
    back with both versions, each with its own figures, and the one it showed."""
    path = tmp_path / "history.sqlite3"
    with ConversationStore(path) as store:
        chat = store.create("Versions in a branch").id
        first = store.add_message(chat, "user", "Q?")
        answer = store.add_message(chat, "assistant", "One.")
        store.set_figures(answer, FAST)
        assert store.new_variant(chat) == answer
        store.update_message(answer, content="Two.", status="stopped")
        store.set_figures(answer, STOPPED)
        store.choose_variant(answer, 0)  # the first one shown when the branch is put aside
        store.new_question_variant(chat, 0, "Q, again?")
        store.add_message(chat, "assistant", "Again.")
        assert store.variant_tails(first)[0] == [
            Kept(
                "assistant",
                "One.",
                "complete",
                FAST,
                (("One.", "complete", FAST), ("Two.", "stopped", STOPPED)),
                0,
            )
        ]
        store.choose_variant(first, 0)  # ◀ on the question
    with ConversationStore(path) as store:  # (after a restart)
        back = store.messages(chat)[-1]
        assert (back.content, back.variant, back.variants) == ("One.", 0, 2)
        assert store.variant_texts(back.id) == [("One.", "complete"), ("Two.", "stopped")]
        assert store.figures(chat) == {(back.id, 0): FAST, (back.id, 1): STOPPED}
        store.choose_variant(back.id, 1)  # ▶ on the answer brought back
        assert (store.messages(chat)[-1].content, store.message(back.id).status) == (
            "Two.",
            "stopped",
        )
        store.choose_variant(first, 1)  # and the branch goes aside again, both versions kept
        store.choose_variant(first, 0)
        again = store.messages(chat)[-1]
        assert (again.content, again.variant, again.variants) == ("Two.", 1, 2)
        assert store.figures(chat) == {(again.id, 0): FAST, (again.id, 1): STOPPED}


def test_a_branch_kept_before_schema_5_reads_without_figures() -> None:
    old = '[{"role": "assistant", "content": "A.", "status": "complete"}]'
    assert tail_from_json(old) == [Kept("assistant", "A.", "complete")]
    for damaged in (
        '[{"role": "assistant", "content": "A.", "status": "complete", "figures": 3}]',
        '[{"role": "assistant", "content": "A.", "status": "complete", "shown": 1,'
        ' "versions": [{"content": "A.", "status": "complete"}]}]',
        '[{"role": "assistant", "content": "A.", "status": "complete",'
        ' "versions": [{"content": 5, "status": "complete"}]}]',
    ):
        with pytest.raises(StoreError) as raised:
            tail_from_json(damaged)
        assert str(raised.value) == "A kept branch of this chat is damaged."
