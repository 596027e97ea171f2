"""Every lesson's demo is set up as its lesson says, and shows the mechanism the lesson is about.

One test per demo (``pytest -k demo``; ids like ``test_demo[11-backpressure]``), in one
window kept open through the class. Each lesson of the group (the same demo in English and in
Chinese) is set up as its *Set up the demo* button does, and the window is checked against
the lesson's header: its mode, its backend (rate, answer length, language), its answer limit
and seed, the chaos transport and the watchdog it asks for, its prompt in the box, what it
asks the class to watch. Then the demo's answer is sent, on a scripted answer the test steps
(``tests.test_broken_modes.Stepped``), and what the lesson is about is seen happening:

- ``blocking``: the tokens are generated on the main thread, inside the click;
- ``main-thread-reader``: a worker generates, the main thread reads every event, inside the
  click;
- ``per-chunk-render``: each chunk re-renders the whole answer so far;
- ``asyncio-run``: the Send handler runs an asyncio loop to the end: the whole answer, its
  coroutine on the main thread (the model on a worker), inside the click;
- ``asyncio-slow-poll``: the text reaches the screen only after a step of the loop Tk polls
  every 200 ms, one insert per step at most;
- ``fixed``: a worker generates and one tick shows what arrived since the last in one insert;
  Stop reaches the model loop (lesson 12); the chaos transport's disorder is put back in
  order, and counted (lesson 13).

A lesson's claims about time (a freeze as long as the answer, tokens/s against the model
alone, a frame's lag) are not judged here: ``tkchat bench --lessons`` runs every demo for
real and judges them against baselines of the same run. What a lesson counts rather than
times (the chaos transport's counts, the answer's length) is judged here. No test compares a
run with the figures a lesson quotes: those come from a kept run (``lessons/figures.json``,
written by ``tkchat bench --lessons --write``); what is checked is that every quoted figure
is kept with the run it came from and satisfies the lesson's claims.
"""

from __future__ import annotations

import json
import re
import threading
import tkinter as tk
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from tests.conftest import KEEP_ALIVE, pump_until
from tests.test_broken_modes import MAIN, Stepped, click_send, one_tick, parsed_texts
from tkchat.aio.answer import AsyncAnswer
from tkchat.aio.local_source import LocalModelTokens
from tkchat.antipatterns.asyncio_slow_poll import SLOW_POLL_MS, PollTheLoopSlowly
from tkchat.course.claims import figures_path, load_figures, parse_claims, quoted_figures
from tkchat.course.kept_run import kept_run_of
from tkchat.course.lessons import LANGUAGES, Lesson, lessons_dir, load_lessons
from tkchat.events import Done
from tkchat.generate.backend import Backend, WrappedBackend
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import BackendOptions, ScriptedOptions
from tkchat.generate.scripted import TokenGate, long_answer
from tkchat.lab.bench.lesson_demos import (
    DemoResult,
    DemoRun,
    conclude,
    demo_groups,
    judge,
    kept_baselines,
)
from tkchat.lab.bench.verdicts import BURSTY_MODES
from tkchat.modes import BROKEN_MODES, FIXED, PIPELINES
from tkchat.trace.culprit import Culprit
from tkchat.transport.channel import EventChannel
from tkchat.ui.look.theme import WATCH_STYLE
from tkchat.ui.models.switch import DEMO_ANSWER_CHARS
from tkchat.ui.teaching.live_figures import LIVE_METRICS, ORDERING_METRICS
from tkchat.ui.window.chat_window import AppOptions, ChatApp

LESSONS = [lesson for lang in LANGUAGES for lesson in load_lessons(lang)]
GROUPS = demo_groups(LESSONS)
FIGURES_FILE = figures_path(lessons_dir())
FIGURES = load_figures(FIGURES_FILE)
SHORT = 12  # tokens of a demo's answer here: the mechanism shows in a few
STEP = 5  # tokens let through before the first tick
# What a lesson counts rather than times: its claims on these are judged here.
COUNTED = {"chars", *ORDERING_METRICS}


class StandIn(WrappedBackend):
    """The bundled model's place in a demo, held by a scripted answer: the window takes it
    for the model (it is not a scripted backend), the test steps it like one."""

    def __init__(self) -> None:
        super().__init__(Stepped(name="the model (stood in for)"))


