"""The article's server bug, reproduced: ``tkchat serve --broken`` iterates the model's
generator on the event loop, so one streaming answer holds the loop for its whole length and a
second client's ``/health`` waits; the real server runs the model on a worker thread and its
loop stays free.

Real uvicorn servers on loopback and the scripted backend, whose ``stream`` here notes the
thread each token is made on: the mechanism is which thread runs the model. How long the broken
loop stalls against the fixed one is ``tkchat bench --serve-loop``'s to measure.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from dataclasses import dataclass, field
from http.client import HTTPConnection

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.conftest import wait_until  # noqa: E402
from tkchat.antipatterns.blocking_server import BlockingChatServer  # noqa: E402
from tkchat.cli import build_parser  # noqa: E402
from tkchat.events import Chunk, Done  # noqa: E402
from tkchat.generate.backend import (
    GenerationRequest,  # noqa: E402
    TokenStream,  # noqa: E402
)
from tkchat.generate.scripted import ScriptedBackend, TokenGate  # noqa: E402
from tkchat.lab.bench.server_loop import _Running, _serving  # noqa: E402
from tkchat.serve.server import ChatServer  # noqa: E402
from tkchat.transport.sse import SSEParser, parse_event  # noqa: E402


@dataclass
class ThreadNoting(ScriptedBackend):
    """The scripted backend, noting the thread that makes each token (the one that calls
    ``next()`` on its stream: whoever runs the model)."""

    threads: set[int] = field(default_factory=set)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        tokens = super().stream(request, cancel)
        while True:
            try:
                piece = next(tokens)  # one token of "model", on this thread
            except StopIteration as end:
                return end.value  # type: ignore[no-any-return]
            self.threads.add(threading.get_ident())
            yield piece


def loop_thread(running: _Running) -> int:
    """The ident of the thread that runs the server's event loop."""

    async def ident() -> int:
        return threading.get_ident()

    return asyncio.run_coroutine_threadsafe(ident(), running.loop).result(10)


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
def test_the_broken_server_runs_the_model_on_its_event_loop_and_the_fixed_one_does_not(
    server_type: type[ChatServer],
) -> None:
    """Every token of the broken server's answer is made on the thread that runs its event
    loop (while it is, no other request is read); none of the fixed server's is. And broken
    is slow for everyone else, not wrong for its own client: the same text, in order, ending
    with exactly one done (which is why the bug survives a quick try)."""
    backend = ThreadNoting(rate=0, tokens=30)
    with _serving(backend, server_type) as running:
        events = _events(running.port)
        loop = loop_thread(running)
        conn = HTTPConnection("127.0.0.1", running.port, timeout=30)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        conn.close()
    if server_type is BlockingChatServer:
        assert backend.threads == {loop}
    else:
        assert backend.threads and loop not in backend.threads
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


def _stop_reading(port: int, max_tokens: int) -> socket.socket:
    """A client that asks for an answer, reads the start of it, then stops reading (its
    receive window is small: the server's writes soon wait for room)."""
    reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect(("127.0.0.1", port))
    body = json.dumps(
        {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": max_tokens}
    )
    reader.sendall(
        f"POST /chat HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    reader.settimeout(30)
    assert reader.recv(4096).startswith(b"HTTP/1.1 200")
    return reader


def test_health_says_busy_while_the_model_is_held_mid_answer() -> None:
    """The real server: the model held at its third token (a gate the test opens), /health
    answers (the loop is free) and says busy; once the client has left, the model is stopped
    where it waits and busy ends."""
    gate = TokenGate()
    backend = ScriptedBackend(rate=0, tokens=1000, gate=gate)
    with _serving(backend, ChatServer) as running:
        gate.release(3)
        with _stop_reading(running.port, 1000):
            assert gate.wait_passed(3)
            assert _health(running.port)["busy"] is True
        wait_until(lambda: _health(running.port)["busy"] is False, what="not busy")
    assert gate.passed == 3  # nothing more was made for a client that had gone


def test_the_broken_server_says_busy_when_its_loop_gets_a_turn() -> None:
    """The broken server's loop gets a turn only when a write must wait for room: an answer
    far larger than what the sockets can buffer (400 tokens of 64 kB), to a client that has
    stopped reading. /health must then say busy (it said false: no worker to ask), and not
    busy once the client has left."""
    backend = ScriptedBackend(rate=0, tokens=400, text="x" * 65536)
    with _serving(backend, BlockingChatServer) as running:
        with _stop_reading(running.port, 400):
            assert _health(running.port)["busy"] is True
        wait_until(lambda: _health(running.port)["busy"] is False, what="not busy")


def _health(port: int) -> dict[str, object]:
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/health")
        report: dict[str, object] = json.loads(conn.getresponse().read())
        return report
    finally:
        conn.close()
