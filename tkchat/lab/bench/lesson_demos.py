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

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tkchat.course.claims import Figures, Verdict, figures_path, quoted_figures
from tkchat.course.kept_run import KeptRun, keep, now_run, too_busy
from tkchat.course.lessons import Lesson, default_language, lessons_dir
from tkchat.i18n.lesson_panel import STRINGS
from tkchat.lab.bench.demo_figures import (
    SETTLE_S,
    Baselines,
    measure_answer,
    measure_cancels,
    measure_idle,
    measure_raw,
    measure_whole_render,
    needs_raw,
    quotes_or_claims,
)
from tkchat.lab.bench.figures import Check
from tkchat.lab.bench.script import Script
from tkchat.lab.bench.verdicts import BURSTY_MODES
from tkchat.modes import BROKEN_MODES, PIPELINES
from tkchat.stats import rounded
from tkchat.trace.culprit import Culprit, describe
from tkchat.trace.recorder import RecordedRun
from tkchat.transport.channel import EventChannel

if TYPE_CHECKING:
    from tkchat.lab.window import LabWindow

BENCH_IDLE_S = 3.0  # the bench's idle window before and after the demos: is the machine quiet?


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
        held the loop or that left Tk the redisplay that did. A broken mode that does not
        freeze (a slow poll: its mistake holds text back) has nothing to name: a long task in
        its demo is the machine's, and its lesson claims the window's own lag instead."""
        mode = self.lesson.mode
        if mode not in BROKEN_MODES or mode in BURSTY_MODES or not self.figures.get("long_tasks"):
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
    return (lesson.id, *setup_key(lesson), lesson.claims, lesson.expect_metric)


def setup_key(lesson: Lesson) -> tuple[object, ...]:
    """What a demo's run is, whichever lesson sets it up: its mode, backend, pace, answer
    length and limit, seed, fresh chat, chaos, and whether it answers or is stopped. Lessons
    01, 03, 04 and 14 set up the same blocking answer to make different points about it."""
    return (
        lesson.mode,
        lesson.backend,
        lesson.rate,
        lesson.tokens,
        lesson.max_tokens,
        lesson.seed,
        lesson.fresh,
        lesson.chaos,
        lesson.expect_metric.startswith("cancel_"),
    )


# -- one demo ----------------------------------------------------------------------------------


def run_demo(
    app: LabWindow, lesson: Lesson, out: list[DemoRun], *, also: Iterable[Lesson] = ()
) -> Script:
    """Set up ``lesson``'s demo in ``app`` as its button does, measure the idle window (and,
    for a claim about it, the model alone), run the demo and measure it; append the run to
    ``out``. ``also``: other lessons whose claims and quotes this run must serve (the same
    demo in the other language)."""
    from tkchat.lab.window import instruments_of

    lessons = [lesson, *also]
    tools = instruments_of(app)
    tools.set_up_demo(lesson)
    yield lambda: app.model_ready
    yield 0.2  # the switch of backend settles; the probe's peaks start from here
    # This machine's lag floor right before the demo: the claims compare with it, and the
    # load may have changed since the last demo.
    baselines: Baselines = {}
    yield from measure_idle(app, baselines)
    if needs_raw(lessons):
        measure_raw(app, tools.request(lesson.prompt or ""), baselines)
        yield SETTLE_S  # raw held the loop on purpose: let the overdue timers fire first
    figures: dict[str, float | None] = {}
    recorded: list[RecordedRun] = []
    if lesson.expect_metric.startswith("cancel_"):
        yield from measure_cancels(app, lesson.prompt or "", figures)
    else:
        yield from measure_answer(app, figures, recorded)
    if any(quotes_or_claims(x, "whole_render_ms") for x in lessons):
        yield from measure_whole_render(app, figures)
    # The baselines the lesson compares with travel with its figures (and its quotes).
    figures["idle_lag_p99_ms"] = baselines["idle"].get("lag_p99_ms")
    if "raw" in baselines:
        figures["raw_tokens_per_s"] = rounded(baselines["raw"].get("tokens_per_s"), 1)
        figures["raw_ttft_ms"] = rounded(baselines["raw"].get("ttft_ms"), 1)
    culprit = recorded[0].main_culprit if recorded else None
    out.append(DemoRun(lesson, figures, baselines, culprit))


# -- every demo ----------------------------------------------------------------------------------


def demo_groups(
    lessons: Iterable[Lesson], same: Callable[[Lesson, Lesson], bool] = same_demo
) -> list[list[Lesson]]:
    """The lessons grouped by the demo they set up, in course order: a lesson and its
    translation share a demo when their headers describe the same one (lesson 10's do not:
    a Chinese answer needs more tokens for the same length). ``same``: another way to tell
    (:func:`same_setup`: any lessons whose demos are the same run)."""
    groups: list[list[Lesson]] = []
    for lesson in lessons:
        group = next((g for g in groups if same(g[0], lesson)), None)
        if group is None:
            groups.append([lesson])
        else:
            group.append(lesson)
    return groups


def same_setup(a: Lesson, b: Lesson) -> bool:
    """Whether two lessons' demos are the same run (:func:`setup_key`), whatever they claim."""
    return setup_key(a) == setup_key(b)


def run_demos(
    app: LabWindow,
    lessons: Iterable[Lesson],
    out: list[DemoResult],
    *,
    once: bool = False,
    same: Callable[[Lesson, Lesson], bool] = same_demo,
) -> Script:
    """Every lesson's demo, its claims checked. ``once``: a demo the lessons of both
    languages share runs once (in one of them, in turn), and both lessons' claims are checked
    on that run — what the test does; the bench runs each, so that each language's quotes
    come from its own answer. ``same``: which lessons share a demo (:func:`same_setup`: every
    lesson whose demo is the same run, as ``tkchat bench --claims`` runs them)."""
    yield lambda: app.model_ready
    for number, group in enumerate(demo_groups(lessons, same)):
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


