"""The chat window's side of ``tkchat watchdog``: start the watchdog process, send it a beat.

A frozen window cannot show its own freeze (the figures that would show it are painted by the
loop that is stuck), so a second process draws it: the watchdog (``tkchat/lab/watchdog.py``)
plots how long ago the last beat came. The beats are sent by an ``after`` loop on this
window's main thread, so when that thread is stuck, they stop — which is the whole point.

Why a pipe to the child's stdin, not a UDP datagram: the pipe needs no port, and it tells the
watchdog for free when this side is gone — closing the handle, a normal exit, a crash and a
``kill -9`` all close the write end, and the watchdog reads end-of-file and exits. With UDP
the watchdog would have to guess from silence and poll for its parent.

Sending never blocks and never raises into the window: the write end is non-blocking, a full
pipe (a watchdog too slow to read) drops that beat, and a closed one (the watchdog is gone)
stops the loop quietly. One beat is a short line, far under ``PIPE_BUF``, so the kernel writes
it whole or not at all. (``os.set_blocking`` works on pipes on Unix, and on Windows from
Python 3.12; before that, a beat on Windows could wait if the watchdog stopped reading.)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import tkinter as tk
from typing import IO

from tkchat.threads import own_thread
from tkchat.ui.scheduler import AfterScheduler

BEAT_MS = 50
SAY_BYTES = 3000  # a line besides the beats: under PIPE_BUF (4096 on Linux), so the kernel
# writes it whole or not at all, never between a beat's bytes
CLOSE_WAIT_S = 0.5  # how long close() lets the watchdog leave by itself before terminating it

log = logging.getLogger(__name__)


def watchdog_command(
    theme: str | None = None,
    language: str | None = None,
    *,
    room: str | None = None,
    window: str | None = None,
) -> list[str]:
    """The watchdog's command line: the same Python, and this tkchat, in a new process (in
    the chat window's ``theme``, "light" or "dark", and ``language``, if given); ``room``:
    the part of the chat window it may cover, ``window``: the chat window (Tk geometries,
    :func:`screen_geometry`)."""
    return [
        *(sys.executable, "-m", "tkchat", "watchdog"),
        *(["--theme", theme] if theme else []),
        *(["--lang", language] if language else []),
        *(["--room", room] if room else []),
        *(["--window", window] if window else []),
    ]


def screen_geometry(widget: tk.Misc) -> str:
    """Where ``widget`` is on the screen, as a Tk geometry ("WxH+X+Y")."""
    widget.update_idletasks()  # laid out: a window just built has its size
    width, height = widget.winfo_width(), widget.winfo_height()
    return f"{width}x{height}+{widget.winfo_rootx()}+{widget.winfo_rooty()}"


class HeartbeatSender:
    """Main thread only. Every ``interval_ms`` writes ``beat <n> <monotonic seconds>`` as one
    line to ``fd``, through ``scheduler`` (a frozen main loop sends nothing). Without a
    scheduler (another toolkit's loop), that loop's own timer calls :meth:`beat`."""

    TIMER = "watchdog-beat"

    def __init__(
        self, scheduler: AfterScheduler | None, fd: int, interval_ms: int = BEAT_MS
    ) -> None:
        self.scheduler = scheduler
        self.fd = fd
        self.interval_ms = interval_ms
        self.sent = 0
        self.dropped = 0  # beats the pipe had no room for (the watchdog is not reading)
        self.gone = False  # the pipe is closed at the other end: nothing more is sent
        self.running = False
        # Held while the pipe is written from another thread (say) and while it is closed:
        # a line must never go to a file descriptor number that was just reused.
        self.lock = threading.Lock()
        try:
            os.set_blocking(fd, False)
        except (AttributeError, OSError):  # Windows before 3.12: see the module's note
            log.warning("the watchdog pipe cannot be made non-blocking here")

    def start(self) -> None:
        self.running = True
        self._tick()

    def stop(self) -> None:
        self.running = False
        if self.scheduler is not None:
            self.scheduler.cancel(self.TIMER)

    def beat(self) -> bool:
        """Send one beat now; True if it was written. Never blocks, never raises."""
        if self.gone:
            return False
        line = f"beat {self.sent + 1} {time.monotonic():.6f}\n".encode()
        try:
            os.write(self.fd, line)
        except BlockingIOError:
            self.dropped += 1
            return False
        except OSError:  # BrokenPipeError, or the fd was closed: the watchdog is gone
            self.gone = True
            self.running = False
            return False
        self.sent += 1
        return True

    def say(self, kind: str, payload: dict[str, object] | None) -> bool:
        """Any thread: one line besides the beats, ``<kind> <json>`` (``<kind> -`` for
        None). The sampler sends the culprit of a freeze this way, from its own thread,
        while the main thread — which sends the beats — is stuck. Never blocks or raises."""
        body = "-" if payload is None else json.dumps(payload, ensure_ascii=False)
        if len(body.encode()) > SAY_BYTES:  # a line far under PIPE_BUF, whatever it says
            return False
        line = f"{kind} {body}".replace("\n", " ") + "\n"
        with self.lock:
            if self.gone:
                return False
            try:
                os.write(self.fd, line.encode())
            except BlockingIOError:
                return False
            except OSError:
                self.gone = True
                return False
        return True

    def _tick(self) -> None:
        self.beat()
        if self.running and self.scheduler is not None:
            self.scheduler.once(self.TIMER, self.interval_ms, self._tick)


class WatchdogHandle:
    """The running watchdog process and the beat loop feeding it. Main thread only."""

    def __init__(self, process: subprocess.Popen[bytes], sender: HeartbeatSender) -> None:
        self.process = process
        self.sender = sender
        self.reaper: threading.Thread | None = None  # close(wait=False)'s waiting thread

    @property
    def alive(self) -> bool:
        """The watchdog process runs and still takes beats (False once its window is closed)."""
        return self.process.poll() is None and not self.sender.gone

    def close(self, *, wait: bool = True) -> None:
        """Stop the beats and close the pipe: the watchdog reads end-of-file and exits. If it
        has not within ``CLOSE_WAIT_S``, it is terminated. ``wait`` False (a demo set up in
        front of the class): that wait is a thread's of its own (``reaper``), not the event
        loop's — a Python process takes about 100 ms to leave, a long task on the timeline
        the class was about to read."""
        self.sender.stop()
        with self.sender.lock:
            self.sender.gone = True
            if self.process.stdin is not None:
                with contextlib.suppress(OSError):  # already broken: the watchdog was gone
                    self.process.stdin.close()
        if wait:
            self._reap()
        else:
            self.reaper = own_thread(self._reap, name="tkchat-watchdog-reaper")
            self.reaper.start()

    def _reap(self) -> None:
        """Let the watchdog leave by itself for ``CLOSE_WAIT_S``, then terminate it."""
        try:
            self.process.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.terminate()


def open_watchdog(
    scheduler: AfterScheduler,
    *,
    command: list[str] | None = None,
    stdout: int | IO[bytes] | None = None,
    interval_ms: int = BEAT_MS,
    theme: str | None = None,
    language: str | None = None,
    room: str | None = None,
    window: str | None = None,
) -> WatchdogHandle:
    """Start the watchdog window (``command``: :func:`watchdog_command` unless given) and begin
    beating. Main thread. Raises OSError if the process cannot be started."""
    process = subprocess.Popen(
        command or watchdog_command(theme, language, room=room, window=window),
        stdin=subprocess.PIPE,
        stdout=stdout,
        close_fds=True,
    )
    assert process.stdin is not None  # stdin=PIPE
    sender = HeartbeatSender(scheduler, process.stdin.fileno(), interval_ms)
    sender.start()
    return WatchdogHandle(process, sender)
