"""Hand a generation's events from the worker thread to the server's event loop.

A :class:`~tkchat.generate.worker.GenerationWorker` was written for the window, where it
puts events into an :class:`~tkchat.transport.channel.EventChannel` (a ``queue.Queue``)
that Tk polls. Under the server the reader is a coroutine instead, and a coroutine must
never block on a ``queue.Queue``: that would stall the event loop, and with it every other
client. :class:`AsyncEventBridge` looks like a channel to the worker but delivers into an
``asyncio.Queue`` that only the loop touches.

Two threads use one bridge, and each method says which: ``put`` runs on the worker thread,
``put_local`` and ``next_batch`` on the event loop, ``call_soon`` on either. Before the
worker exists, the line (:mod:`~tkchat.serve.line`) puts the request's place into the same
queue, so the response reads one stream of news from first to last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress

from tkchat.events import AppEvent, QueuePlace
from tkchat.transport.channel import Queued, delivered


class AsyncEventBridge:
    """What a :class:`GenerationWorker` needs of an ``EventChannel`` (``put``), delivering
    into an ``asyncio.Queue`` on the server's event loop.

    ``put`` runs on the worker thread and never blocks: ``asyncio.Queue`` is not thread-safe,
    so the worker does not touch it; it asks the loop to (``call_soon_threadsafe``). The loop
    side awaits the queue, so no coroutine ever blocks on a thread.

    Coalescing works as in the window: while the client reads slowly, the chunk the worker
    put last is still in the queue, and new text is added to it (see
    :class:`~tkchat.transport.channel.OpenChunk`), so a slow reader gets fewer, larger
    chunks instead of one event per token.
    """

    coalesce = True

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[Queued | QueuePlace] = asyncio.Queue()

    def put(self, event: Queued) -> None:
        """Worker thread. Never blocks."""
        self.call_soon(self._queue.put_nowait, event)

    def put_local(self, place: QueuePlace) -> None:
        """Loop thread. The request's place in the line, while it waits."""
        self._queue.put_nowait(place)

    def call_soon(self, callback: Callable[..., object], *args: object) -> None:
        """Any thread. Run ``callback`` on the loop. Dropped if the loop is already closed
        (the server shut down: nobody is left to receive it)."""
        with suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback, *args)

    async def next_batch(self, timeout: float) -> list[AppEvent | QueuePlace]:
        """Loop thread. Every event queued now, waiting up to ``timeout`` s for the first;
        ``[]`` if none came. Batching means one socket write for many events in a flood."""
        batch: list[AppEvent | QueuePlace] = []
        if self._queue.empty():
            try:
                batch.append(_delivered(await asyncio.wait_for(self._queue.get(), timeout)))
            except asyncio.TimeoutError:
                return batch
        while not self._queue.empty():
            batch.append(_delivered(self._queue.get_nowait()))
        return batch


def _delivered(item: Queued | QueuePlace) -> AppEvent | QueuePlace:
    return item if isinstance(item, QueuePlace) else delivered(item)
