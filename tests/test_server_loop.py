"""The article's server bug, reproduced and measured: ``tkchat serve --broken`` iterates the
model's generator on the event loop, so one streaming answer stalls the loop for its whole
length and a second client's ``/health`` waits; the real server's loop stays free.

Real uvicorn servers on loopback, the scripted backend at a fixed token rate (its waits release
the GIL, as llama.cpp's C code does). Only ratios within one run are asserted, with wide
margins: the point is "blocked for the whole answer" against "never blocked".
"""

from __future__ import annotations

import json
import socket
from http.client import HTTPConnection

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.conftest import wait_until  # noqa: E402
from tkchat.antipatterns.blocking_server import BlockingChatServer  # noqa: E402
from tkchat.cli import build_parser  # noqa: E402
from tkchat.events import Chunk, Done  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402
from tkchat.lab.bench.server_loop import _serving, compare_servers  # noqa: E402
from tkchat.serve.server import ChatServer  # noqa: E402
from tkchat.transport.sse import SSEParser, parse_event  # noqa: E402


def test_the_broken_server_stalls_its_loop_for_the_answer_and_the_fixed_one_does_not() -> None:
    backend = ScriptedBackend(rate=100, tokens=80)  # 0.8 s of "model" per answer
    fixed, broken = compare_servers(backend, max_tokens=80)
    assert (fixed.server, broken.server) == ("fixed", "broken")
    assert fixed.chunks >= 10 and broken.chunks >= 10  # both really streamed
    # broken: one stall about as long as the answer; fixed: many times shorter
    assert broken.loop_lag_max_ms >= 0.5 * broken.answer_s * 1000, broken
    assert broken.loop_lag_max_ms >= 8 * fixed.loop_lag_max_ms, (fixed, broken)
    # the second client: served at once by the fixed server, kept waiting by the broken one
    assert broken.health_max_ms >= 5 * fixed.health_max_ms, (fixed, broken)
    assert fixed.health_requests > broken.health_requests


def _events(port: int) -> list[object]:
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 30}
    conn.request("POST", "/chat", body=json.dumps(body).encode())
    response = conn.getresponse()
    assert response.status == 200
    parser = SSEParser()
    messages = parser.feed(response.read())
    conn.close()
    return [parse_event(m) for m in messages]


@pytest.mark.parametrize("server_type", [ChatServer, BlockingChatServer])
def test_both_servers_keep_the_event_contract(server_type: type[ChatServer]) -> None:
    """Broken is slow for everyone else, not wrong for its own client: the same text, in
    order, ending with exactly one done (which is why the bug survives a quick try)."""
    backend = ScriptedBackend(rate=0, tokens=30)
    with _serving(backend, server_type) as running:
        events = _events(running.port)
        conn = HTTPConnection("127.0.0.1", running.port, timeout=30)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        conn.close()
    # the broken server says so wherever it answers; the real one never does
    assert ("BROKEN ON PURPOSE" in health.get("broken", "")) == (server_type is not ChatServer)
    assert isinstance(events[-1], Done)
    assert sum(isinstance(e, Done) for e in events) == 1
    chunks = [e for e in events if isinstance(e, Chunk)]
    assert [c.seq for c in chunks] == sorted(c.seq for c in chunks)
    assert "".join(c.text for c in chunks) == b"".join(backend.pieces(30)).decode()


def test_the_commands_parse() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve", "--broken"]).broken
    assert not parser.parse_args(["serve"]).broken
    assert parser.parse_args(["bench", "--serve-loop", "--backend", "scripted"]).serve_loop


TOKENS = 40_000


@pytest.mark.parametrize(
    ("server_type", "rate"),
    # The real server's worker is not held back by a slow reader (events wait in its bridge),
    # so its model must be slow to be still generating; the broken one's model is held back by
    # its writes, and it goes on to the end after the client leaves: fast, to end soon.
    [(ChatServer, 2000.0), (BlockingChatServer, 0.0)],
)
def test_health_says_busy_while_an_answer_streams(
    server_type: type[ChatServer], rate: float
) -> None:
    """A client that stops reading its answer: the server's writes wait for room, which gives
    even the broken server's loop a turn to answer ``/health``. Both must then say busy (the
    broken one said false: it has no worker to ask), and not busy once the client has left."""
    backend = ScriptedBackend(rate=rate, tokens=TOKENS)
    with _serving(backend, server_type) as running:
        reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window
        reader.connect(("127.0.0.1", running.port))
        with reader:
            body = json.dumps(
                {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": TOKENS}
            )
            reader.sendall(
                f"POST /chat HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
            )
            reader.settimeout(30)
            assert reader.recv(4096).startswith(b"HTTP/1.1 200")  # then it stops reading
            assert _health(running.port)["busy"] is True
        # the client has left: the answer ends, and so does "busy"
        wait_until(lambda: _health(running.port)["busy"] is False, what="not busy")


def _health(port: int) -> dict[str, object]:
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/health")
        report: dict[str, object] = json.loads(conn.getresponse().read())
        return report
    finally:
        conn.close()
