"""BROKEN ON PURPOSE — ``asyncio-blocking-call``: a coroutine that calls a blocking function.

The loop is Tk's own (``asyncio-tk``: a Tk timer steps it every 16 ms) and the coroutine
``async for``s its source — but the source is an async generator that iterates the model's
synchronous token iterator itself, under the model lock, as ``blocking`` does. ``next()`` on
it computes a token and never awaits, so nothing gives the loop back: the whole answer is
computed inside one step, on the loop's thread, which is Tk's main thread. The window freezes
for the answer and then shows it at once. ``await asyncio.to_thread(next, stream)`` — or the
worker thread of :mod:`tkchat.aio.local_source` — would have kept the model off the loop.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator

from tkchat.aio.answer import GeneratorSource, TokenSource
from tkchat.aio.tk_loop import AsyncioTkPipeline
from tkchat.generate.backend import GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler


class CallTheModelInACoroutine(AsyncioTkPipeline):
    name = "asyncio-blocking-call"
    broken = True

    def source(self, request: GenerationRequest, gen: int) -> TokenSource:
        return GeneratorSource(self.tokens(request))

    async def tokens(self, request: GenerationRequest) -> AsyncGenerator[str, None]:
        """Loop thread (Tk's): the answer's text, computed right here."""
        controller = self.host.controller
        assembler = Utf8Assembler()
        with controller.model_lock:  # waits for the model, on Tk's thread
            # THE MISTAKE: a blocking iteration inside a coroutine, with no await around it:
            # the model computes each token right here, on the loop's (Tk's) thread.
            for piece in controller.backend.stream(request, threading.Event()):
                if isinstance(piece, PromptProgress):
                    continue  # not a token, and this demo has no bar
                text = assembler.feed(piece)
                if text:
                    yield text
