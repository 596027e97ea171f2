"""Mode ``asyncio-tk``: an asyncio loop that Tk's own event loop runs, a short step at a time.

No thread of its own: :class:`TkDrivenLoop` arms a named Tk timer (``after()``, through the
window's scheduler) every :attr:`AsyncioTkPipeline.poll_ms`; each time it fires, the asyncio
loop runs for one short step (``run_forever`` until a ``stop`` queued with ``call_soon``: the
callbacks and I/O ready now, then the coroutines they woke, no waiting), then hands back to
Tk. So every coroutine runs on
the main thread, between two Tk events, and may touch Tk — and must never block, or the window
freezes with it (``asyncio-blocking-call``). The model still computes on a worker thread (the
token source's); its tokens reach the loop through ``call_soon_threadsafe`` and wait there
for the next step: up to one poll.

Whatever text the coroutine received within a step is put on screen once, after the step
(:class:`StepOut` collects it): one insert per step, however many tokens. The answer's final
event ends it through the window (``end_answer``), after its last text. Stop cancels the task
(the controller reaches it); the task closes its source — the model loop ends — over the next
steps, and its own final event, ``done`` cancelled, is dropped: the answer ended at Stop.

Main thread only (the worker thread of the source aside).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tkchat.aio.answer import AsyncAnswer, TokenSource
from tkchat.aio.sources import token_source
from tkchat.events import Done, Error, FinishReason, GenerationStats
from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import EndsInTranscript, PipelineHost
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import AnswerView

POLL_MS = 16  # one frame at 60 Hz, as the event pump's tick: a token waits at most one poll
STEP_TIMER = "asyncio-step"  # the Tk timer's name (the trace names what held the loop by it)


class StepOut:
    """An answer's text and final event, as its coroutine gives them (main thread). Text is
    kept until the step ends (:meth:`take`), or handed at once to ``on_text`` when one is
    given (the broken demos, which draw each piece themselves)."""

    def __init__(self, gen: int, on_text: Callable[[str], None] | None = None) -> None:
        self.gen = gen
        self.on_text = on_text
        self.pieces = 0  # pieces of text given
        self.finished = False
        self.final: Done | Error | None = None
        self._pending: list[str] = []

    def text(self, text: str) -> None:
        if not text:
            return
        self.pieces += 1
        if self.on_text is not None:
            self.on_text(text)
        else:
            self._pending.append(text)

    def take(self) -> str:
        """The text given since the last call, as one string."""
        text = "".join(self._pending)
        self._pending.clear()
        return text

    def progress(self, done: int, total: int) -> None:
        """The prompt being read: not shown in this mode (no event travels to the bar)."""

    def done(self, reason: FinishReason, stats: GenerationStats) -> None:
        self._finish(Done(self.gen, self.pieces + 1, reason, stats))

    def error(self, kind: str, message: str, stats: GenerationStats) -> None:
        self._finish(Error(self.gen, self.pieces + 1, kind, message, stats))

    def _finish(self, final: Done | Error) -> None:
        if self.finished:  # the contract: exactly one final event per generation
            raise RuntimeError(f"generation {self.gen} already finished")
        self.finished, self.final = True, final


class TkDrivenLoop:
    """An asyncio loop stepped by the Tk timer :data:`STEP_TIMER` every ``poll_ms``, while
    it has a task (made when an answer starts, closed when its last task has ended, so an
    idle window neither polls nor keeps a loop open). ``after_step()`` runs after each step;
    ``steps`` counts them."""

    def __init__(
        self, scheduler: AfterScheduler, poll_ms: int, after_step: Callable[[], None]
    ) -> None:
        self.scheduler = scheduler
        self.poll_ms = poll_ms
        self.after_step = after_step
        self.loop: asyncio.AbstractEventLoop | None = None
        self.steps = 0

    def open(self) -> asyncio.AbstractEventLoop:
        """The loop (a new one if none is open), its steps armed."""
        if self.loop is None or self.loop.is_closed():
            self.loop = asyncio.new_event_loop()
        self.scheduler.once(STEP_TIMER, self.poll_ms, self._step)
        return self.loop

    def _step(self) -> None:
        """Tk timer: one step of the loop, then what follows it; armed again while a task
        lives, closed once none does."""
        loop = self.loop
        if loop is None:
            return
        try:
            # Two passes, then back to Tk: the callbacks ready now (the tokens the worker
            # handed over), then the coroutines they woke. (``stop`` queued in the first
            # pass ends the second.)
            loop.call_soon(loop.call_soon, loop.stop)
            loop.run_forever()
            self.steps += 1
            self.after_step()
        finally:
            if asyncio.all_tasks(loop):
                self.scheduler.once(STEP_TIMER, self.poll_ms, self._step)
            else:
                loop.call_soon(loop.stop)  # one pass more: the ended tasks' done callbacks
                loop.run_forever()
                loop.close()


class AsyncioTkPipeline(EndsInTranscript):
    """An asyncio task per answer, on the loop Tk steps every :attr:`poll_ms` → one insert
    per step."""

    name = "asyncio-tk"
    broken = False
    coalesce = False  # nothing travels through the channel in this mode
    # How often Tk runs the asyncio loop, ms. A token that reaches the loop waits for the
    # next step to be shown: up to one poll.
    poll_ms = POLL_MS

    def __init__(self, host: PipelineHost) -> None:
        super().__init__(host)
        self.driver = TkDrivenLoop(host.scheduler, self.poll_ms, self._after_step)
        self.view: AnswerView | None = None  # the answer streaming now
        self.out: StepOut | None = None  # what its coroutine gave
        self.inserts = 0  # inserts made after steps (one per step that brought text)

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread, from the Send handler: returns at once."""
        controller = self.host.controller

        def begin(gen: int) -> AsyncAnswer:
            self.out = self.make_out(view, gen)
            answer = AsyncAnswer(gen, self.source(request, gen), self.out)
            answer.start(self.driver.open())
            return answer

        controller.start_elsewhere(begin)
        self.view = view
        self.host.consumer.follow(-1)  # the tick gets nothing: the steps show the text

    def make_out(self, view: AnswerView, gen: int) -> StepOut:
        """Where the answer's coroutine puts its text (kept for the end of the step)."""
        return StepOut(gen)

    def source(self, request: GenerationRequest, gen: int) -> TokenSource:
        return token_source(self.host.controller, request, gen)

    def _after_step(self) -> None:
        """After each step: the step's text in one insert; the final event ends the answer."""
        out, view = self.out, self.view
        if out is None or view is None:
            return  # no answer streams (a stopped one is closing its source)
        text = out.take()
        if text:
            self.show(view, (text,))
        if out.final is not None:
            self.out = self.view = None
            self.host.end_answer(out.final)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.inserts += 1
        self.host.transcript.append(view, "".join(chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        """The answer ended (its final event, Stop, or a failure): nothing more of it shows."""
        self.out = self.view = None
        super().finish(view, stopped=stopped, error=error)
