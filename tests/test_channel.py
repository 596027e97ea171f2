"""EventChannel and GenerationSender: numbering, merging into the waiting chunk, one final."""

from __future__ import annotations

import queue
import threading

import pytest

from tkchat.events import (
    AppEvent,
    Chunk,
    Done,
    Error,
    GenerationEvent,
    GenerationStats,
    ModelFailed,
    ModelReady,
)
from tkchat.transport.channel import EventChannel, GenerationSender, OpenChunk

STATS = GenerationStats(tokens=3)


def generation_events(events: list[AppEvent], gen: int) -> list[GenerationEvent]:
    return [e for e in events if isinstance(e, (Chunk, Done, Error)) and e.gen == gen]


def assert_one_generation(events: list[GenerationEvent], gen: int) -> str:
    """Check the contract for one generation's events; return its text."""
    assert events, f"no events for gen {gen}"
    assert all(e.gen == gen for e in events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "seq must be 1, 2, 3, ..."
    *chunks, final = events
    assert isinstance(final, (Done, Error)), f"last event is not final: {final!r}"
    assert all(isinstance(c, Chunk) for c in chunks), "a final event before the last position"
    return "".join(c.text for c in chunks if isinstance(c, Chunk))


# -- EventChannel ----------------------------------------------------------------------------


def test_channel_is_fifo_and_drain_empties_it() -> None:
    channel = EventChannel()
    events: list[AppEvent] = [Chunk(1, 1, "a"), ModelReady("m", 0.5, 2048), Chunk(1, 2, "b")]
    for event in events:
        channel.put(event)
    assert channel.qsize() == 3
    assert channel.drain() == events
    assert channel.qsize() == 0
    assert channel.drain() == []


def test_drain_respects_limit() -> None:
    channel = EventChannel()
    for seq in range(1, 11):
        channel.put(Chunk(1, seq, str(seq)))
    first = channel.drain(limit=4)
    assert [e.seq for e in first if isinstance(e, Chunk)] == [1, 2, 3, 4]
    assert channel.qsize() == 6
    rest = channel.drain()
    assert [e.seq for e in rest if isinstance(e, Chunk)] == list(range(5, 11))
    assert channel.drain(limit=0) == []


def test_get_returns_the_next_event_and_times_out_when_empty() -> None:
    channel = EventChannel()
    channel.put(ModelFailed("nope"))
    assert channel.get(timeout=1.0) == ModelFailed("nope")
    with pytest.raises(queue.Empty):
        channel.get(timeout=0.01)


def test_put_from_many_threads_loses_nothing() -> None:
    channel = EventChannel()
    per_thread = 500

    def produce(gen: int) -> None:
        for seq in range(1, per_thread + 1):
            channel.put(Chunk(gen, seq, "x"))

    threads = [threading.Thread(target=produce, args=(gen,)) for gen in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5.0)
        assert not thread.is_alive()
    events = channel.drain()
    assert len(events) == 4 * per_thread
    for gen in range(1, 5):
        # Each producer's own events keep their order.
        assert [e.seq for e in generation_events(events, gen)] == list(range(1, per_thread + 1))


# -- GenerationSender: numbering and the final event -----------------------------------------


def test_seq_is_contiguous_from_one_and_final_follows_last_chunk() -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=7)
    events = []
    for word in ["Hello", ", ", "world", "!"]:
        sender.text(word)
        events += channel.drain()  # a consumer that keeps up: every piece travels alone
    sender.done("stop", STATS)
    events += channel.drain()
    assert events == [
        Chunk(7, 1, "Hello"),
        Chunk(7, 2, ", "),
        Chunk(7, 3, "world"),
        Chunk(7, 4, "!"),
        Done(7, 5, "stop", STATS),
    ]
    assert sender.finished


def test_empty_text_sends_nothing_and_uses_no_seq() -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=1)
    sender.text("")
    sender.text("a")
    sender.text("")
    sender.done("stop", STATS)
    assert channel.drain() == [Chunk(1, 1, "a"), Done(1, 2, "stop", STATS)]
    assert (sender.pieces, sender.chunks) == (1, 1)


def test_generation_without_text_is_just_a_final_with_seq_one() -> None:
    channel = EventChannel()
    GenerationSender(channel, gen=3).error("model_load", "no file", STATS)
    assert channel.drain() == [Error(3, 1, "model_load", "no file", STATS)]


