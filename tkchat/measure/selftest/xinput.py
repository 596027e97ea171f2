"""Real X input events for the driver: XTest through ``ctypes``, else ``xdotool``.

``xdotool`` sends its events through the XTest extension; calling XTest directly sends the
very same events without starting a process for each click (on this 2-core machine, busy,
that was 30-80 ms a click: most of a question's time, and noise on the moment each event
was sent). Where libX11 and libXtst cannot be loaded, each event is an ``xdotool`` process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
from typing import Any


def xdotool(*args: object) -> None:
    subprocess.run(
        ["xdotool", *map(str, args)],
        check=True,
        timeout=30,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class XInput:
    """Clicks, wheel steps and keys on ``$DISPLAY``. One thread (the driver's)."""

    def __init__(self) -> None:
        self._x: Any = None
        self._xtst: Any = None
        self._display: Any = None
        x11, xtst = ctypes.util.find_library("X11"), ctypes.util.find_library("Xtst")
        if not (x11 and xtst and os.environ.get("DISPLAY")):
            return
        try:
            self._x, self._xtst = ctypes.CDLL(x11), ctypes.CDLL(xtst)
        except OSError:
            return
        self._x.XOpenDisplay.restype = ctypes.c_void_p
        self._x.XOpenDisplay.argtypes = [ctypes.c_char_p]
        for name in ("XFlush", "XCloseDisplay"):
            getattr(self._x, name).argtypes = [ctypes.c_void_p]
        self._x.XStringToKeysym.restype = ctypes.c_ulong
        self._x.XStringToKeysym.argtypes = [ctypes.c_char_p]
        self._x.XKeysymToKeycode.restype = ctypes.c_ubyte
        self._x.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self._xtst.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 3
        self._xtst.XTestFakeMotionEvent.argtypes.append(ctypes.c_ulong)
        for name in ("XTestFakeButtonEvent", "XTestFakeKeyEvent"):
            fake = getattr(self._xtst, name)
            fake.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self._display = self._x.XOpenDisplay(None)

    def close(self) -> None:
        if self._display:
            self._x.XCloseDisplay(self._display)
            self._display = None

    def click(self, point: tuple[int, int], button: int = 1) -> None:
        """Move the pointer to ``point`` and click ``button`` (4 and 5: the wheel)."""
        if not self._display:
            xdotool("mousemove", *point, "click", button)
            return
        self._xtst.XTestFakeMotionEvent(self._display, -1, point[0], point[1], 0)
        self._xtst.XTestFakeButtonEvent(self._display, button, 1, 0)
        self._xtst.XTestFakeButtonEvent(self._display, button, 0, 0)
        self._x.XFlush(self._display)

    def key(self, name: str) -> None:
        """Press and release the key whose keysym is ``name`` ("x", "Return")."""
        code = 0
        if self._display:
            keysym = self._x.XStringToKeysym(name.encode())
            code = self._x.XKeysymToKeycode(self._display, keysym)
        if not code:
            xdotool("key", name)
            return
        self._xtst.XTestFakeKeyEvent(self._display, code, 1, 0)
        self._xtst.XTestFakeKeyEvent(self._display, code, 0, 0)
        self._x.XFlush(self._display)

    def type(self, text: str) -> None:
        """Type ``text`` (any characters: ``xdotool`` knows the keyboard's layout)."""
        xdotool("type", "--delay", 2, text)
