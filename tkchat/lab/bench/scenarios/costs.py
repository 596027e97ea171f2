"""What each instrument costs the fixed window (issue 38): a plain baseline, and the shipped
window with one instrument left out at a time, in every run of the fixed pipeline.

The fixed window as a class sees it carries instruments the simplest Tk chat has none of:
the loop sampler (who held the loop), the 1 ms GIL switch interval (the main thread gets the
GIL back within a millisecond), the short scheduler slice (it gets a core back as soon as it
wakes), the health bar (a clock every second, the figures four times a second) and rich text
(markdown painted block by block, display-only line ends). Each costs the main thread
something, or saves it a wait; this scenario makes each a figure of every run:

- ``plain``: the same window, with the simplest correct consumer
  (:class:`~tkchat.lab.window.PlainConsumer`: each tick's text in one plain insert, the view
  following the end) and every instrument off: no sampler, the health bar standing still,
  CPython's own 5 ms switch interval, the kernel's default slice. What is left is what any
  correct Tk chat does, and what the window does besides (saving the answer, the context
  meter);
- ``fixed-no-health``, ``fixed-5ms-switch``, ``fixed-default-slice``, ``fixed-plain-text``:
  the shipped window (the sampler on, as the teaching controls have it) less one instrument;
  the sampler's own row, ``fixed-unsampled``, is the bench's (tkchat/lab/bench/bench.py).

Each repeat streams one answer of each row, in turn with the fixed ones, the order turned
by one each repeat (the window's first answer pays costs of its own). :func:`cost_rows` is
the table: each row's lag p99 and max as multiples of the same run's idle and plain rows,
and what the instrument it leaves out costs (fixed's figure over the row's).

Main thread (the bench's script); :func:`cost_rows` is arithmetic, any thread.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from tkchat.lab.bench.figures import RunFigures, StreamResult
from tkchat.lab.bench.scenarios.runs import BenchRuns
from tkchat.lab.bench.script import Script
from tkchat.lab.window import Instruments, instruments_of
from tkchat.modes import FIXED
from tkchat.stats import rounded
from tkchat.threads import favour_the_gui_thread, short_slices

PLAIN = "plain"
UNSAMPLED = "fixed-unsampled"  # (the bench's own row: the fixed window without its sampler)
CPYTHON_SWITCH_INTERVAL_S = 0.005  # CPython's default: what a window that changes nothing has


@dataclass(frozen=True)
class Setup:
    """One row's window: which instruments are on."""

    row: str
    leaves_out: str  # in the table's words
    sampler: bool = True
    health: bool = True
    fast_switch: bool = True  # the 1 ms GIL switch interval (tkchat/threads.py)
    short_slice: bool = True  # the main thread's short scheduler slice (tkchat/threads.py)
    rich: bool = True  # markdown painted as it streams, long lines cut for display


SETUPS = (
    Setup(
        PLAIN,
        "every instrument",
        sampler=False,
        health=False,
        fast_switch=False,
        short_slice=False,
        rich=False,
    ),
    Setup("fixed-no-health", "the health bar", health=False),
    Setup("fixed-5ms-switch", "the 1 ms GIL switch", fast_switch=False),
    Setup("fixed-default-slice", "the short slice", short_slice=False),
    Setup("fixed-plain-text", "markdown, line ends", rich=False),
)
ROWS = tuple(setup.row for setup in SETUPS)
LEAVES_OUT = {UNSAMPLED: "the loop sampler", **{s.row: s.leaves_out for s in SETUPS}}


def set_up(tools: Instruments, setup: Setup) -> None:
    """The window as ``setup`` says (main thread, between answers)."""
    tools.sample_loop(setup.sampler)
    tools.show_health(setup.health)
    if setup.fast_switch:
        favour_the_gui_thread()
    else:
        sys.setswitchinterval(CPYTHON_SWITCH_INTERVAL_S)
    short_slices(setup.short_slice)
    tools.consume_plainly(not setup.rich)


def as_shipped(tools: Instruments) -> None:
    """Every instrument back as the window has it (the sampler as the view says)."""
    set_up(tools, Setup(FIXED, ""))
    tools.sample_loop(None)


def cost_answers(bench: BenchRuns, repeat: int, results: dict[str, list[StreamResult]]) -> Script:
    """One fixed answer in each of :data:`SETUPS`' windows, the order turned by ``repeat``;
    each appended to ``results[row]``. The window is as shipped again after each, whatever
    happens."""
    tools = instruments_of(bench.app)
    turned = SETUPS[repeat % len(SETUPS) :] + SETUPS[: repeat % len(SETUPS)]
    for setup in turned:
        set_up(tools, setup)
        try:
            result: StreamResult = {}
            yield from bench.stream_once(FIXED, bench.sampling, result, row=setup.row)
            results.setdefault(setup.row, []).append(result)
        finally:
            as_shipped(tools)


# What the costs table shows of each row (the JSON keeps them all).
COLUMNS = (
    "mode",
    "leaves_out",
    "lag_p99_ms",
    "lag_max_ms",
    "long_tasks",
    "p99_x_idle",
    "max_x_idle",
    "p99_x_plain",
    "max_x_plain",
    "cost_p99_x",
    "cost_max_x",
)


def cost_rows(runs: list[RunFigures]) -> list[RunFigures]:
    """The costs table, from a run's rows: idle, plain, fixed and each row that leaves one
    instrument out, each with its lag p99 and max over idle's and over plain's; a row that
    leaves an instrument out also with fixed's over its own (``cost_*_x``: 1.3 means the
    instrument made fixed's figure 1.3 times what it is without it). [] without plain."""
    by = {r.mode: r for r in runs}
    idle, plain = by.get("idle"), by.get(PLAIN)
    if plain is None:
        return []
    fixed = by.get(FIXED)
    idle_p99 = idle.lag_p99_ms if idle is not None else None
    idle_max = idle.lag_max_ms if idle is not None else None
    order = ["idle", PLAIN, FIXED, UNSAMPLED, *ROWS[1:]]
    out: list[RunFigures] = []
    for mode in order:
        run = by.get(mode)
        if run is None:
            continue
        extra = {
            "leaves_out": "(nothing streams)" if mode == "idle" else LEAVES_OUT.get(mode, "–"),
            "p99_x_idle": _over(run.lag_p99_ms, idle_p99),
            "max_x_idle": _over(run.lag_max_ms, idle_max),
            "p99_x_plain": _over(run.lag_p99_ms, plain.lag_p99_ms),
            "max_x_plain": _over(run.lag_max_ms, plain.lag_max_ms),
        }
        if mode in LEAVES_OUT and mode != PLAIN and fixed is not None:
            extra["cost_p99_x"] = _over(fixed.lag_p99_ms, run.lag_p99_ms)
            extra["cost_max_x"] = _over(fixed.lag_max_ms, run.lag_max_ms)
        if mode == FIXED:
            extra["leaves_out"] = "nothing (as shipped)"
        out.append(
            RunFigures(
                mode=mode,
                backend=run.backend,
                lag_p99_ms=run.lag_p99_ms,
                lag_max_ms=run.lag_max_ms,
                long_tasks=run.long_tasks,
                extra=extra,
            )
        )
    return out


def _over(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return rounded(value / base, 2)
