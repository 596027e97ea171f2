"""BROKEN ON PURPOSE — ``asyncio-blocking-call``: a coroutine that calls a blocking function.

The loop is Tk's own (``asyncio-tk``: a Tk timer steps it every 16 ms) and the coroutine
``async for``s its source — but the source is the model's synchronous token iterator wrapped
in an ``async def __anext__`` that calls ``next()`` on it directly, under the model lock, as
``blocking`` does. Nothing in it ever awaits, so nothing ever gives the loop back: the whole
answer is computed inside one step, on the loop's thread, which is Tk's main thread. The
window freezes for the answer and then shows it at once. ``await asyncio.to_thread(next,
stream)`` — or the worker thread of :mod:`tkchat.aio.local_source` — would have kept the
model off the loop.
"""

from __future__ import annotations

import threading

from tkchat.aio.answer import TokenSource
from tkchat.aio.tk_loop import AsyncioTkPipeline
from tkchat.events import FinishReason, GenerationStats
from tkchat.generate.backend import GenerationRequest, PromptProgress, TokenStream
from tkchat.generate.controller import GenerationController
from tkchat.generate.worker import Utf8Assembler


class ModelIteratedInTheCoroutine:
    """A :class:`~tkchat.aio.answer.TokenSource` in name only: each ``__anext__`` computes
    the next token itself. Loop thread (Tk's)."""

    def __init__(self, controller: GenerationController, request: GenerationRequest) -> None:
        self.controller = controller
        self.request = request
        self.reason: FinishReason = "stop"
        self.stats: GenerationStats | None = None
        self._stream: TokenStream | None = None
        self._holds_lock = False
        self._assembler = Utf8Assembler()

    def __aiter__(self) -> ModelIteratedInTheCoroutine:
        return self

    async def __anext__(self) -> str:
        if self._stream is None:
            self.controller.model_lock.acquire()  # waits for the model, on Tk's thread
            self._holds_lock = True
            self._stream = self.controller.backend.stream(self.request, threading.Event())
        while True:
            try:
                # THE MISTAKE: a blocking call inside a coroutine, with no await around it:
                # the model computes a token right here, on the loop's (Tk's) thread.
                piece = next(self._stream)
            except StopIteration as end:
                self.reason = end.value or "stop"
                await self.aclose()
                raise StopAsyncIteration from None
            if isinstance(piece, PromptProgress):
                continue  # not a token, and this demo has no bar
            text = self._assembler.feed(piece)
            if text:
                return text

    async def aclose(self) -> None:
        if self._stream is not None:
            self._stream.close()  # the model loop ends
        if self._holds_lock:
            self._holds_lock = False
            self.controller.model_lock.release()


class CallTheModelInACoroutine(AsyncioTkPipeline):
    name = "asyncio-blocking-call"
    broken = True

    def source(self, request: GenerationRequest, gen: int) -> TokenSource:
        return ModelIteratedInTheCoroutine(self.host.controller, request)