@dataclass(frozen=True)
class LessonBenchOptions:
    """``tkchat bench --lessons``'s options: the languages, only some lessons (ids or
    numbers), keep the figures (``write``), each demo run once for every lesson that sets it
    up (``once``: :func:`same_setup`), and every verdict as JSON (``json_path``)."""

    languages: tuple[str, ...] = ("en", "zh")
    only: tuple[str, ...] = ()
    write: bool = False
    once: bool = False
    json_path: Path | None = None


def run_lesson_bench(options: LessonBenchOptions) -> int:
    """``tkchat bench --lessons``: every lesson's demo in one real window (on a virtual
    screen if there is none), its claims checked and reported. Read-only unless ``write``:
    then the figures are kept for the lessons to quote — unless the idle window says this
    machine is busy. Returns 0 when every claim held, 1 when one failed, 3 when none failed
    but the machine was too busy to judge some (or to write)."""
    import tkinter as tk

    from tkchat.course.lessons import load_lessons
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import LlamaOptions, make_backend
    from tkchat.lab.bench.script import ScriptRunner
    from tkchat.lab.display import ensure_display
    from tkchat.lab.window import AppOptions, open_lab_window

    ensure_display()
    root = tk.Tk()
    controller = GenerationController(make_backend(LlamaOptions()), EventChannel())
    app = open_lab_window(root, controller, AppOptions(language="en"))
    app.instruments.sample_loop(True)  # a broken demo must name its culprit, whatever it shows
    controller.load_async()
    lessons = [
        lesson
        for lang in options.languages
        for lesson in load_lessons(lang)
        if not options.only or lesson.id.startswith(options.only)
    ]
    results: list[DemoResult] = []
    idle: Baselines = {}
    runner = ScriptRunner(root, _bench_script(app, lessons, results, idle, options.once))
    runner.start()
    root.mainloop()
    if not app.closed:
        app.close()
    if runner.error is not None:
        raise runner.error
    if options.json_path is not None:
        write_results(options.json_path, results, idle)
    return conclude(results, idle, options.write)


def _bench_script(
    app: LabWindow, lessons: list[Lesson], results: list[DemoResult], idle: Baselines, once: bool
) -> Script:
    """The idle window first (is this machine quiet enough to keep figures?), then every
    demo (``once``: each run once for all the lessons that set it up), then the idle window
    again (the load may have come meanwhile)."""
    yield lambda: app.model_ready
    before: Baselines = {}
    yield from measure_idle(app, before, seconds=BENCH_IDLE_S)
    if once:
        yield from run_demos(app, lessons, results, once=True, same=same_setup)
    else:
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


# -- the verdicts as JSON (for tkchat bench --claims) ----------------------------------------


def claim_checks(result: DemoResult) -> list[Check]:
    """``result``'s verdicts as the bench's checks, each named by its claim: the figure,
    the baseline it is compared with (the figure or baseline the claim names; for a bound
    in numbers, the idle window's same figure, for scale) and whether it was judged; and, for
    a broken mode's demo, whether its longest long task was blamed on the lesson's function."""
    lesson, figures, baselines = result.lesson, result.figures, result.baselines
    checks = []
    for verdict in result.verdicts:
        claim = verdict.claim
        if claim.ref is not None:
            baseline = replace(claim, number=1.0).bound(figures, baselines)
            of = claim.ref
        else:
            baseline = baselines.get("idle", {}).get(claim.metric)
            of = f"idle.{claim.metric}" if baseline is not None else ""
        checks.append(
            Check(
                str(claim),
                verdict.holds,
                verdict.line,
                figures.get(claim.metric),
                baseline,
                of,
                str(claim)[len(claim.metric) + 1 :],
                _unit(claim.metric),
                verdict.judged,
            )
        )
    quoted = sorted(quoted_figures(lesson.expect + lesson.body))
    missing = [metric for metric in quoted if figures.get(metric) is None]
    figure = f"missing: {', '.join(missing)}" if missing else f"{len(quoted)} figures"
    checks.append(Check("every figure it quotes is measured", not missing, figure))
    if lesson.mode in BROKEN_MODES and figures.get("long_tasks"):
        wanted = PIPELINES[lesson.mode].rpartition(":")[2]
        held = result.run.culprit.held_by if result.run.culprit is not None else "nothing"
        checks.append(Check(f"its freeze is blamed on {wanted}", result.named, held))
    return checks


def _unit(metric: str) -> str:
    for suffix, unit in (("_ms", "ms"), ("_per_s", "/s"), ("token_periods", "periods")):
        if metric.endswith(suffix):
            return unit
    return ""


def write_results(path: Path, results: Iterable[DemoResult], idle: Baselines) -> None:
    """Every lesson's verdicts (as :func:`claim_checks`), figures and baselines, and the
    idle window before and after the demos, as JSON."""
    lessons: list[dict[str, Any]] = [
        {
            "lesson": result.lesson.id,
            "language": result.lesson.language,
            "ran_as": f"{result.run.lesson.id} ({result.run.lesson.language})",
            "figures": result.figures,
            "baselines": result.baselines,
            "targets": [check.as_json() for check in claim_checks(result)],
        }
        for result in results
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"idle": idle, "lessons": lessons}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
