"""StreamConsumer: one tick of drained events becomes one append (and maybe an end)."""

from __future__ import annotations

import random

import pytest

from tkchat.consume.stream_consumer import (
    TRANSPORT_GAP,
    ConsumerCounts,
    StreamConsumer,
    TickResult,
)
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

STATS = GenerationStats(tokens=2)


def following(gen: int) -> StreamConsumer:
    consumer = StreamConsumer()
    consumer.follow(gen)
    return consumer


def generation(gen: int, words: list[str], final: str = "stop") -> list[GenerationEvent]:
    """A well-formed generation: chunks seq 1..n, then its final event."""
    events: list[GenerationEvent] = [Chunk(gen, i, w) for i, w in enumerate(words, start=1)]
    seq = len(words) + 1
    if final == "error":
        events.append(Error(gen, seq, "RuntimeError", "boom", STATS))
    else:
        events.append(Done(gen, seq, final, STATS))  # type: ignore[arg-type]
    return events


def test_a_fresh_consumer_follows_nothing() -> None:
    consumer = StreamConsumer()
    assert consumer.gen is None
    assert consumer.finished
    result = consumer.accept(list(generation(1, ["a", "b"])))
    assert result == TickResult((), None, (), 3)


def test_text_of_one_tick_is_joined_into_one_append() -> None:
    consumer = following(1)
    result = consumer.accept([Chunk(1, 1, "Hel"), Chunk(1, 2, "lo "), Chunk(1, 3, "世界😀")])
    assert result.text == "Hello 世界😀"
    assert result.final is None
    assert result.stale == 0
    assert not consumer.finished


def test_text_spread_over_ticks_adds_up() -> None:
    consumer = following(5)
    events = generation(5, [f"w{i} " for i in range(20)])
    texts: list[str] = []
    finals: list[object] = []
    for start in range(0, len(events), 3):
        result = consumer.accept(list(events[start : start + 3]))
        texts.append(result.text)
        if result.final is not None:
            finals.append(result.final)
    assert "".join(texts) == "".join(f"w{i} " for i in range(20))
    assert finals == [events[-1]]
    assert consumer.finished


def test_final_comes_with_the_text_before_it() -> None:
    consumer = following(2)
    events = generation(2, ["a", "b", "c"], final="length")
    result = consumer.accept(list(events))
    assert result.text == "abc"
    assert result.final == events[-1]
    assert consumer.finished


def test_error_is_a_final_too() -> None:
    consumer = following(2)
    events = generation(2, ["partial "], final="error")
    result = consumer.accept(list(events))
    assert result.text == "partial "
    assert isinstance(result.final, Error)
    assert result.final.kind == "RuntimeError"


def test_out_of_order_arrival_is_put_back_in_order() -> None:
    consumer = following(3)
    c1, c2, c3, done = generation(3, ["one ", "two ", "three"])
    first = consumer.accept([done, c3, c1])
    assert first.text == "one "
    assert first.final is None, "the final must wait for the text before it"
    assert consumer.waiting == 2
    second = consumer.accept([c2])
    assert second.text == "two three"
    assert second.final == done
    assert consumer.waiting == 0


def test_duplicates_never_print_text_twice() -> None:
    consumer = following(1)
    c1, c2, done = generation(1, ["a", "b"])
    assert consumer.accept([c1, c1, c2, c1]).text == "ab"
    assert consumer.accept([c2, done, c1]).final == done


def test_events_after_the_final_are_ignored() -> None:
    consumer = following(1)
    c1, done = generation(1, ["only this"])
    late = Chunk(1, 3, " NOT THIS")
    result = consumer.accept([c1, done, late])
    assert result.text == "only this"
    assert result.final == done
    assert result.stale == 1
    again = consumer.accept([Chunk(1, 4, " nor this"), Done(1, 5, "stop", STATS)])
    assert again == TickResult((), None, (), 2)


def test_a_second_final_in_the_same_release_is_ignored() -> None:
    consumer = following(1)
    c1 = Chunk(1, 1, "a")
    done = Done(1, 2, "stop", STATS)
    bogus = Chunk(1, 3, "after the end")
    # bogus and done are held, then all released together by c1: stop at the final.
    assert consumer.accept([bogus, done]).text == ""
    result = consumer.accept([c1])
    assert result.text == "a"
    assert result.final == done


def test_other_generations_are_stale() -> None:
    consumer = following(2)
    result = consumer.accept([Chunk(1, 1, "old"), Chunk(2, 1, "new"), Chunk(3, 1, "future")])
    assert result.text == "new"
    assert result.stale == 2


def test_a_stopped_generation_never_leaks_into_the_next() -> None:
    consumer = following(1)
    assert consumer.accept([Chunk(1, 1, "first answer, ")]).text == "first answer, "

    consumer.follow(2)  # the user pressed Stop and asked again
    assert consumer.gen == 2
    assert not consumer.finished
    leftovers: list[AppEvent] = [
        Chunk(1, 2, "LEAK "),  # still in flight from generation 1
        Chunk(2, 1, "second "),
        Chunk(1, 3, "LEAK "),
        Done(1, 4, "cancelled", STATS),
        Chunk(2, 2, "answer"),
    ]
    result = consumer.accept(leftovers)
    assert result.text == "second answer"
    assert "LEAK" not in result.text
    assert result.final is None, "generation 1's done must not end generation 2"
    assert result.stale == 3
    end = consumer.accept([Chunk(1, 5, "LEAK"), Done(2, 3, "stop", STATS)])
    assert end.text == ""
    assert end.final == Done(2, 3, "stop", STATS)


