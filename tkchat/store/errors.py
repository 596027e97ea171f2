"""How storage failures reach the user: one exception type, sorted by cause.

Every failure in :mod:`tkchat.store` surfaces as :class:`StoreError`. Its ``kind`` is for code
(``full``, ``locked``, ``unwritable``, ``damaged``, ``newer``, ``invalid``, ``not_found``,
``closed``, ``other``): the writer thread retries ``full`` and ``locked``, and ``open_store``
picks its fallback by it. Its text is one sentence the window can show as it is. Raw
``sqlite3``/``OSError`` exceptions are turned into it by :func:`store_error`, and
:func:`classify` is shared with the settings file, so a full disk is recognised the same way
wherever it happens.

This is the bottom of the package: it imports nothing from the rest of ``tkchat``. Everything
here is pure and runs on whichever thread hit the failure (the Tk thread, the writer thread, or
the thread that opens the store).
"""

from __future__ import annotations

import errno
import sqlite3


class StoreError(Exception):
    """A storage failure the user should read. ``kind`` names it for code, ``str(exc)`` is
    one sentence for people, ``detail`` is the underlying error text (may be empty)."""

    def __init__(self, message: str, *, kind: str = "other", detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail


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


def error_detail(exc: BaseException) -> str:
    """The error's own text for the end of a warning; its type name when it has no text
    (``KeyError()`` or a bare ``OSError`` would otherwise leave empty brackets)."""
    return str(exc) or type(exc).__name__


_REASONS = {
    "full": "the disk is full",
    "locked": "the conversation history is in use by another program (another tkchat?)",
    "unwritable": "tkchat may not write to the conversation history's folder",
    "damaged": "the conversation history file is damaged",
}


def store_error(exc: BaseException, doing: str) -> StoreError:
    """Wrap a low-level error in one sentence: what failed, why, and that older data is safe.
    A :class:`StoreError` passes through unchanged, so nested layers never wrap twice."""
    if isinstance(exc, StoreError):
        return exc
    kind = classify(exc)
    reason = _REASONS.get(kind, "an unexpected storage error")
    detail = error_detail(exc)
    message = f"Could not {doing}: {reason} ({detail}). Conversations saved earlier are intact."
    return StoreError(message, kind=kind, detail=detail)


def invalid(message: str) -> StoreError:
    """A value the store refuses before it touches the file (a bad title, an import that is
    not a tkchat export): the message is already the sentence to show."""
    return StoreError(message, kind="invalid", detail=message)


def not_found(conversation_id: int) -> StoreError:
    """There is no conversation with this id (never was, or removed for good)."""
    return StoreError(f"There is no conversation {conversation_id}.", kind="not_found")


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is open, keeping the error that caused it (a failing
    ROLLBACK, e.g. on a vanished disk, must not replace the original, clearer error).
    Every transaction in the package ends here on failure: migrations, the search index's
    upkeep and the store's writes."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass


__all__ = [
    "StoreError",
    "classify",
    "error_detail",
    "invalid",
    "not_found",
    "rollback",
    "store_error",
]
