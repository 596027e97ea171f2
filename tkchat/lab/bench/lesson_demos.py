"""Every lesson's demo, run in the real window and measured, and its claims checked.

This is how a lesson's words stay true: ``tkchat bench --lessons`` runs every demo on a
virtual screen, fails when a claim stops holding (judged against baselines of the same run),
and with ``--write`` keeps ``lessons/figures.json``, the figures the lessons quote
(``{{figure lag_max_ms}}``). tests/test_demos.py checks, without the clock, that each demo is
set up as its lesson says and shows its lesson's mechanism; the claims about time are this
script's.

A demo is run as a student would: *Set up the demo* (a fresh chat, the lesson's mode,
backend, rate, answer length, limit, seed, and its prompt in the box), then Send, then wait
for the answer's end and its markdown render. The lag probe records all along, and the
window's sampler too: a broken mode's demo must name, as the culprit of its longest long
task, the function its lesson is about (the class the mode registry names).

Main thread only (scripts are resumed by the Tk loop: see ``tkchat/lab/bench/script.py``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tkchat.course.claims import Figures, Verdict, figures_path, quoted_figures
from tkchat.course.kept_run import KeptRun, keep, now_run, too_busy
from tkchat.course.lessons import Lesson, default_language, lessons_dir
from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.worker import GenerationWorker
from tkchat.i18n.lesson_panel import STRINGS
from tkchat.lab.bench.figures import lag_figures, own_lag_figures, run_alone
from tkchat.lab.bench.script import Script
from tkchat.modes import BROKEN_MODES, PIPELINES
from tkchat.stats import cpu_wait_ms, median, percentile, rounded
from tkchat.trace.culprit import Culprit, describe
from tkchat.trace.recorder import RecordedRun, RunRecorder
from tkchat.transport.channel import EventChannel
from tkchat.ui.teaching.live_figures import ORDERING_METRICS
from tkchat.ui.window.chat_window import ChatApp

IDLE_S = 1.0  # the idle baseline before each demo: the window open, nothing streaming
BENCH_IDLE_S = 3.0  # the bench's idle window before and after the demos: is the machine quiet?
SETTLE_S = 0.3  # after an answer: late timers of a frozen window fire, the render finishes
CANCELS = 5  # Stops at random points, for the cancellation lesson
Baselines = dict[str, dict[str, float | None]]


@dataclass
class DemoRun:
    """One run of a demo: what it measured, and the baselines measured just before it (the
    window idle; the model alone, for a demo on the real model)."""

    lesson: Lesson  # the lesson whose demo ran (its language's prompt and answer)
    figures: dict[str, float | None]
    baselines: Baselines
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


@dataclass
class DemoResult:
    """One lesson's claims, checked on a run of its demo (perhaps run by the lesson in the
    other language: the demo is the same)."""

    lesson: Lesson
    run: DemoRun
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def figures(self) -> dict[str, float | None]:
        return self.run.figures

    @property
    def baselines(self) -> Baselines:
        return self.run.baselines

    @property
    def named(self) -> bool:
        return self.run.named

    @property
    def ok(self) -> bool:
        """No claim failed (each held, or the machine was too busy to judge it), and a broken
        mode's demo named the function its lesson is about."""
        return all(verdict.ok for verdict in self.verdicts) and self.named

    @property
    def judged(self) -> bool:
        """Every claim was judged: the machine was not too busy for any of them."""
        return all(verdict.judged for verdict in self.verdicts)

    def report(self) -> str:
        lines = [f"{self.lesson.language}/{self.lesson.id}:"]
        lines += [f"  {verdict.line}" for verdict in self.verdicts]
        culprit = self.run.culprit
        if culprit is not None:
            said = describe(culprit, self.lesson.language)
            lines.append(f"  held the loop: {said}" + ("" if self.named else " — NOT the mode's"))
        return "\n".join(lines)


