"""The database's tables and how an older file is brought up to date.

Schema (version 5)
------------------
``schema_version(version)``
    one row; :func:`migrate` brings older files up to :data:`SCHEMA_VERSION`.
``conversations(id, title, created_at, updated_at, system_prompt, settings, deleted_at)``
    ``settings`` is a JSON object (temperature, top_p, max_tokens, seed, ...); ``deleted_at``
    is set by a soft delete (undo: ``ConversationStore.restore``); times are Unix seconds.
``messages(id, conversation_id, position, role, content, status, created_at, variant)``
    ``position`` counts from 0 within a conversation; ``status`` is one of
    :data:`~tkchat.store.records.STATUSES`. ``content`` and ``status`` are those of the
    version shown (``variant``, from 0), which is what the conversation continues from and
    what export writes. (Version 2 added ``variant``.)
``message_variants(message_id, slot, content, status, tail)``
    the other versions of a regenerated answer or an edited question, by slot. The row whose
    slot is the message's ``variant`` may be stale: the ``messages`` row is the truth for the
    version shown, and it is copied here when another version is chosen. ``tail``, for a
    question's version: the messages that followed it in its branch, a JSON list of
    ``{"role", "content", "status"}`` (the version shown of each), with an answer's
    ``"figures"`` and, for an answer regenerated, ``"versions"`` (each one's content, status
    and figures) and ``"shown"`` (a question's own versions inside a branch put aside are not
    kept; a branch written before either key reads without it); NULL for an answer's. (Added
    in version 2.)
``message_parts(message_id, text)``
    the text of an answer still streaming, one row per flush, in ``rowid`` order; moved into
    the message's ``content`` (and deleted) when the answer ends or the message is otherwise
    written: see :mod:`tkchat.store.messages`. (Added in version 3: before it, every flush
    rewrote the whole answer.)
``answer_figures(message_id, slot, tokens, tokens_per_s, ttft_s, ended, model, system_prompt)``
    each answer version's figures, as LM Studio shows them under an answer: tokens, tokens/s,
    seconds to the first token, and how it ended (``stop``, ``length``, ``stopped``,
    ``error``); and what it was made with: the model's name and the system prompt it was asked
    with (NULL where not known); see :mod:`tkchat.store.figures`. (Added in version 4;
    ``model`` and ``system_prompt`` in version 5.)
``messages_fts``
    an optional full-text index over ``messages.content``. It is derived data, so it is not
    part of any migration: :mod:`tkchat.store.search_index` creates, repairs or drops it on
    every open, depending on what the SQLite at hand can do.

:func:`migrate` runs once per connection, on the thread that opens the store (the window's
start-up thread, or the writer thread for its own connection).
"""

from __future__ import annotations

import sqlite3

from tkchat.store.errors import StoreError, rollback

SCHEMA_VERSION = 5

_SCHEMA_1 = (
    """CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        system_prompt TEXT NOT NULL DEFAULT '',
        settings TEXT NOT NULL DEFAULT '{}',
        deleted_at REAL
    )""",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        content TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('complete', 'streaming', 'interrupted', 'stopped', 'error')),
        created_at REAL NOT NULL,
        UNIQUE (conversation_id, position)
    )""",
    "CREATE INDEX conversations_by_recency ON conversations (updated_at DESC, id DESC)",
    # mark_interrupted runs at every start-up: find the few streaming rows without a scan.
    "CREATE INDEX messages_by_status ON messages (status)",
)

# version -> the statements that bring version-1 up to it. Add a new entry (never edit an old
# one) when the schema changes; migrate() runs them in order, inside one transaction.
# Version 2: regenerate keeps every answer ("◀ 2/3 ▶"), an edited question keeps its old branch.
# An old file's messages get variant 0 and no other versions, so it reads exactly as before.
_SCHEMA_2 = (
    "ALTER TABLE messages ADD COLUMN variant INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE message_variants (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        slot INTEGER NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('complete', 'streaming', 'interrupted', 'stopped', 'error')),
        tail TEXT,
        PRIMARY KEY (message_id, slot)
    )""",
)

# Version 3: a streaming answer is saved as appended parts (linear bytes written, see
# tkchat/store/messages.py). No index on message_id: the table holds only the parts of answers
# still streaming (a handful of rows per flush), so a scan costs nothing.
_SCHEMA_3 = (
    """CREATE TABLE message_parts (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        text TEXT NOT NULL
    )""",
)

# Version 4: each answer's figures (tokens, tokens/s, time to the first token, how it ended),
# by message and version. An older file's answers have none, and show none.
_SCHEMA_4 = (
    """CREATE TABLE answer_figures (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        slot INTEGER NOT NULL,
        tokens INTEGER NOT NULL CHECK (tokens >= 0),
        tokens_per_s REAL CHECK (tokens_per_s >= 0),
        ttft_s REAL CHECK (ttft_s >= 0),
        ended TEXT NOT NULL CHECK (ended IN ('stop', 'length', 'stopped', 'error')),
        PRIMARY KEY (message_id, slot)
    )""",
)

# Version 5: what each answer was made with, kept with its figures (an export writes them: the
# chat's system prompt and model may have changed since). An older file's answers have NULL
# there: not known, and said nowhere.
_SCHEMA_5 = (
    "ALTER TABLE answer_figures ADD COLUMN model TEXT",
    "ALTER TABLE answer_figures ADD COLUMN system_prompt TEXT",
)

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: _SCHEMA_1,
    2: _SCHEMA_2,
    3: _SCHEMA_3,
    4: _SCHEMA_4,
    5: _SCHEMA_5,
}


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to :data:`SCHEMA_VERSION` in one transaction; return the version
    found. Also a write probe: it always rewrites the version row, so a locked database, a
    read-only file or a full disk shows up here, at start-up, not at the first message.
    Raises ``StoreError(kind="newer")`` for a file written by a newer tkchat (left untouched).
    Runs on the caller's thread."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"The conversation history was written by a newer tkchat (schema {found}, "
                f"this one knows {SCHEMA_VERSION}).",
                kind="newer",
                detail=f"schema version {found}",
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version]:
                conn.execute(statement)
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        else:
            conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    return found


__all__ = ["SCHEMA_VERSION", "migrate"]
