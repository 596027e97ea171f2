"""A remote server as a backend: ``tkchat serve``, or any OpenAI-compatible server.

The desktop app streams from a server exactly as from a local model: the worker thread pulls
pieces from :meth:`RemoteBackend.stream`, and everything else (UTF-8 assembly, coalescing,
Stop, exactly one final event) stays the worker's job. What this module adds is the network,
and the network's ways of failing, each turned into one sentence for the user:

- cannot connect (refused, unknown host, no answer within ``connect_timeout``);
- the server goes quiet for ``idle_timeout`` seconds (a hung model, a stalled proxy);
- an HTTP error status (the server's own error message is shown when it sent JSON);
- an answer that is not an event stream, or has malformed JSON in it;
- the stream ending before its final event (``done``/``error`` or ``[DONE]``).

Stop must reach the server, and reach it at once, even when the server is silent. So no read
ever blocks for long: the socket has a short timeout (``POLL_S``), and the reader beneath
``http.client`` retries after each timeout, checking ``cancel`` and the idle deadline in
between (:class:`_PollingReader`). On Stop — ``cancel`` set, or the worker closing the
generator — the connection is shut down and closed; the server sees the disconnect and (if it
is a good server) stops generating. The connect itself is non-blocking and polled the same way.

Two protocols, chosen in :meth:`RemoteBackend.load` from ``GET /health``:

- ``tkchat serve`` (``{"server": "tkchat", ...}``): ``POST /chat`` answers the app's own event
  contract (``chunk`` / ``done`` / ``error``) as Server-Sent Events;
- anything else: ``POST /v1/chat/completions`` with ``stream: true`` (llama.cpp's server,
  llama-cpp-python's, Ollama, vLLM, LM Studio), ``choices[0].delta.content`` per chunk, ending
  with ``data: [DONE]``.

Only the standard library is used (``http.client``, ``socket``), so a remote backend adds no
dependency. Environment proxies (``http_proxy``) are not used: the typical server is local.
"""

from __future__ import annotations

import errno
import functools
import http.client
import io
import json
import math
import os
import re
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

from tkchat.events import Chunk, Done, Error
from tkchat.generate.backend import BackendError, GenerationRequest, Message, TokenStream
from tkchat.transport.sse import SSEError, SSEMessage, SSEParser, parse_event

DEFAULT_N_CTX = 4096  # when the server does not say (OpenAI-compatible servers never do)
POLL_S = 0.1  # longest a read blocks before Stop and the idle deadline are checked again
_MAX_JSON = 1 << 20  # bodies of /health, /v1/models and error answers: read at most 1 MB
_SNIFF_BYTES = 1024  # how much of a stream's start we look at to tell SSE from garbage

# The first line of an event stream is a comment or one of the four SSE fields (a bare field
# name on its own line is legal too). HTML, JSON or binary garbage is not.
_SSE_FIRST_LINE = re.compile(rb"^(?::|(?:data|event|id|retry)(?::|$))")
_EOL = re.compile(rb"\r\n|\r|\n")  # SSE allows all three line endings


class RemoteError(BackendError):
    """A failure of the server or of the network, with a ``kind`` chosen per instance
    (a tkchat server's own error kinds, such as ``context_overflow``, pass through)."""

    def __init__(self, message: str, kind: str = "server_error") -> None:
        super().__init__(message)
        self.kind = kind


class _Cancelled(Exception):
    """Stop was asked for while waiting on the network (internal; never leaves the module)."""


class _Watch:
    """The two reasons to stop waiting for one exchange: Stop, and the idle deadline.

    Shared by the thread that reads (the worker, or the loader) and nothing else."""

    def __init__(self, cancel: threading.Event | None, idle_timeout: float) -> None:
        self.cancel = cancel
        self.idle_timeout = idle_timeout
        self.last_data = time.monotonic()

    def touch(self) -> None:
        """Bytes arrived (or a request was just sent): the idle clock starts again."""
        self.last_data = time.monotonic()

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise _Cancelled
        if time.monotonic() - self.last_data > self.idle_timeout:
            raise RemoteError(
                f"The server stopped sending (no data for {self.idle_timeout:g} s)",
                kind="server_timeout",
            )