def kept_baselines(figures: Figures) -> Baselines:
    """The baselines a kept run's figures carry (measured with them), as claims read them."""
    return {
        "idle": {"lag_p99_ms": figures.get("idle_lag_p99_ms")},
        "raw": {
            "tokens_per_s": figures.get("raw_tokens_per_s"),
            "ttft_ms": figures.get("raw_ttft_ms"),
        },
    }


def check(lesson: Lesson, figures: Figures, baselines: Baselines) -> list[Verdict]:
    return [claim.judge(figures, baselines) for claim in lesson.claims]


def judge(lesson: Lesson, run: DemoRun) -> DemoResult:
    """``lesson``'s claims on ``run``, against the baselines measured with it."""
    return DemoResult(lesson, run, check(lesson, run.figures, run.baselines))


def same_demo(a: Lesson, b: Lesson) -> bool:
    """Whether two lessons (one per language) set up the same demo: everything their headers
    say about it but the words (the prompt is in each lesson's language)."""
    return _demo_key(a) == _demo_key(b)


def _demo_key(lesson: Lesson) -> tuple[object, ...]:
    return (
        lesson.id,
        lesson.mode,
        lesson.backend,
        lesson.rate,
        lesson.tokens,
        lesson.max_tokens,
        lesson.seed,
        lesson.fresh,
        lesson.chaos,
        lesson.claims,
        lesson.expect_metric,
    )


# -- baselines -------------------------------------------------------------------------------


def measure_idle(app: ChatApp, baselines: Baselines, *, seconds: float = IDLE_S) -> Script:
    """The window open and doing nothing: this machine's lag floor, right now."""
    app.probe.start_recording()
    yield seconds
    samples = app.probe.stop_recording()
    baselines["idle"] = {**lag_figures(samples), **own_lag_figures(samples)}


def measure_raw(app: ChatApp, request: GenerationRequest, baselines: Baselines) -> None:
    """The model alone, no window: its tokens/s for this request. Main thread, deliberately
    not returning to the Tk loop while it waits (nothing of the UI competes)."""
    stats = run_alone(app.controller, request)
    baselines["raw"] = {"tokens_per_s": stats.tokens_per_s, "ttft_ms": stats.ttft_ms}


def _needs_raw(lessons: Iterable[Lesson]) -> bool:
    return any(
        claim.ref is not None and claim.ref.startswith("raw.")
        for lesson in lessons
        for claim in lesson.claims
    )


# -- one demo ----------------------------------------------------------------------------------


def run_demo(
    app: ChatApp, lesson: Lesson, out: list[DemoRun], *, also: Iterable[Lesson] = ()
) -> Script:
    """Set up ``lesson``'s demo in ``app`` as its button does, measure the idle window (and,
    for a claim about it, the model alone), run the demo and measure it; append the run to
    ``out``. ``also``: other lessons whose claims and quotes this run must serve (the same
    demo in the other language)."""
    lessons = [lesson, *also]
    app.demos.setup(lesson)
    yield lambda: app.flow.model_ready
    yield 0.2  # the switch of backend settles; the probe's peaks start from here
    # This machine's lag floor right before the demo: the claims compare with it, and the
    # load may have changed since the last demo.
    baselines: Baselines = {}
    yield from measure_idle(app, baselines)
    if _needs_raw(lessons):
        measure_raw(app, app.session.request_for(lesson.prompt or ""), baselines)
        yield SETTLE_S  # raw held the loop on purpose: let the overdue timers fire first
    figures: dict[str, float | None] = {}
    recorded: list[RecordedRun] = []
    if lesson.expect_metric.startswith("cancel_"):
        yield from _cancels(app, figures)
    else:
        yield from _one_answer(app, figures, recorded)
    if any(_quotes_or_claims(x, "whole_render_ms") for x in lessons):
        yield from _whole_render(app, figures)
    # The baselines the lesson compares with travel with its figures (and its quotes).
    figures["idle_lag_p99_ms"] = baselines["idle"].get("lag_p99_ms")
    if "raw" in baselines:
        figures["raw_tokens_per_s"] = rounded(baselines["raw"].get("tokens_per_s"), 1)
        figures["raw_ttft_ms"] = rounded(baselines["raw"].get("ttft_ms"), 1)
    culprit = recorded[0].main_culprit if recorded else None
    out.append(DemoRun(lesson, figures, baselines, culprit))


