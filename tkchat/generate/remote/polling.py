"""Waiting on a server without ever blocking for long: Stop must reach a request at once, even
while the server says nothing.

- :class:`Watch` — the reasons to stop waiting during one exchange: Stop, the server silent
  for too long, no event for too long, the deadline of a short request;
- :class:`PollingReader` and :class:`PollingResponse` — ``http.client`` reading through a
  socket whose timeout is ``POLL_S``: a read that times out is retried once the watch has
  been checked;
- :func:`connect` — a non-blocking connect, polled the same way.

Everything here runs on the thread that owns the exchange (the worker for a generation, the
loader for the ``GET`` requests of a load). Only the standard library is used.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

from tkchat.generate.remote.errors import Cancelled, RemoteError

POLL_S = 0.1  # longest a read blocks before Stop and the idle deadline are checked again
READ_BYTES = 64 * 1024  # one read from the socket, and the response's buffer


class Watch:
    """The reasons to stop waiting during one exchange: Stop (``cancelled()`` says so), the
    server staying silent for ``idle_timeout`` seconds, and — for the short requests of a
    load — a deadline ``within_s`` seconds away for the whole exchange, which a server
    trickling one byte a second cannot push back.

    Used by the one thread that reads the exchange (the worker, or the loader)."""

    def __init__(
        self,
        cancelled: Callable[[], bool] | None,
        idle_timeout: float,
        within_s: float | None = None,
        event_timeout: float | None = None,
    ) -> None:
        self._cancelled = cancelled
        self.idle_timeout = idle_timeout
        self.within_s = within_s  # the whole exchange's time, if it has a deadline ...
        # ... and the time.monotonic() by which it must be over
        self.deadline = None if within_s is None else time.monotonic() + within_s
        self.event_timeout = event_timeout  # an event stream: longest without an event
        self.last_data = self.last_event = time.monotonic()

    def sent(self) -> None:
        """The request is sent: both clocks start now."""
        self.touch()
        self.heard()

    def heard(self) -> None:
        """An event arrived (or the request was just sent): the event clock starts again."""
        self.last_event = time.monotonic()

    def touch(self) -> None:
        """Bytes arrived (or a request was just sent): the idle clock starts again."""
        self.last_data = time.monotonic()

    def cancelled(self) -> bool:
        return self._cancelled is not None and self._cancelled()

    def check(self) -> None:
        """Raise :class:`Cancelled` after Stop, or the idle or deadline :class:`RemoteError`."""
        if self.cancelled():
            raise Cancelled
        now = time.monotonic()
        if now - self.last_data > self.idle_timeout:
            raise RemoteError(
                f"The server stopped sending (no data for {self.idle_timeout:g} s)",
                kind="server_timeout",
            )
        if self.event_timeout is not None and now - self.last_event > self.event_timeout:
            # Keep-alive comments prove a connection, not an answer: 2 MB of them is days.
            raise RemoteError(
                f"The server sent nothing for {self.event_timeout:g} s (no event, only "
                "keep-alives), so the answer was given up",
                kind="server_timeout",
            )
        if self.deadline is not None and now > self.deadline:
            raise RemoteError(
                f"The server did not finish answering within {self.within_s:g} s",
                kind="server_timeout",
            )


class PollingReader(io.RawIOBase):
    """The socket as a raw stream for ``http.client``, whose reads never block for long.

    The socket's timeout is ``POLL_S``; a read that times out is retried once the watch has
    been checked. (``socket.makefile`` cannot do this: after one timeout its file refuses
    every further read.) Any byte received counts as the server being alive, SSE keep-alive
    comments included: a server that says "still working" is not stalled.
    """

    def __init__(self, sock: socket.socket, watch: Watch) -> None:
        super().__init__()
        self._sock = sock
        self._watch = watch

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            self._watch.check()
            try:
                count = self._sock.recv_into(buffer)
            except (TimeoutError, InterruptedError):
                continue
            if count:
                self._watch.touch()
            return count


class PollingResponse(http.client.HTTPResponse):
    """An ``HTTPResponse`` that reads through a :class:`PollingReader`."""

    def __init__(
        self,
        sock: socket.socket,
        debuglevel: int = 0,
        method: str | None = None,
        url: str | None = None,
        *,
        watch: Watch,
    ) -> None:
        super().__init__(sock, debuglevel, method=method, url=url)
        self.watch = watch  # (read_events tells it of each event)
        # The stdlib's socket file is kept (unread) only for its reference on the socket:
        # ``getresponse`` closes the connection when the answer is close-delimited, and the
        # socket must live on until this response is closed — as with a plain HTTPResponse.
        self._socket_file = self.fp
        self.fp = io.BufferedReader(PollingReader(sock, watch), buffer_size=READ_BYTES)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._socket_file.close()


def connect(host: str, port: int, timeout: float, watch: Watch) -> socket.socket:
    """A connected TCP socket to ``host:port``, or the :class:`OSError` of the last address
    tried (:class:`Cancelled` on Stop). The connect is non-blocking, polled every ``POLL_S``,
    so that Stop is honoured even while a firewall drops our packets; the whole attempt (all
    addresses of the host) takes at most ``timeout`` seconds. (Name resolution itself cannot
    be interrupted: ``socket.gaierror``, an OSError, for an unknown host.)"""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    deadline = time.monotonic() + timeout
    error: OSError = TimeoutError("no address to connect to")
    for family, kind, proto, _name, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            _connect_polled(sock, address, deadline, timeout, watch)
            sock.settimeout(timeout)  # blocking again, for TLS and sending
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except Cancelled:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            error = exc
        else:
            return sock
    raise error


def _connect_polled(
    sock: socket.socket, address: Any, deadline: float, timeout: float, watch: Watch
) -> None:
    """Connect ``sock`` without blocking, looking at Stop every ``POLL_S`` until ``deadline``."""
    sock.setblocking(False)
    code = sock.connect_ex(address)
    if code not in (
        0,
        errno.EINPROGRESS,
        errno.EWOULDBLOCK,
        errno.EAGAIN,
        getattr(errno, "WSAEWOULDBLOCK", -1),
    ):
        raise OSError(code, _strerror(code))
    while code != 0:
        if watch.cancelled():
            raise Cancelled
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer within {timeout:g} s")
        _, writable, failed = select.select([], [sock], [sock], min(POLL_S, left))
        if writable or failed:
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, _strerror(code))
            return


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except ValueError:
        return f"error {code}"
