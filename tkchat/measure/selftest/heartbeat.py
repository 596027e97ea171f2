"""The window's heartbeat, seen from the grader's process — and the grader's own stalls.

The window's main loop writes a beat to a pipe every 20 ms (the watchdog's beat:
:class:`tkchat.ui.teaching.watchdog_link.HeartbeatSender`, ``beat <n> <seconds>``); a thread
here notes when each arrived. A main loop stuck in the pipeline stops beating, whatever the
window's process says about itself: that is the one figure measured outside it.

A silence counts only when the beats' own times show it too. A beat sent on time but read
late — this process was slow to read, the machine busy — proves nothing about the window (a
window that forges those times is not caught; the self-test is not a sandbox).
"""

from __future__ import annotations

import os
import time

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
        own_thread(self._read, name="tkchat-selftest-beats").start()

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
        own_thread(self._run, name="tkchat-selftest-stalls").start()

    def _run(self) -> None:
        before = time.perf_counter()
        while self.running:
            time.sleep(0.01)
            now = time.perf_counter()
            if now - before > self.late_s:
                self.stalls.append((before, now))
            before = now
