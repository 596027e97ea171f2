"""A reference solution to ``async_pipeline_template.py`` (try the exercise before reading it).

- the coroutine runs on the asyncio loop of a thread of its own (``answer.start(self.loop)``),
  never on Tk's main thread: the Send handler returns at once;
- ``relay`` only awaits: ``async for`` gives the loop back between tokens (the model computes
  on its worker thread), so Stop's cancel reaches the task at once;
- ``async with aclosing(tokens)`` closes the source on every way out — Stop's cancel
  included — and closing it ends the model loop;
- the text goes to the window's channel; the 16 ms tick shows it with one insert (``show``).

``tkchat selftest --mode lessons/exercises/async_pipeline_solution.py:Pipeline`` grades it PASS.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from tkchat.aio.answer import AsyncAnswer, GeneratorSource, TokenSource
from tkchat.aio.sources import token_source
from tkchat.aio.thread_loop import loop_thread
from tkchat.generate.backend import GenerationRequest
from tkchat.transport.channel import GenerationSender
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "async-solution"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.loop = loop_thread()  # an asyncio loop, running on a thread of its own

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller

        def begin(gen: int) -> AsyncAnswer:
            tokens = token_source(controller, request, gen)
            out = GenerationSender(controller.channel, gen)
            answer = AsyncAnswer(gen, GeneratorSource(self.relay(tokens)), out)
            answer.start(self.loop)  # the task is made on the loop's thread; returns at once
            return answer

        self.host.consumer.follow(controller.start_elsewhere(begin))

    async def relay(self, tokens: TokenSource) -> AsyncIterator[str]:
        async with aclosing(tokens):  # closed on every way out: the model loop ends
            async for text in tokens:  # waits without holding the loop
                yield text

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
