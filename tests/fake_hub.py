"""A Hugging Face hub on the loopback, for the download tests: no test reaches the internet.

It answers in the hub's URL layout and with the hub's headers, as ``huggingface_hub`` expects
them: ``HEAD``/``GET /{repo}/resolve/{revision}/{file}`` gives a 302 with ``X-Repo-Commit``,
``X-Linked-Etag`` (the file's SHA-256), ``X-Linked-Size`` and a ``Location`` on another
origin (``localhost`` instead of ``127.0.0.1``: the "CDN", whose redirect the library does not
follow for metadata, exactly as with the real hub); ``GET /cdn/{sha256}`` serves the bytes,
with ``Range`` support (206, 416). A missing file gets the hub's 404 with
``X-Error-Code: EntryNotFound``.

Faults on demand, set as attributes at any time: ``throttle`` (bytes per second), ``cut_after``
(each response closes the connection after that many bytes), ``stall_after`` (each response
stops sending after that many bytes and holds the connection), ``pause_after`` (each
response stops after that many bytes until ``go_on`` is set, then sends the rest: a
download held at a known point, for as long as a test needs), ``corrupt`` (one byte
flipped), ``truncate_to`` (the file served is shorter than the size advertised), ``status``
(the resolve URL answers with this HTTP status), ``html`` (it answers with a web page),
``lie_size`` (the advertised size), ``pad`` (that many junk bytes served after the file: a
mirror that sends more than the file has), ``chunk`` (the bytes written at a time: small,
with ``throttle``, for a drip). ``requests`` records (method, path, Range header).
"""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from dataclasses import dataclass, field
from typing import Any

COMMIT = "c0ffee" + "0" * 34
CHUNK = 1 << 16


@dataclass
class HostedFile:
    data: bytes
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        self.sha256 = hashlib.sha256(self.data).hexdigest()


