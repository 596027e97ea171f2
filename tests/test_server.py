"""``tkchat serve`` over real HTTP: uvicorn on a free port on 127.0.0.1, in a background thread,
and the standard library's ``http.client`` reading the stream as it arrives.

Most tests use the scripted backend (reproducible text at a chosen rate); the ``model`` tests
use the real bundled model.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPMessage, HTTPResponse
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from tests.conftest import wait_until  # noqa: E402
from tkchat.events import Chunk, Done, Error, GenerationEvent, Progress  # noqa: E402
from tkchat.generate.backend import Backend  # noqa: E402
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate  # noqa: E402
from tkchat.serve.line import LineLimits  # noqa: E402
from tkchat.serve.server import ChatServer, create_app, run_server  # noqa: E402
from tkchat.transport.sse import SSEMessage, SSEParser, parse_event  # noqa: E402

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
LONG_ANSWERS = LineLimits(answer_tokens=1 << 20)  # for floods: no cap below what they ask


# -- a live server and a small client ------------------------------------------------------


# A read that waits this long is a hang, not a slow machine: the real model reading a long
# chat on two cores that other work keeps busy went past 10 s between two bytes (3 tests
# failed 'timed out' at load 16, issue 33's rule: a test fails only when the code is wrong).
HANG_S = 180.0


@dataclass
class Live:
    """A running server: its port, its in-process state (for white-box waits), a client."""

    port: int
    chat: ChatServer

    def connect(self, timeout: float = HANG_S) -> HTTPConnection:
        return HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def send(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[HTTPConnection, HTTPResponse]:
        """Send a request; return the open connection and the response (headers read only)."""
        conn = self.connect()
        data = (
            body
            if isinstance(body, bytes | None)
            else json.dumps(body, ensure_ascii=False).encode()
        )
        conn.request(method, path, body=data, headers=headers or {})
        return conn, conn.getresponse()

    def fetch(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, HTTPMessage, bytes]:
        conn, response = self.send(method, path, body, headers)
        try:
            return response.status, response.headers, response.read()
        finally:
            conn.close()

    def fetch_json(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, HTTPMessage, Any]:
        status, headers_, data = self.fetch(method, path, body, headers)
        assert headers_["content-type"].startswith("application/json"), data
        return status, headers_, json.loads(data)

    def stream(self, path: str, body: Any) -> tuple[list[SSEMessage], bytes]:
        """POST and read the whole event stream as it arrives: the messages and the raw bytes."""
        conn, response = self.send("POST", path, body)
        try:
            assert response.status == 200, response.read()
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            parser, messages, raw = SSEParser(), [], bytearray()
            while piece := response.read1(65536):
                raw += piece
                messages += parser.feed(piece)
            return messages, bytes(raw)
        finally:
            conn.close()

    def events(self, body: Any = HELLO) -> list[GenerationEvent]:
        """The generation's events (a place in the line, an SSE ``queued`` event sent while
        another request is answered, is not one: tkchat's clients skip it too)."""
        messages, _ = self.stream("/chat", body)
        return [parse_event(m) for m in messages if m.event in (None, "", "message")]

    def health(self) -> dict[str, Any]:
        status, _, payload = self.fetch_json("GET", "/health")
        assert status == 200
        return payload


