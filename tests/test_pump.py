"""The 16 ms pump survives a failing tick: the answer ends with the error shown, the pump
keeps running, and the next answer streams as usual. (A pump that re-armed only after a good
tick stopped for good at the first exception, while the heartbeat kept saying "alive".)"""

from __future__ import annotations

import logging
import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.events import Done
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.ui.transcript.transcript import AnswerView

pytestmark = pytest.mark.gui


def test_a_failing_tick_ends_the_answer_and_the_pump_goes_on(
    root: tk.Tk, make_app, caplog: pytest.LogCaptureFixture
) -> None:
    gate = TokenGate()  # the first answer: five tokens, then it waits (the app must stop it)
    app = make_app(ScriptedBackend(gate=gate))
    pipeline = app.flow.answering.pipeline
    real_show = pipeline.show
    failures = []

    def show_that_fails_once(view: AnswerView, chunks: tuple[str, ...]) -> None:
        if not failures:
            failures.append(chunks)
            raise RuntimeError("a bug in a tick")
        real_show(view, chunks)

    pipeline.show = show_that_fails_once
    app.flow.send("first")
    worker = app.controller.current
    assert worker is not None
    gate.release(5)
    pump_until(
        root, lambda: bool(failures) and app.flow.answering.answer is None, what="the failing tick"
    )
    assert "a bug in a tick" in app.status.get()
    assert "RuntimeError: a bug in a tick" in app.transcript.plain_text()
    assert app.pump.failures == 1
    # the worker was stopped, not left running: it leaves the gate's wait for its 6th token
    assert worker.join(10) and worker.cancelled_at is not None and gate.passed <= 5
    assert not app.controller.is_generating()
    assert app.stop_button.instate(["disabled"]) and app.send_button.instate(["!disabled"])

    finished = len(app.flow.answering.finished)
    gate.release(10**6)
    app.flow.send("second")
    pump_until(root, lambda: len(app.flow.answering.finished) > finished, what="the next answer")
    assert (
        isinstance(app.flow.answering.finished[-1], Done)
        and app.flow.answering.finished[-1].reason == "stop"
    )
    assert app.transcript.answers[-1].text == ScriptedBackend().text
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(logged) == 1 and "tick failed" in logged[0].getMessage()
    caplog.clear()  # the one expected error (the root fixture fails a test on any other)


def test_a_tick_failing_every_time_is_logged_once_per_answer(
    root: tk.Tk, make_app, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(ScriptedBackend(rate=0))

    def always_fails(_view: AnswerView, _chunks: tuple[str, ...]) -> None:
        raise ValueError("broken for good")

    app.flow.answering.pipeline.show = always_fails
    app.flow.send("one")
    pump_until(
        root, lambda: app.pump.failures >= 1 and app.flow.answering.answer is None, what="a failure"
    )
    beats = app.health.beats
    pump_until(root, lambda: app.health.beats > beats, timeout=3, what="the heartbeat")
    ticks = app.pump.events
    app.flow.send("two")
    pump_until(
        root, lambda: app.pump.failures >= 2 and app.flow.answering.answer is None, what="again"
    )
    assert app.pump.events > ticks  # the pump still drains
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2  # once per answer, not once per tick
    caplog.clear()
