"""A conversation's messages: how they are read, added and edited, and an answer saved while it
streams as appended parts, so the bytes written grow linearly with the answer.

:class:`MessagesStore` is the messages' part of :class:`~tkchat.store.db.ConversationStore`
(mixed into it, which gives the transactions and the clock); the functions below are its
statements, as functions of the connection a transaction holds.

Appended parts
--------------

``UPDATE messages SET content = content || ?`` looks like an append, but SQLite rewrites the
whole row (and its overflow pages) to do it: every flush of a growing answer wrote the answer
again, so saving was quadratic. A 1,000,000-character answer wrote 410 MB for a 2.3 MB
database, and on a small disk the write-ahead log filled it mid-answer.

So while an answer streams, each flush inserts one row in ``message_parts`` holding only the
new text; the message's own ``content`` does not change. Any other write that touches the
message (its end, an edit, choosing a version, marking it interrupted) first *collapses* it:
``content`` becomes content + parts, in order, the parts are deleted, and the full-text index
sees the whole answer once (its triggers skip streaming rows). Parts exist only for messages
whose status is ``streaming``; readers add them to what they return (:func:`with_parts`), so
no caller ever sees the difference.

Everything here runs on the caller's thread, inside a transaction the store holds
(``ConversationStore``'s ``_writing``/``_reading``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from tkchat.store.errors import StoreError, not_found
from tkchat.store.records import (
    ROLES,
    STATUSES,
    Role,
    Status,
    StoredMessage,
    check_choice,
    text_value,
)

# How a message is read everywhere: its columns, then the version shown and how many versions
# there are (the highest slot kept, or the one shown, whichever is higher, plus one).
MESSAGE_COLUMNS = (
    "id, conversation_id, position, role, content, status, created_at, variant, "
    "MAX(variant, COALESCE((SELECT MAX(slot) FROM message_variants v "
    "WHERE v.message_id = messages.id), 0)) + 1"
)
_CONTENT, _STATUS = 4, 5  # where content and status are in such a row
_BATCH = 500  # ids per "IN (...)": far below SQLite's limit on bound parameters


def touch(conn: sqlite3.Connection, conversation_id: int, now: float) -> None:
    """The conversation was written to now (it moves to the top of the list)."""
    cursor = conn.execute(
        "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
    )
    if cursor.rowcount == 0:
        raise not_found(conversation_id)


def append_parts(conn: sqlite3.Connection, parts: Mapping[int, str]) -> None:
    """Add one part per message. A message that is gone (deleted while its answer streamed)
    or no longer streaming (ended) gets nothing: its text is final."""
    conn.executemany(
        "INSERT INTO message_parts (message_id, text) SELECT ?, ? WHERE EXISTS "
        "(SELECT 1 FROM messages WHERE id = ? AND status = 'streaming')",
        [(message_id, text, message_id) for message_id, text in parts.items() if text],
    )


def pending_text(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, str]:
    """message id -> the text of its parts, in the order they were written."""
    found: dict[int, list[str]] = {}
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        rows = conn.execute(
            "SELECT message_id, text FROM message_parts WHERE message_id IN "
            f"({', '.join('?' * len(batch))}) ORDER BY rowid",
            batch,
        )
        for message_id, text in rows:
            found.setdefault(message_id, []).append(text)
    return {message_id: "".join(texts) for message_id, texts in found.items()}


def with_parts(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Message rows (as ``_MESSAGE_COLUMNS`` reads them) with each streaming message's parts
    added to its content: what the message holds so far."""
    streaming = [row[0] for row in rows if row[_STATUS] == "streaming"]
    if not streaming:
        return list(rows)
    more = pending_text(conn, streaming)
    return [
        (*row[:_CONTENT], row[_CONTENT] + more[row[0]], *row[_CONTENT + 1 :])
        if row[0] in more
        else row
        for row in rows
    ]


def read_messages(conn: sqlite3.Connection, where: str, args: Sequence[Any]) -> list[StoredMessage]:
    """The messages ``SELECT ... FROM messages <where>`` finds, each with its parts."""
    rows = conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages {where}", args).fetchall()
    return [StoredMessage(*row) for row in with_parts(conn, rows)]


def drop_parts(conn: sqlite3.Connection, message_id: int) -> None:
    """Forget a message's parts: its content is being replaced as a whole."""
    conn.execute("DELETE FROM message_parts WHERE message_id = ?", (message_id,))


def collapse(conn: sqlite3.Connection, ids: Iterable[int]) -> None:
    """Move the parts of these messages into their content (one UPDATE each) and delete them.
    Call it before any other write to a message that may be streaming. The parts go first,
    so the content takes the pages they leave: the file does not grow by the answer twice
    (on a small disk, that is what let an answer's end fit)."""
    for message_id, text in pending_text(conn, ids).items():
        drop_parts(conn, message_id)
        conn.execute("UPDATE messages SET content = content || ? WHERE id = ?", (text, message_id))


