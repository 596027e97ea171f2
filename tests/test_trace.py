"""The main-thread sampler and what is made of its samples (``tkchat/trace/``), without a window.

The sampler is run on a real helper thread against a real thread that is doing something
known (sleeping in a named function, computing in Python), so what it reports is what a
stack really looked like; the kind of each sample is told from the thread's clocks, given
here by the test (a real CPU clock on a shared machine says how busy the machine was); the
attribution and the trace are checked on samples built by hand, where the right answer is
known exactly.
"""

from __future__ import annotations

import gc
import json
import math
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tests.conftest import wait_until
from tkchat.i18n import STRINGS
from tkchat.stats import LagSample
from tkchat.trace.chrome import CALLBACKS, HELD, LONG, WORKER, TraceRun, trace_document
from tkchat.trace.core_waits import CoreWaits, others_waited
from tkchat.trace.culprit import (
    GIL,
    LOOP,
    culprit_of,
    describe,
    long_task_culprits,
    stacks_text,
)
from tkchat.trace.frames import (
    CALL_WRAPPER,
    MODEL,
    OTHER,
    PIPELINE,
    PROJECT,
    TK,
    FrameBook,
    FrameRef,
    blame_of,
    callback_name,
)
from tkchat.trace.ledger import CallbackLedger, Ran
from tkchat.trace.sampler import (
    IDLE,
    NATIVE,
    OTHER_PROGRAM,
    PYTHON,
    TK_WORK,
    WAIT,
    LoopSampler,
    Sample,
    ThreadClock,
    classify,
)
from tkchat.trace.whose import (
    CLOCKLESS_VOUCH_S,
    WhoseTime,
    whose_each_late,
    whose_late_time,
    whose_split,
    whose_time,
)

# -- stacks made by hand --------------------------------------------------------------------


def ref(function: str, role: str, file: str = "x.py", line: int = 1) -> FrameRef:
    return FrameRef(file, line, function, role)


MAIN = ref("<module>", OTHER)
LOOP_FRAME = ref("Misc.mainloop", TK, "tkinter/__init__.py")
WRAPPER = ref(CALL_WRAPPER, TK, "tkinter/__init__.py")
FIRE = ref("AfterScheduler._arm.<locals>.fire", PROJECT, "tkchat/ui/scheduler.py")
IDLE_STACK = (MAIN, LOOP_FRAME)


def in_callback(*inner: FrameRef) -> tuple[FrameRef, ...]:
    return (MAIN, LOOP_FRAME, WRAPPER, FIRE, *inner)


BLOCKING = in_callback(
    ref("ChatApp.send", PROJECT, "tkchat/ui/window/chat_window.py"),
    ref("GenerateInClickHandler.start", PIPELINE, "tkchat/antipatterns/blocking.py"),
    ref("ScriptedBackend.stream", MODEL, "tkchat/generate/scripted.py"),
    ref("Event.wait", OTHER, "threading.py"),
)
TICK = in_callback(
    ref("EventPump._tick", PROJECT, "tkchat/ui/pump.py"),
    ref("FixedPipeline.show", PROJECT, "tkchat/ui/pipeline.py"),
    ref("Transcript.append", PROJECT, "tkchat/ui/transcript/transcript.py"),
    ref("Text.insert", TK, "tkinter/__init__.py"),
)


def sample(at: float, stack: tuple[FrameRef, ...], kind: str, **more: Any) -> Sample:
    return Sample(at, more.pop("span", 0.005), stack, kind, **more)


def test_the_blame_goes_to_the_pipeline_under_study_else_to_tkchat_s_innermost_frame() -> None:
    assert blame_of(BLOCKING) == BLOCKING[-3]  # GenerateInClickHandler.start, not the model
    blamed = blame_of(TICK)
    assert blamed is not None and blamed.function == "Transcript.append"  # the fixed one
    assert callback_name(BLOCKING) == "ChatApp.send"  # the scheduler's closure skipped
    assert callback_name(IDLE_STACK) is None
    assert blame_of(()) is None


