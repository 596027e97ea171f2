"""The reasons a remote exchange stops waiting: Stop, and three deadlines.

A remote server can fail by saying nothing (a hung model), by saying "still here" and nothing
else (keep-alive comments forever), or by answering a byte at a time (a ``/health`` that
trickles). Each has its deadline here, each checked at every poll of the reader
(:class:`tkchat.generate.remote.polling.PollingReader`), and each ends the exchange with one
sentence:

- ``idle_timeout``: no byte at all for that long (reset by every byte);
- ``event_timeout``: a streamed answer without an event for that long (reset by events
  only, so keep-alive comments do not keep an answer alive);
- ``handshake_timeout``: the whole exchange, for the short requests of a load, which a server
  trickling one byte a second cannot push back (never reset).

Time comes from ``clock`` (``time.monotonic`` unless a test passes another), so a test can
move it past a deadline instead of waiting for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tkchat.generate.remote.errors import Cancelled, RemoteError


class Watch:
    """Stop (``cancelled()`` says so) and the deadlines of one exchange (see the module).

    Used by the one thread that reads the exchange (the worker, or the loader)."""

    def __init__(
        self,
        cancelled: Callable[[], bool] | None,
        idle_timeout: float,
        *,
        handshake_timeout: float | None = None,
        event_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cancelled = cancelled
        self._clock = clock
        self.idle_timeout = idle_timeout
        self.handshake_timeout = handshake_timeout  # a load's request: the whole exchange
        self.event_timeout = event_timeout  # an event stream: longest without an event
        self.started = self.last_data = self.last_event = clock()

    def sent(self) -> None:
        """The request is sent: the idle and event clocks start now."""
        self.touch()
        self.heard()

    def heard(self) -> None:
        """An event arrived (or the request was just sent): the event clock starts again."""
        self.last_event = self._clock()

    def touch(self) -> None:
        """Bytes arrived (or a request was just sent): the idle clock starts again."""
        self.last_data = self._clock()

    def cancelled(self) -> bool:
        return self._cancelled is not None and self._cancelled()

    def check(self) -> None:
        """Raise :class:`Cancelled` after Stop, or the idle, event or handshake
        :class:`RemoteError`."""
        if self.cancelled():
            raise Cancelled
        now = self._clock()
        if now - self.last_data > self.idle_timeout:
            raise self.idle_error()
        if self.event_timeout is not None and now - self.last_event > self.event_timeout:
            # Keep-alive comments prove a connection, not an answer: 2 MB of them is days.
            raise RemoteError(
                f"The server sent nothing for {self.event_timeout:g} s (no event, only "
                "keep-alives), so the answer was given up",
                kind="server_timeout",
            )
        if self.handshake_timeout is not None and now - self.started > self.handshake_timeout:
            raise RemoteError(
                f"The server did not finish answering within {self.handshake_timeout:g} s",
                kind="server_timeout",
            )

    def idle_error(self) -> RemoteError:
        """No byte for ``idle_timeout`` seconds, in one sentence (the asyncio client's read
        timeout says it too)."""
        return RemoteError(
            f"The server stopped sending (no data for {self.idle_timeout:g} s)",
            kind="server_timeout",
        )