def streaming_ids(conn: sqlite3.Connection) -> list[int]:
    """Every message still marked streaming (an answer now, or one a killed writer left)."""
    return [row[0] for row in conn.execute("SELECT id FROM messages WHERE status = 'streaming'")]


class MessagesStore:
    """The messages' part of the conversation store (mixed into
    :class:`~tkchat.store.db.ConversationStore`, which gives the transactions and the clock).
    Each method runs on its caller's thread, one short transaction, under the store's lock."""

    def _reading(self, doing: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # ConversationStore's

    def _writing(self, doing: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # ConversationStore's

    def _clock(self) -> float:
        raise NotImplementedError  # ConversationStore's (a seam the tests replace)

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages in order (empty for an unknown id); an answer still
        streaming holds the text saved so far."""
        with self._reading("read the messages") as conn:
            return read_messages(
                conn, "WHERE conversation_id = ? ORDER BY position", (conversation_id,)
            )

    def messages_page(self, conversation_id: int, after: int, limit: int) -> list[StoredMessage]:
        """At most ``limit`` of the conversation's messages after position ``after`` (-1:
        from the first), in order: a long chat read a page at a time, so no one read holds
        the thread for the whole chat."""
        with self._reading("read the messages") as conn:
            return read_messages(
                conn,
                "WHERE conversation_id = ? AND position > ? ORDER BY position LIMIT ?",
                (conversation_id, after, limit),
            )

    def message(self, message_id: int) -> StoredMessage:
        """One message; ``StoreError(kind="not_found")`` if unknown."""
        with self._reading("read a message") as conn:
            found = read_messages(conn, "WHERE id = ?", (message_id,))
        if not found:
            raise StoreError(f"There is no message {message_id}.", kind="not_found")
        return found[0]

    def add_message(
        self, conversation_id: int, role: Role, content: str, status: Status = "complete"
    ) -> int:
        """Append a message at the end of the conversation; return its id. It is committed
        before this returns (a sent question is durable before generation starts)."""
        check_choice(role, ROLES, "role")
        check_choice(status, STATUSES, "status")
        text = text_value(content, "message")
        now = self._clock()
        with self._writing("save the message") as conn:
            touch(conn, conversation_id, now)
            # Inside BEGIN IMMEDIATE: no other connection can take the same position.
            (position,) = conn.execute(
                "SELECT COALESCE(MAX(position), -1) + 1 FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            cursor = conn.execute(
                "INSERT INTO messages (conversation_id, position, role, content, status, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, position, role, text, status, now),
            )
            return cast(int, cursor.lastrowid)

    def update_message(
        self,
        message_id: int,
        *,
        content: str | None = None,
        status: Status | None = None,
        more: str = "",
    ) -> None:
        """Replace a message's content and/or status (edit a past message; end an answer),
        in one transaction. ``content=None`` keeps what was saved, with ``more`` added (the
        last text of an answer, so its text and its end are one commit: a kill between two
        commits left a whole answer marked interrupted). A streaming message's parts are
        collapsed into it (see the module's docstring)."""
        if status is not None:
            check_choice(status, STATUSES, "status")
        if content is not None:
            text_value(content, "message")
        with self._writing("update the message") as conn:
            row = conn.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"There is no message {message_id}.", kind="not_found")
            if content is None:
                append_parts(conn, {message_id: text_value(more, "answer")})
                collapse(conn, [message_id])
            else:
                drop_parts(conn, message_id)
            conn.execute(
                "UPDATE messages SET content = COALESCE(?, content), "
                "status = COALESCE(?, status) WHERE id = ?",
                (content, status, message_id),
            )
            touch(conn, row[0], self._clock())

    def append_text(self, parts: Mapping[int, str]) -> None:
        """Append text to several streaming messages in ONE transaction (the writer's batched
        flush): one new part each, so a flush writes only its own text. Ids of messages that
        are gone or no longer streaming are skipped (an edit may have removed the answer
        while it streamed). The conversation's ``updated_at`` moves when the answer ends."""
        if parts:
            texts = {message_id: text_value(text, "answer") for message_id, text in parts.items()}
            with self._writing("save the answer") as conn:
                append_parts(conn, texts)

    others_open = False  # ConversationStore's: another tkchat process has the history open

    def mark_interrupted(self) -> int:
        """At start-up: every message still ``streaming`` (its writer was killed) becomes
        ``interrupted``, its saved parts collapsed into it; return how many. Call it once,
        before any answer starts. Nothing is marked while another tkchat process has the
        history open (:class:`~tkchat.store.opening.LiveLock`): its live answer is
        ``streaming`` too."""
        if self.others_open:
            return 0
        with self._writing("mark interrupted answers") as conn:
            ids = streaming_ids(conn)
            collapse(conn, ids)
            cursor = conn.execute(
                "UPDATE messages SET status = 'interrupted' WHERE status = 'streaming'"
            )
            return cursor.rowcount


__all__ = [
    "MESSAGE_COLUMNS",
    "MessagesStore",
    "append_parts",
    "collapse",
    "drop_parts",
    "pending_text",
    "read_messages",
    "streaming_ids",
    "touch",
    "with_parts",
]
