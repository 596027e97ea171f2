"""HTTP for the remote backend: one request per connection, and no wait longer than a poll.

A remote model fails in more ways than a local one, and each has to end as one sentence in
the window, never as a hang or a traceback:

- cannot connect (refused, unknown host, no answer within ``connect_timeout``);
- the server goes quiet for ``idle_timeout`` seconds (a hung model, a stalled proxy);
- an HTTP error status (the server's own error message is shown when it sent JSON);
- an answer that is not an event stream (checked on its first line, before parsing).

This module is the client: a server's address, its requests and their failures
(:class:`HttpClient`, :class:`Exchange`). Beside it, :mod:`.polling` makes every wait short
(Stop has to reach the server at once, even while the server says nothing: no read blocks
for longer than ``POLL_S``, and the connect is polled the same way), and :mod:`.bodies`
reads the answers. On Stop the connection is shut down, so a good server sees the
disconnect and stops generating.

Everything runs on the thread that owns the exchange — the worker for a generation, the
loader for the ``GET`` requests of ``load()`` — except :meth:`Exchange.abort` and
:meth:`HttpClient.abort_all`, which any thread may call. Only the standard library is used
(``http.client``, ``socket``, ``ssl``). Environment proxies (``http_proxy``) are not used:
the typical server is on this machine or this network.
"""

from __future__ import annotations

import functools
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from tkchat.generate.remote.bodies import check_stream_type, read_events, read_json
from tkchat.generate.remote.errors import RemoteError, describe, error_detail
from tkchat.generate.remote.polling import POLL_S, PollingResponse, connect
from tkchat.generate.remote.watch import Watch
from tkchat.limits import EVENT_TIMEOUT_S, HANDSHAKE_TIMEOUT_S
from tkchat.transport.sse import SSEMessage

TOKEN_ENV_VAR = "TKCHAT_SERVER_TOKEN"  # the bearer token, when none is given in code

