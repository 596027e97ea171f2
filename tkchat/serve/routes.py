"""The HTTP endpoints: what each route reads, checks, starts and sends.

:class:`ChatServer` is the :class:`~tkchat.serve.generations.GenerationSlot` (the model, its
line and its generations) plus one handler per route. It extends the slot rather than holding
one so that the slot's state stays reachable under a single name: ``run_server`` and the
tests reach ``server.controller``, ``server.line`` and ``server.job`` directly. The handlers
only put the other modules together: :mod:`~tkchat.serve.validation` checks the request, the
slot puts it in the line (or refuses with 429/503) — after :mod:`~tkchat.serve.json_mode`
made the grammar of an OpenAI client's JSON mode — and the response sends its place while it
waits, then the events as tkchat SSE or in the OpenAI shape
(:mod:`~tkchat.serve.openai_format`).

Every handler runs on the event loop and never waits for the model: it awaits the job's event
queue, which the line and then the worker fill.
"""

from __future__ import annotations

import ipaddress
import time
import uuid
from dataclasses import replace
from functools import partial
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import Send

from tkchat.events import Chunk, Done, Error, QueuePlace
from tkchat.generate.backend import Backend
from tkchat.limits import MAX_NAME_CHARS, cut
from tkchat.serve.errors import RequestRejected, bad_request
from tkchat.serve.generations import GenerationSlot, Job, News
from tkchat.serve.json_mode import json_format_for
from tkchat.serve.line import Client, LineLimits
from tkchat.serve.openai_format import (
    OpenAIIds,
    completion,
    completion_error,
    model_list,
    model_object,
    stream_frame,
)
from tkchat.serve.static_files import CONTENT_TYPES, NOT_INSTALLED_PAGE, static_file
from tkchat.serve.streaming import (
    SSE_HEADERS,
    GenerationResponse,
    send_body,
    send_json,
    start_response,
)
from tkchat.serve.validation import (
    parse_chat_request,
    parse_stream_flags,
    parse_user,
    read_json,
    refuse_unsupported,
)
from tkchat.transport.sse import encode_comment, encode_event, encode_place

CLIENT_HEADER = "x-tkchat-client"  # the page's per-tab name for itself in the line
MAX_CLIENT_NAME = 64
TICKET_HEADER = "x-tkchat-ticket"  # the request's number in the order of arrival
PLACE_HEADER = "x-tkchat-place"  # its place in the line when it joined (0: answered at once)


def client_of(request: Request, name: str | None = None) -> Client:
    """Who sent ``request``: its address unless it is this machine, and its name (the
    ``X-Tkchat-Client`` header, else ``name``, the OpenAI ``user``)."""
    header = request.headers.get(CLIENT_HEADER)
    if header is not None and not 0 < len(header) <= MAX_CLIENT_NAME:
        raise bad_request(
            f"The {CLIENT_HEADER} header must be 1 to {MAX_CLIENT_NAME} characters.", CLIENT_HEADER
        )
    peer = request.client.host if request.client is not None else None
    return Client(None if _loopback(peer) else peer, header or name)


def _loopback(host: str | None) -> bool:
    if host is None:
        return True  # no peer address (a test transport, a Unix socket): this machine
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _frame(event: News) -> bytes:
    return encode_place(event) if isinstance(event, QueuePlace) else encode_event(event)


