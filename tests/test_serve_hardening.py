"""``tkchat serve`` against a hostile client (issue 15): malformed input that used to reach the
model or crash a handler, framing by another site, and sockets that never finish their headers.

Real uvicorn on the loopback, configured by :func:`tkchat.serve.connections.server_config` (the
settings ``run_server`` uses), and raw sockets or ``http.client`` as the client.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPResponse
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import uvicorn  # noqa: E402
from uvicorn.server import ServerState  # noqa: E402

from tests.conftest import wait_until  # noqa: E402
from tests.test_server import HELLO, Live  # noqa: E402
from tkchat.events import Done  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402
from tkchat.limits import MAX_NAME_CHARS
from tkchat.serve.connections import server_config  # noqa: E402
from tkchat.serve.guard import (  # noqa: E402
    JOIN_TTL_S,
    LINK_EXPIRED,
    MAX_SESSIONS,
    SESSION_ENDED,
    SESSION_PREFIX,
    SESSION_TTL_S,
)
from tkchat.serve.listen import reachable_address  # noqa: E402
from tkchat.serve.server import create_app  # noqa: E402


class ErrorLog(logging.Handler):
    """Every ERROR (or worse) that uvicorn or Starlette logs while installed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Guarded(Live):
    """A live server, and uvicorn's state: the connections it holds open."""

    state: ServerState

    def client_ports(self) -> set[int]:
        """The ports of the clients whose sockets the server holds (any thread: a copy)."""
        return {c.client[1] for c in self.state.connections.copy() if c.client}


