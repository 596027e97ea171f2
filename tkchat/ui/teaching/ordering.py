"""Lesson 13's live figures in one read: what the chaos transport did to the events, and what
putting them back in order cost the consumer. Main thread (the counts are plain ints)."""

from __future__ import annotations

from dataclasses import dataclass

from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.transport.chaos import Chaos, ChaosCounts


@dataclass(frozen=True, slots=True)
class OrderingCounters:
    chaos_on: bool  # whether answers go through the chaos transport now
    # the transport (zero while chaos was never on)
    shuffled: int
    duplicated: int
    delayed: int
    dropped: int
    # the consumer (every generation this window followed)
    held_back: int
    duplicates_dropped: int
    stale_dropped: int
    gaps: int  # answers ended because an event never arrived


def read_ordering(chaos: Chaos | None, consumer: StreamConsumer) -> OrderingCounters:
    sent = chaos.counts() if chaos is not None else ChaosCounts()
    kept = consumer.counts()
    return OrderingCounters(
        chaos is not None,
        sent.shuffled,
        sent.duplicated,
        sent.delayed,
        sent.dropped,
        kept.held_back,
        kept.duplicates_dropped,
        kept.stale_dropped,
        kept.gaps,
    )
