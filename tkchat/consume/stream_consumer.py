"""One tick of consumption: drained events in, one text append (and maybe an end) out."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tkchat.consume.reorder import GAP_TIMEOUT_S, MAX_HELD, ReorderBuffer
from tkchat.events import (
    AppEvent,
    Chunk,
    Error,
    FinalEvent,
    LoadEvent,
    ModelFailed,
    ModelLoading,
    ModelReady,
    Progress,
)

# The kind of the error the consumer itself ends an answer with when an event never came.
# Its ``seq`` is the missing event's: the error takes the place of what was lost. The window
# shows its own translated sentence for this kind (``app.transport_gap``).
TRANSPORT_GAP = "transport_gap"


@dataclass(frozen=True, slots=True)
class TickResult:
    chunks: tuple[str, ...]  # new text of the current generation, chunk by chunk, in order
    final: FinalEvent | None  # the generation's done/error, if it arrived (after the text)
    app_events: tuple[LoadEvent, ...]  # model loading news, in order
    stale: int  # events of other generations, dropped
    # how far the prompt has been read: the latest progress of this tick, if any came
    progress: Progress | None = None

    @property
    def text(self) -> str:
        """All new text, to append with one insert (what the fixed pipeline does)."""
        return "".join(self.chunks)


@dataclass(frozen=True, slots=True)
class ConsumerCounts:
    """What keeping order has cost so far, summed over every generation this consumer
    followed (lesson 13's live figures; all zero while nothing arrives out of order)."""

    held_back: int = 0  # events that arrived early and waited for an earlier one
    duplicates_dropped: int = 0  # events whose seq had already arrived
    stale_dropped: int = 0  # events of another generation, or after the answer ended
    gaps: int = 0  # answers ended because an event never arrived


class StreamConsumer:
    """Follows the current generation; everything else is stale and dropped.

    Consumer thread only (Tk's main thread in the app). ``max_held``, ``gap_timeout_s`` and
    ``clock`` bound each generation's :class:`ReorderBuffer`.
    """

    def __init__(
        self,
        *,
        max_held: int = MAX_HELD,
        gap_timeout_s: float = GAP_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.gen: int | None = None
        self._max_held, self._gap_timeout_s, self._clock = max_held, gap_timeout_s, clock
        self._reorder = self._new_buffer()
        self.finished = True
        self._past = ConsumerCounts()  # the buffers of earlier generations, summed
        self._stale = 0
        self._gaps = 0

    def _new_buffer(self) -> ReorderBuffer:
        return ReorderBuffer(
            max_held=self._max_held, gap_timeout_s=self._gap_timeout_s, clock=self._clock
        )

    def follow(self, gen: int) -> None:
        """From now on only ``gen`` counts: a stopped answer can never leak into this one."""
        old = self._reorder
        self._past = ConsumerCounts(
            self._past.held_back + old.held_total,
            self._past.duplicates_dropped + old.dropped,
        )
        self.gen = gen
        self._reorder = self._new_buffer()
        self.finished = False

    def accept(self, events: list[AppEvent]) -> TickResult:
        """One tick's events (possibly none: a tick also checks whether an event the buffer
        waits for is overdue, and if so ends the answer with a ``transport_gap`` error)."""
        parts: list[str] = []
        final: FinalEvent | None = None
        app_events: list[LoadEvent] = []
        progress: Progress | None = None
        stale = 0
        for event in events:
            if isinstance(event, (ModelLoading, ModelReady, ModelFailed)):
                app_events.append(event)
                continue
            if event.gen != self.gen or self.finished:
                stale += 1
                continue
            for ready in self._reorder.push(event):
                if isinstance(ready, Chunk):
                    parts.append(ready.text)
                elif isinstance(ready, Progress):
                    progress = ready  # only the latest matters to a progress bar
                else:
                    final = ready
                    self.finished = True
                    break
        if not self.finished and self.gen is not None:
            lost = self._reorder.expire()
            if lost is not None:
                final = Error(self.gen, lost.seq, TRANSPORT_GAP, lost.message)
                self.finished = True
                self._gaps += 1
        self._stale += stale
        return TickResult(tuple(parts), final, tuple(app_events), stale, progress)

    @property
    def waiting(self) -> int:
        """Events held back right now (the pump keeps ticking the consumer while there are)."""
        return self._reorder.waiting

    def counts(self) -> ConsumerCounts:
        """Consumer thread (or any, for a figure: the ints are read as they are)."""
        return ConsumerCounts(
            self._past.held_back + self._reorder.held_total,
            self._past.duplicates_dropped + self._reorder.dropped,
            self._stale,
            self._gaps,
        )
