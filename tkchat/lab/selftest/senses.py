"""The grader's own senses, outside the window's process: the input it sends and the
heartbeat it watches.

**Input.** Real X events: ``xdotool`` sends its events through the XTest extension; a helper
process that keeps one connection to the display and calls XTest itself
(``python -m tkchat.lab.selftest.senses``) sends the very same events without starting a
process for each click — on this 2-core machine, busy, that was 30-80 ms a click: most of a
question's time, and noise on the moment each event was sent. The helper answers each event
with the moment it sent it. It is a process of its own because Xlib ends the process whose
connection breaks: if it goes, the grader goes on, each event then an ``xdotool`` process.

**The heartbeat.** The window's main loop writes a beat to a pipe every 20 ms (the
watchdog's beat: :class:`tkchat.ui.teaching.watchdog_link.HeartbeatSender`,
``beat <n> <seconds>``); a thread here notes when each arrived. A main loop stuck in the
pipeline stops beating, whatever the window's process says about itself: that is the one
figure measured outside it. A silence counts only when the beats' own times show it too: a
beat sent on time but read late — this process was slow to read, the machine busy — proves
nothing about the window (a window that forges those times is not caught; the self-test is
not a sandbox).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import time
from typing import IO, Any

from tkchat.threads import own_thread

STUCK_S = 1.0  # a heartbeat silent this long: the main loop is not coming back by itself
SILENT_S = 0.25  # the watchdog's "frozen": five beats missed


class Heartbeat:
    """When each beat arrived, and when the window said it sent it (the reader's thread
    appends; any thread reads)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.beats: list[tuple[float, float]] = []  # (arrived here, sent by the window)

    def start(self) -> None:
        own_thread(self._read, name="tkchat-grader-beats").start()

    def _read(self) -> None:
        pending = b""
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                return
            now = time.perf_counter()
            *lines, pending = (pending + data).split(b"\n")
            pending = pending[-256:]  # a beat is far shorter: anything longer is not one
            for line in lines:
                words = line.split()
                if len(words) == 3 and words[0] == b"beat":
                    try:
                        self.beats.append((now, float(words[2])))
                    except ValueError:
                        continue

    def silence(self) -> float:
        """Seconds since the last beat arrived (infinite before the first)."""
        return time.perf_counter() - self.beats[-1][0] if self.beats else float("inf")

    def stuck(self) -> bool:
        return self.silence() > STUCK_S

    def gaps(self) -> list[tuple[float, float]]:
        """Every silence of :data:`SILENT_S` or more between two beats, as the window sent
        them (``time.monotonic`` and ``perf_counter`` are one clock on Linux)."""
        beats = self.beats[:]
        return [
            (sent, later)
            for (arrived, sent), (arrived_next, later) in zip(beats, beats[1:], strict=False)
            if arrived_next - arrived >= SILENT_S and later - sent >= SILENT_S
        ]


class OwnStalls:
    """The grader's own lateness: a thread that sleeps 10 ms at a time and notes when it woke
    far too late. A silence seen while this process itself stood still proves nothing."""

    def __init__(self, late_s: float = 0.1) -> None:
        self.late_s = late_s
        self.stalls: list[tuple[float, float]] = []
        self.running = True

    def start(self) -> None:
        own_thread(self._run, name="tkchat-grader-stalls").start()

    def _run(self) -> None:
        before = time.perf_counter()
        while self.running:
            time.sleep(0.01)
            now = time.perf_counter()
            if now - before > self.late_s:
                self.stalls.append((before, now))
            before = now


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
                [sys.executable, "-m", "tkchat.lab.selftest.senses"],
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


def can_click() -> bool:
    """Can :meth:`XInput.click` send real clicks here: through XTest (libX11 and libXtst,
    as the helper loads them) or, failing that, with ``xdotool``? Any thread."""
    return shutil.which("xdotool") is not None or _xtest_libraries() is not None


def _xtest_libraries() -> tuple[str, str] | None:
    """Where libX11 and libXtst are (None unless both are found)."""
    x11, xtst = ctypes.util.find_library("X11"), ctypes.util.find_library("Xtst")
    return (x11, xtst) if x11 and xtst else None


def _xtest() -> tuple[Any, Any, Any]:
    """libX11, libXtst and a connection to ``$DISPLAY`` (raises OSError without them)."""
    libraries = _xtest_libraries()
    if libraries is None:
        raise OSError("no libX11 or libXtst")
    x, test = ctypes.CDLL(libraries[0]), ctypes.CDLL(libraries[1])
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
