"""What a benchmark run is and what it reports: options, figures, timelines, and the raw
baseline (the model alone). No Tk, no app.

``tkchat bench`` (in-process, ``bench.py``), its SSE variant (``sse_bench.py``) and the
report (``report.py``) all speak these types, so none of them needs another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tkchat.events import Done, Error, GenerationStats
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.modes import MODES
from tkchat.stats import LagSample, percentile, rounded
from tkchat.transport.channel import EventChannel
from tkchat.ui.lag_probe import LONG_TASK_MS

BENCH_PROMPT = (
    "Write a long, detailed guide to brewing tea, with a heading, a numbered list of steps, "
    "a short Python code block that times the steeping, and a closing paragraph."
)


SYSTEM = "You are a helpful assistant."

# The targets a streaming pipeline is held to — by ``tkchat bench``'s verdicts and by the
# grade of ``tkchat selftest`` — always against baselines measured in the same run.
LAG_P99_FLOOR_MS = 2.0  # lag p99 within twice idle's, or this on a very quiet machine
LAG_MAX_MS = 16.0  # one frame at 60 Hz
FLOOD_LAG_P99_MS = 16.0  # a scripted flood: one frame, at the 99th percentile
TOKENS_RATIO_MIN = 0.95  # the window may cost the model at most 5 % of its speed
LONG_CHAT_LAG_MAX_MS = 50.0  # a long conversation opened, paged, resized, streamed into


def lag_p99_bound(idle_p99_ms: float) -> float:
    """The lag p99 a pipeline may reach, given this run's idle p99."""
    return max(LAG_P99_FLOOR_MS, 2 * idle_p99_ms)


@dataclass
class BenchOptions:
    backend: str = "llama"
    model: str | None = None
    tokens: int = 256
    rate: float = 5000.0
    idle_s: float = 3.0
    repeats: int = 3
    cancels: int = 20
    seed: int = 7
    json_path: Path | None = None
    report_dir: Path | None = None
    transport: str = "inprocess"  # or "sse": the same generation over HTTP (sse_bench.py)
    modes: tuple[str, ...] = MODES
    broken_tokens: int = 600  # a scripted flood in a broken mode would run for hours
    prompt: str = BENCH_PROMPT
    prompt_tokens: int | None = None  # a long prompt of this many tokens too (prompt_bench.py)
    trace_path: Path | None = None  # the streaming runs as a Chrome trace (tkchat/trace/)
    long_chat: tuple[int, ...] = ()  # instead of the modes: these lengths (long_chat.py)
    busy: bool = False  # the fixed pipeline again with a CPU hog per core (scenarios/busy.py)
    turn2: bool = False  # a chat's second turn, en and zh (scenarios/turn2.py)


@dataclass
class RunFigures:
    mode: str
    backend: str
    tokens: int | None = None
    tokens_per_s: float | None = None
    ttft_ms: float | None = None
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    lag_max_ms: float | None = None
    long_tasks: int | None = None
    ui_updates_per_s: float | None = None
    cancel_p50_ms: float | None = None
    cancel_p99_ms: float | None = None
    cancel_p99_token_periods: float | None = None
    rss_start_mb: float | None = None
    rss_peak_mb: float | None = None
    rss_growth_mb: float | None = None
    render_slice_max_ms: float | None = None
    input_p50_ms: float | None = None
    input_p99_ms: float | None = None
    input_max_ms: float | None = None
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "extra"}
        data.update(self.extra)
        return data


def input_figures(latencies: list[float]) -> dict[str, Any]:
    """The input-latency columns of a run (real clicks: sent → handled)."""
    return {
        "input_p50_ms": rounded(percentile(latencies, 50), 2),
        "input_p99_ms": rounded(percentile(latencies, 99), 2),
        "input_max_ms": rounded(max(latencies) if latencies else None, 2),
    }


@dataclass
class Timeline:
    """What the report plots for one streaming run."""

    mode: str
    started: float
    lags: list[LagSample]
    arrivals: list[tuple[float, int]]
    render_costs: list[tuple[int, float]] = field(default_factory=list)  # per-chunk-render


