"""One answer as an asyncio task: ``async for`` over a token source, out as the event contract.

:class:`AsyncAnswer` is what the asyncio modes start for each question. Its coroutine runs on
whichever thread runs the asyncio loop it is given (the loop's own thread in ``asyncio-thread``,
Tk's main thread in ``asyncio-tk``); it ``async for``s a :class:`TokenSource` and hands each
piece of text to an :class:`AnswerOut` — the window's channel through a
:class:`~tkchat.transport.channel.GenerationSender`, or a step's buffer — and ends it with
exactly one final event, whatever happens:

- the source ran out: ``done`` with the source's reason and figures;
- the source failed: ``error``;
- the task was cancelled (Stop): the source is closed first — which ends its model loop, or
  its request — and then ``done`` with reason ``cancelled``; also when the cancel came
  before the coroutine had even begun (:meth:`AsyncAnswer._ended`).

It is also what Stop and the live figures reach: :class:`AsyncAnswer` has the shape of
:class:`~tkchat.generate.controller.Running` (``cancel``, ``is_alive``, ``join`` and the
counts a stopped answer's figures are made of), so the controller cancels it as it cancels a
worker (:meth:`~tkchat.generate.controller.GenerationController.start_elsewhere`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Protocol

from tkchat.events import FinishReason, GenerationStats
from tkchat.generate.backend import PromptProgress
from tkchat.limits import cut
from tkchat.transport.channel import GenerationSender


class SourceFailed(Exception):
    """A token source could not go on: ``kind`` names why (as an ``error`` event's kind),
    the message says it for people."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class TokenSource(Protocol):
    """An async iterator of an answer's text, a token's at a time, and of how far the prompt
    has been read (:class:`~tkchat.generate.backend.PromptProgress`, before the first text;
    a source may send none). Once it has run out, ``reason`` says why and ``stats`` holds its
    figures (None: it has none of its own). ``aclose`` ends it early and returns once what
    produced the tokens has stopped (a model's loop, a server's request). It raises
    :class:`SourceFailed` when it fails. ``prompt_tokens`` and ``context_dropped``: as a
    worker's (0 when the source does not know them)."""

    reason: FinishReason
    stats: GenerationStats | None

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def context_dropped(self) -> int: ...

    def __aiter__(self) -> AsyncIterator[str | PromptProgress]: ...

    async def __anext__(self) -> str | PromptProgress: ...

    async def aclose(self) -> None: ...

    def interrupt(self) -> None:
        """Any thread, at once: ask what produces the tokens to stop now, if it can be asked
        from outside the loop (a model's worker can: its cancel is an Event). Stop calls it
        before the task's cancel, which reaches the coroutine only at the loop's next turn —
        16 ms away in ``asyncio-tk``, and the model would go on until then."""


class GeneratorSource:
    """An async generator of text as a :class:`TokenSource` (it ends with reason ``stop``;
    closing it closes the generator). Loop thread."""

    prompt_tokens = 0
    context_dropped = 0
    # The generator computes its text where it runs: on the loop's thread (the pipeline view
    # draws that work where it is, on the main thread when Tk steps the loop).
    computes_on_loop = True

    def __init__(self, tokens: AsyncGenerator[str, None]) -> None:
        self.tokens = tokens
        self.reason: FinishReason = "stop"
        self.stats: GenerationStats | None = None

    def __aiter__(self) -> GeneratorSource:
        return self

    async def __anext__(self) -> str:
        return await self.tokens.__anext__()

    async def aclose(self) -> None:
        await self.tokens.aclose()

    def interrupt(self) -> None:
        """Nothing to ask from outside: the generator stops when it is closed."""


class AnswerOut(Protocol):
    """Where an answer's text and its one final event go (a
    :class:`~tkchat.transport.channel.GenerationSender` has this shape). The coroutine's
    thread calls it; ``finished`` is True once the final event went."""

    finished: bool

    def text(self, text: str) -> None: ...

    def progress(self, done: int, total: int) -> None: ...

    def done(self, reason: FinishReason, stats: GenerationStats) -> None: ...

    def error(self, kind: str, message: str, stats: GenerationStats) -> None: ...


class AsyncAnswer:
    """One generation as a task on ``loop``. Made and started (:meth:`start`) on any thread;
    its coroutine runs on the loop's thread; :meth:`cancel`, :meth:`is_alive` and
    :meth:`join` may be called from any thread."""

    def __init__(self, gen: int, source: TokenSource, out: AnswerOut) -> None:
        self.gen = gen
        self.source = source
        self.out = out
        self.tokens = 0  # pieces of text the source gave (a token's text each)
        self.first_token_at: float | None = None
        self.last_token_at: float | None = None
        self.last_text = ""  # the latest piece of text (the pipeline view shows it)
        # Its source computes the text on the loop's thread (the view draws it there).
        self.computes_on_loop = bool(getattr(source, "computes_on_loop", False))
        self.started_at: float | None = None
        self.cancelled_at: float | None = None
        self.exited_at: float | None = None  # the task ended: its source is closed
        self.thread: int | None = None  # the thread that ran the coroutine
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ended = threading.Event()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Any thread: the task is made on the loop's own thread, at its next turn."""
        self._loop = loop
        self.started_at = time.perf_counter()
        loop.call_soon_threadsafe(self._begin)

    async def run_here(self) -> None:
        """Loop thread: start on the running loop, and return once the task has ended."""
        self.start(asyncio.get_running_loop())
        await asyncio.sleep(0)  # ``_begin``, queued first, makes the task
        await self._until_ended(None)

    def _begin(self) -> None:
        """Loop thread."""
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._task.add_done_callback(self._ended_now)

    async def _run(self) -> None:
        """Loop thread: the answer, token by token; a cancel (Stop) closes the source first."""
        self.thread = threading.get_ident()
        try:
            async with aclosing(self.source) as tokens:  # closed on every way out
                async for item in tokens:
                    if isinstance(item, PromptProgress):
                        self.out.progress(item.done, item.total)
                        continue
                    self._count()
                    self.last_text = item
                    self.out.text(item)
            self.out.done(self.source.reason, self.source.stats or self._stats())
        except SourceFailed as exc:
            self.out.error(cut(exc.kind, 40), cut(str(exc)), self._stats())
        except asyncio.CancelledError:
            self.out.done("cancelled", self._stats())  # after the source was closed
            raise
        except Exception as exc:  # the contract holds even for a bug in a source
            self.out.error(type(exc).__name__, cut(f"{type(exc).__name__}: {exc}"), self._stats())

    def _ended_now(self, task: asyncio.Task[None]) -> None:
        """Loop thread, the task done. A task cancelled before its coroutine began never ran
        ``_run``: it began no source, and its final event is sent here."""
        if not self.out.finished:
            self.out.done("cancelled", self._stats())
        self.exited_at = time.perf_counter()
        self._ended.set()

    def _count(self) -> None:
        self.tokens += 1
        self.last_token_at = time.perf_counter()
        if self.first_token_at is None:
            self.first_token_at = self.last_token_at

    def _stats(self) -> GenerationStats:
        """The answer's figures as this task saw them, for a source that has none of its own
        (a server's stream): the count, the time to the first text and the speed from the
        first to the last, as a worker measures them."""
        now = time.perf_counter()
        began = self.started_at or now
        first, last = self.first_token_at, self.last_token_at
        ttft_ms = None if first is None else (first - began) * 1000
        speed = None
        if first is not None and last is not None and self.tokens > 1 and last > first:
            speed = (self.tokens - 1) / (last - first)
        return GenerationStats(
            tokens=self.tokens,
            ttft_ms=ttft_ms,
            tokens_per_s=speed,
            elapsed_s=now - began,
            finished_at=now,
            prompt_tokens=self.source.prompt_tokens,
            context_dropped=self.source.context_dropped,
        )

    # -- what Stop and the live figures reach (Running) ----------------------------------------

    @property
    def prompt_tokens(self) -> int:
        return self.source.prompt_tokens

    @property
    def context_dropped(self) -> int:
        return self.source.context_dropped

    @property
    def sender(self) -> GenerationSender | None:
        """The channel's sender it hands its text to (``asyncio-thread``), else None."""
        return self.out if isinstance(self.out, GenerationSender) else None

    def cancel(self) -> None:
        """Any thread: cancel the task (on its loop's thread, at its next turn)."""
        loop = self._loop
        if loop is None or self._ended.is_set() or self.cancelled_at is not None:
            return
        self.cancelled_at = time.perf_counter()
        self.source.interrupt()  # the model stops now; the task is closed at its next turn
        with contextlib.suppress(RuntimeError):  # closed: nothing runs on that loop any more
            loop.call_soon_threadsafe(self._cancel_task)

    def _cancel_task(self) -> None:
        """Loop thread. (Queued after ``_begin``: the task exists.)"""
        if self._task is not None:
            self._task.cancel()

    def is_alive(self) -> bool:
        return self._loop is not None and not self._ended.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the task has ended. A loop that is not running now (``asyncio-tk``'s,
        between two steps, on this very thread) is run meanwhile: no other thread would."""
        loop = self._loop
        if loop is None:
            return True
        idle = not loop.is_running()
        if idle and not loop.is_closed() and not self._ended.is_set():
            loop.run_until_complete(self._until_ended(timeout))
        return self._ended.wait(0 if idle else timeout)

    async def _until_ended(self, timeout: float | None) -> None:
        """Loop thread. (``_begin`` was queued before this: the task exists.)"""
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=timeout)
