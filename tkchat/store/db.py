"""Conversations in SQLite: the store, its schema, export/import, and a failure-proof opener.

Threads
-------
Every :class:`ConversationStore` method runs on the thread that calls it and holds that thread
for one short transaction. A store may be shared between threads: each method takes the
store's lock, and the connection is opened with ``check_same_thread=False`` (the in-memory
fallback, which has no file another connection could open, is shared by the window and the
:class:`~tkchat.store.writer.StoreWriter` this way). In the app, the Tk main thread reads
(list, messages, search) and makes rare small edits (create, rename, delete); everything that
happens while an answer streams goes through the ``StoreWriter``'s own thread and connection.

Schema (version 1)
------------------
``schema_version(version)``
    one row; :func:`migrate` brings older files up to :data:`SCHEMA_VERSION`.
``conversations(id, title, created_at, updated_at, system_prompt, settings, deleted_at)``
    ``settings`` is a JSON object (temperature, top_p, max_tokens, seed, ...); ``deleted_at``
    is set by a soft delete (undo: :meth:`ConversationStore.restore`); times are Unix seconds.
``messages(id, conversation_id, position, role, content, status, created_at)``
    ``position`` counts from 0 within a conversation; ``status`` is one of :data:`STATUSES`.
``messages_fts``
    an optional FTS5 trigram index over ``messages.content``, kept up to date by triggers.
    It is derived data: when this SQLite has no FTS5 the triggers are dropped (search falls
    back to a scan) and the index is rebuilt the next time FTS5 is available.

Failures
--------
Every failure surfaces as :class:`StoreError`, whose ``kind`` names it (``full``, ``locked``,
``unwritable``, ``damaged``, ``newer``, ``invalid``, ``not_found``, ``closed``, ``other``) and
whose text is a sentence for the window. A failed write is rolled back whole, so what was
stored before it is intact. :func:`open_store` never raises: see its docstring.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast, get_args

from tkchat.generate.backend import (
    MAX_TOKENS_RANGE,
    SEED_MAX,
    TEMPERATURE_RANGE,
    TOP_P_RANGE,
    Message,
    Sampling,
)
from tkchat.store.paths import database_path

Role = Literal["system", "user", "assistant"]
Status = Literal["complete", "streaming", "interrupted", "stopped", "error"]
ROLES: tuple[str, ...] = get_args(Role)
STATUSES: tuple[str, ...] = get_args(Status)

SCHEMA_VERSION = 1
EXPORT_FORMAT = "tkchat-conversation"
EXPORT_VERSION = 1
DEFAULT_TITLE = "New chat"
BUSY_TIMEOUT_S = 2.0  # how long a write waits for another connection's lock before failing
_TITLE_MAX = 200
_SNIPPET_CONTEXT = 40  # characters shown on each side of a search hit


class StoreError(Exception):
    """A storage failure the user should read. ``kind`` names it for code, ``str(exc)`` is
    one sentence for people, ``detail`` is the underlying error text (may be empty)."""

    def __init__(self, message: str, *, kind: str = "other", detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation's header (its messages come from :meth:`ConversationStore.messages`).
    ``settings`` is a fresh dict on every read: changing it does not change the store."""

    id: int
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    settings: dict[str, Any] = field(default_factory=dict, hash=False)
    deleted_at: float | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    conversation_id: int
    position: int
    role: Role
    content: str
    status: Status
    created_at: float

    def as_message(self) -> Message:
        """The backend's view of this message (for building a ``GenerationRequest``)."""
        return Message(self.role, self.content)


# --- settings <-> Sampling ---------------------------------------------------------------

_SAMPLING_KEYS = tuple(f.name for f in fields(Sampling))


def settings_from_sampling(sampling: Sampling) -> dict[str, Any]:
    """A conversation's ``settings`` dict for these sampling values (pure; any thread)."""
    return {name: getattr(sampling, name) for name in _SAMPLING_KEYS}


def sampling_from_settings(settings: Mapping[str, Any]) -> Sampling:
    """The :class:`Sampling` a conversation asks for: known keys of the right type override
    the defaults, anything else is ignored (a hand-edited or imported file must not crash
    generation). Pure; any thread."""
    defaults = Sampling()
    chosen: dict[str, Any] = {}
    for name in _SAMPLING_KEYS:
        value, default = settings.get(name), getattr(defaults, name)
        if name == "seed" and (value is None or _is_int(value) and 0 <= value <= SEED_MAX):
            chosen[name] = value
        elif isinstance(default, float) and _is_number(value) and _in_range(name, value):
            chosen[name] = float(value)  # type: ignore[arg-type]
        elif _is_int(default) and _is_int(value) and _in_range(name, value):
            chosen[name] = value
    return Sampling(**chosen)