__all__ = [
    "POLL_S",
    "TOKEN_ENV_VAR",
    "Exchange",
    "HttpClient",
    "server_base_url",
    "split_server_url",
]


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
    (a server behind a reverse proxy, ``https://example.org/llm/v1``) is kept. Without a
    scheme the port is needed: a bare word (``--server notaurl``) is more likely a slip than
    a server on port 80. Raises ``ValueError`` with a readable message.
    """
    text = url.strip()
    typed_scheme = "://" in text
    if not typed_scheme:
        text = "http://" + text
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"only http:// and https:// servers are supported, not {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"no host name in the server address {url!r}")
    try:
        port = parts.port
    except ValueError:  # urllib's own words name neither the address nor what would do
        raise ValueError(f"the port in {url!r} is not a number from 0 to 65535") from None
    if port is None and not typed_scheme:
        raise ValueError(
            f"{url!r} is not a server address: give http://HOST[:PORT][/PATH], "
            "https://HOST[:PORT][/PATH] or HOST:PORT"
        )
    path = parts.path.rstrip("/")
    for suffix in ("/v1/chat/completions", "/chat/completions", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path


def host_port(host: str, port: int) -> str:
    """``HOST:PORT``, an IPv6 literal in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def server_base_url(url: str) -> str:
    """The server ``url`` names, written the one way the app quotes it
    (:attr:`HttpClient.base_url`): ``127.0.0.1:8080/v1/`` is ``http://127.0.0.1:8080``.
    Raises ``ValueError`` as :func:`split_server_url` does."""
    scheme, host, port, base = split_server_url(url)
    return f"{scheme}://{host_port(host, port)}{base}"


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
        return host_port(self.host, self.port)

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
        exchange = Exchange(*self._connection(watch))
        with self._lock:
            self._exchanges.add(exchange)
        try:
            self._send(exchange, method, path, body, watch, accept)
            assert exchange.response is not None
            if exchange.response.status == 401:
                # Whatever the request (a load's /health or a chat), a refused token is
                # the same one sentence, never "not tkchat nor OpenAI-compatible".
                raise self.unauthorized(path)
        except BaseException:
            self.release(exchange)
            raise
        return exchange

    def _connection(self, watch: Watch) -> tuple[http.client.HTTPConnection, socket.socket]:
        """A connection on a socket of ours (TLS for https), whose reads are short polls."""
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
        return conn, sock

    def _send(
        self,
        exchange: Exchange,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        watch: Watch,
        accept: str,
    ) -> None:
        """Send the request and read the answer's status line and headers into
        ``exchange.response``; each way this fails is one sentence (RemoteError)."""
        headers, data = self.request_parts(accept, body)
        try:
            exchange.conn.request(method, self.base + path, body=data, headers=headers)
        except OSError as exc:
            raise RemoteError(
                f"The server at {self.base_url} closed the connection while "
                f"the request was sent: {describe(exc)}",
                kind="server_disconnected",
            ) from exc
        # From here every read is a short poll (see PollingReader).
        exchange.sock.settimeout(POLL_S)
        watch.sent()
        try:
            exchange.response = exchange.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError) as exc:
            raise self.no_answer(exc) from exc
        except http.client.HTTPException as exc:
            raise RemoteError(
                f"The server at {self.base_url} did not answer in HTTP ({describe(exc)})",
                kind="bad_stream",
            ) from exc
        except OSError as exc:
            raise RemoteError(
                f"The connection to {self.base_url} failed: {describe(exc)}",
                kind="server_disconnected",
            ) from exc

    def request_parts(
        self, accept: str, body: dict[str, Any] | None
    ) -> tuple[dict[str, str], bytes | None]:
        """Any thread: the headers and the bytes of a request to this server (its token in
        ``Authorization``; a body as UTF-8 JSON). The asyncio client sends the same."""
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        return headers, data

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
            raise self.status_error(response.status, response.reason, path, read_json(response))
        check_stream_type(response.getheader("Content-Type", ""))
        watch = getattr(response, "watch", None)
        return read_events(response, None if watch is None else watch.heard)

    # -- errors (the asyncio client tells its failures in the same sentences) ----------------

    def status_error(self, status: int, reason: str, path: str, body: Any) -> RemoteError:
        # A 4xx is the server refusing this request (a field it does not know, a prompt too
        # long for it): ``upstream_refused``, which tkchat serve relays as a 400, not a 500.
        kind = "upstream_refused" if 400 <= status < 500 else "server_error"
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            kind = str(body["error"].get("kind") or kind)  # tkchat's errors say, e.g. "line_full"
        return RemoteError(
            f"The server at {self.base_url} answered {status} {reason} "
            f"to {path}{error_detail(body)}",
            kind=kind,
        )

    def unauthorized(self, path: str) -> RemoteError:
        """401: what to do about it, in one sentence (the token itself is never quoted)."""
        if self.token:
            advice = f"it refused the token given (check ${TOKEN_ENV_VAR})"
        else:
            advice = f"set {TOKEN_ENV_VAR} to the token it printed on its terminal"
        return RemoteError(
            f"The server at {self.base_url} wants a token for {path}: {advice}",
            kind="unauthorized",
        )

    def no_answer(self, exc: BaseException) -> RemoteError:
        return RemoteError(
            f"The server at {self.base_url} closed the connection "
            f"without answering ({describe(exc)})",
            kind="server_disconnected",
        )

    def unreachable(self, exc: BaseException) -> RemoteError:
        return RemoteError(
            f"Cannot reach the server at {self.base_url}: {describe(exc)}",
            kind="server_unreachable",
        )

    # -- connecting -------------------------------------------------------------------------

    def _connect(self, watch: Watch) -> socket.socket:
        """Worker or loader thread. A connected TCP socket (:func:`.polling.connect`: Stop is
        honoured while it waits), or RemoteError("Cannot reach ...")."""
        try:
            return connect(self.host, self.port, self.connect_timeout, watch)
        except OSError as exc:  # socket.gaierror too: unknown host, no DNS
            raise self.unreachable(exc) from exc
