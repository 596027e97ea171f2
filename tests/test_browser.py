"""The browser client (``tkchat/serve/static/``), end to end in headless Chromium.

The real server (``tkchat.serve.server.create_app``) runs under uvicorn on a free 127.0.0.1 port
with a :class:`ScriptedBackend`, and Playwright drives Debian's own ``/usr/bin/chromium``
(Playwright's browser download does not work here). The page's test hooks are documented at
the top of ``app.js`` (``window.tkchat``).

What is proved here: the answer arrives whole (Chinese and emoji intact) and is rendered as
markdown once done; the worker's SSE parser survives events, lines and characters split across
network reads (a real server whose response is re-chunked into 7-byte pieces, and the parser
alone fed every possible cut); Stop reaches the server, which stops generating; a hostile
answer runs and loads nothing; the BROKEN toggles still produce the whole answer; heartbeat
and lag are shown and move. No timing is asserted: ``tkchat bench`` measures speed.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_until
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate

pytestmark = pytest.mark.gui

pytest.importorskip("starlette", reason="tkchat serve needs starlette (the serve extra)")
uvicorn = pytest.importorskip("uvicorn", reason="tkchat serve needs uvicorn (the serve extra)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright drives the browser")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
TIMEOUT_MS = 30_000  # a hang guard: generous, for a machine with every core busy

Page = Any  # playwright.sync_api.Page (the module is imported lazily, above)
ASGIApp = Callable[..., Any]


# -- the server, in a background thread ---------------------------------------------------


class Rechunk:
    """Test-only ASGI middleware: every body message of ``POST /chat`` goes out in pieces of
    ``size`` bytes, each its own write, the loop given a turn between two. Events, lines,
    ``data:`` prefixes and UTF-8 characters all end up cut somewhere. The server's code is
    untouched."""

    def __init__(self, app: ASGIApp, size: int = 7) -> None:
        self.app = app
        self.size = size

    async def __call__(self, scope: dict[str, Any], receive: ASGIApp, send: ASGIApp) -> None:
        if scope["type"] != "http" or scope["path"] != "/chat":
            await self.app(scope, receive, send)
            return

        async def send_in_pieces(message: dict[str, Any]) -> None:
            body = message.get("body", b"")
            if message["type"] != "http.response.body" or len(body) <= self.size:
                await send(message)
                return
            more = message.get("more_body", False)
            for start in range(0, len(body), self.size):
                last = start + self.size >= len(body)
                await send(
                    {
                        "type": "http.response.body",
                        "body": body[start : start + self.size],
                        "more_body": more or not last,
                    }
                )
                if not last:
                    await asyncio.sleep(0)

        await self.app(scope, receive, send_in_pieces)


@dataclass
class LiveServer:
    """``tkchat serve``'s app under uvicorn on 127.0.0.1, in a daemon thread."""

    backend: ScriptedBackend
    wrap: Callable[[ASGIApp], ASGIApp] | None = None
    token: str | None = None  # as when it listens beyond the loopback (run_server's token)
    join_code: str | None = None  # the printed link's (with a token; None: a fresh one)
    limits: Any = None  # the line's (tkchat.serve.line.LineLimits); None: the defaults
    port: int = 0
    _server: Any = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _app: Any = field(default=None, repr=False)

    def start(self) -> LiveServer:
        from tkchat.serve.server import create_app

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))  # the port is ours before the app needs to know it
        self.port = sock.getsockname()[1]
        self.backend.load()
        options = {} if self.limits is None else {"limits": self.limits}
        self._app = create_app(
            self.backend, port=self.port, token=self.token, join_code=self.join_code, **options
        )
        app = self.wrap(self._app) if self.wrap else self._app
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            daemon=True,
            name=f"uvicorn-{self.port}",
        )
        self._thread.start()
        wait_until(self._started, timeout=10, what="uvicorn to start")
        return self

    def _started(self) -> bool:
        if self._server.started:
            return True
        if self._thread is None or not self._thread.is_alive():
            raise AssertionError("uvicorn exited before it started")
        return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def health(self) -> dict[str, Any]:
        # No proxy: a proxy from the environment would never reach our loopback server.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(self.url + "health", timeout=30) as response:
            return json.load(response)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._app is not None:
            self._app.state.chat_server.shutdown()