@contextmanager
def serve(
    backend: Backend, wrap: Callable[[Any], Any] | None = None, **options: Any
) -> Iterator[Live]:
    """Run ``create_app(backend)`` under uvicorn on a free loopback port until the block ends.
    The socket is bound here, so the port is known before the app (which checks it) is made.
    ``wrap``: an ASGI middleware put around the app (a test watching the requests)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(backend, port=port, **options)
    served = app if wrap is None else wrap(app)
    server = uvicorn.Server(
        uvicorn.Config(served, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started, what="uvicorn to start")
    try:
        yield Live(port, app.state.chat_server)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def serve_bundled_model(n_ctx: int) -> Iterator[Live]:
    """The bundled model, loaded with ``n_ctx``, behind ``tkchat serve`` until the block
    ends (then the model is freed)."""
    from tkchat.generate.llama_backend import LlamaBackend

    backend = LlamaBackend(n_ctx=n_ctx)
    backend.load()
    try:
        with serve(backend) as live:
            yield live
    finally:
        backend.close()


@pytest.fixture(scope="module")
def fast() -> Iterator[Live]:
    """The scripted answer as fast as it goes, every multi-byte character split across tokens."""
    with serve(ScriptedBackend(rate=0, split_utf8=True)) as live:
        yield live


@pytest.fixture
def slow() -> Iterator[Live]:
    """An answer that goes on for minutes at 100 tokens/s (until someone stops it)."""
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=LONG_ANSWERS) as live:
        yield live


LONG = {"messages": [{"role": "user", "content": "Go on"}], "max_tokens": 50_000}


@contextmanager
def streaming(
    live: Live, path: str = "/chat", body: Any = LONG, chunks: int = 3
) -> Iterator[tuple[HTTPConnection, HTTPResponse]]:
    """A stream that has delivered at least ``chunks`` frames and is still running."""
    conn, response = live.send("POST", path, body)
    assert response.status == 200
    parser, got = SSEParser(), 0
    while got < chunks:
        got += len(parser.feed(response.read1(65536)))
    try:
        yield conn, response
    finally:
        conn.close()


def hang_up(conn: HTTPConnection) -> None:
    """What a browser's AbortController or a killed client does: the socket goes away."""
    assert conn.sock is not None
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def check_contract(events: list[GenerationEvent]) -> tuple[str, Done | Error]:
    """One generation, seq 1..n with no gap: progress (a prompt read slowly enough, never
    going back), then chunks, then exactly one final event; its text."""
    assert events, "no events"
    assert {e.gen for e in events} == {events[0].gen}
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    *body, final = events
    progress = [e for e in body if isinstance(e, Progress)]
    chunks = body[len(progress) :]
    assert body[: len(progress)] == progress, "progress after the first chunk"
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert all(isinstance(e, Chunk) for e in chunks)
    assert isinstance(final, Done | Error)
    return "".join(e.text for e in chunks if isinstance(e, Chunk)), final


# -- the event stream ----------------------------------------------------------------------


