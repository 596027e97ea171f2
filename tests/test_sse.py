"""The SSE wire format: encoding, and a parser that survives any split of the byte stream."""

from __future__ import annotations

import json

import pytest

from tkchat.events import Chunk, Done, Error, GenerationStats
from tkchat.transport.sse import (
    OPENAI_DONE,
    SSEError,
    SSEMessage,
    SSEParser,
    can_start_stream,
    encode_comment,
    encode_data,
    encode_event,
    first_line,
    openai_chunk,
    openai_error,
    parse_event,
)

EVENTS = [
    Chunk(3, 1, "Hello, "),
    Chunk(3, 2, "中文 and emoji 😀🚀 𝄞\nsecond line"),
    Chunk(3, 3, 'quotes " and \\ and \r\n endings'),
    Done(3, 4, "stop", GenerationStats(tokens=3, ttft_ms=1.5, tokens_per_s=99.0, elapsed_s=0.1)),
]

# Everything a stream may contain, with all three line endings, comments, named events and ids.
MIXED = (
    b": keep-alive\n\n"
    + encode_event(EVENTS[0])
    + b"event: note\r\nid: 7\r\ndata: \xe4\xb8\xad\xe6\x96\x87 first\r\ndata:second\r\n\r\n"
    + encode_event(EVENTS[1]).replace(b"\n", b"\r")
    + b": a comment \xf0\x9f\x98\x80 in the middle\n"
    + encode_event(EVENTS[2]).replace(b"\n", b"\r\n")
    + "data: 🧠 emoji only\n\n".encode()
    + encode_event(EVENTS[3])
)
EXPECTED = [
    SSEMessage("message", json.dumps(json.loads(encode_event(EVENTS[0])[6:]), ensure_ascii=False)),
    SSEMessage("note", "中文 first\nsecond", "7"),
    SSEMessage("message", encode_event(EVENTS[1])[6:-2].decode(), "7"),
    SSEMessage("message", encode_event(EVENTS[2])[6:-2].decode(), "7"),
    SSEMessage("message", "🧠 emoji only", "7"),
    SSEMessage("message", encode_event(EVENTS[3])[6:-2].decode(), "7"),
]


def parse_all(*pieces: bytes) -> list[SSEMessage]:
    parser = SSEParser()
    return [message for piece in pieces for message in parser.feed(piece)]


def test_the_whole_stream_in_one_piece() -> None:
    assert parse_all(MIXED) == EXPECTED


def test_every_split_point_gives_the_same_events() -> None:
    """Split the stream at every byte, mid-character, mid-CRLF and mid-field included."""
    for cut in range(len(MIXED) + 1):
        assert parse_all(MIXED[:cut], MIXED[cut:]) == EXPECTED, f"split at byte {cut}"


def test_every_pair_of_split_points_in_a_chinese_and_emoji_event() -> None:
    stream = encode_event(EVENTS[1]) + encode_event(EVENTS[0])
    for first in range(len(stream) + 1):
        for second in range(first, len(stream) + 1, 3):
            got = parse_all(stream[:first], stream[first:second], stream[second:])
            assert [parse_event(m) for m in got] == [EVENTS[1], EVENTS[0]]


def test_one_byte_at_a_time() -> None:
    assert parse_all(*(MIXED[i : i + 1] for i in range(len(MIXED)))) == EXPECTED


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_each_line_ending(eol: bytes) -> None:
    stream = eol.join([b"event: a", b"data: one", b"data: two", b"", b"data: three", b"", b""])
    assert parse_all(stream) == [SSEMessage("a", "one\ntwo"), SSEMessage("message", "three")]


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    # If the parser took the lone CR as a line end, the LF would be a blank line: event dispatched
    # early, and the second data line lost into a new event.
    assert parse_all(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEMessage(data="a\nb")]


def test_field_syntax() -> None:
    stream = (
        b"data:no space\n"
        b"data:  two spaces\n"
        b"data\n"  # a field name alone: empty value
        b"retry: 3000\n"
        b"unknown: ignored\n"
        b"id: 1\n"
        b"\n"
        b"id\n"  # an empty id resets it
        b"data: x\n\n"
        b"event: only-an-event\n\n"  # no data: nothing is dispatched
    )
    parser = SSEParser()
    assert parser.feed(stream) == [
        SSEMessage("message", "no space\n two spaces\n", "1"),
        SSEMessage("message", "x", ""),
    ]
    assert parser.retry_ms == 3000


def test_comments_are_ignored_and_an_unfinished_event_waits() -> None:
    parser = SSEParser()
    assert parser.feed(b": hello\n\n:\n\ndata: partial\n") == []
    assert parser.feed(b"\n") == [SSEMessage(data="partial")]


