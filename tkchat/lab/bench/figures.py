"""What a benchmark run is and what it reports: options, figures, timelines, and the raw
baseline (the model alone). No Tk, no app.

``tkchat bench`` (in-process, ``bench.py``), its SSE variant (``sse_bench.py``) and the
report (``report.py``) all speak these types, so none of them needs another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tkchat.conversation import Sampling
from tkchat.events import Done, Error, GenerationStats
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.modes import MODES
from tkchat.stats import LONG_TASK_MS, LagSample, median, percentile, rounded
from tkchat.transport.channel import EventChannel

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
    costs: bool = True  # each instrument's cost, a row per instrument (scenarios/costs.py)
    clicks: bool = True  # real clicks on the Ping button while streaming: the input latency

    def sampling(self) -> Sampling:
        """The answer every mode streams: ``tokens`` long, seeded."""
        return Sampling(max_tokens=self.tokens, seed=self.seed)

    def broken_sampling(self) -> Sampling:
        """A broken mode's answer: on the scripted backend at most ``broken_tokens`` (a
        flood's length in per-chunk-render, which is quadratic, would run for hours)."""
        if self.backend != "scripted":
            return self.sampling()
        return Sampling(max_tokens=min(self.tokens, self.broken_tokens), seed=self.seed)


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


class Check(NamedTuple):
    """One target checked on one run: its name (which says the target), whether it holds,
    and the figure as printed. Where the target compares the run with a baseline measured in
    the same run, also the figure judged (``value``, in ``unit``), that baseline (``baseline``,
    and ``baseline_of``: which it is) and the target as a bound (``bound``: "<= 2 x idle");
    ``tkchat bench --claims`` prints them as columns. ``judged`` False: it failed where the
    machine's load alone could explain it (a lesson's claim on a run that waited for a CPU)."""

    name: str
    ok: bool
    figure: str
    value: float | None = None
    baseline: float | None = None
    baseline_of: str = ""
    bound: str = ""
    unit: str = ""
    judged: bool = True

    @property
    def ratio(self) -> float | None:
        """The figure as a multiple of its baseline (None without one, or a zero one)."""
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    @property
    def line(self) -> str:
        """How a run prints it: ``  PASS  name: figure``."""
        return f"  {'PASS' if self.ok else 'FAIL'}  {self.name}: {self.figure}"

    def as_json(self) -> dict[str, Any]:
        """As a run's JSON keeps it (``target``, ``pass``, ``figure``; the rest when set)."""
        data: dict[str, Any] = {"target": self.name, "pass": self.ok, "figure": self.figure}
        for key in ("value", "baseline", "baseline_of", "bound", "unit"):
            if getattr(self, key) not in (None, ""):
                data[key] = getattr(self, key)
        if not self.judged:
            data["judged"] = False
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        return cls(
            str(data["target"]),
            bool(data["pass"]),
            str(data.get("figure", "")),
            data.get("value"),
            data.get("baseline"),
            str(data.get("baseline_of", "")),
            str(data.get("bound", "")),
            str(data.get("unit", "")),
            bool(data.get("judged", True)),
        )


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


