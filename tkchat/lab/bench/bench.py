"""``tkchat bench``: the real window, measured, with its baselines in the same run.

Modes (each one object in the JSON ``runs`` list):

- ``idle``  — the window open, nothing streaming: the lag floor of this machine right now.
- ``raw``   — the same worker and model loop with no UI (the main thread just reads the
  queue): the tokens/s ceiling.
- ``fixed`` — the real app pipeline: send, stream (each markdown block rendered once it is
  complete), render the last block, then repeated Stops at random points for the cancel
  latency. ``streaming_slices`` and ``streaming_slice_max_ms`` give what rendering cost
  while the answer streamed; ``long_task_culprits``, who held the loop in each long task
  (tkchat/trace/). ``fixed-unsampled``: the same answers with the window's sampler off.
- with ``--prompt-tokens N``, a long prompt too: the rows of :mod:`tkchat.lab.bench.prompt_bench`.

Everything is timed with ``perf_counter`` on the main thread; targets are ratios against the
baselines of the same run, because these machines are noisy.

The benchmark drives the window from a *script*: a generator that yields what to wait for
(a number of seconds or a condition). A poller re-arms ``after`` to resume it, so the main
loop stays free while the benchmark waits — the bench must not be the thing that freezes it.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import sys
import tempfile
import time
import tkinter as tk
from collections.abc import Callable
from typing import Any

from tkchat.conversation import Message, Sampling
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import LlamaOptions, ScriptedOptions, make_backend
from tkchat.generate.worker import GenerationWorker
from tkchat.lab.bench.figures import (
    FLOOD_LAG_P99_MS,
    LAG_MAX_MS,
    SYSTEM,
    TOKENS_RATIO_MIN,
    BenchOptions,
    RunFigures,
    Timeline,
    format_table,
    input_figures,
    lag_figures,
    lag_p99_bound,
    run_alone,
    sampler_verdicts,
)
from tkchat.lab.bench.scenarios import scenario_verdicts, scenarios
from tkchat.lab.bench.scenarios.saved import history_open, render_long, saved_verdicts
from tkchat.lab.bench.script import BenchWindow, Script, ScriptRunner
from tkchat.lab.display import InputProber, ensure_display
from tkchat.modes import BROKEN_MODES, FIXED, is_outside_mode
from tkchat.stats import median, percentile, rounded, rss_mb
from tkchat.trace.chrome import write_trace
from tkchat.trace.recorder import RecordedRun, RunRecorder
from tkchat.transport.channel import EventChannel
from tkchat.ui.scheduler import CallbackCosts
from tkchat.ui.window.chat_window import AppOptions, ChatApp
from tkchat.ui.window.heap import freeze_startup_objects

UNSAMPLED = "fixed-unsampled"  # the fixed pipeline with the window's sampler off: its cost


class _RssSampler:
    """Samples resident memory every 100 ms from the main loop."""

    def __init__(self, root: tk.Tk) -> None:
        self.root = root
        self.peak = rss_mb()
        self._id: str | None = None

    def start(self) -> float:
        start = rss_mb()
        self.peak = start
        self._tick()
        return start

    def _tick(self) -> None:
        self.peak = max(self.peak, rss_mb())
        self._id = self.root.after(100, self._tick)

    def stop(self) -> float:
        if self._id is not None:
            self.root.after_cancel(self._id)
            self._id = None
        return max(self.peak, rss_mb())


def _started_or_gone(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: worker.tokens > 0 or not worker.is_alive()


def _gone(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: not worker.is_alive()


class Bench:
    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.runs: list[RunFigures] = []
        self.recorded: list[RecordedRun] = []  # each streaming run: culprits, trace
        self.sampling = Sampling(max_tokens=options.tokens, seed=options.seed)

    def request(self) -> GenerationRequest:
        return GenerationRequest(
            (Message("system", SYSTEM), Message("user", self.options.prompt)), self.sampling
        )

    # -- the whole run -------------------------------------------------------------------------

    def run(self) -> list[RunFigures]:
        ensure_display()
        opts = self.options
        scripted = ScriptedOptions(rate=opts.rate, tokens=opts.tokens)
        backend = make_backend(scripted if opts.backend == "scripted" else LlamaOptions(opts.model))
        root = tk.Tk()
        controller = GenerationController(backend, EventChannel())
        # Conversations are saved during the whole run, as in the app, so every figure includes
        # saving; they go to a folder of the run's own, never into the user's history.
        self._data_dir = tempfile.TemporaryDirectory(prefix="tkchat-bench-")
        os.environ["TKCHAT_DATA_DIR"] = self._data_dir.name
        # The scenarios of a saved or long chat reach into the window itself (its Text, its
        # root); the modes' runs only read what the BenchWindow Protocol says.
        self.window = ChatApp(
            root,
            controller,
            AppOptions(sampling=self.sampling, system_prompt=SYSTEM, history=True, language="en"),
        )
        self.app: BenchWindow = self.window
        self.root = root
        self.prober = InputProber(self.app.health)
        self.timelines: list[Timeline] = []
        controller.load_async()
        freeze_startup_objects()  # as the app does (tkchat/ui/window/heap.py)
        runner = ScriptRunner(root, self._script())
        runner.start()
        try:
            root.mainloop()
        finally:
            self.prober.close()
            if not self.app.closed:
                self.app.close()
            self._data_dir.cleanup()
        if runner.error is not None:
            raise runner.error
        return self.runs

    def _script(self) -> Script:
        app = self.app
        yield lambda: app.flow.model_ready or bool(app.transcript.plain_text().strip())
        if not app.flow.model_ready:
            raise RuntimeError("the model did not load: " + app.status.get())
        yield 0.5  # let the window settle after loading
        self.prober.locate()
        self._raw_once()  # warm-up, not counted: the first prompt fills llama.cpp's caches
        yield 0.3
        yield from self._idle()
        if self.options.long_chat:
            yield from self._long_chat()
            return
        raw_tps: list[float] = []
        raw_ttft: list[float] = []
        fixed: list[dict[str, Any]] = []
        unsampled: list[dict[str, Any]] = []
        for _ in range(self.options.repeats):  # alternate, so drift hits both alike
            tps, ttft = self._raw_once()
            raw_tps.append(tps)
            raw_ttft.append(ttft)
            # raw held the main loop on purpose: let the overdue timers fire before measuring
            yield 0.3
            if FIXED in self.options.modes:
                yield from self._fixed_with_and_without_sampler(fixed, unsampled)
        self.runs.append(
            RunFigures(
                mode="raw",
                backend=self.options.backend,
                tokens=self._raw_tokens,
                tokens_per_s=rounded(median(raw_tps), 1),
                ttft_ms=rounded(median(raw_ttft), 1),
            )
        )
        if fixed:
            cancel: dict[str, Any] = {}
            yield from self._cancels(cancel)
            self.runs.append(self._stream_figures(FIXED, fixed, cancel))
            self.runs.append(self._stream_figures(UNSAMPLED, unsampled, {}))
        broken_sampling = self.sampling
        if self.options.backend == "scripted":
            broken_sampling = Sampling(
                max_tokens=min(self.options.tokens, self.options.broken_tokens),
                seed=self.options.seed,
            )
        for mode in self.options.modes:
            if mode == FIXED:
                continue
            result: dict[str, Any] = {}
            yield from self._stream_once(mode, broken_sampling, result)
            self.runs.append(self._stream_figures(mode, [result], {}))
        app.teaching.set_mode(FIXED)
        yield from render_long(self.window, self.runs)
        yield from history_open(self.window, self.runs)
        if self.options.prompt_tokens and self.options.backend == "llama":
            from tkchat.lab.bench.prompt_bench import PromptBench

            yield from PromptBench(app, self.prober, self.options).run(self.runs)
        yield from scenarios(self)  # --turn2, --busy (tkchat/lab/bench/scenarios/)
        app.close()

    def _long_chat(self) -> Script:
        """``--long-chat``: instead of the modes, a long conversation at several lengths."""
        from tkchat.lab.bench.scenarios.long_chat import LongChatBench

        yield from LongChatBench(self.window, self.options, self.options.long_chat).run(self.runs)
        self.app.close()

    # -- idle ----------------------------------------------------------------------------------

    def _idle(self) -> Script:
        rss = _RssSampler(self.root)
        start = rss.start()
        self.app.probe.start_recording()
        yield self.options.idle_s
        samples = self.app.probe.stop_recording()
        peak = rss.stop()
        self.runs.append(
            RunFigures(
                mode="idle",
                backend=self.options.backend,
                rss_start_mb=rounded(start, 1),
                rss_peak_mb=rounded(peak, 1),
                rss_growth_mb=rounded(peak - start, 1),
                seconds=self.options.idle_s,
                **lag_figures(samples),
            )
        )

    # -- raw: the model loop with no UI ---------------------------------------------------------

    def _raw_once(self) -> tuple[float, float]:
        """Main thread, deliberately not returning to the Tk loop: no UI work competes."""
        stats = run_alone(self.app.controller, self.request())
        self._raw_tokens = stats.tokens
        return stats.tokens_per_s or 0.0, stats.ttft_ms or 0.0

    # -- fixed: the real pipeline ---------------------------------------------------------------

    def _fixed_with_and_without_sampler(
        self, fixed: list[dict[str, Any]], unsampled: list[dict[str, Any]]
    ) -> Script:
        """The fixed pipeline as a class runs it (the sampler on), then the same answer with
        the sampler off: its cost, measured in the same run."""
        for runs, sampling in ((fixed, True), (unsampled, False)):
            self.app.witness.force(sampling)
            result: dict[str, Any] = {}
            yield from self._stream_once(FIXED, self.sampling, result)
            runs.append(result)
        self.app.witness.force(None)

    def _stream_once(self, mode: str, sampling: Sampling, result: dict[str, Any]) -> Script:
        """One answer in ``mode``, measured from Send to the end of its markdown render,
        with real clicks on Ping all along."""
        app = self.app
        app.teaching.set_mode(mode)
        rss = _RssSampler(self.root)
        result["rss_start"] = rss.start()
        clearing = time.perf_counter()
        app.flow.new_chat()  # the same one-question prompt as raw, not a growing conversation
        result["new_chat_ms"] = (time.perf_counter() - clearing) * 1000
        # Clearing the last run's answer (650,000 characters after a flood) is a cost of its
        # own, reported as new_chat_ms: let the loop catch up before this run's record starts.
        yield 0.1
        app.session.sampling = sampling  # after new_chat, which starts from the defaults
        inserts_before = app.transcript.inserts
        finished_before = len(app.flow.answering.finished)
        slices_before = len(app.transcript.painter.slice_ms)
        streaming_before = len(app.transcript.painter.streaming_slice_ms)
        recorder = RunRecorder(app.witness.sampler, app.witness.ledger, app.controller)
        recorder.begin()  # the sampler's samples, the callbacks, the tokens: culprits, trace
        app.probe.start_recording()
        callbacks = app.scheduler.costs = CallbackCosts()  # the window's own callbacks' cost
        cpu_began = time.thread_time()
        handled_from = self.prober.begin()
        started = time.perf_counter()
        app.flow.send(self.options.prompt)  # in the blocking modes, this returns at the end
        answer = app.transcript.answers[-1]
        yield lambda: len(app.flow.answering.finished) > finished_before
        final = app.flow.answering.finished[-1]
        streamed_s = time.perf_counter() - started
        yield lambda: not app.transcript.painter.busy  # the final render is part of the run
        yield 0.3  # late clicks of a frozen window arrive now
        result["inputs"] = self.prober.end(handled_from)
        result["samples"] = app.probe.stop_recording()
        name = f"{mode if app.witness.sampler.running else UNSAMPLED} — {len(self.recorded) + 1}"
        self.recorded.append(recorder.end(name, result["samples"], answer.arrivals))
        result["culprits"] = self.recorded[-1].culprits_json(started)
        result["sampler_cpu"] = self.recorded[-1].cost_percent
        app.scheduler.costs = None
        result["cpu_s"] = time.thread_time() - cpu_began
        result["callback_cpu_max"] = callbacks.worst_ms
        result["rss_peak"] = rss.stop()
        app.session.sampling = self.sampling
        if isinstance(final, Error):
            raise RuntimeError(f"{mode} generation failed: {final.message}")
        result["tokens"] = final.stats.tokens
        result["tps"] = final.stats.tokens_per_s or (
            final.stats.tokens / final.stats.elapsed_s if final.stats.elapsed_s else 0.0
        )
        first = answer.first_text_at
        result["ttft"] = (first - answer.started_at) * 1000 if first else None
        result["ups"] = (app.transcript.inserts - inserts_before) / streamed_s
        result["slices"] = app.transcript.painter.slice_ms[slices_before:]
        result["streaming_slices"] = app.transcript.painter.streaming_slice_ms[streaming_before:]
        result["seconds"] = time.perf_counter() - started
        costs = list(getattr(app.flow.answering.pipeline, "render_costs", []))
        self.timelines.append(
            Timeline(mode, started, result["samples"], list(answer.arrivals), costs)
        )

    def _cancels(self, cancel: dict[str, Any]) -> Script:
        """Stop at random points; measure Stop -> the worker has left the model loop."""
        app = self.app
        rng = random.Random(self.options.seed)
        latencies: list[float] = []
        for _ in range(self.options.cancels):
            app.flow.new_chat()
            app.flow.send(self.options.prompt)
            worker = app.controller.current
            assert worker is not None
            yield _started_or_gone(worker)
            yield rng.uniform(0.02, 0.3)
            if not worker.is_alive():
                continue  # finished before the stop: not a cancel sample
            app.flow.stop()
            yield _gone(worker)
            if worker.cancelled_at is not None and worker.exited_at is not None:
                latencies.append((worker.exited_at - worker.cancelled_at) * 1000)
        yield lambda: not app.transcript.painter.busy
        cancel["latencies"] = latencies

    def _stream_figures(
        self, mode: str, fixed: list[dict[str, Any]], cancel: dict[str, Any]
    ) -> RunFigures:
        samples = [s for r in fixed for s in r["samples"]]
        inputs = [x for r in fixed for x in r["inputs"]]
        slices = [s for r in fixed for s in r["slices"]]
        streaming = [s for r in fixed for s in r["streaming_slices"]]
        tps = median([r["tps"] for r in fixed])
        latencies = cancel.get("latencies", [])
        p99 = percentile(latencies, 99)
        start = min(r["rss_start"] for r in fixed)
        peak = max(r["rss_peak"] for r in fixed)
        return RunFigures(
            mode=mode,
            backend=self.options.backend,
            tokens=fixed[-1]["tokens"],
            tokens_per_s=rounded(tps, 1),
            ttft_ms=rounded(median([r["ttft"] for r in fixed if r["ttft"] is not None]), 1),
            ui_updates_per_s=rounded(median([r["ups"] for r in fixed]), 1),
            cancel_p50_ms=rounded(percentile(latencies, 50), 2),
            cancel_p99_ms=rounded(p99, 2),
            cancel_p99_token_periods=(
                rounded(p99 * tps / 1000, 2) if p99 is not None and tps else None
            ),
            rss_start_mb=rounded(start, 1),
            rss_peak_mb=rounded(peak, 1),
            rss_growth_mb=rounded(peak - start, 1),
            render_slice_max_ms=rounded(max(slices) if slices else None, 2),
            seconds=rounded(sum(r["seconds"] for r in fixed), 2),
            extra={
                "cancel_samples": len(latencies),
                "repeats": len(fixed),
                "input_events": len(inputs),
                # markdown rendered while the answer streamed (per generation, median)
                "streaming_slices": rounded(median([len(r["streaming_slices"]) for r in fixed])),
                "streaming_slice_max_ms": rounded(max(streaming) if streaming else None, 2),
                # every long task, with who held the loop (tkchat/trace/culprit.py)
                "long_task_culprits": [c for r in fixed for c in r.get("culprits", [])],
                "sampler_cpu_percent": rounded(median([r["sampler_cpu"] or 0 for r in fixed])),
                # the main thread's own work: its CPU per second, its costliest callback
                "main_cpu_per_s": rounded(
                    sum(r["cpu_s"] for r in fixed) / sum(r["seconds"] for r in fixed), 3
                ),
                "callback_cpu_max_ms": rounded(max(r["callback_cpu_max"] for r in fixed), 2),
                # New chat before each run: clearing the previous run's answer (the worst)
                "new_chat_max_ms": rounded(max(r["new_chat_ms"] for r in fixed), 1),
            },
            **lag_figures(samples),
            **input_figures(inputs),
        )


# -- verdicts and output ---------------------------------------------------------------------


def verdicts(runs: list[RunFigures], options: BenchOptions) -> list[tuple[str, bool, str]]:
    """The issue's targets, checked against this run's own baselines.

    On the model: lag p99 within 2x idle (or 2 ms), lag max 16 ms, no long task, tokens/s
    at least 0.95x raw, cancel within 2 token periods. For a scripted flood: lag p99 16 ms,
    lag max 16 ms, no long task, and resident memory growing less than 100 MB. Both: no
    markdown slice over 16 ms while the answer streams."""
    by = {r.mode: r for r in runs}
    idle, raw, fixed = by.get("idle"), by.get("raw"), by.get(FIXED)
    out: list[tuple[str, bool, str]] = []
    for mode in BROKEN_MODES:
        broken = by.get(mode)
        if broken is None or broken.lag_max_ms is None or fixed is None:
            continue
        base = fixed.lag_max_ms or 0.0
        out.append(
            (
                f"{mode} (broken) freezes: lag max >= 5 x fixed's",
                broken.lag_max_ms >= 5 * max(base, 1.0),
                f"{broken.lag_max_ms:.0f} ms vs {base:.1f} ms, input max {broken.input_max_ms} ms",
            )
        )
    if any(r.mode.startswith("chat-") for r in runs):
        from tkchat.lab.bench.scenarios.long_chat import long_chat_verdicts

        out += long_chat_verdicts(runs)
    out += saved_verdicts(by)
    if by.get("prompt") is not None:
        from tkchat.lab.bench.prompt_bench import prompt_verdicts

        idle_p99 = idle.lag_p99_ms if idle is not None else None
        out += prompt_verdicts(runs, lag_p99_bound(idle_p99) if idle_p99 is not None else 2.0)
    if fixed is not None:
        streaming_max = fixed.extra.get("streaming_slice_max_ms")
        if streaming_max is not None:
            out.append(
                (
                    "markdown slices while streaming <= 16 ms",
                    streaming_max <= 16.0,
                    f"max {streaming_max:.2f} ms over {fixed.extra['streaming_slices']:.0f} "
                    "slices per answer",
                )
            )
    flood = options.backend == "scripted"
    if fixed is not None:
        out += stream_verdicts(FIXED, fixed, idle, raw, flood=flood)
    for run in runs:  # pipelines of one's own (--modes mine.py:Pipeline): held to the same
        if is_outside_mode(run.mode):
            out += stream_verdicts(run.mode, run, idle, raw, flood=flood)
    return out


def stream_verdicts(
    name: str,
    run: RunFigures,
    idle: RunFigures | None,
    raw: RunFigures | None,
    *,
    flood: bool,
) -> list[tuple[str, bool, str]]:
    """The targets a streaming pipeline is held to (see :func:`verdicts`), for ``run``."""
    out: list[tuple[str, bool, str]] = []
    if run.lag_p99_ms is None or run.lag_max_ms is None:
        return out
    prefix = "" if name == FIXED else f"{name}: "
    if flood:
        return _flood_verdicts(prefix, run)
    if idle is not None and idle.lag_p99_ms is not None:
        bound = lag_p99_bound(idle.lag_p99_ms)
        out.append(
            (
                f"{name} lag p99 <= {bound:.2f} ms",
                run.lag_p99_ms <= bound,
                f"{run.lag_p99_ms:.2f} ms",
            )
        )
    out.append(
        (
            f"{name} lag max <= {LAG_MAX_MS:g} ms",
            run.lag_max_ms <= LAG_MAX_MS,
            f"{run.lag_max_ms:.2f} ms",
        )
    )
    out.append((f"{name} long tasks == 0", run.long_tasks == 0, str(run.long_tasks)))
    if raw is not None and raw.tokens_per_s and run.tokens_per_s:
        ratio = run.tokens_per_s / raw.tokens_per_s
        out.append(
            (
                f"{name} tokens/s >= {TOKENS_RATIO_MIN:g} x raw",
                ratio >= TOKENS_RATIO_MIN,
                f"{ratio:.3f} x",
            )
        )
    if run.cancel_p99_token_periods is not None:
        out.append(
            (
                f"{prefix}cancel p99 <= 2 token periods",
                run.cancel_p99_token_periods <= 2,
                f"{run.cancel_p99_token_periods:.2f} periods ({run.cancel_p99_ms} ms)",
            )
        )
    return out


def _flood_verdicts(prefix: str, run: RunFigures) -> list[tuple[str, bool, str]]:
    """A scripted flood's targets: a frame at p99 and at most, no long task, bounded memory."""
    assert run.lag_p99_ms is not None and run.lag_max_ms is not None
    worst = run.extra.get("callback_cpu_max_ms")
    out = [
        (
            f"{prefix}flood lag p99 <= {FLOOD_LAG_P99_MS:g} ms",
            run.lag_p99_ms <= FLOOD_LAG_P99_MS,
            f"{run.lag_p99_ms:.2f} ms",
        ),
        (
            f"{prefix}flood lag max <= {LAG_MAX_MS:g} ms",
            run.lag_max_ms <= LAG_MAX_MS,
            f"{run.lag_max_ms:.2f} ms"
            + (f" (the costliest callback: {worst:.1f} ms of CPU)" if worst else ""),
        ),
        (f"{prefix}flood long tasks == 0", run.long_tasks == 0, str(run.long_tasks)),
    ]
    if run.rss_growth_mb is not None:
        out.append(
            (
                f"{prefix}flood RSS growth < 100 MB",
                run.rss_growth_mb < 100,
                f"{run.rss_growth_mb:.1f} MB",
            )
        )
    return out


