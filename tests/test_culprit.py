"""In every broken mode, the lag timeline, the watchdog and the bench name the function its
lesson is about: the one that holds the event loop.

Each test runs one answer in the real window on a virtual screen, with the window's sampler
running (as in teaching mode) and a real watchdog process beside it, and reads the culprit
where each place shows it: the label of the timeline's long band (and the stacks a click on
it opens), the watchdog's caption while the freeze lasts (sent by the frozen process's
sampler thread) and after it, and the bench's record of the run.
"""

from __future__ import annotations

import json
import subprocess
import time
import tkinter as tk
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import pump_for, pump_until
from tests.test_trace import trace_problems
from tests.test_watchdog import StateLines
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.modes import BROKEN_MODES, FIXED, PIPELINES
from tkchat.trace.chrome import HELD, LONG
from tkchat.trace.recorder import RunRecorder
from tkchat.ui.teaching.stacks_window import StacksWindow
from tkchat.ui.teaching.watchdog_link import open_watchdog, watchdog_command

pytestmark = pytest.mark.gui

# The function each broken mode's lesson is about: where THE MISTAKE is written.
CULPRIT = {
    "blocking": "GenerateInClickHandler.start",
    "main-thread-reader": "ReadStreamOnMainThread.start",
    "per-chunk-render": "RenderEveryChunk.show",
    "no-coalesce": "InsertEveryToken.show",
}
# Rates and lengths at which each mistake freezes the window for over a second here.
RATE = {"blocking": 300, "main-thread-reader": 300, "per-chunk-render": 1000, "no-coalesce": 5000}
LENGTH = {
    "blocking": 2_000,
    "main-thread-reader": 2_000,
    "per-chunk-render": 2_500,
    "no-coalesce": 12_000,
}


def test_every_broken_mode_has_its_culprit_named_here() -> None:
    assert set(CULPRIT) == set(BROKEN_MODES)
    for mode, function in CULPRIT.items():  # the class the registry names, and its method
        assert PIPELINES[mode].endswith(":" + function.split(".")[0])


@pytest.fixture
def watched_app(root: tk.Tk, make_app) -> Iterator[Any]:
    """A window whose sampler runs, with a real watchdog beside it (``--state``: it prints
    what it shows)."""

    def build(mode: str) -> tuple[Any, StateLines]:
        backend = ScriptedBackend(rate=RATE[mode], text=long_answer(LENGTH[mode]))
        app = make_app(backend, sampling=Sampling(max_tokens=0))
        app.demos.watchdog = open_watchdog(
            app.scheduler, command=[*watchdog_command(), "--state"], stdout=subprocess.PIPE
        )
        lines = StateLines(app.demos.watchdog.process.stdout)
        pump_until(root, lambda: lines.latest.get("beats", 0) >= 5, what="the watchdog")
        pump_until(root, lambda: app.witness.sampler.running, what="the sampler")
        built.append(app)
        return app, lines

    built: list[Any] = []
    yield build
    for app in built:
        if app.demos.watchdog is not None:
            app.demos.watchdog.close()


def answer(root: tk.Tk, app: Any, mode: str) -> Any:
    """One answer in ``mode``, sent from a callback as a click would; the bench's record of
    it (the same recorder ``tkchat bench`` uses)."""
    app.flow.new_chat()
    app.teaching.set_mode(mode)
    recorder = RunRecorder(app.witness.sampler, app.witness.ledger, app.controller)
    recorder.begin()
    app.probe.start_recording()
    finished = len(app.flow.answering.finished)
    app.scheduler.once("test-send", 10, lambda: app.flow.send("the same prompt"))
    pump_until(
        root, lambda: len(app.flow.answering.finished) > finished, timeout=180, what="the answer"
    )
    pump_until(root, lambda: not app.transcript.painter.busy, timeout=60, what="rendering")
    pump_for(root, 0.5)  # the watchdog hears the end of the freeze; the probe catches up
    lags = app.probe.stop_recording()
    assert isinstance(app.flow.answering.finished[-1], Done)
    return recorder.end(mode, lags, app.transcript.answers[-1].arrivals)


