"""HTTP for the remote backend: one request per connection, and no wait longer than a poll.

A remote model fails in more ways than a local one, and each has to end as one sentence in
the window, never as a hang or a traceback:

- cannot connect (refused, unknown host, no answer within ``connect_timeout``);
- the server goes quiet for ``idle_timeout`` seconds (a hung model, a stalled proxy);
- an HTTP error status (the server's own error message is shown when it sent JSON);
- an answer that is not an event stream (checked on its first line, before parsing).

Stop has to reach the server at once, even while the server says nothing. So no read blocks
for long: once the request is sent the socket's timeout is ``POLL_S``, and the raw reader
under ``http.client`` (:class:`PollingReader`) retries each timed-out read after checking
Stop and the idle deadline (:class:`Watch`). The connect is non-blocking and polled the same
way. On Stop the connection is shut down, so a good server sees the disconnect and stops
generating.

Everything runs on the thread that owns the exchange — the worker for a generation, the
loader for the ``GET`` requests of ``load()`` — except :meth:`Exchange.abort` and
:meth:`HttpClient.abort_all`, which any thread may call. Only the standard library is used
(``http.client``, ``socket``, ``ssl``). Environment proxies (``http_proxy``) are not used:
the typical server is on this machine or this network.
"""

from __future__ import annotations

import errno
import functools
import http.client
import io
import json
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from tkchat.generate.remote.errors import (
    Cancelled,
    RemoteError,
    bad_stream,
    closed_mid_answer,
    error_detail,
    snippet,
)
from tkchat.generate.remote.watch import Watch
from tkchat.limits import (
    EVENT_TIMEOUT_S,
    HANDSHAKE_TIMEOUT_S,
    MAX_BYTES_WITHOUT_EVENT,
    MAX_JSON_BYTES,
    MAX_RESPONSE_BYTES,
)
from tkchat.transport.sse import SSEError, SSEMessage, SSEParser, can_start_stream, first_line

TOKEN_ENV_VAR = "TKCHAT_SERVER_TOKEN"  # the bearer token, when none is given in code
POLL_S = 0.1  # longest a read blocks before Stop and the idle deadline are checked again
READ_BYTES = 64 * 1024  # one read from the socket, and the response's buffer
UTF8_BOM = b"\xef\xbb\xbf"  # may start an event stream (the parser skips it)


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


class Exchange:
    """One HTTP request and its response, on a connection of its own."""

    def __init__(self, conn: http.client.HTTPConnection, sock: socket.socket) -> None:
        self.conn = conn
        self.sock = sock
        self.response: http.client.HTTPResponse | None = None
        self._closed = False

    def abort(self) -> None:
        """Any thread. Shut the socket down: the server sees the disconnect now, and a read
        blocked on this thread or another returns at once."""
        try:
            if self.sock.fileno() != -1:
                self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already reset by the peer, or already closed

    def close(self) -> None:
        """The thread that owns the exchange. Abort, then free the socket."""
        if self._closed:
            return
        self._closed = True
        self.abort()
        if self.response is not None:
            self.response.close()
        self.conn.close()
        self.sock.close()


