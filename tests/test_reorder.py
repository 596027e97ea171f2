"""ReorderBuffer: releases one generation's events in seq order, exactly once each."""

from __future__ import annotations

import random

import pytest

from tkchat.consume.reorder import ReorderBuffer
from tkchat.events import Chunk, Done, GenerationEvent


def make_events(count: int, gen: int = 1) -> list[GenerationEvent]:
    """``count - 1`` chunks then a done, seq 1..count (the shape of one generation)."""
    events: list[GenerationEvent] = [Chunk(gen, seq, f"t{seq} ") for seq in range(1, count)]
    events.append(Done(gen, count, "stop"))
    return events


def push_all(buffer: ReorderBuffer, events: list[GenerationEvent]) -> list[GenerationEvent]:
    released: list[GenerationEvent] = []
    for event in events:
        released.extend(buffer.push(event))
    return released


def seqs(events: list[GenerationEvent]) -> list[int]:
    return [event.seq for event in events]


def test_in_order_events_pass_straight_through() -> None:
    buffer = ReorderBuffer()
    for event in make_events(5):
        assert buffer.push(event) == [event]
        assert buffer.waiting == 0
    assert buffer.next_seq == 6
    assert buffer.dropped == 0


def test_out_of_order_events_are_held_then_released_in_order() -> None:
    events = make_events(4)
    buffer = ReorderBuffer()
    assert buffer.push(events[2]) == []  # seq 3
    assert buffer.waiting == 1
    assert buffer.push(events[1]) == []  # seq 2
    assert buffer.waiting == 2
    assert buffer.push(events[0]) == events[:3]  # seq 1 releases 1, 2, 3
    assert buffer.waiting == 0
    assert buffer.push(events[3]) == [events[3]]


def test_reverse_order_releases_everything_on_the_last_push() -> None:
    events = make_events(10)
    buffer = ReorderBuffer()
    for event in reversed(events[1:]):
        assert buffer.push(event) == []
    assert buffer.waiting == 9
    assert buffer.push(events[0]) == events
    assert buffer.waiting == 0


def test_release_stops_at_the_next_gap() -> None:
    events = make_events(6)
    buffer = ReorderBuffer()
    # 1 arrives, 3 and 5 arrive early, 2 fills the first gap only.
    assert seqs(buffer.push(events[0])) == [1]
    assert buffer.push(events[2]) == []
    assert buffer.push(events[4]) == []
    assert seqs(buffer.push(events[1])) == [2, 3]
    assert buffer.waiting == 1  # 5 still waits for 4
    assert buffer.next_seq == 4
    assert seqs(buffer.push(events[3])) == [4, 5]
    assert seqs(buffer.push(events[5])) == [6]


def test_gap_holds_everything_behind_it() -> None:
    events = make_events(8)
    buffer = ReorderBuffer()
    released = push_all(buffer, [e for e in events if e.seq != 3])
    assert seqs(released) == [1, 2]
    assert buffer.waiting == 5  # 4..8
    assert buffer.next_seq == 3


def test_duplicate_of_a_released_event_is_dropped() -> None:
    events = make_events(3)
    buffer = ReorderBuffer()
    assert buffer.push(events[0]) == [events[0]]
    assert buffer.push(events[0]) == []
    assert buffer.push(Chunk(1, 1, "a replay with other text")) == []
    assert buffer.dropped == 2
    assert buffer.next_seq == 2


def test_duplicate_of_a_held_event_is_dropped_and_the_first_copy_wins() -> None:
    buffer = ReorderBuffer()
    first = Chunk(1, 2, "first copy")
    assert buffer.push(first) == []
    assert buffer.push(Chunk(1, 2, "second copy")) == []
    assert buffer.waiting == 1
    assert buffer.dropped == 1
    assert buffer.push(Chunk(1, 1, "a")) == [Chunk(1, 1, "a"), first]


def test_first_seq_can_be_chosen() -> None:
    buffer = ReorderBuffer(first_seq=10)
    assert buffer.push(Chunk(1, 9, "too old")) == []
    assert buffer.dropped == 1
    assert buffer.push(Chunk(1, 11, "b")) == []
    assert seqs(buffer.push(Chunk(1, 10, "a"))) == [10, 11]


