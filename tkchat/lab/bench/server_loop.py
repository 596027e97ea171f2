"""``tkchat bench --serve-loop``: the server's event loop while one answer streams.

The same backend is served twice in one run, by ``tkchat serve`` (the fixed bridge) and by
``tkchat serve --broken`` (the article's version, :mod:`tkchat.antipatterns.blocking_server`).
Each time one client streams an answer from ``POST /chat`` while two things are measured:

- the **loop lag**: a coroutine on the server's own event loop sleeps ``PROBE_S`` again and
  again and notes how late it wakes (the asyncio twin of the window's lag probe);
- a **second client**: ``GET /health`` in a loop on its own connection, each round trip timed.

Both servers run in this process under uvicorn, on a thread with its own event loop, so the
probe can be scheduled onto that loop. Figures are compared as ratios within the run.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.client import HTTPConnection
from typing import Any

from tkchat.antipatterns.blocking_server import BlockingChatServer
from tkchat.course.lessons import default_language
from tkchat.generate.backend import Backend
from tkchat.i18n.lesson_panel import STRINGS
from tkchat.lab.bench.figures import Check
from tkchat.serve.server import ChatServer, create_app
from tkchat.stats import median, percentile, rounded
from tkchat.threads import own_thread

PROBE_S = 0.005  # how often the loop probe asks for a turn
HEALTH_GAP_S = 0.02  # the second client's pause between two /health requests
PROMPT = "Tell a short story about a lighthouse keeper."
SEED = 7


@dataclass(frozen=True)
class ServerLoopFigures:
    """One server, one streamed answer: how its event loop and a second client fared."""

    server: str  # "fixed" or "broken"
    answer_s: float  # request sent → the stream's end, at the streaming client
    chunks: int  # data frames the streaming client received
    loop_lag_max_ms: float
    loop_lag_p99_ms: float
    health_max_ms: float
    health_p50_ms: float
    health_requests: int  # /health round trips completed while the answer streamed


@dataclass
class _Running:
    port: int
    loop: asyncio.AbstractEventLoop


@contextmanager
def _serving(backend: Backend, server_type: type[ChatServer]) -> Iterator[_Running]:
    """Serve ``backend`` (loaded) on a free loopback port, on a thread with its own loop."""
    import uvicorn  # the serve extra; only needed to run a server

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    app = create_app(backend, port=port, server_type=server_type)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    loop = asyncio.new_event_loop()
    thread = own_thread(
        loop.run_until_complete, args=(server.serve(sockets=[sock]),), name="tkchat-server-loop"
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield _Running(port, loop)
    finally:
        server.should_exit = True
        thread.join(10)
        loop.close()
        sock.close()


async def _probe(lags: list[float], stop: threading.Event) -> None:
    """Server's event loop: how late each short sleep ends, in ms."""
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(PROBE_S)
        lags.append((time.perf_counter() - asked - PROBE_S) * 1000)


def _second_client(port: int, times: list[float], stop: threading.Event) -> None:
    """Its own thread: GET /health again and again, each round trip in ms."""
    while not stop.is_set():
        conn = HTTPConnection("127.0.0.1", port, timeout=120)
        began = time.perf_counter()
        try:
            conn.request("GET", "/health")
            conn.getresponse().read()
        finally:
            conn.close()
        times.append((time.perf_counter() - began) * 1000)
        stop.wait(HEALTH_GAP_S)


def _stream_one(port: int, max_tokens: int) -> tuple[float, int]:
    """This thread: POST /chat and read the stream to its end; (seconds, data frames)."""
    body = {  # a fixed seed: the real model gives both servers the same answer to stream
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "seed": SEED,
    }
    conn = HTTPConnection("127.0.0.1", port, timeout=300)
    began = time.perf_counter()
    try:
        conn.request("POST", "/chat", body=json.dumps(body).encode("utf-8"))
        response = conn.getresponse()
        if response.status != 200:
            raise RuntimeError(f"/chat answered {response.status}: {response.read()[:200]!r}")
        raw = response.read()
    finally:
        conn.close()
    return time.perf_counter() - began, raw.count(b"data: ")


def measure_server(backend: Backend, *, broken: bool, max_tokens: int) -> ServerLoopFigures:
    """Main thread. One answer through a fixed or a broken server, with both probes on.
    ``backend`` must be loaded; it stays loaded (the caller closes it)."""
    server_type = BlockingChatServer if broken else ChatServer
    lags: list[float] = []
    health: list[float] = []
    with _serving(backend, server_type) as running:
        stop = threading.Event()
        probe = asyncio.run_coroutine_threadsafe(_probe(lags, stop), running.loop)
        second = own_thread(
            _second_client,
            args=(running.port, health, stop),
            name="tkchat-second-client",
            daemon=False,
        )
        time.sleep(0.1)  # a few quiet samples first
        second.start()
        try:
            answer_s, chunks = _stream_one(running.port, max_tokens)
        finally:
            stop.set()
            second.join(120)
            probe.result(30)
    return ServerLoopFigures(
        server="broken" if broken else "fixed",
        answer_s=round(answer_s, 3),
        chunks=chunks,
        loop_lag_max_ms=round(max(lags, default=0.0), 2),
        loop_lag_p99_ms=rounded(percentile(lags, 99), 2) or 0.0,
        health_max_ms=round(max(health, default=0.0), 2),
        health_p50_ms=rounded(median(health), 2) or 0.0,
        health_requests=len(health),
    )


