"""``tkchat bench --report DIR --recording FILE``: the bench's report, drawn from a recorded run.

A recording (``tkchat record``) holds what the report plots — the lag probe's samples and the
moments text reached the screen — and what its table counts: tokens and their times, clicks
and keys with how long each waited. So a run measured on one machine gets the same report,
figures and plot, on another, without running anything.
"""

from __future__ import annotations

from pathlib import Path

from tkchat.lab.bench.figures import (
    BenchOptions,
    RunFigures,
    Timeline,
    format_table,
    input_figures,
    lag_figures,
)
from tkchat.lab.bench.report import write_report
from tkchat.lab.recording.file import Recording
from tkchat.stats import LagSample, rounded


def recording_figures(recording: Recording) -> RunFigures:
    """The bench's columns for the recorded answer (times from its start, at 0)."""
    tokens = recording.tokens
    tokens_per_s = None
    if len(tokens) > 1 and tokens[-1].t > tokens[0].t:
        tokens_per_s = (len(tokens) - 1) / (tokens[-1].t - tokens[0].t)
    shown = recording.screen
    updates_per_s = None
    if len(shown) > 1 and shown[-1].t > shown[0].t:
        updates_per_s = (len(shown) - 1) / (shown[-1].t - shown[0].t)
    lags = lag_figures(LagSample(lag.t, lag.ms) for lag in recording.lags)
    inputs = input_figures([put.handled_ms for put in recording.inputs])
    return RunFigures(
        mode=recording.mode,
        backend=recording.backend,
        tokens=len(tokens),
        tokens_per_s=rounded(tokens_per_s, 1),
        ttft_ms=rounded(shown[0].t * 1000 if shown else None, 2),
        ui_updates_per_s=rounded(updates_per_s, 1),
        seconds=rounded(recording.duration_s, 2),
        **lags,
        **inputs,
    )


def write_recording_report(recording: Recording, folder: Path, source: Path) -> Path:
    """Write ``report.md`` and its plot into ``folder``; returns the report's path."""
    run = recording_figures(recording)
    timeline = Timeline(
        recording.mode,
        0.0,
        [LagSample(lag.t, lag.ms) for lag in recording.lags],
        [(shown.t, shown.chars) for shown in recording.screen],
    )
    options = BenchOptions(
        backend=recording.backend,
        model=recording.model,
        tokens=len(recording.tokens),
        rate=recording.rate or 0.0,
        modes=(recording.mode,),
    )
    report = write_report(folder, [run], [timeline], [], options, format_table([run]))
    machine = recording.machine
    facts = ", ".join(f"{key} {value}" for key, value in machine.items() if value is not None)
    with report.open("a", encoding="utf-8") as out:
        out.write(
            f"\nFrom the recording `{source}`, made on {recording.started_at} "
            f"({facts}); mode `{recording.mode}`.\n"
        )
    return report