def test_each_kind_of_time_is_told_apart() -> None:
    span, at_once, waited = 0.005, 0.0001, 0.005  # the sampler's wait for the GIL
    assert classify(IDLE_STACK, span, 0.0, 0.0, gil_wait=at_once) == IDLE
    assert classify(IDLE_STACK, span, 0.004, 0.0, gil_wait=at_once) == TK_WORK  # redisplay
    assert classify(BLOCKING, span, 0.0, 0.0, gil_wait=at_once) == WAIT
    assert classify(BLOCKING, span, 0.005, 0.0, gil_wait=at_once) == NATIVE  # GIL released
    assert classify(BLOCKING, span, 0.005, 0.0, gil_wait=waited) == PYTHON
    assert classify(TICK, span, 0.005, 0.0, gil_wait=waited) == TK_WORK  # a call into Tk
    assert classify(BLOCKING, span, 0.001, 0.004, gil_wait=waited) == OTHER_PROGRAM
    assert classify(BLOCKING, span, 0.002, 0.003, gil_wait=waited) == PYTHON  # it did run
    assert classify(BLOCKING, span, None, None, gil_wait=waited) == PYTHON  # no clocks


def test_a_freeze_is_blamed_on_the_function_that_held_it_whatever_else_ran() -> None:
    samples = [sample(1.0 + i * 0.005, BLOCKING, WAIT) for i in range(200)]
    samples += [sample(2.0 + i * 0.005, IDLE_STACK, IDLE) for i in range(10)]
    # another program took the core now and then: still the handler's freeze
    samples[50:70] = [sample(s.at, BLOCKING, OTHER_PROGRAM) for s in samples[50:70]]
    culprit = culprit_of(samples, 1.0, 2.0)
    assert culprit is not None
    assert culprit.function == "GenerateInClickHandler.start" and culprit.kind == WAIT
    assert culprit.model and culprit.callback == "ChatApp.send"
    assert culprit.share == pytest.approx(1.0, abs=0.01)
    assert describe(culprit) == (
        "1.0 s in GenerateInClickHandler.start → Event.wait — the model ran on the main thread"
    )
    assert (
        describe(culprit, "zh")
        == "1.0 秒 在 GenerateInClickHandler.start → Event.wait 中——模型在主线程上运行"
    )
    text = stacks_text(culprit)
    assert "Tk called: ChatApp.send" in text
    first, last = "threading.py:1:Event.wait", "tkchat/ui/window/chat_window.py:1:ChatApp.send"
    assert text.index(first) < text.index(last)  # innermost first


def test_tk_s_own_work_is_named_after_what_ran_before_it() -> None:
    samples = [sample(1.0 + i * 0.005, TICK, PYTHON) for i in range(4)]
    samples += [
        sample(1.02 + i * 0.005, IDLE_STACK, TK_WORK, after="Transcript.append") for i in range(36)
    ]
    culprit = culprit_of(samples, 1.02, 1.2)
    assert culprit is not None and culprit.function == LOOP and culprit.after == "Transcript.append"
    assert describe(culprit) == "180 ms in Tk's redisplay after Transcript.append"


def test_a_loop_that_waited_for_the_gil_or_a_core_says_so() -> None:
    gil = [sample(1.0 + i * 0.005, IDLE_STACK, IDLE, others=0.004) for i in range(20)]
    culprit = culprit_of(gil, 1.0, 1.1)
    assert culprit is not None and culprit.kind == GIL and culprit.function == ""
    assert "GIL" in describe(culprit)
    core = [sample(1.0 + i * 0.005, IDLE_STACK, OTHER_PROGRAM) for i in range(20)]
    other = culprit_of(core, 1.0, 1.1)
    assert other is not None and describe(other) == "100 ms: another program had the core"
    assert culprit_of([], 1.0, 2.0) is None