@pytest.mark.parametrize("seed", range(200))
def test_random_shuffles_with_duplicates_release_each_event_once_in_order(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(1, 60)
    events = make_events(count)
    duplicates = [rng.choice(events) for _ in range(rng.randint(0, count))]
    arrivals = events + duplicates
    rng.shuffle(arrivals)

    buffer = ReorderBuffer()
    released: list[GenerationEvent] = []
    seen: set[int] = set()
    for event in arrivals:
        seen.add(event.seq)
        ready = buffer.push(event)
        # Every release is a contiguous run that continues exactly where the last one ended.
        assert seqs(ready) == list(range(len(released) + 1, len(released) + 1 + len(ready)))
        released.extend(ready)
        assert buffer.next_seq == len(released) + 1
        assert buffer.waiting == len(seen) - len(released)  # held = seen but not released

    assert released == events
    assert buffer.waiting == 0
    assert buffer.dropped == len(duplicates)


@pytest.mark.parametrize("seed", range(100))
def test_random_shuffles_with_a_missing_event_hold_the_rest(seed: int) -> None:
    rng = random.Random(1000 + seed)
    count = rng.randint(2, 40)
    events = make_events(count)
    missing = rng.randint(1, count)
    arrivals = [e for e in events if e.seq != missing]
    rng.shuffle(arrivals)

    buffer = ReorderBuffer()
    released = push_all(buffer, arrivals)
    assert released == events[: missing - 1]
    assert buffer.waiting == count - missing
    assert buffer.next_seq == missing

    # The late event fills the gap and releases everything held behind it.
    assert buffer.push(events[missing - 1]) == events[missing - 1 :]
    assert buffer.waiting == 0
    assert buffer.dropped == 0


# -- the bounds: a missing event is given up, never waited for forever ------------------------


class FakeClock:
    """A clock the test moves by hand (the buffer reads it on the consumer's thread)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_gap_is_given_up_at_its_deadline_not_before() -> None:
    clock = FakeClock()
    buffer = ReorderBuffer(gap_timeout_s=3.0, clock=clock)
    events = make_events(6)
    assert seqs(push_all(buffer, [e for e in events if e.seq != 3])) == [1, 2]
    assert buffer.waiting == 3  # 4, 5, 6
    clock.now += 2.9
    assert buffer.expire() is None
    assert buffer.waiting == 3, "nothing is let go before the deadline"
    clock.now += 0.1
    lost = buffer.expire()
    assert lost is not None
    assert (lost.seq, lost.held, lost.why) == (3, 3, "deadline")
    assert lost.waited_s == pytest.approx(3.0)
    assert lost.message == "event 3 never arrived (lost in transport); the answer was ended"
    assert buffer.waiting == 0, "what was held is freed"
    # Once given up, the late event and everything after it are ignored.
    assert buffer.push(events[2]) == []
    assert buffer.expire() is lost


def test_the_deadline_counts_from_the_last_progress() -> None:
    clock = FakeClock()
    buffer = ReorderBuffer(gap_timeout_s=3.0, clock=clock)
    c = make_events(6)
    buffer.push(c[1])  # 2 early: stuck from now
    buffer.push(c[3])  # 4 early
    clock.now += 2.5
    assert seqs(buffer.push(c[0])) == [1, 2]  # progress; 4 still waits for 3
    clock.now += 2.5  # 5 s since the first hold, 2.5 s since progress
    assert buffer.expire() is None
    clock.now += 0.5
    lost = buffer.expire()
    assert lost is not None and lost.seq == 3


def test_a_filled_gap_stops_the_clock() -> None:
    clock = FakeClock()
    buffer = ReorderBuffer(gap_timeout_s=1.0, clock=clock)
    events = make_events(3)
    buffer.push(events[1])
    clock.now += 0.9
    assert seqs(buffer.push(events[0])) == [1, 2]
    clock.now += 60
    assert buffer.expire() is None  # nothing held: nothing is late
    assert buffer.push(events[2]) == [events[2]]


def test_nothing_held_never_expires() -> None:
    clock = FakeClock()
    buffer = ReorderBuffer(gap_timeout_s=0.5, clock=clock)
    assert buffer.push(make_events(2)[0]) != []
    clock.now += 1000
    assert buffer.expire() is None


def test_the_held_bound_holds_under_a_flood_of_early_arrivals() -> None:
    clock = FakeClock()
    buffer = ReorderBuffer(max_held=64, gap_timeout_s=3600, clock=clock)
    most = 0
    for seq in range(2, 10_000):  # seq 1 never comes; the producer keeps going
        assert buffer.push(Chunk(1, seq, "x")) == []
        most = max(most, buffer.waiting)
        assert buffer.waiting <= 64
    assert most == 64
    lost = buffer.lost
    assert lost is not None
    assert (lost.seq, lost.held, lost.why) == (1, 64, "overflow")
    assert buffer.waiting == 0
    assert buffer.expire() is lost


def test_the_bound_is_on_held_events_not_on_released_ones() -> None:
    buffer = ReorderBuffer(max_held=2)
    events = make_events(50)
    released = push_all(buffer, events)  # in order: nothing is ever held
    assert released == events
    assert buffer.lost is None
    assert buffer.held_total == 0


def test_held_total_counts_every_early_arrival() -> None:
    buffer = ReorderBuffer()
    c1, c2, c3, done = make_events(4)
    push_all(buffer, [c3, done, c2, c2, c1])
    assert buffer.held_total == 3
    assert buffer.dropped == 1


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        ReorderBuffer(max_held=0)