def test_a_leading_bom_is_skipped_even_when_split() -> None:
    assert parse_all(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [SSEMessage(data="x")]


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert parse_all(b"data: \xff ok\n\n") == [SSEMessage(data="\ufffd ok")]


def test_an_endless_line_or_event_is_refused() -> None:
    with pytest.raises(SSEError):
        SSEParser(max_event_bytes=100).feed(b"data: " + b"x" * 200)
    parser = SSEParser(max_event_bytes=100)
    with pytest.raises(SSEError):
        for _ in range(20):
            parser.feed(b"data: " + b"y" * 10 + b"\n")


def test_a_long_line_in_tiny_pieces_is_not_rescanned() -> None:
    parser = SSEParser()
    line = "数据" * 20_000
    data = f"data: {line}\n\n".encode()
    got = [m for i in range(0, len(data), 7) for m in parser.feed(data[i : i + 7])]
    assert got == [SSEMessage(data=line)]


# -- telling an event stream from something else, on its first line ----------------------


def test_first_line_skips_a_bom_and_blank_lines() -> None:
    assert first_line(b"\xef\xbb\xbf\r\n\ndata: x\r\n\r\n", at_end=False) == b"data: x"
    assert first_line(b": ping\rdata: x", at_end=False) == b": ping"


def test_first_line_waits_for_a_whole_line_unless_the_stream_ended_or_it_is_long() -> None:
    assert first_line(b"\xef", at_end=False) is None  # maybe half a BOM
    assert first_line(b'data: {"ch', at_end=False) is None
    assert first_line(b'data: {"ch', at_end=True) == b'data: {"ch'
    assert first_line(b"<html>" + b"x" * 2000, at_end=False) == b"<html>" + b"x" * 2000
    assert first_line(b"x" * 99, at_end=False, limit=100) is None
    assert first_line(b"\r\n\n", at_end=True) == b""  # nothing but blank lines: empty


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        (b": keep-alive", True),
        (b":", True),
        (b"data: {}", True),
        (b"data", True),  # a bare field name is a legal line
        (b"event:note", True),
        (b"id: 7", True),
        (b"retry: 3000", True),
        (b"<!DOCTYPE html>", False),
        (b'{"error": "no"}', False),
        (b"error: {}", False),  # llama.cpp's early failure: the caller reads it
        (b"database: x", False),
        (b"\x00\xffgarbage", False),
    ],
)
def test_can_start_stream(line: bytes, ok: bool) -> None:
    assert can_start_stream(line) is ok


def test_encode_event_is_one_utf8_data_line() -> None:
    frame = encode_event(EVENTS[1])
    assert frame.startswith(b"data: {") and frame.endswith(b"}\n\n")
    assert frame.count(b"\n") == 2  # the answer's own newline is escaped inside the JSON
    assert "中文 and emoji 😀🚀".encode() in frame  # ensure_ascii=False: raw UTF-8, no \\u escapes


@pytest.mark.parametrize("event", EVENTS + [Error(9, 2, "context_overflow", "Too long: 中文")])
def test_round_trip(event: Chunk | Done | Error) -> None:
    (message,) = parse_all(encode_event(event))
    back = parse_event(message)
    if isinstance(event, Error):  # stats are not part of an error on the wire
        assert (back.gen, back.seq, back.kind, back.message) == (
            event.gen,
            event.seq,
            event.kind,
            event.message,
        )
    else:
        assert back == event


def test_encode_data_and_comments() -> None:
    frame = encode_data("line 1\nline 2\r\n中文", event="note", id="42")
    assert frame == "event: note\nid: 42\ndata: line 1\ndata: line 2\ndata: 中文\n\n".encode()
    assert parse_all(frame) == [SSEMessage("note", "line 1\nline 2\n中文", "42")]
    with pytest.raises(ValueError):
        encode_data("x", event="two\nlines")
    assert encode_comment() == b": keep-alive\n\n"
    assert encode_comment("a\nb") == b": a\n: b\n\n"
    assert parse_all(encode_comment("a\nb") + encode_data("")) == [SSEMessage(data="")]


@pytest.mark.parametrize(
    "data",
    [
        "not json",
        "[1, 2]",
        '"text"',
        '{"type": "chunk", "gen": 1}',
        '{"type": "chunk", "gen": "1", "seq": 1, "text": "x"}',
        '{"type": "chunk", "gen": 1, "seq": 1, "text": null}',
        '{"type": "bogus", "gen": 1, "seq": 1}',
    ],
)
def test_parse_event_rejects_malformed_data(data: str) -> None:
    with pytest.raises(ValueError):
        parse_event(SSEMessage(data=data))


def test_openai_frames() -> None:
    first = openai_chunk("chatcmpl-1", "m", 7, role="assistant", content="")
    middle = openai_chunk("chatcmpl-1", "m", 7, content="中文 😀")
    last = openai_chunk("chatcmpl-1", "m", 7, finish_reason="stop")
    messages = parse_all(first + middle + last + OPENAI_DONE)
    payloads = [json.loads(m.data) for m in messages[:3]]
    assert payloads[1] == {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "中文 😀"}, "finish_reason": None}],
    }
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert payloads[2]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert messages[3].data == "[DONE]"
    error = json.loads(parse_all(openai_error({"message": "no", "type": "server_error"}))[0].data)
    assert error == {"error": {"message": "no", "type": "server_error"}}
