"""``tkchat bench --busy``: the fixed pipeline while every core is busy with something else.

A laptop is rarely idle: a build, a browser, a video call. The bench starts one CPU hog per
core itself (:class:`CpuHogs`: plain processes that spin, each ending by itself after a
deadline even if the bench dies), measures the idle window, the raw model loop and the fixed
pipeline (with its Stops) again while they spin, stops them, and checks the issue's targets
against the baselines measured in the same run:

- ``busy-fixed`` lag p99 ≤ 2 × ``busy-idle``'s (the window with nothing to do, under the same
  hogs: what the machine itself costs any loop; or the 2 ms floor), no long task; its ratio to
  the quiet ``idle`` p99 is reported beside it;
- ``busy-fixed`` tokens/s ≥ 0.9 × ``busy-raw`` (the model loop alone, under the same hogs);
- cancel p99 ≤ 2 token periods (at the busy pace).

Rows: ``busy-idle``, ``busy-raw``, ``busy-fixed``, each with ``hogs`` in its extra figures.
Main thread (the bench's script), except the hogs, which are processes of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tkchat.lab.bench.figures import Check, RunFigures, StreamResult, lag_p99_bound, stream_figures
from tkchat.lab.bench.scenarios.runs import BenchRuns
from tkchat.lab.bench.script import Script
from tkchat.modes import FIXED
from tkchat.stats import median, rounded

BUSY_TOKENS_RATIO_MIN = 0.9  # the window may cost the model 10 % of its busy speed
HOG_MAX_S = 900.0  # a hog ends by itself after this, whatever happens to the bench
SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


class CpuHogs:
    """One spinning process per core, started and stopped by the bench (by their pids)."""

    def __init__(self, count: int | None = None) -> None:
        self.count = count or os.cpu_count() or 1
        self._procs: list[subprocess.Popen[bytes]] = []
        self.pids: list[int] = []  # of the last start: the report says which were stopped

    def start(self) -> None:
        code = SPIN.format(s=HOG_MAX_S)
        self._procs = [
            subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)
            for _ in range(self.count)
        ]
        self.pids = [proc.pid for proc in self._procs]

    def stop(self) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            proc.wait(timeout=10)
        self._procs = []


def busy_scenario(bench: BenchRuns) -> Script:
    """The bench's script, after its quiet modes: the same measurements under the hogs
    (nothing without ``--busy``)."""
    if not bench.options.busy:
        return
    hogs = CpuHogs()
    hogs.start()
    try:
        yield 0.5  # the hogs are spinning
        yield from bench.idle("busy-idle")
        raw: list[float] = []
        fixed: list[StreamResult] = []
        for _ in range(bench.options.repeats):  # alternate, as the quiet run does
            raw.append(bench.raw_once()[0])
            yield 0.3
            result: StreamResult = {}
            yield from bench.stream_once(FIXED, bench.sampling, result)
            fixed.append(result)
        latencies: list[float] = []
        yield from bench.cancels(latencies)
        load = os.getloadavg()[0]  # the hogs' share of it included
    finally:
        hogs.stop()
    extra: dict[str, Any] = {"hogs": hogs.count, "hog_pids": hogs.pids}
    extra["load_1min"] = rounded(load, 2)
    busy_raw = RunFigures("busy-raw", bench.options.backend, tokens_per_s=rounded(median(raw), 1))
    busy_fixed = stream_figures("busy-fixed", bench.options.backend, fixed, latencies)
    for row in (bench.runs[-1], busy_raw, busy_fixed):
        row.extra.update(extra)
    bench.runs.extend([busy_raw, busy_fixed])


def _times(value: float, baseline: float) -> str:
    """``value`` as a multiple of ``baseline``, with the baseline: '1.26 x 5.25 ms of'."""
    ratio = value / baseline if baseline else float("inf")
    return f"{ratio:.2f} x {baseline:.2f} ms of"


def busy_verdicts(runs: list[RunFigures]) -> list[Check]:
    """The busy machine's targets, as ratios to the same run's baselines (none without
    ``--busy``)."""
    by = {r.mode: r for r in runs}
    quiet, idle = by.get("idle"), by.get("busy-idle")
    raw, fixed = by.get("busy-raw"), by.get("busy-fixed")
    if fixed is None or fixed.lag_p99_ms is None or idle is None or idle.lag_p99_ms is None:
        return []
    bound = lag_p99_bound(idle.lag_p99_ms)
    hogs = fixed.extra.get("hogs")
    figure = f"{fixed.lag_p99_ms:.2f} ms = {_times(fixed.lag_p99_ms, idle.lag_p99_ms)} busy idle"
    if quiet is not None and quiet.lag_p99_ms is not None:
        figure += f", {_times(fixed.lag_p99_ms, quiet.lag_p99_ms)} quiet idle"
    out = [
        Check(
            f"busy ({hogs} hogs): fixed lag p99 <= 2 x busy idle's",
            fixed.lag_p99_ms <= bound,
            f"{figure}; bound {bound:.2f} ms; max {fixed.lag_max_ms} ms",
            fixed.lag_p99_ms,
            idle.lag_p99_ms,
            "busy idle lag p99",
            f"<= {bound:.2f} ms",
            "ms",
        ),
        Check("busy: fixed long tasks == 0", fixed.long_tasks == 0, str(fixed.long_tasks)),
    ]
    if raw is not None and raw.tokens_per_s and fixed.tokens_per_s:
        tokens = fixed.tokens_per_s / raw.tokens_per_s
        out.append(
            Check(
                f"busy: fixed tokens/s >= {BUSY_TOKENS_RATIO_MIN:g} x busy raw",
                tokens >= BUSY_TOKENS_RATIO_MIN,
                f"{tokens:.3f} x ({fixed.tokens_per_s:g} vs {raw.tokens_per_s:g} tokens/s)",
            )
        )
    if fixed.cancel_p99_token_periods is not None:
        out.append(
            Check(
                "busy: cancel p99 <= 2 token periods",
                fixed.cancel_p99_token_periods <= 2,
                f"{fixed.cancel_p99_token_periods:.2f} periods ({fixed.cancel_p99_ms} ms)",
            )
        )
    return out
