"""Opening the conversation history: its connection, and what to do when it cannot be opened.

How a file is opened (:func:`open_connection`): an integrity check first (read-only), then
WAL with a bounded log, then :func:`~tkchat.store.schema.migrate`; or, for a history tkchat
may read but not write, a read-only connection (:func:`open_read_only`). Every connection
goes through the ``connect`` the store passes in (``tkchat.store.db._connect``, the seam
tests replace to inject a full disk or a read-only file).

The rest of this module is the policy behind ``open_store``.

A chat that refuses to start because of its history file is worse than one that starts
without it, so :func:`tkchat.store.db.open_store` never raises. This module decides what it
returns instead, by the failure's ``kind``:

- ``damaged``: the file is moved aside (never emptied or overwritten, see
  :mod:`tkchat.store.files`) and a new, empty history starts at the same path; if it cannot
  be moved, it is left alone and the session runs in memory;
- a history tkchat may read but not write (a read-only folder or file): it is opened
  read-only and shown, and nothing new is saved; if even reading fails, as below;
- anything else (locked by another program, a full disk, a file from a newer tkchat): the
  session runs in memory and nothing on disk is touched.

Either way the caller gets a working store and one sentence for the window.

The policy does not know the store class: ``db.open_store`` passes in how to open a file and
how to make the in-memory fallback. That keeps this module below :mod:`tkchat.store.db` (which
must still offer ``open_store`` where callers import it) without an import cycle.

**Who else has it open** (:class:`LiveLock`), so that a process starting up never marks
another's live answer ``interrupted``. An answer is saved as ``streaming`` while it streams;
a process killed mid-answer leaves it so, and the next start-up marks it ``interrupted``. But
a second window (or ``tkchat --server`` with saved chats) started on the same folder while the
first streamed found the first's live answer ``streaming`` too, and marked it. So every
process that opens the history for writing holds a shared advisory lock (``flock``) on the
history's folder while it is open (the folder, not a file: nothing new appears beside the
database, and SQLite's own locks on the database file are left alone), and only a process
that could take that lock *exclusively* when it opened is alone: only then are the answers
still ``streaming`` a dead process's. One that is not alone leaves them (the next process to
start alone marks them). The system drops a dead process's lock itself, so a crash never
leaves the history looking busy. Where there is no ``flock`` (Windows), every process counts
as alone, as before.

Runs on the caller's thread; in the app that is a worker thread, because the integrity check
that detects a damaged file reads the whole file.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tkchat.store.errors import StoreError
from tkchat.store.files import move_aside
from tkchat.store.schema import SCHEMA_VERSION, migrate

S = TypeVar("S")
Connect = Callable[..., sqlite3.Connection]  # (target, *, timeout, uri=False): db._connect

# The write-ahead log, bounded: it is checkpointed once it holds this many pages (512 kB at
# SQLite's 4 kB pages; the default is 1,000), and cut back to JOURNAL_SIZE_LIMIT whenever it
# starts over. The writer also empties it after every answer (ConversationStore.checkpoint).
# Unbounded, it grew to 1,944 kB on a 2 MB disk and filled it again after space was freed.
WAL_AUTOCHECKPOINT_PAGES = 128
JOURNAL_SIZE_LIMIT = 512 * 1024
PAGE_SIZE = 1024


def open_connection(
    connect: Connect, path: Path | None, busy_timeout_s: float, *, check: bool
) -> sqlite3.Connection:
    """A migrated read-write connection to ``path`` (None: a private in-memory database),
    after an integrity check of an existing file when ``check``. Raises sqlite3/OS errors
    and :class:`StoreError` (damaged, newer). The caller's thread."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if check and path.exists():
            check_integrity(connect, path, busy_timeout_s)
    conn = connect(":memory:" if path is None else str(path), timeout=busy_timeout_s)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        if path is not None:
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file's; later: ignored
            # WAL: the window's reads never wait for the writer thread, and a commit
            # appends to one file. NORMAL: no fsync per commit; a committed transaction
            # still survives a killed process (only a power cut can lose the last ones).
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}").fetchall()
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def checkpoint_log(conn: sqlite3.Connection, path: Path, *, grown_only: bool = False) -> bool:
    """``wal_checkpoint(TRUNCATE)``: the log copied into the file, and emptied. True if it
    is empty now. ``grown_only``: a PASSIVE checkpoint, and only when the log holds pages
    past the end of the file (the database grew). Done after each flush, it makes the file
    grow while there is space; then a full disk can always empty the log, which only copies
    pages into the file's own length (a full disk used to keep the log, and its space,
    because emptying it needed the file to grow first). Never raises."""
    try:
        if grown_only:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            if pages * page_size <= path.stat().st_size:
                return False
        mode = "PASSIVE" if grown_only else "TRUNCATE"
        busy, _log, _copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    except (sqlite3.Error, OSError):
        return False
    return not busy