@pytest.fixture
def serve() -> Iterator[Callable[..., LiveServer]]:
    """Start servers on demand: ``serve(backend, wrap=None)``; all stop after the test."""
    servers: list[LiveServer] = []

    def start(
        backend: ScriptedBackend,
        wrap: Callable[[ASGIApp], ASGIApp] | None = None,
        limits: Any = None,
    ) -> LiveServer:
        server = LiveServer(backend, wrap, limits=limits).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# -- the browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system Chromium, headless. Each launch gets a fresh temporary profile (Playwright's
    own user-data dir, deleted on close), so nothing carries over from other runs."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Page]]:
    """``open_page(server, bypass_csp=False, locale=None, query="")``: a fresh browser context
    on the client page (``locale``: the browser's language, e.g. "zh-CN"; ``query``: added to
    the address, e.g. "?lang=en").

    The test fails if the page threw an uncaught exception, or if the page broke its own
    Content-Security-Policy (that would mean the app itself does something the policy
    forbids, such as an inline style)."""
    contexts: list[Any] = []
    problems: list[str] = []

    def open_(
        server: LiveServer, *, bypass_csp: bool = False, locale: str | None = None, query: str = ""
    ) -> Page:
        context = browser.new_context(bypass_csp=bypass_csp, locale=locale)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
        page.on(
            "console",
            lambda msg: (
                problems.append(f"console: {msg.text}")
                if "Content Security Policy" in msg.text
                else None
            ),
        )
        page.goto(server.url + query)
        page.wait_for_function("() => window.tkchat && window.TkSSE && window.TkMarkdown")
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not problems, "the page reported problems:\n" + "\n".join(problems)


def state(page: Page) -> dict[str, Any]:
    return page.evaluate("() => window.tkchat.state")


def ask(page: Page, prompt: str = "Why does the window stay smooth?") -> None:
    """Type a question and press Enter, as a user would."""
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")


def wait_answer(page: Page, status: str = "done") -> dict[str, Any]:
    """Wait until the answer ended with ``status`` and (when done) its markdown is in place."""
    page.wait_for_function("s => window.tkchat.state.status === s", arg=status)
    if status == "done":
        page.wait_for_selector("#transcript .msg.assistant:last-of-type .md", state="attached")
    return state(page)


def assert_whole(st: dict[str, Any], text: str) -> None:
    """The answer arrived whole and in order: every event, seq 1..n without a gap."""
    assert st["text"] == text
    assert st["lastEvent"]["type"] == "done"
    n = st["lastEvent"]["seq"]
    assert st["seqs"] == list(range(1, n + 1))
    assert st["chunks"] == n - 1  # every chunk, then exactly one final event


# -- streaming and rendering --------------------------------------------------------------


