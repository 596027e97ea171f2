"""Exercise, asyncio: stream an answer with ``async``/``await`` without freezing the window.

Copy this file (``cp lessons/exercises/async_pipeline_template.py mine_async.py``), fill in
``start`` and ``relay``, and run it:

    tkchat --mode mine_async.py:Pipeline --backend scripted --rate 2000
    tkchat selftest --mode mine_async.py:Pipeline

The instructions are in ``lessons/exercises/README.en.md`` (中文: ``README.zh.md``), section
"The same exercise with asyncio". What the template gives you:

- ``self.loop``: an asyncio event loop that runs on a thread of its own (not Tk's);
- ``token_source(controller, request, gen)``: the model's answer as an *async* iterator of
  text — the model computes on a worker thread, and awaiting the next token never holds the
  loop;
- ``AsyncAnswer``: runs one answer as a task on a loop (``answer.start(loop)``), hands each
  piece of text to ``out`` (the window's channel: the 16 ms tick shows it) and ends it with
  exactly one final event; Stop cancels the task (``controller.start_elsewhere``).

Only the main thread may touch Tk: the coroutine never does. ``show`` and ``finish`` are done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing  # noqa: F401  (you will want it in relay)

from tkchat.aio.answer import AsyncAnswer, GeneratorSource, TokenSource  # noqa: F401
from tkchat.aio.sources import token_source  # noqa: F401
from tkchat.aio.thread_loop import loop_thread
from tkchat.generate.backend import GenerationRequest
from tkchat.transport.channel import GenerationSender  # noqa: F401
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "mine-async"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.loop = loop_thread()  # an asyncio loop, running on a thread of its own

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Send was pressed (main thread). TODO: make ``begin(gen)`` build the answer —
        ``AsyncAnswer(gen, GeneratorSource(self.relay(tokens)), out)``, with
        ``tokens = token_source(controller, request, gen)`` and
        ``out = GenerationSender(controller.channel, gen)`` — start it on ``self.loop``
        (*not* here: this thread is Tk's), and return it."""
        controller = self.host.controller

        def begin(gen: int) -> AsyncAnswer:
            raise NotImplementedError("start(): see the TODO in its docstring")

        self.host.consumer.follow(controller.start_elsewhere(begin))

    async def relay(self, tokens: TokenSource) -> AsyncIterator[str]:
        """The loop's thread: each piece of text of ``tokens``, as it comes. TODO: ``async
        for`` over ``tokens`` and ``yield`` each text, and close ``tokens`` on every way out
        (``async with aclosing(tokens)``: Stop cancels the task, and closing the source is
        what ends the model loop). Never call anything here that blocks."""
        raise NotImplementedError("relay(): see the TODO in its docstring")
        yield ""  # (unreached: it makes this function an async generator)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))  # all of this tick: one insert

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
