"""Lesson 13 on a real window: events shuffled, duplicated, delayed and lost between the worker
and the window, and what the window makes of them (scripted backend, Xvfb)."""

from __future__ import annotations

import time
import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.cli import build_parser
from tkchat.consume.reorder import GAP_TIMEOUT_S
from tkchat.consume.stream_consumer import TRANSPORT_GAP
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, scripted_tokens
from tkchat.transport.chaos import Chaos

pytestmark = pytest.mark.gui


def finish(root: tk.Tk, app, count: int = 1, timeout: float = 20.0) -> Done | Error:
    pump_until(
        root, lambda: len(app.flow.answering.finished) >= count, timeout, "the answer to finish"
    )
    pump_until(root, lambda: not app.transcript.painter.busy, what="markdown to render")
    return app.flow.answering.finished[count - 1]


def test_under_chaos_the_window_shows_the_answer_once_in_order(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=400), chaos=Chaos(3))
    assert app.flow.send("tell me")
    answer = app.flow.answering.answer
    shown: list[str] = []

    def streamed() -> bool:
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


def test_a_lost_event_ends_the_answer_and_the_next_one_streams(root: tk.Tk, make_app) -> None:
    chaos = Chaos(5)
    # 100 tokens/s: the 3 s deadline comes before the held bound (512 events) would.
    backend = ScriptedBackend(rate=100, tokens=10**6)  # would run for ages unless stopped
    app = make_app(backend, chaos=chaos, sampling=Sampling(max_tokens=0))
    chaos.drop_next(17)
    sent_at = time.monotonic()
    app.flow.send("count to twenty")
    answer, worker = app.flow.answering.answer, app.controller.current
    final = finish(root, app, timeout=GAP_TIMEOUT_S + 10)
    waited = time.monotonic() - sent_at
    assert isinstance(final, Error)
    assert (final.kind, final.seq) == (TRANSPORT_GAP, 17)
    # ended at the deadline, not before it, nor after 10**6 tokens (10,000 s)
    assert GAP_TIMEOUT_S <= waited < 3 * GAP_TIMEOUT_S, "ended at the deadline"
    assert answer.text == "".join(scripted_tokens(SCRIPT)[:16]), "the text before the loss"
    expected = "Event 17 never arrived (lost in transport); the answer was ended."
    assert expected in app.transcript.plain_text()
    assert expected in app.status.get()
    pump_until(root, lambda: not worker.is_alive(), 5, "the unseen answer's model loop to stop")
    assert app.stop_button.instate(["disabled"]) and not app.send_button.instate(["disabled"])
    assert app.demos.ordering_counters().gaps == 1

    backend.tokens = None  # the script once, still through the chaos transport
    app.flow.send("again")
    second = app.flow.answering.answer
    assert isinstance(finish(root, app, 2), Done)
    assert second.text == SCRIPT
    counts = app.demos.ordering_counters()
    assert counts.dropped == 1 and counts.gaps == 1
    assert counts.stale_dropped > 0, "what the lost answer's worker still sent was ignored"


def test_losing_the_last_words_still_ends_the_answer_in_chinese(root: tk.Tk, make_app) -> None:
    """Only the final event is left behind the gap and nothing else ever arrives: the window's
    tick must still look at the buffer, or it would wait forever."""
    chaos = Chaos(8)
    last = len(scripted_tokens(SCRIPT))
    chaos.drop_next(last)
    app = make_app(ScriptedBackend(rate=0), chaos=chaos, language="zh")
    app.flow.send("hi")
    final = finish(root, app, timeout=GAP_TIMEOUT_S + 10)
    assert isinstance(final, Error) and final.seq == last
    assert f"第 {last} 个事件始终没有到达" in app.transcript.plain_text()


def test_stop_under_chaos_keeps_a_clean_partial_answer(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=200), chaos=Chaos(13))
    app.flow.send("one")
    first = app.flow.answering.answer
    pump_until(root, lambda: len(first.text) > 30, what="some text")
    app.flow.stop()
    partial = first.text
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
