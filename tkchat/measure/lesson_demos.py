"""Every lesson's demo, run in the real window and measured, and its claims checked.

This is how a lesson's words stay true: tests/test_demos.py runs each demo on a virtual
screen and fails when a claim stops holding; ``tkchat bench --lessons`` runs them all and
writes ``lessons/figures.json``, the figures the lessons quote (``{{figure lag_max_ms}}``).
Both run the same script below, so the text, the test and the bench measure one thing.

A demo is run as a student would: *Set up the demo* (a fresh chat, the lesson's mode,
backend, rate, answer length, limit, seed, and its prompt in the box), then Send, then wait
for the answer's end and its markdown render. The lag probe records all along, and the
window's sampler too: a broken mode's demo must name, as the culprit of its longest long
task, the function its lesson is about (the class the mode registry names).

Main thread only (scripts are resumed by the Tk loop: see ``tkchat/measure/script.py``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tkchat.course.claims import Claim, Figures, figures_path, quoted_figures
from tkchat.course.lessons import Lesson, lessons_dir
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.worker import GenerationWorker
from tkchat.measure.figures import lag_figures, run_alone
from tkchat.measure.script import Script
from tkchat.modes import BROKEN_MODES, PIPELINES
from tkchat.stats import median, percentile, rounded
from tkchat.trace.culprit import Culprit, describe
from tkchat.trace.recorder import RecordedRun, RunRecorder
from tkchat.transport.channel import EventChannel
from tkchat.ui.teaching.live_figures import ORDERING_METRICS
from tkchat.ui.window.chat_window import ChatApp

IDLE_S = 1.0  # the idle baseline: the window open, nothing streaming
SETTLE_S = 0.3  # after an answer: late timers of a frozen window fire, the render finishes
CANCELS = 5  # Stops at random points, for the cancellation lesson
Baselines = dict[str, dict[str, float | None]]


@dataclass
class DemoResult:
    lesson: Lesson
    figures: dict[str, float | None]
    baselines: Baselines
    verdicts: list[tuple[Claim, bool, str]] = field(default_factory=list)
    culprit: Culprit | None = None  # who held the loop in the demo's longest long task

    @property
    def named(self) -> bool:
        """A broken mode's demo names the function its lesson is about (the class the mode
        registry names: ``GenerateInClickHandler.start`` for ``blocking``), as the code that
        held the loop or that left Tk the redisplay that did."""
        if self.lesson.mode not in BROKEN_MODES or not self.figures.get("long_tasks"):
            return True
        wanted = PIPELINES[self.lesson.mode].rpartition(":")[2] + "."
        return self.culprit is not None and self.culprit.held_by.startswith(wanted)

    @property
    def ok(self) -> bool:
        return all(ok for _claim, ok, _line in self.verdicts) and self.named

    def report(self) -> str:
        lines = [f"{self.lesson.language}/{self.lesson.id}:"]
        lines += [f"  {line}" for _claim, _ok, line in self.verdicts]
        if self.culprit is not None:
            said = describe(self.culprit, self.lesson.language)
            lines.append(f"  held the loop: {said}" + ("" if self.named else " — NOT the mode's"))
        return "\n".join(lines)


def check(lesson: Lesson, figures: Figures, baselines: Baselines) -> list[tuple[Claim, bool, str]]:
    return [
        (claim, claim.holds(figures, baselines), claim.describe(figures, baselines))
        for claim in lesson.claims
    ]


# -- baselines -------------------------------------------------------------------------------


def measure_idle(app: ChatApp, baselines: Baselines) -> Script:
    """The window open and doing nothing: this machine's lag floor, right now."""
    app.probe.start_recording()
    yield IDLE_S
    baselines["idle"] = lag_figures(app.probe.stop_recording())


def measure_raw(app: ChatApp, request: GenerationRequest, baselines: Baselines) -> None:
    """The model alone, no window: its tokens/s for this request. Main thread, deliberately
    not returning to the Tk loop while it waits (nothing of the UI competes)."""
    stats = run_alone(app.controller, request)
    baselines["raw"] = {"tokens_per_s": stats.tokens_per_s, "ttft_ms": stats.ttft_ms}


def _needs_raw(lesson: Lesson) -> bool:
    return any(claim.ref is not None and claim.ref.startswith("raw.") for claim in lesson.claims)


# -- one demo ----------------------------------------------------------------------------------


