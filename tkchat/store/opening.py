"""What to do when the conversation history cannot be opened: the policy behind ``open_store``.

A chat that refuses to start because of its history file is worse than one that starts
without it, so :func:`tkchat.store.db.open_store` never raises. This module decides what it
returns instead, by the failure's ``kind``:

- ``damaged``: the file is moved aside (never emptied or overwritten, see
  :mod:`tkchat.store.damaged`) and a new, empty history starts at the same path; if it cannot
  be moved, it is left alone and the session runs in memory;
- anything else (locked by another program, a folder tkchat may not write, a full disk, a
  file from a newer tkchat): the session runs in memory and nothing on disk is touched.

Either way the caller gets a working store and one sentence for the window.

The policy does not know the store class: ``db.open_store`` passes in how to open a file and
how to make the in-memory fallback. That keeps this module below :mod:`tkchat.store.db` (which
must still offer ``open_store`` where callers import it) without an import cycle.

Runs on the caller's thread; in the app that is a worker thread, because the integrity check
that detects a damaged file reads the whole file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tkchat.store.damaged import move_aside
from tkchat.store.errors import StoreError

S = TypeVar("S")


def open_with_fallbacks(
    path: Path, open_file: Callable[[Path], S], open_memory: Callable[[], S]
) -> tuple[S, str | None]:
    """``open_file(path)`` and ``None``, or a fallback and the warning for the window.
    ``open_file`` may raise only :class:`StoreError`; ``open_memory`` must not raise."""
    try:
        return open_file(path), None
    except StoreError as exc:
        failure = exc
    if failure.kind == "damaged":
        return _recover_damaged(path, failure, open_file, open_memory)
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


__all__ = ["open_with_fallbacks"]