def compare_servers(backend: Backend, *, max_tokens: int) -> list[ServerLoopFigures]:
    """Main thread. Fixed, then broken, on the same loaded backend, in one run."""
    return [measure_server(backend, broken=b, max_tokens=max_tokens) for b in (False, True)]


def run_server_loop_bench(backend: Backend, *, max_tokens: int, json_out: Any = None) -> int:
    """``tkchat bench --serve-loop``: load, compare, print a table; exit status 0."""
    backend.load()
    try:
        runs = compare_servers(backend, max_tokens=max_tokens)
    finally:
        backend.close()
    fixed, broken = runs
    checks = server_loop_verdicts(fixed, broken)
    print(server_loop_table(runs, checks, backend.name, max_tokens, default_language()))
    if json_out is not None:
        payload = {
            "runs": [asdict(r) for r in runs],
            "targets": [check.as_json() for check in checks],
        }
        json_out.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


def server_loop_table(
    runs: list[ServerLoopFigures], checks: list[Check], backend: str, max_tokens: int, lang: str
) -> str:
    """What ``--serve-loop`` prints: its sentences in the system's language, as ``bench
    --lessons`` says what its results mean (a class runs it in lesson 16); the table and the
    claims as every bench prints them (the claims' names are ``--claims``'s and the JSON's)."""
    said = STRINGS[lang]
    lines = [
        said["bench.serve_loop.runs"].format(backend=backend, tokens=max_tokens),
        said["bench.serve_loop.broken"],
        f"{'server':<8}{'answer':>9}{'loop lag max':>14}{'p99':>10}{'/health max':>13}"
        f"{'p50':>10}{'n':>5}{'frames':>8}",
    ]
    for run in runs:
        lines.append(
            f"{run.server:<8}{run.answer_s:>8.2f}s{run.loop_lag_max_ms:>12.1f}ms"
            f"{run.loop_lag_p99_ms:>8.1f}ms{run.health_max_ms:>11.1f}ms"
            f"{run.health_p50_ms:>8.1f}ms{run.health_requests:>5}{run.chunks:>8}"
        )
    fixed, broken = runs
    ratio = broken.loop_lag_max_ms / max(fixed.loop_lag_max_ms, 0.001)
    lines += [said["bench.serve_loop.ratio"].format(ratio=f"{ratio:.0f}"), ""]
    return "\n".join(lines + [check.line for check in checks])


BROKEN_LOOP_SHARE = 0.5  # the broken server's loop stands still for at least half the answer
BROKEN_LOOP_X = 8  # ... at least this many times the fixed server's worst wait
BROKEN_HEALTH_X = 5  # and the second client's worst /health, this many times the fixed one's


def server_loop_verdicts(fixed: ServerLoopFigures, broken: ServerLoopFigures) -> list[Check]:
    """Lesson 16's claims, as ratios within the run: the broken server's event loop stalls
    for the answer, the fixed one's does not, and a second client sees the difference."""
    stalled = broken.loop_lag_max_ms
    return [
        Check(
            f"broken server: loop lag max >= {BROKEN_LOOP_SHARE:g} x its answer",
            stalled >= BROKEN_LOOP_SHARE * broken.answer_s * 1000,
            f"{stalled:.0f} ms of a {broken.answer_s:.2f} s answer",
            stalled,
            broken.answer_s * 1000,
            "its answer",
            f">= {BROKEN_LOOP_SHARE:g} x",
            "ms",
        ),
        Check(
            f"broken server: loop lag max >= {BROKEN_LOOP_X} x the fixed one's",
            stalled >= BROKEN_LOOP_X * fixed.loop_lag_max_ms,
            f"{stalled:.0f} ms vs {fixed.loop_lag_max_ms:.1f} ms",
            stalled,
            fixed.loop_lag_max_ms,
            "fixed loop lag max",
            f">= {BROKEN_LOOP_X} x",
            "ms",
        ),
        Check(
            f"broken server: /health max >= {BROKEN_HEALTH_X} x the fixed one's",
            broken.health_max_ms >= BROKEN_HEALTH_X * fixed.health_max_ms,
            f"{broken.health_max_ms:.0f} ms vs {fixed.health_max_ms:.1f} ms, answered "
            f"{broken.health_requests} vs {fixed.health_requests} times",
            broken.health_max_ms,
            fixed.health_max_ms,
            "fixed /health max",
            f">= {BROKEN_HEALTH_X} x",
            "ms",
        ),
    ]
