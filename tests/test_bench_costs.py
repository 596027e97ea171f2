"""What each instrument costs the fixed window, in the bench (issue 38): the plain window and
the shipped one less one instrument at a time, measured in turn with the fixed answers.

The table is arithmetic on constructed figures; the turns are a stand-in bench's; and each
row's window is a real one: its instruments really are off (no sampler thread, the health
bar's timers not armed, CPython's switch interval, the kernel's default slice, an answer put
on screen as it arrived with nothing painted), and back on after it. No clock."""

from __future__ import annotations

import sys
import tkinter as tk
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.bench.figures import RunFigures
from tkchat.lab.bench.scenarios.costs import (
    CPYTHON_SWITCH_INTERVAL_S,
    PLAIN,
    ROWS,
    SETUPS,
    as_shipped,
    cost_answers,
    cost_rows,
    set_up,
)
from tkchat.lab.window import Instruments, PlainConsumer, TkLabWindow
from tkchat.threads import GUI_SWITCH_INTERVAL_S, short_slices, slice_ns
from tkchat.ui.pipeline import FixedPipeline
from tkchat.ui.teaching import loop_witness


def _row(mode: str, p99: float, most: float) -> RunFigures:
    return RunFigures(mode=mode, backend="llama", lag_p99_ms=p99, lag_max_ms=most, long_tasks=0)


RUN = [
    _row("idle", 0.5, 1.0),
    _row("raw", 0.0, 0.0),
    _row("fixed", 2.0, 10.0),
    _row("fixed-unsampled", 1.0, 5.0),
    _row("fixed-stages", 2.2, 11.0),
    _row(PLAIN, 1.0, 4.0),
    _row("fixed-no-health", 2.0, 8.0),
    _row("fixed-5ms-switch", 2.5, 10.0),
    _row("fixed-default-slice", 2.0, 12.5),
    _row("fixed-plain-text", 1.6, 10.0),
]


def test_the_table_has_idle_plain_fixed_and_each_instrument_left_out() -> None:
    rows = {row.mode: row.as_json() for row in cost_rows(RUN)}
    assert list(rows) == ["idle", PLAIN, "fixed", "fixed-unsampled", *ROWS[1:]]
    fixed, sampler = rows["fixed"], rows["fixed-unsampled"]
    assert (fixed["p99_x_idle"], fixed["max_x_idle"]) == (4.0, 10.0)
    assert (fixed["p99_x_plain"], fixed["max_x_plain"]) == (2.0, 2.5)
    # the sampler: fixed's lag twice what it is without it
    assert sampler["leaves_out"] == "the loop sampler"
    assert (sampler["cost_p99_x"], sampler["cost_max_x"]) == (2.0, 2.0)
    assert rows["fixed-5ms-switch"]["cost_p99_x"] == 0.8  # the fast switch helps p99 here
    assert rows["fixed-plain-text"]["cost_p99_x"] == 1.25
    assert rows["fixed-default-slice"]["cost_max_x"] == 0.8  # the short slice helps max here
    assert "cost_p99_x" not in rows[PLAIN] and rows[PLAIN]["p99_x_plain"] == 1.0
    assert cost_rows([r for r in RUN if r.mode != PLAIN]) == []  # no plain row: no table


def test_each_repeat_turns_the_order_and_the_window_is_shipped_again_after_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tkchat.lab.bench.scenarios import costs

    done: list[str] = []
    monkeypatch.setattr(costs, "set_up", lambda tools, setup: done.append(f"set {setup.row}"))
    monkeypatch.setattr(costs, "as_shipped", lambda tools: done.append("shipped"))

    def stream_once(mode: str, sampling: object, result: dict[str, Any], *, row: str) -> Any:
        done.append(f"answer {mode} as {row}")
        return iter(())

    tools = object.__new__(Instruments)
    bench: Any = SimpleNamespace(
        app=SimpleNamespace(instruments=tools), sampling=None, stream_once=stream_once
    )
    results: dict[str, list[Any]] = {}
    for repeat in range(2):
        list(cost_answers(bench, repeat, results))
    first = [f"set {r}" for r in ROWS]
    assert done[:3] == [first[0], f"answer fixed as {ROWS[0]}", "shipped"]
    assert [line for line in done if line.startswith("set")] == first + first[1:] + first[:1]
    assert done.count("shipped") == 2 * len(ROWS)
    assert {row: len(answers) for row, answers in results.items()} == dict.fromkeys(ROWS, 2)