class _PollingReader(io.RawIOBase):
    """The socket as a raw stream for ``http.client``, whose reads never block for long.

    The socket has a timeout of ``POLL_S``; a timed-out ``recv`` is simply retried after the
    watch has been checked. (``socket.makefile`` cannot do this: after one timeout its file
    refuses every further read.) Any byte received counts as the server being alive, SSE
    keep-alive comments included: a server that says "still working" is not stalled.
    """

    def __init__(self, sock: socket.socket, watch: _Watch) -> None:
        super().__init__()
        self._sock = sock
        self._watch = watch

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            self._watch.check()  # raises _Cancelled or the idle RemoteError
            try:
                count = self._sock.recv_into(buffer)
            except (TimeoutError, InterruptedError):
                continue
            if count:
                self._watch.touch()
            return count


class _PollingResponse(http.client.HTTPResponse):
    """An ``HTTPResponse`` that reads through a :class:`_PollingReader`."""

    def __init__(
        self,
        sock: socket.socket,
        debuglevel: int = 0,
        method: str | None = None,
        url: str | None = None,
        *,
        watch: _Watch,
    ) -> None:
        super().__init__(sock, debuglevel, method=method, url=url)
        # The stdlib's socket file is kept (unread) only for its reference on the socket:
        # ``getresponse`` closes the connection when the answer is close-delimited, and the
        # socket must live on until this response is closed — as with a plain HTTPResponse.
        self._socket_file = self.fp
        self.fp = io.BufferedReader(_PollingReader(sock, watch), buffer_size=64 * 1024)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._socket_file.close()


class _Exchange:
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


