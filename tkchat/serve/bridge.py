"""Hand a generation's events from the worker thread to the server's event loop.

A :class:`~tkchat.generate.worker.GenerationWorker` was written for the window, where it
puts events into an :class:`~tkchat.transport.channel.EventChannel` (a ``queue.Queue``)
that Tk polls. Under the server the reader is a coroutine instead, and a coroutine must
never block on a ``queue.Queue``: that would stall the event loop, and with it every other
client. :class:`AsyncEventBridge` looks like a channel to the worker but delivers into an
``asyncio.Queue`` that only the loop touches.

Two threads use one bridge, and each method says which: ``put`` and ``has_room`` run on the
worker thread, ``next_batch`` on the event loop, ``call_soon`` on either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress

from tkchat.events import AppEvent
from tkchat.transport.channel import DEFAULT_HIGH_WATER


class AsyncEventBridge:
    """What a :class:`GenerationWorker` needs of an ``EventChannel`` (``put``, ``has_room``),
    delivering into an ``asyncio.Queue`` on the server's event loop.

    ``put`` runs on the worker thread and never blocks: ``asyncio.Queue`` is not thread-safe,
    so the worker does not touch it; it asks the loop to (``call_soon_threadsafe``). The loop
    side awaits the queue, so no coroutine ever blocks on a thread.

    ``has_room`` gives the worker's sender its backpressure signal, as the in-process channel
    does: when the client reads slowly, sending awaits, events pile up, and the sender starts
    merging text into fewer, larger chunks instead of queueing one event per token.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, high_water: int = DEFAULT_HIGH_WATER
    ) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[AppEvent] = asyncio.Queue()
        self.high_water = high_water
        # Two counters, each written by one thread only, so no lock is needed to compare them.
        self._put = 0  # worker thread
        self._taken = 0  # loop thread

    def put(self, event: AppEvent) -> None:
        """Worker thread. Never blocks."""
        self._put += 1
        self.call_soon(self._queue.put_nowait, event)

    def has_room(self) -> bool:
        """Worker thread. Whether the loop has taken all but a few of the events sent."""
        return self._put - self._taken < self.high_water

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """Any thread. Run ``callback`` on the loop. Dropped if the loop is already closed
        (the server shut down: nobody is left to receive it)."""
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback, *args)

    async def next_batch(self, timeout: float) -> list[AppEvent]:
        """Loop thread. Every event queued now, waiting up to ``timeout`` s for the first;
        ``[]`` if none came. Batching means one socket write for many events in a flood."""
        batch: list[AppEvent] = []
        if self._queue.empty():
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), timeout))
            except asyncio.TimeoutError:
                return batch
        while not self._queue.empty():
            batch.append(self._queue.get_nowait())
        self._taken += len(batch)
        return batch
