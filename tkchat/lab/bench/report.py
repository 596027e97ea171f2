"""``tkchat bench --report DIR``: a Markdown report with plots, so a class sees the freeze.

Two figures:

- ``lag-timeline.png`` — for each mode, the event-loop lag over time, with a tick for every
  moment new text reached the screen. A healthy window is a flat line under a dense comb of
  ticks; a blocked one is one tall spike after which all the text lands at once.
- ``lag-vs-length.png`` — for ``per-chunk-render``, each probe's lag against how long the
  answer was at that moment: the cost of re-rendering grows with the answer.

matplotlib is needed only here (the ``report`` extra: ``pip install 'tkchat[report]'``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat.installed import extra_missing
from tkchat.stats import LONG_TASK_MS

if TYPE_CHECKING:
    from tkchat.lab.bench.figures import BenchOptions, Check, RunFigures, Timeline


def chars_at(arrivals: Sequence[tuple[float, int]], when: float) -> int:
    """How long the answer was on screen at ``when`` (arrivals: (time, chars so far))."""
    index = bisect.bisect_right([at for at, _ in arrivals], when)
    return arrivals[index - 1][1] if index else 0


def write_report(
    folder: Path,
    runs: list[RunFigures],
    timelines: list[Timeline],
    checks: list[Check],
    options: BenchOptions,
    table: str,
) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no window, no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:  # (the command checks first: tkchat/lab/commands/bench.py)
        raise SystemExit(f"tkchat: {extra_missing('tkchat bench --report', 'report')}") from exc
    folder.mkdir(parents=True, exist_ok=True)
    shown = _one_per_mode(timelines)

    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 2.2 * len(shown) + 0.6), squeeze=False)
    for axis, line in zip(axes[:, 0], shown, strict=True):
        times = [s.at - line.started for s in line.lags]
        lags = [s.lag_ms for s in line.lags]
        top = max(lags + [1.0])
        # A late firing means the loop was blocked from (fired - lag) to fired: shade it.
        for when, lag in zip(times, lags, strict=True):
            if lag > LONG_TASK_MS:
                axis.axvspan(when - lag / 1000, when, color="#b00020", alpha=0.15, lw=0)
        axis.vlines(
            times,
            0,
            lags,
            color="#b00020",
            linewidth=1.0,
            label="event-loop lag (ms); shaded: frozen",
        )
        arrivals = [at - line.started for at, _ in line.arrivals]
        axis.vlines(
            arrivals, 0, top * 0.12, color="#0b3d91", linewidth=0.4, label="text reaches the screen"
        )
        axis.set_title(line.mode, loc="left", fontsize=10)
        axis.set_ylabel("lag ms")
        axis.set_ylim(0, top * 1.1)
        axis.legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("seconds since Send")
    fig.tight_layout()
    timeline_png = folder / "lag-timeline.png"
    fig.savefig(timeline_png, dpi=110)
    plt.close(fig)

    length_png = None
    per_chunk = next((t for t in shown if t.mode == "per-chunk-render"), None)
    if per_chunk is not None and per_chunk.render_costs:
        fig, axis = plt.subplots(figsize=(7, 4))
        axis.scatter(
            [chars for chars, _ in per_chunk.render_costs],
            [ms for _, ms in per_chunk.render_costs],
            s=6,
            color="#b00020",
            label="one chunk's full re-render (main thread blocked)",
        )
        lag_points = [(chars_at(per_chunk.arrivals, s.at), s.lag_ms) for s in per_chunk.lags]
        axis.scatter(
            [c for c, _ in lag_points],
            [lag for _, lag in lag_points],
            s=14,
            marker="x",
            color="#333333",
            label="probe lag",
        )
        axis.set_yscale("log")
        axis.set_xlabel("answer length on screen (characters)")
        axis.set_ylabel("milliseconds")
        axis.set_title("per-chunk-render: the cost of each chunk grows with the answer")
        axis.legend(fontsize=7)
        fig.tight_layout()
        length_png = folder / "lag-vs-length.png"
        fig.savefig(length_png, dpi=110)
        plt.close(fig)

    lines = [
        "# tkchat bench report",
        "",
        f"Backend: `{options.backend}`, {options.tokens} tokens per generation"
        + (f" at {options.rate:g} tokens/s" if options.backend == "scripted" else "")
        + ".",
        "",
        "```",
        table,
        "```",
        "",
        *[f"- {'PASS' if c.ok else 'FAIL'} {c.name}: {c.figure}" for c in checks],
        "",
        "## Lag over time",
        "",
        "Red: how late the main loop ran a 5 ms timer. Blue ticks: text reaching the screen.",
        "",
        f"![lag over time]({timeline_png.name})",
        "",
    ]
    if length_png is not None:
        lines += [
            "## Lag against answer length (per-chunk-render)",
            "",
            f"![lag against answer length]({length_png.name})",
            "",
        ]
    report = folder / "report.md"
    report.write_text("\n".join(lines))
    return report


def _one_per_mode(timelines: list[Timeline]) -> list[Timeline]:
    """The last run of each mode, in the order the modes were first measured."""
    last: dict[str, Timeline] = {}
    for line in timelines:
        last[line.mode] = line
    return list(last.values())