def test_whose_time_splits_an_interval_between_the_pipeline_tk_and_other_programs() -> None:
    samples = [sample(1.0 + i * 0.01, BLOCKING, WAIT, span=0.01, queued=0.0) for i in range(1, 51)]
    samples += [
        sample(1.5 + i * 0.01, IDLE_STACK, TK_WORK, span=0.01, queued=0.005) for i in range(1, 31)
    ]
    samples += [sample(1.8 + i * 0.01, TICK, PYTHON, span=0.01) for i in range(1, 21)]
    whose = whose_time(samples, 1.0, 2.2)
    assert whose.pipeline == pytest.approx(500)
    assert whose.tk == pytest.approx(150) and whose.other_program == pytest.approx(150)
    assert whose.app == pytest.approx(200) and whose.unsampled == pytest.approx(200)
    assert whose.main == "pipeline"


def test_whose_late_time_adds_up_only_the_late_moments() -> None:
    samples = [sample(1.0 + i * 0.01, BLOCKING, WAIT, span=0.01) for i in range(1, 101)]
    lags = [LagSample(1.3, 200.0), LagSample(1.5, 10.0), LagSample(1.9, 100.0)]
    whose = whose_late_time(samples, lags)
    assert whose.pipeline == pytest.approx(300) and whose.main == "pipeline"
    assert whose_late_time(samples, lags[1:2]) == WhoseTime()


CATCH_UP = in_callback(
    ref("Pipeline._catch_up", PIPELINE, "mine.py"),  # scheduled by show(): after(0, ...)
    ref("markdown_to_safe_html", PROJECT, "tkchat/render/safe_markdown.py"),
)


def test_a_sample_without_clocks_vouches_for_one_interval_not_its_whole_span() -> None:
    """Seen in a class graded beside hogs: the sampler, woken 120 ms late after a calm
    moment (no clocks of the main thread yet), found the pipeline's show() on the stack, and
    all 120 ms were charged to it as work hidden from its timed calls: a correct file FAILed.
    Without clocks a sample says what ran at its end, for about the interval it slept; the
    rest is unsampled. With clocks that say the main thread ran all along, all of it counts."""
    clockless = [sample(1.12, CATCH_UP, PYTHON, span=0.12)]
    split = whose_split(clockless, 1.0, 1.12)
    assert split.whose.pipeline == pytest.approx(1000 * CLOCKLESS_VOUCH_S)
    assert split.whose.unsampled == pytest.approx(120 - 1000 * CLOCKLESS_VOUCH_S)
    clocked = [sample(1.12, CATCH_UP, PYTHON, span=0.12, ran=0.12, queued=0.0)]
    assert whose_split(clocked, 1.0, 1.12).whose.pipeline == pytest.approx(120)


def test_the_pipelines_time_is_told_by_the_function_that_held_the_loop() -> None:
    """A callback the pipeline scheduled is the pipeline's time, under its own name; of its
    wall time, the part it waited for a core and the part it ran are said apart."""
    samples = [
        sample(1.0 + i * 0.01, CATCH_UP, PYTHON, span=0.01, queued=0.002, ran=0.008)
        for i in range(1, 21)
    ]
    samples += [sample(1.2 + i * 0.01, TICK, PYTHON, span=0.01) for i in range(1, 11)]
    split = whose_split(samples, 1.0, 1.3)
    assert split.functions == pytest.approx({"Pipeline._catch_up": 160})
    assert split.pipeline_wall == pytest.approx(200) and split.pipeline_ran == pytest.approx(160)
    assert split.whose.pipeline == pytest.approx(160) and split.whose.app == pytest.approx(100)
    assert split.whose.other_program == pytest.approx(40)
    each = list(whose_each_late(samples, [LagSample(1.1, 100.0), LagSample(1.3, 5.0)]))
    assert [lag.at for lag, _split in each] == [1.1]  # 5 ms late is not late
    assert each[0][1].functions == pytest.approx({"Pipeline._catch_up": 80})