@dataclass
class FakeWatchdog:
    """The watchdog a demo opens, without its process (tests/test_watchdog.py runs it)."""

    alive: bool = True
    closed: int = 0
    waited: int = 0  # closes that waited for the process on the event loop

    def close(self, *, wait: bool = True) -> None:
        self.closed += 1
        self.waited += wait
        self.alive = False


@dataclass
class DemoWindow:
    root: tk.Tk
    app: ChatApp
    kinds: dict[int, str]  # id of each backend the window was given -> the kind it was asked
    watchdogs: list[FakeWatchdog] = field(default_factory=list)

    def stepped(self) -> Stepped:
        """The scripted answer behind the backend in use."""
        backend = self.app.controller.backend
        inner = backend.inner if isinstance(backend, WrappedBackend) else backend
        assert isinstance(inner, Stepped)
        return inner


@pytest.fixture(scope="module")
def window(display: None) -> Iterator[DemoWindow]:
    """One window for every demo, as a teacher would keep it open through a class; each
    demo starts a fresh chat, as its button does."""
    root = tk.Tk()
    KEEP_ALIVE.append(root)
    first = Stepped()
    kinds = {id(first): "scripted"}

    def factory(options: BackendOptions) -> Backend:
        kind = "scripted" if isinstance(options, ScriptedOptions) else "llama"
        backend: Backend = StandIn() if kind == "llama" else Stepped()
        kinds[id(backend)] = kind
        return backend

    controller = GenerationController(first, EventChannel())
    app = ChatApp(root, controller, AppOptions(language="en"))
    app.witness.force(False)  # who held the loop is tests/test_culprit.py's
    controller.load_async()
    demo = DemoWindow(root, app, kinds)

    def open_watchdog(*_args: object, **_kwargs: object) -> FakeWatchdog:
        demo.watchdogs.append(FakeWatchdog())
        return demo.watchdogs[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tkchat.ui.teaching.demo_setup.open_watchdog", open_watchdog)
        patch.setattr("tkchat.ui.models.switch.make_backend", factory)
        pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
        yield demo
    app.close()


def _group_id(group: list[Lesson]) -> str:
    languages = {lesson.language for lesson in group}
    return group[0].id if languages == set(LANGUAGES) else f"{group[0].id}-{group[0].language}"


def check_setup(demo: DemoWindow, lesson: Lesson) -> None:
    """The window as ``lesson``'s header describes its demo, right after *Set up the demo*
    (no Tk loop has run since)."""
    app = demo.app
    assert app.teaching.mode == lesson.mode and app.teaching.mode_box.get() == lesson.mode
    backend = app.controller.backend
    assert demo.kinds[id(backend)] == lesson.backend
    stepped = demo.stepped()
    if lesson.backend == "scripted":
        assert stepped.rate == lesson.rate and stepped.tokens == lesson.tokens
        assert stepped.text == long_answer(DEMO_ANSWER_CHARS, lesson.language)
    sampling = app.demos.session.sampling
    if lesson.max_tokens or lesson.tokens:
        assert sampling.max_tokens == (lesson.max_tokens or lesson.tokens)
    if lesson.seed is not None:
        assert sampling.seed == lesson.seed
    chaos = app.demos.chaos
    if lesson.chaos is None:
        assert chaos is None and app.controller.sink_wrapper is None
    else:
        assert chaos is not None and chaos.seed == lesson.chaos
        assert app.controller.sink_wrapper is chaos
    if lesson.watchdog:  # a new one each set-up, in front: the one before is closed
        assert app.demos.watchdog is demo.watchdogs[-1] and demo.watchdogs[-1].alive
        assert [dog.alive for dog in demo.watchdogs].count(True) == 1
    else:  # one a freeze demo opened over the timeline is closed: this lesson may point at it
        assert app.demos.watchdog is None and not any(dog.alive for dog in demo.watchdogs)
    # the class is watching: no set-up waits on the event loop for a watchdog to leave
    assert not any(dog.waited for dog in demo.watchdogs)
    assert app.input.draft == (lesson.prompt or "")
    if lesson.fresh:
        assert app.transcript.answers == []
    health = app.health
    for name, label in (
        ("heartbeat", health.heartbeat),
        ("lag", health.lag),
        ("rates", health.rates),
    ):
        assert (str(label.cget("style")) == WATCH_STYLE) == (name == lesson.watch), name
    assert lesson.expect_metric in LIVE_METRICS  # the lesson panel can show it live
    assert app.probe.peak_ms == 0.0  # the live figures count from the demo on


def the_answer_it_is_set_up_for(demo: DemoWindow, lesson: Lesson) -> str:
    """The text of the answer ``lesson``'s demo is set up to give: its backend's script, cut
    at the answer's limit."""
    stepped = demo.stepped()
    limit = min(x for x in (stepped.tokens, demo.app.demos.session.sampling.max_tokens) if x)
    return b"".join(stepped.pieces(limit)).decode()


def run_mechanism(demo: DemoWindow, lesson: Lesson, parsed: list[int]) -> dict[str, float | None]:
    """Send the demo's prompt and see the lesson's mechanism; return what was counted.
    ``parsed``: the characters of each whole-answer conversion, as they happen."""
    root, app, backend = demo.root, demo.app, demo.stepped()
    backend.gate, backend.threads = TokenGate(), []
    backend.handled = 0
    counted: dict[str, float | None] = {}
    if lesson.chaos is not None:  # the whole answer, as the lesson shows it
        ordering = asdict(app.demos.ordering_counters())
        backend.release_all()
        click_send(app, lesson.prompt or "")
        finish_answer(root, app)
        after = asdict(app.demos.ordering_counters())
        counted.update({name: after[name] - ordering[name] for name in ORDERING_METRICS})
        counted["chars"] = len(app.transcript.answers[-1].text)
        return counted
    backend.tokens = SHORT  # (checked above: the lesson's own length; a few tokens show it)
    finished, events = len(app.flow.answering.finished), app.pump.events
    if lesson.mode in ("blocking", "main-thread-reader"):
        backend.release_all()
        click_send(app, lesson.prompt or "")
        # no Tk loop has run since the click, and the answer has ended: inside the handler
        assert len(app.flow.answering.finished) == finished + 1
        assert app.pump.events == events  # no event went through the tick
        on_main = set(backend.threads) == {MAIN}
        assert on_main == (lesson.mode == "blocking"), backend.threads
        return counted
    if lesson.mode == "asyncio-run":
        backend.release_all()
        click_send(app, lesson.prompt or "")
        # the handler ran an asyncio loop to the end: the answer ended before Tk's loop ran,
        assert len(app.flow.answering.finished) == finished + 1
        assert app.pump.events == events  # no event went through the tick
        assert app.flow.answering.pipeline.thread == MAIN  # its coroutine on Tk's thread,
        assert MAIN not in backend.threads  # the model on a worker: async was not the fix
        return counted
    if lesson.mode == "asyncio-slow-poll":
        click_send(app, lesson.prompt or "")
        pipeline = app.flow.answering.pipeline
        assert isinstance(pipeline, PollTheLoopSlowly) and pipeline.poll_ms == SLOW_POLL_MS
        answer = app.controller.elsewhere
        assert isinstance(answer, AsyncAnswer)
        inserts, steps = app.transcript.inserts, pipeline.driver.steps
        source = answer.source
        assert isinstance(source, LocalModelTokens)
        # the task, and its worker, start at the loop's first step
        pump_until(root, lambda: source.worker is not None, what="the loop's first step")
        backend.step(STEP)
        pump_until(root, lambda: app.transcript.inserts > inserts, what="a step of the loop")
        finish_answer(root, app)  # the rest, in a later step: two bursts at least
        # text reaches the screen only after a step of the slowly polled loop, once a step
        # at most (tests/test_asyncio_broken_modes.py counts the bursts on a stepped clock)
        assert 2 <= app.transcript.inserts - inserts <= pipeline.driver.steps - steps
        assert answer.thread == MAIN and MAIN not in backend.threads
        return counted
    click_send(app, lesson.prompt or "")
    worker = app.controller.current
    assert worker is not None
    backend.step(STEP)
    inserts = app.transcript.inserts
    if lesson.mode == "per-chunk-render":
        before = len(parsed)
        one_tick(root, app)
        # a conversion per chunk (a token), each of the whole answer so far
        arrivals = [chars for _at, chars in app.transcript.answers[-1].arrivals]
        assert parsed[before:] == arrivals[-STEP:] and len(arrivals) == STEP
    else:
        assert lesson.mode == FIXED
        one_tick(root, app)
        assert app.transcript.inserts - inserts == 1  # the tick's tokens in one insert
        assert threading.main_thread().ident not in backend.threads
    if lesson.expect_metric.startswith("cancel_"):
        app.flow.stop()
        assert worker.join(10) and not worker.is_alive()  # Stop reached the model loop
        assert worker.tokens == STEP  # and no token came after it
        pump_until(root, lambda: app.flow.answering.last_cancel_ms is not None, what="the Stop")
        return counted
    finish_answer(root, app)
    return counted


def finish_answer(root: tk.Tk, app: ChatApp) -> None:
    finished = len(app.flow.answering.finished)
    stepped = app.controller.backend
    inner = stepped.inner if isinstance(stepped, WrappedBackend) else stepped
    assert isinstance(inner, Stepped)
    inner.release_all()
    pump_until(root, lambda: len(app.flow.answering.finished) > finished, what="the answer")
    assert isinstance(app.flow.answering.finished[-1], Done)
    pump_until(root, lambda: not app.transcript.painter.busy, what="its markdown painted")


@pytest.mark.gui
@pytest.mark.parametrize("group", GROUPS, ids=[_group_id(g) for g in GROUPS])
def test_demo(window: DemoWindow, group: list[Lesson], monkeypatch: pytest.MonkeyPatch) -> None:
    app = window.app
    parsed = parsed_texts(monkeypatch)
    for lesson in group:  # the same demo, described in each language
        assert lesson.claims, f"{lesson.id}: a demo must claim something a run can check"
        app.demos.setup(lesson)  # what its "Set up the demo" button does
        check_setup(window, lesson)
        pump_until(window.root, lambda: app.flow.model_ready, what=f"{lesson.id}'s backend")
    lesson = group[-1]
    answer = the_answer_it_is_set_up_for(window, lesson)
    counted = {"chars": float(len(answer)), **run_mechanism(window, lesson, parsed)}
    assert app.demos.live_figure(lesson.expect_metric) is not None  # what it asks to watch
    for each in group:  # what the lessons count rather than time holds on what was counted
        claims = [claim for claim in each.claims if claim.metric in COUNTED]
        failed = [v.line for v in (c.judge(counted, {}) for c in claims) if not v.holds]
        assert not failed, f"{each.language}/{each.id}: {failed}"


def test_no_demo_opens_the_watchdog_over_what_its_lesson_watches() -> None:
    """(No window.) Where the lesson panel has no timeline to cover, the watchdog opens
    over the chat's text (tkchat/lab/watchdog_place.py): lesson 01, which asks the class to
    watch that text arrive word by word, opened it there on a 1280×720 projector and hid
    the very thing."""
    over = [x.id for x in LESSONS if x.watchdog and x.watch == "transcript"]
    assert over == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_demo_answer_names_no_rate_of_its_own(language: str) -> None:
    """(No window.) The scripted answer every demo streams runs at its lesson's rate (300 to
    5,000 tokens a second): a rate in its text ("100 tokens per second arrive", "500" in a
    demo at 2,000) told the class something else than the health bar beside it."""
    answer = long_answer(DEMO_ANSWER_CHARS, language)
    rates = re.findall(r"\d[\d,]*\s*(?:tokens? (?:per|a) second|tokens/s|个 token)", answer)
    assert rates == []


@pytest.mark.parametrize("lesson", LESSONS, ids=[f"{x.id}-{x.language}" for x in LESSONS])
def test_quoted_figures_come_from_a_kept_run_and_satisfy_the_claims(lesson: Lesson) -> None:
    """(No window.) What a lesson quotes is in lessons/figures.json, with the run that
    measured it (date, machine, load), and does not contradict the lesson's claims."""
    quotes = quoted_figures(lesson.expect + lesson.body)
    if not quotes:
        return
    kept = FIGURES.get(lesson.id, {}).get(lesson.language, {})
    missing = sorted(quotes - set(kept))
    assert not missing, (
        f"{lesson.id}: quotes {missing}, never kept (tkchat bench --lessons --write)"
    )
    run = kept_run_of(FIGURES_FILE, lesson.id, lesson.language)
    assert run is not None and run.date, (
        f"{lesson.id}: its figures say nowhere where they were measured"
    )
    # A kept run from before a figure existed (the window's own lag, the answer's length)
    # cannot answer the claims on it: tkchat bench --lessons judges those on every run.
    baselines = kept_baselines(kept)
    claims = [
        claim
        for claim in lesson.claims
        if kept.get(claim.metric) is not None and claim.bound(kept, baselines) is not None
    ]
    stale = [v.line for claim in claims if not (v := claim.judge(kept, baselines)).holds]
    assert not stale, f"{lesson.id}: the quoted figures break a claim: {stale}"


def _culprit(held_by: str) -> Culprit:
    return Culprit(1.0, 2.0, held_by, None, None, "wait", 1000.0, 1.0)


@pytest.mark.parametrize("mode", sorted({x.mode for x in LESSONS} & set(BROKEN_MODES)))
def test_a_broken_demo_must_name_the_function_its_lesson_is_about(mode: str) -> None:
    """(No window.) The bench fails a broken mode's demo whose longest long task was blamed
    on anything but the class the mode registry names (``tkchat bench --lessons``)."""
    lesson = next(x for x in LESSONS if x.mode == mode)
    function = PIPELINES[mode].rpartition(":")[2] + ".start"
    froze = {"long_tasks": 1.0}
    if mode in BURSTY_MODES:  # a slow poll does not freeze: a long task is the machine's
        assert DemoRun(lesson, froze, {}, _culprit("Transcript.append")).named
        assert any(claim.metric == "own_long_tasks" for claim in lesson.claims)
        return
    assert DemoRun(lesson, froze, {}, _culprit(function)).named
    assert not DemoRun(lesson, froze, {}, _culprit("Transcript.append")).named
    assert not DemoRun(lesson, froze, {}, None).named
    assert DemoRun(lesson, {"long_tasks": 0.0}, {}, None).named  # nothing froze: no one to name
    fixed = next(x for x in LESSONS if x.mode == FIXED)
    assert DemoRun(fixed, froze, {}, None).named


def test_a_busy_machine_leaves_a_claim_unjudged_but_never_a_freeze() -> None:
    """(No window.) The fixed window's lag bound, failing on a run that waited for a CPU a
    third of the time, is not judged; the same on a quiet run fails; a broken demo's freeze
    (a bound from below on lag) is judged whatever the load."""
    smooth, frozen = parse_claims("own_lag_p99_ms <= 16; lag_max_ms >= 0.8 x answer_ms")
    busy = {
        "own_lag_p99_ms": 30.0,
        "lag_max_ms": 100.0,
        "answer_ms": 6000.0,
        "cpu_wait_share": 0.33,
    }
    quiet = {**busy, "cpu_wait_share": 0.01}
    assert smooth.load_can_break and not frozen.load_can_break
    assert not smooth.judge(busy, {}).judged and smooth.judge(busy, {}).ok
    assert smooth.judge(quiet, {}).judged and not smooth.judge(quiet, {}).ok
    assert frozen.judge(busy, {}).judged and not frozen.judge(busy, {}).ok


def _result(lesson: Lesson, figures: dict[str, float | None]) -> DemoResult:
    return judge(lesson, DemoRun(lesson, figures, {"idle": {"lag_p99_ms": 0.3}}))


def test_the_bench_writes_only_when_asked_and_never_from_a_busy_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """(No window.) ``tkchat bench --lessons`` is read-only and says what a failed claim
    means; ``--write`` keeps the figures with their provenance, unless the idle window said
    the machine was busy."""
    lesson = next(x for x in LESSONS if x.id.startswith("04") and x.language == "en")
    figures = {"lag_max_ms": 6000.0, "answer_ms": 6000.0, "cpu_wait_share": 0.0}
    target = tmp_path / "figures.json"
    quiet = {"lag_p99_ms": 0.4, "cpu_wait_share": 0.0}
    busy = {"lag_p99_ms": 14.0, "cpu_wait_share": 0.3}
    assert (
        conclude([_result(lesson, figures)], {"before": quiet, "after": quiet}, False, target) == 0
    )
    assert not target.exists() and "Nothing was written" in capsys.readouterr().out
    failing = {**figures, "lag_max_ms": 20.0}
    assert (
        conclude([_result(lesson, failing)], {"before": quiet, "after": quiet}, False, target) == 1
    )
    assert "does not show what its lesson says" in capsys.readouterr().out
    assert conclude([_result(lesson, figures)], {"before": quiet, "after": busy}, True, target) == 3
    assert not target.exists() and "not written: this machine is busy" in capsys.readouterr().out
    assert (
        conclude([_result(lesson, figures)], {"before": quiet, "after": quiet}, True, target) == 0
    )
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["lessons"][lesson.id]["en"]["lag_max_ms"] == 6000.0
    run = kept_run_of(target, lesson.id, "en")
    assert run is not None and run.machine and run.idle_lag_p99_ms == 0.4
    assert run.date in run.describe("en") and "measured on" in run.describe("en")
    assert run.date in run.describe("zh") and "测得" in run.describe("zh")
