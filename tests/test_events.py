"""The event contract: immutable values in-process, JSON objects on the wire."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tkchat.events import (
    Chunk,
    Done,
    Error,
    GenerationEvent,
    GenerationStats,
    ModelFailed,
    ModelReady,
    from_wire,
    to_json,
    to_wire,
)

UNICODE_TEXT = "流式输出 😀 🚀 🧠 𝄞 — 中文 ok"

STATS = GenerationStats(
    tokens=42,
    ttft_ms=12.5,
    tokens_per_s=88.25,
    elapsed_s=0.75,
    finished_at=1234.5,
)

ROUND_TRIP_EVENTS: list[GenerationEvent] = [
    Chunk(7, 1, "hello"),
    Chunk(7, 2, UNICODE_TEXT),
    Chunk(7, 3, ""),
    Chunk(7, 4, 'quotes " and \\ backslash\nnew line\ttab'),
    Done(7, 5, "stop"),
    Done(7, 6, "length", STATS),
    Done(8, 1, "cancelled", GenerationStats(tokens=1, ttft_ms=None, tokens_per_s=None)),
    Error(7, 13, "context_overflow", "The chat is too long: 9000 > 8192 tokens"),
    Error(9, 1, "RuntimeError", f"RuntimeError: {UNICODE_TEXT}"),
]


def _round_trip(event: GenerationEvent) -> GenerationEvent:
    return from_wire(json.loads(to_json(event)))


# -- immutability ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "attribute", "value"),
    [
        (Chunk(1, 1, "a"), "text", "b"),
        (Chunk(1, 1, "a"), "seq", 2),
        (Chunk(1, 1, "a"), "type", "done"),
        (Done(1, 2, "stop"), "reason", "length"),
        (Error(1, 2, "k", "m"), "message", "changed"),
        (ModelReady("m", 1.0, 2048), "n_ctx", 4096),
        (ModelFailed("no"), "message", "yes"),
        (STATS, "tokens", 0),
    ],
)
def test_events_are_frozen(event: object, attribute: str, value: object) -> None:
    before = dataclasses.asdict(event)  # type: ignore[call-overload]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, attribute, value)
    assert dataclasses.asdict(event) == before  # type: ignore[call-overload]


def test_events_have_no_instance_dict() -> None:
    """slots=True: no stage can hang extra attributes on an event either."""
    chunk = Chunk(1, 1, "a")
    assert not hasattr(chunk, "__dict__")
    with pytest.raises((AttributeError, TypeError)):
        chunk.extra = 1  # type: ignore[attr-defined]


def test_type_is_fixed_and_not_an_init_argument() -> None:
    assert Chunk(1, 1, "a").type == "chunk"
    assert Done(1, 1, "stop").type == "done"
    assert Error(1, 1, "k", "m").type == "error"
    assert ModelReady("m", 0.1, 512).type == "model_ready"
    assert ModelFailed("x").type == "model_failed"
    with pytest.raises(TypeError):
        Chunk(1, 1, "a", type="done")  # type: ignore[call-arg]


def test_events_are_values() -> None:
    assert Chunk(3, 4, "x") == Chunk(3, 4, "x")
    assert Chunk(3, 4, "x") != Chunk(3, 5, "x")
    assert Done(1, 2, "stop") != Error(1, 2, "stop", "")
    assert len({Chunk(3, 4, "x"), Chunk(3, 4, "x"), Done(3, 5, "stop", STATS)}) == 2


# -- wire shape ------------------------------------------------------------------------------


def test_to_wire_chunk_shape() -> None:
    assert to_wire(Chunk(7, 1, "...")) == {"type": "chunk", "gen": 7, "seq": 1, "text": "..."}


def test_to_wire_done_shape() -> None:
    wire = to_wire(Done(7, 42, "length", STATS))
    assert wire["stats"]["tokens"] == 42 and wire["stats"]["ttft_ms"] == 12.5
    assert wire == {
        "type": "done",
        "gen": 7,
        "seq": 42,
        "reason": "length",
        "stats": dataclasses.asdict(STATS),
    }


def test_to_wire_error_nests_kind_and_message() -> None:
    wire = to_wire(Error(7, 13, "model_load", "file missing"))
    assert wire == {
        "type": "error",
        "gen": 7,
        "seq": 13,
        "error": {"kind": "model_load", "message": "file missing"},
    }


def test_to_json_is_one_line_and_keeps_unicode_readable() -> None:
    line = to_json(Chunk(1, 1, UNICODE_TEXT + "\nsecond line"))
    assert "\n" not in line  # one SSE data: line
    assert UNICODE_TEXT in line  # ensure_ascii=False: no \uXXXX escapes
    assert "\\u" not in line
    assert "😀" in line and "𝄞" in line
    line.encode("utf-8")  # no lone surrogates: 😀 and 𝄞 are whole code points


# -- round trip ------------------------------------------------------------------------------


@pytest.mark.parametrize("event", ROUND_TRIP_EVENTS, ids=lambda e: f"{e.type}-{e.gen}-{e.seq}")
def test_round_trip_through_json(event: GenerationEvent) -> None:
    back = _round_trip(event)
    assert type(back) is type(event)
    assert back == event


@pytest.mark.parametrize("event", ROUND_TRIP_EVENTS, ids=lambda e: f"{e.type}-{e.gen}-{e.seq}")
def test_round_trip_through_wire_dict(event: GenerationEvent) -> None:
    assert from_wire(to_wire(event)) == event


def test_round_trip_keeps_astral_characters_whole() -> None:
    back = _round_trip(Chunk(1, 1, "😀𝄞"))
    assert isinstance(back, Chunk)
    assert back.text == "😀𝄞"
    assert [hex(ord(c)) for c in back.text] == ["0x1f600", "0x1d11e"]


def test_error_wire_shape_carries_kind_and_message_only() -> None:
    """The contract's error shape has no stats, so they are not expected back."""
    back = _round_trip(Error(4, 9, "backend_error", "boom", STATS))
    assert isinstance(back, Error)
    assert (back.gen, back.seq, back.kind, back.message) == (4, 9, "backend_error", "boom")


