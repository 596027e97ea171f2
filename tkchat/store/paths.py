"""Where tkchat keeps its conversations: the platformdirs conventions, without the dependency.

| platform | folder |
|---|---|
| any (override) | ``$TKCHAT_DATA_DIR`` |
| Linux and other Unix | ``$XDG_DATA_HOME/tkchat``, else ``~/.local/share/tkchat`` |
| macOS | ``~/Library/Application Support/tkchat`` |
| Windows | ``%APPDATA%\\tkchat`` (the roaming profile), else ``~\\AppData\\Roaming\\tkchat`` |

Nothing here touches the disk: the folder is created by :func:`tkchat.store.db.open_store`,
which turns a failure to create it into a warning instead of a crash. Every function is pure
and may run on any thread.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
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