def test_chat_carries_progress_and_the_openai_stream_leaves_it_out() -> None:
    # The reading: 7 steps of at least 50 ms (65 tokens, 10 a step), so the server's pacing
    # lets a report through after 200 ms, then the last.
    reading = {"messages": [{"role": "user", "content": "tea " * 60}], "max_tokens": 5}
    with serve(ScriptedBackend(rate=0, tokens=5, prompt_rate=200.0)) as live:
        events = live.events(reading)
        messages, raw = live.stream("/v1/chat/completions", {**reading, "stream": True})
        status, _, whole = live.fetch_json(
            "POST", "/v1/chat/completions", {**reading, "stream": False}
        )
    text, final = check_contract(events)
    assert any(isinstance(e, Progress) for e in events) and isinstance(final, Done)
    assert b"progress" not in raw and messages[-1].data == "[DONE]"
    chunks = [json.loads(m.data) for m in messages[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == text
    assert status == 200 and whole["choices"][0]["message"]["content"] == text


def test_chat_streams_the_whole_answer_in_order_ending_with_one_done(fast: Live) -> None:
    text, final = check_contract(fast.events())
    assert isinstance(final, Done) and final.reason == "stop"
    assert text == SCRIPT  # Chinese and emoji intact although every one was split in two tokens
    assert final.stats.tokens > len(SCRIPT.split())


def test_a_flood_arrives_complete_and_ordered() -> None:
    backend = ScriptedBackend(rate=0, tokens=20_000)
    with serve(backend, limits=LONG_ANSWERS) as live:
        text, final = check_contract(live.events({**HELLO, "max_tokens": 20_000}))
    assert isinstance(final, Done) and final.stats.tokens == 20_000
    assert text == "".join(piece.decode() for piece in backend.pieces(20_000))


def test_requests_right_after_done_are_never_refused_as_busy(fast: Live) -> None:
    """The model is free before the final event is sent, so asking again at once works."""
    gens = []
    for _ in range(5):
        _, final = check_contract(fast.events())
        gens.append(final.gen)
    assert gens == sorted(set(gens))


def test_a_keep_alive_comment_fills_silences() -> None:
    """The model held before its first token (a gate the test opens): the stream says
    "still here" while nothing else comes, then the answer follows."""
    gate = TokenGate()
    with serve(ScriptedBackend(rate=0, tokens=3, gate=gate), keepalive_s=0.05) as live:
        conn, response = live.send("POST", "/chat", HELLO)
        try:
            assert response.status == 200
            raw = bytearray()
            while b"\n: keep-alive\n\n" not in raw:
                raw += response.read1(65536)
            assert gate.passed == 0  # a silence: not one token yet
            gate.release(3)
            while piece := response.read1(65536):
                raw += piece
        finally:
            conn.close()
    messages = SSEParser().feed(bytes(raw))
    text, final = check_contract([parse_event(m) for m in messages])
    assert isinstance(final, Done) and text == "## Why the"


def test_a_backend_that_raises_ends_the_stream_with_one_error_event() -> None:
    with serve(ScriptedBackend(rate=0, fail_at=5)) as live:
        text, final = check_contract(live.events())
        assert isinstance(final, Error) and final.kind == "RuntimeError"
        assert "crashed at token 5" in final.message and text == "## Why the window"

        messages, _ = live.stream("/v1/chat/completions", {**HELLO, "stream": True})
        error = json.loads(messages[-2].data)["error"]
        assert error["type"] == "server_error" and error["code"] == error["kind"] == "RuntimeError"
        assert messages[-1].data == "[DONE]"

        status, _, payload = live.fetch_json("POST", "/v1/chat/completions", HELLO)
        assert status == 500 and payload["error"]["kind"] == "RuntimeError"
        assert payload["error"]["type"] == "server_error"
        assert not live.health()["busy"]


# -- disconnect, busy, responsiveness -------------------------------------------------------


@pytest.mark.parametrize(
    "path,extra",
    [
        ("/chat", {}),
        ("/v1/chat/completions", {"stream": True}),
    ],
)
def test_client_disconnect_stops_the_model(slow: Live, path: str, extra: dict[str, Any]) -> None:
    with streaming(slow, path, {**LONG, **extra}) as (conn, _):
        job = slow.chat.job
        assert job is not None and job.running
        hang_up(conn)
        wait_until(lambda: slow.health()["cancels"], what="the cancel to be recorded")
    (cancel,) = slow.health()["cancels"]
    assert cancel["gen"] == job.worker.gen and cancel["endpoint"] == path
    assert cancel["tokens_after_disconnect"] <= 1
    assert cancel["disconnect_to_exit_ms"] >= 0
    assert not job.running and not slow.health()["busy"]
    assert job.worker.join(30)  # the worker has ended: nothing more can be generated
    assert job.worker.tokens == cancel["tokens"]


def test_client_disconnect_stops_a_non_streaming_completion(slow: Live) -> None:
    conn = slow.connect()
    conn.request("POST", "/v1/chat/completions", body=json.dumps(LONG))
    wait_until(
        lambda: slow.chat.job is not None and slow.chat.job.worker.tokens >= 3,
        what="generation to start",
    )
    hang_up(conn)
    wait_until(lambda: slow.health()["cancels"], what="the cancel to be recorded")
    (cancel,) = slow.health()["cancels"]
    assert cancel["tokens_after_disconnect"] <= 1


def test_a_second_request_while_generating_waits_in_line_and_is_answered_next(
    slow: Live,
) -> None:
    """No 429 any more: the second request is told its place, then answered after the first."""
    with streaming(slow) as (conn, response):
        second, answer = slow.send("POST", "/chat", {**HELLO, "max_tokens": 3})
        assert answer.status == 200
        parser = SSEParser()
        first_news: list[SSEMessage] = []
        while not first_news:
            first_news = parser.feed(answer.read1(65536))
        assert first_news[0].event == "queued"
        place = json.loads(first_news[0].data)
        assert place["type"] == "queued" and place["position"] == 1 and place["waiting"] == 1
        assert slow.health()["line"]["waiting"] == 1 and slow.health()["busy"]
        assert response.read1(65536)  # the first stream was not disturbed
        hang_up(conn)  # the first client leaves: the second one's turn
        messages = first_news[1:]
        while piece := answer.read1(65536):
            messages += parser.feed(piece)
        second.close()
    events = [parse_event(m) for m in messages if m.event == "message"]
    text, final = check_contract(events)
    assert isinstance(final, Done) and final.reason == "length" and text == "## Why the"
    assert slow.health()["line"]["waiting"] == 0


def test_the_event_loop_answers_while_a_flood_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flood (no delay between tokens) on one connection; /health still answers at once."""
    from tkchat.generate import worker

    monkeypatch.setattr(worker, "MAX_ANSWER_CHARS", 10**9)  # a flood that lasts the test
    with (
        serve(ScriptedBackend(rate=0, tokens=10**6), limits=LONG_ANSWERS) as live,
        streaming(live, body={**HELLO, "max_tokens": 10**6}) as (conn, response),
    ):
        stop = threading.Event()

        def read() -> None:  # a client that keeps up with the flood
            while not stop.is_set() and response.read1(65536):
                pass

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # Each answers (a loop stuck in the flood would answer none of them, until the
        # million tokens end): the claim is "answers", not a latency figure.
        for _ in range(10):
            assert live.health()["busy"]
        stop.set()
        reader.join(5)
        hang_up(conn)


# -- safety ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil.example:{port}"]
)
def test_a_foreign_host_header_is_forbidden(fast: Live, host: str) -> None:
    for method, path, body in (
        ("GET", "/health", None),
        ("POST", "/chat", HELLO),
        ("GET", "/", None),
    ):
        status, _, payload = fast.fetch_json(
            method, path, body, {"Host": host.format(port=fast.port)}
        )
        assert status == 403 and payload["error"]["kind"] == "forbidden"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:{port}", "localhost:{port}", "LOCALHOST"])
def test_our_own_host_header_is_accepted(fast: Live, host: str) -> None:
    status, _, _ = fast.fetch("GET", "/health", headers={"Host": host.format(port=fast.port)})
    assert status == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:{port}"]
)
def test_a_foreign_origin_is_forbidden(fast: Live, origin: str) -> None:
    status, headers, payload = fast.fetch_json(
        "POST", "/chat", HELLO, {"Origin": origin.format(port=fast.port)}
    )
    assert status == 403 and payload["error"]["kind"] == "forbidden"
    assert not [h for h in headers if h.lower().startswith("access-control-")]


def test_our_own_origin_is_accepted_without_any_cors_header(fast: Live) -> None:
    for origin in (f"http://127.0.0.1:{fast.port}", f"http://localhost:{fast.port}"):
        conn, response = fast.send("POST", "/chat", HELLO, {"Origin": origin})
        assert response.status == 200
        assert not [h for h in response.headers if h.lower().startswith("access-control-")]
        response.read()
        conn.close()


@pytest.mark.parametrize(
    "body,fragment",
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),  # (json reads a UTF-16 byte-order mark: empty)
        (b'{"a": "\xff"}', "not UTF-8 text"),  # (not Python's "'utf-8' codec can't decode...")
        (b"[" * 5000, "nests too deeply"),  # (not "maximum recursion depth exceeded...")
        (b"[1, 2]", "JSON object"),
        (b'{"messages": []}', "messages"),
        (b'{"messages": "hi"}', "messages"),
        (b'{"messages": [{"role": "robot", "content": "hi"}]}', "role"),
        (b'{"messages": [{"role": "user", "content": 5}]}', "content"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}', "temperature"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}', "max_tokens"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": true}', "max_tokens"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "top_p": 2}', "top_p"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "seed": 1.5}', "seed"),
    ],
)
def test_malformed_requests_get_a_400_json_error(fast: Live, body: bytes, fragment: str) -> None:
    for path in ("/chat", "/v1/chat/completions"):
        status, _, payload = fast.fetch_json("POST", path, body)
        assert status == 400 and payload["error"]["kind"] == "bad_request"
        assert fragment in payload["error"]["message"]
    status, _, payload = fast.fetch_json("POST", "/v1/chat/completions", {**HELLO, "stream": "yes"})
    assert status == 400 and "stream" in payload["error"]["message"]


def test_an_oversized_body_is_refused_with_413(fast: Live) -> None:
    huge = json.dumps({"messages": [{"role": "user", "content": "x" * 70_000}]}).encode()
    status, _, payload = fast.fetch_json("POST", "/chat", huge)
    assert status == 413 and payload["error"]["kind"] == "body_too_large"
    # Without a Content-Length (chunked upload) the limit holds while reading.
    conn = fast.connect()
    conn.request(
        "POST",
        "/chat",
        body=iter([huge[:40_000], huge[40_000:]]),
        encode_chunked=True,
        headers={"Transfer-Encoding": "chunked"},
    )
    response = conn.getresponse()
    assert response.status == 413 and json.loads(response.read())["error"]["kind"] == (
        "body_too_large"
    )
    conn.close()


def test_a_body_of_megabytes_gets_its_413_not_a_reset(fast: Live) -> None:
    """An OpenAI client posting a long chat whole (4 MB) saw "connection reset by peer": the
    server answered before reading the body, and a socket closed with data unread is reset
    while the client is still sending. The body is read and dropped first now."""
    huge = json.dumps({"messages": [{"role": "user", "content": "x" * 4_000_000}]}).encode()
    for path in ("/chat", "/v1/chat/completions", "/chat"):  # (urllib's header, as it sends)
        status, _, payload = fast.fetch_json("POST", path, huge, {"Connection": "close"})
        assert status == 413 and payload["error"]["kind"] == "body_too_large", path


def test_a_prompt_over_the_limit_is_refused_clearly(fast: Live) -> None:
    body = {
        "messages": [
            {"role": "user", "content": "中" * 10_000},  # 30 kB of the 64 kB
            {"role": "user", "content": "x" * 22_001},
        ]
    }
    status, _, payload = fast.fetch_json("POST", "/chat", body)
    assert status == 413 and payload["error"]["kind"] == "prompt_too_long"
    assert "32001 characters" in payload["error"]["message"]


def test_unknown_paths_and_methods_get_json_errors(fast: Live) -> None:
    status, _, payload = fast.fetch_json("GET", "/nope")
    assert status == 404 and payload["error"]["kind"] == "not_found"
    status, headers, payload = fast.fetch_json("GET", "/chat")
    assert status == 405 and payload["error"]["kind"] == "method_not_allowed"
    assert "POST" in headers["allow"]


# -- the OpenAI-compatible endpoint ---------------------------------------------------------


def test_openai_stream_shape_and_done(fast: Live) -> None:
    messages, _ = fast.stream(
        "/v1/chat/completions", {**HELLO, "stream": True, "model": "anything"}
    )
    assert messages[-1].data == "[DONE]"
    chunks = [json.loads(m.data) for m in messages[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert {c["model"] for c in chunks} == {"scripted"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    middle = [c["choices"][0] for c in chunks[1:-1]]
    assert all(c["finish_reason"] is None and c["index"] == 0 for c in middle)
    assert "".join(c["delta"]["content"] for c in middle) == SCRIPT
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}


def test_openai_non_streaming_shape(fast: Live) -> None:
    body = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "max_tokens": 3,
    }
    status, _, payload = fast.fetch_json("POST", "/v1/chat/completions", body)
    assert status == 200
    assert payload["object"] == "chat.completion" and payload["id"].startswith("chatcmpl-")
    (choice,) = payload["choices"]
    assert choice["finish_reason"] == "length"
    assert choice["message"] == {"role": "assistant", "content": "## Why the"}


def test_models_and_health(fast: Live) -> None:
    status, _, payload = fast.fetch_json("GET", "/v1/models")
    assert status == 200 and payload["data"][0]["id"] == "scripted"
    health = fast.health()
    assert health["server"] == "tkchat" and health["status"] == "ok"
    assert health["model"] == "scripted" and health["n_ctx"] == 8192
    assert health["busy"] is False and isinstance(health["cancels"], list)


# -- the browser client's files ---------------------------------------------------------------


def test_static_files_with_correct_types(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>tkchat</title>")
    (tmp_path / "app.js").write_text("console.log('hi')")
    (tmp_path / "worker.mjs").write_text("export {}")
    (tmp_path / "style.css").write_text("body {}")
    (tmp_path / ".secret.js").write_text("no")
    (tmp_path.parent / "outside.js").write_text("no")
    with serve(ScriptedBackend(), static_dir=tmp_path) as live:
        for path, content_type in [
            ("/", "text/html; charset=utf-8"),
            ("/static/app.js", "text/javascript; charset=utf-8"),
            ("/static/worker.mjs", "text/javascript; charset=utf-8"),
            ("/static/style.css", "text/css; charset=utf-8"),
        ]:
            status, headers, body = live.fetch("GET", path)
            assert status == 200 and headers["content-type"] == content_type, path
            assert headers["x-content-type-options"] == "nosniff"
        for path in (
            "/static/missing.js",
            "/static/../outside.js",
            "/static/%2e%2e/outside.js",
            "/static/.secret.js",
            "/static/",
        ):
            status, _, _ = live.fetch("GET", path)
            assert status == 404, path


def test_without_the_client_the_page_says_so(tmp_path: Path) -> None:
    with serve(ScriptedBackend(), static_dir=tmp_path) as live:
        status, headers, body = live.fetch("GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"not installed" in body


# -- run_server: what a user sees when it cannot start -------------------------------------


def test_run_server_reports_a_bad_model_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from tkchat.generate.llama_backend import LlamaBackend

    assert run_server(LlamaBackend("~/no-such-model.gguf"), port=0) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("tkchat serve: ") and "\n" not in err and "Traceback" not in err


def test_run_server_reports_a_busy_port(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        assert run_server(ScriptedBackend(), port=taken.getsockname()[1]) == 1
    captured = capsys.readouterr()
    assert "cannot listen" in captured.err and captured.out == ""  # no address announced


# -- the real model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Iterator[Live]:
    with serve_bundled_model(512) as live:
        yield live


STORY = {
    "messages": [
        {"role": "user", "content": "Write a long story about a dragon who learns to cook."}
    ],
    "max_tokens": 300,
    "temperature": 0,
    "seed": 1,
}  # about 300 tokens of story, greedy


@pytest.mark.model
def test_the_real_model_streams_and_stops_on_disconnect(model: Live) -> None:
    text, final = check_contract(model.events({**STORY, "max_tokens": 12}))
    assert isinstance(final, Done) and final.reason == "length" and text.strip()
    before = len(model.health()["cancels"])
    with streaming(model, body=STORY) as (conn, _):
        hang_up(conn)
        wait_until(lambda: len(model.health()["cancels"]) > before, what="the cancel")
    cancel = model.health()["cancels"][-1]
    assert cancel["tokens_after_disconnect"] <= 1  # within one token, on the real model loop


@pytest.mark.model
def test_a_prompt_longer_than_the_context_is_a_context_overflow_event(model: Live) -> None:
    long = {"messages": [{"role": "user", "content": "tell me about cats " * 200}]}
    events = model.events(long)
    assert len(events) == 1 and isinstance(events[0], Error)
    assert events[0].kind == "context_overflow" and "512" in events[0].message
    status, _, payload = model.fetch_json("POST", "/v1/chat/completions", long)
    assert status == 400 and payload["error"]["kind"] == "context_overflow"


@pytest.mark.model
def test_a_long_conversation_is_fitted_on_chat_but_refused_by_the_openai_api(model: Live) -> None:
    """/chat applies tkchat's context policy (the oldest turns go, and the done event says how
    many); an OpenAI client manages its own context, so /v1 answers with context_overflow."""
    turns = []
    for index in range(12):
        turns += [
            {"role": "user", "content": f"question {index}: " + "tea and cats " * 12},
            {"role": "assistant", "content": "an answer about tea and cats " * 5},
        ]
    body = {
        "messages": [*turns, {"role": "user", "content": "and the newest question?"}],
        "max_tokens": 8,
        "seed": 1,
    }
    text, final = check_contract(model.events(body))
    assert isinstance(final, Done), final
    assert final.stats.context_dropped > 0 and final.stats.prompt_tokens + 8 <= 512
    status, _, payload = model.fetch_json("POST", "/v1/chat/completions", body)
    assert status == 400 and payload["error"]["kind"] == "context_overflow", payload
