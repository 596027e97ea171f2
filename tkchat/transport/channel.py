"""The in-process transport: a thread-safe queue, plus producer-side coalescing.

A fast producer (5,000 tokens/s) and a UI that drains 60 times a second meet here. When the
UI keeps up, each token travels as its own ``chunk``. When the queue backs up (the UI is busy,
or frozen by a broken mode), the sender stops adding events and instead grows one pending
chunk, so the queue holds at most ``high_water`` events plus the final flush and the final
event: memory is bounded by the answer text itself, not by the number of tokens.
"""

from __future__ import annotations

import queue
from collections.abc import Callable

from tkchat.events import AppEvent, Chunk, Done, Error, FinishReason, GenerationStats

DEFAULT_HIGH_WATER = 256
UNBOUNDED = 1 << 62  # no coalescing: every token travels alone (the broken demos)


class EventChannel:
    """A ``queue.Queue`` of events. ``put`` from any thread; ``drain`` from the consumer's."""

    def __init__(self, high_water: int = DEFAULT_HIGH_WATER) -> None:
        self._queue: queue.SimpleQueue[AppEvent] = queue.SimpleQueue()
        self.high_water = high_water

    def put(self, event: AppEvent) -> None:
        """Any thread. Never blocks."""
        self._queue.put(event)

    def has_room(self) -> bool:
        """Whether a producer may add another chunk without piling up (approximate, cheap)."""
        return self._queue.qsize() < self.high_water

    def qsize(self) -> int:
        return self._queue.qsize()

    def drain(self, limit: int | None = None) -> list[AppEvent]:
        """Consumer thread. Take what is queued now (at most ``limit``) without waiting."""
        items: list[AppEvent] = []
        get = self._queue.get_nowait
        while limit is None or len(items) < limit:
            try:
                items.append(get())
            except queue.Empty:
                break
        return items

    def get(self, timeout: float | None = None) -> AppEvent:
        """Block until an event arrives (for consumers without an event loop, e.g. ``raw``)."""
        return self._queue.get(timeout=timeout)


class GenerationSender:
    """Numbers one generation's events and coalesces chunks when the channel backs up.

    Used by exactly one worker thread. ``seq`` counts the events actually sent, so the
    consumer sees 1, 2, 3, ... with no gaps even when several tokens were merged into one chunk.
    """

    def __init__(self, channel: EventChannel, gen: int) -> None:
        self.channel = channel
        self.gen = gen
        self._seq = 0
        self._pending: list[str] = []
        self.finished = False

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def text(self, text: str) -> None:
        """Queue ``text`` now if the channel has room, otherwise hold it for the next chunk."""
        if not text:
            return
        self._pending.append(text)
        if self.channel.has_room():
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.channel.put(Chunk(self.gen, self._next_seq(), "".join(self._pending)))
            self._pending.clear()

    def done(self, reason: FinishReason, stats: GenerationStats) -> None:
        self._finish(lambda seq: Done(self.gen, seq, reason, stats))

    def error(self, kind: str, message: str, stats: GenerationStats) -> None:
        self._finish(lambda seq: Error(self.gen, seq, kind, message, stats))

    def _finish(self, make: Callable[[int], Done | Error]) -> None:
        if self.finished:  # the contract: exactly one final event per generation
            raise RuntimeError(f"generation {self.gen} already finished")
        self.flush()
        self.finished = True
        self.channel.put(make(self._next_seq()))
