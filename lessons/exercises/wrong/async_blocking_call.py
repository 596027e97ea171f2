"""A typical wrong asyncio solution: a blocking call inside the coroutine.

The loop runs on a thread of its own, as it should, and ``start`` returns at once: the window
stays smooth. But ``relay`` does not ``async for`` the async source: it iterates the model's
*synchronous* stream itself, and ``next()`` on it computes a token without ever awaiting. The
task never gives its loop back until the answer is whole — so the loop cannot even deliver
Stop's cancel: the model computes the whole answer after Stop. (``await
asyncio.to_thread(next, stream)``, or the async source, would have given the loop back.)

Predict which checks fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/async_blocking_call.py:Pipeline``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

from tkchat.aio.answer import AsyncAnswer, GeneratorSource
from tkchat.aio.thread_loop import loop_thread
from tkchat.generate.backend import GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.transport.channel import GenerationSender
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "async-blocking-call"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.loop = loop_thread()

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller

        def begin(gen: int) -> AsyncAnswer:
            out = GenerationSender(controller.channel, gen)
            answer = AsyncAnswer(gen, GeneratorSource(self.relay(request)), out)
            answer.start(self.loop)
            return answer

        self.host.consumer.follow(controller.start_elsewhere(begin))

    async def relay(self, request: GenerationRequest) -> AsyncIterator[str]:
        controller = self.host.controller
        assembler = Utf8Assembler()
        with controller.model_lock:
            # THE MISTAKE: a blocking iteration inside a coroutine: no await, so the loop
            # (and the cancel Stop sends through it) waits for the whole answer.
            for piece in controller.backend.stream(request, threading.Event()):
                if isinstance(piece, PromptProgress):
                    continue
                text = assembler.feed(piece)
                if text:
                    yield text

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