SHOW = in_callback(
    ref("EventPump._tick", PROJECT, "tkchat/ui/pump.py"),
    ref("Pipeline.show", PIPELINE, "mine.py"),
    ref("Text.insert", TK, "tkinter/__init__.py"),
)


def test_a_sleep_in_the_pipeline_while_our_other_threads_waited_for_a_core_is_the_machines() -> (
    None
):
    """Asleep on a lock in ``Pipeline.show`` (the GIL, after a call into Tk) while the
    process's other threads waited for a core — the GIL's holder kept off one by another
    program: that part of the sleep is other programs' time, as the timed calls count it
    (issue 35: the reference async solution once FAILed on 736 ms of such sleep). A sleep
    the kernel says was not on a lock, or with no other thread kept waiting, stays the
    pipeline's."""
    gil = [
        sample(1.0 + i * 0.01, SHOW, WAIT, span=0.01, ran=0.0, queued=0.0, others_queued=0.008)
        for i in range(1, 11)
    ]
    split = whose_split(gil, 1.0, 1.1)
    assert split.whose.other_program == pytest.approx(80) and split.whose.pipeline == pytest.approx(
        20
    )
    locked = [replace(s, blocked="futex_wait_queue") for s in gil]
    assert whose_split(locked, 1.0, 1.1).whose.other_program == pytest.approx(80)
    asleep = [replace(s, blocked="hrtimer_nanosleep") for s in gil]
    assert whose_split(asleep, 1.0, 1.1).whose.pipeline == pytest.approx(100)
    # in show(), asleep in poll for the X server's reply while our threads waited for a
    # core: the timed call excused it (204 ms), the sampler did not, and a correct file
    # FAILed as "work outside its calls" (2 of 120 gradings beside two hogs)
    polled = [replace(s, kind=TK_WORK, blocked="do_sys_poll") for s in gil]
    assert whose_split(polled, 1.0, 1.1).whose.other_program == pytest.approx(80)
    alone = [replace(s, others_queued=0.0) for s in gil]
    assert whose_split(alone, 1.0, 1.1).whose.pipeline == pytest.approx(100)
    unread = [replace(s, others_queued=None) for s in gil]
    assert whose_split(unread, 1.0, 1.1).whose.pipeline == pytest.approx(100)
    working = [replace(s, kind=PYTHON, ran=0.01) for s in gil]  # it ran: its own time
    assert whose_split(working, 1.0, 1.1).whose.pipeline == pytest.approx(100)
    # back from a call into Tk, asleep for the GIL: the same (seen in 2 of 12 gradings of the
    # reference async solution beside two CPU hogs, as "show() held the loop 300 ms")
    back_from_tk = [replace(s, kind=TK_WORK) for s in gil]
    assert whose_split(back_from_tk, 1.0, 1.1).whose.other_program == pytest.approx(80)
    in_tk = [replace(s, kind=TK_WORK, ran=0.01) for s in gil]  # Tk worked: the call's time
    assert whose_split(in_tk, 1.0, 1.1).whose.pipeline == pytest.approx(100)
    unknown = [replace(s, kind=TK_WORK, ran=None, queued=None) for s in gil]  # no clocks read
    assert whose_split(unknown, 1.0, 1.1).whose.pipeline == pytest.approx(100)


def test_every_long_task_gets_its_culprit_and_short_lateness_none() -> None:
    samples = [sample(1.0 + i * 0.005, BLOCKING, WAIT) for i in range(100)]
    lags = [LagSample(1.2, 30.0), LagSample(1.5, 400.0)]
    (culprit,) = long_task_culprits(samples, lags)
    assert culprit.start == pytest.approx(1.1) and culprit.end == 1.5
    assert culprit.as_json()["function"] == "GenerateInClickHandler.start"


