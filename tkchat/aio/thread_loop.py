"""Mode ``asyncio-thread`` (the asyncio mode tkchat recommends): a loop on a thread of its own.

The window's main thread runs Tk and nothing else; one asyncio event loop runs for ever on a
daemon thread of its own (:func:`loop_thread`, shared by every window of the process). For
each question the Send handler (main thread) starts an
:class:`~tkchat.aio.answer.AsyncAnswer` on that loop; its coroutine ``async for``s the token
source (:func:`tkchat.aio.sources.token_source`) and hands the text, numbered and ended like
a worker's, to the same channel the 16 ms tick drains (a
:class:`~tkchat.transport.channel.GenerationSender`: text merges into the chunk still
waiting, so a tick still takes one chunk and makes one insert). From the tick on, nothing
differs from the fixed pipeline — the coroutine never touches Tk.

Stop cancels the task (the controller reaches it: ``start_elsewhere``); the task closes its
source, which ends the model loop (or the request), and ends with one ``done`` whose reason
is ``cancelled`` — dropped as stale, the window having ended the answer at Stop.
"""

from __future__ import annotations

import asyncio
import threading

from tkchat.aio.answer import AsyncAnswer
from tkchat.aio.sources import token_source
from tkchat.generate.backend import GenerationRequest
from tkchat.threads import own_thread
from tkchat.transport.channel import GenerationSender
from tkchat.ui.pipeline import FixedPipeline
from tkchat.ui.transcript.transcript import AnswerView

_made = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def loop_thread() -> asyncio.AbstractEventLoop:
    """Any thread: the process's asyncio loop, running on its own daemon thread (started
    the first time it is asked for; it lives as long as the process)."""
    global _loop
    with _made:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            own_thread(_loop.run_forever, name="tkchat-asyncio").start()
        return _loop


class AsyncioThreadPipeline(FixedPipeline):
    """An asyncio task per answer, on the loop's own thread → the channel → one insert per
    16 ms tick (``show``: the fixed pipeline's)."""

    name = "asyncio-thread"
    broken = False
    coalesce = True

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread, from the Send handler: returns at once."""
        controller = self.host.controller
        loop = loop_thread()

        def begin(gen: int) -> AsyncAnswer:
            # used by the loop's thread alone; it keeps token times as a worker's, for a trace
            out = controller.keep_times(GenerationSender(controller.channel, gen))
            answer = AsyncAnswer(gen, token_source(controller, request, gen), out)
            answer.start(loop)
            return answer

        self.host.consumer.follow(controller.start_elsewhere(begin))
