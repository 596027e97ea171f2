"""The in-process transport: a ``queue.Queue`` of events, and coalescing at the producer.

A fast producer (5,000 tokens/s) and a UI that drains 60 times a second meet here. Sending
one event per token would make the queue as long as the UI is late, and memory grow with the
number of tokens. So the sender merges instead: while the chunk it put last is still waiting
in the queue (the consumer has not taken it yet), new text is added to that same chunk. A chunk
leaves the queue once per consumer tick, carrying everything that arrived since the last one.

- When the UI keeps up with a slow model, each token still travels at once, alone.
- In a flood, or while the UI is busy, the queue holds about one chunk: memory is bounded by
  the answer text itself, and no text waits for a later token to be sent (it is already in
  the queue, just growing).
- ``seq`` is given when a chunk is first queued and merging never changes it, so the consumer
  sees 1, 2, 3, ... with no gaps.

The deliberately broken demos turn merging off (``coalesce = False``): every token travels
alone, as a naive pipeline would send it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

from tkchat.events import AppEvent, Chunk, Done, Error, FinishReason, GenerationStats, Progress


class OpenChunk:
    """A chunk still waiting in a queue: its sender may add text until a consumer takes it.

    ``add`` runs on the sender's thread, ``take`` on the consumer's; the lock makes "added"
    and "taken" exclusive, so no text is added after the consumer read the chunk."""

    __slots__ = ("gen", "seq", "_parts", "_taken", "_lock")

    def __init__(self, gen: int, seq: int, text: str) -> None:
        self.gen = gen
        self.seq = seq
        self._parts = [text]  # a list, not str +=: a chunk growing during a freeze stays linear
        self._taken = False
        self._lock = threading.Lock()

    def add(self, text: str) -> bool:
        """Sender thread. Add ``text``; False once the chunk was taken (send a new one)."""
        with self._lock:
            if self._taken:
                return False
            self._parts.append(text)
            return True

    def take(self) -> Chunk:
        """Consumer thread. The chunk as it is now; nothing can be added after this."""
        with self._lock:
            self._taken = True
            return Chunk(self.gen, self.seq, "".join(self._parts))

    @property
    def pieces(self) -> int:
        return len(self._parts)

    @property
    def waiting(self) -> int:
        """Any thread: the pieces in this chunk while it waits in the queue (0 once taken)."""
        return 0 if self._taken else len(self._parts)


Queued = AppEvent | OpenChunk


def delivered(item: Queued) -> AppEvent:
    """What a consumer sees of a queued item: an open chunk is closed and becomes a Chunk."""
    return item.take() if isinstance(item, OpenChunk) else item


class EventSink(Protocol):
    """Where a sender puts events: the in-process channel, or the server's bridge."""

    coalesce: bool

    def put(self, event: Queued) -> None: ...


class EventChannel:
    """A ``queue.Queue`` of events. ``put`` from any thread; ``drain`` from the consumer's.

    ``coalesce``: may senders merge text into a chunk that is still waiting? (The window sets
    it per answer: the broken demos turn it off.)"""

    def __init__(self, *, coalesce: bool = True) -> None:
        self._queue: queue.Queue[Queued] = queue.Queue()
        self.coalesce = coalesce

    def put(self, event: Queued) -> None:
        """Any thread. Never blocks (the queue has no size limit; merging bounds it)."""
        self._queue.put(event)

    def qsize(self) -> int:
        return self._queue.qsize()

    def drain(self, limit: int | None = None) -> list[AppEvent]:
        """Consumer thread. Take what is queued now (at most ``limit``) without waiting."""
        items: list[AppEvent] = []
        get = self._queue.get_nowait
        while limit is None or len(items) < limit:
            try:
                items.append(delivered(get()))
            except queue.Empty:
                break
        return items

    def get(self, timeout: float | None = None) -> AppEvent:
        """Block until an event arrives (for consumers without an event loop, e.g. ``raw``)."""
        return delivered(self._queue.get(timeout=timeout))


class GenerationSender:
    """Numbers one generation's events and merges text into the chunk still waiting.

    Used by exactly one worker thread. ``pieces`` counts the pieces of text it was given and
    ``chunks`` the chunk events it sent: in a flood, ``chunks`` is far below ``pieces``.
    """

    def __init__(self, sink: EventSink, gen: int) -> None:
        self.sink = sink
        self.gen = gen
        self.coalesce = sink.coalesce
        self._seq = 0
        self._open: OpenChunk | None = None  # the last chunk sent, while it may still grow
        self.pieces = 0
        self.chunks = 0
        self.finished = False
        self.last = ""  # the latest piece of text given (the pipeline view shows it)
        # When each piece was given, if someone keeps them (a trace: see tkchat/trace/).
        self.times: deque[float] | None = None

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def text(self, text: str) -> None:
        """Add ``text`` to the chunk still waiting in the queue, or send it as a new chunk."""
        if not text:
            return
        self.pieces += 1
        self.last = text
        if self.times is not None:
            self.times.append(time.perf_counter())
        if self._open is not None and self._open.add(text):
            return
        self.chunks += 1
        if self.coalesce:
            self._open = OpenChunk(self.gen, self._next_seq(), text)
            self.sink.put(self._open)
        else:
            self.sink.put(Chunk(self.gen, self._next_seq(), text))

    @property
    def waiting_pieces(self) -> int:
        """Any thread: the pieces merged into the chunk still waiting in the queue."""
        chunk = self._open
        return 0 if chunk is None else chunk.waiting

    def event(self, make: Callable[[int], AppEvent]) -> None:
        """Send another kind of event (numbered); text after it goes into a new chunk."""
        self._open = None
        self.sink.put(make(self._next_seq()))

    def progress(self, done: int, total: int) -> None:
        """How far the prompt has been read: ``done`` of ``total`` tokens."""
        gen = self.gen
        self.event(lambda seq: Progress(gen, seq, done, total))

    def done(self, reason: FinishReason, stats: GenerationStats) -> None:
        self._finish(lambda seq: Done(self.gen, seq, reason, stats))

    def error(self, kind: str, message: str, stats: GenerationStats) -> None:
        self._finish(lambda seq: Error(self.gen, seq, kind, message, stats))

    def _finish(self, make: Callable[[int], Done | Error]) -> None:
        if self.finished:  # the contract: exactly one final event per generation
            raise RuntimeError(f"generation {self.gen} already finished")
        self.finished = True
        self.event(make)