def test_follow_restarts_seq_numbering() -> None:
    consumer = following(1)
    consumer.accept(list(generation(1, ["a", "b", "c"])))
    consumer.follow(2)
    result = consumer.accept(list(generation(2, ["x"])))
    assert result.text == "x", "generation 2 starts again at seq 1"
    assert result.final == Done(2, 2, "stop", STATS)


def test_model_news_passes_through_in_order() -> None:
    ready = ModelReady("SmolLM2", 1.25, 8192)
    failed = ModelFailed("Model file not found: /nope.gguf")
    consumer = StreamConsumer()  # following nothing yet: model news still arrives
    result = consumer.accept([failed, Chunk(9, 1, "stale"), ready])
    assert result.app_events == (failed, ready)
    assert result.text == ""
    assert result.stale == 1


def test_model_news_passes_through_after_the_final() -> None:
    consumer = following(1)
    ready = ModelReady("m", 0.1, 512)
    result = consumer.accept([*generation(1, ["t"]), ready])
    assert result.text == "t"
    assert result.app_events == (ready,)


@pytest.mark.parametrize("seed", range(50))
def test_random_interleaving_of_two_generations(seed: int) -> None:
    """Old and new generation events shuffled together: only the new text, in order."""
    rng = random.Random(seed)
    old = generation(1, [f"OLD{i} " for i in range(rng.randint(0, 15))], final="cancelled")
    new_words = [f"new{i} " for i in range(rng.randint(0, 15))]
    new = generation(2, new_words)
    arrivals: list[AppEvent] = [*old, *new, *rng.sample(new, k=len(new) // 2)]
    rng.shuffle(arrivals)

    consumer = following(2)
    texts: list[str] = []
    finals: list[object] = []
    position = 0
    while position < len(arrivals):
        size = rng.randint(1, 5)
        result = consumer.accept(arrivals[position : position + size])
        position += size
        texts.append(result.text)
        if result.final is not None:
            finals.append(result.final)
    assert "".join(texts) == "".join(new_words)
    assert finals == [new[-1]]


# -- an event that never comes, and the counts of lesson 13 -----------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_lost_event_ends_the_answer_with_a_transport_gap_error() -> None:
    clock = FakeClock()
    consumer = StreamConsumer(gap_timeout_s=3.0, clock=clock)
    consumer.follow(4)
    c1, c2, c3, c4, done = generation(4, ["a", "b", "c", "d"])
    first = consumer.accept([c1, c3, c4, done])  # 2 was lost on the way
    assert first.text == "a"
    assert first.final is None
    assert consumer.waiting == 3
    clock.now = 2.0
    assert consumer.accept([]) == TickResult((), None, (), 0)  # a tick with nothing new
    clock.now = 3.0
    end = consumer.accept([])
    assert end.text == ""
    assert end.final == Error(
        4, 2, TRANSPORT_GAP, "event 2 never arrived (lost in transport); the answer was ended"
    )
    assert consumer.finished
    assert consumer.waiting == 0
    late = consumer.accept([c2, Chunk(4, 6, "more")])
    assert late == TickResult((), None, (), 2), "the late event cannot reopen the answer"
    assert consumer.counts() == ConsumerCounts(
        held_back=3, duplicates_dropped=0, stale_dropped=2, gaps=1
    )


def test_the_event_arriving_in_the_deadline_tick_still_counts() -> None:
    clock = FakeClock()
    consumer = StreamConsumer(gap_timeout_s=1.0, clock=clock)
    consumer.follow(1)
    c1, c2, done = generation(1, ["a", "b"])
    consumer.accept([c2, done])
    clock.now = 5.0  # long overdue, but the tick brings it: it is not lost
    result = consumer.accept([c1])
    assert result.text == "ab"
    assert result.final == done


def test_a_flood_behind_a_gap_ends_the_answer_at_the_bound() -> None:
    consumer = StreamConsumer(max_held=32, gap_timeout_s=3600)
    consumer.follow(1)
    result = consumer.accept([Chunk(1, seq, "x") for seq in range(2, 200)])
    assert isinstance(result.final, Error)
    assert (result.final.kind, result.final.seq) == (TRANSPORT_GAP, 1)
    assert result.stale == 0
    assert consumer.waiting == 0
    assert consumer.counts().held_back == 32


def test_a_tick_following_nothing_never_ends_anything() -> None:
    clock = FakeClock()
    consumer = StreamConsumer(gap_timeout_s=0.1, clock=clock)
    clock.now = 99.0
    assert consumer.accept([]) == TickResult((), None, (), 0)
    consumer.follow(-1)  # what Stop does
    assert consumer.accept([]).final is None


def test_counts_add_up_across_generations() -> None:
    consumer = following(1)
    c1, c2, done = generation(1, ["a", "b"])
    consumer.accept([c2, c1, c1, done])  # 2 held back, one duplicate
    consumer.follow(2)
    d1, d2, d3, done2 = generation(2, ["x", "y", "z"])
    consumer.accept([Chunk(1, 9, "stale"), d3, d2, d2, d1, done2, done2])
    assert consumer.counts() == ConsumerCounts(
        held_back=3, duplicates_dropped=2, stale_dropped=2, gaps=0
    )


def test_in_order_events_cost_nothing() -> None:
    consumer = following(1)
    consumer.accept(list(generation(1, [f"w{i}" for i in range(30)])))
    assert consumer.counts() == ConsumerCounts()
