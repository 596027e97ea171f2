"""Reading a server's answer: an event stream as it arrives, or a small JSON body.

A body is read within bounds whatever the server sends (:mod:`tkchat.limits`): at most
``MAX_RESPONSE_BYTES`` in all, at most ``MAX_BYTES_WITHOUT_EVENT`` in a row that complete no
event, at most ``MAX_JSON_BYTES`` of JSON; and an answer that is not an event stream says
what it is (checked on its first line, before parsing). The reads go through the response's
:class:`~tkchat.generate.remote.polling.PollingReader`, so none blocks for long.

Runs on the thread that owns the exchange (the worker, or the loader).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from typing import Any

from tkchat.generate.remote.errors import (
    RemoteError,
    bad_stream,
    closed_mid_answer,
    describe,
    error_detail,
    snippet,
)
from tkchat.generate.remote.polling import READ_BYTES
from tkchat.limits import MAX_BYTES_WITHOUT_EVENT, MAX_JSON_BYTES, MAX_RESPONSE_BYTES
from tkchat.transport.sse import SSEError, SSEMessage, SSEParser, can_start_stream, first_line

UTF8_BOM = b"\xef\xbb\xbf"  # may start an event stream (the parser skips it)


class EventBytes:
    """The SSE messages of a streaming answer's body, fed its bytes as they arrive (by the
    worker's :func:`read_events`, or the asyncio client's reads). The first line is checked
    before anything is parsed, so that an HTML page or a JSON document says what it is
    instead of "closed mid-answer".

    Memory stays bounded whatever the server sends (:mod:`tkchat.limits`): at most
    ``MAX_RESPONSE_BYTES`` in all, and at most ``MAX_BYTES_WITHOUT_EVENT`` in a row that
    complete no event — a server sending blank lines or comments forever keeps the idle
    timer happy, but is not answering. Used by one thread (or one coroutine)."""

    def __init__(self) -> None:
        self._parser = SSEParser()
        self._head = bytearray()
        self._checked = False
        self._total = 0
        self._idle_bytes = 0  # bytes since the last event (or the start)

    def feed(self, data: bytes) -> list[SSEMessage] | None:
        """The messages ``data`` completes; ``b""`` is the body's end, answered with None
        (also for an empty body: the protocol reports "closed mid-answer"). Raises
        RemoteError for what is no event stream, or one past the bounds."""
        self._total += len(data)
        self._idle_bytes += len(data)
        if self._total > MAX_RESPONSE_BYTES:
            raise bad_stream(f"it is longer than {MAX_RESPONSE_BYTES >> 20} MB")
        if self._idle_bytes > MAX_BYTES_WITHOUT_EVENT:
            raise bad_stream(f"{self._idle_bytes >> 10} kB in a row without one event")
        if not self._checked:
            if not data and not self._head:
                return None
            # Blank lines in front are legal: drop them as they come, so that the head
            # never holds more than one read and the sniffed first line.
            head = self._head
            head += data
            bom = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
            blank = len(head) - bom - len(bytes(head[bom:]).lstrip(b"\r\n"))
            del head[bom : bom + blank]
            if len(head) == bom and data:
                return []
            line = first_line(bytes(head), at_end=not data)
            if line is None:
                return []  # not a whole line yet
            _check_stream_start(line)
            self._checked, data = True, bytes(head)
            head.clear()
        if not data:
            return None
        try:
            messages = self._parser.feed(data)
        except SSEError as exc:  # a line or an event of megabytes: not a chat answer
            raise bad_stream(str(exc)) from exc
        if messages:
            self._idle_bytes = 0
        return messages


def read_events(
    response: http.client.HTTPResponse, on_event: Callable[[], None] | None = None
) -> Iterator[SSEMessage]:
    """The SSE messages of a streaming answer, as they arrive (:class:`EventBytes`); ends
    at the end of the body. ``on_event`` is told of each read that brought events (the
    watch's event clock: a stream of keep-alives alone ends after ``event_timeout``)."""
    events = EventBytes()
    while True:
        try:
            data = response.read1(READ_BYTES)
        except http.client.IncompleteRead as exc:
            raise closed_mid_answer() from exc
        except http.client.HTTPException as exc:  # e.g. a garbage chunk-size line
            raise bad_stream(f"broken HTTP framing ({describe(exc)})") from exc
        except OSError as exc:  # reset by the peer, or aborted by close()
            raise closed_mid_answer() from exc
        messages = events.feed(data)
        if messages is None:
            return
        if messages and on_event is not None:
            on_event()
        yield from messages


def check_stream_type(content_type: str) -> None:
    """Raise unless a streamed answer's ``Content-Type`` (empty: not said) is an event
    stream's."""
    if content_type and not content_type.lower().startswith("text/event-stream"):
        raise bad_stream(f"its type is {content_type}, not text/event-stream")


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
    return parse_json(body, response.getheader("Content-Type") or "")


def parse_json(body: bytes, content_type: str) -> Any:
    """A small body (at most ``MAX_JSON_BYTES``, read by the caller) as JSON, or a string
    (short text bodies), or None."""
    text = body.decode("utf-8", "replace").strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested thousands deep
        return text if text and content_type.lower().startswith("text/plain") else None
