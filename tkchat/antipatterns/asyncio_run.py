"""BROKEN ON PURPOSE — ``asyncio-run``: ``asyncio.run()`` inside the Send handler.

The source is right: an async iterator whose model computes on a worker thread
(:mod:`tkchat.aio.local_source`). But the Send handler "awaits" it the only way a plain
function can: ``asyncio.run(...)``, which runs an event loop right there, on the Tk main
thread, until the whole answer is in. ``await`` does not give the thread back to Tk — it
gives it to *that* loop, which knows nothing of Tk. Each chunk is inserted and the widget
redrawn (``update_idletasks``), so the text streams; but no click, key, scroll or Stop is
handled until the answer ends, and the heartbeat clock stands still: ``blocking`` again,
written with ``async``.
"""

from __future__ import annotations

import asyncio

from tkchat.aio.answer import AsyncAnswer
from tkchat.aio.sources import token_source
from tkchat.aio.tk_loop import StepOut
from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import EndsInTranscript
from tkchat.ui.transcript.transcript import AnswerView


class AwaitInSendHandler(EndsInTranscript):
    name = "asyncio-run"
    broken = True
    coalesce = False
    thread: int | None = None  # the thread the last answer's coroutine ran on

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread — and it stays here, in ``asyncio.run``, until the answer is whole."""
        controller = self.host.controller
        gen = controller.new_gen()
        self.host.consumer.follow(-1)  # no event travels: the handler writes the text itself
        out = StepOut(gen, on_text=lambda text: self._draw(view, text))
        answer = AsyncAnswer(gen, token_source(controller, request, gen), out)
        # THE MISTAKE: a loop run to the end inside the Tk event handler; Tk waits for it.
        asyncio.run(answer.run_here())
        self.thread = answer.thread
        assert out.final is not None  # (the task always ends with one)
        self.host.end_answer(out.final)

    def _draw(self, view: AnswerView, text: str) -> None:
        self.host.transcript.append(view, text)
        self.host.redraw()  # redraws the text; handles no input

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: no events travel, the handler wrote the text itself."""
