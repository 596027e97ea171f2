"""How uvicorn treats connections: deadlines for the headers and the body, a cap on sockets.

uvicorn's h11 protocol only times out a connection that sits idle *after* a response (its
keep-alive timeout). A client that connects and never finishes its request headers (a
"slowloris", or a port scanner's half-open socket) is kept forever, and every such socket
holds a file descriptor: with the open-file limit at 256, 400 of them made ``/health`` time out
and the accept loop log a traceback per refused accept.

:class:`GuardedH11Protocol` adds the three things uvicorn leaves out:

- **A header deadline.** From the moment a connection opens (or, on a kept-alive connection,
  from the first byte of the next request) the client has ``HEADER_TIMEOUT_S`` to send complete
  headers; then the socket is closed. The deadline is not reset by each byte, so trickling one
  byte at a time does not keep a socket either.
- **A body deadline.** Once the headers are in, the whole body must follow within
  ``BODY_TIMEOUT_S`` (again not reset by each byte): a client that declares a body and then
  sends a byte a second would otherwise hold its socket, and the handler reading it, for ever.
  If no response has started it gets ``408 body_timeout`` (the JSON error shape of every other
  refusal) and the socket is closed; the handler sees a disconnect, as if the client had left.
- **A connection cap.** At most ``MAX_CONNECTIONS`` sockets are kept. When one more arrives,
  the oldest socket still waiting for its headers is closed to make room (a real client sends
  its headers within milliseconds, so that one is almost surely the attacker's); if every
  socket is busy with a request, the newcomer is closed instead. File descriptors therefore
  stay bounded and a new client is served even while the cap is full of half-open sockets.

The cap only acts once a socket is accepted, and asyncio accepts as many sockets per wake-up as
the listening backlog (uvicorn's ``backlog``, 2,048 by default) before any of them is seen:
with the open-file limit at 256, that burst alone ran out of descriptors, and asyncio then
logs a traceback per failed accept. So the backlog is ``ACCEPT_BATCH`` (32), and the cap is
at most half the open-file limit: 400 (and 2,000) half-open sockets under a limit of 256 stay
at about 107 descriptors, with no failed accept.

And one thing uvicorn gets wrong: **a half-closed client**. A client that sends its request
and then shuts the write side of its socket (``shutdown(SHUT_WR)``: a script, ``nc -N``, some
proxies) still reads the answer; uvicorn took the end of its input for a departure and sent
nothing, for ``GET /`` as for a non-streaming ``/v1/chat/completions``. Now a request that is
whole and not answered yet is answered, and the socket closed after it. An event stream
already under way is still a client that left (the usual abort of a page or a script): its
generation is stopped at once, as before.

uvicorn's own ``limit_concurrency`` (503 once that many connections or requests are in
flight) is set to twice the cap, as a second wall that the eviction above never reaches.
:func:`server_config` is the one place these settings are made; ``run_server`` and the tests
use it.

Everything here runs on uvicorn's event loop thread (asyncio protocol callbacks and timers).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from tkchat.serve.errors import error_response
from tkchat.serve.guard import SAFETY_HEADERS

HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 10.0  # for the whole body: a JSON chat is at most 64 kB
MAX_CONNECTIONS = 100
ACCEPT_BATCH = 32


def connection_cap() -> int:
    """``MAX_CONNECTIONS``, or half the process's open-file limit if that is lower."""
    if sys.platform == "win32":
        return MAX_CONNECTIONS
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft // 2))


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with header and body deadlines and a connection cap (see the
    module). Subclass it with other class attributes to change the limits
    (:func:`server_config`)."""

    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.half_closed = False  # the client shut its write side, and waits for an answer
        self.streaming = False  # the response under way is an event stream
        self.opened = self.loop.time()
        self.header_deadline: asyncio.TimerHandle | None = None
        self.body_deadline: asyncio.TimerHandle | None = None
        self._arm_header_deadline()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        if self.header_deadline is None and self.waiting_for_headers:
            self._arm_header_deadline()  # the next request on a kept-alive connection
        super().data_received(data)
        if not self.waiting_for_headers:
            self._cancel_header_deadline()
        if self.waiting_for_body:
            if self.body_deadline is None:  # the headers just ended: the body's clock starts
                self.body_deadline = self.loop.call_later(
                    self.body_timeout_s, self._on_body_deadline
                )
        else:
            self._cancel_body_deadline()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not None and self.cycle is not cycle:
            self.streaming = False
            _note_streams(self, self.cycle)

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """The client shut its side. A request that is whole and not answered yet is still
        answered: True keeps the socket open for writing (see the module docstring)."""
        cycle = self.cycle
        unanswered = cycle is not None and not cycle.response_complete and not self.streaming
        # DONE, or MUST_CLOSE for a request that said "Connection: close" (h11 moves a
        # whole request there at once): either way, whole and waiting for its answer
        if unanswered and self.conn.their_state in (h11.DONE, h11.MUST_CLOSE):
            self.half_closed = True
            return True
        super().eof_received()
        return None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.half_closed:
            self.transport.close()  # answered: nothing more can come from that client

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        self._cancel_body_deadline()
        super().connection_lost(exc)

    @property
    def waiting_for_headers(self) -> bool:
        """True until h11 has seen a whole request line and headers (again after a response)."""
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    @property
    def waiting_for_body(self) -> bool:
        """True from the end of a request's headers until h11 has read all of its body."""
        return self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing()

    def _arm_header_deadline(self) -> None:
        self.opened = self.loop.time()
        self.header_deadline = self.loop.call_later(self.header_timeout_s, self._on_deadline)

    def _cancel_header_deadline(self) -> None:
        if self.header_deadline is not None:
            self.header_deadline.cancel()
            self.header_deadline = None

    def _on_deadline(self) -> None:
        self.header_deadline = None
        if self.waiting_for_headers:
            self.transport.close()  # no response: the client never asked anything

    def _cancel_body_deadline(self) -> None:
        if self.body_deadline is not None:
            self.body_deadline.cancel()
            self.body_deadline = None

    def _on_body_deadline(self) -> None:
        """The body is late: say so with a 408 if the handler has not answered yet, then close.
        Closing is what frees the handler: uvicorn tells it the client is gone, and whatever
        it sends after that is dropped."""
        self.body_deadline = None
        if not self.waiting_for_body:
            return
        if self.cycle is not None and not self.cycle.response_started:
            refusal = error_response(
                408,
                "body_timeout",
                f"The request body did not arrive within {self.body_timeout_s:g} s.",
                {**SAFETY_HEADERS, "connection": "close"},
            )
            for event in (
                h11.Response(
                    status_code=408, headers=refusal.raw_headers, reason=b"Request Timeout"
                ),
                h11.Data(data=bytes(refusal.body)),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def _make_room(self) -> None:
        """One socket too many: close the oldest one still waiting for headers, else this one."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and c is not self and c.waiting_for_headers
        ]
        victim = min(waiting, key=lambda c: c.opened) if waiting else self
        victim.transport.close()


def _note_streams(protocol: GuardedH11Protocol, cycle: Any) -> None:
    """Have ``protocol.streaming`` say whether ``cycle``'s response is an event stream (its
    start's content type), by wrapping the cycle's ``send`` before the app first calls it."""
    send = cycle.send

    async def noting(message: Any) -> None:
        if message["type"] == "http.response.start":
            protocol.streaming = any(
                name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                for name, value in message.get("headers", ())
            )
        await send(message)

    cycle.send = noting


def server_config(
    app: Any,
    *,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    body_timeout_s: float = BODY_TIMEOUT_S,
    max_connections: int | None = None,
    **options: Any,
) -> uvicorn.Config:
    """The uvicorn settings ``tkchat serve`` runs with; ``options`` go to ``uvicorn.Config``.
    ``max_connections``: :func:`connection_cap` unless given."""
    if max_connections is None:
        max_connections = connection_cap()
    protocol = type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {
            "header_timeout_s": header_timeout_s,
            "body_timeout_s": body_timeout_s,
            "max_connections": max_connections,
        },
    )
    options = {
        "log_level": "warning",
        "access_log": False,
        "server_header": False,
        "timeout_graceful_shutdown": 2,
        "backlog": ACCEPT_BATCH,
        **options,
    }
    return uvicorn.Config(
        app,
        http=protocol,
        limit_concurrency=2 * max_connections,
        timeout_keep_alive=5,  # idle after a response: uvicorn's own default, said out loud
        **options,
    )
