"""Keeping a file tkchat cannot read: rename it aside, never empty, delete or overwrite it.

Both the conversation history and ``settings.json`` start afresh when their file is damaged,
and both keep the old file next to the new one as ``<name>.damaged-<YYYYmmdd-HHMMSS>``: it
may still hold something the user wants, and a later tkchat (or a person) may be able to read
it. Runs on the caller's thread: the thread opening the store, or whichever thread loads the
settings (the Tk thread at start-up).
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path

# SQLite's companions of a database file. They move with it, renamed to match, so SQLite still
# pairs them if the aside copy is ever opened; a settings file simply has none.
_SIDE_FILES = ("-wal", "-shm", "-journal")


def _move_file(source: Path, target: Path) -> None:
    """Rename a file (a seam, so tests can make moving a damaged file aside impossible)."""
    os.rename(source, target)


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


__all__ = ["move_aside"]
