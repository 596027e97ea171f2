"""A server on the loopback that answers whatever it is told to, byte for byte.

``python -m tests.tools.hostile`` (:mod:`tests.tools.hostile`) and the tests of the remote backend
(tests/test_hostile_servers.py) attack the client with it.

Plain sockets, no HTTP library: a hostile server does not follow the rules a library would
enforce (headers that never end, a body of blank lines forever, a megabyte of "error"). Each
request is read up to the end of its body, then the handler for its path writes what it likes
to the raw socket, on a thread of its own, until it returns or the client goes away.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

Handler = Callable[["Conn"], None]


class Gone(Exception):
    """The client closed the connection (or the test ended): the handler stops."""


class Conn:
    """One accepted connection, on its handler's thread."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock = sock
        self._stop = stop
        self.sent = 0  # bytes written so far

    def send(self, data: bytes) -> None:
        if self._stop.is_set():
            raise Gone
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise Gone from exc
        self.sent += len(data)

    def head(self, content_type: str = "text/event-stream", status: str = "200 OK") -> None:
        """A status line and headers for a body that ends when the connection does."""
        self.send(
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            "Connection: close\r\n\r\n".encode()
        )

    def json(self, body: Any, status: str = "200 OK") -> None:
        data = json.dumps(body).encode()
        self.send(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )

    def forever(self, pieces: Iterator[bytes] | bytes) -> None:
        """Send ``pieces`` (one piece, again and again) until the client goes away."""
        while True:
            self.send(pieces if isinstance(pieces, bytes) else next(pieces))


def tkchat_health(n_ctx: object = 8192) -> Handler:
    """``GET /health`` as ``tkchat serve`` answers it."""
    health = {"server": "tkchat", "model": {"name": "hostile"}, "n_ctx": n_ctx}
    return lambda conn: conn.json(health)


def event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


class HostileServer:
    """Listens on 127.0.0.1; ``routes`` maps a request path to its handler. Unknown paths
    get a 404. ``gone`` is set each time a handler saw its client disconnect. ``routes`` is
    read at each request, so a caller may swap a handler between two requests (the bench
    attacks one window with one case after another)."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.gone = threading.Event()
        self.requests: list[tuple[str, str, bytes]] = []  # (method, path, body)
        self.conns: list[Conn] = []  # every connection answered, in order
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def sent(self) -> int:
        """Bytes written to clients so far, all connections together (any thread)."""
        return sum(conn.sent for conn in list(self.conns))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            method, path, body = _read_request(sock)
            self.requests.append((method, path, body))
            handler = self.routes.get(path)
            conn = Conn(sock, self._stop)
            self.conns.append(conn)
            if handler is None:
                conn.json({"detail": "Not Found"}, status="404 Not Found")
            else:
                handler(conn)
        except Gone:
            self.gone.set()
        except OSError:
            self.gone.set()
        finally:
            sock.close()


def _read_request(sock: socket.socket) -> tuple[str, str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            raise Gone
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            raise Gone
        body += piece
    return method, path, body