def test_a_long_prompt_shows_reading_progress_until_the_first_text(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    # The reading: 7 steps of at least 50 ms, so the server's pacing lets a report through
    # (after 200 ms), then the last. The answer waits at a gate until the test has looked.
    gate = TokenGate()
    server = serve(ScriptedBackend(rate=0, tokens=40, prompt_rate=300.0, gate=gate))
    page = open_page(server)
    assert page.locator("#prompt-progress").is_hidden()
    ask(page, "tea " * 100)
    page.wait_for_function("() => window.tkchat.state.progress?.done > 0")
    page.wait_for_function(
        "() => window.tkchat.state.progress.done === window.tkchat.state.progress.total"
    )
    assert state(page)["progressShown"]
    assert page.locator("#prompt-progress").is_visible()
    assert page.locator("#status").inner_text().startswith("reading your message… ")
    gate.release(40)
    st = wait_answer(page)
    assert st["progressEvents"] > 0 and not st["progressShown"]
    assert st["progress"]["done"] == st["progress"]["total"] > 100
    assert page.locator("#prompt-progress").is_hidden()
    assert st["lastEvent"]["type"] == "done" and st["text"]
    # progress events are numbered with the rest: seq 1..n without a gap
    assert st["seqs"] == list(range(1, st["lastEvent"]["seq"] + 1))


# The page's animation frames, held by the test: requestAnimationFrame keeps the callback
# until window.__runFrames() runs what is held (the page's "next frame"); __realFrames()
# puts the browser's own frames back and runs what was held.
HOLD_FRAMES_JS = """() => {
  const real = [window.requestAnimationFrame, window.cancelAnimationFrame];
  const held = new Map();
  let next = 1;
  window.requestAnimationFrame = (callback) => { held.set(next, callback); return next++; };
  window.cancelAnimationFrame = (id) => { held.delete(id); };
  window.__heldFrames = () => held.size;
  window.__runFrames = () => {
    const due = [...held.values()];
    held.clear();
    for (const callback of due) callback(performance.now());
    return due.length;
  };
  window.__realFrames = () => {
    [window.requestAnimationFrame, window.cancelAnimationFrame] = real;
    return window.__runFrames();
  };
}"""


def test_a_frames_worth_of_chunks_is_one_dom_update_then_markdown(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """The fixed path: chunks that arrive between two frames are appended in ONE update, at
    the frame. Ten chunks are let through one at a time (each reaches the page before the next
    leaves the server), the frame held; then one frame runs: one update, all ten shown."""
    gate = TokenGate()
    server = serve(ScriptedBackend(rate=0, split_utf8=True, gate=gate))
    page = open_page(server)
    assert page.locator("#stop").is_disabled()
    page.evaluate(HOLD_FRAMES_JS)
    ask(page)
    page.wait_for_function("() => window.tkchat.state.status === 'streaming'", polling=10)
    assert page.locator("#send").is_disabled() and page.locator("#stop").is_enabled()
    for count in range(1, 11):
        gate.release(1)
        page.wait_for_function("n => window.tkchat.state.chunks === n", arg=count, polling=10)
    st = state(page)
    assert (st["textUpdates"], st["frames"]) == (0, 0)  # ten chunks in, nothing written yet
    assert page.evaluate("() => window.__heldFrames()") == 1  # one frame asked for, not ten
    assert page.evaluate("() => window.__runFrames()") == 1
    st = state(page)
    assert (st["textUpdates"], st["frames"]) == (1, 1)  # the frame wrote all ten at once
    shown = page.locator("#transcript .msg.assistant .plain").inner_text()
    assert shown == st["text"] and SCRIPT.startswith(shown) and shown

    page.evaluate("() => window.__realFrames()")
    gate.release(1 << 20)
    st = wait_answer(page)
    assert_whole(st, SCRIPT)
    assert st["reader"] == "worker"
    assert st["shownText"] == SCRIPT  # what the user saw stream, exactly (中文, 😀, 𝄞 intact)
    # One DOM update per animation frame (plus, at most, the final flush), never per chunk.
    assert st["textUpdates"] <= st["frames"] + 1

    md = page.locator("#transcript .msg.assistant .md")
    assert md.locator("h2").inner_text() == "Why the window stays smooth"
    assert md.locator("strong").first.inner_text() == "worker thread"
    assert md.locator("em").first.inner_text() == "between"
    assert md.locator("ol > li").count() == 3
    assert "def drain(self) -> None:" in md.locator("pre > code").inner_text()
    assert md.locator("p > code").first.inner_text() == "queue.Queue"
    assert "😀 🚀 🧠 𝄞" in md.locator("blockquote").inner_text()
    assert "流式输出只解决了" in md.inner_text()
    assert "**" not in md.inner_text() and "```" not in md.inner_text()
    assert page.locator("#send").is_enabled() and page.locator("#stop").is_disabled()
    assert page.locator("#transcript .msg.user").inner_text() == "Why does the window stay smooth?"


def test_heartbeat_and_lag_are_shown_and_update(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    page = open_page(serve(ScriptedBackend()))
    first_clock = page.inner_text("#heartbeat")
    beats = state(page)["heartbeats"]
    page.wait_for_function("n => window.tkchat.state.heartbeats > n", arg=beats)
    assert re.fullmatch(r"\d\d:\d\d:\d\d", page.inner_text("#heartbeat"))
    assert page.inner_text("#heartbeat") != first_clock

    samples = len(state(page)["lagSamples"])
    assert samples > 0
    page.wait_for_function("n => window.tkchat.state.lagSamples.length > n", arg=samples)
    for figure in ("#lag-now", "#lag-p99"):
        assert re.fullmatch(r"\d+\.\d", page.inner_text(figure)), figure
    for figure in ("#long-tasks", "#tokens-rate", "#ui-rate"):
        assert page.inner_text(figure).isdigit(), figure


def test_length_limit_model_error_and_new_chat(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """max tokens reaches the server; a model that dies mid-answer gives one clear message
    and a usable page; New chat forgets the conversation."""
    page = open_page(serve(ScriptedBackend(rate=0, fail_at=30)))
    page.fill("#max-tokens", "12")
    ask(page)
    st = wait_answer(page)
    assert st["lastEvent"]["reason"] == "length" and st["chunks"] <= 12

    page.fill("#max-tokens", "")
    ask(page, "all of it")
    st = wait_answer(page, "error")
    assert st["lastEvent"]["type"] == "error"
    note = page.locator("#transcript .note.error").inner_text()
    assert "crashed at token 30" in note
    assert page.locator("#send").is_enabled() and page.locator("#stop").is_disabled()

    page.click("#new-chat")
    assert page.locator("#transcript > *").count() == 0


# -- the SSE parser -----------------------------------------------------------------------


def test_events_cut_into_7_byte_network_pieces_all_arrive(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """The real server's stream, re-chunked into 7-byte pieces on the way out: every event,
    line and multi-byte character is cut, and the page still gets every event, in order.
    (How the browser groups the pieces into reads is its business: the parser is fed every
    possible cut in the next test.)"""
    server = serve(ScriptedBackend(rate=0), wrap=lambda app: Rechunk(app, size=7))
    page = open_page(server)
    ask(page)
    st = wait_answer(page)
    assert_whole(st, SCRIPT)
    assert st["shownText"] == SCRIPT

    # The BROKEN main-thread reader uses the same parser: it is wrong about *where* it reads,
    # not about how it parses, so it too gets every event.
    page.click("#broken-main-thread")
    ask(page, "again, please")
    st = wait_answer(page)
    assert st["reader"] == "main-thread"
    assert_whole(st, SCRIPT)


PARSER_JS = """
(wire) => {
  const { SSEParser, naiveParse } = window.TkSSE;
  const bytes = new TextEncoder().encode(wire);
  const parse = (pieces) => {
    const parser = new SSEParser();
    const events = [];
    for (const piece of pieces) events.push(...parser.feed(piece));
    events.push(...parser.end());
    return events;
  };
  const cut = (size) => {
    const pieces = [];
    for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
    return pieces;
  };
  const whole = parse([bytes]);
  const expected = JSON.stringify(whole);
  const failures = [];
  for (let size = 1; size < bytes.length; size += 1) {
    if (JSON.stringify(parse(cut(size))) !== expected) failures.push(`pieces of ${size}`);
  }
  for (let at = 1; at < bytes.length; at += 1) {  // every cut point, inside characters too
    const pieces = [bytes.subarray(0, at), bytes.subarray(at)];
    if (JSON.stringify(parse(pieces)) !== expected) failures.push(`cut at byte ${at}`);
  }
  return { whole, failures };
}
"""

NAIVE_JS = """
(wire) => {
  const { SSEParser, naiveParse } = window.TkSSE;
  const bytes = new TextEncoder().encode(wire);
  const parser = new SSEParser();
  let good = 0;
  let naive = 0;
  for (let i = 0; i < bytes.length; i += 7) {
    const piece = bytes.subarray(i, i + 7);
    good += parser.feed(piece).length;
    naive += naiveParse(piece).length;
  }
  good += parser.end().length;
  return { good, naive, naiveWhole: naiveParse(bytes).length };
}
"""


def test_parser_survives_every_split(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """``sse-worker.js``'s parser, loaded in the page, fed one stream cut at every size and at
    every byte: the same events each time. The naive split-by-line parser loses events."""
    page = open_page(serve(ScriptedBackend()))
    wire = (
        "\ufeff: a comment, as servers send for keep-alive\r\n"
        'data: {"type":"chunk","gen":1,"seq":1,"text":"中文 and 😀 🧠 𝄞"}\r\n\r\n'
        "event: note\r\ndata: first line\r\ndata:second line\r\n\r\n"
        "data: lf\ndata: only\n\n"
        "id: 7\rdata: a\r\rdata\n\n"
        'retry: 10\ndata: {"type":"done","gen":1,"seq":2}\n\n'
        "data: an event without its blank line is dropped at the end\n"
    )
    result = page.evaluate(PARSER_JS, wire)
    assert result["failures"] == []
    chunk = '{"type":"chunk","gen":1,"seq":1,"text":"中文 and 😀 🧠 𝄞"}'
    assert result["whole"] == [
        {"type": "message", "data": chunk, "id": ""},
        {"type": "note", "data": "first line\nsecond line", "id": ""},
        {"type": "message", "data": "lf\nonly", "id": ""},
        {"type": "message", "data": "a", "id": "7"},
        {"type": "message", "data": "", "id": "7"},
        {"type": "message", "data": '{"type":"done","gen":1,"seq":2}', "id": "7"},
    ]
    assert json.loads(result["whole"][0]["data"])["text"] == "中文 and 😀 🧠 𝄞"

    # What a real server sends, cut into 7-byte reads: the naive parser loses events.
    events = [
        {"type": "chunk", "gen": 3, "seq": i, "text": f" 第{i}个 token 🙂"} for i in range(1, 41)
    ]
    stream = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    counts = page.evaluate(NAIVE_JS, stream)
    assert counts["good"] == counts["naiveWhole"] == len(events)
    assert counts["naive"] < len(events)


# -- Stop --------------------------------------------------------------------------------


def wait_cancels(server: LiveServer, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Poll ``/health`` until the server has recorded ``count`` client disconnects."""
    cancels: list[dict[str, Any]] = []

    def recorded() -> bool:
        cancels[:] = server.health()["cancels"]
        return len(cancels) >= count

    try:
        wait_until(
            recorded, timeout, what=f"the server to record {count} disconnects", interval=0.05
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it recorded {len(cancels)}") from None
    return cancels


def test_stop_aborts_the_fetch_and_the_server_stops_generating(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    server = serve(ScriptedBackend(rate=50, tokens=100_000))
    page = open_page(server)
    ask(page)
    page.wait_for_function("() => window.tkchat.state.chunks >= 5")
    page.click("#stop")
    st = wait_answer(page, "stopped")
    assert page.locator("#transcript .note.stopped").inner_text() == "[stopped]"
    assert page.locator("#send").is_enabled() and page.locator("#stop").is_disabled()
    assert st["lastEvent"]["type"] == "chunk"  # no final event: the connection is gone

    cancel = wait_cancels(server, 1)[0]
    assert cancel["tokens_after_disconnect"] <= 1
    assert server.health()["busy"] is False
    # All that arrived was shown, then rendered as markdown like a finished answer.
    assert st["shownText"] == st["text"] != ""
    page.wait_for_selector("#transcript .msg.assistant .md", state="attached")
    assert page.locator("#transcript .msg.assistant .plain").count() == 0

    # The next question starts at once, from seq 1; Esc stops it too. Nothing of the first
    # answer leaks into the second.
    ask(page, "and now?")
    page.wait_for_function("() => window.tkchat.state.chunks >= 3")
    assert state(page)["seqs"][:3] == [1, 2, 3]
    page.keyboard.press("Escape")
    wait_answer(page, "stopped")
    cancels = wait_cancels(server, 2)
    assert all(c["tokens_after_disconnect"] <= 1 for c in cancels)
    assert page.locator("#transcript .note.stopped").count() == 2


# -- model output is untrusted -------------------------------------------------------------

HOSTILE = "\n\n".join(
    [
        "# A perfectly normal answer",
        "<script>window.__pwned=1</script>",
        '<img src=x onerror="window.__pwned=2">',
        "[x](javascript:window.__pwned=3) and ![y](http://127.0.0.1:1/y.png)",
        '<iframe src="http://127.0.0.1:1/"></iframe>',
        '**bold <svg onload="window.__pwned=4"></svg>** and <a href="javascript:void 0">a</a>',
        '```html\n<img src=x onerror="window.__pwned=5">\n<script>window.__pwned=6</script>\n```',
        "`<img src=x onerror=window.__pwned=7>` inline",
        '> <details open ontoggle="window.__pwned=8">quoted</details>',
        "- <style>body { display: none }</style>\n- <object data=x></object>",
    ]
)

VISIBLE_MARKUP = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=2">',
    "[x](javascript:window.__pwned=3)",
    '<iframe src="http://127.0.0.1:1/"></iframe>',
    '<svg onload="window.__pwned=4"></svg>',
    "<style>body { display: none }</style>",
]

CHECK_TREE_JS = """
(sources) => sources.map((source) => {
  const fragment = window.TkMarkdown.renderMarkdown(source);
  const found = [];
  for (const el of fragment.querySelectorAll('*')) {
    if (!window.TkMarkdown.ALLOWED_TAGS.has(el.tagName) || el.attributes.length > 0) {
      found.push(el.outerHTML.slice(0, 80));
    }
  }
  return found;
})
"""


def requests_settled(page: Page, requests: list[str]) -> None:
    """Every request the page has made so far is in ``requests``: the page fetches one more,
    and the browser reports requests in the order they were made."""
    assert page.evaluate("() => fetch('/health?settled').then((r) => r.status)") == 200
    for _ in range(100):  # (each round trip lets Playwright hand over the events it received)
        if any(url.endswith("/health?settled") for url in requests):
            return
        page.evaluate("() => 0")
    raise AssertionError("the page's last request was never reported")


def check_hostile_answer(page: Page, server: LiveServer, requests: list[str]) -> None:
    answer = page.locator("#transcript .msg.assistant").last
    assert page.evaluate("() => window.__pwned") is None
    for tag in ("img", "iframe", "script", "svg", "a", "object", "style", "details"):
        assert answer.locator(tag).count() == 0, tag
    text = answer.locator(".md").inner_text()
    for markup in VISIBLE_MARKUP:
        assert markup in text, markup
    code = answer.locator("pre > code").inner_text()
    assert '<img src=x onerror="window.__pwned=5">' in code
    assert "<script>window.__pwned=6</script>" in code
    assert answer.locator("p > code").inner_text() == "<img src=x onerror=window.__pwned=7>"
    # Nothing was fetched on the answer's behalf: only the page, its files and /chat.
    origin = server.url.rstrip("/")
    for url in requests:
        assert url.startswith(origin), url
        assert re.fullmatch(
            r"/(static/[\w.-]+|chat|favicon\.ico|health\?settled)?", url[len(origin) :]
        ), url


def test_hostile_answer_runs_nothing_and_loads_nothing(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """With the page's Content-Security-Policy switched off, so that markdown.js alone has to
    hold: nothing from the answer runs, loads or becomes an element; the markup stays text."""
    server = serve(ScriptedBackend(rate=0, text=HOSTILE))
    page = open_page(server, bypass_csp=True)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    ask(page)
    st = wait_answer(page)
    assert st["text"] == HOSTILE
    requests_settled(page, requests)
    check_hostile_answer(page, server, requests)

    # The same answer through BROKEN per-chunk rendering: every partial answer is hostile too.
    page.click("#broken-per-chunk")
    ask(page, "again")
    st = wait_answer(page)
    assert st["renders"] == st["chunks"] + 1
    requests_settled(page, requests)
    check_hostile_answer(page, server, requests)

    # The renderer alone, on pieces of hostile markdown: only allowed, attribute-less elements.
    pieces = [
        *HOSTILE.split("\n\n"),
        HOSTILE,
        "<b>x</b>",
        "*<i onclick=x>y</i>*",
        '```\n</code></pre><img src=x onerror="window.__pwned=9">',
    ]
    assert page.evaluate(CHECK_TREE_JS, pieces) == [[] for _ in pieces]
    assert page.evaluate("() => window.__pwned") is None


def test_page_has_a_strict_content_security_policy(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """The second wall, behind markdown.js: no inline script, no images, no frames."""
    page = open_page(serve(ScriptedBackend()))
    policy = page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
    assert policy is not None
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "img-src 'none'" in policy and "frame-src 'none'" in policy
    # No script or style in the page is loaded from anywhere but the server itself.
    sources = page.evaluate("""() => [...document.querySelectorAll('script[src], link[href]')]
                                     .map((el) => el.src || el.href)""")
    assert sources and all(s.startswith(page.url.rstrip("/")) for s in sources)


# -- the BROKEN toggles -----------------------------------------------------------------------


def test_broken_toggles_still_produce_the_whole_answer(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    server = serve(ScriptedBackend(rate=0))
    page = open_page(server)
    toggles = page.locator("fieldset.broken-toggles")
    assert "BROKEN (on purpose)" in toggles.locator("legend").inner_text()
    assert page.locator("#broken-bar").is_hidden()

    page.click("#broken-main-thread")
    page.click("#broken-per-chunk")
    bar = page.locator("#broken-bar")
    assert bar.is_visible() and "BROKEN (on purpose)" in bar.inner_text()
    ask(page)
    st = wait_answer(page)
    assert_whole(st, SCRIPT)
    assert st["reader"] == "main-thread"
    assert st["renders"] == st["chunks"] + 1  # the whole answer re-rendered for every chunk
    assert st["textUpdates"] == st["chunks"]  # one DOM update per chunk, no batching
    md = page.locator("#transcript .msg.assistant .md").last
    assert md.locator("h2").inner_text() == "Why the window stays smooth"

    # (a) alone: the main thread reads and appends plain text per chunk, still whole.
    page.click("#broken-per-chunk")
    ask(page, "once more")
    st = wait_answer(page)
    assert_whole(st, SCRIPT)
    assert st["reader"] == "main-thread" and st["shownText"] == SCRIPT
    assert st["textUpdates"] == st["chunks"] and st["renders"] == 1

    # Both off again: back to the worker and one update per frame.
    page.click("#broken-main-thread")
    assert page.locator("#broken-bar").is_hidden()
    ask(page, "and the right way")
    st = wait_answer(page)
    assert_whole(st, SCRIPT)
    assert st["reader"] == "worker" and st["textUpdates"] <= st["frames"] + 1
