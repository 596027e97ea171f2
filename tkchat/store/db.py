"""The conversation history: :class:`ConversationStore`, and :func:`open_store`.

This module owns the SQLite connection, the transactions and the conversations themselves
(create, rename, delete, search, export, import); the other concerns live beside it, one
module each: ``messages`` (reading, adding and editing messages; a streaming answer as
appended parts: linear saving), ``variants`` (versions and branches) and ``figures`` (each
answer's), each a part of the store mixed into it; ``errors``, ``records`` (the records
handed out, the checks on what may be stored), ``schema``, ``opening`` (the fallbacks of
:func:`open_store`), ``search_index`` (FTS5), ``sampling_json``, ``export_format``, ``files``
(where; a damaged file moved aside). Their public names are importable from here too
(``from tkchat.store.db import open_store, close_fences``).

Threads
-------
Every :class:`ConversationStore` method runs on the thread that calls it and holds that thread
for one short transaction. A store may be shared between threads: each method takes the
store's lock, and the connection is opened with ``check_same_thread=False`` (the in-memory
fallback, which has no file another connection could open, is shared by the window and the
:class:`~tkchat.store.writer.StoreWriter` this way). In the app, the Tk main thread reads
(list, messages, search) and makes rare small edits (create, rename, delete); everything that
happens while an answer streams goes through the ``StoreWriter``'s own thread and connection.

Failures
--------
Every failure surfaces as :class:`StoreError` (see :mod:`tkchat.store.errors` for its kinds).
A failed write is rolled back whole, so what was stored before it is intact.
:func:`open_store` never raises: see its docstring.

Seams
-----
Tests replace ``_connect`` (to inject a full disk or a read-only file) and ``_now`` (a
ticking clock) on this module, so both are looked up here at call time (the store's parts
in other modules ask :meth:`ConversationStore._clock`). The export functions get the time
from ``_now`` as an argument for the same reason.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from tkchat.store.errors import StoreError, classify, not_found, rollback, store_error
from tkchat.store.export_format import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportStore,
    ParsedExport,
    close_fences,
    parse_export,
    to_export,
    to_markdown,
)
from tkchat.store.figures import FiguresStore
from tkchat.store.files import database_path, move_aside
from tkchat.store.opening import (
    LiveLock,
    checkpoint_log,
    open_connection,
    open_read_only,
    open_with_fallbacks,
)
from tkchat.store.records import (
    CONVERSATION_COLUMNS,
    DEFAULT_TITLE,
    ROLES,
    STATUSES,
    Conversation,
    Role,
    Status,
    StoredMessage,
    clean_title,
    conversation_from_row,
    settings_json,
    text_value,
)
from tkchat.store.sampling_json import sampling_from_settings, settings_from_sampling
from tkchat.store.schema import SCHEMA_VERSION, migrate
from tkchat.store.search_index import (
    add_contains_function,
    fts5_available,
    fts_ready,
    search_conversations,
    snippet,
    sync_fts,
)
from tkchat.store.variants import VariantsStore

BUSY_TIMEOUT_S = 2.0  # how long a write waits for another connection's lock before failing


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


# --- the store ------------------------------------------------------------------------------


class ConversationStore(VariantsStore, ExportStore, FiguresStore):
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
        read_only: bool = False,
    ) -> None:
        """Open (creating if needed) and migrate the database at ``path``; ``None`` means a
        private in-memory database. ``fts``: ``None`` uses FTS5 when available, ``False``
        forces the scan search (tests use it to cover the fallback). ``read_only``: open an
        existing file without changing it (a folder tkchat may not write): every write then
        raises ``StoreError(kind="unwritable")``. Runs on the caller's thread; raises
        :class:`StoreError`."""
        self.path = path
        self.read_only = read_only and path is not None
        self.commits = 0  # committed write transactions: lets tests count batches
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        # another tkchat process has this history open (tkchat/store/opening.py)
        self._live = LiveLock(path) if path is not None and not self.read_only else None
        self.others_open = self._live is not None and not self._live.alone
        try:
            if path is not None and self.read_only:
                self._conn = open_read_only(_connect, path, busy_timeout_s)
                self.fts = fts is not False and fts_ready(self._conn)
            else:
                self._conn = open_connection(_connect, path, busy_timeout_s, check=check_integrity)
                self.fts = sync_fts(self._conn, fts)
        except (sqlite3.Error, OSError, StoreError) as exc:
            self.close()
            raise store_error(exc, "open the conversation history") from exc
        add_contains_function(self._conn)

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; later calls raise ``StoreError(kind="closed")``. Idempotent.
        Runs on the caller's thread."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._live is not None:
                self._live.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _clock(self) -> float:
        """Now, for the store's parts: this module's ``_now``, looked up at call time."""
        return _now()

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
                raise store_error(exc, doing) from exc

    @contextmanager
    def _writing(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it is committed, or none of it (so a failure, such
        as a full disk, never leaves half a change behind)."""
        with self._lock:
            conn = self._connection()
            if self.read_only:
                raise StoreError(
                    f"Could not {doing}: the conversation history is open read-only in this "
                    "session. Conversations saved earlier are intact.",
                    kind="unwritable",
                    detail="read-only",
                )
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                rollback(conn)
                if isinstance(exc, sqlite3.Error):
                    raise store_error(exc, doing) from exc
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
        settings_text = settings_json(settings or {})
        with self._writing("create a conversation") as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, "
                "settings) VALUES (?, ?, ?, ?, ?)",
                (
                    clean_title(title),
                    now,
                    now,
                    text_value(system_prompt, "system prompt"),
                    settings_text,
                ),
            )
            conversation_id = cast(int, cursor.lastrowid)
        return self.get(conversation_id)

    def get(self, conversation_id: int) -> Conversation:
        """One conversation, deleted or not; ``StoreError(kind="not_found")`` if unknown."""
        with self._reading("read a conversation") as conn:
            row = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
        if row is None:
            raise not_found(conversation_id)
        return conversation_from_row(row)

    def list_conversations(self, include_deleted: bool = False) -> list[Conversation]:
        """All conversations, most recently updated first (ties: newest id first)."""
        where = "" if include_deleted else "WHERE deleted_at IS NULL"
        with self._reading("list conversations") as conn:
            rows = conn.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations {where} "
                "ORDER BY updated_at DESC, id DESC"
            ).fetchall()
        return [conversation_from_row(row) for row in rows]

    def rename(self, conversation_id: int, title: str) -> None:
        """Set the title (whitespace collapsed, at most 200 characters, blank → "New chat")."""
        self._update_conversation(conversation_id, "title", clean_title(title), "rename")

    def set_system_prompt(self, conversation_id: int, prompt: str) -> None:
        """Set the conversation's system prompt ("" for none)."""
        value = text_value(prompt, "system prompt")
        self._update_conversation(conversation_id, "system_prompt", value, "save the prompt")

    def set_settings(self, conversation_id: int, settings: Mapping[str, Any]) -> None:
        """Replace the conversation's settings (temperature, top_p, max_tokens, seed, ...).
        They must be JSON: string keys; numbers, strings, booleans, None, lists, dicts; no
        NaN. Anything else raises ``StoreError(kind="invalid")`` before touching the file."""
        value = settings_json(settings)
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
                raise not_found(conversation_id)

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
                raise not_found(conversation_id)

    def purge_deleted(self, older_than_s: float, only: Iterable[int] | None = None) -> int:
        """Remove for good the conversations deleted at least ``older_than_s`` seconds ago
        (of ``only``, when given), with their messages and versions; return how many."""
        cutoff = _now() - older_than_s
        ids = None if only is None else sorted(set(only))
        if ids == []:
            return 0
        among = "" if ids is None else f" AND id IN ({', '.join('?' * len(ids))})"
        args = (cutoff, *(ids or ()))
        with self._writing("remove deleted conversations") as conn:
            doomed = (
                "SELECT id FROM conversations WHERE deleted_at IS NOT NULL AND deleted_at <= ?"
                + among
            )
            # Messages first, explicitly: their delete trigger keeps the search index in step.
            conn.execute(f"DELETE FROM messages WHERE conversation_id IN ({doomed})", args)
            cursor = conn.execute(f"DELETE FROM conversations WHERE id IN ({doomed})", args)
            return cursor.rowcount

    def checkpoint(self, *, grown_only: bool = False) -> bool:
        """Copy the write-ahead log into the file and empty it: after an answer, and after a
        write a full disk refused, so the log never keeps space it no longer needs. With
        ``grown_only`` (after each flush): only if the log holds pages past the file's end,
        and without emptying it, so the file grows while there is space. True if done.
        Never raises (:func:`~tkchat.store.opening.checkpoint_log`)."""
        with self._lock:
            if self._conn is None or self.path is None or self.read_only:
                return False
            return checkpoint_log(self._conn, self.path, grown_only=grown_only)

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
            return search_conversations(conn, query, use_fts=self.fts, limit=limit)


