"""Versions of a regenerated answer and branches of an edited question: the statements.

:class:`~tkchat.store.db.ConversationStore` owns the transactions and the public methods
(their docstrings say what each does for a caller); the statements are here, as functions of
the connection it holds, so the store's module stays about conversations and messages. How
the versions are kept is in :mod:`tkchat.store.schema` (``message_variants``).

A message that may still be streaming is collapsed first (:func:`~tkchat.store.parts.
collapse`): the version put aside must hold all of its text. Every function runs inside the
caller's transaction, on the caller's thread.
"""

from __future__ import annotations

import json
import sqlite3

from tkchat.store.errors import StoreError
from tkchat.store.parts import collapse, read_messages
from tkchat.store.records import ROLES, STATUSES, Role, Status, StoredMessage


def not_found(conversation_id: int) -> StoreError:
    return StoreError(f"There is no conversation {conversation_id}.", kind="not_found")


def touch(conn: sqlite3.Connection, conversation_id: int, now: float) -> None:
    """The conversation was written to now (it moves to the top of the list)."""
    cursor = conn.execute(
        "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
    )
    if cursor.rowcount == 0:
        raise not_found(conversation_id)


def new_variant(conn: sqlite3.Connection, conversation_id: int, now: float) -> int:
    """See ``ConversationStore.new_variant``."""
    touch(conn, conversation_id, now)
    last = _last_message(conn, conversation_id)
    if last is None or last.role != "assistant":
        raise StoreError("There is no answer to regenerate.", kind="not_found")
    keep_shown(conn, last)
    conn.execute(
        "UPDATE messages SET content = '', status = 'streaming', variant = ? WHERE id = ?",
        (last.variants, last.id),
    )
    return last.id


def kept_versions(conn: sqlite3.Connection, message_id: int) -> dict[int, tuple[str, Status]]:
    """slot -> (content, status) of the versions put aside (the one shown may be stale)."""
    rows = conn.execute(
        "SELECT slot, content, status FROM message_variants WHERE message_id = ?", (message_id,)
    ).fetchall()
    return {slot: (text, status) for slot, text, status in rows}


def kept_tails(conn: sqlite3.Connection, message_id: int) -> dict[int, str | None]:
    """slot -> the branch JSON kept with each version (see :func:`cut_tail`)."""
    rows = conn.execute(
        "SELECT slot, tail FROM message_variants WHERE message_id = ?", (message_id,)
    ).fetchall()
    return dict(rows)


def new_question_variant(
    conn: sqlite3.Connection, conversation_id: int, position: int, content: str, now: float
) -> int:
    """See ``ConversationStore.new_question_variant``."""
    touch(conn, conversation_id, now)
    found = read_messages(
        conn, "WHERE conversation_id = ? AND position = ?", (conversation_id, position)
    )
    if not found or found[0].role != "user":
        raise StoreError(f"There is no question at {position}.", kind="not_found")
    question = found[0]
    keep_shown(conn, question, cut_tail(conn, question))
    conn.execute(
        "UPDATE messages SET content = ?, status = 'complete', variant = ? WHERE id = ?",
        (content, question.variants, question.id),
    )
    return question.id


def choose_variant(conn: sqlite3.Connection, message_id: int, slot: int, now: float) -> None:
    """See ``ConversationStore.choose_variant``."""
    collapse(conn, [message_id])
    found = read_messages(conn, "WHERE id = ?", (message_id,))
    if not found:
        raise StoreError(f"There is no message {message_id}.", kind="not_found")
    current = found[0]
    if not 0 <= slot < current.variants:
        raise StoreError(f"Message {message_id} has no version {slot}.", kind="invalid")
    if slot == current.variant:
        return
    question = current.role == "user"
    keep_shown(conn, current, cut_tail(conn, current) if question else None)
    chosen = conn.execute(
        "SELECT content, status, tail FROM message_variants WHERE message_id = ? AND slot = ?",
        (message_id, slot),
    ).fetchone()
    content, status, tail = chosen if chosen is not None else ("", "complete", None)
    conn.execute(
        "UPDATE messages SET content = ?, status = ?, variant = ? WHERE id = ?",
        (content, status, slot, message_id),
    )
    for offset, (role, text, state) in enumerate(tail_from_json(tail), start=1):
        conn.execute(
            "INSERT INTO messages (conversation_id, position, role, content, status, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (current.conversation_id, current.position + offset, role, text, state, now),
        )
    touch(conn, current.conversation_id, now)


def keep_shown(conn: sqlite3.Connection, message: StoredMessage, tail: str | None = None) -> None:
    """Put the version shown aside, in its slot (with its branch, for a question)."""
    conn.execute(
        "INSERT OR REPLACE INTO message_variants (message_id, slot, content, status, tail) "
        "VALUES (?, ?, ?, ?, ?)",
        (message.id, message.variant, message.content, message.status, tail),
    )


def cut_tail(conn: sqlite3.Connection, question: StoredMessage) -> str:
    """Delete the messages after ``question`` and return them as a branch's JSON (their
    own other versions go with them: a branch keeps the version each one showed)."""
    where = "WHERE conversation_id = ? AND position > ?"
    args = (question.conversation_id, question.position)
    rows = read_messages(conn, where + " ORDER BY position", args)
    conn.execute(f"DELETE FROM messages {where}", args)
    tail = [{"role": m.role, "content": m.content, "status": m.status} for m in rows]
    return json.dumps(tail, ensure_ascii=False)


def tail_from_json(tail: str | None) -> list[tuple[Role, str, Status]]:
    """A branch put aside (see :func:`cut_tail`); one that does not read as such (edited by
    hand) is an error, not a guess."""
    if tail is None:
        return []
    try:
        items = json.loads(tail)
        branch = [(item["role"], item["content"], item["status"]) for item in items]
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError("A kept branch of this chat is damaged.", kind="invalid") from exc
    for role, content, status in branch:
        if role not in ROLES or status not in STATUSES or not isinstance(content, str):
            raise StoreError("A kept branch of this chat is damaged.", kind="invalid")
    return branch


def _last_message(conn: sqlite3.Connection, conversation_id: int) -> StoredMessage | None:
    found = read_messages(
        conn, "WHERE conversation_id = ? ORDER BY position DESC LIMIT 1", (conversation_id,)
    )
    if found:
        collapse(conn, [found[0].id])  # (read_messages gave its whole text already)
    return found[0] if found else None


__all__ = [
    "choose_variant",
    "cut_tail",
    "keep_shown",
    "kept_tails",
    "kept_versions",
    "new_question_variant",
    "new_variant",
    "not_found",
    "tail_from_json",
    "touch",
]
