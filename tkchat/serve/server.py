"""``tkchat serve``: one local model behind an HTTP server that streams Server-Sent Events.

This module assembles the app (:func:`create_app`) and runs it (:func:`run_server`); the
pieces live next to it, one concern each.

The same three stages as in the window, with HTTP in the middle::

    GenerationWorker (thread) ─put()─► AsyncEventBridge ─call_soon_threadsafe─► asyncio.Queue
        ─► the request's coroutine (event loop) ─► SSE frames ─► the client's socket

Endpoints (:mod:`~tkchat.serve.routes`)
---------------------------------------
- ``POST /chat`` — ``{"messages": [{"role", "content"}], "max_tokens"?, "temperature"?,
  "top_p"?, "seed"?, "stop"?}`` answers ``text/event-stream``: while the request waits in the
  line, its place (``event: queued``); then one ``data: <json>`` frame per event of the
  contract (``chunk``/``done``/``error`` with ``gen`` and ``seq``), ending with exactly one
  ``done`` or ``error`` — also when the backend raises (the worker guarantees it). A comment
  frame (``: keep-alive``) goes out whenever nothing was sent for 15 s. A conversation longer
  than the model's context loses its oldest turns (``tkchat/generate/context.py``; the
  ``done`` event's ``stats.context_dropped`` says how many); a single message too long for it
  ends the stream with an ``error`` event of kind ``context_overflow``.
- ``POST /v1/chat/completions`` — the OpenAI shape, streamed or not, with ``usage``, ``stop``
  and OpenAI's refusals (:mod:`~tkchat.serve.openai_format`, :mod:`~tkchat.serve.validation`).
  ``model`` is ignored: there is one model, listed by ``GET /v1/models`` (and
  ``/v1/models/{id}``). The OpenAI API leaves the context to its client, so any prompt too
  long is ``context_overflow`` (``context_length_exceeded``).
- ``GET /health`` — ``{"server": "tkchat", "status": "ok", "model", "busy", "n_ctx",
  "generations", "cancels": [...], "line": {...}}``; ``cancels`` holds the last few client
  disconnects, each with ``disconnect_to_exit_ms`` and ``tokens_after_disconnect`` (read by
  the benchmark); ``line`` how many wait and are answered, and the mean turn.
- ``GET /`` and ``GET /static/{file}`` — the browser client, from ``static/``
  (:mod:`~tkchat.serve.static_files`); a short page says so when it is not installed.

Where the rest lives
--------------------
- :mod:`~tkchat.serve.guard` — 403 unless Host/Origin name this server (DNS rebinding).
- :mod:`~tkchat.serve.validation` — body and prompt limits (413), the JSON shape and OpenAI's
  ranges (400).
- :mod:`~tkchat.serve.line` — the fair line: FIFO, bounded (503), one request at a time per
  client (429), places and estimates.
- :mod:`~tkchat.serve.generations` — the slots behind the line, and cancel on disconnect, with
  its measurements.
- :mod:`~tkchat.serve.bridge` — the worker thread → event loop hand-over.
- :mod:`~tkchat.serve.streaming` — the ASGI response that sends while watching the socket.
- :mod:`~tkchat.serve.errors` — OpenAI's ``{"error": {"message", "type", "param", "code"}}``
  with tkchat's ``kind``, for every refusal.

Threads
-------
The model runs on a :class:`~tkchat.generate.worker.GenerationWorker` thread; everything in
this package runs on uvicorn's event loop thread unless a docstring says otherwise. The loop
never waits for the model: the worker hands events over with ``loop.call_soon_threadsafe``
(never blocking), and coroutines await an ``asyncio.Queue``. The model is loaded before the
server starts (:func:`run_server`, on the main thread), never inside a request.

Safe by default: it binds 127.0.0.1, checks Host and Origin, limits sizes, answers every
error as JSON and sends no CORS headers at all. Beyond the loopback it needs an opt-in and a
token (:mod:`~tkchat.serve.listen`); :mod:`~tkchat.serve.connections` bounds what a socket
that never finishes its request can hold.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from tkchat.generate.backend import Backend, BackendError
from tkchat.serve.errors import RequestRejected, on_http_error, on_internal_error, on_rejected
from tkchat.serve.generations import KEEPALIVE_S
from tkchat.serve.guard import (
    DEFAULT_ALLOWED_HOSTS,
    JOIN_TTL_S,
    Access,
    HostOriginGuard,
    bracketed,
)
from tkchat.serve.line import DEFAULT_LIMITS, LineLimits
from tkchat.serve.listen import new_token
from tkchat.serve.routes import ChatServer
from tkchat.serve.static_files import STATIC_DIR

__all__ = ["ChatServer", "create_app", "run_server"]


def create_app(
    backend: Backend,
    *,
    allowed_hosts: Sequence[str] = DEFAULT_ALLOWED_HOSTS,
    port: int,
    max_body_bytes: int = 64_000,
    max_prompt_chars: int = 32_000,
    keepalive_s: float = KEEPALIVE_S,
    static_dir: Path | None = None,
    server_type: type[ChatServer] = ChatServer,
    token: str | None = None,
    join_code: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    limits: LineLimits = DEFAULT_LIMITS,
) -> Starlette:
    """The Starlette app around a **loaded** ``backend``. ``port`` is the one the server
    listens on: Host and Origin are checked against it. ``app.state.chat_server`` is the
    :class:`ChatServer` (its ``controller`` frees the model at the end); ``server_type`` lets
    ``tkchat serve --broken`` swap in the anti-pattern (tkchat/antipatterns/blocking_server.py).
    With a ``token``, every API request must carry a credential (a server reachable beyond the
    loopback: see :mod:`~tkchat.serve.listen` and :mod:`~tkchat.serve.guard`): the token, the
    ``join_code`` of the printed link (a fresh one if None) until it expires on ``clock``, or
    a session. ``limits``: the line's (:mod:`~tkchat.serve.line`)."""
    server = server_type(
        backend,
        max_body_bytes=max_body_bytes,
        max_prompt_chars=max_prompt_chars,
        keepalive_s=keepalive_s,
        static_dir=static_dir or STATIC_DIR,
        limits=limits,
    )

    access = None
    if token is not None:
        access = Access(token, join_code or new_token(), clock)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        server.stop_all()  # shutting down: whatever still generates or waits has no reader

    app = Starlette(
        routes=server.routes(),
        middleware=[
            Middleware(HostOriginGuard, allowed_hosts=allowed_hosts, port=port, access=access)
        ],
        exception_handlers={
            RequestRejected: on_rejected,
            HTTPException: on_http_error,
            Exception: on_internal_error,
        },
        lifespan=lifespan,
    )
    app.state.chat_server = server
    return app


