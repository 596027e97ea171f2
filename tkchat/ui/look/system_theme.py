"""Is the desktop light or dark? Asked once, when the window opens (and when the user picks
"follow the system" again). No Tk here: every source is a command, a file or the registry,
passed in, so the logic is tested on any machine, desktop or not.

What is asked, first answer wins:

- **Linux and the BSDs** — ``GTK_THEME`` (``Adwaita:dark``, ``Adwaita-dark``; set by users
  and by some launchers); the freedesktop **settings portal**'s ``color-scheme`` (GNOME,
  KDE Plasma, and sandboxed apps; only with a session bus; 1 = dark, 2 = light, 0 = no
  preference); GNOME's ``gsettings`` ``color-scheme`` (``prefer-dark``), then its GTK theme
  name; KDE's ``~/.config/kdeglobals`` (the scheme's window background, by luminance); GTK's
  ``~/.config/gtk-{4.0,3.0}/settings.ini`` (``gtk-application-prefer-dark-theme``).
- **macOS** — ``defaults read -g AppleInterfaceStyle`` says ``Dark`` in dark mode (and fails
  in light mode: that is light).
- **Windows** — the registry value ``AppsUseLightTheme`` (0 = dark).

Nothing found means "unknown", and the window is light. Each command gets at most
:data:`COMMAND_TIMEOUT_S`; on a desktop they answer in milliseconds. Main thread (it runs
before the window is shown), or any thread: it touches nothing shared.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tkchat.ui.look.palette import DARK_NAME, LIGHT_NAME, luminance

COMMAND_TIMEOUT_S = 1.0

Run = Callable[[list[str]], str | None]  # a command's stdout, or None if it failed
ReadText = Callable[[Path], str | None]  # a file's text, or None
ReadRegistry = Callable[[str, str], int | None]  # (key, value name) -> DWORD or None

PORTAL = [
    "gdbus",
    "call",
    "--session",
    "--timeout",
    "1",
    "--dest",
    "org.freedesktop.portal.Desktop",
    "--object-path",
    "/org/freedesktop/portal/desktop",
    "--method",
    "org.freedesktop.portal.Settings.Read",
    "org.freedesktop.appearance",
    "color-scheme",
]
GSETTINGS = ["gsettings", "get", "org.gnome.desktop.interface"]
MACOS = ["defaults", "read", "-g", "AppleInterfaceStyle"]
WINDOWS_KEY = r"Software\Microsoft\Windows\CurrentVersion\Themes\Personalize"


@dataclass(frozen=True)
class Detected:
    """What the system said: ``scheme`` is "light", "dark" or None (nothing said), and
    ``source`` says where it came from, for the status line and docs/using.md."""

    scheme: str | None
    source: str


def detect_system_theme(
    *,
    platform: str = sys.platform,
    environ: Mapping[str, str] = os.environ,
    run: Run | None = None,
    read_text: ReadText | None = None,
    home: Path | None = None,
    read_registry: ReadRegistry | None = None,
) -> Detected:
    """Ask the system whether it is dark; see the module docstring for the sources."""
    run = run or run_command
    read_text = read_text or _read_text
    if platform == "darwin":
        return _macos(run)
    if platform == "win32":
        return _windows(read_registry or _read_windows_registry)
    return _freedesktop(environ, run, read_text, home if home is not None else Path.home())


def _macos(run: Run) -> Detected:
    answer = run(MACOS)
    if answer is not None and answer.strip().lower() == "dark":
        return Detected(DARK_NAME, "macOS AppleInterfaceStyle=Dark")
    # The key exists only in dark mode: the command failing is the light answer.
    return Detected(LIGHT_NAME, "macOS AppleInterfaceStyle unset")


def _windows(read_registry: ReadRegistry) -> Detected:
    value = read_registry(WINDOWS_KEY, "AppsUseLightTheme")
    if value is None:
        return Detected(None, "nothing detected")
    return Detected(LIGHT_NAME if value else DARK_NAME, f"Windows AppsUseLightTheme={value}")


def _freedesktop(environ: Mapping[str, str], run: Run, read_text: ReadText, home: Path) -> Detected:
    gtk_theme = environ.get("GTK_THEME", "").strip()
    if gtk_theme:
        return Detected(scheme_of_theme_name(gtk_theme), f"GTK_THEME={gtk_theme}")
    if environ.get("DBUS_SESSION_BUS_ADDRESS"):
        scheme = portal_scheme(run(PORTAL))
        if scheme is not None:
            return Detected(scheme, "the freedesktop settings portal")
    colour_scheme = _unquote(run([*GSETTINGS, "color-scheme"]))
    if colour_scheme in ("prefer-dark", "prefer-light"):
        scheme = DARK_NAME if colour_scheme == "prefer-dark" else LIGHT_NAME
        return Detected(scheme, f"GNOME color-scheme={colour_scheme}")
    theme_name = _unquote(run([*GSETTINGS, "gtk-theme"]))
    if theme_name:
        return Detected(scheme_of_theme_name(theme_name), f"GNOME gtk-theme={theme_name}")
    kde = kde_scheme(read_text(home / ".config" / "kdeglobals"))
    if kde is not None:
        return Detected(kde, "KDE kdeglobals")
    for version in ("gtk-4.0", "gtk-3.0"):
        gtk = gtk_settings_scheme(read_text(home / ".config" / version / "settings.ini"))
        if gtk is not None:
            return Detected(gtk, f"~/.config/{version}/settings.ini")
    return Detected(None, "nothing detected")


def scheme_of_theme_name(name: str) -> str:
    """A GTK theme name's scheme: ``Adwaita:dark``, ``Adwaita-dark``, ``Breeze-Dark`` and
    ``Yaru-dark`` are dark; any other name is a light theme."""
    lowered = name.lower()
    dark = lowered.endswith((":dark", "-dark", "_dark")) or "dark" in re.split(r"[-:_ ]", lowered)
    return DARK_NAME if dark else LIGHT_NAME


def portal_scheme(reply: str | None) -> str | None:
    """The portal's answer, as gdbus prints it: ``(<<uint32 1>>,)`` (Read) or
    ``(<uint32 1>,)`` (ReadOne). 1 prefers dark, 2 prefers light, 0 has no preference."""
    if not reply:
        return None
    found = re.search(r"uint32\s+(\d+)", reply)
    if found is None:
        return None
    return {1: DARK_NAME, 2: LIGHT_NAME}.get(int(found.group(1)))


def kde_scheme(text: str | None) -> str | None:
    """KDE's colour scheme, from the window background in ``kdeglobals``
    (``[Colors:Window] BackgroundNormal=r,g,b``), else from the scheme's name."""
    if not text:
        return None
    config = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        config.read_string(text)
    except configparser.Error:
        return None
    background = config.get("Colors:Window", "BackgroundNormal", fallback="")
    parts = [part.strip() for part in background.split(",")]
    if len(parts) >= 3 and all(part.isdigit() for part in parts[:3]):
        red, green, blue = (min(255, int(part)) for part in parts[:3])
        return DARK_NAME if luminance(f"#{red:02x}{green:02x}{blue:02x}") < 0.2 else LIGHT_NAME
    name = config.get("General", "ColorScheme", fallback="")
    return scheme_of_theme_name(name) if name else None


def gtk_settings_scheme(text: str | None) -> str | None:
    """GTK's own ``settings.ini``: the prefer-dark switch, else the theme's name."""
    if not text:
        return None
    config = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        config.read_string(text)
    except configparser.Error:
        return None
    prefer = config.get("Settings", "gtk-application-prefer-dark-theme", fallback="").strip()
    if prefer.lower() in ("1", "true", "yes"):
        return DARK_NAME
    name = config.get("Settings", "gtk-theme-name", fallback="").strip()
    if name:
        return scheme_of_theme_name(name)
    return LIGHT_NAME if prefer.lower() in ("0", "false", "no") else None


def _unquote(text: str | None) -> str:
    return (text or "").strip().strip("'\"")


def run_command(command: list[str]) -> str | None:
    """``command``'s stdout if it exists, ran and succeeded within the timeout, else None."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _read_windows_registry(key: str, name: str) -> int | None:
    try:
        import winreg  # only on Windows
    except ImportError:
        return None
    try:
        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, key) as handle:  # type: ignore[attr-defined,unused-ignore]
            value, _kind = winreg.QueryValueEx(handle, name)  # type: ignore[attr-defined,unused-ignore]
    except OSError:
        return None
    return int(value) if isinstance(value, int) else None