def test_every_label_exists_in_both_languages() -> None:
    keys = {key for key in STRINGS["en"] if key.startswith(("culprit.", "trace."))}
    assert keys and keys == {key for key in STRINGS["zh"] if key.startswith(("culprit.", "trace."))}
    for kind in (PYTHON, NATIVE, WAIT, TK_WORK, IDLE, OTHER_PROGRAM, GIL):
        assert f"culprit.why.{kind}" in STRINGS["en"] and f"culprit.kind.{kind}" in STRINGS["zh"]


# -- roles of real code ------------------------------------------------------------------------


def test_frames_know_whose_code_they_are() -> None:
    from tkchat.antipatterns.blocking import GenerateInClickHandler
    from tkchat.generate.scripted import ScriptedBackend
    from tkchat.ui.pipeline import FixedPipeline

    book = FrameBook()
    assert book.role_of(GenerateInClickHandler.start.__code__)[0] == PIPELINE
    assert book.role_of(ScriptedBackend.stream.__code__)[0] == MODEL
    assert book.role_of(FixedPipeline.show.__code__) == (PROJECT, "FixedPipeline.show")
    assert book.role_of(json.dumps.__code__)[0] == OTHER
    # a pipeline file of one's own is "the pipeline" once the window says it is in use
    here = test_frames_know_whose_code_they_are.__code__
    assert book.role_of(here)[0] == OTHER
    book.add_pipeline_file(here.co_filename)
    assert book.role_of(here)[0] == PIPELINE


# -- the sampler, on real threads ------------------------------------------------------------


def held_in_a_named_function(stop: threading.Event) -> None:
    stop.wait(5)


def computing_in_python(stop: threading.Event) -> None:
    total = 0
    while not stop.is_set():
        for n in range(2000):
            total += n * n


@pytest.fixture
def target() -> Iterator[Any]:
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def run(function: Any) -> threading.Thread:
        thread = threading.Thread(target=function, args=(stop,), daemon=True)
        thread.start()
        threads.append(thread)
        return thread

    yield run
    stop.set()
    for thread in threads:
        thread.join(5)


def sampled(thread: threading.Thread, wanted: int = 20) -> list[Sample]:
    """``wanted`` samples of ``thread``, taken by a real sampler."""
    sampler = LoopSampler(thread, interval_s=0.005)
    sampler.start_recording()
    sampler.start()
    wait_until(lambda: sampler.taken >= wanted, timeout=60, what=f"{wanted} samples")
    sampler.stop()
    return sampler.stop_recording()


def test_a_blocked_thread_is_seen_waiting_in_the_function_it_is_blocked_in(target) -> None:
    samples = sampled(target(held_in_a_named_function), 20)
    assert len(samples) >= 20
    functions = {s.stack[-1].function for s in samples}
    assert "Event.wait" in functions or "Condition.wait" in functions
    assert any(r.function == "held_in_a_named_function" for r in samples[-1].stack)


def test_a_thread_running_python_is_seen_in_the_function_it_runs(target) -> None:
    samples = sampled(target(computing_in_python))
    assert len(samples) >= 10
    inside = [any(r.function == "computing_in_python" for r in s.stack) for s in samples]
    assert inside[-1] and all(inside[inside.index(True) :])  # once in, seen there always


class GivenClocks:
    """``ThreadClock.read`` as the test sets it: each read of a clock, its thread has run
    ``ran`` and waited ``queued`` seconds for a core more than at that clock's last read.
    (Per clock: a sampler another test left running in this process reads its own clock
    through the same patched method, and must not move this one's.)"""

    def __init__(self, ran: float, queued: float) -> None:
        self.step = (ran, queued)
        self.totals: dict[int, tuple[float, float]] = {}

    def __call__(self, clock: ThreadClock) -> tuple[float | None, float | None]:
        ran, queued = self.totals.get(id(clock), (0.0, 0.0))
        self.totals[id(clock)] = (ran + self.step[0], queued + self.step[1])
        return self.totals[id(clock)]


