"""The asyncio modes on a remote server: the window's answer through ``httpx``, against a real
``tkchat serve`` (uvicorn, in this process) on the scripted backend, stepped by its gate.

- both asyncio modes answer through an ``httpx.AsyncClient`` (the server saw the request on
  ``/v1/chat/completions`` with httpx's user agent), the whole text, one ``done``;
- Stop mid-answer cancels the task, which closes the response and its connection: the server
  sees the client gone (``/health``'s ``cancels``), its model loop ends with no token after
  the disconnect, and the generation has exactly one final event;
- a server gone away is one ``error`` event, in the sync backend's very sentence.

No clock decides anything: the server's tokens pass its gate only when the test lets them.
"""

from __future__ import annotations

import asyncio
import tkinter as tk
from collections.abc import Callable, Iterator
from contextlib import aclosing
from typing import Any

import pytest

from tests import test_remote_backend
from tests.conftest import pump_until, wait_until
from tests.test_asyncio_modes import finals_sent, the_answer
from tests.test_broken_modes import MAIN, TEXT, TOKENS, click_send
from tests.test_remote_backend import (
    QUESTION,
    FakeServer,
    generate,
    loaded,
    only_error,
    text_of,
)
from tests.test_server import Live, serve
from tkchat.aio.answer import SourceFailed
from tkchat.aio.remote_source import RemoteTokens
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.remote import RemoteBackend
from tkchat.generate.remote.openai_protocol import CHAT_PATH
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.modes import ASYNCIO_THREAD, ASYNCIO_TK

pytestmark = pytest.mark.gui
fake = test_remote_backend.fake  # the fixture: a server that misbehaves as asked
MODES = [ASYNCIO_THREAD, ASYNCIO_TK]


