"""A typical wrong asyncio solution: ``asyncio.run()`` in ``start``, on Tk's main thread.

``relay`` is right, and the model computes on its worker thread. But ``start`` runs the
answer with ``asyncio.run(...)``: an event loop right there, in the Send handler, until the
whole answer is in. ``await`` gives the thread to *that* loop, which knows nothing of Tk: the
text is drawn (a redraw per piece), and no click, key, scroll or Stop is handled meanwhile.

Predict which checks fail, then run:
``tkchat selftest --mode lessons/exercises/wrong/async_run_in_start.py:Pipeline --tokens 1000``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

from tkchat.aio.answer import AsyncAnswer, GeneratorSource, TokenSource
from tkchat.aio.sources import token_source
from tkchat.aio.tk_loop import StepOut
from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "async-run-in-start"
    broken = False
    coalesce = False

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        controller = self.host.controller
        gen = controller.new_gen()
        self.host.consumer.follow(-1)  # no event travels: the text is drawn right here
        out = StepOut(gen, on_text=lambda text: self.draw(view, text))
        tokens = token_source(controller, request, gen)
        answer = AsyncAnswer(gen, GeneratorSource(self.relay(tokens)), out)
        # THE MISTAKE: a loop run to the answer's end inside the Send handler; Tk waits.
        asyncio.run(answer.run_here())
        assert out.final is not None
        self.host.end_answer(out.final)

    async def relay(self, tokens: TokenSource) -> AsyncIterator[str]:
        async with aclosing(tokens):
            async for text in tokens:
                yield text

    def draw(self, view: AnswerView, text: str) -> None:
        self.host.transcript.append(view, text)
        self.host.redraw()  # the text appears; no input is handled

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: no events travel."""

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
