"""The chaos transport: reproducible from its seed, breaks only what a network could break,
and the consumer puts everything back (Tk-free; the window's side is test_chaos_in_app.py)."""

from __future__ import annotations

import random
import threading

import pytest

from tests.conftest import run_to_end
from tkchat.consume.stream_consumer import TRANSPORT_GAP, StreamConsumer
from tkchat.conversation import Message, Sampling
from tkchat.events import AppEvent, Chunk, Done, Error, GenerationEvent, GenerationStats
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.transport.channel import EventChannel, GenerationSender, OpenChunk
from tkchat.transport.chaos import DELAY_EVENTS, Chaos, ChaosCounts, ChaosSink

STATS = GenerationStats(tokens=1)
REQUEST = GenerationRequest((Message("user", "hi"),), Sampling(max_tokens=0))


def words(count: int) -> list[str]:
    return [f"w{i} " for i in range(count)]


def send_through(sink: ChaosSink, pieces: list[str], gen: int = 1) -> GenerationSender:
    """What a worker does: one sender, its text, then its final event."""
    sender = GenerationSender(sink, gen)
    for piece in pieces:
        sender.text(piece)
    sender.done("stop", STATS)
    return sender


def delivered_by(seed: int, pieces: list[str], **chaos: object) -> list[AppEvent]:
    channel = EventChannel()
    send_through(ChaosSink(channel, seed=seed, **chaos), pieces)  # type: ignore[arg-type]
    return channel.drain()


def consume(events: list[AppEvent], gen: int = 1, seed: int = 0) -> tuple[str, list[object]]:
    """Feed ``events`` to a consumer in ticks of random size: the text shown, the finals."""
    rng = random.Random(seed)
    consumer = StreamConsumer()
    consumer.follow(gen)
    texts: list[str] = []
    finals: list[object] = []
    position = 0
    while position < len(events):
        size = rng.randint(1, 8)
        result = consumer.accept(events[position : position + size])
        position += size
        texts.append(result.text)
        if result.final is not None:
            finals.append(result.final)
    return "".join(texts), finals


def test_the_same_seed_delivers_in_the_same_order_and_another_seed_does_not() -> None:
    pieces = words(300)
    first = delivered_by(11, pieces)
    assert delivered_by(11, pieces) == first
    assert delivered_by(12, pieces) != first
    in_order = [Chunk(1, i + 1, p) for i, p in enumerate(pieces)]
    assert first[: len(in_order)] != in_order, "chaos did something"


def test_nothing_but_order_duplicates_and_the_asked_drop_changes() -> None:
    pieces = words(400)
    channel = EventChannel()
    sink = ChaosSink(channel, seed=3, shuffle=4, duplicate=0.2, delay=0.1, drop_seq=50)
    sender = send_through(sink, pieces, gen=9)
    assert (sender.pieces, sender.chunks) == (400, 400), "no merging under chaos"
    delivered = channel.drain()
    sent: list[GenerationEvent] = [Chunk(9, i + 1, p) for i, p in enumerate(pieces)]
    sent.append(Done(9, 401, "stop", STATS))
    # Each delivered event is one that was sent, untouched: gen, seq and text are the sender's.
    assert all(event in sent for event in delivered)
    assert {e.seq for e in delivered if isinstance(e, Chunk)} == set(range(1, 401)) - {50}
    assert sum(isinstance(e, Done) for e in delivered) >= 1, "the final is never lost"
    counts = sink.tally.counts()
    assert counts.dropped == 1
    assert counts.shuffled > 0 and counts.duplicated > 0 and counts.delayed > 0
    # Everything held went out with the final: nothing is left in the sink.
    assert len(delivered) == len(sent) - counts.dropped + counts.duplicated


def test_no_event_moves_more_than_a_few_places() -> None:
    pieces = words(2000)
    shuffle = 4
    delivered = delivered_by(5, pieces, shuffle=shuffle, duplicate=0.1, delay=0.1)
    first_seen: dict[int, int] = {}
    for event in delivered:
        if isinstance(event, Chunk):
            first_seen.setdefault(event.seq, len(first_seen) + 1)
    worst = max(abs(rank - seq) for seq, rank in first_seen.items())
    # A delayed event waits at most DELAY_EVENTS[1] later events, then a block or two.
    assert 0 < worst <= DELAY_EVENTS[1] + 2 * shuffle


@pytest.mark.parametrize("seed", range(30))
def test_the_consumer_shows_the_text_once_in_order(seed: int) -> None:
    pieces = words(random.Random(seed).randint(1, 120))
    delivered = delivered_by(seed, pieces, shuffle=5, duplicate=0.3, delay=0.2)
    text, finals = consume(delivered, seed=seed)
    assert text == "".join(pieces)
    assert finals == [Done(1, len(pieces) + 1, "stop", STATS)]


def test_the_final_is_never_dropped() -> None:
    channel = EventChannel()
    sink = ChaosSink(channel, seed=1, drop_seq=4)  # 3 chunks, then the final as seq 4
    send_through(sink, ["a", "b", "c"])
    assert sink.tally.counts().dropped == 0
    text, finals = consume(channel.drain())
    assert text == "abc"
    assert len(finals) == 1


