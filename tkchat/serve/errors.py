"""One shape for every error the server sends: ``{"error": {"kind", "message"}}``.

A client (the browser page, ``tkchat --server``, a script) can then tell a refusal from a
bug by ``kind`` alone, whichever layer refused: the Host/Origin guard, the request checks,
the busy policy, Starlette's own routing, or an unexpected exception.

:class:`RequestRejected` is raised anywhere in a handler; the ``on_*`` functions are the
exception handlers :func:`tkchat.serve.server.create_app` registers to turn exceptions into
responses. All of it runs on the server's event loop.
"""

from __future__ import annotations

from typing import cast

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


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


async def on_rejected(request: Request, exc: Exception) -> Response:
    rejected = cast(RequestRejected, exc)
    return error_response(rejected.status, rejected.kind, rejected.message, rejected.headers)


_HTTP_KINDS = {404: "not_found", 405: "method_not_allowed"}


async def on_http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 as JSON errors too (``Allow`` kept on 405)."""
    http = cast(HTTPException, exc)
    kind = _HTTP_KINDS.get(http.status_code, "http_error")
    return error_response(http.status_code, kind, str(http.detail), dict(http.headers or {}))


async def on_internal_error(request: Request, exc: Exception) -> Response:
    """A bug in the server (logged by Starlette): the client gets a JSON error, no traceback."""
    return error_response(500, "internal", "internal server error")