def test_done_without_stats_gets_default_stats() -> None:
    back = from_wire({"type": "done", "gen": 1, "seq": 3, "reason": "stop"})
    assert back == Done(1, 3, "stop", GenerationStats())


# -- malformed input -------------------------------------------------------------------------

MALFORMED: list[Any] = [
    {},
    {"gen": 1, "seq": 1, "text": "x"},  # no type
    {"type": "chunk", "seq": 1, "text": "x"},  # no gen
    {"type": "chunk", "gen": 1, "text": "x"},  # no seq
    {"type": "chunk", "gen": 1, "seq": 1},  # no text
    {"type": "chunk", "gen": "seven", "seq": 1, "text": "x"},  # gen not a number
    {"type": "chunk", "gen": 1, "seq": None, "text": "x"},  # seq null
    {"type": "chunk", "gen": [1], "seq": 1, "text": "x"},  # gen a list
    {"type": "chunk", "gen": "2", "seq": 5, "text": "x"},  # a numeric string is still a string
    {"type": "chunk", "gen": 1.5, "seq": 1, "text": "x"},  # would silently truncate to 1
    {"type": "chunk", "gen": 1, "seq": True, "text": "x"},  # a bool is not a seq
    {"type": "done", "gen": 1, "seq": 2},  # no reason
    {"type": "done", "gen": 1, "seq": 2, "reason": "stop", "stats": None},
    {"type": "done", "gen": 1, "seq": 2, "reason": "stop", "stats": [1, 2]},
    {"type": "error", "gen": 1, "seq": 2},  # no error object
    {"type": "error", "gen": 1, "seq": 2, "error": {"kind": "k"}},  # no message
    {"type": "error", "gen": 1, "seq": 2, "error": {"message": "m"}},  # no kind
    {"type": "error", "gen": 1, "seq": 2, "error": "boom"},  # error not an object
    {"type": "error", "gen": 1, "seq": 2, "error": None},
    {"type": "token", "gen": 1, "seq": 1, "text": "x"},  # unknown type
    {"type": "model_ready", "gen": 1, "seq": 1},  # not a generation event
    None,
    [],
    ["chunk", 1, 1, "x"],
    "chunk",
    42,
]


@pytest.mark.parametrize("data", MALFORMED, ids=lambda d: repr(d)[:60])
def test_malformed_input_raises_value_error(data: Any) -> None:
    with pytest.raises(ValueError):
        from_wire(data)


def test_malformed_json_line_raises_value_error() -> None:
    """What an SSE client does with a truncated data: line (JSONDecodeError is a ValueError)."""
    line = to_json(Chunk(1, 1, UNICODE_TEXT))
    with pytest.raises(ValueError):
        from_wire(json.loads(line[:-3]))


def test_unknown_finish_reason_is_malformed() -> None:
    with pytest.raises(ValueError):
        from_wire({"type": "done", "gen": 1, "seq": 2, "reason": "banana"})


@pytest.mark.parametrize("text", [None, 42, ["a"]])
def test_non_string_chunk_text_is_malformed(text: Any) -> None:
    """null must not become the text "None" in someone's transcript."""
    with pytest.raises(ValueError):
        from_wire({"type": "chunk", "gen": 1, "seq": 1, "text": text})


@pytest.mark.parametrize(("kind", "message"), [(None, "m"), ("k", None), (1, "m")])
def test_non_string_error_fields_are_malformed(kind: Any, message: Any) -> None:
    with pytest.raises(ValueError):
        from_wire(
            {"type": "error", "gen": 1, "seq": 1, "error": {"kind": kind, "message": message}}
        )


def test_stats_fields_a_newer_server_adds_are_ignored_not_fatal() -> None:
    wire = {
        "type": "done",
        "gen": 1,
        "seq": 2,
        "reason": "stop",
        "stats": {"tokens": 5, "prompt_tokens": 40, "a_future_figure": 1.5},
    }
    event = from_wire(wire)
    assert isinstance(event, Done)
    assert (event.stats.tokens, event.stats.prompt_tokens) == (5, 40)
