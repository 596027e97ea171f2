"""The server's side of ``python -m tests.tools.hostile``: ``tkchat serve`` under sockets that never
finish their headers, as the finding was reported (issue 15).

``tkchat serve`` (scripted backend) runs as a user runs it, in a process of its own whose
open-file limit is :data:`FILE_LIMIT`; :data:`HALF_OPEN` sockets then start a request and never
finish its headers, and a client asks ``GET /health`` :data:`HEALTH_REQUESTS` times. The same
requests with no half-open socket, just before, are the baseline of the same run. Reported:
the round trips, the server's open descriptors (``/proc``), and whether it logged an error.

The bounds live here, beside the figures: :func:`serve_verdicts` holds a run to them, and the
sentence in docs/security.md (:func:`readme_row`) quotes them. No Tk; any thread (the bench
calls it from its script on the main thread, while nothing of the window is being measured).
"""

from __future__ import annotations

import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from http.client import HTTPConnection

from tkchat.stats import median, rounded

HALF_OPEN = 400  # sockets that never finish their headers (the report's figure)
FILE_LIMIT = 256  # the server's open-file limit (RLIMIT_NOFILE), as in the report
HEALTH_REQUESTS = 20
# /health's slowest round trip under attack (before: it timed out). Wide: on a loaded shared
# machine one of 20 round trips took 80 ms where the median stayed under 1 ms.
HEALTH_BOUND_MS = 250.0
MAX_DESCRIPTORS = FILE_LIMIT // 2  # the server keeps at most half its limit (the socket cap)
SLOWDOWN_BOUND = 10.0  # /health's median under attack over its median without, at most


@dataclass
class HalfOpenFigures:
    half_open: int
    idle_p50_ms: float | None  # /health with no half-open socket (same run)
    idle_max_ms: float | None
    p50_ms: float | None  # /health with HALF_OPEN sockets waiting
    max_ms: float | None
    descriptors: int | None  # the server's open descriptors, under attack
    logged: list[str]  # error lines the server wrote (tracebacks, ERROR)

    @property
    def slowdown(self) -> float | None:
        if self.p50_ms is None or self.idle_p50_ms is None:
            return None
        return self.p50_ms / max(self.idle_p50_ms, 0.01)


def measure_half_open(half_open: int = HALF_OPEN) -> HalfOpenFigures:
    """Run ``tkchat serve`` under ``half_open`` sockets that never finish their headers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tkchat", "serve", "--backend", "scripted", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_files,
    )
    idle: list[float] = []
    attacked: list[float] = []
    descriptors: int | None = None
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if match is None:
            raise RuntimeError(f"tkchat serve did not start: {line!r}")
        port = int(match.group(1))
        idle = _health_times(port)
        with ExitStack() as stack:
            for _ in range(half_open):
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), 10))
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            time.sleep(0.5)  # the server accepts them all (and closes what is over its cap)
            attacked = _health_times(port)
            descriptors = len(os.listdir(f"/proc/{process.pid}/fd"))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
    logged = [line for line in err.splitlines() if "Traceback" in line or "ERROR" in line]
    return HalfOpenFigures(
        half_open,
        rounded(median(idle), 2),
        rounded(max(idle, default=None), 2),
        rounded(median(attacked), 2),
        rounded(max(attacked, default=None), 2),
        descriptors,
        logged,
    )


def _limit_files() -> None:
    """In the server's process, before exec."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


def _health_times(port: int) -> list[float]:
    """``GET /health`` round trips in ms, each on a new connection (as a new client's)."""
    times = []
    for _ in range(HEALTH_REQUESTS):
        started = time.perf_counter()
        conn = HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/health")
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"/health answered {response.status}")
        finally:
            conn.close()
        times.append((time.perf_counter() - started) * 1000)
    return times


def serve_verdicts(figures: HalfOpenFigures) -> list[tuple[str, bool, str]]:
    worst = figures.max_ms or 0.0
    slowdown = figures.slowdown or 0.0
    fds = figures.descriptors or 0
    return [
        (
            f"half-open: /health max < {HEALTH_BOUND_MS:g} ms under {figures.half_open} sockets",
            worst < HEALTH_BOUND_MS,
            f"{worst} ms",
        ),
        (
            f"half-open: /health median ≤ {SLOWDOWN_BOUND:g} × without them",
            slowdown <= SLOWDOWN_BOUND,
            f"{figures.p50_ms} / {figures.idle_p50_ms} ms = {slowdown:.1f} ×",
        ),
        (
            f"half-open: at most {MAX_DESCRIPTORS} descriptors",
            0 < fds <= MAX_DESCRIPTORS,
            f"{fds}",
        ),
        ("half-open: nothing logged", not figures.logged, f"{len(figures.logged)} lines"),
    ]


def readme_row(figures: HalfOpenFigures) -> str:
    """docs/security.md's sentence, written from one run."""
    return (
        f"{figures.half_open} half-open sockets under an open-file limit of {FILE_LIMIT} leave "
        f"the server at {figures.descriptors} descriptors (at most {MAX_DESCRIPTORS}), "
        f"`/health` answering in {figures.p50_ms} ms (median of {HEALTH_REQUESTS}; "
        f"{figures.idle_p50_ms} ms without them), {figures.max_ms} ms at worst "
        f"(< {HEALTH_BOUND_MS:g}), {len(figures.logged)} lines logged"
    )