def read_only_connection(connect: Connect, path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection that cannot change any file: ``mode=ro``, or where that cannot open
    (a WAL database in a folder that may not be written has no ``-shm`` to share and cannot
    make one) ``immutable=1``, which reads the file alone (a ``-wal`` left beside it by a
    crash is then not seen: a read-only view of what was checkpointed)."""
    uri = path.resolve().as_uri()
    error: sqlite3.Error | None = None
    for mode in ("mode=ro", "immutable=1"):
        conn = connect(f"{uri}?{mode}", timeout=busy_timeout_s, uri=True)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            conn.close()
            error = exc
    assert error is not None
    raise error


def check_integrity(connect: Connect, path: Path, busy_timeout_s: float) -> None:
    """Raise ``StoreError(kind="damaged")`` if the file is not SQLite or fails
    ``PRAGMA integrity_check``. Read-only on purpose: closing the last read-write connection
    lets SQLite checkpoint or delete the ``-wal`` file, which may hold the newest part of a
    damaged history; a read-only connection leaves every file exactly as it was."""
    conn = read_only_connection(connect, path, busy_timeout_s)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()
    if rows != [("ok",)]:
        detail = "; ".join(str(r[0]) for r in rows[:3])
        raise StoreError(
            f"The conversation history file is damaged ({detail}).", kind="damaged", detail=detail
        )


def open_read_only(connect: Connect, path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """A read-only connection to a history of this very schema (an older one would need a
    migration, a write; a newer one is not for this tkchat). Raises StoreError."""
    check_integrity(connect, path, busy_timeout_s)
    conn = read_only_connection(connect, path, busy_timeout_s)
    try:
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    if row is None or row[0] != SCHEMA_VERSION:
        conn.close()
        found = "none" if row is None else row[0]
        raise StoreError(
            f"The conversation history has schema {found}; this tkchat reads {SCHEMA_VERSION}.",
            kind="other",
            detail=f"schema version {found}",
        )
    return conn


def open_with_fallbacks(
    path: Path,
    open_file: Callable[[Path], S],
    open_memory: Callable[[], S],
    open_reading: Callable[[Path], S] | None = None,
) -> tuple[S, str | None]:
    """``open_file(path)`` and ``None``, or a fallback and the warning for the window.
    ``open_file`` and ``open_reading`` (a read-only store) may raise only
    :class:`StoreError`; ``open_memory`` must not raise."""
    try:
        return open_file(path), None
    except StoreError as exc:
        failure = exc
    if failure.kind == "damaged":
        return _recover_damaged(path, failure, open_file, open_memory)
    if failure.kind == "unwritable" and open_reading is not None and path.is_file():
        try:
            return open_reading(path), (
                f"Your conversations are shown read-only: tkchat may not write to {path} "
                f"({failure.detail}), so nothing new will be saved in this session."
            )
        except StoreError:
            pass  # not even readable: as any other failure
    return open_memory(), _memory_warning(failure, path)


def _memory_warning(failure: StoreError, path: Path) -> str:
    why = {
        "locked": f"{path} is in use by another program (perhaps another tkchat window)",
        "full": f"the disk holding {path.parent} is full",
        "unwritable": f"tkchat may not write to {path.parent} ({failure.detail})",
        "newer": f"{path} was written by a newer version of tkchat and was left untouched",
    }.get(failure.kind, f"{path} could not be opened ({failure.detail})")
    return f"Conversations will not be saved in this session: {why}."


def _recover_damaged(
    path: Path,
    failure: StoreError,
    open_file: Callable[[Path], S],
    open_memory: Callable[[], S],
) -> tuple[S, str]:
    aside = move_aside(path)
    if aside is None:
        return open_memory(), (
            f"Conversations will not be saved in this session: {path} is damaged "
            f"({failure.detail}) and could not be moved aside, so it was left untouched."
        )
    try:
        store = open_file(path)
    except StoreError as exc:
        return open_memory(), (
            f"Conversations will not be saved in this session: the damaged history was kept "
            f"as {aside}, and a new one could not be started ({exc.detail})."
        )
    return store, (
        f"The conversation history was damaged, so it was kept as {aside} and a new, "
        "empty history was started."
    )


__all__ = [
    "JOURNAL_SIZE_LIMIT",
    "PAGE_SIZE",
    "WAL_AUTOCHECKPOINT_PAGES",
    "check_integrity",
    "checkpoint_log",
    "open_connection",
    "open_read_only",
    "open_with_fallbacks",
    "read_only_connection",
]


class LiveLock:
    """This process's share of the lock on ``database``'s folder; :attr:`alone`: nobody else
    had it when this one opened."""

    def __init__(self, database: Path) -> None:
        self.alone = True
        self._fd: int | None = None
        if sys.platform == "win32":
            return
        try:
            import fcntl
        except ImportError:  # (a stripped-down Python: counted alone, as before)
            return
        try:
            self._fd = os.open(database.parent, os.O_RDONLY)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.alone = False
            # shared from now on, alone or not: the next process to open sees this one
            fcntl.flock(self._fd, fcntl.LOCK_SH)
        except OSError:  # (a file system without flock: counted alone, as before)
            self.close()
            self.alone = True

    def close(self) -> None:
        """Let go (closing the file drops the lock). Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
