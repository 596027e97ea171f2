"""What a lesson's demo measures, in the real window: the idle window and the model alone
before it (its baselines), then its answer (lag, own lag, tokens/s, updates and the gaps
between them, slices, events, the chaos transport's work, the sender's chunks), or its
Stops (cancel latency, with and
without the time the worker waited for a CPU), and the whole answer rendered at once where
a lesson quotes it. :mod:`tkchat.lab.bench.lesson_demos` sets each demo up and judges its
lesson's claims on these figures.

Main thread only (scripts are resumed by the Tk loop: see ``tkchat/lab/bench/script.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable

from tkchat.course.claims import quoted_figures
from tkchat.course.lessons import Lesson
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.worker import GenerationWorker
from tkchat.lab.bench.figures import (
    lag_figures,
    own_lag_figures,
    run_alone,
    screen_gap_figures,
)
from tkchat.lab.bench.script import Script
from tkchat.lab.window import LabWindow, instruments_of
from tkchat.stats import cpu_wait_ms, median, percentile, rounded
from tkchat.trace.recorder import RecordedRun

IDLE_S = 1.0  # the idle baseline before each demo: the window open, nothing streaming
SETTLE_S = 0.3  # after an answer: late timers of a frozen window fire, the render finishes
CANCELS = 5  # Stops at random points, for the cancellation lesson
Baselines = dict[str, dict[str, float | None]]


def measure_idle(app: LabWindow, baselines: Baselines, *, seconds: float = IDLE_S) -> Script:
    """The window open and doing nothing: this machine's lag floor, right now."""
    app.start_lag_recording()
    yield seconds
    samples = app.stop_lag_recording()
    baselines["idle"] = {**lag_figures(samples), **own_lag_figures(samples)}


def measure_raw(app: LabWindow, request: GenerationRequest, baselines: Baselines) -> None:
    """The model alone, no window: its tokens/s for this request. Main thread, deliberately
    not returning to the Tk loop while it waits (nothing of the UI competes)."""
    stats = run_alone(app.controller, request)
    baselines["raw"] = {"tokens_per_s": stats.tokens_per_s, "ttft_ms": stats.ttft_ms}


def needs_raw(lessons: Iterable[Lesson]) -> bool:
    return any(
        claim.ref is not None and claim.ref.startswith("raw.")
        for lesson in lessons
        for claim in lesson.claims
    )


def measure_answer(
    app: LabWindow, figures: dict[str, float | None], recorded: list[RecordedRun]
) -> Script:
    tools = instruments_of(app)
    recorder = tools.run_recorder()
    recorder.begin()  # who held the loop, for each long task
    before = tools.counts()
    finished_before = len(app.finished)
    app.start_lag_recording()
    started = time.perf_counter()
    app.send()  # what Enter does with the demo's prompt; a blocking mode returns at the end
    worker = app.controller.current
    yield lambda: len(app.finished) > finished_before
    streamed_s = time.perf_counter() - started
    final = app.finished[-1]
    yield lambda: not tools.painting
    yield SETTLE_S
    samples = app.stop_lag_recording()
    answer, times, after = app.answers[-1], tools.answer_times(), tools.counts()
    recorded.append(recorder.end("demo", samples, times.arrivals))
    if isinstance(final, Error):
        raise RuntimeError(f"the demo's answer failed: {final.message}")
    figures.update(lag_figures(samples))
    figures.update(own_lag_figures(samples))
    stats = final.stats
    figures["tokens"] = stats.tokens
    figures["tokens_per_s"] = rounded(stats.tokens_per_s or stats.tokens / streamed_s, 1)
    figures["seconds"] = rounded(streamed_s, 2)
    figures["answer_ms"] = rounded(streamed_s * 1000, 1)
    figures["chars"] = len(answer.text)
    figures["ui_updates_per_s"] = rounded((after.inserts - before.inserts) / streamed_s, 1)
    figures.update(screen_gap_figures(times.arrivals))  # text held back: a slow poll's
    if times.first_text_at is not None:
        figures["ttft_ms"] = rounded((times.first_text_at - times.started_at) * 1000, 1)
    slices = tools.slice_ms(before.slices)
    figures["render_slice_max_ms"] = rounded(max(slices), 2) if slices else None
    figures["events"] = after.events - before.events
    for name, count in after.ordering.items():  # what the chaos transport did to its events
        figures[name] = count - before.ordering[name]
    if worker is not None and worker.gen == final.gen:  # the fixed pipeline's own worker
        sender = worker.sender
        figures["chunks"] = sender.chunks
        figures["merged"] = sender.pieces - sender.chunks
        figures["events_per_token"] = rounded(sender.chunks / max(1, stats.tokens), 4)