class FakeHub:
    def __init__(self) -> None:
        self.files: dict[tuple[str, str], HostedFile] = {}
        self.requests: list[tuple[str, str, str | None]] = []
        self.throttle: float | None = None
        self.cut_after: int | None = None
        self.stall_after: int | None = None
        self.pause_after: int | None = None
        self.go_on = threading.Event()  # a paused response sends the rest (set at shutdown too)
        self.corrupt = False
        self.truncate_to: int | None = None
        self.status: int | None = None
        self.html = False
        self.lie_size: int | None = None
        self.pad = 0
        self.chunk = CHUNK
        self.release = threading.Event()  # set at shutdown: stalled responses end
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                hub.handle(self, body=False)

            def do_GET(self) -> None:  # noqa: N802
                hub.handle(self, body=True)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, at every test's end.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> FakeHub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.go_on.set()
        self.server.shutdown()
        self.server.server_close()

    def add(self, repo: str, filename: str, data: bytes) -> HostedFile:
        hosted = HostedFile(data)
        self.files[(repo, filename)] = hosted
        return hosted

    def byte_requests(self) -> list[str | None]:
        """The Range header of every GET for file bytes (None: the whole file)."""
        return [rng for method, path, rng in self.requests if method == "GET" and "/cdn/" in path]

    # -- answering -----------------------------------------------------------------------------

    def handle(self, request: http.server.BaseHTTPRequestHandler, *, body: bool) -> None:
        path = request.path.split("?", 1)[0]
        self.requests.append((request.command, path, request.headers.get("Range")))
        if path.startswith("/cdn/"):
            self._serve_bytes(request, path[len("/cdn/") :], body=body)
            return
        if "/resolve/" not in path:
            self._plain(request, 404, b"not found", body=body)
            return
        repo, rest = path.lstrip("/").split("/resolve/", 1)
        _revision, _, filename = rest.partition("/")
        if self.status is not None:
            self._plain(request, self.status, b"error", body=body)
            return
        if self.html:
            page = b"<!doctype html><html><body>Please log in to the network.</body></html>"
            self._plain(request, 200, page, body=body, content_type="text/html; charset=utf-8")
            return
        hosted = self.files.get((repo, filename))
        if hosted is None:
            request.send_response(404)
            request.send_header("X-Error-Code", "EntryNotFound")
            request.send_header("X-Repo-Commit", COMMIT)
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        size = self.lie_size if self.lie_size is not None else len(hosted.data)
        request.send_response(302)
        request.send_header("Location", f"http://localhost:{self.port}/cdn/{hosted.sha256}")
        request.send_header("X-Repo-Commit", COMMIT)
        request.send_header("X-Linked-Etag", f'"{hosted.sha256}"')
        request.send_header("X-Linked-Size", str(size))
        request.send_header("ETag", '"0123456789abcdef0123456789abcdef01234567"')
        request.send_header("Content-Length", "0")
        request.end_headers()

    def _content(self, sha: str) -> bytes | None:
        hosted = next((f for f in self.files.values() if f.sha256 == sha), None)
        if hosted is None:
            return None
        data = hosted.data
        if self.corrupt:
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :]
        if self.truncate_to is not None:
            data = data[: self.truncate_to]
        return data + b"\0" * self.pad

    def _serve_bytes(
        self, request: http.server.BaseHTTPRequestHandler, sha: str, *, body: bool
    ) -> None:
        data = self._content(sha)
        if data is None:
            self._plain(request, 404, b"no such blob", body=body)
            return
        start = 0
        wanted = request.headers.get("Range")
        if wanted and wanted.startswith("bytes="):
            start = int(wanted[len("bytes=") :].split("-", 1)[0])
            if start >= len(data):
                request.send_response(416)
                request.send_header("Content-Range", f"bytes */{len(data)}")
                request.send_header("Content-Length", "0")
                request.end_headers()
                return
            request.send_response(206)
            request.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            request.send_response(200)
        request.send_header("Content-Type", "application/octet-stream")
        request.send_header("Accept-Ranges", "bytes")
        request.send_header("Content-Length", str(len(data) - start))
        request.end_headers()
        if body:
            self._send(request, data, start)

    def _send(self, request: http.server.BaseHTTPRequestHandler, data: bytes, start: int) -> None:
        sent = 0
        began = time.monotonic()
        position = start
        try:
            while position < len(data):
                if self.cut_after is not None and sent >= self.cut_after:
                    request.close_connection = True
                    return  # the connection ends mid-body
                if self.stall_after is not None and sent >= self.stall_after:
                    self.release.wait(120)  # nothing more is sent until shutdown
                    request.close_connection = True
                    return
                if self.pause_after is not None and sent >= self.pause_after:
                    self.go_on.wait(120)  # held here until the test lets it go on
                    if self.release.is_set():
                        request.close_connection = True
                        return
                piece = data[position : position + self.chunk]
                if self.cut_after is not None:
                    piece = piece[: self.cut_after - sent]
                if self.stall_after is not None:
                    piece = piece[: max(self.stall_after - sent, 1)]
                if self.pause_after is not None and not self.go_on.is_set():
                    piece = piece[: max(self.pause_after - sent, 1)]
                request.wfile.write(piece)
                sent += len(piece)
                position += len(piece)
                if self.throttle:
                    ahead = sent / self.throttle - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
        except (BrokenPipeError, ConnectionResetError):
            request.close_connection = True

    @staticmethod
    def _plain(
        request: http.server.BaseHTTPRequestHandler,
        status: int,
        text: bytes,
        *,
        body: bool,
        content_type: str = "text/plain",
    ) -> None:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(text)))
        request.end_headers()
        if body:
            request.wfile.write(text)


def main() -> None:
    """``python -m tests.fake_hub FILE REPO [--throttle BYTES_PER_S]``: serve one file in a
    process of its own (for measuring the window without the hub sharing its interpreter);
    prints the endpoint, then serves until killed."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("file", type=Path)
    parser.add_argument("repo")
    parser.add_argument("--throttle", type=float)
    args = parser.parse_args()
    hub = FakeHub()
    hub.add(args.repo, args.file.name, args.file.read_bytes())
    hub.throttle = args.throttle
    hub.start()
    print(hub.endpoint, flush=True)
    hub.thread.join()


if __name__ == "__main__":
    main()