def run_server(
    backend: Backend,
    host: str = "127.0.0.1",
    port: int = 8765,
    server_type: type[ChatServer] = ChatServer,
    *,
    allow_remote: bool = False,
    limits: LineLimits = DEFAULT_LIMITS,
) -> int:
    """Main thread. Load the model, listen, print one line, serve until Ctrl+C; exit status.

    Loading comes first so the first request never waits for it and a bad model (or a server
    that does not answer, for ``--server``) is one clear line on stderr; so does a port already
    in use (the sockets are bound before the line that announces the address is printed). A
    loopback ``host`` is served as before (``localhost`` on both 127.0.0.1 and ::1); any other
    address is refused unless ``allow_remote``, and then needs a token
    (:mod:`~tkchat.serve.listen`), printed once in the URL, with a warning."""
    from tkchat.serve.listen import is_loopback, open_sockets

    remote = not is_loopback(host)
    if remote and not allow_remote:
        print(
            f"tkchat serve: {host} is reachable from other machines. To serve them, add"
            " --allow-remote (every client will then need the token it prints); to stay on"
            " this machine, leave --host out.",
            file=sys.stderr,
        )
        return 2
    try:
        backend.load()
    except BackendError as exc:
        print(f"tkchat serve: {exc}", file=sys.stderr)
        return 1
    try:
        sockets = open_sockets(host, port)
    except OSError as exc:
        print(
            f"tkchat serve: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr
        )
        backend.close()
        return 1
    port = sockets[0].getsockname()[1]  # the real one, if 0 asked for any free port
    token = new_token() if remote else None
    join_code = new_token() if remote else None
    app = create_app(
        backend,
        allowed_hosts=_allowed_hosts(host),
        port=port,
        server_type=server_type,
        token=token,
        join_code=join_code,
        limits=limits,
    )
    _announce(host, port, token, join_code, backend.name)
    return _serve(app, sockets)


def _allowed_hosts(host: str) -> list[str]:
    allowed = list(DEFAULT_ALLOWED_HOSTS)
    if host == "localhost":
        allowed.append("::1")
    elif host not in allowed:
        allowed.append(host)
    return allowed


def _announce(host: str, port: int, token: str | None, join_code: str | None, model: str) -> None:
    """The one line with the address to open (and, beyond the loopback, the warning with
    the token: on the terminal only, never in a link a browser would keep)."""
    from tkchat.serve.listen import reachable_address

    shown = bracketed(reachable_address(host))
    fragment = f"#join={join_code}" if join_code else ""
    print(f"tkchat serve: http://{shown}:{port}/{fragment} (model {model})", flush=True)
    if token:
        print(
            f"tkchat serve: WARNING: listening on {host}, reachable from other machines. The"
            f" link above lets browsers in for {JOIN_TTL_S / 60:.0f} minutes; after that, a"
            f" page asks for the token: {token} (programs send 'Authorization: Bearer"
            " <token>'). This is plain HTTP: anyone on the network path can read the"
            " conversation and the token.",
            file=sys.stderr,
            flush=True,
        )


def _serve(app: Starlette, sockets: list[socket.socket]) -> int:
    """Run uvicorn on ``sockets`` until Ctrl+C; then stop every generation, free the model."""
    import uvicorn  # the optional extra: only needed to run, not to build the app

    from tkchat.serve.connections import server_config

    config = server_config(app)  # header deadline and connection cap: serve/connections.py
    status = 0
    try:
        uvicorn.Server(config).run(sockets=sockets)
    except KeyboardInterrupt:
        pass  # uvicorn shut down gracefully, then re-raised the signal: a normal exit
    except SystemExit as exc:  # uvicorn gave up (it logged why)
        status = exc.code if isinstance(exc.code, int) else 1
    finally:
        for sock in sockets:
            sock.close()
        app.state.chat_server.shutdown()
    return status
