"""Server-Sent Events: the event contract on the wire, both ways. Tk-free and stdlib-only.

The same module serves both ends of an HTTP stream:

- the **server** (``tkchat serve``) turns each event into one SSE frame with
  :func:`encode_event` (``data: <json>\\n\\n``), sends :func:`encode_comment` as a keep-alive,
  and speaks the OpenAI ``chat.completion.chunk`` dialect with :func:`openai_chunk`,
  :func:`openai_error` and :data:`OPENAI_DONE`;
- a **client** (the desktop app's remote backend) checks with :func:`first_line` and
  :func:`can_start_stream` that an answer is an event stream at all, feeds whatever the socket
  delivered to an :class:`SSEParser`, and turns each :class:`SSEMessage` back into an event
  with :func:`parse_event`.

The parser is the part that is easy to get wrong. TCP delivers bytes in chunks that know nothing
about events: one ``read()`` can end in the middle of an event, of a line, of a ``\\r\\n`` pair,
or of a multi-byte UTF-8 character (Chinese is three bytes, an emoji four). A parser that
splits each chunk by lines, or decodes each chunk on its own, loses or corrupts exactly those
events. :class:`SSEParser` keeps bytes until a line is complete and decodes whole lines only —
line terminators are ASCII and never occur inside a UTF-8 sequence, so a complete line is
always whole characters. It follows the WHATWG "event stream interpretation" rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tkchat.events import GenerationEvent, QueuePlace, from_wire, place_to_wire, to_json
from tkchat.limits import MAX_EVENT_BYTES, MAX_RETRY_DIGITS

# -- encoding (server side) ------------------------------------------------------------------


def encode_data(data: str, *, event: str | None = None, id: str | None = None) -> bytes:
    """One SSE frame carrying ``data``; a multi-line string becomes several ``data:`` lines
    (the parser joins them back with ``\\n``). ``event``/``id`` must be single lines."""
    lines: list[str] = []
    for name, value in (("event", event), ("id", id)):
        if value is not None:
            if _has_line_break(value):
                raise ValueError(f"SSE {name} must be a single line: {value!r}")
            lines.append(f"{name}: {value}")
    lines.extend(f"data: {line}" for line in _split_lines(data))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def encode_event(event: GenerationEvent) -> bytes:
    """``data: <json>\\n\\n`` in UTF-8. JSON escapes control characters, so an answer's
    newlines never break the frame; ``ensure_ascii=False`` keeps Chinese and emoji as is."""
    return b"data: " + to_json(event).encode("utf-8") + b"\n\n"


QUEUED_EVENT = "queued"  # the SSE event name of a place in the line


def encode_place(place: QueuePlace) -> bytes:
    """A place in ``tkchat serve``'s line: an SSE event named ``queued``, so that a client
    reading only the generation's events (unnamed ``message`` events) skips it."""
    return encode_data(json.dumps(place_to_wire(place)), event=QUEUED_EVENT)


def encode_comment(text: str = "keep-alive") -> bytes:
    """A comment frame (``: text``). Clients ignore it; proxies and idle timers see traffic."""
    return ("".join(f": {line}\n" for line in _split_lines(text)) + "\n").encode("utf-8")


def _split_lines(text: str) -> list[str]:
    """Split on every SSE line terminator (CRLF, LF, CR); an empty string is one empty line."""
    return re.split(r"\r\n|\r|\n", text)


def _has_line_break(text: str) -> bool:
    return "\n" in text or "\r" in text


# -- the OpenAI dialect (``/v1/chat/completions`` with ``stream: true``) --------------------

OPENAI_DONE = b"data: [DONE]\n\n"
"""The last line of an OpenAI-compatible stream."""


def openai_chunk(
    completion_id: str,
    model: str,
    created: int,
    *,
    content: str | None = None,
    role: str | None = None,
    finish_reason: str | None = None,
    usage_field: bool = False,
) -> bytes:
    """One ``chat.completion.chunk`` frame. The first chunk of a stream carries the role, the
    middle ones the text (``content``), the last one an empty delta and the ``finish_reason``.
    ``usage_field``: the stream ends with a usage chunk, and every other chunk says
    ``"usage": null`` (as OpenAI's do)."""
    delta: dict[str, str] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    payload = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    if usage_field:
        payload["usage"] = None
    return _json_frame(payload)


def openai_error(error: dict[str, Any]) -> bytes:
    """An error inside an OpenAI-style stream (as vLLM and llama.cpp's server send it):
    ``error`` is the object OpenAI clients read (``message``, ``type``, ``param``, ``code``;
    the server adds tkchat's ``kind``)."""
    return _json_frame({"error": error})


def openai_frame(payload: dict[str, Any]) -> bytes:
    """Any other object of an OpenAI-style stream (the usage chunk) as one ``data:`` frame."""
    return _json_frame(payload)


def _json_frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n\n"


# -- parsing (client side) -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SSEMessage:
    """One dispatched SSE event. ``event`` is "message" unless the stream named it; ``id`` is
    the last event id the stream set (it carries over to later events, as in browsers)."""

    event: str = "message"
    data: str = ""
    id: str = ""


class SSEError(ValueError):
    """The byte stream is not usable SSE (for now: an event or a line larger than the limit)."""


_EOL = re.compile(rb"\r\n?|\n")
_BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_EVENT_BYTES = MAX_EVENT_BYTES