_RANGES = {
    "temperature": TEMPERATURE_RANGE,
    "top_p": TOP_P_RANGE,
    "max_tokens": (0, MAX_TOKENS_RANGE[1]),
}  # 0: no limit, as the backends read it


def _in_range(name: str, value: Any) -> bool:
    """Within what the settings dialog offers (a hand-edited file may say anything)."""
    low, high = _RANGES.get(name, (float("-inf"), float("inf")))
    return bool(low <= value <= high)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)  # type: ignore[arg-type]


# --- connecting and classifying errors ----------------------------------------------------


def _connect(target: str, *, timeout: float, uri: bool = False) -> sqlite3.Connection:
    """Open a connection (the one seam tests replace to inject disk-full and similar faults).

    ``isolation_level=None``: the store issues BEGIN IMMEDIATE / COMMIT itself, so a write
    takes the lock up front instead of upgrading a read lock (which can fail with "database
    is locked" without waiting). ``check_same_thread=False``: the store's lock serialises use.
    """
    return sqlite3.connect(
        target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
    )


def _now() -> float:
    """Unix seconds for ``created_at``/``updated_at``/``deleted_at`` (a seam: tests replace
    it with a counter, so ordering by time never depends on the clock's resolution)."""
    return time.time()


def _move_file(source: Path, target: Path) -> None:
    """Rename a file (a seam, so tests can make moving a damaged file aside impossible)."""
    os.rename(source, target)


