"""A streaming answer, saved as appended parts: bytes written grow linearly with the answer.

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

Everything here runs inside a transaction the caller holds (``ConversationStore``'s
``_writing``/``_reading``), on the caller's thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tkchat.store.records import StoredMessage

# How a message is read everywhere: its columns, then the version shown and how many versions
# there are (the highest slot kept, or the one shown, whichever is higher, plus one).
MESSAGE_COLUMNS = (
    "id, conversation_id, position, role, content, status, created_at, variant, "
    "MAX(variant, COALESCE((SELECT MAX(slot) FROM message_variants v "
    "WHERE v.message_id = messages.id), 0)) + 1"
)
_CONTENT, _STATUS = 4, 5  # where content and status are in such a row
_BATCH = 500  # ids per "IN (...)": far below SQLite's limit on bound parameters


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


__all__ = [
    "MESSAGE_COLUMNS",
    "append_parts",
    "collapse",
    "drop_parts",
    "pending_text",
    "read_messages",
    "streaming_ids",
    "with_parts",
]