def run_demo(app: ChatApp, lesson: Lesson, baselines: Baselines, out: list[DemoResult]) -> Script:
    """Set up ``lesson``'s demo in ``app`` as its button does, run it, measure it, check its
    claims; append the result to ``out``."""
    app.demos.setup(lesson)
    yield lambda: app.model_ready
    yield 0.2  # the switch of backend settles; the probe's peaks start from here
    if _needs_raw(lesson):
        measure_raw(app, app.session.request_for(lesson.prompt or ""), baselines)
        yield SETTLE_S  # raw held the loop on purpose: let the overdue timers fire first
    figures: dict[str, float | None] = {}
    recorded: list[RecordedRun] = []
    if lesson.expect_metric.startswith("cancel_"):
        yield from _cancels(app, figures)
    else:
        yield from _one_answer(app, figures, recorded)
    if _quotes_or_claims(lesson, "whole_render_ms"):
        yield from _whole_render(app, figures)
    # The baselines the lesson compares with travel with its figures (and its quotes).
    figures["idle_lag_p99_ms"] = baselines.get("idle", {}).get("lag_p99_ms")
    if "raw" in baselines and _needs_raw(lesson):
        figures["raw_tokens_per_s"] = rounded(baselines["raw"].get("tokens_per_s"), 1)
        figures["raw_ttft_ms"] = rounded(baselines["raw"].get("ttft_ms"), 1)
    result = DemoResult(lesson, figures, baselines)
    result.culprit = recorded[0].main_culprit if recorded else None
    result.verdicts = check(lesson, figures, baselines)
    out.append(result)


def _one_answer(
    app: ChatApp, figures: dict[str, float | None], recorded: list[RecordedRun]
) -> Script:
    recorder = RunRecorder(app.witness.sampler, app.witness.ledger, app.controller)
    recorder.begin()  # who held the loop, for each long task
    inserts_before = app.transcript.inserts
    events_before = app.pump.events
    ordering_before = asdict(app.demos.ordering_counters())
    finished_before = len(app.finished)
    slices_before = len(app.transcript.painter.slice_ms)
    app.probe.start_recording()
    started = time.perf_counter()
    app.send()  # what Enter does with the demo's prompt; a blocking mode returns at the end
    worker = app.controller.current
    answer = app.transcript.answers[-1]
    yield lambda: len(app.finished) > finished_before
    streamed_s = time.perf_counter() - started
    final = app.finished[-1]
    yield lambda: not app.transcript.painter.busy
    yield SETTLE_S
    samples = app.probe.stop_recording()
    recorded.append(recorder.end("demo", samples, answer.arrivals))
    if isinstance(final, Error):
        raise RuntimeError(f"the demo's answer failed: {final.message}")
    figures.update(lag_figures(samples))
    stats = final.stats
    figures["tokens"] = stats.tokens
    figures["tokens_per_s"] = rounded(stats.tokens_per_s or stats.tokens / streamed_s, 1)
    figures["seconds"] = rounded(streamed_s, 2)
    figures["chars"] = len(answer.text)
    figures["ui_updates_per_s"] = rounded((app.transcript.inserts - inserts_before) / streamed_s, 1)
    if answer.first_text_at is not None:
        figures["ttft_ms"] = rounded((answer.first_text_at - answer.started_at) * 1000, 1)
    slices = app.transcript.painter.slice_ms[slices_before:]
    figures["render_slice_max_ms"] = rounded(max(slices), 2) if slices else None
    figures["events"] = app.pump.events - events_before
    ordering = asdict(app.demos.ordering_counters())
    for name in ORDERING_METRICS:  # what the chaos transport did to this answer's events
        figures[name] = ordering[name] - ordering_before[name]
    if worker is not None and worker.gen == final.gen:  # the fixed pipeline's own worker
        sender = worker.sender
        figures["chunks"] = sender.chunks
        figures["merged"] = sender.pieces - sender.chunks
        figures["events_per_token"] = rounded(sender.chunks / max(1, stats.tokens), 4)


def _cancels(app: ChatApp, figures: dict[str, float | None]) -> Script:
    """Stop the demo's answer at random points, as a student pressing Stop would."""
    rng = random.Random(7)
    latencies: list[float] = []
    speeds: list[float] = []
    prompt = app.input.draft
    for _ in range(CANCELS):
        app.input.set_draft(prompt)
        app.send()
        worker = app.controller.current
        assert worker is not None
        yield _started(worker)
        yield rng.uniform(0.1, 0.5)
        if not worker.is_alive():
            continue  # it ended before the Stop: not a cancel sample
        app.stop()
        yield _gone(worker)
        if worker.cancelled_at is not None and worker.exited_at is not None:
            latencies.append((worker.exited_at - worker.cancelled_at) * 1000)
        first, last = worker.first_token_at, worker.exited_at
        if first is not None and last is not None and last > first and worker.tokens > 1:
            speeds.append((worker.tokens - 1) / (last - first))
        yield lambda: not app.transcript.painter.busy
    tps = median(speeds)
    p99 = percentile(latencies, 99)
    figures["cancels"] = len(latencies)
    figures["cancel_p50_ms"] = rounded(percentile(latencies, 50), 2)
    figures["cancel_p99_ms"] = rounded(p99, 2)
    figures["tokens_per_s"] = rounded(tps, 1)
    figures["cancel_p99_token_periods"] = (
        rounded(p99 * tps / 1000, 2) if p99 is not None and tps else None
    )