def classify(exc: BaseException) -> str:
    """The ``StoreError.kind`` for an sqlite3 or OS error. Uses the SQLite error name where
    Python provides it (3.11+), else the message, so injected errors classify the same."""
    if isinstance(exc, OSError):
        return _classify_os_error(exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "full"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in text:
        return "locked"
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return "unwritable"
    if any(s in text for s in ("readonly", "read-only", "unable to open", "permission denied")):
        return "unwritable"
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        return "damaged"
    if "not a database" in text or "malformed" in text:
        return "damaged"
    return "other"


def _classify_os_error(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "full"
    # Permission denied, a read-only file system, a file where the folder should be, a
    # missing drive: in every case tkchat cannot write its history there.
    return "unwritable"


_REASONS = {
    "full": "the disk is full",
    "locked": "the conversation history is in use by another program (another tkchat?)",
    "unwritable": "tkchat may not write to the conversation history's folder",
    "damaged": "the conversation history file is damaged",
}


def _store_error(exc: BaseException, doing: str) -> StoreError:
    """Wrap a low-level error in one sentence: what failed, why, and that older data is safe."""
    if isinstance(exc, StoreError):
        return exc
    kind = classify(exc)
    reason = _REASONS.get(kind, "an unexpected storage error")
    detail = str(exc) or type(exc).__name__
    message = f"Could not {doing}: {reason} ({detail}). Conversations saved earlier are intact."
    return StoreError(message, kind=kind, detail=detail)


# --- schema and migrations ----------------------------------------------------------------

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
_MIGRATIONS: dict[int, tuple[str, ...]] = {1: _SCHEMA_1}


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
        _rollback(conn)
        raise
    return found


# A streaming answer is left out of the index until it ends: re-indexing a growing message
# on every batched append re-tokenised the whole answer twice a second — quadratic work that
# showed as a 45–100 ms lag spike in a 650,000-character flood. It is indexed once, when its
# status leaves "streaming" (finish, or mark_interrupted after a crash).
_FTS_TRIGGERS = {
    "messages_fts_insert": """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
        WHEN new.status != 'streaming' BEGIN
        INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END""",
    "messages_fts_delete": """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
        WHEN old.status != 'streaming' BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content); END""",
    # One trigger, two statements in order: the old entry goes before the new one comes in.
    "messages_fts_update": """CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, status
        ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            SELECT 'delete', old.id, old.content WHERE old.status != 'streaming';
        INSERT INTO messages_fts (rowid, content)
            SELECT new.id, new.content WHERE new.status != 'streaming'; END""",
}


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is open, keeping the error that caused it (a failing
    ROLLBACK, e.g. on a vanished disk, must not replace the original, clearer error)."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 with the trigram tokenizer (SQLite >= 3.34), which gives
    case-insensitive substring search in any script, Chinese included."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.tkchat_fts_probe USING fts5(x, tokenize='trigram')")
        conn.execute("DROP TABLE temp.tkchat_fts_probe")
    except sqlite3.Error:
        return False
    return True


def _sync_fts(conn: sqlite3.Connection, want: bool | None) -> bool:
    """Make the FTS index match what this SQLite can do; return whether search may use it."""
    use = fts5_available(conn) if want is not False else False
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    has_table = "messages_fts" in names
    has_triggers = all(name in names for name in _FTS_TRIGGERS)
    if use and has_table and has_triggers:
        return True
    conn.execute("BEGIN IMMEDIATE")
    try:
        if use:
            _build_fts(conn, has_table)
        else:
            # Without FTS5 a trigger on messages_fts would make every message write fail.
            # The stale index is rebuilt by _build_fts when FTS5 is next available.
            for name in _FTS_TRIGGERS:
                conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise
    return use


def _build_fts(conn: sqlite3.Connection, has_table: bool) -> None:
    if not has_table:
        conn.execute(
            "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
            "content_rowid='id', tokenize='trigram')"
        )
    for name, statement in _FTS_TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(statement)
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    # 'rebuild' indexes every row; streaming ones stay out of the index (see _FTS_TRIGGERS).
    conn.execute(
        "INSERT INTO messages_fts (messages_fts, rowid, content) "
        "SELECT 'delete', id, content FROM messages WHERE status = 'streaming'"
    )


# --- the store ------------------------------------------------------------------------------

_CONVERSATION_COLUMNS = "id, title, created_at, updated_at, system_prompt, settings, deleted_at"
_MESSAGE_COLUMNS = "id, conversation_id, position, role, content, status, created_at"


class ConversationStore:
    """Conversations and their messages in one SQLite database (a file, or memory).

    Construct it through :func:`open_store` in the app (it never raises); the constructor
    raises :class:`StoreError` and is what the writer thread and the tests use. See the module
    docstring for threads: each method runs on its caller's thread, one short transaction,
    under the store's lock.
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        fts: bool | None = None,
        check_integrity: bool = True,
    ) -> None:
        """Open (creating if needed) and migrate the database at ``path``; ``None`` means a
        private in-memory database. ``fts``: ``None`` uses FTS5 when available, ``False``
        forces the scan search (tests use it to cover the fallback). Runs on the caller's
        thread; raises :class:`StoreError`."""
        self.path = path
        self.commits = 0  # committed write transactions: lets tests count batches
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        try:
            self._conn = self._open(path, busy_timeout_s, check_integrity)
            self.fts = _sync_fts(self._conn, fts)
        except (sqlite3.Error, OSError, StoreError) as exc:
            self.close()
            raise _store_error(exc, "open the conversation history") from exc
        self._conn.create_function("tkchat_contains", 2, _contains, deterministic=True)

    @property
    def persistent(self) -> bool:
        """Whether conversations survive the process (False for the in-memory fallback)."""
        return self.path is not None

    @staticmethod
    def _open(path: Path | None, busy_timeout_s: float, check: bool) -> sqlite3.Connection:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            if check and path.exists():
                _check_integrity(path, busy_timeout_s)
        conn = _connect(":memory:" if path is None else str(path), timeout=busy_timeout_s)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if path is not None:
                # WAL: the window's reads never wait for the writer thread, and a commit
                # appends to one file. NORMAL: no fsync per commit; a committed transaction
                # still survives a killed process (only a power cut can lose the last ones).
                conn.execute("PRAGMA journal_mode = WAL").fetchall()
                conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; later calls raise ``StoreError(kind="closed")``. Idempotent.
        Runs on the caller's thread."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("The conversation history is closed.", kind="closed")
        return self._conn

    @contextmanager
    def _reading(self, doing: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._connection()
            except sqlite3.Error as exc:
                raise _store_error(exc, doing) from exc

    @contextmanager
    def _writing(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it is committed, or none of it (so a failure, such
        as a full disk, never leaves half a change behind)."""
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                _rollback(conn)
                if isinstance(exc, sqlite3.Error):
                    raise _store_error(exc, doing) from exc
                raise
            self.commits += 1

    # -- conversations -----------------------------------------------------------------------

    def create(
        self,
        title: str = DEFAULT_TITLE,
        *,
        system_prompt: str = "",
        settings: Mapping[str, Any] | None = None,
    ) -> Conversation:
        """A new, empty conversation (committed when this returns)."""
        now = _now()
        settings_json = _settings_json(settings or {})
        with self._writing("create a conversation") as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, "
                "settings) VALUES (?, ?, ?, ?, ?)",
                (
                    _clean_title(title),
                    now,
                    now,
                    _text(system_prompt, "system prompt"),
                    settings_json,
                ),
            )
            conversation_id = cast(int, cursor.lastrowid)
        return self.get(conversation_id)

    def get(self, conversation_id: int) -> Conversation:
        """One conversation, deleted or not; ``StoreError(kind="not_found")`` if unknown."""
        with self._reading("read a conversation") as conn:
            row = conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
        if row is None:
            raise _not_found(conversation_id)
        return _conversation(row)

    def list_conversations(self, include_deleted: bool = False) -> list[Conversation]:
        """All conversations, most recently updated first (ties: newest id first)."""
        where = "" if include_deleted else "WHERE deleted_at IS NULL"
        with self._reading("list conversations") as conn:
            rows = conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations {where} "
                "ORDER BY updated_at DESC, id DESC"
            ).fetchall()
        return [_conversation(row) for row in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        """Set the title (whitespace collapsed, at most 200 characters, blank → "New chat")."""
        self._update_conversation(conversation_id, "title", _clean_title(title), "rename")

    def set_system_prompt(self, conversation_id: int, prompt: str) -> None:
        """Set the conversation's system prompt ("" for none)."""
        value = _text(prompt, "system prompt")
        self._update_conversation(conversation_id, "system_prompt", value, "save the prompt")

    def set_settings(self, conversation_id: int, settings: Mapping[str, Any]) -> None:
        """Replace the conversation's settings (temperature, top_p, max_tokens, seed, ...).
        They must be JSON: string keys; numbers, strings, booleans, None, lists, dicts; no
        NaN. Anything else raises ``StoreError(kind="invalid")`` before touching the file."""
        value = _settings_json(settings)
        self._update_conversation(conversation_id, "settings", value, "save the settings")

    def _update_conversation(
        self, conversation_id: int, column: str, value: str, doing: str
    ) -> None:
        # column is one of three literals above, never user input.
        with self._writing(doing) as conn:
            cursor = conn.execute(
                f"UPDATE conversations SET {column} = ?, updated_at = ? WHERE id = ?",
                (value, _now(), conversation_id),
            )
            if cursor.rowcount == 0:
                raise _not_found(conversation_id)

    def delete(self, conversation_id: int) -> None:
        """Soft delete: the conversation leaves the list but keeps its messages, so the window
        can offer Undo (:meth:`restore`); :meth:`purge_deleted` removes it for good later."""
        self._set_deleted(conversation_id, _now(), "delete the conversation")

    def restore(self, conversation_id: int) -> None:
        """Undo :meth:`delete`. It returns to its old place: ``updated_at`` is unchanged."""
        self._set_deleted(conversation_id, None, "restore the conversation")

    def _set_deleted(self, conversation_id: int, when: float | None, doing: str) -> None:
        with self._writing(doing) as conn:
            cursor = conn.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ?", (when, conversation_id)
            )
            if cursor.rowcount == 0:
                raise _not_found(conversation_id)

    def purge_deleted(self, older_than_s: float) -> int:
        """Remove for good the conversations deleted at least ``older_than_s`` seconds ago,
        with their messages; return how many."""
        cutoff = _now() - older_than_s
        with self._writing("remove deleted conversations") as conn:
            doomed = "SELECT id FROM conversations WHERE deleted_at IS NOT NULL AND deleted_at <= ?"
            # Messages first, explicitly: their delete trigger keeps the search index in step.
            conn.execute(f"DELETE FROM messages WHERE conversation_id IN ({doomed})", (cutoff,))
            cursor = conn.execute(f"DELETE FROM conversations WHERE id IN ({doomed})", (cutoff,))
            return cursor.rowcount

    # -- messages ------------------------------------------------------------------------------

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        """The conversation's messages in order (empty for an unknown id)."""
        with self._reading("read the messages") as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? "
                "ORDER BY position",
                (conversation_id,),
            ).fetchall()
        return [StoredMessage(*row) for row in rows]

    def message(self, message_id: int) -> StoredMessage:
        """One message; ``StoreError(kind="not_found")`` if unknown."""
        with self._reading("read a message") as conn:
            row = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
        if row is None:
            raise StoreError(f"There is no message {message_id}.", kind="not_found")
        return StoredMessage(*row)

    def add_message(
        self, conversation_id: int, role: Role, content: str, status: Status = "complete"
    ) -> int:
        """Append a message at the end of the conversation; return its id. It is committed
        before this returns (a sent question is durable before generation starts)."""
        _check_choice(role, ROLES, "role")
        _check_choice(status, STATUSES, "status")
        text = _text(content, "message")
        now = _now()
        with self._writing("save the message") as conn:
            self._touch(conn, conversation_id, now)
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
        self, message_id: int, *, content: str | None = None, status: Status | None = None
    ) -> None:
        """Replace a message's content and/or status (edit a past message; finish an answer)."""
        if status is not None:
            _check_choice(status, STATUSES, "status")
        if content is not None:
            _text(content, "message")
        with self._writing("update the message") as conn:
            row = conn.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"There is no message {message_id}.", kind="not_found")
            conn.execute(
                "UPDATE messages SET content = COALESCE(?, content), "
                "status = COALESCE(?, status) WHERE id = ?",
                (content, status, message_id),
            )
            self._touch(conn, row[0], _now())

    def append_text(self, parts: Mapping[int, str]) -> None:
        """Append text to several messages in ONE transaction (the writer's batched flush of
        streaming answers). Unknown ids are skipped: the message may have been truncated away
        by an edit while its answer was still streaming."""
        if not parts:
            return
        with self._writing("save the answer") as conn:
            for message_id, text in parts.items():
                # SQLite appends in place: the growing answer never makes a round trip.
                conn.execute(
                    "UPDATE messages SET content = content || ? WHERE id = ?",
                    (_text(text, "answer"), message_id),
                )
            marks = ", ".join("?" * len(parts))
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id IN "
                f"(SELECT conversation_id FROM messages WHERE id IN ({marks}))",
                (_now(), *parts),
            )

    def truncate_after(self, conversation_id: int, position: int) -> int:
        """Delete the messages after ``position`` (for "edit a past message and resend from
        there"); return how many were deleted. ``position=-1`` empties the conversation."""
        with self._writing("shorten the conversation") as conn:
            self._touch(conn, conversation_id, _now())
            cursor = conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position > ?",
                (conversation_id, position),
            )
            return cursor.rowcount

    def mark_interrupted(self) -> int:
        """At start-up: every message still ``streaming`` (its writer was killed) becomes
        ``interrupted``; return how many. Call it once, before any answer starts: a second
        tkchat process started later would otherwise mark this one's live answer (its
        ``finish`` would set the right status again, but the mark would show meanwhile)."""
        with self._writing("mark interrupted answers") as conn:
            cursor = conn.execute(
                "UPDATE messages SET status = 'interrupted' WHERE status = 'streaming'"
            )
            return cursor.rowcount

    @staticmethod
    def _touch(conn: sqlite3.Connection, conversation_id: int, now: float) -> None:
        cursor = conn.execute(
            "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
        )
        if cursor.rowcount == 0:
            raise _not_found(conversation_id)

    # -- search ------------------------------------------------------------------------------

    def search(self, text: str, *, limit: int = 100) -> list[tuple[Conversation, str]]:
        """Conversations (not deleted) whose title or messages contain ``text``, ignoring
        case, newest first, each with a one-line snippet around the first hit. Uses the FTS5
        trigram index for queries of 3+ characters; shorter ones (a Chinese word, an emoji)
        and SQLite builds without FTS5 scan the messages instead. Same results either way."""
        query = text.strip()
        if not query:
            return []
        with self._reading("search") as conn:
            hits = self._message_hits(conn, query)
            titled = {
                row[0]
                for row in conn.execute(
                    "SELECT id FROM conversations WHERE tkchat_contains(title, ?)",
                    (query.casefold(),),
                )
            }
            rows = conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE deleted_at IS NULL "
                "ORDER BY updated_at DESC, id DESC"
            ).fetchall()
        results: list[tuple[Conversation, str]] = []
        for row in rows:
            conversation = _conversation(row)
            if conversation.id in hits:
                results.append((conversation, snippet(hits[conversation.id], query)))
            elif conversation.id in titled:
                results.append((conversation, snippet(conversation.title, query)))
            if len(results) >= limit:
                break
        return results

    def _message_hits(self, conn: sqlite3.Connection, query: str) -> dict[int, str]:
        """conversation id -> the content of its first matching message."""
        if self.fts and len(query) >= 3:  # the trigram index cannot match fewer characters
            phrase = '"' + query.replace('"', '""') + '"'
            rows = conn.execute(
                "SELECT m.conversation_id, m.content FROM messages_fts AS f "
                "JOIN messages AS m ON m.id = f.rowid WHERE messages_fts MATCH ? "
                "ORDER BY m.conversation_id, m.position",
                (phrase,),
            )
        else:
            rows = conn.execute(
                "SELECT conversation_id, content FROM messages "
                "WHERE tkchat_contains(content, ?) ORDER BY conversation_id, position",
                (query.casefold(),),
            )
        hits: dict[int, str] = {}
        for conversation_id, content in rows:
            hits.setdefault(conversation_id, content)
        return hits

    # -- export and import -------------------------------------------------------------------

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation as readable Markdown: the title as ``#``, each message under a
        ``##`` role heading, content verbatim (a code fence an interrupted answer left open
        is closed, so it cannot swallow the headings after it)."""
        conversation = self.get(conversation_id)
        return to_markdown(conversation, self.messages(conversation_id))

    def export_json(self, conversation_id: int) -> dict[str, Any]:
        """The conversation in the versioned export shape (see :func:`to_export`)."""
        conversation = self.get(conversation_id)
        return to_export(conversation, self.messages(conversation_id))

    def import_json(self, data: Mapping[str, Any] | str | bytes) -> Conversation:
        """Add a conversation from an export (the dict, or the file's text/bytes) as a new
        conversation with new ids, in one transaction. Anything malformed raises
        ``StoreError(kind="invalid")`` naming the bad field; nothing is stored then."""
        parsed = parse_export(data)
        now = _now()
        with self._writing("import the conversation") as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, "
                "settings) VALUES (?, ?, ?, ?, ?)",
                (parsed.title, parsed.created_at, now, parsed.system_prompt, parsed.settings),
            )
            conversation_id = cast(int, cursor.lastrowid)
            for position, (role, content, status, created_at) in enumerate(parsed.messages):
                conn.execute(
                    "INSERT INTO messages (conversation_id, position, role, content, status, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (conversation_id, position, role, content, status, created_at),
                )
        return self.get(conversation_id)


def _check_integrity(path: Path, busy_timeout_s: float) -> None:
    """Raise ``StoreError(kind="damaged")`` if the file is not SQLite or fails
    ``PRAGMA integrity_check``. Read-only on purpose: closing the last read-write connection
    lets SQLite checkpoint or delete the ``-wal`` file, which may hold the newest part of a
    damaged history; a read-only connection leaves every file exactly as it was."""
    conn = _connect(f"{path.resolve().as_uri()}?mode=ro", timeout=busy_timeout_s, uri=True)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()
    if rows != [("ok",)]:
        detail = "; ".join(str(r[0]) for r in rows[:3])
        raise StoreError(
            f"The conversation history file is damaged ({detail}).", kind="damaged", detail=detail
        )


def _contains(haystack: str | None, folded_needle: str) -> bool:
    """SQL ``tkchat_contains``: Unicode case-insensitive substring test (SQLite's own LIKE
    folds ASCII only, so "É" would not find "é")."""
    return haystack is not None and folded_needle in haystack.casefold()


def snippet(text: str, query: str, context: int = _SNIPPET_CONTEXT) -> str:
    """One line of ``text`` around the first case-insensitive occurrence of ``query``,
    with "…" where it was cut (the start of the text if there is no occurrence)."""
    match = re.search(re.escape(query), text, re.IGNORECASE)
    start, end = (match.start(), match.end()) if match else (0, 0)
    left, right = max(0, start - context), min(len(text), end + context)
    piece = " ".join(text[left:right].split())
    return ("…" if left > 0 else "") + piece + ("…" if right < len(text) else "")


def _conversation(row: tuple[Any, ...]) -> Conversation:
    conversation_id, title, created_at, updated_at, system_prompt, settings, deleted_at = row
    try:
        loaded = json.loads(settings)
    except ValueError:
        loaded = None
    # A hand-edited file with broken settings must not hide the conversation: use defaults.
    return Conversation(
        conversation_id,
        title,
        created_at,
        updated_at,
        system_prompt,
        loaded if isinstance(loaded, dict) else {},
        deleted_at,
    )


def _not_found(conversation_id: int) -> StoreError:
    return StoreError(f"There is no conversation {conversation_id}.", kind="not_found")


def _invalid(message: str) -> StoreError:
    return StoreError(message, kind="invalid", detail=message)


def _check_choice(value: object, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise _invalid(f"A message {what} must be one of {', '.join(choices)}, not {value!r}.")


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _invalid(f"The {what} must be text, not {type(value).__name__}.")
    return value


def _clean_title(title: object) -> str:
    cleaned = " ".join(_text(title, "title").split())[:_TITLE_MAX]
    return cleaned or DEFAULT_TITLE


def _settings_json(settings: Mapping[str, Any]) -> str:
    if not isinstance(settings, Mapping) or not all(isinstance(k, str) for k in settings):
        raise _invalid("Settings must be a mapping with text keys.")
    try:
        return json.dumps(dict(settings), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _invalid(f"Settings must be plain JSON values ({exc}).") from exc


# --- Markdown -------------------------------------------------------------------------------

_ROLE_HEADINGS = {"system": "System", "user": "User", "assistant": "Assistant"}
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def to_markdown(conversation: Conversation, messages: list[StoredMessage]) -> str:
    """Readable Markdown for a conversation (pure; any thread)."""
    parts = [f"# {conversation.title}"]
    if conversation.system_prompt:
        parts.append(f"## System prompt\n\n{close_fences(conversation.system_prompt.strip())}")
    for message in messages:
        body = close_fences(message.content.strip("\n")) or "*(empty)*"
        section = f"## {_ROLE_HEADINGS[message.role]}\n\n{body}"
        if message.status != "complete":
            section += f"\n\n*[{message.status}]*"  # as the window marks a stopped answer
        parts.append(section)
    return "\n\n".join(parts) + "\n"


def close_fences(text: str) -> str:
    """``text`` with a closing fence added if a fenced code block is left open (as in an
    answer interrupted mid-code), so later Markdown is not swallowed into the code."""
    open_fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if match is None:
            continue
        fence, rest = match.groups()
        if open_fence is None:
            if not (fence[0] == "`" and "`" in rest):  # a backtick fence's info has no `
                open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    return text if open_fence is None else f"{text}\n{open_fence}"


# --- JSON export shape ----------------------------------------------------------------------


def to_export(conversation: Conversation, messages: list[StoredMessage]) -> dict[str, Any]:
    """The export shape, version 1 (pure; any thread). All times are Unix seconds (UTC)::

        {"format": "tkchat-conversation", "version": 1, "exported_at": 1767000000.0,
         "conversation": {"title": str, "created_at": float, "updated_at": float,
                          "system_prompt": str, "settings": {str: JSON value},
                          "messages": [{"role": "system" | "user" | "assistant",
                                        "content": str, "status": <one of STATUSES>,
                                        "created_at": float}, ...]}}

    Ids are not exported: an import always creates a new conversation. A reader must reject a
    ``version`` it does not know (a later version may change meanings, not only add fields).
    """
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": _now(),
        "conversation": {
            "title": conversation.title,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
            "system_prompt": conversation.system_prompt,
            "settings": dict(conversation.settings),
            "messages": [
                {
                    "role": m.role,
                    "content": m.content,
                    "status": m.status,
                    "created_at": m.created_at,
                }
                for m in messages
            ],
        },
    }


@dataclass(frozen=True, slots=True)
class ParsedExport:
    """A validated export, ready to insert."""

    title: str
    created_at: float
    system_prompt: str
    settings: str  # JSON text
    messages: tuple[tuple[str, str, str, float], ...]  # role, content, status, created_at


def parse_export(data: Mapping[str, Any] | str | bytes) -> ParsedExport:
    """Validate an export (pure; any thread). Raises ``StoreError(kind="invalid")`` whose text
    names the first problem, e.g. "conversation.messages[2].role must be one of ...". Missing
    optional fields get defaults; an answer saved while ``streaming`` imports as
    ``interrupted`` (nothing is streaming it any more)."""
    root = _load_json(data)
    _expect(root, Mapping, "the file", "a JSON object")
    if root.get("format") != EXPORT_FORMAT:
        raise _bad_file(f'"format" must be "{EXPORT_FORMAT}" (is this a tkchat export?)')
    version = root.get("version")
    if not _is_int(version) or version < 1:
        raise _bad_file('"version" must be a whole number from 1')
    if version > EXPORT_VERSION:
        raise _bad_file(f"it was made by a newer tkchat (version {version})")
    conversation = root.get("conversation")
    _expect(conversation, Mapping, "conversation", "an object")
    now = _now()
    messages = conversation.get("messages", [])
    _expect(messages, list, "conversation.messages", "a list")
    settings = conversation.get("settings", {})
    _expect(settings, Mapping, "conversation.settings", "an object")
    try:
        settings_json = _settings_json(settings)
    except StoreError as exc:
        raise _bad_file(f"conversation.settings: {exc}") from exc
    return ParsedExport(
        title=_clean_title(_field(conversation, "title", str, "conversation", DEFAULT_TITLE)),
        created_at=_time_field(conversation, "created_at", "conversation", now),
        system_prompt=_field(conversation, "system_prompt", str, "conversation", ""),
        settings=settings_json,
        messages=tuple(_parse_message(m, i, now) for i, m in enumerate(messages)),
    )


def _load_json(data: Mapping[str, Any] | str | bytes) -> Any:
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _bad_file(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if isinstance(data, str):
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise _bad_file(f"it is not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    return data


def _parse_message(message: object, index: int, now: float) -> tuple[str, str, str, float]:
    where = f"conversation.messages[{index}]"
    _expect(message, Mapping, where, "an object")
    assert isinstance(message, Mapping)
    role = message.get("role")
    if role not in ROLES:
        raise _bad_file(f"{where}.role must be one of {', '.join(ROLES)}, not {role!r}")
    status = message.get("status", "complete")
    if status not in STATUSES:
        raise _bad_file(f"{where}.status must be one of {', '.join(STATUSES)}, not {status!r}")
    content = message.get("content")
    if not isinstance(content, str):
        raise _bad_file(f"{where}.content must be text")
    created_at = _time_field(message, "created_at", where, now)
    return role, content, "interrupted" if status == "streaming" else status, created_at


def _expect(value: object, kind: type, where: str, described: str) -> None:
    if not isinstance(value, kind):
        raise _bad_file(f"{where} must be {described}, not {type(value).__name__}")


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str, default: Any) -> Any:
    value = obj.get(key, default)
    if not isinstance(value, kind):
        raise _bad_file(f"{where}.{key} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _time_field(obj: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = obj.get(key, default)
    if not _is_number(value):
        raise _bad_file(f"{where}.{key} must be a number of seconds, not {value!r}")
    return float(value)


def _bad_file(problem: str) -> StoreError:
    return _invalid(f"This is not a conversation tkchat can import: {problem}.")


# --- opening with fallbacks -----------------------------------------------------------------


def open_store(
    path: Path | None = None,
    *,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    fts: bool | None = None,
) -> tuple[ConversationStore, str | None]:
    """Open the conversation history at ``path`` (default: :func:`database_path`); never
    raises. Returns a working store and ``None``, or a working store and ONE sentence for the
    window when something was wrong:

    - damaged file (not SQLite, or ``PRAGMA integrity_check`` fails): it is never emptied or
      overwritten. It is renamed aside to ``<name>.damaged-<YYYYmmdd-HHMMSS>`` (with its
      ``-wal``/``-shm`` files, renamed to match so SQLite still pairs them) and a new, empty
      history is started at ``path``; if it cannot be moved, it is left untouched and the
      session runs in memory;
    - locked beyond ``busy_timeout_s`` (another program holds it), a folder or file tkchat may
      not write, a full disk, a file from a newer tkchat: an in-memory store, and the warning
      says conversations will not be saved, and why.

    Runs on the caller's thread and may take a moment on a large history (the integrity check
    reads the whole file), so the app may call it from a worker thread: the store can then be
    used from the Tk thread (see the module docstring).
    """
    target = database_path() if path is None else path
    try:
        return ConversationStore(target, busy_timeout_s=busy_timeout_s, fts=fts), None
    except StoreError as exc:
        failure = exc
    if failure.kind == "damaged":
        return _recover_damaged(target, failure, busy_timeout_s, fts)
    return ConversationStore(None, fts=fts), _memory_warning(failure, target)


def _memory_warning(failure: StoreError, path: Path) -> str:
    why = {
        "locked": f"{path} is in use by another program (perhaps another tkchat window)",
        "full": f"the disk holding {path.parent} is full",
        "unwritable": f"tkchat may not write to {path.parent} ({failure.detail})",
        "newer": f"{path} was written by a newer version of tkchat and was left untouched",
    }.get(failure.kind, f"{path} could not be opened ({failure.detail})")
    return f"Conversations will not be saved in this session: {why}."


def _recover_damaged(
    path: Path, failure: StoreError, busy_timeout_s: float, fts: bool | None
) -> tuple[ConversationStore, str]:
    aside = move_aside(path)
    if aside is None:
        return ConversationStore(None, fts=fts), (
            f"Conversations will not be saved in this session: {path} is damaged "
            f"({failure.detail}) and could not be moved aside, so it was left untouched."
        )
    try:
        store = ConversationStore(path, busy_timeout_s=busy_timeout_s, fts=fts)
    except StoreError as exc:
        return ConversationStore(None, fts=fts), (
            f"Conversations will not be saved in this session: the damaged history was kept "
            f"as {aside}, and a new one could not be started ({exc.detail})."
        )
    return store, (
        f"The conversation history was damaged, so it was kept as {aside} and a new, "
        "empty history was started."
    )


_SIDE_FILES = ("-wal", "-shm", "-journal")


def move_aside(path: Path) -> Path | None:
    """Rename a damaged database (and its side files) to ``<name>.damaged-<timestamp>``;
    return the new path, or ``None`` if it could not be moved (then nothing was moved: a
    stale ``-wal`` left next to a fresh database could be replayed into it)."""
    aside = _free_name(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"))
    moved: list[tuple[Path, Path]] = []
    for suffix in ("", *_SIDE_FILES):
        source = path.with_name(path.name + suffix)
        if suffix and not os.path.lexists(source):
            continue
        target = aside.with_name(aside.name + suffix)
        try:
            _move_file(source, target)
        except OSError:
            _undo_moves(moved)
            return None
        moved.append((source, target))
    return aside


def _undo_moves(moved: list[tuple[Path, Path]]) -> None:
    for source, target in reversed(moved):
        # Best effort: if this fails too, the file keeps its new name; it is never deleted.
        with suppress(OSError):
            _move_file(target, source)


def _free_name(candidate: Path) -> Path:
    """``candidate``, or ``candidate-2``, ``-3``... if taken (two failures in one second)."""
    result, counter = candidate, 2
    while any(os.path.lexists(result.with_name(result.name + s)) for s in ("", *_SIDE_FILES)):
        result = candidate.with_name(f"{candidate.name}-{counter}")
        counter += 1
    return result


__all__ = [
    "BUSY_TIMEOUT_S",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ROLES",
    "SCHEMA_VERSION",
    "STATUSES",
    "Conversation",
    "ConversationStore",
    "ParsedExport",
    "Role",
    "Status",
    "StoreError",
    "StoredMessage",
    "classify",
    "close_fences",
    "fts5_available",
    "migrate",
    "move_aside",
    "open_store",
    "parse_export",
    "sampling_from_settings",
    "settings_from_sampling",
    "snippet",
    "to_export",
    "to_markdown",
]
