"""The grader's witness through the X server: how long the window's main loop took to
answer, seen from outside its process (issue 35).

Everything else the grade reads about the window's main loop — its lag probe, its heartbeat,
the times its handlers ran — is written by the window's own process, where the student's code
runs too and can write to the same pipes. This witness is not: every :data:`PING_S` it sends
the window's top-level X window a ``_NET_WM_PING`` (the window managers' "are you alive?",
which Tk answers by itself, from its main loop: a loop stuck in a call cannot answer), and
notes when the answer came. With each ping goes an echo to the root window, which only the
X server and this witness handle: a ping is late on the window's account only by what its
answer took beyond its echo's (a busy X server, or this process read late, delays both).
Forging the answers means answering X events for the window from another connection: X
programming, not a line written to a pipe.

Where: a helper process of its own (``python -m tkchat.lab.xwitness``), one line a ping on
its stdout, since Xlib ends the process whose connection breaks (as the input helper in
:mod:`tkchat.lab.selftest.senses`). It notes the windows that exist before the window's
process starts, and watches only a window that was not among them. Its two threads (sender,
reader) each have an X connection of their own; the grader's side (:class:`XWitness`) reads
its lines on a thread of the grader's process.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tkchat.threads import own_thread

PING_S = 0.05
# The witness's own echoes, read this far apart or more: it stood still itself meanwhile.
WITNESS_GAP_S = 4 * PING_S
READY_S = 10.0  # the helper's start: libX11 loaded, the windows noted
CLIENT_MESSAGE = 33
SUBSTRUCTURE_NOTIFY = 1 << 19
ECHO = 0x7E  # l[2] of an echo (a ping's l[2] is the window pinged)
STOP = -1  # the echo's number that ends the reader


@dataclass
class OutsideSeen:
    """What the X server showed of the window: ``status`` is "watched", "unavailable" (no
    libX11 or no helper: nothing to cross-check) or "refused" (the window the reports named
    existed before the window's process, or is no window); every ping's echo and answer
    times (``perf_counter``) by number."""

    status: str
    echoes: dict[int, float] = field(default_factory=dict)
    answers: dict[int, float] = field(default_factory=dict)

    def silences(self, at_least_s: float) -> list[tuple[float, float]]:
        """Each time the window took ``at_least_s`` or more to answer, beyond its echo: from
        the echo to the answer, overlapping ones merged. A ping never answered (the run
        ended first) makes none: an unanswered end proves nothing on its own."""
        spans = sorted(
            (echo, self.answers[n])
            for n, echo in self.echoes.items()
            if n in self.answers and self.answers[n] - echo >= at_least_s
        )
        merged: list[tuple[float, float]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return [span for span in merged if self.watched_throughout(*span)]

    def watched_throughout(self, start: float, end: float) -> bool:
        """Whether this witness read its echoes all along ``start`` … ``end`` (none more
        than :data:`WITNESS_GAP_S` apart). A witness that stood still itself — its process
        not given a core on a loaded machine, between reading a ping's echo and its answer —
        read the answer late, and the window was not: such a silence proves nothing."""
        read = sorted(at for at in self.echoes.values() if start <= at <= end)
        if not read:
            return False
        marks = [start, *read, end]
        return all(b - a <= WITNESS_GAP_S for a, b in zip(marks, marks[1:], strict=False))


class XWitness:
    """The grader's side (its main thread calls; a thread of its own reads the helper)."""

    def __init__(self) -> None:
        self.seen = OutsideSeen("unavailable")
        self._helper: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        """Before the window's process starts: the windows that exist now are not its."""
        try:
            self._helper = subprocess.Popen(
                [sys.executable, "-m", "tkchat.lab.xwitness"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                env=_same_tkchat(),
            )
        except OSError:
            return
        self._reader = own_thread(self._read, name="tkchat-grader-x")
        self._reader.start()
        self._ready.wait(READY_S)

    def watch(self, window: int | None) -> None:
        """Ping the top-level window that holds X window ``window`` (the window's report)."""
        self._say(f"watch {window or 0}")

    def stop(self) -> OutsideSeen:
        helper, self._helper = self._helper, None
        if helper is not None:
            self._say_to(helper, "stop")
            with contextlib.suppress(OSError):
                helper.stdin.close()  # type: ignore[union-attr]
            try:
                helper.wait(5)
            except subprocess.TimeoutExpired:
                helper.kill()
                helper.wait(5)
        if self._reader is not None:
            self._reader.join(5)
        return self.seen

    def _say(self, line: str) -> None:
        if self._helper is not None:
            self._say_to(self._helper, line)

    @staticmethod
    def _say_to(helper: subprocess.Popen[str], line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert helper.stdin is not None
            helper.stdin.write(line + "\n")
            helper.stdin.flush()

    def _read(self) -> None:
        helper = self._helper
        assert helper is not None and helper.stdout is not None
        for line in helper.stdout:
            word, *rest = line.split() or [""]
            with contextlib.suppress(ValueError, IndexError):
                if word == "echo":
                    self.seen.echoes[int(rest[0])] = float(rest[1])
                elif word == "answer":
                    self.seen.answers[int(rest[0])] = float(rest[1])
                elif word == "noted":
                    self._ready.set()
                elif word in ("watching", "refused"):
                    self.seen.status = "watched" if word == "watching" else "refused"
        self._ready.set()


def _same_tkchat() -> dict[str, str]:
    """This environment, with this process's tkchat first on the helper's path."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


# -- the helper process -------------------------------------------------------------------------


class _ClientMessage(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("message_type", ctypes.c_ulong),
        ("format", ctypes.c_int),
        ("l", ctypes.c_long * 5),
    ]


class _Event(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("xclient", _ClientMessage), ("pad", ctypes.c_long * 24)]


_ERRORS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def _x11() -> Any:
    """libX11 with the calls used here declared (raises OSError without it)."""
    found = ctypes.util.find_library("X11")
    if not found:
        raise OSError("no libX11")
    x = ctypes.CDLL(found)
    d, w, p = ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER
    x.XOpenDisplay.restype, x.XOpenDisplay.argtypes = d, [ctypes.c_char_p]
    x.XDefaultRootWindow.restype, x.XDefaultRootWindow.argtypes = w, [d]
    x.XInternAtom.restype, x.XInternAtom.argtypes = w, [d, ctypes.c_char_p, ctypes.c_int]
    x.XSelectInput.argtypes = [d, w, ctypes.c_long]
    x.XSendEvent.argtypes = [d, w, ctypes.c_int, ctypes.c_long, p(_Event)]
    x.XNextEvent.argtypes = [d, p(_Event)]
    x.XFlush.argtypes = [d]
    x.XSetErrorHandler.argtypes = [_ERRORS]
    x.XSync.argtypes = [d, ctypes.c_int]
    x.XQueryTree.argtypes = [d, w, p(w), p(w), p(p(w)), p(ctypes.c_uint)]
    x.XFree.argtypes = [d]
    x.XCloseDisplay.argtypes = [d]
    return x


def _children(x: Any, display: int, window: int) -> tuple[int, list[int]] | None:
    """A window's parent and children (None: it is no window)."""
    root, parent = ctypes.c_ulong(), ctypes.c_ulong()
    kids, count = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
    args = (ctypes.byref(root), ctypes.byref(parent), ctypes.byref(kids), ctypes.byref(count))
    if not x.XQueryTree(display, window, *args):
        return None
    found = [kids[i] for i in range(count.value)]
    if kids:
        x.XFree(kids)
    return parent.value, found


def _every_window(x: Any, display: int, root: int) -> set[int]:
    found, todo = set(), [root]
    while todo:
        window = todo.pop()
        found.add(window)
        tree = _children(x, display, window)
        todo += tree[1] if tree is not None else []
    return found


class _Helper:
    """The helper's state: its X connections, and the window watched."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.x = x = _x11()
        x.XInitThreads()
        self._ignore = _ERRORS(lambda _display, _error: 0)  # a window gone: not our end
        x.XSetErrorHandler(self._ignore)
        self.sender, self.listener = x.XOpenDisplay(None), x.XOpenDisplay(None)
        if not (self.sender and self.listener):
            raise OSError("cannot open the display")
        self.root = x.XDefaultRootWindow(self.sender)
        self.protocols = x.XInternAtom(self.sender, b"WM_PROTOCOLS", 0)
        self.ping = x.XInternAtom(self.sender, b"_NET_WM_PING", 0)
        self.known = _every_window(x, self.sender, self.root)
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def say(self, line: str) -> None:
        with self._lock:
            print(line, file=self.out, flush=True)

    def top_level(self, window: int) -> int | None:
        """The top-level window (a child of the root, or of a window manager's frame) that
        holds ``window``: the one Tk answers pings for. None if any window on the way up was
        there before the window's process started, or ``window`` is none."""
        chain = []
        while window and window != self.root:
            if window in self.known:
                return None
            tree = _children(self.x, self.sender, window)
            if tree is None:
                return None
            chain.append(window)
            window = tree[0]
        return chain[-1] if chain else None

    def send(self, to: int, mask: int, words: tuple[int, int, int]) -> None:
        event = _Event()
        message = event.xclient
        message.type, message.window, message.format = CLIENT_MESSAGE, to, 32
        message.message_type = self.protocols
        message.l[0], message.l[1], message.l[2] = words
        self.x.XSendEvent(self.sender, to, 0, mask, ctypes.byref(event))

    def pinging(self, window: int) -> None:
        """The sender's thread: a ping and its echo every :data:`PING_S`."""
        number = 0
        while not self.stopping.wait(PING_S):
            number += 1
            self.send(self.root, SUBSTRUCTURE_NOTIFY, (0, number, ECHO))
            self.send(window, 0, (self.ping, number, window))
            self.x.XFlush(self.sender)
        self.send(self.root, SUBSTRUCTURE_NOTIFY, (0, STOP, ECHO))
        self.x.XFlush(self.sender)

    def listening(self, window: int) -> None:
        """The reader's thread: the echoes, and the window's answers (sent to the root)."""
        event = _Event()
        while True:
            self.x.XNextEvent(self.listener, ctypes.byref(event))
            now = time.perf_counter()
            message = event.xclient
            if event.type != CLIENT_MESSAGE or message.message_type != self.protocols:
                continue
            words = (message.l[0], message.l[1], message.l[2])
            if words[0] == 0 and words[2] == ECHO:
                if words[1] == STOP:
                    return
                self.say(f"echo {words[1]} {now:.6f}")
            elif words[0] == self.ping and words[2] == window:
                self.say(f"answer {words[1]} {now:.6f}")


def serve(lines: IO[str], out: IO[str]) -> None:
    """The helper: note the windows, then ``watch ID`` pings the top-level window holding X
    window ID until ``stop`` (or the end of stdin)."""
    helper = _Helper(out)
    helper.say("noted")
    window = None
    threads: list[threading.Thread] = []
    for line in lines:
        word, *rest = line.split() or [""]
        if word == "watch" and window is None and rest:
            window = helper.top_level(int(rest[0]))
            if window is None:
                helper.say("refused")
                continue
            helper.x.XSelectInput(helper.listener, helper.root, SUBSTRUCTURE_NOTIFY)
            helper.x.XSync(helper.listener, 0)  # selected before the first ping goes
            threads = [
                threading.Thread(target=helper.listening, args=(window,), daemon=True),
                threading.Thread(target=helper.pinging, args=(window,), daemon=True),
            ]
            for thread in threads:
                thread.start()
            helper.say("watching")
        elif word == "stop":
            break
    helper.stopping.set()
    for thread in threads:
        thread.join(5)


if __name__ == "__main__":
    try:
        serve(sys.stdin, sys.stdout)
    except OSError as exc:
        print(f"unavailable {exc}", flush=True)