@pytest.mark.parametrize(
    ("ran", "queued", "kind"),
    [(0.0, 0.0, WAIT), (0.0, 1000.0, OTHER_PROGRAM)],
    ids=["did not run: waited", "ready, but another program had the core"],
)
def test_the_sampler_tells_the_kind_of_each_sample_from_the_thread_s_clocks(
    target, monkeypatch: pytest.MonkeyPatch, ran: float, queued: float, kind: str
) -> None:
    """The real sampler, on a real thread blocked in a named function, with the thread's
    clocks given: every sample is of the kind those clocks say (Python against C code is
    told by how long the sampler waited for the GIL: test_each_kind_of_time_is_told_apart)."""
    given = GivenClocks(ran, queued)
    monkeypatch.setattr(ThreadClock, "read", lambda clock: given(clock))
    samples = sampled(target(held_in_a_named_function), 10)
    assert {s.kind for s in samples} == {kind}
    assert all(s.ran == ran and s.queued == queued for s in samples)


def test_a_run_of_waits_reads_how_long_the_other_threads_waited_for_a_core(
    target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real sampler on a thread that sleeps (its clocks given: it did not run): from the
    second sample of the run on, each says how long the process's other threads waited for
    a core since the one before (here another thread waits 2 ms more at every reading); the
    sampled thread and the sampler are not counted."""
    given = GivenClocks(0.0, 0.0)
    monkeypatch.setattr(ThreadClock, "read", lambda clock: given(clock))
    readings: list[int] = []

    def waits(_reader: CoreWaits) -> dict[int, int]:
        readings.append(len(readings))
        skipped = dict.fromkeys((threading.get_native_id(), blocked.native_id or 0), 10**9)
        return {**skipped, 999_999: 2_000_000 * len(readings)}

    monkeypatch.setattr(CoreWaits, "read", waits)
    blocked = target(held_in_a_named_function)
    samples = sampled(blocked, 10)
    assert {s.kind for s in samples} == {WAIT} and len(readings) >= len(samples)
    assert samples[0].others_queued is None
    assert [s.others_queued for s in samples[1:]] == [pytest.approx(0.002)] * (len(samples) - 1)


def test_the_threads_waits_for_a_core_are_read_in_place_and_counted_from_their_birth() -> None:
    """A reading of every thread's wait for a core names this thread; between two readings,
    the threads not skipped count from their last reading, one born meanwhile from zero."""
    reader = CoreWaits()
    try:
        first = reader.read()
        if not first:
            pytest.skip("this system does not say how long a thread waited for a core")
        assert threading.get_native_id() in first and reader.read().keys() >= {
            threading.get_native_id()
        }
    finally:
        reader.close()
    before, after = {1: 5_000_000, 2: 1_000_000}, {1: 7_000_000, 2: 9_000_000, 3: 4_000_000}
    assert others_waited(before, after, skip={2}) == pytest.approx(0.006)  # 2 ms + 4 ms new


def test_what_the_sampler_keeps_is_bounded(target) -> None:
    thread = target(held_in_a_named_function)
    sampler = LoopSampler(thread, interval_s=0.001, keep_s=0.05)
    sampler.start_recording(limit=30)
    sampler.start()
    wait_until(lambda: sampler.taken > 60, timeout=60, what="60 samples")
    sampler.stop()
    assert len(sampler.recent()) <= 50 and len(sampler.stop_recording()) == 30
    assert not sampler.running


def test_the_ledger_names_the_running_timer_and_the_last_one_even_nested() -> None:
    ledger = CallbackLedger()
    ledger.keep(10)
    ledger.begin("pump", test_the_ledger_names_the_running_timer_and_the_last_one_even_nested)
    ledger.begin("painter", str.upper)  # a when_idle timer run inside the first
    assert ledger.current is not None and ledger.current[0] == "painter"
    ledger.end()
    assert ledger.current is not None and ledger.current[0] == "pump"
    ledger.end()
    assert ledger.current is None and ledger.last is not None and ledger.last.timer == "pump"
    assert [ran.function for ran in ledger.kept_since(0.0)] == [
        "str.upper",
        "test_the_ledger_names_the_running_timer_and_the_last_one_even_nested",
    ]
    # what is kept costs no full collection a walk: plain tuples, which the collector untracks
    gc.collect()
    assert ledger.kept and not any(gc.is_tracked(call) for call in ledger.kept)


# -- the Chrome trace ------------------------------------------------------------------------


Lanes = dict[tuple[int, int], list[tuple[float, float, str]]]


def trace_problems(document: dict[str, Any]) -> list[str]:
    """What would make a trace viewer misdraw or refuse ``document``: fields missing, slices
    on one lane that overlap without nesting, flows without a start, an end or an enclosing
    slice, ids used twice. (Perfetto's importer counts these as errors.)"""
    events = document.get("traceEvents")
    if not isinstance(events, list) or not events:
        return ["no traceEvents"]
    problems: list[str] = []
    lanes: Lanes = defaultdict(list)
    flows: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        problems += _event_problems(event)
        if event.get("ph") == "X":  # in whole nanoseconds, as Perfetto reads them
            start = round(event["ts"] * 1000)
            lanes[(event["pid"], event["tid"])].append(
                (start, start + round(event["dur"] * 1000), event["name"])
            )
        elif event.get("ph") in ("s", "f"):
            flows[event["id"]].append(event)
    return problems + _nesting_problems(lanes) + _flow_problems(flows, lanes)


def _event_problems(event: dict[str, Any]) -> list[str]:
    phase = event.get("ph")
    if phase not in {"X", "C", "M", "s", "f"} or "pid" not in event or "name" not in event:
        return [f"bad event {event}"]
    ts = event.get("ts")
    if phase != "M" and not (isinstance(ts, (int, float)) and math.isfinite(ts)):
        return [f"no time: {event}"]
    if phase == "X" and not event.get("dur", -1) >= 0:
        return [f"no duration: {event}"]
    if phase != "M" and ts < 0:  # Perfetto drops events before time 0
        return [f"before time 0: {event}"]
    if phase == "C" and not all(isinstance(v, (int, float)) for v in event["args"].values()):
        return [f"counter not numeric: {event}"]
    return []


def _nesting_problems(lanes: Lanes) -> list[str]:
    problems = []
    for lane, slices in lanes.items():
        open_ends: list[float] = []
        for start, end, name in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:  # Perfetto drops a slice that sticks out
                problems.append(f"{lane}: {name} overlaps the slice it starts in")
            open_ends.append(end)
    return problems


def _flow_problems(flows: dict[Any, list[dict[str, Any]]], lanes: Lanes) -> list[str]:
    problems = []
    for flow_id, pair in flows.items():
        phases = sorted(e["ph"] for e in pair)
        if phases != ["f", "s"]:
            problems.append(f"flow {flow_id}: {phases}")
            continue
        for event in pair:
            slices = lanes[(event["pid"], event["tid"])]
            at = round(event["ts"] * 1000)
            if not any(s <= at <= e for s, e, _n in slices):
                problems.append(f"flow {flow_id}: its {event['ph']} is in no slice")
    return problems


def test_a_run_becomes_a_trace_with_every_lane_and_valid_events(tmp_path: Path) -> None:
    samples = [
        sample(
            1.0 + i * 0.005,
            BLOCKING if i < 40 else IDLE_STACK,
            WAIT if i < 40 else IDLE,
            counters=(float(i % 3), 2.0),
        )
        for i in range(100)
    ]
    callbacks = [
        Ran("pump", "EventPump._tick", 1.3 + i * 0.016, 1.302 + i * 0.016) for i in range(10)
    ]
    tokens = [1.25 + i * 0.004 for i in range(40)]
    arrivals = [(ran.start + 0.001, (i + 1) * 10) for i, ran in enumerate(callbacks)]
    lags = [LagSample(1.2, 190.0), LagSample(1.3, 1.0)]
    run = TraceRun(
        name="blocking — 1",
        origin=1.0,
        samples=samples,
        callbacks=callbacks,
        lags=lags,
        culprits=long_task_culprits(samples, lags),
        tokens=tokens,
        prompt=(1.2, 1.25),
        arrivals=arrivals,
        counter_names=("queue depth (events)", "chunks coalesced (pieces merged)"),
    )
    document = trace_document([run, run], command="test")
    assert trace_problems(document) == []
    events = document["traceEvents"]
    lanes = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert {(1, CALLBACKS), (1, HELD), (1, LONG), (1, WORKER), (2, LONG)} <= lanes
    (long_task,) = [e for e in events if e["ph"] == "X" and e["tid"] == LONG and e["pid"] == 1]
    assert long_task["name"].startswith("190 ms in GenerateInClickHandler.start")
    assert long_task["args"]["function"] == "GenerateInClickHandler.start"
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert counters >= {"lag (ms)", "queue depth (events)", "text on screen (characters)"}
    # one arrow per tick that painted a new token: 8 of the 10 (the last two came after the
    # last token), in each of the two runs
    assert sum(e["ph"] == "s" for e in events) == 16
    assert document["otherData"] == {"command": "test"}


def test_the_trace_check_can_fail() -> None:
    bad = {
        "traceEvents": [
            {"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 0, "dur": 10},
            {"ph": "X", "pid": 1, "tid": 1, "name": "b", "ts": 5, "dur": 10},
            {"ph": "s", "pid": 1, "tid": 1, "name": "f", "ts": 1, "id": 3},
        ]
    }
    problems = trace_problems(bad)
    assert any("overlaps" in p for p in problems) and any("flow 3" in p for p in problems)


def test_a_finished_frame_of_another_thread_is_freed_by_bury_not_on_the_sampler_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``sys._current_frames()`` reads every thread's frame. One that finishes before the
    sampler drops what it read is then the sampler's alone: its locals must be freed by
    ``bury()`` (the main thread, in the window), never on the sampler thread (a Tk object
    freed there aborts the process). Made to happen every time: the read returns only once
    the other thread's function has returned."""
    freed_on: list[str] = []

    class Witness:
        def __del__(self) -> None:
            freed_on.append(threading.current_thread().name)

    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def holds_a_witness() -> None:
        witness = Witness()  # a local: a frame read before it returned keeps it alive
        entered.set()
        release.wait(10)
        assert witness is not None

    def other_thread() -> None:
        holds_a_witness()
        finished.set()
        release.wait(10)

    read = sys._current_frames

    def read_then_let_it_finish() -> dict[int, FrameType]:
        frames = read()
        del frames[threading.get_ident()]  # this very frame: kept, it would hold the dict
        if not finished.is_set():
            release.set()
            finished.wait(10)
        return frames

    thread = threading.Thread(target=other_thread, daemon=True)
    thread.start()
    assert entered.wait(10)
    monkeypatch.setattr(sys, "_current_frames", read_then_let_it_finish)
    sampler = LoopSampler(threading.main_thread(), interval_s=0.001)
    sampler.start()
    wait_until(lambda: finished.is_set() and sampler.taken >= 3, timeout=60, what="samples")
    sampler.request_stop()
    assert sampler._thread is not None
    sampler._thread.join(10)
    assert freed_on == []  # not on the sampler thread: it waits for bury()
    sampler.bury()
    assert freed_on == [threading.current_thread().name]
    thread.join(10)