class SSEParser:
    """Incremental SSE parser: bytes in, whole events out, whatever the chunk boundaries.

    Feed it every chunk the connection yields, in order; each call returns the events completed
    by that chunk (often none, sometimes several). Runs on whichever thread reads the socket;
    one parser per stream, not shared between threads.

    ``max_event_bytes`` bounds memory against a broken or hostile server: a line or an event
    larger than it raises :class:`SSEError` instead of growing forever.
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        self.retry_ms: int | None = None  # the last ``retry:`` the server asked for
        self._buffer = bytearray()
        self._scanned = 0  # bytes at the buffer's start known to hold no line terminator
        self._after_cr = False  # the previous chunk ended with CR (maybe half a CRLF)
        self._first = True  # a BOM is skipped only at the very start of the stream
        self._event = ""
        self._data: list[str] = []
        self._data_bytes = 0
        self._last_id = ""

    def feed(self, data: bytes) -> list[SSEMessage]:
        """Add the next chunk of the stream; return the events it completed."""
        self._buffer += data
        if self._first:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(bytes(self._buffer)):
                return []  # could still be the start of a BOM: wait for more bytes
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
            self._first = False
        messages: list[SSEMessage] = []
        for line in self._complete_lines():
            message = self._process_line(line)
            if message is not None:
                messages.append(message)
        if len(self._buffer) > self.max_event_bytes:
            raise SSEError(f"an SSE line is longer than {self.max_event_bytes} bytes")
        return messages

    def _complete_lines(self) -> list[bytes]:
        """Cut every complete line off the buffer; keep the unfinished rest for the next chunk."""
        buf = self._buffer
        if self._after_cr and buf:
            # The last chunk ended in CR, which already ended a line: if this one starts with
            # LF, the pair was a CRLF split across chunks, not a blank line (not an event end).
            if buf.startswith(b"\n"):
                del buf[:1]
            self._after_cr = False
        lines: list[bytes] = []
        start = 0
        pos = self._scanned
        while (match := _EOL.search(buf, pos)) is not None:
            lines.append(bytes(buf[start : match.start()]))
            start = pos = match.end()
        self._after_cr = start > 0 and start == len(buf) and buf.endswith(b"\r")
        del buf[:start]
        self._scanned = len(buf)  # never rescan a long unfinished line from its beginning
        return lines

    def _process_line(self, raw: bytes) -> SSEMessage | None:
        """One line, per the WHATWG rules. Returns an event when a blank line dispatches one."""
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", errors="replace")  # a whole line: whole characters
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]  # exactly one optional space after the colon
        if field == "data":
            self._data.append(value)
            self._data_bytes += len(raw)
            if self._data_bytes > self.max_event_bytes:
                raise SSEError(f"an SSE event is larger than {self.max_event_bytes} bytes")
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            if len(value) > MAX_RETRY_DIGITS:
                return None  # int() of thousands of digits raises; no sane delay is that long
            self.retry_ms = int(value)
        return None  # any other field is ignored, as the standard says

    def _dispatch(self) -> SSEMessage | None:
        """A blank line: hand over the event collected so far (none if it had no data)."""
        data, event = self._data, self._event
        self._data, self._event, self._data_bytes = [], "", 0
        if not data:
            return None
        return SSEMessage(event=event or "message", data="\n".join(data), id=self._last_id)


# The first line of an event stream is a comment or one of the four SSE fields (a bare field
# name on its own line is legal too). An HTML page, a JSON document or binary garbage is not.
_STREAM_START = re.compile(rb"^(?::|(?:data|event|id|retry)(?::|$))")
SNIFF_BYTES = 1024


def first_line(head: bytes, *, at_end: bool, limit: int = SNIFF_BYTES) -> bytes | None:
    """The first line of a byte stream, found in its first bytes (``head``).

    A client looks at it before parsing: SSE ignores lines it does not understand, so an
    answer that is not an event stream at all (an HTML error page, a JSON document) would
    otherwise parse into no events and look like a stream that ended early. A BOM and blank
    lines in front are skipped, as :class:`SSEParser` skips them. ``None`` means "not known
    yet": no line terminator and fewer than ``limit`` bytes, so read more. At the end of the
    stream (``at_end``), or with ``limit`` bytes and still no terminator, what there is
    counts as the line (empty: the stream was empty).
    """
    text = head.removeprefix(_BOM).lstrip(b"\r\n")
    end = _EOL.search(text)
    if end is not None:
        return text[: end.start()]
    if at_end or len(text) >= limit:
        return text
    return None


def can_start_stream(line: bytes) -> bool:
    """Whether a (non-empty) ``line`` can be the first line of an event stream."""
    return _STREAM_START.match(line) is not None


def parse_event(message: SSEMessage) -> GenerationEvent:
    """The event a tkchat SSE message carries. ``ValueError`` on anything malformed: bad JSON,
    not an object, or not an event of the contract (the wire is untrusted)."""
    try:
        payload = json.loads(message.data)
    except json.JSONDecodeError as exc:
        raise ValueError(f"an SSE message is not JSON: {message.data[:200]!r}") from exc
    except RecursionError as exc:  # thousands of nested brackets: no event nests like that
        raise ValueError("an SSE message is JSON nested too deeply to read") from exc
    if not isinstance(payload, dict):
        raise ValueError(f"an SSE message is not a JSON object: {message.data[:200]!r}")
    return from_wire(payload)
