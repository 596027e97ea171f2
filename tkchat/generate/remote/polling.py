"""Waiting on a server without ever blocking for long: Stop must reach a request at once, even
while the server says nothing.

- :class:`PollingReader` and :class:`PollingResponse` — ``http.client`` reading through a
  socket whose timeout is ``POLL_S``: a read that times out is retried once the watch has
  been checked;
- :func:`connect` — a non-blocking connect, polled the same way.

Each wait checks the exchange's :class:`~tkchat.generate.remote.watch.Watch` (Stop and the
deadlines). Everything here runs on the thread that owns the exchange (the worker for a
generation, the loader for the ``GET`` requests of a load). Only the standard library is used.
"""

from __future__ import annotations

import errno
import http.client
import io
import os
import select
import socket
import time
from typing import Any

from tkchat.generate.remote.errors import Cancelled
from tkchat.generate.remote.watch import Watch

POLL_S = 0.1  # longest a read blocks before Stop and the idle deadline are checked again
READ_BYTES = 64 * 1024  # one read from the socket, and the response's buffer


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