def measure_cancels(app: LabWindow, prompt: str, figures: dict[str, float | None]) -> Script:
    """Stop the demo's answer to ``prompt`` at random points, as a student pressing Stop
    would. Each Stop's delay is also counted without the time the worker waited for a CPU
    meanwhile (``own_``): on a busy machine that wait is the machine's, not the
    cancellation's."""
    tools = instruments_of(app)
    rng = random.Random(7)
    latencies: list[float] = []
    own: list[float] = []
    speeds: list[float] = []
    for _ in range(CANCELS):
        # An answer that ended by itself is closed a tick later; Send waits for it (it never
        # stops an answer), so the next question goes once it is.
        yield lambda: app.answer is None
        app.send(prompt)
        worker = app.controller.current
        assert worker is not None
        yield _started(worker)
        yield rng.uniform(0.1, 0.5)
        if not worker.is_alive():
            continue  # it ended before the Stop: not a cancel sample
        waited = _WaitWatch(worker)
        app.stop()
        yield waited.until_gone
        if worker.cancelled_at is not None and worker.exited_at is not None:
            latency = (worker.exited_at - worker.cancelled_at) * 1000
            latencies.append(latency)
            own.append(max(0.0, latency - waited.ms))
        first, last = worker.first_token_at, worker.exited_at
        if first is not None and last is not None and last > first and worker.tokens > 1:
            speeds.append((worker.tokens - 1) / (last - first))
        yield lambda: not tools.painting
    tps = median(speeds)
    figures["cancels"] = len(latencies)
    figures["cancel_p50_ms"] = rounded(percentile(latencies, 50), 2)
    figures["tokens_per_s"] = rounded(tps, 1)
    for prefix, values in (("", latencies), ("own_", own)):
        p99 = percentile(values, 99)
        figures[f"{prefix}cancel_p99_ms"] = rounded(p99, 2)
        figures[f"{prefix}cancel_p99_token_periods"] = (
            rounded(p99 * tps / 1000, 2) if p99 is not None and tps else None
        )


class _WaitWatch:
    """How long a worker thread waits for a CPU from now until it ends: read while it lives
    (the last reading is at most one poll before its end)."""

    def __init__(self, worker: GenerationWorker) -> None:
        self.worker = worker
        self.start = cpu_wait_ms(worker.native_id)
        self.ms = 0.0

    def until_gone(self) -> bool:
        now = cpu_wait_ms(self.worker.native_id)
        if now is not None and self.start is not None:
            self.ms = max(self.ms, now - self.start)
        return not self.worker.is_alive()


def quotes_or_claims(lesson: Lesson, metric: str) -> bool:
    return metric in quoted_figures(lesson.expect + lesson.body) or any(
        metric in (claim.metric, claim.ref) for claim in lesson.claims
    )


def measure_whole_render(app: LabWindow, figures: dict[str, float | None]) -> Script:
    """The last answer given to a stock tkhtmlview in one ``set_html`` call, as an app that
    "renders once at the end" would: the freeze that slicing avoids (measured in a scratch
    widget, off screen)."""
    from tkhtmlview import HTMLText

    from tkchat.render.safe_markdown import markdown_to_safe_html
    from tkchat.ui.look.html_fonts import stock_tkhtmlview

    html = markdown_to_safe_html(app.answers[-1].text)
    with stock_tkhtmlview():
        scratch = HTMLText(instruments_of(app).root)
        began = time.perf_counter()
        scratch.set_html(html)
        figures["whole_render_ms"] = rounded((time.perf_counter() - began) * 1000, 1)
        scratch.destroy()
    yield SETTLE_S


def _started(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: worker.tokens > 0 or not worker.is_alive()
