"""The local model as an async token source: the model computes on a thread, never on the loop.

An asyncio loop must not run the model itself: a token takes milliseconds of CPU with no
``await`` in between, so every other coroutine on that loop (and, in ``asyncio-tk``, the
whole window) would wait for the answer. :class:`LocalModelTokens` therefore runs the model
where tkchat always runs it, on a :class:`~tkchat.generate.worker.GenerationWorker` thread
made by the controller (same model lock, same UTF-8 assembly, stop strings and limits), and
hands its events to the loop through :class:`LoopSink`, with
``loop.call_soon_threadsafe``: the only asyncio call that may come from another thread.

Threads: :class:`LoopSink` is called on the worker thread; everything else runs on the loop's
thread. Closing the iterator (``aclose``, which the consumer's ``async with aclosing(...)``
does on Stop, that is on a cancelled task) cancels the worker and waits, without blocking the
loop, for its final event: the worker sends it after it has left the model loop, so once
``aclose`` returns, the model has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from tkchat.aio.answer import SourceFailed
from tkchat.events import AppEvent, Chunk, Done, Error, FinishReason, GenerationStats, Progress
from tkchat.generate.backend import GenerationRequest, PromptProgress
from tkchat.generate.controller import GenerationController
from tkchat.generate.worker import GenerationWorker
from tkchat.transport.channel import Queued, delivered


class LoopSink:
    """Where the worker puts its events: onto ``deliver``, called on the loop's thread. No
    coalescing: each token's text travels as its own chunk, a step of the async iterator."""

    coalesce = False

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[AppEvent], None]):
        self._loop = loop
        self._deliver = deliver

    def put(self, event: Queued) -> None:
        """Worker thread."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody will read it
            self._loop.call_soon_threadsafe(self._deliver, delivered(event))


class LocalModelTokens:
    """The answer of ``controller``'s model to ``request``, as an async iterator of text.
    The worker starts at the first ``__anext__``. Loop thread."""

    def __init__(
        self, controller: GenerationController, request: GenerationRequest, gen: int
    ) -> None:
        self.controller = controller
        self.request = request
        self.gen = gen
        self.worker: GenerationWorker | None = None
        self.reason: FinishReason = "stop"
        self.stats: GenerationStats | None = None
        self._events: asyncio.Queue[AppEvent] = asyncio.Queue()
        self._final: Done | Error | None = None

    @property
    def prompt_tokens(self) -> int:
        """The worker's (once it has fitted the chat into the context)."""
        return self.worker.prompt_tokens if self.worker is not None else 0

    @property
    def context_dropped(self) -> int:
        return self.worker.context_dropped if self.worker is not None else 0

    def __aiter__(self) -> LocalModelTokens:
        return self

    async def __anext__(self) -> str | PromptProgress:
        if self.worker is None:
            sink = LoopSink(asyncio.get_running_loop(), self._events.put_nowait)
            self.worker = self.controller.new_worker(self.request, sink, self.gen)
            self.worker.start()
        while self._final is None:
            event = await self._events.get()  # waits without holding the loop
            if isinstance(event, Chunk):
                return event.text
            if isinstance(event, Progress):  # the prompt being read (the worker paced them)
                return PromptProgress(event.done, event.total)
            if isinstance(event, (Done, Error)):
                self._final = event
        if isinstance(self._final, Error):
            raise SourceFailed(self._final.kind, self._final.message)
        self.reason, self.stats = self._final.reason, self._final.stats
        raise StopAsyncIteration

    def interrupt(self) -> None:
        """Any thread: the model leaves its loop within a token (the worker's cancel is an
        Event); :meth:`aclose`, on the loop, then waits for its final event."""
        worker = self.worker  # None: not begun, and the task's cancel will find it so
        if worker is not None:
            worker.cancel()

    async def aclose(self) -> None:
        """Stop the model, and return once its loop has ended (its final event came)."""
        if self.worker is None or self._final is not None:
            return
        self.worker.cancel()  # it leaves the model loop within one token
        while self._final is None:
            event = await self._events.get()
            if isinstance(event, (Done, Error)):
                self._final = event
