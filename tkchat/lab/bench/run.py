"""One ``tkchat bench`` run of the modes (or over SSE), and what it leaves: the table and the
verdicts printed, and, when asked, every figure as JSON, the streamed answers as a Chrome
trace and a report with plots. Main thread (the bench's window runs in it)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import tkinter as tk

from tkchat.lab.bench.figures import (
    BenchOptions,
    Check,
    RunFigures,
    Timeline,
    format_table,
    sampler_verdicts,
)
from tkchat.lab.bench.scenarios.costs import COLUMNS as COST_COLUMNS
from tkchat.lab.bench.scenarios.costs import cost_rows
from tkchat.trace.chrome import TraceRun, write_trace


def load_1min() -> float | None:
    """The machine's 1-minute load average (None where there is none: Windows)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


COSTS_TITLE = (
    "What each instrument costs the fixed window (this run): lag over idle's and plain's, "
    "and fixed's over the row's without it (cost_*_x)"
)

# A run prints its verdicts; it does not judge them (the exit status stays 0): one run can miss
# a target because of one busy moment. The claims step retries and judges.
MEASURED_ONCE = (
    "  Measured once: {missed} of {total} targets missed in this run. One run is not a "
    "judgement (a busy moment can miss a target), so the exit status is 0; `tkchat bench "
    "--claims` measures each claim up to three times and exits 1 for one that fails every "
    "time on a machine quiet enough to judge."
)


def _print_verdicts(checks: list[Check]) -> None:
    for check in checks:
        print(check.line)
    missed = sum(not check.ok for check in checks)
    if missed:  # why the exit status is still 0
        print(MEASURED_ONCE.format(missed=missed, total=len(checks)))


def run_bench(options: BenchOptions) -> int:
    """Measure, print, write what was asked; exit status 0 (the verdicts are printed, not
    judged: ``tkchat bench --claims`` judges them, retried)."""
    started = time.time()
    load_before = load_1min()
    timelines: list[Timeline] = []
    traces: list[TraceRun] = []
    if options.transport == "sse":
        from tkchat.lab.bench.sse_bench import run_sse_bench, sse_verdicts

        runs = run_sse_bench(
            model=options.model,
            tokens=options.tokens,
            repeats=options.repeats,
            cancels=options.cancels,
            seed=options.seed,
        )
        checks = sse_verdicts(runs)
        options.report_dir = None  # the plots are of the window's lag; there is none here
        options.trace_path = None
    else:
        from tkchat.lab.bench.bench import Bench
        from tkchat.lab.bench.scenarios import scenario_verdicts
        from tkchat.lab.bench.verdicts import verdicts

        bench = Bench(options)
        runs = bench.run()
        timelines, traces = bench.timelines, [r.trace for r in bench.recorded]
        checks = verdicts(runs, options) + sampler_verdicts(runs) + scenario_verdicts(runs)
    columns: tuple[str, ...] = ()
    if options.long_chat:
        from tkchat.lab.bench.scenarios.long_chat import COLUMNS as columns
    costs = _print_tables(runs, columns)
    _print_verdicts(checks)
    command = "tkchat " + shlex.join(sys.argv[1:])
    if options.json_path is not None:
        payload = {
            "command": command,
            "backend": options.backend,
            "tokens": options.tokens,
            "rate": options.rate if options.backend == "scripted" else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "python": sys.version.split()[0],
            "tk": tk.TkVersion,
            "load_1min": [load_before, load_1min()],  # before and after: how busy it was
            "runs": [r.as_json() for r in runs],
            **({"columns": list(columns)} if columns else {}),
            **({"instrument_costs": [row.as_json() for row in costs]} if costs else {}),
            "targets": [check.as_json() for check in checks],
        }
        options.json_path.parent.mkdir(parents=True, exist_ok=True)
        options.json_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote {options.json_path}")
    if options.trace_path is not None:
        print(f"wrote {write_trace(options.trace_path, traces, command=command)}")
    if options.report_dir is not None:
        _report(options, runs, timelines, checks)
    return 0


def _print_tables(runs: list[RunFigures], columns: tuple[str, ...]) -> list[RunFigures]:
    """The run's table, then what each instrument costs (when the run has a plain row):
    the costs table's rows, returned for the JSON."""
    print(format_table(runs, columns))
    costs = cost_rows(runs)
    if costs:
        print(f"\n{COSTS_TITLE}\n{format_table(costs, COST_COLUMNS)}")
    print()
    return costs


def _report(
    options: BenchOptions, runs: list[RunFigures], timelines: list[Timeline], checks: list[Check]
) -> None:
    from tkchat.lab.bench.report import write_report

    assert options.report_dir is not None
    path = write_report(options.report_dir, runs, timelines, checks, options, format_table(runs))
    print(f"wrote {path}")
