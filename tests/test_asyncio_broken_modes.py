"""What each broken asyncio mode does wrong, in the real window, counted — and that it ends
its answer by itself (the mechanism, never a duration):

- ``asyncio-run``: the Send handler runs an event loop to the end: the whole answer was on
  screen before the handler returned, its coroutine ran on the main thread;
- ``asyncio-render``: each chunk the coroutine receives re-renders the whole answer;
- ``asyncio-blocking-call``: the coroutine iterates the model itself: the model ran on the
  main thread, the whole answer within one step of the loop;
- ``asyncio-slow-poll``: Tk steps the loop every 200 ms: on a scheduler whose clock the test
  moves a frame (16 ms) at a time with a token each frame, the text comes in far fewer,
  bigger inserts than frames — where ``asyncio-tk`` inserts once a frame.
"""

from __future__ import annotations

import dataclasses
import tkinter as tk
from collections.abc import Callable
from typing import Any

import pytest

from tests import test_broken_modes
from tests.chat_flow_doubles import ManualScheduler
from tests.conftest import pump_until
from tests.test_broken_modes import (
    MAIN,
    TEXT,
    TOKENS,
    Stepped,
    click_send,
    count_redraws,
    finish,
    parsed_texts,
)
from tkchat.aio.answer import AsyncAnswer
from tkchat.aio.tk_loop import POLL_MS, STEP_TIMER, AsyncioTkPipeline
from tkchat.antipatterns.asyncio_slow_poll import SLOW_POLL_MS
from tkchat.events import Done
from tkchat.modes import ASYNCIO_TK, BROKEN_MODES
from tkchat.ui.pump import TICK_MS

pytestmark = pytest.mark.gui
stepped_app = test_broken_modes.stepped_app  # the fixture: a window on a stepped answer
ASYNCIO_DEMOS = ("asyncio-run", "asyncio-render", "asyncio-blocking-call", "asyncio-slow-poll")


def test_the_asyncio_demos_are_broken_modes() -> None:
    assert set(ASYNCIO_DEMOS) <= set(BROKEN_MODES)
    assert SLOW_POLL_MS > 10 * POLL_MS


def test_asyncio_run_has_the_whole_answer_on_screen_before_the_handler_returns(
    stepped_app: Callable[[str], tuple[Any, Stepped]],
) -> None:
    app, backend = stepped_app("asyncio-run")
    redraws = count_redraws(app)
    backend.release_all()
    events = app.pump.events
    click_send(app)
    # No Tk loop has run since the click, and the answer has ended: inside the handler,
    assert len(app.flow.answering.finished) == 1
    assert app.transcript.answers[-1].text == backend.text
    pipeline = app.flow.answering.pipeline
    assert pipeline.thread == MAIN  # in the loop asyncio.run ran there, on the main thread,
    assert MAIN not in backend.threads  # while the model ran on a worker (it was not that)
    assert redraws.count == len(TOKENS) and app.pump.events == events  # no event travelled


def test_asyncio_render_renders_the_whole_answer_once_per_chunk(
    root: tk.Tk,
    stepped_app: Callable[[str], tuple[Any, Stepped]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, backend = stepped_app("asyncio-render")
    parsed = parsed_texts(monkeypatch)
    click_send(app)  # returns at once: a step of the loop will run the coroutine
    answer = app.controller.elsewhere
    assert isinstance(answer, AsyncAnswer)
    assert finish(root, app, backend) == TEXT
    assert answer.thread == MAIN and MAIN not in backend.threads
    chunks = answer.out.pieces  # type: ignore[attr-defined]
    assert len(parsed) == chunks == len(TOKENS)  # a whole-answer render per chunk
    assert parsed == [len("".join(TOKENS[: k + 1])) for k in range(len(TOKENS))]


def test_asyncio_blocking_call_runs_the_model_loop_on_the_main_thread(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]]
) -> None:
    app, backend = stepped_app("asyncio-blocking-call")
    backend.release_all()
    inserts = app.transcript.inserts
    click_send(app)
    assert finish(root, app, backend) == TEXT
    assert set(backend.threads) == {MAIN}  # every token computed on Tk's thread
    assert app.transcript.inserts - inserts == 1  # the whole answer within one step


@pytest.mark.parametrize(
    ("mode", "poll_ms"), [("asyncio-slow-poll", SLOW_POLL_MS), (ASYNCIO_TK, POLL_MS)]
)
def test_a_slow_poll_brings_the_text_in_bursts(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], mode: str, poll_ms: int
) -> None:
    """A token each frame; the loop's steps come on a scheduler whose clock the test moves,
    a frame (the pump's 16 ms) at a time: every token that arrived since the last step goes
    on screen in the step's one insert."""
    app, backend = stepped_app(mode)
    backend.text = TEXT * 4  # 64 tokens
    timers = ManualScheduler()
    app.pipelines.host = dataclasses.replace(app.pipeline_host, scheduler=timers)
    click_send(app)  # the first answer makes the mode's pipeline: on the test's scheduler
    pipeline = app.flow.answering.pipeline
    assert isinstance(pipeline, AsyncioTkPipeline) and pipeline.poll_ms == poll_ms
    due, _ = timers.pending[STEP_TIMER]
    assert due - timers.now_ms == poll_ms  # the timer's interval: the mode's poll
    answer = app.controller.elsewhere
    assert isinstance(answer, AsyncAnswer)
    while answer.source.worker is None:  # type: ignore[attr-defined]
        timers.run_due()  # the first steps start the task, which starts the worker
    frames = 48
    inserts = app.transcript.inserts
    for _ in range(frames):
        backend.step(1)  # a token; it waits on the loop for a step
        timers.run_due()  # a frame passes
    made = app.transcript.inserts - inserts
    steps = frames * TICK_MS // poll_ms  # steps that came within those frames (± one)
    assert steps <= made <= steps + 1
    backend.release_all()
    for _ in range(10_000):  # (a bound: a bug must fail the test, not hang it)
        if app.flow.answering.answer is None:
            break
        timers.run_due()
    assert isinstance(app.flow.answering.finished[-1], Done)
    assert app.transcript.answers[-1].text == backend.text


@pytest.mark.parametrize("mode", ASYNCIO_DEMOS)
def test_each_asyncio_demo_ends_its_answer_by_itself(
    root: tk.Tk, stepped_app: Callable[[str], tuple[Any, Stepped]], mode: str
) -> None:
    app, backend = stepped_app(mode)
    backend.release_all()
    app.flow.send("the same prompt")
    assert finish(root, app, backend) == TEXT
    # its thread, if it has one, returns after posting the final event
    pump_until(root, lambda: not app.controller.is_generating(), what="the run to end")
