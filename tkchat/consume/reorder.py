"""Restores ``seq`` order for one generation, and gives up on an event that never comes.

In-process the queue already keeps order; over a longer path (a network that reorders,
retries that replay, the chaos transport of lesson 13) events can arrive out of order, twice,
or not at all. The buffer holds early arrivals and releases the longest run that starts at
the next expected ``seq``; duplicates (a ``seq`` already released or already held) are
dropped, so replayed events can never print text twice.

A missing event must not stall the answer forever, nor let the buffer grow without limit
while the producer keeps going. So the buffer is bounded twice:

- ``max_held``: early arrivals it will hold. One more, and the missing event is declared lost.
- ``gap_timeout_s``: how long it may be stuck (events held, none released) before the missing
  event is declared lost. Time comes from ``clock`` (``time.monotonic`` unless a test passes
  its own), read on the consumer's thread.

Declared lost, the buffer records a :class:`LostEvent` in ``lost``, lets go of what it held,
and ignores everything after: the consumer ends the answer with an error in its place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tkchat.events import GenerationEvent

# Real reordering resolves within a few events and milliseconds; the chaos transport holds an
# event back for at most about ten. These bounds are far above both, and still end a real
# loss quickly: in three seconds, or after 512 later events in a flood of them.
MAX_HELD = 512
GAP_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class LostEvent:
    """The event the buffer gave up on. ``why``: "deadline" (stuck ``waited_s`` seconds) or
    "overflow" (``max_held`` later events were already held)."""

    seq: int
    held: int  # later events that were waiting for it
    waited_s: float
    why: Literal["deadline", "overflow"]

    @property
    def message(self) -> str:
        """For people who read English (logs, the server, tests); the window translates."""
        return f"event {self.seq} never arrived (lost in transport); the answer was ended"


class ReorderBuffer:
    """One generation's reorder buffer. Consumer thread only."""

    def __init__(
        self,
        first_seq: int = 1,
        *,
        max_held: int = MAX_HELD,
        gap_timeout_s: float = GAP_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_held < 1:
            raise ValueError("max_held must be at least 1")
        self.next_seq = first_seq
        self.max_held = max_held
        self.gap_timeout_s = gap_timeout_s
        self._clock = clock
        self._held: dict[int, GenerationEvent] = {}
        self._stuck_since: float | None = None  # when the buffer last made progress, if held
        self.dropped = 0  # duplicates
        self.held_total = 0  # events that had to wait for an earlier one
        self.lost: LostEvent | None = None

    def push(self, event: GenerationEvent) -> list[GenerationEvent]:
        """Add one event; return the events now ready, in ``seq`` order."""
        if self.lost is not None:
            return []  # the answer was given up; what still arrives is too late
        if event.seq < self.next_seq or event.seq in self._held:
            self.dropped += 1
            return []
        if event.seq > self.next_seq:
            if len(self._held) >= self.max_held:
                self._give_up("overflow")
                return []
            self._held[event.seq] = event
            self.held_total += 1
            if self._stuck_since is None:
                self._stuck_since = self._clock()
            return []
        ready = [event]
        self.next_seq += 1
        while self.next_seq in self._held:
            ready.append(self._held.pop(self.next_seq))
            self.next_seq += 1
        # Progress: a gap still open behind this run is timed from now.
        self._stuck_since = self._clock() if self._held else None
        return ready

    def expire(self) -> LostEvent | None:
        """Consumer thread, once per tick, after the tick's events were pushed: if the buffer
        has been stuck for ``gap_timeout_s``, give the missing event up. Returns the event
        given up (now or earlier, by either bound), or None."""
        stuck_since = self._stuck_since
        if stuck_since is not None and self._clock() - stuck_since >= self.gap_timeout_s:
            self._give_up("deadline")
        return self.lost

    def _give_up(self, why: Literal["deadline", "overflow"]) -> None:
        waited = 0.0 if self._stuck_since is None else self._clock() - self._stuck_since
        self.lost = LostEvent(self.next_seq, len(self._held), waited, why)
        self._held.clear()  # nothing held is ever released now: free it
        self._stuck_since = None

    @property
    def waiting(self) -> int:
        """How many events are held back, waiting for a gap to fill."""
        return len(self._held)