class RemoteBackend:
    """A model behind an HTTP server. Every method runs on a worker (or loader) thread.

    ``url``: the server, with or without a trailing ``/`` or ``/v1``. ``model``: the model
    name to ask an OpenAI-compatible server for (None: the first one ``/v1/models`` lists).
    ``connect_timeout``: seconds to wait for a TCP (and TLS) connection. ``idle_timeout``:
    seconds the server may stay silent — before the answer starts or in its middle — before
    the generation fails with a clear message.
    """

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        connect_timeout: float = 5.0,
        idle_timeout: float = 60.0,
    ) -> None:
        """Nothing is contacted (or raised) here: :meth:`load` reports problems, on the loader
        thread, when the window is already up to show them."""
        self.url = url
        self.model = model
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.n_ctx = DEFAULT_N_CTX
        # The server has the tokenizer and applies its own context policy (a tkchat server
        # the one of generate/context.py); our token count is only an estimate.
        self.context_known = False
        self.protocol: str | None = None  # "tkchat" or "openai", known after load()
        self._url_error: str | None = None
        try:
            self._scheme, self._host, self._port, self._base = split_server_url(url)
        except ValueError as exc:
            self._scheme, self._host, self._port, self._base = "http", url, 0, ""
            self._url_error = f"Not a usable server address: {exc}"
        self._lock = threading.Lock()
        self._exchanges: set[_Exchange] = set()  # open ones, so close() can abort them
        self.name = self._make_name()

    # -- naming ---------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """``HOST:PORT`` (IPv6 literals in brackets), as in the window's title."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self._port}"

    @property
    def base_url(self) -> str:
        """The server's URL without ``/v1`` — the one error messages quote."""
        return f"{self._scheme}://{self.address}{self._base}"

    def _make_name(self) -> str:
        if self.model is None:
            return f"server at {self.address}"
        return f"server {_short_model_name(self.model)} at {self.address}"

    # -- the Backend protocol -------------------------------------------------------------------

    def load(self) -> None:
        """Loader thread. Ask the server what it is: tkchat's ``/health`` names itself; any
        other server is taken as OpenAI-compatible, and ``/v1/models`` must answer."""
        if self._url_error is not None:
            raise RemoteError(self._url_error, kind="server_unreachable")
        status, health = self._get_json("/health")
        if status == 200 and isinstance(health, dict) and health.get("server") == "tkchat":
            self.protocol = "tkchat"
            self.n_ctx = _health_n_ctx(health) or DEFAULT_N_CTX
            if self.model is None:
                self.model = _health_model(health) or "tkchat"
        else:
            self.protocol = "openai"
            self.n_ctx = DEFAULT_N_CTX
            status, models = self._get_json("/v1/models")
            if status not in (200, 404, 405):  # e.g. 503 while llama.cpp's server loads
                raise RemoteError(
                    f"The server at {self.base_url} is not ready: GET /v1/models "
                    f"answered {status}{_error_detail(models)}",
                    kind="server_error",
                )
            if status != 200 or not isinstance(models, dict) or "data" not in models:
                answer = (
                    f"answered {status}" if status != 200 else "did not answer a list of models"
                )
                raise RemoteError(
                    f"The server at {self.base_url} is neither tkchat nor OpenAI-compatible: "
                    f"GET /v1/models {answer}",
                    kind="server_error",
                )
            names = _model_ids(models)
            if self.model is None:
                if not names:
                    raise RemoteError(
                        f"The server at {self.base_url} lists no model (GET /v1/models)",
                        kind="server_error",
                    )
                self.model = names[0]
        self.name = self._make_name()

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """A rough estimate, not a count: about four characters per token plus a few tokens
        of chat template per message. The server has the tokenizer; we do not."""
        return sum(math.ceil(len(m.content) / 4) + 4 for m in messages)

    def close(self) -> None:
        """Any thread. Abort whatever is still open; the owning threads then close it."""
        with self._lock:
            exchanges = list(self._exchanges)
        for exchange in exchanges:
            exchange.abort()

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread. Yields each text delta as UTF-8 bytes; returns "stop" or "length"
        (or "cancelled" when Stop came while waiting on the network)."""
        if self.protocol is None:
            raise RemoteError(
                "The server has not been checked yet (load() first)", kind="server_error"
            )
        if cancel.is_set():
            return "cancelled"
        watch = _Watch(cancel, self.idle_timeout)
        if self.protocol == "tkchat":
            path, body = "/chat", self._tkchat_body(request)
        else:
            path, body = "/v1/chat/completions", self._openai_body(request)
        try:
            exchange = self._open("POST", path, body, watch, accept="text/event-stream")
        except _Cancelled:
            return "cancelled"
        try:
            response = exchange.response
            assert response is not None
            if response.status != 200:
                raise self._status_error(response, path, _read_json(response))
            content_type = response.getheader("Content-Type", "")
            if content_type and not content_type.lower().startswith("text/event-stream"):
                raise _bad_stream(f"its type is {content_type}, not text/event-stream")
            messages = self._messages(response)
            if self.protocol == "tkchat":
                return (yield from _tkchat_text(messages))
            return (yield from _openai_text(messages))
        except _Cancelled:
            return "cancelled"
        finally:
            # Stop, an error, the end, or the worker closing us (GeneratorExit): in every case
            # the connection goes now, so the server sees the disconnect at once.
            self._close(exchange)

    # -- requests -------------------------------------------------------------------------------

    @staticmethod
    def _tkchat_body(request: GenerationRequest) -> dict[str, Any]:
        sampling = request.sampling
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if sampling.max_tokens:  # 0 means "no limit" in tkchat: the server's own default
            body["max_tokens"] = sampling.max_tokens
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        return body

    def _openai_body(self, request: GenerationRequest) -> dict[str, Any]:
        sampling = request.sampling
        # Only the standard OpenAI fields: strict servers reject unknown ones (top_k and
        # repeat_penalty have the same defaults in llama.cpp's and llama-cpp-python's servers).
        body: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if self.model is not None:
            body["model"] = self.model
        if sampling.max_tokens:  # 0 means "no limit" in tkchat; servers want it left out
            body["max_tokens"] = sampling.max_tokens
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        return body

    def _get_json(self, path: str) -> tuple[int, Any]:
        """Loader thread. ``(status, parsed JSON or None)`` of ``GET path``."""
        exchange = self._open(
            "GET", path, None, _Watch(None, self.idle_timeout), accept="application/json"
        )
        try:
            assert exchange.response is not None
            return exchange.response.status, _read_json(exchange.response)
        finally:
            self._close(exchange)

    def _open(
        self, method: str, path: str, body: dict[str, Any] | None, watch: _Watch, *, accept: str
    ) -> _Exchange:
        """Worker or loader thread. Connect, send, read the status line and headers. Raises
        RemoteError (or _Cancelled); on success the caller owns the exchange and must
        :meth:`_close` it."""
        sock = self._connect(watch)
        conn: http.client.HTTPConnection
        if self._scheme == "https":
            context = ssl.create_default_context()
            try:
                sock = context.wrap_socket(sock, server_hostname=self._host)
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                raise self._unreachable(exc) from exc
            conn = http.client.HTTPSConnection(
                self._host, self._port, context=context, timeout=self.connect_timeout
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.connect_timeout)
        conn.sock = sock  # ours: connected in a way Stop can interrupt (see _connect)
        # getresponse() builds its answer with response_class: ours reads in short polls.
        conn.response_class = functools.partial(  # type: ignore[assignment]
            _PollingResponse, watch=watch
        )
        exchange = _Exchange(conn, sock)
        with self._lock:
            self._exchanges.add(exchange)
        try:
            headers = {"Accept": accept}
            data = None
            if body is not None:
                data = json.dumps(body, ensure_ascii=False).encode("utf-8")
                headers["Content-Type"] = "application/json"
            try:
                conn.request(method, self._base + path, body=data, headers=headers)
            except OSError as exc:
                raise RemoteError(
                    f"The server at {self.base_url} closed the connection while "
                    f"the request was sent: {_describe(exc)}",
                    kind="server_disconnected",
                ) from exc
            # From here every read is a short poll (see _PollingReader).
            sock.settimeout(POLL_S)
            watch.touch()
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
        except BaseException:
            self._close(exchange)
            raise
        return exchange

    def _close(self, exchange: _Exchange) -> None:
        with self._lock:
            self._exchanges.discard(exchange)
        exchange.close()

    def _connect(self, watch: _Watch) -> socket.socket:
        """Worker or loader thread. A connected TCP socket, or RemoteError("Cannot reach
        ..."). The connect is non-blocking, polled every ``POLL_S``, so that Stop is honoured
        even while a firewall drops our packets; the whole attempt (all addresses of the host)
        takes at most ``connect_timeout``. (Name resolution itself cannot be interrupted.)"""
        try:
            infos = socket.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
        except OSError as exc:  # socket.gaierror: unknown host, no DNS
            raise self._unreachable(exc) from exc
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
                    if watch.cancel is not None and watch.cancel.is_set():
                        raise _Cancelled
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
            except _Cancelled:
                sock.close()
                raise
            except OSError as exc:
                sock.close()
                error = exc
        raise self._unreachable(error)

    # -- reading --------------------------------------------------------------------------------

    def _messages(self, response: http.client.HTTPResponse) -> Iterator[SSEMessage]:
        """Worker thread. The SSE messages of a streaming answer, as they arrive; ends at the
        end of the body. The first line is checked before anything is parsed, so that an HTML
        page or a JSON document says what it is instead of "closed mid-answer"."""
        parser = SSEParser()
        head = b""
        checked = False
        while True:
            try:
                data = response.read1(64 * 1024)
            except http.client.IncompleteRead as exc:
                raise _closed_mid_answer() from exc
            except http.client.HTTPException as exc:  # e.g. a garbage chunk-size line
                raise _bad_stream(f"broken HTTP framing ({_describe(exc)})") from exc
            except OSError as exc:  # reset by the peer, or aborted by close()
                raise _closed_mid_answer() from exc
            if not checked:
                head += data
                first_line = head.removeprefix(b"\xef\xbb\xbf").lstrip(b"\r\n")
                if data and not _EOL.search(first_line) and len(first_line) < _SNIFF_BYTES:
                    continue  # not a whole line yet
                _check_first_line(first_line)
                checked, data = True, head
            if not data:
                return
            try:
                messages = parser.feed(data)
            except SSEError as exc:  # a line or an event of megabytes: not a chat answer
                raise _bad_stream(str(exc)) from exc
            yield from messages

    def _status_error(
        self, response: http.client.HTTPResponse, path: str, body: Any
    ) -> RemoteError:
        kind = "server_error"
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            kind = str(body["error"].get("kind") or kind)  # tkchat's errors say, e.g. "busy"
        return RemoteError(
            f"The server at {self.base_url} answered {response.status} {response.reason} "
            f"to {path}{_error_detail(body)}",
            kind=kind,
        )

    def _unreachable(self, exc: BaseException) -> RemoteError:
        return RemoteError(
            f"Cannot reach the server at {self.base_url}: {_describe(exc)}",
            kind="server_unreachable",
        )


# -- the two stream formats (worker thread) -------------------------------------------------


def _tkchat_text(messages: Iterator[SSEMessage]) -> TokenStream:
    """tkchat's event contract: text of ``chunk`` events; ``done`` ends, ``error`` raises."""
    for message in messages:
        if message.event not in (None, "", "message"):
            continue  # an event type this client does not know (e.g. a queue position)
        try:
            event = parse_event(message)
        except ValueError as exc:
            raise _bad_stream(str(exc)) from exc
        if isinstance(event, Chunk):
            if event.text:
                yield event.text.encode("utf-8")
        elif isinstance(event, Done):
            return event.reason
        elif isinstance(event, Error):
            raise RemoteError(event.message, kind=event.kind)
    raise _closed_mid_answer()


def _openai_text(messages: Iterator[SSEMessage]) -> TokenStream:
    """OpenAI's chat.completion.chunk stream: ``choices[0].delta.content`` until ``[DONE]``."""
    finish: str | None = None
    for message in messages:
        data = message.data
        if data.strip() == "[DONE]":
            return "length" if finish == "length" else "stop"
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise _bad_stream(f"a data line is not JSON ({exc}): {_snippet(data)}") from exc
        if not isinstance(chunk, dict):
            raise _bad_stream(f"a data line is not a JSON object: {_snippet(data)}")
        if chunk.get("error"):  # llama.cpp and vLLM report a failure mid-stream like this
            raise RemoteError(
                "The server reported an error" + _error_detail(chunk), kind="server_error"
            )
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise _bad_stream(f"a chunk has no choices: {_snippet(data)}")
        if not choices:
            continue  # e.g. the usage summary some servers send last
        choice = choices[0]
        if not isinstance(choice, dict):
            raise _bad_stream(f"a choice is not a JSON object: {_snippet(data)}")
        delta = choice.get("delta") or {}
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str) and content:
            yield content.encode("utf-8")
        if choice.get("finish_reason"):
            finish = str(choice["finish_reason"])
    if finish is not None:
        # The answer itself was complete (a finish_reason came); only the [DONE] is missing,
        # which some servers omit. Losing a finished answer over that would help nobody.
        return "length" if finish == "length" else "stop"
    raise _closed_mid_answer()


