"""Lesson 13 on a real window: events shuffled, duplicated, delayed and lost between the worker
and the window, and what the window makes of them (scripted backend, Xvfb).

The answers are stepped by the test (``ScriptedBackend(gate=TokenGate())``), and the window's
reorder buffer reads a clock the test moves (``StreamConsumer(clock=)``): a lost event ends
the answer when the clock passes the gap deadline, not when the machine gets round to it.
"""

from __future__ import annotations

import functools
import tkinter as tk
from collections.abc import Iterator

import pytest

from tests.conftest import pump_until
from tkchat.cli import build_parser
from tkchat.consume.reorder import GAP_TIMEOUT_S
from tkchat.consume.stream_consumer import TRANSPORT_GAP, StreamConsumer
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, scripted_tokens
from tkchat.transport.chaos import Chaos
from tkchat.ui.window import chat_window

pytestmark = pytest.mark.gui


class Clock:
    """The reorder buffer's clock, moved by hand; ``reads`` counts how often it was asked (the
    buffer asks at each tick while it waits for a missing event)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    """Every window made in this test reads this clock for its gap deadline."""
    made = Clock()
    monkeypatch.setattr(
        chat_window, "StreamConsumer", functools.partial(StreamConsumer, clock=made)
    )
    yield made


def stuck_at(root: tk.Tk, app, clock: Clock, shown: str) -> None:
    """Until the answer shows ``shown`` (the text before the gap) with events held behind the
    gap, and two more ticks have checked the deadline with the clock not moved: nothing ends
    before it."""
    answer = app.flow.answering.answer
    pump_until(
        root,
        lambda: answer.text == shown and app.consumer.waiting > 0,
        what="the text before the gap, and events held behind it",
    )
    seen = clock.reads
    pump_until(root, lambda: clock.reads >= seen + 2, what="two ticks checking the deadline")
    assert not app.flow.answering.finished, "ended before the deadline"


def finish(root: tk.Tk, app, count: int = 1, timeout: float = 20.0) -> Done | Error:
    pump_until(
        root, lambda: len(app.flow.answering.finished) >= count, timeout, "the answer to finish"
    )
    pump_until(root, lambda: not app.transcript.painter.busy, what="markdown to render")
    return app.flow.answering.finished[count - 1]


def test_under_chaos_the_window_shows_the_answer_once_in_order(root: tk.Tk, make_app) -> None:
    gate = TokenGate()
    app = make_app(ScriptedBackend(rate=0, gate=gate), chaos=Chaos(3))
    assert app.flow.send("tell me")
    answer = app.flow.answering.answer
    shown: list[str] = []

    def streamed() -> bool:  # one more token each turn of the loop: the answer takes many ticks
        gate.release(1)
        if not shown or shown[-1] != answer.text:
            shown.append(answer.text)
        return bool(app.flow.answering.finished)

    pump_until(root, streamed, what="the answer to finish")
    final = finish(root, app)
    assert isinstance(final, Done) and final.reason == "stop"
    assert answer.text == SCRIPT  # every word once, in order
    assert len(shown) > 5, "it streamed over many ticks"
    assert all(SCRIPT.startswith(text) for text in shown), "the screen never showed disorder"
    counts = app.demos.ordering_counters()
    assert counts.chaos_on
    assert counts.shuffled > 0 and counts.duplicated > 0 and counts.delayed > 0
    assert counts.dropped == 0 and counts.gaps == 0
    assert counts.held_back > 0, "the reorder buffer had work to do"
    assert counts.duplicates_dropped > 0, "and dropped the replays"


def test_a_lost_event_ends_the_answer_at_the_deadline_and_the_next_one_streams(
    root: tk.Tk, make_app, clock: Clock
) -> None:
    chaos = Chaos(5)
    gate = TokenGate()
    backend = ScriptedBackend(rate=0, tokens=10**6, gate=gate)  # goes on until stopped
    app = make_app(backend, chaos=chaos, sampling=Sampling(max_tokens=0))
    chaos.drop_next(17)
    app.flow.send("count to twenty")
    answer, worker = app.flow.answering.answer, app.controller.current
    gate.release(40)  # event 17 is lost; 18 to 40 are held behind it
    before = "".join(scripted_tokens(SCRIPT)[:16])
    stuck_at(root, app, clock, before)
    clock.now += GAP_TIMEOUT_S
    final = finish(root, app)
    assert isinstance(final, Error)
    assert (final.kind, final.seq) == (TRANSPORT_GAP, 17)
    assert answer.text == before, "the text before the loss, and nothing after it"
    expected = "Event 17 never arrived (lost in transport); the answer was ended."
    assert expected in app.transcript.plain_text()
    assert expected in app.status.get()
    # Stop reached the model: its loop, waiting for its next token, ended
    pump_until(root, lambda: not worker.is_alive(), 30, "the unseen answer's model loop to stop")
    assert app.stop_button.instate(["disabled"]) and not app.send_button.instate(["disabled"])
    assert app.demos.ordering_counters().gaps == 1

    backend.tokens, backend.gate = None, None  # the script once, still through chaos
    app.flow.send("again")
    second = app.flow.answering.answer
    assert isinstance(finish(root, app, 2), Done)
    assert second.text == SCRIPT
    counts = app.demos.ordering_counters()
    assert counts.dropped == 1 and counts.gaps == 1
    assert counts.stale_dropped > 0, "what the lost answer's worker still sent was ignored"


def test_losing_the_last_words_still_ends_the_answer_in_chinese(
    root: tk.Tk, make_app, clock: Clock
) -> None:
    """Only the final event is left behind the gap and nothing else ever arrives: the window's
    tick must still look at the buffer, or it would wait forever."""
    chaos = Chaos(8)
    last = len(scripted_tokens(SCRIPT))
    chaos.drop_next(last)
    app = make_app(ScriptedBackend(rate=0), chaos=chaos, language="zh")
    app.flow.send("hi")
    stuck_at(root, app, clock, "".join(scripted_tokens(SCRIPT)[: last - 1]))
    clock.now += GAP_TIMEOUT_S
    final = finish(root, app)
    assert isinstance(final, Error) and final.seq == last
    assert f"第 {last} 个事件始终没有到达" in app.transcript.plain_text()


def test_stop_under_chaos_keeps_a_clean_partial_answer(root: tk.Tk, make_app) -> None:
    gate = TokenGate()
    backend = ScriptedBackend(rate=0, gate=gate)
    app = make_app(backend, chaos=Chaos(13))
    app.flow.send("one")
    first = app.flow.answering.answer
    gate.release(20)
    pump_until(root, lambda: len(first.text) > 30, what="some text")
    app.flow.stop()
    partial = first.text
    backend.gate = None
    app.flow.send("two")
    second = app.flow.answering.answer
    assert isinstance(finish(root, app), Done)
    assert SCRIPT.startswith(partial) and first.text == partial
    assert second.text == SCRIPT


def test_chaos_can_be_switched_off_for_the_next_answer(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), chaos=Chaos(1))
    app.flow.send("with chaos")
    finish(root, app)
    before = app.demos.ordering_counters()
    app.demos.set_chaos(None)
    app.flow.send("without")
    assert isinstance(finish(root, app, 2), Done)
    assert app.transcript.answers[-1].text == SCRIPT
    after = app.demos.ordering_counters()
    assert not after.chaos_on
    assert after.held_back == before.held_back, "straight through: nothing waited"


def test_the_command_line_flag() -> None:
    assert build_parser().parse_args(["--chaos", "7"]).chaos == 7
    assert build_parser().parse_args([]).chaos is None