def test_two_senders_number_independently() -> None:
    channel = EventChannel()
    first, second = GenerationSender(channel, 1), GenerationSender(channel, 2)
    first.text("a")
    second.text("x")
    first.text("b")
    first.done("cancelled", STATS)
    second.done("stop", STATS)
    events = channel.drain()
    assert assert_one_generation(generation_events(events, 1), 1) == "ab"
    assert assert_one_generation(generation_events(events, 2), 2) == "x"


@pytest.mark.parametrize(
    ("first", "second"),
    [("done", "done"), ("done", "error"), ("error", "done"), ("error", "error")],
)
def test_exactly_one_final_event(first: str, second: str) -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=1)
    sender.text("a")

    def finish(how: str) -> None:
        if how == "done":
            sender.done("stop", STATS)
        else:
            sender.error("boom", "it broke", STATS)

    finish(first)
    queued = channel.qsize()
    with pytest.raises(RuntimeError, match="already finished"):
        finish(second)
    assert channel.qsize() == queued, "a refused final event must not reach the channel"
    events = generation_events(channel.drain(), 1)
    assert sum(isinstance(e, (Done, Error)) for e in events) == 1
    assert_one_generation(events, 1)


# -- GenerationSender: merging into the chunk still waiting ---------------------------------


def test_text_joins_the_chunk_the_consumer_has_not_taken_yet() -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=1)
    tokens = [f"tok{i} 中😀 " for i in range(2000)]
    for token in tokens:
        sender.text(token)
        assert channel.qsize() == 1, "nobody drains: one chunk waits, and grows"
    sender.done("stop", STATS)
    events = generation_events(channel.drain(), 1)
    assert events == [Chunk(1, 1, "".join(tokens)), Done(1, 2, "stop", STATS)]
    assert (sender.pieces, sender.chunks) == (2000, 1)


def test_a_taken_chunk_is_never_added_to() -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=1)
    sender.text("a")
    sender.text("b")
    assert channel.drain() == [Chunk(1, 1, "ab")]  # taken: closed for good
    sender.text("c")
    sender.text("d")
    sender.text("e")
    assert channel.drain() == [Chunk(1, 2, "cde")]
    sender.text("f")
    sender.error("RuntimeError", "boom", STATS)
    assert channel.drain() == [Chunk(1, 3, "f"), Error(1, 4, "RuntimeError", "boom", STATS)]


def test_text_after_another_event_starts_a_new_chunk() -> None:
    channel = EventChannel()
    sender = GenerationSender(channel, gen=3)
    sender.text("before")
    sender.event(lambda seq: ModelFailed(f"marker {seq}"))  # any other event, in between
    sender.text("after")
    events = channel.drain()
    assert events == [Chunk(3, 1, "before"), ModelFailed("marker 2"), Chunk(3, 3, "after")]


def test_without_coalescing_every_piece_travels_alone() -> None:
    channel = EventChannel(coalesce=False)  # the broken demos
    sender = GenerationSender(channel, gen=1)
    for piece in "abc":
        sender.text(piece)
    sender.done("stop", STATS)
    assert channel.drain() == [
        Chunk(1, 1, "a"),
        Chunk(1, 2, "b"),
        Chunk(1, 3, "c"),
        Done(1, 4, "stop", STATS),
    ]
    assert (sender.pieces, sender.chunks) == (3, 3)


def test_open_chunk_add_and_take_exclude_each_other() -> None:
    chunk = OpenChunk(5, 2, "x")
    assert chunk.add("y") and chunk.pieces == 2
    assert chunk.take() == Chunk(5, 2, "xy")
    assert not chunk.add("z")  # after take: the sender must send a new chunk
    assert chunk.take() == Chunk(5, 2, "xy")


def test_concurrent_drain_sees_all_text_in_order() -> None:
    channel = EventChannel()
    tokens = [f"{i},流 " for i in range(5000)]

    def produce() -> None:
        sender = GenerationSender(channel, gen=9)
        for token in tokens:
            sender.text(token)
        sender.done("stop", STATS)

    producer = threading.Thread(target=produce)
    producer.start()
    events: list[AppEvent] = []
    while not any(isinstance(e, Done) for e in events):
        try:
            events.append(channel.get(timeout=5.0))
        except queue.Empty:
            pytest.fail(f"no final event after {len(events)} events")
        assert channel.qsize() <= 2  # at most the growing chunk and the final event
    producer.join(5.0)
    assert not producer.is_alive()
    events.extend(channel.drain())
    assert assert_one_generation(generation_events(events, 9), 9) == "".join(tokens)