def split_server_url(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, base path)`` of a server URL as a user types it.

    ``127.0.0.1:8080``, ``http://host:8080/``, ``http://host:8080/v1`` and even
    ``http://host:8080/v1/chat/completions`` all name the same server; a path prefix in front
    (a server behind a reverse proxy, ``https://example.org/llm/v1``) is kept. Raises
    ``ValueError`` with a readable message.
    """
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"only http:// and https:// servers are supported, not {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"no host name in the server address {url!r}")
    port = parts.port  # raises ValueError for a port that is not a number in range
    path = parts.path.rstrip("/")
    for suffix in ("/v1/chat/completions", "/chat/completions", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path


class HttpClient:
    """One server: its address, the two timeouts, its token, and the exchanges now open on it.

    ``connect_timeout``: seconds for a TCP (and TLS) connection. ``idle_timeout``: seconds
    the server may stay silent — before its answer starts or in the middle — before the
    exchange fails with a clear message. ``token``: sent as ``Authorization: Bearer`` with
    every request (``tkchat serve --allow-remote`` wants it on all but its page). Each request
    gets a connection of its own, so a stopped stream can be closed without draining it.
    """

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int,
        base: str,
        *,
        connect_timeout: float,
        idle_timeout: float,
        token: str | None = None,
    ) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.base = base
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.event_timeout = EVENT_TIMEOUT_S  # an event stream's longest silence (see Watch)
        self.handshake_timeout = HANDSHAKE_TIMEOUT_S  # a load's whole request (see Watch)
        self.token = token
        self._lock = threading.Lock()
        self._exchanges: set[Exchange] = set()  # the open ones, so abort_all() can reach them

    @property
    def address(self) -> str:
        """``HOST:PORT`` (IPv6 literals in brackets), as in the window's title."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The server's URL without ``/v1`` — the one error messages quote."""
        return f"{self.scheme}://{self.address}{self.base}"

    def watch(self, cancel: threading.Event | None) -> Watch:
        """The watch of a streamed answer: Stop, silence, and no event for too long."""
        cancelled = None if cancel is None else cancel.is_set
        return Watch(cancelled, self.idle_timeout, event_timeout=self.event_timeout)

    # -- exchanges --------------------------------------------------------------------------

    def get_json(self, path: str, cancelled: Callable[[], bool] | None = None) -> tuple[int, Any]:
        """Loader thread. ``(status, parsed JSON or None)`` of ``GET path``, all of it within
        ``handshake_timeout`` seconds. ``cancelled``: polled as the exchange waits (a load given
        up); then :class:`Cancelled` is raised. :meth:`abort_all` (closing) ends it too."""
        watch = Watch(cancelled, self.idle_timeout, handshake_timeout=self.handshake_timeout)
        exchange = self.open("GET", path, None, watch, accept="application/json")
        try:
            assert exchange.response is not None
            return exchange.response.status, read_json(exchange.response)
        finally:
            self.release(exchange)

    def open(
        self, method: str, path: str, body: dict[str, Any] | None, watch: Watch, *, accept: str
    ) -> Exchange:
        """Worker or loader thread. Connect, send, read the status line and headers. Raises
        RemoteError (or Cancelled); on success the caller owns the exchange and must
        :meth:`release` it."""
        sock = self._connect(watch)
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            context = ssl.create_default_context()
            try:
                sock = context.wrap_socket(sock, server_hostname=self.host)
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                raise self.unreachable(exc) from exc
            conn = http.client.HTTPSConnection(
                self.host, self.port, context=context, timeout=self.connect_timeout
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.connect_timeout)
        conn.sock = sock  # ours: connected in a way Stop can interrupt (see _connect)
        # getresponse() builds its answer with response_class: ours reads in short polls.
        # (typeshed wants a class there; a partial of one is called the same way.)
        conn.response_class = functools.partial(  # type: ignore[assignment]
            PollingResponse, watch=watch
        )
        exchange = Exchange(conn, sock)
        with self._lock:
            self._exchanges.add(exchange)
        try:
            headers = {"Accept": accept}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            data = None
            if body is not None:
                data = json.dumps(body, ensure_ascii=False).encode("utf-8")
                headers["Content-Type"] = "application/json"
            try:
                conn.request(method, self.base + path, body=data, headers=headers)
            except OSError as exc:
                raise RemoteError(
                    f"The server at {self.base_url} closed the connection while "
                    f"the request was sent: {_describe(exc)}",
                    kind="server_disconnected",
                ) from exc
            # From here every read is a short poll (see PollingReader).
            sock.settimeout(POLL_S)
            watch.sent()
            try:
                exchange.response = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionError) as exc:
                raise RemoteError(
                    f"The server at {self.base_url} closed the connection "
                    f"without answering ({_describe(exc)})",
                    kind="server_disconnected",
                ) from exc
            except http.client.HTTPException as exc:
                raise RemoteError(
                    f"The server at {self.base_url} did not answer in HTTP ({_describe(exc)})",
                    kind="bad_stream",
                ) from exc
            except OSError as exc:
                raise RemoteError(
                    f"The connection to {self.base_url} failed: {_describe(exc)}",
                    kind="server_disconnected",
                ) from exc
            if exchange.response.status == 401:
                # Whatever the request (a load's /health or a chat), a refused token is
                # the same one sentence, never "not tkchat nor OpenAI-compatible".
                raise self.unauthorized(path)
        except BaseException:
            self.release(exchange)
            raise
        return exchange

    def release(self, exchange: Exchange) -> None:
        """The owning thread. Close the exchange (at once: Stop, an error, or the end)."""
        with self._lock:
            self._exchanges.discard(exchange)
        exchange.close()

    def abort_all(self) -> None:
        """Any thread. Abort every open exchange; the threads that own them then release
        them (their next read fails at once)."""
        with self._lock:
            exchanges = list(self._exchanges)
        for exchange in exchanges:
            exchange.abort()

    def event_stream(self, exchange: Exchange, path: str) -> Iterator[SSEMessage]:
        """Worker thread. The SSE messages of the answer to a streaming request, once its
        status and type say it is one; a failure status raises with the server's message."""
        response = exchange.response
        assert response is not None
        if response.status != 200:
            raise self.status_error(response, path, read_json(response))
        content_type = response.getheader("Content-Type", "")
        if content_type and not content_type.lower().startswith("text/event-stream"):
            raise bad_stream(f"its type is {content_type}, not text/event-stream")
        watch = getattr(response, "watch", None)
        return read_events(response, None if watch is None else watch.heard)

    # -- errors -----------------------------------------------------------------------------

    def status_error(self, response: http.client.HTTPResponse, path: str, body: Any) -> RemoteError:
        kind = "server_error"
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            kind = str(body["error"].get("kind") or kind)  # tkchat's errors say, e.g. "line_full"
        return RemoteError(
            f"The server at {self.base_url} answered {response.status} {response.reason} "
            f"to {path}{error_detail(body)}",
            kind=kind,
        )

    def unauthorized(self, path: str) -> RemoteError:
        """401: what to do about it, in one sentence (the token itself is never quoted)."""
        if self.token:
            advice = f"it refused the token given (check ${TOKEN_ENV_VAR})"
        else:
            advice = f"set {TOKEN_ENV_VAR} to the token it printed after #token="
        return RemoteError(
            f"The server at {self.base_url} wants a token for {path}: {advice}",
            kind="unauthorized",
        )

    def unreachable(self, exc: BaseException) -> RemoteError:
        return RemoteError(
            f"Cannot reach the server at {self.base_url}: {_describe(exc)}",
            kind="server_unreachable",
        )

    # -- connecting -------------------------------------------------------------------------

    def _connect(self, watch: Watch) -> socket.socket:
        """Worker or loader thread. A connected TCP socket, or RemoteError("Cannot reach
        ..."). The connect is non-blocking, polled every ``POLL_S``, so that Stop is honoured
        even while a firewall drops our packets; the whole attempt (all addresses of the host)
        takes at most ``connect_timeout``. (Name resolution itself cannot be interrupted.)"""
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as exc:  # socket.gaierror: unknown host, no DNS
            raise self.unreachable(exc) from exc
        deadline = time.monotonic() + self.connect_timeout
        error: OSError = TimeoutError("no address to connect to")
        for family, kind, proto, _name, address in infos:
            sock = socket.socket(family, kind, proto)
            try:
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
                        raise TimeoutError(f"no answer within {self.connect_timeout:g} s")
                    _, writable, failed = select.select([], [sock], [sock], min(POLL_S, left))
                    if writable or failed:
                        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if code:
                            raise OSError(code, _strerror(code))
                        break
                sock.settimeout(self.connect_timeout)  # blocking again, for TLS and sending
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except Cancelled:
                sock.close()
                raise
            except OSError as exc:
                sock.close()
                error = exc
        raise self.unreachable(error)


# -- reading bodies (the owning thread) ------------------------------------------------------


def read_events(  # noqa: C901 - a debt (tests/test_architecture.py)
    response: http.client.HTTPResponse, on_event: Callable[[], None] | None = None
) -> Iterator[SSEMessage]:
    """The SSE messages of a streaming answer, as they arrive; ends at the end of the body.
    The first line is checked before anything is parsed, so that an HTML page or a JSON
    document says what it is instead of "closed mid-answer".

    Memory stays bounded whatever the server sends (:mod:`tkchat.limits`): at most
    ``MAX_RESPONSE_BYTES`` in all, and at most ``MAX_BYTES_WITHOUT_EVENT`` in a row that
    complete no event — a server sending blank lines or comments forever keeps the idle
    timer happy, but is not answering. ``on_event`` is told of each event (the watch's
    event clock: a stream of keep-alives alone ends after ``event_timeout``)."""
    parser = SSEParser()
    head = bytearray()
    checked = False
    total = 0
    idle_bytes = 0  # bytes since the last event (or the start)
    while True:
        try:
            data = response.read1(READ_BYTES)
        except http.client.IncompleteRead as exc:
            raise closed_mid_answer() from exc
        except http.client.HTTPException as exc:  # e.g. a garbage chunk-size line
            raise bad_stream(f"broken HTTP framing ({_describe(exc)})") from exc
        except OSError as exc:  # reset by the peer, or aborted by close()
            raise closed_mid_answer() from exc
        total += len(data)
        idle_bytes += len(data)
        if total > MAX_RESPONSE_BYTES:
            raise bad_stream(f"it is longer than {MAX_RESPONSE_BYTES >> 20} MB")
        if idle_bytes > MAX_BYTES_WITHOUT_EVENT:
            raise bad_stream(f"{idle_bytes >> 10} kB in a row without one event")
        if not checked:
            if not data and not head:
                return  # an empty body: the protocol reports "closed mid-answer"
            # Blank lines in front are legal: drop them as they come, so that the head
            # never holds more than one read and the sniffed first line.
            head += data
            bom = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
            blank = len(head) - bom - len(bytes(head[bom:]).lstrip(b"\r\n"))
            del head[bom : bom + blank]
            if len(head) == bom and data:
                continue
            line = first_line(bytes(head), at_end=not data)
            if line is None:
                continue  # not a whole line yet
            _check_stream_start(line)
            checked, data = True, bytes(head)
            head.clear()
        if not data:
            return
        try:
            messages = parser.feed(data)
        except SSEError as exc:  # a line or an event of megabytes: not a chat answer
            raise bad_stream(str(exc)) from exc
        if messages:
            idle_bytes = 0
            if on_event is not None:
                on_event()
        yield from messages


def _check_stream_start(line: bytes) -> None:
    """Raise unless ``line`` (the first of a body) can begin an event stream."""
    if not line or can_start_stream(line):
        return  # an empty body: the protocol reports "closed mid-answer"
    if line.startswith(b"error:"):
        # llama.cpp's server writes a failure before the first token as an ``error:`` line.
        try:
            detail = json.loads(line[len(b"error:") :])
        except (ValueError, RecursionError):
            detail = None
        if detail is not None:
            raise RemoteError(
                "The server reported an error" + error_detail(detail), kind="server_error"
            )
    raise bad_stream(f"it starts with {snippet(line.decode('utf-8', 'replace'))}")


def read_json(response: http.client.HTTPResponse) -> Any:
    """The body as JSON, or a string (short text bodies), or None. Reads at most
    ``MAX_JSON_BYTES`` (give or take one read)."""
    body = b""
    while len(body) < MAX_JSON_BYTES:
        try:
            data = response.read1(READ_BYTES)
        except (http.client.HTTPException, OSError):
            break  # the status line already tells the story; the body is a bonus
        if not data:
            break
        body += data
    text = body.decode("utf-8", "replace").strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested thousands deep
        content_type = (response.getheader("Content-Type") or "").lower()
        return text if text and content_type.startswith("text/plain") else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except ValueError:
        return f"error {code}"
