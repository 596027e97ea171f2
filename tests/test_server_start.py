"""``tkchat --server URL`` never starts dead: a saved chat put on screen while the window
connects does not give the connection up; Stop (or Esc) while it connects does, and the next
Send connects again; a server that was down is tried again by the next Send. A real window on
Xvfb against a real HTTP server on the loopback, whose answer to the handshake the test holds
back until it chooses: no clock decides the order of events."""

from __future__ import annotations

import contextlib
import json
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import free_port, pump_until
from tkchat.events import Done
from tkchat.generate.controller import GenerationController
from tkchat.generate.remote import RemoteBackend
from tkchat.generate.scripted import ScriptedBackend
from tkchat.transport.channel import EventChannel
from tkchat.ui.window.chat_window import AppOptions, ChatApp

pytestmark = pytest.mark.gui

ANSWER = ("Hello", " from", " the", " server.")


class HeldServer:
    """An OpenAI-compatible server that answers its handshake (``/health``: 404, then
    ``/v1/models``) only once :attr:`handshake` is set, and streams :data:`ANSWER`."""

    def __init__(self, port: int = 0) -> None:
        self.handshake = threading.Event()
        self.closing = threading.Event()
        self.health_asked = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path == "/health":
                    server.health_asked.set()
                    while not server.handshake.wait(0.05):  # held: the window is connecting
                        if server.closing.is_set():
                            return
                    self.reply(404, {"detail": "Not Found"})
                elif self.path == "/v1/models":
                    self.reply(200, {"object": "list", "data": [{"id": "held-model"}]})
                else:
                    self.reply(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in ANSWER:
                    delta = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                    self.wfile.write(b"data: " + json.dumps(delta).encode() + b"\n\n")
                end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                self.wfile.write(b"data: " + json.dumps(end).encode() + b"\n\ndata: [DONE]\n\n")
                self.close_connection = True

            def reply(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # the window gave it up (Stop)
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(
            target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def held() -> Iterator[Callable[..., HeldServer]]:
    made: list[HeldServer] = []

    def start(port: int = 0) -> HeldServer:
        made.append(HeldServer(port))
        return made[-1]

    yield start
    for server in made:
        server.close()


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(folder))
    return folder


def answered(root: tk.Misc, app) -> Done:
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=30, what="the answer")
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop", final
    assert app.transcript.answers[-1].text == "".join(ANSWER)
    return final


def test_a_saved_chat_put_on_screen_while_connecting_keeps_the_connection(
    root: tk.Tk, make_app, held, data_dir: Path
) -> None:
    first = make_app(ScriptedBackend(rate=0, text="A saved answer."), history=True)
    pump_until(root, lambda: first.conversations.ready, what="the history")
    assert first.flow.send("a saved question")
    pump_until(root, lambda: bool(first.flow.answering.finished), what="the saved answer")
    first.close()
    second_root = tk.Tk()  # the window after a restart (the first one destroyed its root)
    server = held()
    controller = GenerationController(RemoteBackend(server.url), EventChannel())
    app = ChatApp(second_root, controller, AppOptions(language="en", history=True))
    controller.load_async()
    try:
        # The saved chat is put on screen while the server still holds the handshake.
        pump_until(second_root, lambda: server.health_asked.is_set(), what="the handshake")
        pump_until(
            second_root,
            lambda: bool(app.transcript.entries) and not app.flow.showing_conversation,
            what="the saved chat on screen",
        )
        assert controller.loading, "showing the saved chat gave the connection up"
        server.handshake.set()
        pump_until(second_root, lambda: app.flow.model_ready, what="the connection")
        assert app.flow.send("and now?")
        answered(second_root, app)
    finally:
        app.close()


def test_stop_while_connecting_gives_up_and_the_next_send_connects_again(
    root: tk.Tk, make_app, held
) -> None:
    server = held()
    app = make_app(RemoteBackend(server.url), wait=False)
    pump_until(root, lambda: server.health_asked.is_set(), what="the handshake")
    assert app.stop_button.instate(["!disabled"])  # Stop gives connecting up
    app.flow.stop()
    pump_until(root, lambda: not app.controller.loading, what="the connection given up")
    assert not app.flow.model_ready and not app.flow.model_failed
    app.input.set_draft("are you there?")
    assert not app.flow.send()  # not ready: it connects again, and sends once connected
    # The server still holds the handshake, so the new connection is under way whatever
    # the machine's speed (set before Send, a quick loader could already have finished).
    assert app.controller.loading
    server.handshake.set()
    pump_until(root, lambda: app.flow.model_ready, what="the connection, again")
    answered(root, app)
    assert app.transcript.entries[0].text == "are you there?"


def test_a_server_that_was_down_is_tried_again_by_the_next_send(
    root: tk.Tk, make_app, held
) -> None:
    port = free_port()
    app = make_app(RemoteBackend(f"http://127.0.0.1:{port}"))
    assert app.flow.model_failed and not app.flow.model_ready  # nothing listens there
    server = held(port)
    server.handshake.set()
    app.input.set_draft("hello?")
    assert not app.flow.send()  # it connects again, and sends once connected
    pump_until(root, lambda: app.flow.model_ready, what="the connection")
    answered(root, app)


def test_a_local_model_that_failed_is_not_loaded_again_by_send(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    from tkchat.generate.llama_backend import LlamaBackend

    missing = tmp_path / "nowhere.gguf"
    app = make_app(LlamaBackend(str(missing)))
    assert app.flow.model_failed
    loads: list[object] = []
    app.controller.load_async = lambda *args, **kw: loads.append(args)  # counted, not run
    app.input.set_draft("hello?")
    assert not app.flow.send()
    assert loads == []  # the file will not have changed: no reload
    assert app.input.draft == "hello?"  # nothing lost