def lag_figures(samples: Iterable[LagSample]) -> dict[str, Any]:
    """The lag columns of a run; a firing over :data:`LONG_TASK_MS` late is a long task."""
    lags = [s.lag_ms for s in samples]
    return {
        "lag_p50_ms": rounded(percentile(lags, 50), 3),
        "lag_p99_ms": rounded(percentile(lags, 99), 3),
        "lag_max_ms": rounded(max(lags) if lags else None, 3),
        "long_tasks": sum(1 for lag in lags if lag > LONG_TASK_MS),
    }


def own_lag_figures(samples: Iterable[LagSample]) -> dict[str, Any]:
    """The lag the window itself caused: each firing's lateness less the time its thread
    waited for a CPU that other programs held (:attr:`LagSample.own_ms`), and that wait's
    share of the run (``cpu_wait_share``: 0 on a quiet machine, 0.3 when the window waited
    for a core a third of the time). On a busy machine a fixed pipeline's raw lag grows with
    the machine's load; its own lag does not."""
    kept = list(samples)
    own = [s.own_ms for s in kept]
    # from when the first firing was due (a freeze may have delayed it) to the last
    span_ms = (kept[-1].at - kept[0].at) * 1000 + kept[0].lag_ms if kept else 0.0
    waited = sum(s.waited_ms for s in kept)
    return {
        "own_lag_p99_ms": rounded(percentile(own, 99), 3),
        "own_lag_max_ms": rounded(max(own) if own else None, 3),
        "own_long_tasks": sum(1 for lag in own if lag > LONG_TASK_MS),
        "cpu_wait_share": rounded(waited / span_ms, 3) if span_ms > 0 else None,
    }


def run_alone(controller: GenerationController, request: GenerationRequest) -> GenerationStats:
    """The ``raw`` baseline: the same worker and model loop with no window reading its events.
    Blocks the calling thread until the generation ends (on the main thread of a benchmark,
    on purpose: nothing of the UI competes with the model meanwhile)."""
    channel = EventChannel()
    worker = controller.new_worker(request, channel, gen=0)
    worker.start()
    while True:
        event = channel.get(timeout=600)
        if isinstance(event, (Done, Error)):
            break
    if isinstance(event, Error):
        raise RuntimeError(f"the generation without a window failed: {event.message}")
    return event.stats


SAMPLER_TOKENS_MIN = 0.95  # the sampler may cost the pipeline at most 5 % of its tokens/s


def sampler_verdicts(runs: list[RunFigures]) -> list[tuple[str, bool, str]]:
    """The sampler's cost, measured in the same run: the fixed pipeline with the window's
    sampler on (as in a class) beside the same answers with it off."""
    by = {r.mode: r for r in runs}
    on, off = by.get("fixed"), by.get("fixed-unsampled")
    if on is None or off is None or not on.tokens_per_s or not off.tokens_per_s:
        return []
    ratio = on.tokens_per_s / off.tokens_per_s
    return [
        (
            "the sampler costs the fixed pipeline <= 5 % of its tokens/s",
            ratio >= SAMPLER_TOKENS_MIN,
            f"{on.tokens_per_s:g} vs {off.tokens_per_s:g} tokens/s ({ratio:.3f} x); lag p99 "
            f"{on.lag_p99_ms} vs {off.lag_p99_ms} ms, max {on.lag_max_ms} vs {off.lag_max_ms} ms",
        )
    ]


# -- the table a run prints ------------------------------------------------------------------

COLUMNS = [
    "mode",
    "tokens",
    "tokens_per_s",
    "ttft_ms",
    "lag_p50_ms",
    "lag_p99_ms",
    "lag_max_ms",
    "long_tasks",
    "ui_updates_per_s",
    "input_p99_ms",
    "input_max_ms",
    "cancel_p50_ms",
    "cancel_p99_ms",
    "rss_peak_mb",
]


def format_table(runs: list[RunFigures], columns: Sequence[str] = ()) -> str:
    """The runs as a text table of ``columns`` (by default :data:`COLUMNS`); a column may
    name a figure kept in a run's ``extra``."""
    columns = list(columns) or COLUMNS
    rows = [[_cell(r.as_json().get(c)) for c in columns] for r in runs]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)
