"""In every broken mode, the bench, the lag timeline and the watchdog name the function its
lesson is about: the one that holds the event loop.

The stack each mode holds the main thread in is recorded in the real window, during a real
(short, stepped) answer: at the moment the mode's mistake runs, the main thread's stack is
read as the sampler reads it (:class:`tkchat.trace.frames.FrameBook`). A freeze made of that
stack — samples over a second, the probe's firing a second late — is then given to each place
that names a culprit, and each must name the mode's function: the bench's long tasks, the
label of the timeline's band (and the stacks a click on it opens), the watchdog's caption
while the freeze lasts (sent by the sampler's watcher) and after it.

One test lets the real sampler watch a real freeze: the main thread held in the blocking
mode's click handler until the watchdog has been told who holds it; the band's label is then
there (how long the freeze was is the bench's to measure).
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import sys
import threading
import time
import tkinter as tk
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import pump_until, wait_until
from tests.test_broken_modes import Stepped, click_send, count_redraws, one_tick
from tests.test_trace import trace_problems
from tkchat.events import Done
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.lab.watchdog import BeatReader, WatchdogWindow
from tkchat.modes import BROKEN_MODES, PIPELINES
from tkchat.stats import LagSample
from tkchat.trace.chrome import HELD, LONG
from tkchat.trace.culprit import long_task_culprits
from tkchat.trace.frames import FrameRef
from tkchat.trace.sampler import PYTHON, TK_WORK, WAIT, LoopSampler, Sample
from tkchat.ui.teaching import loop_witness
from tkchat.ui.teaching.lag_record import Freeze
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.teaching.stacks_window import StacksWindow
from tkchat.ui.teaching.watchdog_link import HeartbeatSender

pytestmark = pytest.mark.gui

# The function each broken mode's lesson is about: where THE MISTAKE is written.
CULPRIT = {
    "blocking": "GenerateInClickHandler.start",
    "main-thread-reader": "ReadStreamOnMainThread.start",
    "per-chunk-render": "RenderEveryChunk.show",
    "no-coalesce": "InsertEveryToken.show",
    "asyncio-run": "AwaitInSendHandler.start",
    "asyncio-render": "RenderInTheCoroutine.draw",
    "asyncio-blocking-call": "CallTheModelInACoroutine.tokens",
}
# The broken modes that never freeze the window (their cost is latency): no culprit to name.
NO_FREEZE = {"asyncio-slow-poll"}
# What the main thread does there: waits for the model or the queue, renders, redraws.
KIND = {
    "blocking": WAIT,
    "main-thread-reader": WAIT,
    "per-chunk-render": PYTHON,
    "no-coalesce": TK_WORK,
    "asyncio-run": WAIT,  # for the model's next token, in the loop asyncio.run runs there
    "asyncio-render": PYTHON,
    "asyncio-blocking-call": WAIT,  # (the scripted model waits at its gate: no CPU spent)
}
T0 = 5000.0  # when the constructed freeze begins (perf_counter seconds)
FROZEN_S = 1.0
FREEZE = [LagSample(T0 + FROZEN_S, FROZEN_S * 1000)]  # the probe's firing, a second late


def test_every_broken_mode_has_its_culprit_named_here() -> None:
    assert set(CULPRIT) == set(BROKEN_MODES) - NO_FREEZE
    for mode, function in CULPRIT.items():  # the class the registry names, and its method
        assert PIPELINES[mode].endswith(":" + function.split(".")[0])


class HeldStacks:
    """The main thread's stacks, each read at a moment the test chose, as the window's
    sampler reads a stack (its FrameBook says whose code each frame is)."""

    def __init__(self, app: Any) -> None:
        self.book = app.witness.sampler.book
        self.stacks: list[tuple[FrameRef, ...]] = []

    def take(self) -> None:
        if threading.get_ident() == threading.main_thread().ident:
            self.stacks.append(self.book.stack(sys._getframe(1)))


class HoldingGate(TokenGate):
    """A token gate that reads the stack of the thread waiting at it (the model's loop)."""

    def __init__(self, held: HeldStacks) -> None:
        super().__init__()
        self.held = held

    def enter(self, cancel: threading.Event) -> bool:
        self.held.take()
        return super().enter(cancel)


def held_stack(root: tk.Tk, app: Any, backend: Stepped, mode: str, monkeypatch) -> FrameRef:
    """Answer in ``mode`` and read the main thread's stack where the mode's mistake runs:
    waiting for the model inside the click (blocking), for the queue inside the click
    (main-thread-reader), in the whole-answer render (per-chunk-render), in the forced
    redraw (no-coalesce); in the loop ``asyncio.run`` runs in the click (asyncio-run), in the
    model iterated by a coroutine (asyncio-blocking-call). Returns the stack (outermost first)."""
    held = HeldStacks(app)
    if mode in ("blocking", "asyncio-blocking-call"):
        backend.gate = HoldingGate(held)
    elif mode == "asyncio-run":
        select = selectors.DefaultSelector.select

        def waiting(self: selectors.BaseSelector, timeout: float | None = None) -> Any:
            held.take()
            return select(self, timeout)  # type: ignore[arg-type]

        monkeypatch.setattr(selectors.DefaultSelector, "select", waiting)
    elif mode == "main-thread-reader":
        channel = app.controller.channel
        get = channel.get

        def reading(timeout: float | None = None) -> Any:
            held.take()
            return get(timeout)

        monkeypatch.setattr(channel, "get", reading)
    elif mode in ("per-chunk-render", "asyncio-render"):
        from tkchat.antipatterns import per_chunk_render

        convert = per_chunk_render.convert_whole_document

        def rendering(text: str) -> str:
            held.take()
            return convert(text)

        monkeypatch.setattr(per_chunk_render, "convert_whole_document", rendering)
    else:
        counter = count_redraws(app)
        redraw = counter.redraw
        counter.redraw = lambda: (held.take(), redraw())[1]
    app.teaching.set_mode(mode)
    backend.release_all()
    click_send(app)
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    assert isinstance(app.flow.answering.finished[-1], Done)
    assert held.stacks, f"{mode}: the main thread never ran the mistake"
    return held.stacks[-1]


def frozen_for(stack: tuple[FrameRef, ...], kind: str) -> list[Sample]:
    """The samples of a freeze in ``stack``: every 5 ms from T0 for FROZEN_S seconds."""
    steps = round(FROZEN_S / 0.005)
    return [Sample(T0 + (i + 1) * 0.005, 0.005, stack, kind) for i in range(steps)]


class RecordedSampler(LoopSampler):
    """The window's sampler, holding samples the test made instead of taking its own (its
    thread never runs): what the witness, the timeline and the trace read of it."""

    def __init__(self, samples: list[Sample], watchers: list[Callable[..., None]]) -> None:
        super().__init__()
        self.samples = samples
        self.watchers = watchers

    @property
    def running(self) -> bool:
        return True

    def start(self) -> None:
        """Never: the samples are given."""

    def between(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if s.at > start and s.at - s.span < end]

    def recent(self) -> list[Sample]:
        return list(self.samples)


def given_samples(app: Any, samples: list[Sample]) -> RecordedSampler:
    app.witness.sampler.stop()
    recorded = RecordedSampler(samples, app.witness.sampler.watchers)
    app.witness.sampler = recorded
    return recorded


class WatchdogPipe:
    """The watchdog's side of the window's pipe, in this process: the window's sender writes
    beats and culprit lines into it, a :class:`BeatReader` reads them, and a watchdog window
    (a Toplevel here, on a clock the test sets) draws them."""

    def __init__(self, root: tk.Tk, app: Any) -> None:
        read_end, write_end = os.pipe()
        self.fds = (read_end, write_end)
        self.closed = False
        self.sender = HeartbeatSender(None, write_end)
        self.reader = BeatReader(read_end)
        self.reader.start()
        app.demos.watchdog = SimpleNamespace(sender=self.sender, alive=True, close=self.close)
        self.now = 100.0
        self.window = WatchdogWindow(
            tk.Toplevel(root), self.reader.take, lambda: False, clock=lambda: self.now
        )
        self.window.culprit = lambda: self.reader.culprit

    def caption(self, beat_at: float, now: float) -> str:
        """The caption drawn at ``now`` (watchdog clock) after a last beat at ``beat_at``."""
        self.window.trace.beat(beat_at)
        self.now = now
        self.window.draw(now, self.window.trace.update(now))
        return self.window.shown_caption()

    def told(
        self, wanted: Callable[[dict[str, list[str]]], bool], timeout: float = 10.0
    ) -> dict[str, list[str]]:
        """Any thread: the latest culprit line read, once ``wanted`` holds for it."""
        wait_until(
            lambda: self.reader.culprit is not None and wanted(self.reader.culprit),
            timeout=timeout,
            what="the culprit line",
        )
        assert self.reader.culprit is not None
        return self.reader.culprit

    def close(self) -> None:
        """The window's end of the pipe closes (the app closing its watchdog): the reader
        reads its end."""
        if not self.closed:
            self.closed = True
            os.close(self.fds[1])

    def shut(self) -> None:
        """Both ends closed, the reader gone (it reads the end of the pipe first)."""
        self.close()
        wait_until(lambda: self.reader.eof, what="the reader at the end of the pipe")
        os.close(self.fds[0])


@pytest.fixture
def answered(root: tk.Tk, make_app, monkeypatch) -> Iterator[Callable[[str], tuple[Any, Any]]]:
    """A window that answered once in ``mode``, and the stack its mistake held the loop in."""
    pipes: list[WatchdogPipe] = []

    def build(mode: str) -> tuple[Any, Any]:
        backend = Stepped(gate=TokenGate())
        app = make_app(backend)
        app.witness.force(False)  # the samples are the test's
        stack = held_stack(root, app, backend, mode, monkeypatch)
        pipes.append(WatchdogPipe(root, app))
        return app, SimpleNamespace(stack=stack, pipe=pipes[-1])

    yield build
    for pipe in pipes:
        pipe.shut()


def banded_timeline(root: tk.Tk, app: Any) -> LagTimeline:
    """A timeline of the constructed freeze, labelled by the window's witness (in a window
    of its own, as wide as it asks)."""
    timeline = app.witness.label(
        LagTimeline(
            tk.Toplevel(root),
            app.scheduler,
            lambda: FREEZE,
            list,
            clock=lambda: T0 + 2,
            translate=app.t,
        )
    )
    timeline.pack(fill="both", expand=True)
    root.update()  # laid out and shown, as it is in the lesson panel
    timeline.redraw()
    return timeline


def band_labels(timeline: LagTimeline) -> list[str]:
    return [str(timeline.itemcget(i, "text")) for i in timeline.find_withtag("frozen-label")]


def freeze_told(app: Any) -> None:
    """The sampler's watchers, during the freeze (half a second in) and just after it."""
    sampler = app.witness.sampler
    app.probe.overdue_since = lambda: T0  # the loop is stuck since T0
    for watcher in sampler.watchers:
        watcher(sampler, T0 + 0.5)
    app.probe.overdue_since = lambda: None  # ... and keeps time again
    for watcher in sampler.watchers:
        watcher(sampler, T0 + FROZEN_S + 0.01)


@pytest.mark.parametrize("mode", sorted(CULPRIT))
def test_the_bench_the_timeline_and_the_watchdog_name_the_mode_s_function(
    root: tk.Tk, answered, mode: str
) -> None:
    app, held = answered(mode)
    function = CULPRIT[mode]
    samples = frozen_for(held.stack, KIND[mode])
    # the bench: the long task's culprit, in its JSON
    (culprit,) = long_task_culprits(samples, FREEZE)
    assert culprit.held_by == function, culprit
    assert culprit.as_json()["held_by"] == function
    # the timeline: the band is labelled with its culprit ...
    given_samples(app, samples)
    timeline = banded_timeline(root, app)
    assert any(function in label for label in band_labels(timeline)), band_labels(timeline)
    # ... and a click on it shows its stacks, innermost first
    x0, y0, x1, y1 = timeline.bbox(timeline.find_withtag("frozen")[0])
    timeline.event_generate("<Button-1>", x=(x0 + x1) // 2, y=(y0 + y1) // 2)
    (stacks,) = [w for w in root.winfo_children() if isinstance(w, StacksWindow)]
    shown = stacks.text.get("1.0", "end-1c")
    assert shown.startswith(band_labels(timeline)[0][:4])
    assert function in shown and ".py:" in shown
    stacks.destroy()
    timeline.master.destroy()
    # the watchdog: while the window is frozen, and after
    told = app.witness.told
    freeze_told(app)
    assert app.witness.told == told + 2
    said = held.pipe.told(lambda said: function in said["after"][0])
    assert all(function in line for line in said["now"] + said["after"])
    during = held.pipe.caption(beat_at=10.0, now=11.0)  # silent for a second: frozen
    assert during.startswith("now: ") and function in during, during
    after = held.pipe.caption(beat_at=11.05, now=11.1)  # beats again
    assert after.startswith("last freeze: ") and function in after, after


def test_a_timeline_with_room_for_a_name_only_still_names_the_culprit(
    root: tk.Tk, answered
) -> None:
    """A lesson panel at projector size: room for "N s in Class.method" only in the axis's
    smaller type, which is written rather than the name alone (in Chinese the bands named
    the function without the length the lesson quotes); or room for the function's name
    only. Either way the band says who held the loop, not only "frozen N s"."""
    app, held = answered("blocking")
    given_samples(app, frozen_for(held.stack, WAIT))
    timeline = banded_timeline(root, app)
    function = CULPRIT["blocking"]
    left = timeline._measure().left  # the axis labels' width
    (freeze,) = set(timeline._band_items.values())
    with_length = timeline._labels(freeze)[2]
    assert function in with_length and with_length[0].isdigit()
    # (room for the name alone in the label's type too)
    room = max(timeline.axis_font.measure(with_length), timeline.label_font.measure(function))
    assert room + 14 < timeline.label_font.measure(with_length)
    timeline.master.geometry(f"{room + 14 + left + 12}x300")
    root.update()
    timeline.redraw()
    assert band_labels(timeline) == [with_length]
    name_only = timeline.axis_font.measure(function) + 14
    assert name_only < timeline.axis_font.measure(with_length) + 14
    timeline.master.geometry(f"{name_only + left + 12}x300")
    root.update()
    timeline.redraw()
    assert band_labels(timeline) == [function]
    timeline.master.destroy()


def test_a_freeze_just_over_is_named_once_its_samples_come(root: tk.Tk, answered) -> None:
    """A band drawn the moment a blocking handler returned, before the sampler handed over
    its samples: not remembered as "nobody", named once they come."""
    app, held = answered("blocking")
    recorded = given_samples(app, [])
    now = time.perf_counter()
    freeze = Freeze(now - FROZEN_S, now)
    assert app.witness.culprit_of(freeze) is None
    shift = freeze.start - T0
    late = [dataclasses.replace(x, at=x.at + shift) for x in frozen_for(held.stack, WAIT)]
    recorded.samples = late
    culprit = app.witness.culprit_of(freeze)
    assert culprit is not None and culprit.held_by == CULPRIT["blocking"]


def test_in_chinese_the_watchdog_and_the_timeline_say_it_in_chinese(root: tk.Tk, answered) -> None:
    app, held = answered("blocking")
    app.t.set_language("zh")
    given_samples(app, frozen_for(held.stack, WAIT))
    timeline = banded_timeline(root, app)
    assert any("秒 在 GenerateInClickHandler.start" in x for x in band_labels(timeline)), (
        band_labels(timeline)
    )
    timeline.master.destroy()
    freeze_told(app)
    held.pipe.told(lambda said: said["after"][0].startswith("上次冻结："))
    after = held.pipe.caption(beat_at=10.0, now=10.1)
    assert after.startswith("上次冻结：") and "秒 在 GenerateInClickHandler.start" in after


def test_a_real_freeze_is_named_while_it_lasts_and_labelled_after(root: tk.Tk, make_app) -> None:
    """The real sampler, on the real main thread, held in the blocking mode's click handler
    (waiting at the model's gate) until the watchdog has been told who holds the loop: a
    helper thread lets the answer through then. Nothing about how long it took is asserted."""
    backend = Stepped(gate=TokenGate())
    app = make_app(backend)
    app.witness.force(True)
    pump_until(root, lambda: app.witness.sampler.running, what="the sampler")
    pipe = WatchdogPipe(root, app)
    function = CULPRIT["blocking"]
    app.teaching.set_mode("blocking")
    problems: list[str] = []

    def release_once_told() -> None:  # helper thread: touches no widget
        try:
            pipe.told(lambda said: function in said["now"][0], timeout=120)
        except AssertionError as exc:
            problems.append(str(exc))
        finally:
            backend.release_all()

    helper = threading.Thread(target=release_once_told, daemon=True)
    helper.start()
    click_send(app)  # the main thread is held in here until the helper lets the answer go
    # After the freeze the probe fires, late: its band is labelled with the same function.
    pump_until(root, lambda: app.probe.long_tasks > 0, what="the probe's late firing")
    helper.join(10)
    assert not problems, problems
    assert isinstance(app.flow.answering.finished[-1], Done)
    timeline = app.teaching.lessons.timeline(tk.Toplevel(root))
    timeline.pack(fill="both", expand=True)
    root.update()
    timeline.redraw()
    assert any(function in label for label in band_labels(timeline)), band_labels(timeline)
    timeline.master.destroy()
    pipe.shut()


def test_the_fixed_pipeline_blames_none_of_the_broken_functions_and_a_trace_can_be_saved(
    root: tk.Tk, make_app, tmp_path, monkeypatch
) -> None:
    """A fixed answer, stepped; its stack read where the tick shows the text; the window's
    callbacks and token times as the witness kept them, with samples of that stack: the
    trace the lesson panel saves is valid, with every lane, and names no broken mode."""
    backend = Stepped(gate=TokenGate())
    app = make_app(backend)
    app.witness.force(False)
    held = HeldStacks(app)
    append = app.transcript.append
    monkeypatch.setattr(app.transcript, "append", lambda *a, **k: (held.take(), append(*a, **k))[1])
    click_send(app)
    start = app.controller.current.started_at
    for count in (4, 6):
        backend.step(count)
        one_tick(root, app)
    backend.release_all()
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    assert held.stacks
    # a tenth of a second from the answer's start, spent where the tick shows the text
    samples = [Sample(start + (i + 1) * 0.005, 0.005, held.stacks[0], PYTHON) for i in range(20)]
    given_samples(app, samples)
    culprits = long_task_culprits(samples, [LagSample(start + 0.1, 100.0)])
    assert {c.held_by for c in culprits} == {"FixedPipeline.show"}
    assert not {c.held_by for c in culprits} & set(CULPRIT.values())
    path = app.witness.save_trace(tmp_path / "window.json")
    assert path is not None
    document = json.loads(path.read_text())
    assert trace_problems(document) == []
    events = document["traceEvents"]
    assert any(e["ph"] == "X" and e["tid"] == HELD for e in events)
    assert any(e["name"] == "EventPump._tick" for e in events)  # the scheduler's callbacks
    assert any(e["ph"] == "s" for e in events)  # arrows from tokens to the ticks
    assert not any(e["ph"] == "X" and e["tid"] == LONG for e in events) or culprits


def test_the_lesson_panel_offers_to_save_the_trace_in_both_languages(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None and panel.trace_button is not None
    root.update()
    assert panel.trace_button.cget("text") == "Save trace…" and panel.trace_button.winfo_ismapped()
    app.toggle_language()
    assert panel.trace_button.cget("text") == "保存追踪…"


def test_the_chat_only_view_does_not_sample_unless_asked(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_witness, "CHECK_MS", 10)  # it looks every 10 ms, not every second
    app = make_app(ScriptedBackend(rate=0))
    pump_until(root, lambda: app.witness.sampler.running, what="the sampler")
    app.appearance.set_chat_only(True, save=False)
    pump_until(root, lambda: not app.witness.sampler.running, timeout=5, what="it to stop")
    app.witness.environ["TKCHAT_SAMPLER"] = "1"
    pump_until(root, lambda: app.witness.sampler.running, timeout=5, what="it to start")