def screen_gap_figures(arrivals: Sequence[tuple[float, int]]) -> dict[str, Any]:
    """How long the text waited between two puts on screen while the answer streamed
    (``arrivals``: each insert's time and the answer's length then). A pipeline that shows
    each token within a frame has gaps of a frame or a token period, whichever is longer; one
    that holds tokens back (a slow poll) has gaps of its poll, however fast tokens come: the
    lag meter sees nothing, the reader sees bursts."""
    times = [at for at, _chars in arrivals]
    gaps = [(b - a) * 1000 for a, b in zip(times, times[1:], strict=False)]
    return {
        "screen_gap_p50_ms": rounded(percentile(gaps, 50), 2),
        "screen_gap_max_ms": rounded(max(gaps) if gaps else None, 2),
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


# What one streamed answer measured (:meth:`Bench.stream_once` writes it): its lag samples
# and clicks, its tokens/s, its render slices, its CPU, its memory, its culprits.
StreamResult = dict[str, Any]


def stream_figures(
    mode: str, backend: str, results: Sequence[StreamResult], cancels: Sequence[float] = ()
) -> RunFigures:
    """One row of the table from ``results`` (the same mode's answers, each a
    :data:`StreamResult`) and the Stops' latencies in ms (``cancels``). Any thread."""
    samples = [s for r in results for s in r["samples"]]
    inputs = [x for r in results for x in r["inputs"]]
    slices = [s for r in results for s in r["slices"]]
    streaming = [s for r in results for s in r["streaming_slices"]]
    tps = median([r["tps"] for r in results])
    p99 = percentile(list(cancels), 99)
    start = min(r["rss_start"] for r in results)
    peak = max(r["rss_peak"] for r in results)
    seconds = sum(r["seconds"] for r in results)
    return RunFigures(
        mode=mode,
        backend=backend,
        tokens=results[-1]["tokens"],
        tokens_per_s=rounded(tps, 1),
        ttft_ms=rounded(median([r["ttft"] for r in results if r["ttft"] is not None]), 1),
        ui_updates_per_s=rounded(median([r["ups"] for r in results]), 1),
        cancel_p50_ms=rounded(percentile(list(cancels), 50), 2),
        cancel_p99_ms=rounded(p99, 2),
        cancel_p99_token_periods=rounded(p99 * tps / 1000, 2) if p99 is not None and tps else None,
        rss_start_mb=rounded(start, 1),
        rss_peak_mb=rounded(peak, 1),
        rss_growth_mb=rounded(peak - start, 1),
        render_slice_max_ms=rounded(max(slices) if slices else None, 2),
        seconds=rounded(seconds, 2),
        extra={
            "cancel_samples": len(cancels),
            "repeats": len(results),
            "input_events": len(inputs),
            # markdown rendered while the answer streamed (per generation, median)
            "streaming_slices": rounded(median([len(r["streaming_slices"]) for r in results])),
            "streaming_slice_max_ms": rounded(max(streaming) if streaming else None, 2),
            # every long task, with who held the loop (tkchat/trace/culprit.py)
            "long_task_culprits": [c for r in results for c in r.get("culprits", [])],
            "sampler_cpu_percent": rounded(median([r["sampler_cpu"] or 0 for r in results])),
            # the main thread's own work: its CPU per second, its costliest callback
            "main_cpu_per_s": rounded(sum(r["cpu_s"] for r in results) / seconds, 3),
            "callback_cpu_max_ms": rounded(max(r["callback_cpu_max"] for r in results), 2),
            "callback_cpu_max_in": max(results, key=lambda r: r["callback_cpu_max"]).get(
                "callback_cpu_max_in", ""
            ),
            # New chat before each run: clearing the previous run's answer (the worst)
            "new_chat_max_ms": rounded(max(r["new_chat_ms"] for r in results), 1),
            # how long text waited between two puts on screen (the median answer's)
            "screen_gap_p50_ms": median(
                [r["screen_gap_p50_ms"] for r in results if r.get("screen_gap_p50_ms")]
            ),
        },
        **lag_figures(samples),
        **input_figures(inputs),
    )


SAMPLER_TOKENS_MIN = 0.95  # the sampler may cost the pipeline at most 5 % of its tokens/s


def sampler_verdicts(runs: list[RunFigures]) -> list[Check]:
    """The sampler's cost, measured in the same run: the fixed pipeline with the window's
    sampler on (as in a class) beside the same answers with it off."""
    by = {r.mode: r for r in runs}
    on, off = by.get("fixed"), by.get("fixed-unsampled")
    if on is None or off is None or not on.tokens_per_s or not off.tokens_per_s:
        return []
    ratio = on.tokens_per_s / off.tokens_per_s
    return [
        Check(
            "the sampler costs the fixed pipeline <= 5 % of its tokens/s",
            ratio >= SAMPLER_TOKENS_MIN,
            f"{on.tokens_per_s:g} vs {off.tokens_per_s:g} tokens/s ({ratio:.3f} x); lag p99 "
            f"{on.lag_p99_ms} vs {off.lag_p99_ms} ms, max {on.lag_max_ms} vs {off.lag_max_ms} ms",
            on.tokens_per_s,
            off.tokens_per_s,
            "fixed-unsampled tokens/s",
            f">= {SAMPLER_TOKENS_MIN:g} x",
            "tokens/s",
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
    "screen_gap_p50_ms",
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
