"""``tkchat serve``: one local model behind an HTTP server that streams Server-Sent Events.

The same three stages as in the window, with HTTP in the middle::

    GenerationWorker (thread) ─put()─► AsyncEventBridge ─call_soon_threadsafe─► asyncio.Queue
        ─► the request's coroutine (event loop) ─► SSE frames ─► the client's socket

Endpoints
---------
- ``POST /chat`` — ``{"messages": [{"role", "content"}], "max_tokens"?, "temperature"?,
  "top_p"?, "seed"?}`` answers ``text/event-stream``: one ``data: <json>`` frame per event of
  the contract (``chunk``/``done``/``error`` with ``gen`` and ``seq``), ending with exactly one
  ``done`` or ``error`` — also when the backend raises (the worker guarantees it). A comment
  frame (``: keep-alive``) goes out whenever nothing was sent for 15 s.
- ``POST /v1/chat/completions`` — the OpenAI shape. ``stream: true``: ``chat.completion.chunk``
  frames (role first, then text, then an empty delta with ``finish_reason``), then
  ``data: [DONE]``; an error mid-stream is a ``data: {"error": ...}`` frame, then ``[DONE]``
  (as vLLM does). ``stream: false`` (the default): one ``chat.completion`` object. ``model``
  is ignored: there is one model. ``GET /v1/models`` lists it.
- ``GET /health`` — ``{"server": "tkchat", "status": "ok", "model", "busy", "n_ctx",
  "generations", "cancels": [...]}``; ``cancels`` holds the last few client disconnects, each
  with ``disconnect_to_exit_ms`` and ``tokens_after_disconnect`` (read by the benchmark).
- ``GET /`` and ``GET /static/{file}`` — the browser client, from ``static/``; a short page
  says so when it is not installed.

Threads
-------
The model runs on a :class:`~tkchat.generate.worker.GenerationWorker` thread; everything in
this module runs on uvicorn's event loop thread unless its docstring says otherwise. The loop
never waits for the model: the worker hands events over with ``loop.call_soon_threadsafe``
(never blocking), and coroutines await an ``asyncio.Queue``. The model is loaded before the
server starts (:func:`run_server`), never inside a request.

Client disconnect
-----------------
Each generation's response watches the connection while it streams (it awaits ASGI
``receive()``, which reports ``http.disconnect`` the moment uvicorn sees the socket close).
The worker is cancelled right there, on the loop, and the worker leaves the model loop within
one token. Per request we record ``disconnect_to_exit_ms`` (disconnect seen → worker left the
model loop, both ``perf_counter``) and ``tokens_after_disconnect``.

Several clients, one model: **busy policy**
-------------------------------------------
One model generates one answer at a time. A generation request that arrives while another is
running (including a cancelled one whose worker has not left the model loop yet — at most
one token) is refused at once with HTTP **429**, ``Retry-After: 1`` and
``{"error": {"kind": "busy", "message": ...}}``. No queue: a queue would need a position event,
fairness and a timeout, and hides the cost from the user; a clear refusal is honest and the
client decides. The slot frees the moment the worker leaves the model loop, which is before
the final event is sent, so a client that asks again right after ``done`` is never refused.

Safe by default
---------------
Binds 127.0.0.1. Every request must carry a ``Host`` of an allowed host (with or without this
server's port) and, if it has an ``Origin``, it must be ``http://<allowed host>:<port>``:
anything else is 403 — a web page on another site, or one that rebinds its DNS name to
127.0.0.1, cannot drive the model. No CORS headers at all. Bodies over ``max_body_bytes``
→ 413; prompts over ``max_prompt_chars`` → 413 ``prompt_too_long``; malformed JSON or a wrong
shape → 400 ``bad_request``; all errors are ``{"error": {"kind", "message"}}``. Unknown keys in
a request are ignored (OpenAI clients send many). On ``/chat`` a conversation longer than the
model's context loses its oldest turns (tkchat's policy, ``tkchat/generate/context.py``; the
``done`` event's ``stats.context_dropped`` says how many), and a single message too long for
it comes back as the stream's ``error`` event with kind ``context_overflow``; the OpenAI API
leaves the context to its client and answers any prompt too long with ``context_overflow``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from tkchat.events import AppEvent, Chunk, Done, Error, GenerationEvent
from tkchat.generate.backend import Backend, BackendError, GenerationRequest, Message, Sampling
from tkchat.generate.controller import GenerationController
from tkchat.generate.worker import GenerationWorker
from tkchat.transport.channel import DEFAULT_HIGH_WATER, EventChannel
from tkchat.transport.sse import (
    OPENAI_DONE,
    encode_comment,
    encode_event,
    openai_chunk,
    openai_error,
)

STATIC_DIR = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0  # a comment frame after this much silence keeps proxies and idle timers calm
CANCEL_HISTORY = 20  # disconnect measurements kept for /health
DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost")
ROLES = frozenset({"system", "user", "assistant"})
FINAL_EVENTS = (Done, Error)

CONTENT_TYPES = {  # explicit: the system's mimetypes table may call .js application/javascript
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".woff2": "font/woff2",
    ".wasm": "application/wasm",
}

SSE_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",  # a reverse proxy must not hold frames back
}

NOT_INSTALLED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tkchat serve</title></head>
<body><h1>tkchat serve</h1>
<p>The server is running, but the browser client is not installed
(<code>tkchat/serve/static/</code> is missing or empty).</p>
<p>The API works: <code>POST /chat</code>, <code>POST /v1/chat/completions</code>,
<code>GET /health</code>.</p></body></html>
"""


