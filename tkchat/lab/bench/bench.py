"""``tkchat bench``: the real window, measured, with its baselines in the same run.

Modes (each one object in the JSON ``runs`` list):

- ``idle``  — the window open, nothing streaming: the lag floor of this machine right now.
- ``raw``   — the same worker and model loop with no UI (the main thread just reads the
  queue): the tokens/s ceiling.
- ``fixed`` — the real app pipeline: send, stream (each markdown block rendered once it is
  complete), render the last block, then repeated Stops at random points for the cancel
  latency. ``streaming_slices`` and ``streaming_slice_max_ms`` give what rendering cost
  while the answer streamed; ``long_task_culprits``, who held the loop in each long task
  (tkchat/trace/). ``fixed-unsampled``: the same answers with the window's sampler off;
  ``fixed-stages``: with the pipeline view open (tkchat/lab/bench/scenarios/stages.py);
  ``plain``: the simplest correct consumer with every instrument off, and
  ``fixed-no-health``, ``fixed-5ms-switch``, ``fixed-default-slice``, ``fixed-plain-text``:
  the shipped window less one instrument (tkchat/lab/bench/scenarios/costs.py: what each
  costs, a table of its own).
- each other mode asked for, on the same prompt: a correct one (asyncio done right) with the
  fixed pipeline's answer, a broken one with a scripted flood's answer cut short
  (:meth:`BenchOptions.broken_sampling`). Each row's ``screen_gap_p50_ms`` is how long text
  waited between two puts on screen: a slow poll's mistake, which its lag does not show;
- then the scenarios (tkchat/lab/bench/scenarios/): the final render of a long answer, a
  saved chat opened, and what the options ask for (``--prompt-tokens``, ``--turn2``,
  ``--busy``); or, with ``--long-chat``, a long chat instead of the modes.

Everything is timed with ``perf_counter`` on the main thread; targets are ratios against the
baselines of the same run (tkchat/lab/bench/verdicts.py), because these machines are noisy.

The benchmark drives the window from a *script*: a generator that yields what to wait for
(a number of seconds or a condition). A poller re-arms ``after`` to resume it, so the main
loop stays free while the benchmark waits — the bench must not be the thing that freezes it.
:class:`Bench` measures with four public scripts (:meth:`Bench.idle`, :meth:`Bench.raw_once`,
:meth:`Bench.stream_once`, :meth:`Bench.cancels`): the scenarios use them through the
:class:`~tkchat.lab.bench.scenarios.runs.BenchRuns` Protocol, never this module. Main thread only.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import tkinter as tk
from collections.abc import Callable

from tkchat.conversation import Message, Sampling
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController, Running
from tkchat.generate.factory import LlamaOptions, ScriptedOptions, make_backend
from tkchat.lab.bench.figures import (
    SYSTEM,
    BenchOptions,
    RunFigures,
    StreamResult,
    Timeline,
    lag_figures,
    run_alone,
    screen_gap_figures,
    stream_figures,
)
from tkchat.lab.bench.scenarios import scenarios
from tkchat.lab.bench.scenarios.costs import ROWS as COST_ROWS
from tkchat.lab.bench.scenarios.costs import UNSAMPLED, cost_answers
from tkchat.lab.bench.scenarios.saved import history_open, render_long
from tkchat.lab.bench.scenarios.stages import STAGES, with_stage_view
from tkchat.lab.bench.script import Script, ScriptRunner
from tkchat.lab.display import InputProber, ensure_display
from tkchat.lab.window import (
    AppOptions,
    Instruments,
    LabWindow,
    open_lab_window,
    set_aside_records,
)
from tkchat.modes import CORRECT_MODES, FIXED
from tkchat.stats import median, rounded, rss_mb
from tkchat.trace.recorder import RecordedRun
from tkchat.transport.channel import EventChannel


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


def _started_or_gone(worker: Running) -> Callable[[], bool]:
    return lambda: worker.tokens > 0 or not worker.is_alive()


def _gone(worker: Running) -> Callable[[], bool]:
    return lambda: not worker.is_alive()


class Bench:
    """One run of the bench: the window, its script, the rows it measured (``runs``), each
    streamed answer's record (``recorded``: culprits, trace) and lag timeline (``timelines``).
    Satisfies :class:`~tkchat.lab.bench.scenarios.runs.BenchRuns` (mypy checks it where
    :func:`~tkchat.lab.bench.scenarios.scenarios` is given one)."""

    def __init__(self, options: BenchOptions) -> None:
        self.options = options
        self.runs: list[RunFigures] = []
        self.recorded: list[RecordedRun] = []
        self.timelines: list[Timeline] = []
        self.sampling = options.sampling()

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
        options = AppOptions(
            sampling=self.sampling, system_prompt=SYSTEM, history=True, language="en"
        )
        window = open_lab_window(root, controller, options, freeze=True)  # as the app runs
        self.app: LabWindow = window
        self.tools: Instruments = window.instruments
        self.root = root
        self.prober = InputProber(self.app)
        controller.load_async()
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
        app, tools = self.app, self.tools
        yield lambda: app.model_ready or tools.model_failed
        if not app.model_ready:
            raise RuntimeError("the model did not load: " + tools.status_text)
        yield 0.5  # let the window settle after loading
        if self.options.clicks:
            self.prober.locate()
        self.raw_once()  # warm-up, not counted: the first prompt fills llama.cpp's caches
        yield 0.3
        yield from self.idle()
        if self.options.long_chat:
            yield from self._long_chat()
            return
        yield from self._raw_and_fixed()
        broken_sampling = self.options.broken_sampling()
        for mode in self.options.modes:
            if mode == FIXED:
                continue
            # a correct mode streams the fixed pipeline's answer, to be held to its targets
            sampling = self.sampling if mode in CORRECT_MODES else broken_sampling
            result: StreamResult = {}
            yield from self.stream_once(mode, sampling, result)
            self.runs.append(stream_figures(mode, self.options.backend, [result]))
        tools.set_mode(FIXED)
        yield from render_long(app, self.runs)
        yield from history_open(app, self.runs)
        if self.options.prompt_tokens and self.options.backend == "llama":
            from tkchat.lab.bench.prompt_bench import PromptBench

            yield from PromptBench(app, self.prober, self.options).run(self.runs)
        yield from scenarios(self)  # --turn2, --busy (tkchat/lab/bench/scenarios/)
        app.close()

    def _raw_and_fixed(self) -> Script:
        """The model alone and the fixed pipeline, in turn (so drift hits both alike), then
        the Stops: rows ``raw``, ``fixed``, ``fixed-unsampled`` and ``fixed-stages`` (the
        stage view's answer goes first every other repeat: the window's first answer pays
        costs of its own), then the plain window and the fixed one less each instrument
        (tkchat/lab/bench/scenarios/costs.py)."""
        raw_tps: list[float] = []
        raw_ttft: list[float] = []
        fixed: list[StreamResult] = []
        unsampled: list[StreamResult] = []
        stages: list[StreamResult] = []
        costs: dict[str, list[StreamResult]] = {}
        for repeat in range(self.options.repeats):
            tps, ttft = self.raw_once()
            raw_tps.append(tps)
            raw_ttft.append(ttft)
            # raw held the main loop on purpose: let the overdue timers fire before measuring
            yield 0.3
            if FIXED in self.options.modes:
                if repeat % 2:
                    yield from with_stage_view(self, stages)
                yield from self._fixed_with_and_without_sampler(
                    fixed, unsampled, sampled_first=repeat % 2 == 0
                )
                if not repeat % 2:
                    yield from with_stage_view(self, stages)
                if self.options.costs:
                    yield from cost_answers(self, repeat, costs)
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
            latencies: list[float] = []
            yield from self.cancels(latencies)
            backend = self.options.backend
            self.runs.append(stream_figures(FIXED, backend, fixed, latencies))
            self.runs.append(stream_figures(UNSAMPLED, backend, unsampled))
            self.runs.append(stream_figures(STAGES, backend, stages))
            self.runs += [
                stream_figures(row, backend, costs[row]) for row in COST_ROWS if row in costs
            ]

    def _long_chat(self) -> Script:
        """``--long-chat``: instead of the modes, a long conversation at several lengths."""
        from tkchat.lab.bench.scenarios.long_chat import LongChatBench

        yield from LongChatBench(self.app, self.options, self.options.long_chat).run(self.runs)
        self.app.close()

    # -- idle ----------------------------------------------------------------------------------

    def idle(self, mode: str = "idle") -> Script:
        """The window open, nothing streaming, for ``--idle-seconds``: a row ``mode`` (lag,
        memory), this machine's lag floor right now."""
        rss = _RssSampler(self.root)
        start = rss.start()
        self.app.start_lag_recording()
        yield self.options.idle_s
        samples = self.app.stop_lag_recording()
        peak = rss.stop()
        self.runs.append(
            RunFigures(
                mode=mode,
                backend=self.options.backend,
                rss_start_mb=rounded(start, 1),
                rss_peak_mb=rounded(peak, 1),
                rss_growth_mb=rounded(peak - start, 1),
                seconds=self.options.idle_s,
                **lag_figures(samples),
            )
        )

    # -- raw: the model loop with no UI ---------------------------------------------------------

    def raw_once(self) -> tuple[float, float]:
        """The model alone, no window reading its events: (tokens/s, TTFT ms). Main thread,
        deliberately not returning to the Tk loop: no UI work competes."""
        stats = run_alone(self.app.controller, self.request())
        self._raw_tokens = stats.tokens
        return stats.tokens_per_s or 0.0, stats.ttft_ms or 0.0

    # -- fixed: the real pipeline ---------------------------------------------------------------

    def _fixed_with_and_without_sampler(
        self, fixed: list[StreamResult], unsampled: list[StreamResult], *, sampled_first: bool
    ) -> Script:
        """The fixed pipeline as a class runs it (the sampler on), and the same answer with
        the sampler off: its cost, measured in the same run. The order alternates from one
        repeat to the next (on, off; off, on): the window's first answer pays costs of its
        own (the first code block's tags and fonts), which were all charged to the sampler."""
        pair = [(fixed, True), (unsampled, False)]
        for runs, sampling in pair if sampled_first else pair[::-1]:
            self.tools.sample_loop(sampling)
            result: StreamResult = {}
            yield from self.stream_once(FIXED, self.sampling, result)
            runs.append(result)
        self.tools.sample_loop(None)

    def stream_once(
        self, mode: str, sampling: Sampling, result: StreamResult, *, row: str | None = None
    ) -> Script:
        """One answer in ``mode`` with ``sampling`` from Send to the end of its markdown
        render, real clicks on Ping all along, into ``result`` (for ``stream_figures``);
        ``row``: the row it is for, which names its trace (by default :meth:`_row_of`)."""
        app, tools = self.app, self.tools
        tools.set_mode(mode)
        rss = _RssSampler(self.root)
        result["rss_start"] = rss.start()
        result["new_chat_ms"] = self._new_chat()
        # Clearing the last run's answer (650,000 characters after a flood) is a cost of its
        # own, reported as new_chat_ms: let the loop catch up before this run's record starts.
        yield 0.1
        tools.sampling = sampling  # after new_chat, which starts from the defaults
        before = tools.counts()
        finished_before = len(app.finished)
        recorder = tools.run_recorder()
        recorder.begin()  # the sampler's samples, the callbacks, the tokens: culprits, trace
        app.start_lag_recording()
        callbacks = tools.time_callbacks()  # the window's own callbacks' cost
        cpu_began = time.thread_time()
        handled_from = self.prober.begin()
        started = time.perf_counter()
        app.send(self.options.prompt)  # in the blocking modes, this returns at the end
        yield lambda: len(app.finished) > finished_before
        final = app.finished[-1]
        streamed_s = time.perf_counter() - started
        yield lambda: not tools.painting  # the final render is part of the run
        yield 0.3  # late clicks of a frozen window arrive now
        answer = tools.answer_times()
        result["inputs"] = self.prober.end(handled_from)
        result["samples"] = app.stop_lag_recording()
        name = f"{row or self._row_of(mode)} — {len(self.recorded) + 1}"
        self.recorded.append(recorder.end(name, result["samples"], answer.arrivals))
        result["culprits"] = self.recorded[-1].culprits_json(started)
        result["sampler_cpu"] = self.recorded[-1].cost_percent
        tools.stop_timing_callbacks()
        result["cpu_s"] = time.thread_time() - cpu_began
        result.update(callback_cpu_max=callbacks.worst_ms, callback_cpu_max_in=callbacks.worst)
        result["rss_peak"] = rss.stop()
        tools.sampling = self.sampling
        if isinstance(final, Error):
            raise RuntimeError(f"{mode} generation failed: {final.message}")
        result["tokens"] = final.stats.tokens
        result["tps"] = final.stats.tokens_per_s or (
            final.stats.tokens / final.stats.elapsed_s if final.stats.elapsed_s else 0.0
        )
        result.update(screen_gap_figures(answer.arrivals))
        first = answer.first_text_at
        result["ttft"] = (first - answer.started_at) * 1000 if first else None
        result["ups"] = (tools.counts().inserts - before.inserts) / streamed_s
        result["slices"] = tools.slice_ms(before.slices)
        result["streaming_slices"] = tools.streaming_slice_ms(before.streaming_slices)
        result["seconds"] = time.perf_counter() - started
        costs = list(getattr(tools.pipeline, "render_costs", []))
        self.timelines.append(Timeline(mode, started, result["samples"], [*answer.arrivals], costs))

    def _new_chat(self) -> float:
        """A new chat for the next run (the same one-question prompt as raw, not a growing
        conversation), in milliseconds; then the bench's own records of the runs before
        (lag samples, callbacks, the sampler's samples: 44,000 objects by the third repeat),
        which are not the window's, out of the collector before this run is measured, or a
        full collection walking them falls in its answer (32 ms of the main thread's CPU,
        the fixed row's lag max)."""
        clearing = time.perf_counter()
        self.tools.new_chat()
        took = (time.perf_counter() - clearing) * 1000
        set_aside_records()
        return took

    def _row_of(self, mode: str) -> str:
        """The row an answer in ``mode`` is measured for, as the window is now."""
        if self.tools.stages_open:
            return STAGES
        return mode if self.tools.sampler.running else UNSAMPLED

    def cancels(self, latencies: list[float]) -> Script:
        """Stop at random points (``--cancels`` times); append each Stop's latency, Stop ->
        the worker has left the model loop, in ms to ``latencies``."""
        app, tools = self.app, self.tools
        rng = random.Random(self.options.seed)
        for _ in range(self.options.cancels):
            tools.new_chat()
            app.send(self.options.prompt)
            worker = app.controller.running  # a worker, or an asyncio mode's task
            assert worker is not None
            yield _started_or_gone(worker)
            yield rng.uniform(0.02, 0.3)
            if not worker.is_alive():
                continue  # finished before the stop: not a cancel sample
            app.stop()
            yield _gone(worker)
            if worker.cancelled_at is not None and worker.exited_at is not None:
                latencies.append((worker.exited_at - worker.cancelled_at) * 1000)
        yield lambda: not tools.painting