@contextmanager
def serve(
    token: str | None = None,
    join_code: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    **config: Any,
) -> Iterator[tuple[Guarded, ErrorLog]]:
    """The app under uvicorn with ``run_server``'s settings (``config`` overrides some), and a
    log of the errors it writes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(
        ScriptedBackend(rate=0), port=port, token=token, join_code=join_code, clock=clock
    )
    server = uvicorn.Server(server_config(app, timeout_graceful_shutdown=1, **config))
    errors = ErrorLog()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "uvicorn", "asyncio", "")]
    for logger in loggers:
        logger.addHandler(errors)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, what="uvicorn to start")
        yield Guarded(port, app.state.chat_server, server.server_state), errors
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        for logger in loggers:
            logger.removeHandler(errors)


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[Live, ErrorLog]]:
    with serve() as pair:
        yield pair


# -- finding 8: malformed input is a 400, never a 500 or a failed generation ---------------


def _with_content(content: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": content}]}).encode()


HOSTILE_BODIES = {
    # Python refuses to parse integers of more than 4,300 digits (ValueError, not JSON's).
    "huge max_tokens": b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": '
    + b"9" * 5000
    + b"}",
    "huge integer anywhere": b'{"messages": [{"role": "user", "content": "hi"}], "x": '
    + b"1" * 4301
    + b"}",
    # JSON may escape a lone surrogate; it is not a character, and UTF-8 cannot encode it.
    "lone surrogate": _with_content("\ud800"),
    "lone low surrogate mid-text": _with_content("abc \udfff 中文"),
    "lone surrogate in a text part": json.dumps(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x\ud800"}]}]}
    ).encode(),
}


@pytest.mark.parametrize("name", list(HOSTILE_BODIES))
@pytest.mark.parametrize("path", ["/chat", "/v1/chat/completions"])
def test_hostile_json_is_a_400_with_nothing_logged(
    live: tuple[Live, ErrorLog], name: str, path: str
) -> None:
    server, errors = live
    before = len(errors.records)
    status, _, payload = server.fetch_json("POST", path, HOSTILE_BODIES[name])
    assert status == 400, payload
    assert payload["error"]["kind"] == "bad_request"
    message = payload["error"]["message"]
    assert ("too long" in message) if name.startswith("huge") else ("surrogate" in message)
    assert "Traceback" not in message and "Error" not in message  # a sentence, not an exception
    assert errors.records[before:] == []
    assert server.health()["busy"] is False


def test_real_unicode_is_still_accepted(live: tuple[Live, ErrorLog]) -> None:
    server, errors = live
    status, _, payload = server.fetch_json(
        "POST", "/v1/chat/completions", _with_content("中文 😀 \u00e9")
    )
    assert status == 200 and payload["choices"][0]["message"]["content"]
    assert errors.records == []


# -- finding 7: no other site may frame the page ------------------------------------------

FRAMING_HEADERS = {
    "content-security-policy": "frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
}


@pytest.mark.parametrize(
    "method,path,headers,status",
    [
        ("GET", "/", {}, 200),
        ("GET", "/static/app.js", {}, 200),
        ("GET", "/health", {}, 200),
        ("GET", "/nope", {}, 404),
        ("POST", "/chat", {}, 400),
        ("GET", "/", {"Host": "evil.example"}, 403),  # the guard's own refusal too
        ("GET", "/", {"Origin": "http://evil.example"}, 403),
    ],
)
def test_every_response_forbids_framing(
    live: tuple[Live, ErrorLog], method: str, path: str, headers: dict[str, str], status: int
) -> None:
    server, _ = live
    got, response_headers, _ = server.fetch(
        method, path, b"" if method == "POST" else None, headers
    )
    assert got == status
    for name, value in FRAMING_HEADERS.items():
        assert response_headers.get_all(name) == [value], name


def test_a_streamed_answer_forbids_framing_too(live: tuple[Live, ErrorLog]) -> None:
    server, _ = live
    conn, response = server.send("POST", "/chat", HELLO)
    try:
        assert response.status == 200
        for name, value in FRAMING_HEADERS.items():
            assert response.headers[name] == value
        response.read()
    finally:
        conn.close()


# -- finding 5: sockets that never finish their headers ------------------------------------
#
# The deadlines, on a clock moved by hand: the protocol uvicorn runs (GuardedH11Protocol, as
# server_config builds it) on a loop whose time and timers the test owns, and a transport
# that records what the server wrote and whether it closed. Then the same, end to end, with
# real sockets and deadlines short enough to wait for.


class _Timer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class _Task:
    def add_done_callback(self, _callback: object) -> None:
        """(the request's task never runs here: the app is not what is tested)"""


class FakeLoop:
    """The event loop as the protocol uses it: ``time()``, ``call_later``, ``create_task``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[_Timer] = []

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[..., None], *args: object) -> _Timer:
        timer = _Timer(self.now + delay, lambda: callback(*args))
        self.timers.append(timer)
        return timer

    def create_task(self, coroutine: Any) -> _Task:
        coroutine.close()  # a request was read whole: the app would run it now
        return _Task()

    def pending(self) -> list[float]:
        return sorted(t.when for t in self.timers if not t.cancelled)

    def advance_to(self, when: float) -> None:
        self.now = when
        for timer in sorted(self.timers, key=lambda t: t.when):
            if not timer.cancelled and timer.when <= when:
                self.timers.remove(timer)
                timer.callback()


class FakeTransport:
    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        """(flow control: nothing to pause)"""

    def resume_reading(self) -> None:
        """(flow control: nothing to resume)"""


@pytest.fixture(scope="module")
def guarded_config() -> uvicorn.Config:
    app = create_app(ScriptedBackend(rate=0), port=8000)
    config = server_config(app, header_timeout_s=10.0, body_timeout_s=10.0)
    config.load()
    return config


def connect(config: uvicorn.Config) -> tuple[Any, FakeLoop, FakeTransport]:
    """A connection opened at t=0: (the protocol, its loop, its transport)."""
    loop, transport = FakeLoop(), FakeTransport()
    protocol = config.http_protocol_class(config, ServerState(), {}, _loop=loop)
    protocol.connection_made(transport)
    return protocol, loop, transport


def test_the_header_deadline_runs_from_the_connection_not_from_each_byte(
    guarded_config: uvicorn.Config,
) -> None:
    protocol, loop, transport = connect(guarded_config)
    assert loop.pending() == [10.0]
    for second in range(1, 10):  # a byte a second: the trickle goes on
        loop.advance_to(second)
        protocol.data_received(b"GET /health HTTP/1.1\r\n"[second - 1 : second])
    assert loop.pending() == [10.0]  # not pushed back by any byte
    loop.advance_to(9.99)
    assert not transport.closed
    loop.advance_to(10.0)
    assert transport.closed and transport.written == b""  # closed, with no answer


def test_whole_headers_in_time_end_the_header_deadline(guarded_config: uvicorn.Config) -> None:
    protocol, loop, transport = connect(guarded_config)
    loop.advance_to(9.0)
    protocol.data_received(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
    assert loop.pending() == []  # (a GET has no body: no body deadline either)
    loop.advance_to(100.0)
    assert not transport.closed


HEAD = (
    "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Content-Length: 2000\r\n\r\n{{"
)


@pytest.mark.parametrize("path", ["/chat", "/v1/chat/completions"])
def test_a_dribbled_body_gets_408_at_the_body_deadline(
    guarded_config: uvicorn.Config, path: str
) -> None:
    protocol, loop, transport = connect(guarded_config)
    loop.advance_to(2.0)
    protocol.data_received(HEAD.format(path=path).encode())  # the body's clock starts now
    assert loop.pending() == [12.0]
    for second in range(3, 12):  # a byte a second does not push it back
        loop.advance_to(second)
        protocol.data_received(b" ")
    loop.advance_to(11.99)
    assert not transport.closed and transport.written == b""
    loop.advance_to(12.0)
    # Before: no answer and an open socket for as long as the bytes kept coming.
    assert transport.written.startswith(b"HTTP/1.1 408 "), transport.written[:200]
    head, _, body = transport.written.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert b"x-frame-options: DENY" in head
    assert json.loads(body)["error"]["kind"] == "body_timeout"
    assert "within 10 s" in json.loads(body)["error"]["message"]
    assert transport.closed


def test_a_body_that_arrives_in_time_ends_its_deadline(guarded_config: uvicorn.Config) -> None:
    protocol, loop, transport = connect(guarded_config)
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    protocol.data_received(
        f"POST /chat HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body[:5]}".encode()
    )
    loop.advance_to(9.0)
    protocol.data_received(body[5:].encode())
    assert loop.pending() == []  # the deadline does not outlive the body
    loop.advance_to(100.0)
    assert not transport.closed and transport.written == b""


def _half_open(port: int, stack: ExitStack) -> socket.socket:
    """A client that starts a request and never finishes its headers."""
    sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return sock


def _closed_by_server(sock: socket.socket, within_s: float = 10.0) -> bool:
    """Whether the server closes ``sock`` (``within_s``: only a hang guard)."""
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True  # reset: closed as well


def test_half_open_sockets_are_closed_at_the_header_deadline() -> None:
    with serve(header_timeout_s=0.2) as (server, errors), ExitStack() as stack:
        socks = [_half_open(server.port, stack) for _ in range(20)]
        assert all(_closed_by_server(s) for s in socks)
        assert server.health()["status"] == "ok"
        assert errors.records == []


def test_a_kept_alive_connection_gets_the_deadline_for_its_next_request() -> None:
    with serve(header_timeout_s=0.2) as (server, _), ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", server.port)))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(5)
        reply = sock.recv(65536)
        while b'"cancels"' not in reply:  # the body's last field: the whole response is in
            reply += sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 200")
        # then nothing: without a deadline re-armed, the socket would be held for good (the
        # keep-alive timeout ends with the first byte of a request)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.")
        assert _closed_by_server(sock)


def test_over_the_cap_the_oldest_half_open_sockets_make_room() -> None:
    with serve(header_timeout_s=60, max_connections=20) as (server, errors), ExitStack() as st:
        socks = [_half_open(server.port, st) for _ in range(50)]
        # The deadline is a minute away: only the cap can have closed the first thirty.
        assert all(_closed_by_server(s) for s in socks[:25])
        newest = {s.getsockname()[1] for s in socks[-10:]}
        wait_until(lambda: newest <= server.client_ports(), what="the newest ten kept")
        assert server.health()["status"] == "ok"  # answered while they wait for the deadline
        assert newest <= server.client_ports()  # and they still do: the cap made room
        assert errors.records == []


def test_a_dribbled_body_is_refused_end_to_end() -> None:
    with serve(body_timeout_s=0.2) as (server, errors), ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", server.port)))
        sock.sendall(HEAD.format(path="/chat").encode())
        sock.settimeout(10)
        reply = b""
        while piece := sock.recv(65536):  # (the server closes it after the 408)
            reply += piece
        assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
        assert json.loads(reply.partition(b"\r\n\r\n")[2])["error"]["kind"] == "body_timeout"
        # the slot is free: the server answers a whole request at once afterwards
        assert isinstance(server.events()[-1], Done)
        assert errors.records == []


def test_a_body_in_pieces_is_served_and_the_connection_kept() -> None:
    with serve() as (server, errors), ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", server.port)))
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3})
        sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        for piece in (body[: len(body) // 2], body[len(body) // 2 :]):
            sock.sendall(piece.encode())
        sock.settimeout(10)
        answer = HTTPResponse(sock)
        answer.begin()
        assert answer.status == 200 and json.loads(answer.read())["choices"]
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert errors.records == []


# -- finding 6: beyond the loopback, an opt-in and a token -----------------------------------

TOKEN = "s3cret-T0ken_for-tests"


def test_with_a_token_every_api_request_needs_it_whatever_the_host() -> None:
    with serve(token=TOKEN) as (server, errors):
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        # The page and its files hold no secret and must load for the page to read its token.
        status, _, page = server.fetch("GET", "/")
        assert status == 200 and TOKEN.encode() not in page
        assert server.fetch("GET", "/static/app.js")[0] == 200
        # The API: 401 without the token, even with the forged Host that used to pass.
        for headers in ({}, {"Host": "127.0.0.1"}, {"Authorization": "Bearer wrong"}):
            for method, path, body in (
                ("POST", "/chat", HELLO),
                ("POST", "/v1/chat/completions", HELLO),
                ("GET", "/health", None),
                ("GET", "/v1/models", None),
            ):
                status, response_headers, payload = server.fetch_json(method, path, body, headers)
                assert status == 401 and payload["error"]["kind"] == "unauthorized", (path, headers)
                assert response_headers["www-authenticate"] == "Bearer"
        assert server.chat.controller.gen == 0  # not one generation started
        # With the token, any name for this machine works (the LAN's, here a made-up one)...
        lan = {**bearer, "Host": f"192.0.2.2:{server.port}"}
        status, _, payload = server.fetch_json("POST", "/v1/chat/completions", HELLO, lan)
        assert status == 200 and payload["choices"][0]["message"]["content"]
        # ... the page's own origin too, but no other site's origin, token or not.
        same = {**lan, "Origin": f"http://192.0.2.2:{server.port}"}
        assert server.fetch_json("GET", "/health", None, same)[0] == 200
        other = {**lan, "Origin": "http://evil.example"}
        assert server.fetch_json("GET", "/health", None, other)[0] == 403
        assert errors.records == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer", "bEaReR"])
def test_the_bearer_scheme_is_read_in_any_case(scheme: str) -> None:
    """``Authorization: bearer …`` was refused: an auth scheme's name is case-insensitive."""
    with serve(token=TOKEN) as (server, errors):
        status, _, _ = server.fetch_json(
            "GET", "/health", None, {"Authorization": f"{scheme} {TOKEN}"}
        )
        assert status == 200
        wrong = {"Authorization": f"{scheme} not-the-token"}
        assert server.fetch_json("GET", "/health", None, wrong)[0] == 401
        assert errors.records == []


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _session(server: Guarded, secret: str) -> str:
    status, headers, payload = server.fetch_json(
        "POST", "/session", None, {"Authorization": f"Bearer {secret}"}
    )
    assert status == 200 and "set-cookie" not in headers, (status, payload)
    assert headers["cache-control"] == "no-store"
    session = payload["session"]
    assert isinstance(session, str) and session.startswith(SESSION_PREFIX)
    assert secret not in session
    return session


def test_a_join_code_or_the_token_buys_a_session_and_no_cookie_is_set() -> None:
    """The link's join code (or the token) buys a session, sent as a bearer like the token:
    nothing a browser sends to every port of the host (a cookie) is ever set."""
    with serve(token=TOKEN, join_code="join-code-1") as (server, errors):
        assert server.fetch("POST", "/session")[0] == 401  # no credential: no session
        for secret in ("join-code-1", TOKEN):
            bearer = {"Authorization": f"Bearer {_session(server, secret)}"}
            assert server.fetch_json("GET", "/health", None, bearer)[0] == 200
            status, headers, answer = server.fetch("POST", "/chat", HELLO, bearer)
            assert status == 200 and b'"type": "done"' in answer
            assert "set-cookie" not in headers
        forged = {"Authorization": f"Bearer {SESSION_PREFIX}AAAA"}
        status, _, payload = server.fetch_json("GET", "/health", None, forged)
        assert status == 401 and payload["error"]["message"] == SESSION_ENDED
        assert errors.records == []


def test_the_link_expires_and_sessions_end_by_age_each_with_its_sentence() -> None:
    """On a fake clock: the join code works until JOIN_TTL_S after the start and then gets
    the link's sentence (the token still works); a session ends SESSION_TTL_S after it
    started; past MAX_SESSIONS the oldest ends first, and says so."""
    clock = FakeClock()
    with serve(token=TOKEN, join_code="join-code-2", clock=clock) as (server, errors):
        first = _session(server, "join-code-2")
        clock.now += JOIN_TTL_S - 1
        assert server.fetch_json("GET", "/health", None, _bearer("join-code-2"))[0] == 200
        clock.now += 1
        status, _, payload = server.fetch_json("GET", "/health", None, _bearer("join-code-2"))
        assert status == 401 and payload["error"]["message"] == LINK_EXPIRED
        assert server.fetch_json("POST", "/session", None, _bearer("join-code-2"))[0] == 401
        assert server.fetch_json("GET", "/health", None, _bearer(first))[0] == 200
        clock.now += SESSION_TTL_S - JOIN_TTL_S
        status, _, payload = server.fetch_json("GET", "/health", None, _bearer(first))
        assert status == 401 and payload["error"]["message"] == SESSION_ENDED
        sessions = [_session(server, TOKEN) for _ in range(MAX_SESSIONS + 1)]
        assert server.fetch_json("GET", "/health", None, _bearer(sessions[0]))[0] == 401
        assert server.fetch_json("GET", "/health", None, _bearer(sessions[1]))[0] == 200
        assert errors.records == []


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def half_closed(port: int, request: bytes) -> bytes:
    """Send ``request``, shut the socket's write side, and read the answer to its end."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
        return answer


@pytest.mark.parametrize("close", [b"", b"Connection: close\r\n"])
def test_a_half_closed_client_gets_its_answer(close: bytes) -> None:
    """Request, then shutdown of the write side: GET / and a non-streaming /v1 answered
    nothing (uvicorn took the end of the input for a departure); with ``Connection: close``
    still nothing (h11 puts such a request in MUST_CLOSE, not DONE), HEAD / too."""
    with serve() as (server, errors):
        host = f"Host: 127.0.0.1:{server.port}\r\n".encode() + close
        page = half_closed(server.port, b"GET / HTTP/1.1\r\n" + host + b"\r\n")
        assert page.startswith(b"HTTP/1.1 200") and b"<html" in page.lower()
        head = half_closed(server.port, b"HEAD / HTTP/1.1\r\n" + host + b"\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5})
        answer = half_closed(
            server.port,
            b"POST /v1/chat/completions HTTP/1.1\r\n"
            + host
            + b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n{body}".encode(),
        )
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        payload = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert payload["choices"][0]["message"]["content"]
        assert errors.records == []


def test_a_client_that_leaves_a_stream_still_stops_the_model() -> None:
    """The half-close rule keeps a stream under way as it was: a client that goes away
    mid-stream (its end of input) stops the generation."""
    with serve() as (server, errors):
        server.chat.backend = ScriptedBackend(rate=200, tokens=100_000)
        conn, response = server.send("POST", "/chat", HELLO)
        assert response.status == 200 and response.read1(65536)
        conn.sock.shutdown(socket.SHUT_WR)  # its end of input, mid-stream
        conn.close()
        wait_until(lambda: server.chat.cancels, what="the disconnect to stop the model")
        assert server.chat.cancels[-1]["tokens_after_disconnect"] <= 2
        assert errors.records == []


def test_health_bounds_what_a_model_is_called() -> None:
    """A 1 MB model name in /health stalled it 466 ms in one run; names are bounded."""
    with serve() as (server, errors):
        server.chat.backend.name = "m" * 1_000_000
        status, _, payload = server.fetch_json("GET", "/health")
        assert status == 200 and len(payload["model"]) <= MAX_NAME_CHARS
        # and a request's own long name is not echoed whole (a 60 kB name came back whole)
        status, _, payload = server.fetch_json("GET", "/v1/models/" + "x" * 60_000)
        assert status == 404 and len(payload["error"]["message"]) < 4 * MAX_NAME_CHARS
        assert errors.records == []


REPO = Path(__file__).resolve().parents[1]


def _start_cli(*args: str, **popen: Any) -> subprocess.Popen[str]:
    """``tkchat serve`` with the scripted backend, from this checkout, on any free port."""
    return subprocess.Popen(
        [sys.executable, "-m", "tkchat", "serve", "--backend", "scripted", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        **popen,
    )


@contextmanager
def cli_server(*args: str) -> Iterator[tuple[str, str, str]]:
    """``tkchat serve`` as a user runs it: (printed URL without its #join= code, the token from
    the warning or "", stderr so far). The token is never in the URL."""
    process = _start_cli(*args)
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"tkchat serve: (http://\S+?/)(?:#join=(\S+))? \(model .*\)\n", line)
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        warning = process.stderr.readline() if match.group(2) else ""
        token = re.search(r"asks for the token: (\S+) ", warning)
        assert bool(token) == bool(match.group(2)), warning
        yield match.group(1), token.group(1) if token else "", warning
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _get(host: str, port: int, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    conn = HTTPConnection(host, port, timeout=10)
    conn.sock = socket.socket(family, socket.SOCK_STREAM)
    conn.sock.settimeout(10)
    conn.sock.connect((host, port))
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_non_loopback_host_needs_the_opt_in() -> None:
    process = _start_cli("--host", "0.0.0.0")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and out == ""
    assert "--allow-remote" in err and "Traceback" not in err


def test_remote_mode_prints_a_token_url_and_a_forged_host_from_the_lan_gets_nothing() -> None:
    lan = reachable_address("0.0.0.0")
    if lan.startswith("127.") or not lan[0].isdigit():
        pytest.skip("this machine has no non-loopback IPv4 address to test from")
    with cli_server("--host", "0.0.0.0", "--allow-remote") as (url, token, warning):
        assert token and "WARNING" in warning and "reachable from other machines" in warning
        port = int(url.rsplit(":", 1)[1].strip("/"))
        assert url == f"http://{lan}:{port}/"
        # From the LAN address, with the Host that used to get a full completion: 401.
        status, payload = _get(lan, port, "/health", {"Host": "127.0.0.1"})
        assert status == 401 and payload["error"]["kind"] == "unauthorized"
        # The printed URL's own host and the token: served.
        status, payload = _get(lan, port, "/health", {"Authorization": f"Bearer {token}"})
        assert status == 200 and payload["status"] == "ok"


def test_localhost_listens_on_ipv4_and_ipv6_and_wildcard_ipv6_takes_ipv4_too() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with cli_server("--host", "localhost") as (url, token, _):
        assert url.startswith("http://localhost:") and not token
        port = int(url.rsplit(":", 1)[1].strip("/"))
        for address, host_header in (("127.0.0.1", "localhost"), ("::1", "[::1]")):
            status, payload = _get(address, port, "/health", {"Host": f"{host_header}:{port}"})
            assert status == 200 and payload["status"] == "ok", address
    if not socket.has_dualstack_ipv6():
        return
    with cli_server("--host", "::", "--allow-remote") as (url, token, _):
        port = int(url.rsplit(":", 1)[1].strip("/"))
        bearer = {"Authorization": f"Bearer {token}"}
        assert _get("127.0.0.1", port, "/health", bearer)[0] == 200  # IPv4 on "::"
        assert _get("::1", port, "/health", bearer)[0] == 200


def test_400_half_open_sockets_under_a_256_file_limit_leave_health_answering() -> None:
    """The finding as reported: ``tkchat serve`` with the open-file limit at 256 and 400
    sockets that never finish their headers (before: /health timed out, and the accept loop
    logged a traceback per refused accept)."""
    import resource

    def limit_files() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    process = _start_cli(preexec_fn=limit_files)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        port = int(match.group(1))
        with ExitStack() as stack, ThreadPoolExecutor(100) as pool:
            # Connected (taken in by the server, or waiting in its backlog). A hundred at a
            # time: one after another, every 33rd waited a second for the backlog (a SYN
            # dropped and sent again), nine seconds in all.
            list(pool.map(lambda _: _half_open(port, stack), range(400)))
            live = Live(port, None)  # type: ignore[arg-type]  # only its HTTP client is used
            for _ in range(5):  # it answers, the 400 sockets still open
                assert live.health()["status"] == "ok"
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert "Traceback" not in err and "ERROR" not in err, err[-2000:]