@pytest.mark.gui
def test_the_plain_row_turns_every_instrument_off_and_back_on(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_witness, "CHECK_MS", 10)  # the witness looks every 10 ms
    markdown = "# A heading\n\nSome **bold** text.\n\n" + "x" * 5000 + "\n\n- one\n- two\n"
    app = make_app(ScriptedBackend(rate=0, text=markdown))
    tools = TkLabWindow(app).instruments
    assert tools is not None
    pump_until(root, lambda: tools.sampler.running, what="the shipped window's sampler")
    painted = len(tools.slice_ms())
    short, default = _slices()
    set_up(tools, SETUPS[0])
    pump_until(root, lambda: not tools.sampler.running, what="the sampler to stop")
    assert not tools.health_running and not app.scheduler.pending("heartbeat")
    assert sys.getswitchinterval() == CPYTHON_SWITCH_INTERVAL_S and slice_ns() == default
    assert isinstance(tools.pipeline, PlainConsumer)
    app.flow.send("Hi")
    pump_until(root, lambda: len(app.flow.answering.finished) == 1, what="the answer")
    pump_until(root, lambda: not tools.painting, what="nothing left to paint")
    answer = app.transcript.answers[-1]
    assert answer.job is None and not answer.rendered and answer.text == markdown
    assert len(tools.slice_ms()) == painted  # not one markdown slice
    assert markdown in tools.shown_text()  # as it arrived: no line ends added to 5,000 x's
    assert not tools.sampler.running  # all along (the witness looked every 10 ms)
    as_shipped(tools)
    assert tools.health_running and sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S
    assert slice_ns() == short
    assert isinstance(tools.pipeline, FixedPipeline)
    pump_until(root, lambda: tools.sampler.running, what="the sampler back")
    app.flow.send("Again")
    pump_until(root, lambda: len(app.flow.answering.finished) == 2, what="the second answer")
    pump_until(root, lambda: not tools.painting, what="its painting")
    assert len(tools.slice_ms()) > painted and app.transcript.answers[-1].rendered


@pytest.mark.gui
def test_each_fixed_row_leaves_out_its_one_instrument(root: tk.Tk, make_app: Any) -> None:
    app = make_app(ScriptedBackend(rate=0))
    tools = TkLabWindow(app).instruments
    assert tools is not None
    short, default = _slices()
    seen: dict[str, tuple[bool, bool, float, int | None, bool]] = {}
    for setup in SETUPS[1:]:
        set_up(tools, setup)
        seen[setup.row] = (
            tools.sampler.running,
            tools.health_running,
            sys.getswitchinterval(),
            slice_ns(),
            tools.consuming_plainly,
        )
        as_shipped(tools)
        assert slice_ns() == short
    fast = GUI_SWITCH_INTERVAL_S
    assert seen == {
        "fixed-no-health": (True, False, fast, short, False),
        "fixed-5ms-switch": (True, True, CPYTHON_SWITCH_INTERVAL_S, short, False),
        "fixed-default-slice": (True, True, fast, default, False),
        "fixed-plain-text": (True, True, fast, short, True),
    }


def _slices() -> tuple[int | None, int | None]:
    """The main thread's slice as the window asks for it, and the kernel's default (the same
    where the kernel has no custom slices: tests/test_gil_handoff.py checks the difference)."""
    short_slices(True)
    short = slice_ns()
    short_slices(False)
    return short, slice_ns()
