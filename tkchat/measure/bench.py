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
- with ``--prompt-tokens N``, a long prompt too: the rows of :mod:`tkchat.measure.prompt_bench`.

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
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tkinter as tk
from collections.abc import Callable
from typing import Any

from tkchat.conversation import Message, Sampling
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import make_backend
from tkchat.generate.scripted import long_answer
from tkchat.generate.worker import GenerationWorker
from tkchat.measure.display import ensure_display
from tkchat.measure.figures import (
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
from tkchat.measure.scenarios import scenario_verdicts, scenarios
from tkchat.measure.script import BenchWindow, Script, ScriptRunner
from tkchat.modes import BROKEN_MODES, FIXED, is_outside_mode
from tkchat.render.safe_markdown import markdown_to_safe_html
from tkchat.stats import median, percentile, rounded, rss_mb
from tkchat.threads import own_thread
from tkchat.trace.chrome import write_trace
from tkchat.trace.recorder import RecordedRun, RunRecorder
from tkchat.transport.channel import EventChannel
from tkchat.ui.health import HealthBar
from tkchat.ui.look.html_fonts import stock_tkhtmlview
from tkchat.ui.window.chat_window import AppOptions, ChatApp

OTHER_CONVERSATIONS = 300  # besides the long one, in the history run
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


class InputProber:
    """Clicks the window's Ping button every 100 ms with real X events, from its own thread,
    noting the time just before each click; the button's handler notes when it ran."""

    def __init__(self, health: HealthBar) -> None:
        self.health = health
        self.point: tuple[int, int] | None = None
        self.sent: list[float] = []
        self._active, self._quit = threading.Event(), threading.Event()
        self._thread = own_thread(self._run, name="tkchat-input-prober")
        self.available = shutil.which("xdotool") is not None

    def locate(self) -> None:
        """Main thread: where the Ping button is on the screen."""
        button = self.health.ping_button
        self.point = (
            button.winfo_rootx() + button.winfo_width() // 2,
            button.winfo_rooty() + button.winfo_height() // 2,
        )
        if self.available:
            self._thread.start()

    def begin(self) -> int:
        """Main thread: start clicking; returns the handler count to pair from."""
        self.sent = []
        self._active.set()
        return len(self.health.ping_times)

    def end(self, handled_from: int) -> list[float]:
        """Main thread: stop clicking; the latencies (ms) of the clicks handled so far."""
        self._active.clear()
        handled = self.health.ping_times[handled_from:]
        return [(h - s) * 1000 for s, h in zip(self.sent, handled, strict=False)]

    def close(self) -> None:
        self._quit.set()
        self._active.set()

    def _run(self) -> None:
        """Prober thread: never touches Tk, only runs xdotool."""
        while not self._quit.is_set():
            self._active.wait()
            if self._quit.is_set() or self.point is None:
                return
            self.sent.append(time.perf_counter())
            subprocess.run(
                ["xdotool", "mousemove", *map(str, self.point), "click", "1"],
                check=False,
                timeout=30,
            )
            time.sleep(0.1)


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
        backend = make_backend(opts.backend, model=opts.model, rate=opts.rate, tokens=opts.tokens)
        root = tk.Tk()
        controller = GenerationController(backend, EventChannel())
        # Conversations are saved during the whole run, as in the app, so every figure includes
        # saving; they go to a folder of the run's own, never into the user's history.
        self._data_dir = tempfile.TemporaryDirectory(prefix="tkchat-bench-")
        os.environ["TKCHAT_DATA_DIR"] = self._data_dir.name
        self.app: BenchWindow = ChatApp(
            root,
            controller,
            AppOptions(sampling=self.sampling, system_prompt=SYSTEM, history=True, language="en"),
        )
        self.root = root
        self.prober = InputProber(self.app.health)
        self.timelines: list[Timeline] = []
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
        app = self.app
        yield lambda: app.model_ready or bool(app.transcript.plain_text().strip())
        if not app.model_ready:
            raise RuntimeError("the model did not load: " + app.status.get())
        yield 0.5  # let the window settle after loading
        self.prober.locate()
        self._raw_once()  # warm-up, not counted: the first prompt fills llama.cpp's caches
        yield 0.3
        yield from self._idle()
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
        yield from self._render_long()
        yield from self._history_open()
        if self.options.prompt_tokens and self.options.backend == "llama":
            from tkchat.measure.prompt_bench import PromptBench

            yield from PromptBench(app, self.prober, self.options).run(self.runs)
        yield from scenarios(self)  # --turn2, --busy (tkchat/measure/scenarios/)
        app.close()

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
        app.new_chat()  # the same one-question prompt as raw, not a growing conversation
        app.session.sampling = sampling  # after new_chat, which starts from the defaults
        inserts_before = app.transcript.inserts
        finished_before = len(app.finished)
        slices_before = len(app.transcript.painter.slice_ms)
        streaming_before = len(app.transcript.painter.streaming_slice_ms)
        recorder = RunRecorder(app.witness.sampler, app.witness.ledger, app.controller)
        recorder.begin()  # the sampler's samples, the callbacks, the tokens: culprits, trace
        app.probe.start_recording()
        handled_from = self.prober.begin()
        started = time.perf_counter()
        app.send(self.options.prompt)  # in the blocking modes, this returns at the end
        answer = app.transcript.answers[-1]
        yield lambda: len(app.finished) > finished_before
        final = app.finished[-1]
        streamed_s = time.perf_counter() - started
        yield lambda: not app.transcript.painter.busy  # the final render is part of the run
        yield 0.3  # late clicks of a frozen window arrive now
        result["inputs"] = self.prober.end(handled_from)
        result["samples"] = app.probe.stop_recording()
        name = f"{mode if app.witness.sampler.running else UNSAMPLED} — {len(self.recorded) + 1}"
        self.recorded.append(recorder.end(name, result["samples"], answer.arrivals))
        result["culprits"] = self.recorded[-1].culprits_json(started)
        result["sampler_cpu"] = self.recorded[-1].cost_percent
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
        costs = list(getattr(app.pipeline, "render_costs", []))
        self.timelines.append(
            Timeline(mode, started, result["samples"], list(answer.arrivals), costs)
        )

    def _cancels(self, cancel: dict[str, Any]) -> Script:
        """Stop at random points; measure Stop -> the worker has left the model loop."""
        app = self.app
        rng = random.Random(self.options.seed)
        latencies: list[float] = []
        for _ in range(self.options.cancels):
            app.new_chat()
            app.send(self.options.prompt)
            worker = app.controller.current
            assert worker is not None
            yield _started_or_gone(worker)
            yield rng.uniform(0.02, 0.3)
            if not worker.is_alive():
                continue  # finished before the stop: not a cancel sample
            app.stop()
            yield _gone(worker)
            if worker.cancelled_at is not None and worker.exited_at is not None:
                latencies.append((worker.exited_at - worker.cancelled_at) * 1000)
        yield lambda: not app.transcript.painter.busy
        cancel["latencies"] = latencies

    def _render_long(self) -> Script:
        """The final markdown render of an 11,000-character answer with code blocks.

        Baseline in the same run: one whole-document ``set_html`` — the "render once at the
        end" that freezes the window — timed first, on a scratch widget, outside the record."""
        from tkhtmlview import HTMLText

        app = self.app
        app.new_chat()
        text = long_answer(11_000)
        html = markdown_to_safe_html(text)
        with stock_tkhtmlview():
            scratch = HTMLText(self.root)
            began = time.perf_counter()
            scratch.set_html(html)
            whole_ms = (time.perf_counter() - began) * 1000
            scratch.destroy()
        yield 0.3
        view = app.transcript.begin_answer()
        app.transcript.append(view, text, live=False)  # as if it had streamed in
        slices_before = len(app.transcript.painter.slice_ms)
        app.probe.start_recording()
        started = time.perf_counter()
        app.transcript.finish(view)
        yield lambda: not app.transcript.painter.busy
        seconds = time.perf_counter() - started
        yield 0.2
        samples = app.probe.stop_recording()
        slices = app.transcript.painter.slice_ms[slices_before:]
        self.runs.append(
            RunFigures(
                mode="render",
                backend="markdown",
                render_slice_max_ms=rounded(max(slices), 2),
                seconds=rounded(seconds, 3),
                extra={
                    "answer_chars": len(text),
                    "slices": len(slices),
                    "whole_document_set_html_ms": rounded(whole_ms, 1),
                    # what one stock set_html costs per 1,000 characters of markdown: the
                    # figure the painter's block size (render/) is chosen against
                    "set_html_ms_per_1000_chars": rounded(whole_ms / len(text) * 1000, 2),
                },
                **lag_figures(samples),
            )
        )

    def _history_open(self) -> Script:
        """A saved conversation of 200 messages and about 100,000 characters: opened, rendered
        and scrolled from top to bottom, with the lag probe recording all along."""
        app = self.app
        archive = app.archive
        if archive is None or archive.store is None:
            return
        answer = long_answer(1_000)[:995]  # with the questions: just over 100,000 characters
        conversation = archive.store.create("bench: a long conversation")
        for index in range(100):  # set-up, not measured
            archive.store.add_message(conversation.id, "user", f"Question {index + 1}?")
            archive.store.add_message(conversation.id, "assistant", answer)
        for index in range(OTHER_CONVERSATIONS):  # a history of many chats, for the sidebar
            other = archive.store.create(f"bench: chat {index + 1}")
            archive.store.add_message(other.id, "user", f"Tell me about mutex {index}.")
            archive.store.add_message(other.id, "assistant", answer[:400])
        stored = archive.store.messages(conversation.id)
        yield 0.3
        app.probe.start_recording()
        slices_before = len(app.transcript.painter.slice_ms)
        started = time.perf_counter()
        saved = app.conversations
        assert saved is not None  # history=True
        saved.show(conversation.id)
        yield lambda: not app.showing_conversation and not app.transcript.painter.busy
        opened_s = time.perf_counter() - started
        for step in range(21):  # scroll through it, top to bottom
            app.transcript.text.yview_moveto(step / 20)
            yield 0.05
        # The store calls a user triggers that run on the main thread (one small transaction
        # or query each, see tkchat/ui/chats/history.py), timed on this history.
        calls: dict[str, float | None] = {}
        for name, call in (
            ("list", archive.conversations),
            ("search", lambda: saved.search("mutex 7")),
            ("rename", lambda: saved.rename(conversation.id, "bench: renamed")),
            ("delete", lambda: saved.delete(conversation.id)),
            ("restore", lambda: saved.undelete(conversation.id)),
        ):
            began = time.perf_counter()
            call()
            calls[f"{name}_ms"] = rounded((time.perf_counter() - began) * 1000, 2)
            yield 0.05
        samples = app.probe.stop_recording()
        slices = app.transcript.painter.slice_ms[slices_before:]
        self.runs.append(
            RunFigures(
                mode="history",
                backend="sqlite",
                seconds=rounded(opened_s, 3),
                render_slice_max_ms=rounded(max(slices) if slices else None, 2),
                extra={
                    "messages": 200,
                    "chars": sum(len(m.content) for m in stored),
                    "conversations": OTHER_CONVERSATIONS + 1,
                    **calls,
                },
                **lag_figures(samples),
            )
        )

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
    history = by.get("history")
    if history is not None and history.lag_p99_ms is not None:
        out.append(
            (
                "200-message conversation opens and scrolls: no long task, lag p99 <= 16 ms",
                history.long_tasks == 0 and history.lag_p99_ms <= 16,
                f"{history.long_tasks} long tasks, lag p99 {history.lag_p99_ms:.2f} ms, "
                f"max {history.lag_max_ms:.2f} ms, open {history.seconds} s",
            )
        )
    render = by.get("render")
    if render is not None and render.lag_max_ms is not None:
        out.append(
            (
                "final render of 11k chars: no long task",
                render.long_tasks == 0,
                f"slice max {render.render_slice_max_ms} ms, lag max "
                f"{render.lag_max_ms:.2f} ms (whole set_html: "
                f"{render.extra['whole_document_set_html_ms']} ms)",
            )
        )
    if by.get("prompt") is not None:
        from tkchat.measure.prompt_bench import prompt_verdicts

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
        out.append(
            (
                f"{prefix}flood lag p99 <= {FLOOD_LAG_P99_MS:g} ms",
                run.lag_p99_ms <= FLOOD_LAG_P99_MS,
                f"{run.lag_p99_ms:.2f} ms",
            )
        )
        out.append(
            (
                f"{prefix}flood lag max <= {LAG_MAX_MS:g} ms",
                run.lag_max_ms <= LAG_MAX_MS,
                f"{run.lag_max_ms:.2f} ms",
            )
        )
        out.append((f"{prefix}flood long tasks == 0", run.long_tasks == 0, str(run.long_tasks)))
        if run.rss_growth_mb is not None:
            out.append(
                (
                    f"{prefix}flood RSS growth < 100 MB",
                    run.rss_growth_mb < 100,
                    f"{run.rss_growth_mb:.1f} MB",
                )
            )
        return out
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


def run_bench(options: BenchOptions) -> int:
    started = time.time()
    if options.transport == "sse":
        from tkchat.measure.sse_bench import run_sse_bench, sse_verdicts

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
    print(format_table(runs))
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
            "runs": [r.as_json() for r in runs],
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
        from tkchat.measure.report import write_report

        path = write_report(
            options.report_dir, runs, bench.timelines, checks, options, format_table(runs)
        )
        print(f"wrote {path}")
    return 0
