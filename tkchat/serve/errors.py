"""One shape for every error the server sends: OpenAI's, with tkchat's ``kind`` beside it.

``{"error": {"message", "type", "param", "code", "kind"}}``:

- ``message``, ``type``, ``param`` and ``code`` are OpenAI's fields, so the official clients
  raise the exception class that fits the status (``BadRequestError``, ``RateLimitError``,
  ``InternalServerError``...) and fill its ``type``, ``param`` and ``code``. ``type`` follows
  from the status (:data:`TYPES`), ``param`` names the field at fault (or null), ``code`` is
  OpenAI's word where one exists (``context_length_exceeded``, ``unsupported_parameter``...)
  and ``kind`` otherwise;
- ``kind`` is tkchat's own name for the failure, which tkchat's clients (the browser page,
  ``tkchat --server``) read, whichever layer refused: the Host/Origin guard, the request
  checks, the line, Starlette's own routing, or an unexpected exception.

:class:`RequestRejected` is raised anywhere in a handler; the ``on_*`` functions are the
exception handlers :func:`tkchat.serve.server.create_app` registers to turn exceptions into
responses. All of it runs on the server's event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # the values need no Starlette: the line (serve/line.py) raises them, and
    # the command line reads the line's defaults where the serve extra is not installed
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

# OpenAI's error types by status (anything else in 4xx: invalid_request_error).
TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def error_type(status: int) -> str:
    return "server_error" if status >= 500 else TYPES.get(status, "invalid_request_error")


def error_object(
    status: int, kind: str, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The object under ``"error"`` (see the module)."""
    return {
        "message": message,
        "type": error_type(status),
        "param": param,
        "code": code or kind,
        "kind": kind,
    }


class RequestRejected(Exception):
    """A request we refuse: an error object (see the module) with ``status``."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = headers
        self.param = param
        self.code = code


def bad_request(
    message: str, param: str | None = None, code: str = "invalid_value"
) -> RequestRejected:
    """400 ``bad_request``. ``code``: ``invalid_type``, ``invalid_value`` (out of range),
    ``missing_required_parameter``, or ``unsupported_parameter`` / ``unsupported_value`` for
    what tkchat does not do."""
    return RequestRejected(400, "bad_request", message, param=param, code=code)


def error_response(
    status: int,
    kind: str,
    message: str,
    headers: dict[str, str] | None = None,
    *,
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    from starlette.responses import JSONResponse

    body = {"error": error_object(status, kind, message, param=param, code=code)}
    return JSONResponse(body, status, headers=headers)


async def on_rejected(request: Request, exc: Exception) -> Response:
    rejected = cast(RequestRejected, exc)
    return error_response(
        rejected.status,
        rejected.kind,
        rejected.message,
        rejected.headers,
        param=rejected.param,
        code=rejected.code,
    )


_HTTP_KINDS = {404: "not_found", 405: "method_not_allowed"}


async def on_http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 as JSON errors too (``Allow`` kept on 405)."""
    http = cast("HTTPException", exc)
    kind = _HTTP_KINDS.get(http.status_code, "http_error")
    return error_response(http.status_code, kind, str(http.detail), dict(http.headers or {}))


async def on_internal_error(request: Request, exc: Exception) -> Response:
    """A bug in the server (logged by Starlette): the client gets a JSON error, no traceback."""
    return error_response(500, "internal", "internal server error")
