"""Send a generation to the client at raw ASGI level, and notice at once when it leaves.

The server has to act the moment a client leaves: cancel the worker, and note the time so
``/health`` can report how long the model took to stop. Starlette's ``StreamingResponse``
offers no hook for that moment (and, depending on the ASGI version the server speaks, only
notices a departed client when a write fails). :class:`GenerationResponse` therefore watches
for ``http.disconnect`` itself while the output is being sent, and calls back at once. The
small ``send_*`` helpers write ASGI messages directly, since the output comes from a queue
rather than from one of Starlette's response classes.

Everything here runs on the server's event loop.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

SSE_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",  # a reverse proxy must not hold frames back
}

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


async def start_response(send: Send, status: int, headers: dict[str, str]) -> None:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})


async def send_body(send: Send, data: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    """A whole JSON response: start, one body, end."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await start_response(
        send, status, {"content-type": "application/json", "content-length": str(len(data))}
    )
    await send_body(send, data, more=False)