def _quotes_or_claims(lesson: Lesson, metric: str) -> bool:
    return metric in quoted_figures(lesson.expect + lesson.body) or any(
        metric in (claim.metric, claim.ref) for claim in lesson.claims
    )


def _whole_render(app: ChatApp, figures: dict[str, float | None]) -> Script:
    """The last answer given to a stock tkhtmlview in one ``set_html`` call, as an app that
    "renders once at the end" would: the freeze that slicing avoids (measured in a scratch
    widget, off screen)."""
    from tkhtmlview import HTMLText

    from tkchat.render.safe_markdown import markdown_to_safe_html
    from tkchat.ui.look.html_fonts import stock_tkhtmlview

    html = markdown_to_safe_html(app.transcript.answers[-1].text)
    with stock_tkhtmlview():
        scratch = HTMLText(app.root)
        began = time.perf_counter()
        scratch.set_html(html)
        figures["whole_render_ms"] = rounded((time.perf_counter() - began) * 1000, 1)
        scratch.destroy()
    yield SETTLE_S


def _started(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: worker.tokens > 0 or not worker.is_alive()


def _gone(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: not worker.is_alive()


# -- every demo ----------------------------------------------------------------------------------


def run_demos(app: ChatApp, lessons: Iterable[Lesson], out: list[DemoResult]) -> Script:
    baselines: Baselines = {}
    yield lambda: app.model_ready
    yield from measure_idle(app, baselines)
    for lesson in lessons:
        yield from run_demo(app, lesson, baselines, out)


def write_figures(results: Iterable[DemoResult], path: Path | None = None) -> Path:
    """Keep the measured figures of each lesson's demo (merged into what is there): the
    numbers the lessons quote. A run whose claims did not hold is not kept: a lesson must not
    quote figures that contradict what it says."""
    target = path or figures_path(lessons_dir())
    data: dict[str, Any] = {}
    if target.is_file():
        data = json.loads(target.read_text(encoding="utf-8"))
    lessons = data.setdefault("lessons", {})
    for result in results:
        if not result.ok:
            continue
        entry: dict[str, float | None] = {k: v for k, v in result.figures.items() if v is not None}
        lessons.setdefault(result.lesson.id, {})[result.lesson.language] = entry
    data["measured"] = time.strftime("%Y-%m-%d")
    data["how"] = "tkchat bench --lessons (the same script as tests/test_demos.py)"
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return target


def run_lesson_bench(
    languages: Iterable[str], *, only: Iterable[str] = (), write: bool = True
) -> int:
    """``tkchat bench --lessons``: every lesson's demo in one real window (on a virtual
    screen if there is none), its claims checked, the figures written for the lessons to
    quote. Returns 0 when every claim held, 1 otherwise."""
    import tkinter as tk

    from tkchat.course.lessons import load_lessons
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import make_backend
    from tkchat.measure.display import ensure_display
    from tkchat.measure.script import ScriptRunner
    from tkchat.ui.window.chat_window import AppOptions

    ensure_display()
    root = tk.Tk()
    controller = GenerationController(make_backend("llama"), EventChannel())
    app = ChatApp(root, controller, AppOptions(language="en", backend_factory=make_backend))
    controller.load_async()
    wanted = tuple(only)
    lessons = [
        lesson
        for lang in languages
        for lesson in load_lessons(lang)
        if not wanted or lesson.id.startswith(wanted)
    ]
    results: list[DemoResult] = []
    runner = ScriptRunner(root, run_demos(app, lessons, results))
    runner.start()
    root.mainloop()
    if not app.closed:
        app.close()
    if runner.error is not None:
        raise runner.error
    for result in results:
        print(result.report())
    failed = [r for r in results if not r.ok]
    print(f"\n{len(results) - len(failed)} of {len(results)} demos show what their lesson claims")
    if write and results:
        print(f"wrote {write_figures(results)}")
    return 1 if failed else 0
