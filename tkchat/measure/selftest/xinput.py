"""Real X input events for the driver: XTest in a helper process, else ``xdotool``.

``xdotool`` sends its events through the XTest extension; a helper process that keeps one
connection to the display and calls XTest itself (``python -m tkchat.measure.selftest.xinput``)
sends the very same events without starting a process for each click — on this 2-core
machine, busy, that was 30-80 ms a click: most of a question's time, and noise on the moment
each event was sent. The helper answers each event with the moment it sent it. It is a
process of its own because Xlib ends the process whose connection breaks: if it goes, the
grader goes on, each event then an ``xdotool`` process.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import subprocess
import sys
import time
from typing import IO, Any

Point = tuple[int, int]


def xdotool(*args: object) -> None:
    subprocess.run(
        ["xdotool", *map(str, args)],
        check=True,
        timeout=30,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class XInput:
    """The grader's side: clicks, wheel steps and keys on ``$DISPLAY``; each returns when it
    was sent (``perf_counter``). One thread (the driver's)."""

    def __init__(self) -> None:
        self._helper: subprocess.Popen[str] | None = None
        try:
            self._helper = subprocess.Popen(
                [sys.executable, "-m", "tkchat.measure.selftest.xinput"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        except OSError:
            self._helper = None

    def _ask(self, *words: object) -> float | None:
        helper = self._helper
        if helper is None or helper.stdin is None or helper.stdout is None:
            return None
        try:
            helper.stdin.write(" ".join(map(str, words)) + "\n")
            helper.stdin.flush()
            answer = helper.stdout.readline().split()
            if answer and answer[0] == "sent":
                return float(answer[1])
        except (OSError, ValueError):
            pass
        self.close()  # no X, no XTest, or the connection broke: xdotool from now on
        return None

    def click(self, point: Point, button: int = 1) -> float:
        """Move the pointer to ``point`` and click ``button`` (4 and 5: the wheel)."""
        sent = self._ask("click", point[0], point[1], button)
        if sent is None:
            sent = time.perf_counter()
            xdotool("mousemove", *point, "click", button)
        return sent

    def key(self, name: str) -> float:
        """Press and release the key whose keysym is ``name`` ("x", "Return")."""
        sent = self._ask("key", name)
        if sent is None:
            sent = time.perf_counter()
            xdotool("key", name)
        return sent

    def type(self, text: str) -> None:
        """Type ``text`` (any characters: ``xdotool`` knows the keyboard's layout)."""
        xdotool("type", "--delay", 2, text)

    def close(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            if helper.stdin is not None:
                with contextlib.suppress(OSError):
                    helper.stdin.close()
            try:
                helper.wait(5)
            except subprocess.TimeoutExpired:
                helper.kill()


def _xtest() -> tuple[Any, Any, Any]:
    """libX11, libXtst and a connection to ``$DISPLAY`` (raises OSError without them)."""
    x11, xtst = ctypes.util.find_library("X11"), ctypes.util.find_library("Xtst")
    if not (x11 and xtst):
        raise OSError("no libX11 or libXtst")
    x, test = ctypes.CDLL(x11), ctypes.CDLL(xtst)
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XFlush.argtypes = [ctypes.c_void_p]
    x.XStringToKeysym.restype = ctypes.c_ulong
    x.XStringToKeysym.argtypes = [ctypes.c_char_p]
    x.XKeysymToKeycode.restype = ctypes.c_ubyte
    x.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    test.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, *[ctypes.c_int] * 3, ctypes.c_ulong]
    for name in ("XTestFakeButtonEvent", "XTestFakeKeyEvent"):
        fake = getattr(test, name)
        fake.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
    display = x.XOpenDisplay(None)
    if not display:
        raise OSError("cannot open the display")
    return x, test, display


def serve(lines: IO[str], out: IO[str]) -> None:
    """The helper: one event a line, each answered with ``sent <perf_counter>``."""
    x, test, display = _xtest()
    for line in lines:
        word, *rest = line.split() or [""]
        if word == "click":
            px, py, button = map(int, rest)
            test.XTestFakeMotionEvent(display, -1, px, py, 0)
            test.XTestFakeButtonEvent(display, button, 1, 0)
            test.XTestFakeButtonEvent(display, button, 0, 0)
        elif word == "key":
            code = x.XKeysymToKeycode(display, x.XStringToKeysym(rest[0].encode()))
            if not code:
                print("unknown", file=out, flush=True)
                continue
            test.XTestFakeKeyEvent(display, code, 1, 0)
            test.XTestFakeKeyEvent(display, code, 0, 0)
        else:
            continue
        sent = time.perf_counter()
        x.XFlush(display)
        print(f"sent {sent:.6f}", file=out, flush=True)


if __name__ == "__main__":
    try:
        serve(sys.stdin, sys.stdout)
    except OSError as exc:
        print(f"unavailable {exc}", flush=True)