def _one_answer(
    app: ChatApp, figures: dict[str, float | None], recorded: list[RecordedRun]
) -> Script:
    recorder = RunRecorder(app.witness.sampler, app.witness.ledger, app.controller)
    recorder.begin()  # who held the loop, for each long task
    inserts_before = app.transcript.inserts
    events_before = app.pump.events
    ordering_before = asdict(app.demos.ordering_counters())
    finished_before = len(app.flow.answering.finished)
    slices_before = len(app.transcript.painter.slice_ms)
    app.probe.start_recording()
    started = time.perf_counter()
    app.flow.send()  # what Enter does with the demo's prompt; a blocking mode returns at the end
    worker = app.controller.current
    answer = app.transcript.answers[-1]
    yield lambda: len(app.flow.answering.finished) > finished_before
    streamed_s = time.perf_counter() - started
    final = app.flow.answering.finished[-1]
    yield lambda: not app.transcript.painter.busy
    yield SETTLE_S
    samples = app.probe.stop_recording()
    recorded.append(recorder.end("demo", samples, answer.arrivals))
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
    """Stop the demo's answer at random points, as a student pressing Stop would. Each
    Stop's delay is also counted without the time the worker waited for a CPU meanwhile
    (``own_``): on a busy machine that wait is the machine's, not the cancellation's."""
    rng = random.Random(7)
    latencies: list[float] = []
    own: list[float] = []
    speeds: list[float] = []
    prompt = app.input.draft
    for _ in range(CANCELS):
        app.input.set_draft(prompt)
        app.flow.send()
        worker = app.controller.current
        assert worker is not None
        yield _started(worker)
        yield rng.uniform(0.1, 0.5)
        if not worker.is_alive():
            continue  # it ended before the Stop: not a cancel sample
        waited = _WaitWatch(worker)
        app.flow.stop()
        yield waited.until_gone
        if worker.cancelled_at is not None and worker.exited_at is not None:
            latency = (worker.exited_at - worker.cancelled_at) * 1000
            latencies.append(latency)
            own.append(max(0.0, latency - waited.ms))
        first, last = worker.first_token_at, worker.exited_at
        if first is not None and last is not None and last > first and worker.tokens > 1:
            speeds.append((worker.tokens - 1) / (last - first))
        yield lambda: not app.transcript.painter.busy
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


# -- every demo ----------------------------------------------------------------------------------


def demo_groups(lessons: Iterable[Lesson]) -> list[list[Lesson]]:
    """The lessons grouped by the demo they set up, in course order: a lesson and its
    translation share a demo when their headers describe the same one (lesson 10's do not:
    a Chinese answer needs more tokens for the same length)."""
    groups: list[list[Lesson]] = []
    for lesson in lessons:
        group = next((g for g in groups if same_demo(g[0], lesson)), None)
        if group is None:
            groups.append([lesson])
        else:
            group.append(lesson)
    return groups


def run_demos(
    app: ChatApp, lessons: Iterable[Lesson], out: list[DemoResult], *, once: bool = False
) -> Script:
    """Every lesson's demo, its claims checked. ``once``: a demo the lessons of both
    languages share runs once (in one of them, in turn), and both lessons' claims are checked
    on that run — what the test does; the bench runs each, so that each language's quotes
    come from its own answer."""
    yield lambda: app.flow.model_ready
    for number, group in enumerate(demo_groups(lessons)):
        runs: list[DemoRun] = []
        if once:
            first = group[number % len(group)]
            others = [lesson for lesson in group if lesson is not first]
            yield from run_demo(app, first, runs, also=others)
            out.extend(judge(lesson, runs[-1]) for lesson in group)
            continue
        for lesson in group:
            yield from run_demo(app, lesson, runs)
            out.append(judge(lesson, runs[-1]))


