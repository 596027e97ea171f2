"""How a remote exchange fails: one exception type, and the sentences it carries.

Every network or server failure reaches the window as a :class:`RemoteError` whose message is
one readable sentence and whose ``kind`` names the failure (the worker puts both into the
generation's ``error`` event). The helpers below build those sentences from whatever the
server sent, and keep them short: a server's error body can be a whole HTML page.

Pure functions and exception classes: safe on any thread.
"""

from __future__ import annotations

import socket
from typing import Any

from tkchat.generate.backend import BackendError
from tkchat.limits import MAX_ERROR_CHARS, MAX_LOGGED_ERROR_CHARS, cut


class RemoteError(BackendError):
    """A failure of the server or of the network, with a ``kind`` chosen per instance
    (a tkchat server's own error kinds, such as ``context_overflow``, pass through).

    The message is cut to :data:`~tkchat.limits.MAX_ERROR_CHARS` here, where it is made, so
    that a server's megabyte of "error" never travels further than this object; the text as
    the server sent it (bounded too) stays in ``full_message``, which the worker logs."""

    def __init__(self, message: str, kind: str = "server_error") -> None:
        super().__init__(cut(message, MAX_ERROR_CHARS))
        self.full_message = message[:MAX_LOGGED_ERROR_CHARS]
        self.kind = cut(kind, 40)  # a server's kind is a word; a hostile one is cut too


class Cancelled(Exception):
    """Stop was asked for while waiting on the network. Raised by the polling reads and the
    connect, caught by :class:`~tkchat.generate.remote.backend.RemoteBackend`: it never
    leaves the package (a Stop is not an error)."""


def bad_stream(detail: str) -> RemoteError:
    return RemoteError(
        f"The server's answer is not a valid event stream: {detail}", kind="bad_stream"
    )


def closed_mid_answer() -> RemoteError:
    return RemoteError("The server closed the stream mid-answer", kind="server_disconnected")


def error_detail(body: Any) -> str:
    """``": message"`` from an error body in any of the usual shapes, or ``""``."""
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message") or error.get("msg")
        elif isinstance(error, str):
            message = error
        if message is None:
            message = body.get("message") or body.get("detail")
        if isinstance(message, list):  # FastAPI's validation errors
            message = "; ".join(
                str(item.get("msg", item)) if isinstance(item, dict) else str(item)
                for item in message
            )
    elif isinstance(body, str):
        message = body
    if not message:
        return ""
    return f": {cut(str(message), MAX_ERROR_CHARS)}"


def snippet(text: str, limit: int = 80) -> str:
    """Quoted, with escapes: what a broken answer looked like, garbage bytes included."""
    return repr(cut(text, limit))


def describe(exc: BaseException) -> str:
    """What went wrong with a connection, in a few words (for the end of a sentence)."""
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