class Requests:
    """An ASGI middleware noting each HTTP request the server gets: (method, path, agent)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def wrap(self, app: Any) -> Any:
        async def watched(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                agent = dict(scope["headers"]).get(b"user-agent", b"").decode()
                self.seen.append((scope["method"], scope["path"], agent))
            await app(scope, receive, send)

        return watched

    def chats(self) -> list[str]:
        """The user agents of the chat requests."""
        return [agent for method, path, agent in self.seen if (method, path) == ("POST", CHAT_PATH)]


class Server:
    """``tkchat serve`` on the scripted answer, its tokens let through by ``gate``."""

    def __init__(self, live: Live, gate: TokenGate, requests: Requests) -> None:
        self.live, self.gate, self.requests = live, gate, requests
        self.url = f"http://127.0.0.1:{live.port}"


@pytest.fixture
def server() -> Iterator[Server]:
    gate, requests = TokenGate(), Requests()
    with serve(ScriptedBackend(text=TEXT, gate=gate), wrap=requests.wrap) as live:
        yield Server(live, gate, requests)
        gate.release(1 << 20)  # nothing waits at the gate when the server stops


def remote_app(make_app: Callable[..., Any], url: str, mode: str) -> Any:
    """A window whose model is the server at ``url`` (loaded: its /health read), in ``mode``."""
    app = make_app(RemoteBackend(url), sampling=Sampling(max_tokens=0))
    assert app.flow.model_ready
    app.teaching.set_mode(mode)
    return app


def the_source(answer: Any) -> RemoteTokens:
    source = answer.source
    assert isinstance(source, RemoteTokens)
    return source


@pytest.mark.parametrize("mode", MODES)
def test_the_asyncio_modes_answer_through_httpx(
    server: Server, root: tk.Tk, make_app: Callable[..., Any], mode: str
) -> None:
    app = remote_app(make_app, server.url, mode)
    click_send(app)
    answer = the_answer(app)
    server.gate.release(len(TOKENS))
    pump_until_finished(root, app)
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop", final
    assert app.transcript.answers[-1].text == TEXT
    assert answer.tokens >= 1 and answer.out.finished
    # the figures under it, as under any answer (asyncio-tk's were the count alone)
    figures = list(app.transcript.answers[-1].figures.values())[-1]
    assert figures.ttft_s is not None
    assert figures.tokens_per_s is not None or answer.tokens < 2
    # the prompt's size reaches the context meter, as a worker's count does
    assert final.stats.prompt_tokens == the_source(answer).prompt_tokens > 0
    assert answer.thread == MAIN if mode == ASYNCIO_TK else answer.thread != MAIN
    source = the_source(answer)
    assert source.response is not None and source.response.is_closed
    assert source.client is not None and source.client.is_closed
    (agent,) = server.requests.chats()
    assert agent.startswith("python-httpx/"), server.requests.seen


@pytest.mark.parametrize("mode", MODES)
def test_stop_closes_the_request_and_the_server_stops_generating(
    server: Server,
    root: tk.Tk,
    make_app: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    app = remote_app(make_app, server.url, mode)
    finals = finals_sent(app, monkeypatch)
    click_send(app)
    answer = the_answer(app)
    server.gate.release(3)
    view = app.transcript.answers[-1]
    pump_until(root, lambda: view.text == "".join(TOKENS[:3]), what="three tokens on screen")
    app.stop_button.invoke()
    assert app.flow.answering.answer is None  # ended at Stop
    pump_until(root, lambda: not answer.is_alive(), what="the task to end")
    source = the_source(answer)
    assert source.response is not None and source.response.is_closed
    assert source.client is not None and source.client.is_closed
    # the server saw the client go, and its model loop ended there: no token after it
    wait_until(lambda: server.live.health()["cancels"], what="the server to count the client gone")
    (cancel,) = server.live.health()["cancels"]
    assert cancel["endpoint"] == CHAT_PATH
    assert cancel["tokens"] == 3 and cancel["tokens_after_disconnect"] == 0
    server.gate.release(1 << 20)  # whatever is let through now, nobody generates it
    assert server.gate.passed == 3
    # exactly one final event: done, cancelled
    if mode == ASYNCIO_THREAD:
        assert [(f.gen, type(f), f.reason) for f in finals if isinstance(f, Done)] == [
            (answer.gen, Done, "cancelled")
        ]
        assert not [f for f in finals if isinstance(f, Error)]
    else:
        final = answer.out.final
        assert isinstance(final, Done) and final.reason == "cancelled" and finals == []
    figures = list(view.figures.values())
    # (the figures count the pieces the server sent: it may merge tokens that wait together)
    assert figures and figures[-1].ended == "stopped"
    assert figures[-1].tokens == answer.tokens and 1 <= answer.tokens <= 3


@pytest.mark.parametrize("mode", MODES)
def test_a_server_gone_is_one_error_in_the_sync_backend_s_words(
    root: tk.Tk, make_app: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    with serve(ScriptedBackend(text=TEXT, rate=0)) as live:
        app = remote_app(make_app, f"http://127.0.0.1:{live.port}", mode)
    # the server has stopped: its port refuses connections
    finals = finals_sent(app, monkeypatch)
    click_send(app)
    answer = the_answer(app)
    pump_until_finished(root, app)
    error = app.flow.answering.finished[-1]
    assert isinstance(error, Error), error
    told = only_error(generate(app.controller.backend))  # the sync backend, same server
    assert (
        (error.kind, error.message)
        == (told.kind, told.message)
        == (
            "server_unreachable",
            f"Cannot reach the server at http://127.0.0.1:{live.port}: "
            "connection refused (is the server running?)",
        )
    )
    assert answer.out.finished and not answer.is_alive()
    if mode == ASYNCIO_THREAD:
        assert [f.gen for f in finals] == [answer.gen]  # one final event, the error
    else:
        assert answer.out.final == error and finals == []


def pump_until_finished(root: tk.Tk, app: Any, answers: int = 1) -> None:
    pump_until(root, lambda: len(app.flow.answering.finished) >= answers, what="the answer")


# -- the source alone, against servers that misbehave on purpose (tests/test_remote_backend.py)


def read_through_httpx(backend: RemoteBackend) -> tuple[str, SourceFailed | None]:
    """The whole answer of the async source on a loop of its own: its text, and its failure."""
    request = GenerationRequest(QUESTION, Sampling(max_tokens=32))

    async def read() -> tuple[str, SourceFailed | None]:
        texts: list[str] = []
        try:
            async with aclosing(RemoteTokens(backend, request)) as source:
                async for item in source:
                    if isinstance(item, str):
                        texts.append(item)
        except SourceFailed as exc:
            return "".join(texts), exc
        return "".join(texts), None

    return asyncio.run(read())


@pytest.mark.parametrize("behaviour", ["ok", "bytewise", "crlf-and-pings", "cr-only"])
def test_a_well_behaved_stream_arrives_as_the_sync_backend_reads_it(
    fake: FakeServer, behaviour: str
) -> None:
    backend = loaded(fake.url)
    fake.behaviour = behaviour
    text, failed = read_through_httpx(backend)
    assert failed is None and text and text == text_of(generate(backend))


@pytest.mark.parametrize(
    "behaviour",
    [
        "status-500",
        "status-422",
        "status-404-html",
        "error-event",
        "stall-before-headers",
        "stall-after-one",
    ],
)
def test_each_failure_is_the_sync_backend_s_sentence(fake: FakeServer, behaviour: str) -> None:
    # (a stall ends after the idle timeout: short for those two, at no cost to the others)
    backend = loaded(fake.url, idle_timeout=0.2 if behaviour.startswith("stall") else 60.0)
    fake.behaviour = behaviour
    _, failed = read_through_httpx(backend)
    told = only_error(generate(backend))
    assert failed is not None and (failed.kind, str(failed)) == (told.kind, told.message)