def write_figures(results: Iterable[DemoResult], run: KeptRun, path: Path | None = None) -> Path:
    """Keep the figures of each lesson's demo for the lesson to quote, with where and when
    ``run`` measured them (merged into what is there). A demo whose claims did not all hold
    and get judged is not kept: a lesson must not quote figures that contradict it, nor the
    figures of a machine too busy to judge it."""
    target = path or figures_path(lessons_dir())
    kept = {
        (result.lesson.id, result.lesson.language): result.figures
        for result in results
        if result.ok and result.judged and result.run.lesson is result.lesson
    }
    keep(target, run, kept)
    return target


def run_lesson_bench(
    languages: Iterable[str], *, only: Iterable[str] = (), write: bool = False
) -> int:
    """``tkchat bench --lessons``: every lesson's demo in one real window (on a virtual
    screen if there is none), its claims checked and reported. Read-only unless ``write``:
    then the figures are kept for the lessons to quote — unless the idle window says this
    machine is busy. Returns 0 when every claim held, 1 when one failed, 3 when none failed
    but the machine was too busy to judge some (or to write)."""
    import tkinter as tk

    from tkchat.course.lessons import load_lessons
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import make_backend
    from tkchat.lab.bench.script import ScriptRunner
    from tkchat.lab.display import ensure_display
    from tkchat.ui.window.chat_window import AppOptions

    ensure_display()
    root = tk.Tk()
    controller = GenerationController(make_backend("llama"), EventChannel())
    app = ChatApp(root, controller, AppOptions(language="en", backend_factory=make_backend))
    app.witness.force(True)  # a broken demo must name its culprit, whatever the view shows
    controller.load_async()
    wanted = tuple(only)
    lessons = [
        lesson
        for lang in languages
        for lesson in load_lessons(lang)
        if not wanted or lesson.id.startswith(wanted)
    ]
    results: list[DemoResult] = []
    idle: Baselines = {}
    runner = ScriptRunner(root, _bench_script(app, lessons, results, idle))
    runner.start()
    root.mainloop()
    if not app.closed:
        app.close()
    if runner.error is not None:
        raise runner.error
    return conclude(results, idle, write)


def _bench_script(
    app: ChatApp, lessons: list[Lesson], results: list[DemoResult], idle: Baselines
) -> Script:
    """The idle window first (is this machine quiet enough to keep figures?), then every
    demo, then the idle window again (the load may have come meanwhile)."""
    yield lambda: app.flow.model_ready
    before: Baselines = {}
    yield from measure_idle(app, before, seconds=BENCH_IDLE_S)
    yield from run_demos(app, lessons, results)
    after: Baselines = {}
    yield from measure_idle(app, after, seconds=BENCH_IDLE_S)
    idle["before"], idle["after"] = before["idle"], after["idle"]


def conclude(
    results: list[DemoResult], idle: Baselines, write: bool, path: Path | None = None
) -> int:
    """Print the verdicts and what they mean; keep the figures (in ``path``, by default the
    lessons' own file) if asked and allowed. ``idle``: the idle window's figures ``before``
    and ``after`` the demos."""
    for result in results:
        print(result.report())
    failed = [r for r in results if not r.ok]
    unjudged = [r for r in results if r.ok and not r.judged]
    shown = len(results) - len(failed) - len(unjudged)
    print(f"\n{shown} of {len(results)} demos show what their lesson claims", end="")
    print(f"; {len(unjudged)} could not be judged on this busy machine" if unjudged else "")
    strings = STRINGS[default_language()]
    if failed:
        print("\n" + strings["bench.meaning.failed"])
    if unjudged:
        print("\n" + strings["bench.meaning.busy"])
    code = 1 if failed else 3 if unjudged else 0
    if not write:
        if results:
            print("\n" + strings["bench.meaning.read_only"])
        return code
    busy = too_busy(idle["before"]) or too_busy(idle["after"])
    if busy is not None:
        print(f"\nnot written: this machine is busy ({busy}); close other programs and run again")
        return 3
    kept = now_run(idle["before"].get("lag_p99_ms"))
    print(f"\nwrote {write_figures(results, kept, path)}: {kept.describe('en')}")
    return code
