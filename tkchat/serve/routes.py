"""The HTTP endpoints: what each route reads, checks, starts and sends.

:class:`ChatServer` is the :class:`~tkchat.serve.generations.GenerationSlot` (the one model
and its current generation) plus one handler per route. It extends the slot rather than
holding one so that the slot's state stays reachable under a single name: ``run_server``
and the tests reach ``server.controller`` and ``server.job`` directly. The handlers only
put the other modules together: :mod:`~tkchat.serve.validation` checks the request, the
slot starts the worker (or refuses with 429), and the response sends the events as tkchat
SSE or in the OpenAI shape (:mod:`~tkchat.serve.openai_format`).

Every handler runs on the server's event loop and never waits for the model: it awaits the
job's event queue, which the worker fills from its own thread.
"""

from __future__ import annotations

import time
import uuid
from functools import partial
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import Send

from tkchat.events import Chunk, Done, Error, Progress
from tkchat.generate.backend import Backend
from tkchat.limits import MAX_NAME_CHARS, cut
from tkchat.serve.generations import GenerationSlot, Job
from tkchat.serve.openai_format import (
    OpenAIIds,
    completion,
    completion_error,
    model_list,
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
from tkchat.serve.validation import parse_chat_request, parse_stream_flag, read_json
from tkchat.transport.sse import encode_comment, encode_event


class ChatServer(GenerationSlot):
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
        super().__init__(backend, keepalive_s=keepalive_s)
        self.max_body_bytes = max_body_bytes
        self.max_prompt_chars = max_prompt_chars
        self.static_dir = static_dir
        self.started = int(time.time())

    def routes(self) -> list[Route]:
        return [
            Route("/chat", self.chat, methods=["POST"]),
            Route("/v1/chat/completions", self.openai_chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/", self.index, methods=["GET"]),
            Route("/static/{path:path}", self.static, methods=["GET"]),
        ]

    # -- POST /chat ----------------------------------------------------------------------------

    async def chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        job = self.start(parse_chat_request(payload, self.max_prompt_chars), "/chat")
        return self.respond(job, self._send_events)

    async def _send_events(self, job: Job, send: Send) -> None:
        await start_response(send, 200, SSE_HEADERS)
        async for batch in self.events(job):
            data = encode_comment() if batch is None else b"".join(map(encode_event, batch))
            await send_body(send, data)
        await send_body(send, b"", more=False)

    # -- POST /v1/chat/completions --------------------------------------------------------

    async def openai_chat(self, request: Request) -> Response | GenerationResponse:
        payload = await read_json(request, self.max_body_bytes)
        generation = parse_chat_request(payload, self.max_prompt_chars, fit_context=False)
        stream = parse_stream_flag(payload)
        job = self.start(generation, "/v1/chat/completions")
        ids = OpenAIIds(f"chatcmpl-{uuid.uuid4().hex}", self.backend.name, int(time.time()))
        produce = self._send_openai_stream if stream else self._send_openai_json
        return self.respond(job, partial(produce, ids=ids))

    async def _send_openai_stream(self, job: Job, send: Send, *, ids: OpenAIIds) -> None:
        await start_response(send, 200, SSE_HEADERS)
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
        parts: list[str] = []
        final: Done | Error | None = None
        async for batch in self.events(job):
            for event in batch or ():
                if isinstance(event, Chunk):
                    parts.append(event.text)
                elif not isinstance(event, Progress):
                    final = event
        if isinstance(final, Error):
            status, body = completion_error(final)
            await send_json(send, status, body)
            return
        await send_json(send, 200, completion(ids, "".join(parts), final))

    async def models(self, request: Request) -> Response:
        return JSONResponse(model_list(self.backend.name, self.started))

    # -- GET /health ----------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "server": "tkchat",
                "status": "ok",
                "model": cut(self.backend.name, MAX_NAME_CHARS),  # a model file's, bounded
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