class ChatServer(GenerationSlot):
    """The model, its line, and the handlers. Loop thread, except where a docstring says
    otherwise."""

    def __init__(
        self,
        backend: Backend,
        *,
        max_body_bytes: int,
        max_prompt_chars: int,
        keepalive_s: float,
        static_dir: Path,
        limits: LineLimits,
    ) -> None:
        super().__init__(backend, keepalive_s=keepalive_s, limits=limits)
        self.max_body_bytes = max_body_bytes
        self.max_prompt_chars = max_prompt_chars
        self.static_dir = static_dir
        self.started = int(time.time())

    def routes(self) -> list[Route]:
        return [
            Route("/chat", self.chat, methods=["POST"]),
            Route("/v1/chat/completions", self.openai_chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/models/{model:path}", self.model, methods=["GET"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/", self.index, methods=["GET"]),
            Route("/static/{path:path}", self.static, methods=["GET"]),
        ]

    def _headers(self, job: Job) -> dict[str, str]:
        return {**SSE_HEADERS, TICKET_HEADER: str(job.ticket), PLACE_HEADER: str(job.joined_at)}

    # -- POST /chat ----------------------------------------------------------------------------

    async def chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        generation = parse_chat_request(payload, self.max_prompt_chars)
        job = self.enqueue(generation, "/chat", client_of(request))
        return self.respond(job, self._send_events)

    async def _send_events(self, job: Job, send: Send) -> None:
        await start_response(send, 200, self._headers(job))
        async for batch in self.events(job):
            data = encode_comment() if batch is None else b"".join(map(_frame, batch))
            await send_body(send, data)
        await send_body(send, b"", more=False)

    # -- POST /v1/chat/completions --------------------------------------------------------

    async def openai_chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        generation = parse_chat_request(payload, self.max_prompt_chars, fit_context=False)
        refuse_unsupported(payload)
        stream, include_usage = parse_stream_flags(payload)
        # JSON mode: its grammar is built before the request joins the line (off the loop).
        generation = replace(generation, json_format=await json_format_for(payload, self.backend))
        job = self.enqueue(
            generation, "/v1/chat/completions", client_of(request, parse_user(payload))
        )
        ids = OpenAIIds(
            f"chatcmpl-{uuid.uuid4().hex}", self.backend.name, int(time.time()), include_usage
        )
        produce = self._send_openai_stream if stream else self._send_openai_json
        return self.respond(job, partial(produce, ids=ids))

    async def _send_openai_stream(self, job: Job, send: Send, *, ids: OpenAIIds) -> None:
        await start_response(send, 200, self._headers(job))
        await send_body(send, ids.chunk(role="assistant", content=""))
        written = time.monotonic()
        async for batch in self.events(job):
            data = (
                encode_comment()
                if batch is None
                else b"".join(stream_frame(ids, event) for event in batch)
            )
            # Progress events have no OpenAI shape and write nothing; while a long prompt
            # is read, a keep-alive still goes out after the usual silence.
            if not data and time.monotonic() - written >= self.keepalive_s:
                data = encode_comment()
            if data:
                await send_body(send, data)
                written = time.monotonic()
        await send_body(send, b"", more=False)

    async def _send_openai_json(self, job: Job, send: Send, *, ids: OpenAIIds) -> None:
        """The whole answer as one object: the request waits in the line without a word (a
        JSON answer cannot say anything before it is complete)."""
        parts: list[str] = []
        final: Done | Error | None = None
        async for batch in self.events(job):
            for event in batch or ():
                if isinstance(event, Chunk):
                    parts.append(event.text)
                elif isinstance(event, Done | Error):
                    final = event
        if isinstance(final, Error):
            status, body = completion_error(final)
            await send_json(send, status, body)
            return
        await send_json(send, 200, completion(ids, "".join(parts), final))

    async def models(self, request: Request) -> Response:
        return JSONResponse(model_list(self.backend.name, self.started))

    async def model(self, request: Request) -> Response:
        name = request.path_params["model"]
        if name != self.backend.name:
            raise RequestRejected(
                404,
                "not_found",
                f"The model {cut(name, MAX_NAME_CHARS)!r} does not exist here; this server has "
                f"{cut(self.backend.name, MAX_NAME_CHARS)!r}.",
                param="model",
                code="model_not_found",
            )
        return JSONResponse(model_object(self.backend.name, self.started))

    # -- GET /health ----------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        """What runs and what waits; all of it counted on the loop, so it answers at once
        however long the line is."""
        line = self.line
        return JSONResponse(
            {
                "server": "tkchat",
                "status": "ok",
                "model": cut(self.backend.name, MAX_NAME_CHARS),  # a model file's, bounded
                "busy": self.busy,
                "n_ctx": self.backend.n_ctx,
                # What POST /chat takes: a client sends a long chat's newest turns within them.
                "max_prompt_chars": self.max_prompt_chars,
                "max_body_bytes": self.max_body_bytes,
                "generations": self.controller.gen,
                "cancels": list(self.cancels),
                "line": {
                    "waiting": len(line.waiting),
                    "answering": len(line.serving),
                    "capacity": self.limits.waiting,
                    "parallel": self.limits.parallel,
                    "answer_tokens": self.limits.answer_tokens,
                    "prompt_tokens": self.limits.prompt_tokens,
                    "turn_s": _rounded(line.clock.mean),
                    "next_eta_s": line.eta(1) if line.waiting else None,
                    "counts": dict(line.counts),
                },
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


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
