"""tkchat's files on disk: where they live, and what becomes of one it cannot read.

Where (:func:`data_dir`, :func:`database_path`): the platformdirs conventions, without the
dependency.

| platform | folder |
|---|---|
| any (override) | ``$TKCHAT_DATA_DIR`` |
| Linux and other Unix | ``$XDG_DATA_HOME/tkchat``, else ``~/.local/share/tkchat`` |
| macOS | ``~/Library/Application Support/tkchat`` |
| Windows | ``%APPDATA%\\tkchat`` (the roaming profile), else ``~\\AppData\\Roaming\\tkchat`` |

Nothing of that touches the disk: the folder is created by :func:`tkchat.store.db.open_store`,
which turns a failure to create it into a warning instead of a crash; those functions are
pure and may run on any thread.

A file tkchat cannot read (:func:`move_aside`) is renamed aside, never emptied, deleted or
overwritten. Both the conversation history and ``settings.json`` start afresh when their file
is damaged, and both keep the old file next to the new one as
``<name>.damaged-<YYYYmmdd-HHMMSS>``: it may still hold something the user wants, and a later
tkchat (or a person) may be able to read it. That runs on the caller's thread: the thread
opening the store, or whichever thread loads the settings (the Tk thread at start-up).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

APP_NAME = "tkchat"
DATABASE_NAME = "conversations.sqlite3"
DATA_DIR_ENV = "TKCHAT_DATA_DIR"


def data_dir(
    *,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """The folder for tkchat's data. The keyword arguments exist for tests (they default to
    ``sys.platform``, ``os.environ`` and ``Path.home()``); the app calls ``data_dir()``."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    override = env.get(DATA_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    home_dir = Path.home() if home is None else home
    return _platform_data_home(platform, env, home_dir) / APP_NAME


def database_path(
    *,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """``conversations.sqlite3`` inside :func:`data_dir` (same keyword arguments)."""
    return data_dir(platform=platform, environ=environ, home=home) / DATABASE_NAME


def _platform_data_home(platform: str, env: Mapping[str, str], home: Path) -> Path:
    if platform.startswith("win"):
        appdata = env.get("APPDATA", "").strip()
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    if platform == "darwin":
        return home / "Library" / "Application Support"
    # XDG Base Directory spec: a relative $XDG_DATA_HOME is invalid and must be ignored.
    xdg = env.get("XDG_DATA_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    return home / ".local" / "share"


# -- a damaged file, moved aside --------------------------------------------------------------

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


def write_atomically(path: Path, payload: bytes) -> None:
    """Any thread. Replace ``path`` with ``payload`` so that a reader (or a crash) sees either
    the old file or the new one, never a mix; a link at ``path`` is replaced, its target left
    alone. Raises the ``OSError`` (a full disk, a folder it may not write) with the old file
    intact. The temporary file is made in the same folder: ``os.replace`` is only atomic
    within one file system."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique name per call, so two threads saving at once never write the same temp file.
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            # Without fsync, a power cut after the rename can leave an empty file on some
            # file systems (the rename reached the disk, the data did not).
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX). Best effort: Windows cannot open a folder,
    and the new file is already complete and in place either way."""
    if os.name != "posix":
        return
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


__all__ = [
    "APP_NAME",
    "DATABASE_NAME",
    "DATA_DIR_ENV",
    "data_dir",
    "database_path",
    "move_aside",
    "write_atomically",
]