def test_a_dropped_chunk_becomes_a_transport_gap_at_the_consumer() -> None:
    channel = EventChannel()
    send_through(ChaosSink(channel, seed=2, drop_seq=3, duplicate=0, delay=0), words(10))
    clock = [0.0]
    consumer = StreamConsumer(gap_timeout_s=3.0, clock=lambda: clock[0])
    consumer.follow(1)
    shown = consumer.accept(channel.drain())
    assert shown.text == "w0 w1 "
    assert shown.final is None
    clock[0] = 3.0
    final = consumer.accept([]).final
    assert isinstance(final, Error)
    assert (final.kind, final.seq) == (TRANSPORT_GAP, 3)


def test_a_sink_of_chaos_never_merges_and_closes_an_open_chunk() -> None:
    channel = EventChannel()
    sink = ChaosSink(channel, seed=0, shuffle=1, duplicate=0, delay=0)
    assert GenerationSender(sink, 1).coalesce is False
    chunk = OpenChunk(1, 1, "a")
    sink.put(chunk)
    assert not chunk.add("b"), "closed on arrival: it cannot grow while chaos holds it"
    assert channel.drain() == [Chunk(1, 1, "a")]


def test_shuffle_one_and_no_chances_is_a_plain_channel() -> None:
    pieces = words(50)
    delivered = delivered_by(8, pieces, shuffle=1, duplicate=0, delay=0)
    assert delivered == [
        *(Chunk(1, i + 1, p) for i, p in enumerate(pieces)),
        Done(1, 51, "stop", STATS),
    ]


def test_other_events_pass_straight_through() -> None:
    from tkchat.events import ModelReady

    channel = EventChannel()
    sink = ChaosSink(channel, seed=0, shuffle=8)
    ready = ModelReady("m", 0.1, 512)
    sink.put(Chunk(1, 1, "held in the block"))
    sink.put(ready)
    assert channel.drain() == [ready]


@pytest.mark.parametrize(
    "options",
    [{"shuffle": 0}, {"duplicate": 1.5}, {"delay": -0.1}, {"drop_seq": 0}],
)
def test_settings_are_checked(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ChaosSink(EventChannel(), seed=0, **options)  # type: ignore[arg-type]


# -- through the controller and a real worker ----------------------------------------------


def all_of(channel: EventChannel, gen: int) -> list[GenerationEvent]:
    """Every event of ``gen``: up to its first final, then what the sink let go with it (call
    once the worker has exited)."""
    events = run_to_end(channel, gen, timeout=30)
    events += [e for e in channel.drain() if isinstance(e, (Chunk, Done, Error)) and e.gen == gen]
    return events


def run_generation(controller: GenerationController) -> list[GenerationEvent]:
    gen = controller.start(REQUEST)
    assert controller.current is not None and controller.current.join(10)
    return all_of(controller.channel, gen)


def order(events: list[GenerationEvent]) -> list[tuple[str, int]]:
    """What was delivered, in which order (a final's stats hold timings, which vary)."""
    return [(event.type, event.seq) for event in events]


def test_a_seed_gives_the_same_deliveries_through_a_real_worker() -> None:
    runs = []
    for _ in range(2):
        controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
        controller.sink_wrapper = Chaos(21)
        runs.append([order(run_generation(controller)), order(run_generation(controller))])
    assert runs[0] == runs[1]
    assert runs[0][0] != runs[0][1], "each generation has its own seed"


def test_drop_next_applies_to_one_generation_and_counts_add_up() -> None:
    chaos = Chaos(4)
    controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
    controller.sink_wrapper = chaos
    chaos.drop_next(17)
    first = run_generation(controller)
    assert 17 not in {e.seq for e in first}
    second = run_generation(controller)
    text, finals = consume(list(second), gen=controller.gen)
    assert text == SCRIPT
    assert len(finals) == 1 and isinstance(finals[0], Done)
    counts = chaos.counts()
    assert counts.dropped == 1
    assert counts.shuffled > 0 and counts.duplicated > 0 and counts.delayed > 0
    assert chaos.made == 2


def test_stop_still_stops_the_model_under_chaos() -> None:
    controller = GenerationController(ScriptedBackend(rate=500, tokens=10**9), EventChannel())
    controller.sink_wrapper = Chaos(9)
    gen = controller.start(REQUEST)
    worker = controller.current
    assert worker is not None
    for _ in range(1000):
        if worker.tokens >= 50:
            break
        threading.Event().wait(0.005)
    controller.stop()
    assert worker.join(5), "the worker left the model loop"
    finals = [e for e in all_of(controller.channel, gen) if isinstance(e, (Done, Error))]
    assert finals and all(isinstance(f, Done) and f.reason == "cancelled" for f in finals)


def test_no_chaos_is_a_zero_count() -> None:
    assert Chaos(1).counts() == ChaosCounts()
