"""The parent's handle on one download: starts the child process, reads its events on a thread,
and turns them into progress (bytes, speed, time left) and one final result.

Tk-free. :meth:`DownloadJob.poll` is what the owner calls, often (the window every 100 ms
through its ``AfterScheduler``, the command line in its loop); it never blocks. The reader
thread only puts parsed lines on a ``queue.Queue``. Cancel terminates the child: the transfer
stops within milliseconds whatever it is doing (even blocked in a socket read), and the
unfinished file stays for the next attempt to continue. A transfer that brings no byte for
``stall_s`` seconds is ended the same way and reported as stalled. Time comes from ``clock``
(``time.monotonic`` unless a test passes another, to move past the stall watch at will).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tkchat.models.catalogue import CatalogueEntry
from tkchat.models.download_child import RATE_WINDOW_S
from tkchat.threads import own_thread

STALL_S = 30.0  # no byte for this long: the transfer is stalled
# Before its first byte the child starts an interpreter, imports huggingface_hub and asks the
# hub about the file: on a busy 2-core laptop that alone took over 1.5 s (a 1.5 s stall watch
# ended a healthy download at "0 B kept"). Until a byte arrives the watch allows this much.
START_S = 15.0
TERMINATE_GRACE_S = 1.0  # after SIGTERM, before SIGKILL
SPEED_WINDOW_S = 3.0  # the speed shown is the average over this many seconds


@dataclass
class Progress:
    """What the window shows while a download runs. ``phase``: "starting" (the child asks the
    hub about the file), "download" or "verify" (hashing the finished file)."""

    phase: str = "starting"
    done: int = 0
    total: int | None = None
    resumed_from: int = 0  # bytes that were already on disk when this attempt began
    speed: float | None = None  # bytes per second, None until measurable
    seconds_left: float | None = None


@dataclass(frozen=True)
class Finished:
    path: str  # the readable path in the Hugging Face cache
    already: bool  # it was there: nothing was downloaded


@dataclass(frozen=True)
class Failed:
    """``kind`` names the sentence (``catalogue.error.<kind>``); ``fields`` fill it in."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)


Result = Finished | Failed