def _load() -> float | None:
    """The machine's 1-minute load average (None where there is none: Windows)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def run_bench(options: BenchOptions) -> int:
    started = time.time()
    load_before = _load()
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
    else:
        bench = Bench(options)
        runs = bench.run()
        checks = verdicts(runs, options) + sampler_verdicts(runs) + scenario_verdicts(runs)
    columns: tuple[str, ...] = ()
    if options.long_chat:
        from tkchat.lab.bench.scenarios.long_chat import COLUMNS as columns
    print(format_table(runs, columns))
    print()
    for name, ok, figure in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {figure}")
    if options.json_path is not None:
        payload = {
            "command": "tkchat " + shlex.join(sys.argv[1:]),
            "backend": options.backend,
            "tokens": options.tokens,
            "rate": options.rate if options.backend == "scripted" else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "python": sys.version.split()[0],
            "tk": tk.TkVersion,
            "load_1min": [load_before, _load()],  # before and after: how busy the machine was
            "runs": [r.as_json() for r in runs],
            **({"columns": list(columns)} if columns else {}),
            "targets": [{"target": n, "pass": ok, "figure": f} for n, ok, f in checks],
        }
        options.json_path.parent.mkdir(parents=True, exist_ok=True)
        options.json_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote {options.json_path}")
    if options.trace_path is not None and options.transport != "sse":
        command = "tkchat " + shlex.join(sys.argv[1:])
        traces = [r.trace for r in bench.recorded]
        print(f"wrote {write_trace(options.trace_path, traces, command=command)}")
    if options.report_dir is not None:
        from tkchat.lab.bench.report import write_report

        path = write_report(
            options.report_dir, runs, bench.timelines, checks, options, format_table(runs)
        )
        print(f"wrote {path}")
    return 0
