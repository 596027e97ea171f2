"""Restores ``seq`` order for one generation.

In-process the queue already keeps order; over HTTP, retries or several producers can
deliver events out of order. The buffer holds early arrivals and releases the longest run
that starts at the next expected ``seq``; duplicates (a ``seq`` already released or already
held) are dropped, so replayed events can never print text twice.
"""

from __future__ import annotations

from tkchat.events import GenerationEvent


class ReorderBuffer:
    def __init__(self, first_seq: int = 1) -> None:
        self.next_seq = first_seq
        self._held: dict[int, GenerationEvent] = {}
        self.dropped = 0

    def push(self, event: GenerationEvent) -> list[GenerationEvent]:
        """Add one event; return the events now ready, in ``seq`` order."""
        if event.seq < self.next_seq or event.seq in self._held:
            self.dropped += 1
            return []
        self._held[event.seq] = event
        ready: list[GenerationEvent] = []
        while self.next_seq in self._held:
            ready.append(self._held.pop(self.next_seq))
            self.next_seq += 1
        return ready

    @property
    def waiting(self) -> int:
        """How many events are held back, waiting for a gap to fill."""
        return len(self._held)