class DownloadJob:
    """One download of ``entry`` from ``endpoint`` into ``cache``. Use from one thread."""

    def __init__(
        self,
        entry: CatalogueEntry,
        *,
        endpoint: str,
        cache: Path,
        stall_s: float = STALL_S,
        rate_window_s: float = RATE_WINDOW_S,
        python: str = sys.executable,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.entry = entry
        self.endpoint = endpoint
        self.cache = cache
        self.stall_s = stall_s
        self.rate_window_s = rate_window_s
        self.python = python
        self._clock = clock
        self.progress = Progress()
        self.result: Result | None = None
        self.cancel_ms: float | None = None  # from cancel() to the child's exit
        self.sha256: str | None = entry.sha256
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._last_activity = 0.0
        self._samples: deque[tuple[float, int]] = deque()

    @property
    def running(self) -> bool:
        return self._process is not None and self.result is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        """The child's command line."""
        entry = self.entry
        command = [
            self.python,
            "-m",
            "tkchat.models.download_child",
            "--repo",
            entry.repo,
            "--file",
            entry.file,
            "--revision",
            entry.revision,
            "--endpoint",
            self.endpoint,
            "--cache",
            str(self.cache),
            # The child gives up on a silent socket later than the watchdog here, which
            # decides (and says) that the transfer stalled.
            "--read-timeout",
            str(max(2 * self.stall_s, 5.0)),
            "--rate-window",
            str(self.rate_window_s),
        ]
        if entry.sha256:
            command += ["--sha256", entry.sha256]
        if entry.size:
            command += ["--size", str(entry.size)]
        return command

    def start(self) -> None:
        env = {
            **os.environ,
            "HF_ENDPOINT": self.endpoint,
            # huggingface_hub would otherwise fetch a telemetry list from the hub before the
            # first request (waiting up to 3 s for it when the network is down).
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONUNBUFFERED": "1",
        }
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            env=env,
        )
        self._last_activity = self._clock()
        assert self._process.stdout is not None
        own_thread(
            _read_lines,
            args=(self._process, self._process.stdout, self._lines),
            name="tkchat-download-reader",
        ).start()

    def poll(self) -> Result | None:
        """Take in what the child said; returns the result once, when it arrives (then
        :attr:`result` keeps it). Never blocks."""
        if self.result is not None or self._process is None:
            return None
        now = self._clock()
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:  # the child's stdout closed: it ended
                return self._ended()
            final = self._take(line, now)
            if final is not None:
                # Not waiting for the child here: its interpreter may take a tenth of a second
                # to shut down, a freeze on the main thread. The reader thread reaps it.
                return final
        allowed = self._allowed_s()
        if self.progress.phase != "verify" and now - self._last_activity > allowed:
            self._stop()
            return self._finish(
                Failed("stalled", {"seconds": round(allowed), "done": self.progress.done})
            )
        return None

    def cancel(self) -> None:
        """Stop the download now (the unfinished file is kept). Records :attr:`cancel_ms`."""
        if not self.running:
            return
        started = time.perf_counter()
        self._stop()
        self.cancel_ms = (time.perf_counter() - started) * 1000
        self._finish(Failed("cancelled", {"done": self.progress.done}))

    # -- inside --------------------------------------------------------------------------------

    def _allowed_s(self) -> float:
        """How long the child may stay silent: ``stall_s`` once bytes flow, more before."""
        started = self.progress.done > self.progress.resumed_from
        return self.stall_s if started else max(self.stall_s, START_S)

    def _take(self, line: dict[str, Any], now: float) -> Result | None:
        """Take in one event; the result when it is the final one."""
        event = line.get("event")
        progress = self.progress
        if event == "meta":
            self._last_activity = now
            progress.total = _int(line.get("size"))
            progress.done = progress.resumed_from = _int(line.get("have")) or 0
            self.sha256 = str(line.get("sha256") or "") or self.sha256
            progress.phase = "download"
            self._samples.clear()
        elif event == "progress":
            done = _int(line.get("done")) or 0
            phase = str(line.get("phase") or "download")
            if phase != progress.phase or done != progress.done:
                self._last_activity = now  # a byte arrived (or hashing moved on)
            if phase != progress.phase:
                self._samples.clear()
            progress.phase = phase
            progress.done = done
            progress.total = _int(line.get("total")) or progress.total
            self._measure(now)
        elif event == "done":
            return self._finish(Finished(str(line.get("path")), bool(line.get("already"))))
        elif event == "error":
            fields = {k: v for k, v in line.items() if k not in ("event", "kind")}
            return self._finish(Failed(str(line.get("kind") or "failed"), fields))
        return None

    def _measure(self, now: float) -> None:
        """Speed over the last few seconds, and the time left at that speed."""
        progress = self.progress
        self._samples.append((now, progress.done))
        while len(self._samples) > 2 and now - self._samples[0][0] > SPEED_WINDOW_S:
            self._samples.popleft()
        first_time, first_done = self._samples[0]
        if now - first_time < 0.5:
            return
        progress.speed = max(progress.done - first_done, 0) / (now - first_time)
        if progress.total and progress.speed > 0:
            progress.seconds_left = max(progress.total - progress.done, 0) / progress.speed
        else:
            progress.seconds_left = None

    def _ended(self) -> Result:
        """The child ended without a final event: killed from outside, or crashed. (The
        reader thread has reaped it: its exit code is known.)"""
        assert self._process is not None
        code = self._process.poll()
        return self._finish(Failed("crashed", {"code": code, "done": self.progress.done}))

    def _stop(self) -> None:
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _finish(self, result: Result) -> Result:
        if self.result is None:
            self.result = result
        return self.result


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read_lines(
    process: subprocess.Popen[str], stream: IO[str], lines: queue.Queue[dict[str, Any] | None]
) -> None:
    """The reader thread: one parsed event per line; once the child's output ends, it waits
    for the child to exit (so no zombie is left) and puts None."""
    try:
        for raw in stream:
            try:
                parsed = json.loads(raw)
            except ValueError:
                continue  # not ours (a library printing): ignored
            if isinstance(parsed, dict):
                lines.put(parsed)
    except (OSError, ValueError):
        pass
    finally:
        process.wait()
        lines.put(None)