# -- helpers ---------------------------------------------------------------------------------


def _check_first_line(line: bytes) -> None:
    """Raise unless ``line`` (the start of a body) can begin an event stream."""
    if not line:
        return  # an empty body: the caller reports "closed mid-answer"
    first = _EOL.split(line, 1)[0]
    if _SSE_FIRST_LINE.match(first):
        return
    if first.startswith(b"error:"):
        # llama.cpp's server writes a failure before the first token as an ``error:`` line.
        try:
            detail = json.loads(first[len(b"error:") :])
        except ValueError:
            detail = None
        if detail is not None:
            raise RemoteError(
                "The server reported an error" + _error_detail(detail), kind="server_error"
            )
    raise _bad_stream(f"it starts with {_snippet(first.decode('utf-8', 'replace'))}")


def _read_json(response: http.client.HTTPResponse) -> Any:
    """The body as JSON, or a string (short text bodies), or None. Reads at most 1 MB."""
    body = b""
    while len(body) < _MAX_JSON:
        try:
            data = response.read1(64 * 1024)
        except (http.client.HTTPException, OSError):
            break  # the status line already tells the story; the body is a bonus
        if not data:
            break
        body += data
    text = body.decode("utf-8", "replace").strip()
    try:
        return json.loads(text)
    except ValueError:
        content_type = (response.getheader("Content-Type") or "").lower()
        return text if text and content_type.startswith("text/plain") else None