# --- opening with fallbacks -----------------------------------------------------------------


def open_store(
    path: Path | None = None,
    *,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    fts: bool | None = None,
) -> tuple[ConversationStore, str | None]:
    """Open the conversation history at ``path`` (default: :func:`database_path`); never
    raises. Returns a working store and ``None``, or a working store and ONE sentence for the
    window when something was wrong (:mod:`tkchat.store.opening` has the whole policy):

    - damaged file (not SQLite, or ``PRAGMA integrity_check`` fails): renamed aside to
      ``<name>.damaged-<YYYYmmdd-HHMMSS>`` with its ``-wal``/``-shm`` files, never emptied or
      overwritten, and a new, empty history is started (if it cannot be moved: memory);
    - a folder or file tkchat may read but not write: the history, opened read-only;
    - locked, a full disk, a file from a newer tkchat: an in-memory store.

    Runs on the caller's thread and may take a moment on a large history (the integrity check
    reads the whole file), so the app may call it from a worker thread: the store can then be
    used from the Tk thread (see the module docstring).
    """
    return open_with_fallbacks(
        database_path() if path is None else path,
        lambda target: ConversationStore(target, busy_timeout_s=busy_timeout_s, fts=fts),
        lambda: ConversationStore(None, fts=fts),
        lambda target: ConversationStore(target, fts=fts, read_only=True),
    )


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