@pytest.mark.parametrize("mode", BROKEN_MODES)
def test_the_timeline_the_watchdog_and_the_bench_name_the_mode_s_function(
    root: tk.Tk, watched_app, mode: str, tmp_path: Path
) -> None:
    app, lines = watched_app(mode)
    function = CULPRIT[mode]
    began = time.monotonic()
    recorded = answer(root, app, mode)
    # the bench: the longest long task's culprit, and each long task's in its JSON
    main = recorded.main_culprit
    assert main is not None and main.held_by == function, recorded.culprits
    assert main.length_ms > 250
    assert any(c["culprit"]["held_by"] == function for c in recorded.culprits_json(0.0))
    # the timeline: the long band is labelled with its culprit
    timeline = app.teaching.lessons.timeline(root)
    timeline.pack()
    pump_for(root, 0.1)
    timeline.redraw()
    labels = [timeline.itemcget(i, "text") for i in timeline.find_withtag("frozen-label")]
    assert any(function in label for label in labels), labels
    # ... and a click on it (on its widest band) shows its stacks, innermost first
    bands = [timeline.bbox(item) for item in timeline.find_withtag("frozen")]
    x0, y0, x1, y1 = max(bands, key=lambda box: box[2] - box[0])
    assert timeline.bind("<Button-1>")  # (a real click on a band, with xdotool, was seen
    # opening it: the picture in assets/culprit-stacks.png); here the handler, given where
    timeline._picked(SimpleNamespace(x=(x0 + x1) // 2, y=(y0 + y1) // 2))  # type: ignore[arg-type]
    (stacks,) = [w for w in root.winfo_children() if isinstance(w, StacksWindow)]
    shown = stacks.shown()
    assert shown.startswith(timeline.itemcget(timeline.find_withtag("frozen-label")[0], "text")[:4])
    assert function in shown and ".py:" in shown
    stacks.destroy()
    timeline.destroy()
    # the watchdog: while the window was frozen, and after
    frozen = [s for s in lines.between(began, time.monotonic()) if s["frozen"]]
    assert frozen, "the watchdog never saw the window frozen"
    during = [s["caption"] for s in frozen if s["caption"].startswith("now: ")]
    assert any(function in caption for caption in during), {s["caption"] for s in frozen}
    pump_until(root, lambda: lines.latest.get("caption", "").startswith("last freeze: "))
    after = {s["caption"] for s in lines.between(began, time.monotonic()) if not s["frozen"]}
    assert any(c.startswith("last freeze: ") and function in c for c in after), after
    assert app.witness.told > 0


def test_in_chinese_the_watchdog_and_the_timeline_say_it_in_chinese(
    root: tk.Tk, watched_app
) -> None:
    app, lines = watched_app("blocking")
    app.t.set_language("zh")
    answer(root, app, "blocking")
    pump_until(root, lambda: lines.latest.get("caption", "").startswith("上次冻结："))
    assert "秒 在 GenerateInClickHandler.start" in lines.latest["caption"]  # (as much as fits)
    timeline = app.teaching.lessons.timeline(root)
    timeline.pack()
    pump_for(root, 0.1)
    timeline.redraw()
    labels = [timeline.itemcget(i, "text") for i in timeline.find_withtag("frozen-label")]
    assert any("秒 在 GenerateInClickHandler.start" in label for label in labels), labels
    timeline.destroy()


def test_the_fixed_pipeline_has_no_long_band_to_blame_and_a_trace_can_be_saved(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    app = make_app(ScriptedBackend(rate=300, text=long_answer(1_500)))
    pump_until(root, lambda: app.witness.sampler.running, what="the sampler")
    recorded = answer(root, app, FIXED)
    blamed = {c.function for c in recorded.culprits}
    assert not blamed & set(CULPRIT.values()), blamed  # nothing of a broken mode ran
    path = app.witness.save_trace(tmp_path / "window.json")
    assert path is not None
    document = json.loads(path.read_text())
    assert trace_problems(document) == []
    events = document["traceEvents"]
    assert any(e["ph"] == "X" and e["tid"] == HELD for e in events)
    assert any(e["name"] == "EventPump._tick" for e in events)  # the scheduler's callbacks
    assert any(e["ph"] == "s" for e in events)  # arrows from tokens to the ticks
    assert not any(e["ph"] == "X" and e["tid"] == LONG for e in events) or recorded.culprits


def test_the_lesson_panel_offers_to_save_the_trace_in_both_languages(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None and panel.trace_button is not None
    pump_for(root, 0.2)
    assert panel.trace_button.cget("text") == "Save trace…" and panel.trace_button.winfo_ismapped()
    app.toggle_language()
    assert panel.trace_button.cget("text") == "保存追踪…"


def test_the_chat_only_view_does_not_sample_unless_asked(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    pump_until(root, lambda: app.witness.sampler.running, what="the sampler")
    app.appearance.set_chat_only(True, save=False)
    pump_until(root, lambda: not app.witness.sampler.running, timeout=5, what="it to stop")
    app.witness.environ["TKCHAT_SAMPLER"] = "1"
    pump_until(root, lambda: app.witness.sampler.running, timeout=5, what="it to start")