def _error_detail(body: Any) -> str:
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
    return f": {_shorten(str(message), 300)}"


def _model_ids(body: Any) -> list[str]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return []
    return [str(item["id"]) for item in data if isinstance(item, dict) and item.get("id")]


def _health_n_ctx(health: dict[str, Any]) -> int | None:
    for holder in (health, health.get("model"), health.get("backend")):
        if isinstance(holder, dict):
            value = holder.get("n_ctx")
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _health_model(health: dict[str, Any]) -> str | None:
    for key in ("model", "backend", "name"):
        value = health.get(key)
        if isinstance(value, dict):
            value = value.get("name")
        if isinstance(value, str) and value:
            return value
    return None


def _short_model_name(model: str) -> str:
    """llama-cpp-python names a model by its file path; the title wants the file name. Hub
    names such as ``Qwen/Qwen2.5-0.5B-Instruct`` stay as they are."""
    if model.startswith(("/", "~")) or "\\" in model or model.lower().endswith(".gguf"):
        return re.split(r"[\\/]", model)[-1] or model
    return model


def _bad_stream(detail: str) -> RemoteError:
    return RemoteError(
        f"The server's answer is not a valid event stream: {detail}", kind="bad_stream"
    )


def _closed_mid_answer() -> RemoteError:
    return RemoteError("The server closed the stream mid-answer", kind="server_disconnected")


def _shorten(text: str, limit: int = 80) -> str:
    """One line of at most ``limit`` characters (a server's message can be a whole page)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _snippet(text: str, limit: int = 80) -> str:
    """Quoted, with escapes: what a broken answer looked like, garbage bytes included."""
    return repr(_shorten(text, limit))


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