# -- errors ----------------------------------------------------------------------------------


class RequestRejected(Exception):
    """A request we refuse; becomes ``{"error": {"kind", "message"}}`` with ``status``."""

    def __init__(
        self, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = headers


def bad_request(message: str) -> RequestRejected:
    return RequestRejected(400, "bad_request", message)


def error_response(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": {"kind": kind, "message": message}}, status, headers=headers)


async def _rejected(request: Request, exc: Exception) -> Response:
    rejected = cast(RequestRejected, exc)
    return error_response(rejected.status, rejected.kind, rejected.message, rejected.headers)


_HTTP_KINDS = {404: "not_found", 405: "method_not_allowed"}


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 as JSON errors too (``Allow`` kept on 405)."""
    http = cast(HTTPException, exc)
    kind = _HTTP_KINDS.get(http.status_code, "http_error")
    return error_response(http.status_code, kind, str(http.detail), dict(http.headers or {}))


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug in the server (logged by Starlette): the client gets a JSON error, no traceback."""
    return error_response(500, "internal", "internal server error")


# -- Host and Origin: refuse requests that are not addressed to this server ---------------


def _bracketed(host: str) -> str:
    """An IPv6 literal as it appears in a Host header or a URL."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostOriginGuard:
    """Pure ASGI middleware (loop thread): 403 unless Host (and Origin, when sent) name this
    server. This is the DNS-rebinding defence: a hostile page whose name now resolves to
    127.0.0.1 still sends its own name in ``Host`` and its own origin in ``Origin``."""

    def __init__(self, app: ASGIApp, allowed_hosts: Sequence[str], port: int) -> None:
        self.app = app
        names = [_bracketed(h.lower()) for h in allowed_hosts]
        self.hosts = {form for name in names for form in (name, f"{name}:{port}")}
        self.origins = {f"http://{name}:{port}" for name in names}
        if port == 80:  # browsers leave the default port out of Origin
            self.origins |= {f"http://{name}" for name in names}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.problem(Headers(scope=scope))
        if problem is not None:
            await error_response(403, "forbidden", problem)(scope, receive, send)
            return
        await self.app(scope, receive, partial(_send_nosniff, send))

    def problem(self, headers: Headers) -> str | None:
        """Why a request is refused, or None."""
        hosts = headers.getlist("host")
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            return f"Host {', '.join(hosts) or '(none)'} is not this server"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return f"Origin {origin} may not use this server"
        return None


async def _send_nosniff(send: Send, message: ASGIMessage) -> None:
    """Every response says its content type is final: no browser guesses script from text."""
    if message["type"] == "http.response.start":
        message.setdefault("headers", [])
        MutableHeaders(scope=message).setdefault("x-content-type-options", "nosniff")
    await send(message)


# -- reading and checking a request -------------------------------------------------------


async def read_json(request: Request, limit: int) -> Any:
    """The body as JSON; 413 past ``limit`` bytes (checked before reading when the length is
    declared, and while reading when it is not), 400 if it is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise _too_large(limit)
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise bad_request(f"The body is not valid JSON: {exc}") from exc


def _too_large(limit: int) -> RequestRejected:
    return RequestRejected(413, "body_too_large", f"The request body is over {limit} bytes.")


def parse_chat_request(
    payload: Any, max_prompt_chars: int, *, fit_context: bool = True
) -> GenerationRequest:
    """A JSON body (``/chat`` or the OpenAI shape) as a request for the worker, or 400/413.
    ``fit_context``: see :class:`GenerationRequest` (``/chat`` fits, the OpenAI API does not)."""
    if not isinstance(payload, dict):
        raise bad_request("The body must be a JSON object.")
    messages = _parse_messages(payload.get("messages"))
    chars = sum(len(m.content) for m in messages)
    if chars > max_prompt_chars:
        raise RequestRejected(
            413,
            "prompt_too_long",
            f"The messages hold {chars} characters; this server accepts at most "
            f"{max_prompt_chars}. Shorten the conversation.",
        )
    return GenerationRequest(messages, _parse_sampling(payload), fit_context=fit_context)


def _parse_messages(value: Any) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        raise bad_request('"messages" must be a non-empty list of {"role", "content"} objects.')
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise bad_request(f"messages[{index}] must be an object.")
        role = item.get("role")
        if role not in ROLES:
            raise bad_request(f"messages[{index}].role must be one of system, user, assistant.")
        messages.append(Message(role, _parse_content(item.get("content"), index)))
    return tuple(messages)


def _parse_content(value: Any, index: int) -> str:
    if isinstance(value, str):
        return value
    # OpenAI clients may send content as a list of parts; text parts are all a text model reads.
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in value
    ):
        return "".join(p["text"] for p in value)
    raise bad_request(f"messages[{index}].content must be a string.")


def _parse_sampling(payload: dict[str, Any]) -> Sampling:
    default = Sampling()
    max_tokens = payload.get("max_tokens", payload.get("max_completion_tokens"))
    seed = payload.get("seed")
    if seed is not None and not _is_int(seed):
        raise bad_request('"seed" must be an integer or null.')
    if seed is not None and not 0 <= seed < 2**32:
        raise bad_request('"seed" must be between 0 and 4294967295.')
    return Sampling(
        temperature=_number(
            "temperature", payload.get("temperature"), default.temperature, 0.0, 5.0
        ),
        top_p=_number("top_p", payload.get("top_p"), default.top_p, 0.0, 1.0),
        max_tokens=int(
            _number("max_tokens", max_tokens, default.max_tokens, 1, 1 << 20, integer=True)
        ),
        seed=seed,
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not 1


def _number(
    name: str, value: Any, default: float, low: float, high: float, *, integer: bool = False
) -> float:
    """An optional number within [low, high]; ``default`` when absent or null."""
    if value is None:
        return default
    if not (_is_int(value) or (not integer and isinstance(value, float))):
        raise bad_request(f'"{name}" must be {"an integer" if integer else "a number"}.')
    if not low <= value <= high:
        raise bad_request(f'"{name}" must be between {low:g} and {high:g}.')
    return value


# -- from the worker thread to the event loop ----------------------------------------------


class AsyncEventBridge:
    """What a :class:`GenerationWorker` needs of an ``EventChannel`` (``put``, ``has_room``),
    delivering into an ``asyncio.Queue`` on the server's event loop.

    ``put`` runs on the worker thread and never blocks: ``asyncio.Queue`` is not thread-safe,
    so the worker does not touch it; it asks the loop to (``call_soon_threadsafe``). The loop
    side awaits the queue, so no coroutine ever blocks on a thread.

    ``has_room`` gives the worker's sender its backpressure signal, as the in-process channel
    does: when the client reads slowly, sending awaits, events pile up, and the sender starts
    merging text into fewer, larger chunks instead of queueing one event per token.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, high_water: int = DEFAULT_HIGH_WATER
    ) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[AppEvent] = asyncio.Queue()
        self.high_water = high_water
        # Two counters, each written by one thread only, so no lock is needed to compare them.
        self._put = 0  # worker thread
        self._taken = 0  # loop thread

    def put(self, event: AppEvent) -> None:
        """Worker thread. Never blocks."""
        self._put += 1
        self.call_soon(self._queue.put_nowait, event)

    def has_room(self) -> bool:
        """Worker thread. Whether the loop has taken all but a few of the events sent."""
        return self._put - self._taken < self.high_water

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """Any thread. Run ``callback`` on the loop. Dropped if the loop is already closed
        (the server shut down: nobody is left to receive it)."""
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback, *args)

    async def next_batch(self, timeout: float) -> list[AppEvent]:
        """Loop thread. Every event queued now, waiting up to ``timeout`` s for the first;
        ``[]`` if none came. Batching means one socket write for many events in a flood."""
        batch: list[AppEvent] = []
        if self._queue.empty():
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout))
            except asyncio.TimeoutError:
                return batch
        while not self._queue.empty():
            batch.append(self._queue.get_nowait())
        self._taken += len(batch)
        return batch


# -- one generation, and the response that streams it ---------------------------------------


@dataclass(eq=False)
class Job:
    """One generation as the event loop sees it. Loop thread only (the worker has its own)."""

    bridge: AsyncEventBridge
    endpoint: str
    worker: GenerationWorker = field(init=False)
    disconnect_at: float | None = None  # perf_counter when the client was seen leaving
    tokens_at_disconnect: int = 0

    @property
    def running(self) -> bool:
        """Until the worker has left the model loop (set before it sends its final event)."""
        return self.worker.exited_at is None


Produce = Callable[[Send], Awaitable[None]]


class GenerationResponse:
    """An ASGI response that sends a generation's output while watching the connection.

    Two tasks on the loop: ``produce`` sends, ``_watch`` awaits ``receive()``, which uvicorn
    answers with ``http.disconnect`` as soon as the socket closes. Whichever finishes first
    ends the other. ``on_gone`` stops the worker; it runs when the disconnect is seen and again,
    whatever happened, when the response ends — a no-op once the worker has exited, so a
    normal end costs nothing, while a shutdown or a bug can never leave the model running.
    """

    def __init__(self, produce: Produce, on_gone: Callable[[], None]) -> None:
        self._produce = produce
        self._on_gone = on_gone

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._watch, receive, tasks.cancel_scope)
                await self._produce(send)
                tasks.cancel_scope.cancel()  # all sent: stop watching
        finally:
            self._on_gone()

    async def _watch(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # the body was read already; nothing else is expected
        self._on_gone()  # at once, on the loop: this is "the disconnect is seen"
        scope.cancel()


async def _start(send: Send, status: int, headers: dict[str, str]) -> None:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})


async def _body(send: Send, data: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await _start(
        send, status, {"content-type": "application/json", "content-length": str(len(data))}
    )
    await _body(send, data, more=False)


@dataclass(frozen=True)
class OpenAIIds:
    """What every chunk of one OpenAI-style completion repeats."""

    completion_id: str
    model: str
    created: int

    def chunk(self, **delta: str | None) -> bytes:
        return openai_chunk(self.completion_id, self.model, self.created, **delta)


# -- the server ------------------------------------------------------------------------------


class ChatServer:
    """One model, at most one generation at a time, and the handlers. Loop thread, except
    where a docstring says otherwise."""

    def __init__(
        self,
        backend: Backend,
        *,
        max_body_bytes: int,
        max_prompt_chars: int,
        keepalive_s: float,
        static_dir: Path,
    ) -> None:
        self.backend = backend
        # The controller owns the generation counter and the model lock, as in the window.
        # Its own channel stays unused: each request brings its own bridge to its own stream.
        self.controller = GenerationController(backend, EventChannel())
        self.max_body_bytes = max_body_bytes
        self.max_prompt_chars = max_prompt_chars
        self.keepalive_s = keepalive_s
        self.static_dir = static_dir
        self.started = int(time.time())
        self.job: Job | None = None
        self.cancels: deque[dict[str, Any]] = deque(maxlen=CANCEL_HISTORY)

    # -- generations -------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running

    def start(self, request: GenerationRequest, endpoint: str) -> Job:
        """Claim the model and start a worker, or refuse with 429 (the busy policy). No await
        between the check and the claim: on one loop, two requests cannot both pass."""
        if self.busy:
            raise RequestRejected(
                429,
                "busy",
                "The model is answering another request; try again in a moment.",
                {"Retry-After": "1"},
            )
        job = Job(AsyncEventBridge(asyncio.get_running_loop()), endpoint)
        job.worker = GenerationWorker(
            self.backend,
            request,
            self.controller.new_gen(),
            cast(EventChannel, job.bridge),  # duck-typed: the worker only puts and asks for room
            self.controller.model_lock,
            on_exit=lambda _worker: job.bridge.call_soon(self._worker_exited, job),
        )
        self.job = job
        self.controller.current = job.worker  # so controller.stop()/shutdown() reach it
        job.worker.start()
        return job

    def client_gone(self, job: Job) -> None:
        """The client left (or the response ended): stop the model now, and note when."""
        if job.disconnect_at is not None or not job.running:
            return
        job.disconnect_at = time.perf_counter()
        job.tokens_at_disconnect = job.worker.tokens
        job.worker.cancel()

    def _worker_exited(self, job: Job) -> None:
        """Scheduled onto the loop by the worker thread as it ends: record a disconnect."""
        if job.disconnect_at is None:
            return
        worker = job.worker
        exited_at = worker.exited_at if worker.exited_at is not None else time.perf_counter()
        self.cancels.append(
            {
                "gen": worker.gen,
                "endpoint": job.endpoint,
                "disconnect_to_exit_ms": round((exited_at - job.disconnect_at) * 1000, 3),
                "tokens_after_disconnect": worker.tokens - job.tokens_at_disconnect,
                "tokens": worker.tokens,
                # perf_counter is the machine's monotonic clock, the same in every process: a
                # client on this machine can subtract its own abort time (tkchat bench does).
                "disconnect_at": job.disconnect_at,
                "exited_at": exited_at,
            }
        )

    def respond(
        self, job: Job, produce: Callable[[Job, Send], Awaitable[None]]
    ) -> GenerationResponse:
        return GenerationResponse(partial(produce, job), partial(self.client_gone, job))

    async def _events(self, job: Job) -> AsyncIterator[list[GenerationEvent] | None]:
        """Batches of the job's events up to its final one; ``None`` after ``keepalive_s`` of
        silence (time for a keep-alive)."""
        while True:
            batch = cast(list[GenerationEvent], await job.bridge.next_batch(self.keepalive_s))
            yield batch or None
            if batch and isinstance(batch[-1], FINAL_EVENTS):
                return

    # -- POST /chat ----------------------------------------------------------------------------

    async def chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        job = self.start(parse_chat_request(payload, self.max_prompt_chars), "/chat")
        return self.respond(job, self._send_events)

    async def _send_events(self, job: Job, send: Send) -> None:
        await _start(send, 200, SSE_HEADERS)
        async for batch in self._events(job):
            data = encode_comment() if batch is None else b"".join(map(encode_event, batch))
            await _body(send, data)
        await _body(send, b"", more=False)

    # -- POST /v1/chat/completions --------------------------------------------------------

    async def openai_chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        generation = parse_chat_request(payload, self.max_prompt_chars, fit_context=False)
        stream = payload.get("stream", False)
        if not isinstance(stream, bool):
            raise bad_request('"stream" must be true or false.')
        job = self.start(generation, "/v1/chat/completions")
        ids = OpenAIIds(f"chatcmpl-{uuid.uuid4().hex}", self.backend.name, int(time.time()))
        produce = self._send_openai_stream if stream else self._send_openai_json
        return self.respond(job, partial(produce, ids=ids))

    async def _send_openai_stream(self, job: Job, send: Send, *, ids: OpenAIIds) -> None:
        await _start(send, 200, SSE_HEADERS)
        await _body(send, ids.chunk(role="assistant", content=""))
        async for batch in self._events(job):
            data = (
                encode_comment()
                if batch is None
                else b"".join(_openai_frame(ids, event) for event in batch)
            )
            await _body(send, data)
        await _body(send, b"", more=False)

    async def _send_openai_json(self, job: Job, send: Send, *, ids: OpenAIIds) -> None:
        parts: list[str] = []
        final: Done | Error | None = None
        async for batch in self._events(job):
            for event in batch or ():
                if isinstance(event, Chunk):
                    parts.append(event.text)
                else:
                    final = event
        if isinstance(final, Error):
            status = 400 if final.kind == "context_overflow" else 500
            await _send_json(
                send,
                status,
                {"error": {"message": final.message, "type": final.kind, "kind": final.kind}},
            )
            return
        await _send_json(
            send,
            200,
            {
                "id": ids.completion_id,
                "object": "chat.completion",
                "created": ids.created,
                "model": ids.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "".join(parts)},
                        "finish_reason": _openai_reason(final),
                    }
                ],
            },
        )

    async def models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.backend.name,
                        "object": "model",
                        "created": self.started,
                        "owned_by": "tkchat",
                    },
                ],
            }
        )

    # -- GET /health ----------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "server": "tkchat",
                "status": "ok",
                "model": self.backend.name,
                "busy": self.busy,
                "n_ctx": self.backend.n_ctx,
                "generations": self.controller.gen,
                "cancels": list(self.cancels),
            }
        )

    # -- the browser client -----------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        page = self.static_dir / "index.html"
        if page.is_file():
            return FileResponse(page, media_type=CONTENT_TYPES[".html"])
        return HTMLResponse(NOT_INSTALLED_PAGE)

    async def static(self, request: Request) -> Response:
        path = static_file(self.static_dir, request.path_params["path"])
        if path is None:
            raise HTTPException(404, "No such file.")
        return FileResponse(path, media_type=CONTENT_TYPES[path.suffix.lower()])


def _openai_frame(ids: OpenAIIds, event: GenerationEvent) -> bytes:
    if isinstance(event, Chunk):
        return ids.chunk(content=event.text)
    if isinstance(event, Error):
        return openai_error(event.kind, event.message) + OPENAI_DONE
    return ids.chunk(finish_reason=_openai_reason(event)) + OPENAI_DONE


def _openai_reason(final: Done | None) -> str:
    # "cancelled" has no OpenAI name; only a client that left (or a shutdown) causes it.
    return "length" if final is not None and final.reason == "length" else "stop"


def static_file(root: Path, relative: str) -> Path | None:
    """The file ``relative`` names inside ``root``, or None: nothing outside ``root`` (``..``,
    symlinks out), no hidden files, and only types we name a content type for."""
    try:
        base = root.resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
    except (OSError, ValueError):
        return None
    if any(part.startswith(".") for part in path.relative_to(base).parts):
        return None
    return path if path.suffix.lower() in CONTENT_TYPES else None


# -- building and running the app ----------------------------------------------------------


def create_app(
    backend: Backend,
    *,
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS,
    port: int,
    max_body_bytes: int = 64_000,
    max_prompt_chars: int = 32_000,
    keepalive_s: float = KEEPALIVE_S,
    static_dir: Path | None = None,
) -> Starlette:
    """The Starlette app around a **loaded** ``backend``. ``port`` is the one the server
    listens on: Host and Origin are checked against it. ``app.state.chat_server`` is the
    :class:`ChatServer` (its ``controller`` frees the model at the end)."""
    server = ChatServer(
        backend,
        max_body_bytes=max_body_bytes,
        max_prompt_chars=max_prompt_chars,
        keepalive_s=keepalive_s,
        static_dir=static_dir or STATIC_DIR,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        server.controller.stop()  # shutting down: whatever still generates has no reader

    app = Starlette(
        routes=[
            Route("/chat", server.chat, methods=["POST"]),
            Route("/v1/chat/completions", server.openai_chat, methods=["POST"]),
            Route("/v1/models", server.models, methods=["GET"]),
            Route("/health", server.health, methods=["GET"]),
            Route("/", server.index, methods=["GET"]),
            Route("/static/{path:path}", server.static, methods=["GET"]),
        ],
        middleware=[Middleware(HostOriginGuard, allowed_hosts=allowed_hosts, port=port)],
        exception_handlers={
            RequestRejected: _rejected,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
        lifespan=lifespan,
    )
    app.state.chat_server = server
    return app


_WILDCARDS = ("0.0.0.0", "::", "")


def run_server(backend: Backend, host: str = "127.0.0.1", port: int = 8765) -> int:
    """Main thread. Load the model, listen, print one line, serve until Ctrl+C; exit status.

    Loading comes first so the first request never waits for it and a bad model is one clear
    line on stderr; so does a port already in use (the socket is bound before the line that
    announces the address is printed). A specific ``host`` is also accepted in Host/Origin; a
    wildcard address is not (the machine's names are unknown), so only 127.0.0.1 and localhost
    work there."""
    import uvicorn  # the optional extra: only needed to run, not to build the app

    try:
        backend.load()
    except BackendError as exc:
        print(f"tkchat serve: {exc}", file=sys.stderr)
        return 1
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        print(
            f"tkchat serve: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr
        )
        backend.close()
        return 1
    port = sock.getsockname()[1]  # the real one, if 0 asked for any free port
    allowed = list(DEFAULT_ALLOWED_HOSTS)
    if host not in _WILDCARDS and host not in allowed:
        allowed.append(host)
    app = create_app(backend, allowed_hosts=allowed, port=port)
    print(f"tkchat serve: http://{_bracketed(host)}:{port}/ (model {backend.name})", flush=True)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, server_header=False, timeout_graceful_shutdown=2
    )
    status = 0
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn shut down gracefully, then re-raised the signal: a normal exit
    except SystemExit as exc:  # uvicorn gave up (it logged why)
        status = exc.code if isinstance(exc.code, int) else 1
    finally:
        sock.close()
        app.state.chat_server.controller.shutdown()  # stop a generation, free the model
    return status
