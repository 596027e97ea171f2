"""The pipeline view (tkchat/ui/stages/): what each lane shows for each mode, on a scripted
answer stepped one token and one tick at a time by the view's own controls, so no clock
decides anything; step back shows an earlier moment exactly; a pause freezes the drawing and
the tick, not the window (real X keys); every string in both languages.

The tick is held (paused) before the question is sent: every tick in these tests is one the
test ran with *One tick*, every token one it let through with *One token*.
"""

from __future__ import annotations

import tkinter as tk
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import layout_problems, pump_until
from tests.x_input import handled, keyboard_focus, laid_out, needs_xdotool, xdotool
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.scripted import ScriptedBackend, scripted_tokens
from tkchat.i18n import LANGUAGES, STRINGS
from tkchat.ui.stages.canvas import LANES, bar_fraction, lane_amounts, lane_texts
from tkchat.ui.stages.feed import Lanes
from tkchat.ui.stages.player import FLOOD_RATE
from tkchat.ui.stages.window import KEYS, StageWindow

pytestmark = pytest.mark.gui

TEXT = "One two three four five six seven eight nine ten eleven twelve."
TOKENS = scripted_tokens(TEXT)


def paused_view(make_app: Any, mode: str) -> tuple[Any, StageWindow]:
    """A window in ``mode`` on a scripted answer, its pipeline view open (F9's command) and
    paused: the tick held, the answer's tokens waiting at the view's gate."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    app.teaching.set_mode(mode)
    app.menubar.invoke("stages")
    view = app.stages.window
    assert isinstance(view, StageWindow)
    view.run("toggle")
    assert view.player.paused and app.pump.held
    return app, view


def tokens(root: tk.Tk, view: StageWindow, count: int) -> Lanes:
    """*One token*, ``count`` times, each shown once the worker has sent it."""
    for _ in range(count):
        moments = len(view.player.history)
        wanted = view.player.gate.passed + 1
        view.run("step_token")
        pump_until(
            root,
            lambda w=wanted, m=moments: (
                view.player.gate.passed >= w and len(view.player.history) > m
            ),
            what="the token stepped",
        )
    return view.player.shown()


def tick(view: StageWindow) -> Lanes:
    """*One tick*: the pump's tick, run once, and the moment it leaves."""
    view.run("step_tick")
    return view.player.shown()


def test_fixed_one_tick_carries_every_token_in_one_insert(root: tk.Tk, make_app) -> None:
    app, view = paused_view(make_app, "fixed")
    app.flow.send("q")
    before = tokens(root, view, 6)
    assert (before.worker, before.tokens, before.token) == (True, 6, TOKENS[5])
    assert (before.queued, before.waiting_pieces, before.merged) == (1, 6, 5)
    assert before.ticks == before.inserts == 0  # nothing on screen until a tick takes it
    after = tick(view)
    assert (after.queued, after.waiting_pieces) == (0, 0)
    assert (after.ticks, after.drained, after.tick_inserts, after.inserts) == (1, 1, 1, 1)
    assert after.chars == len("".join(TOKENS[:6])) == after.last_insert
    assert after.outside_inserts == 0 and after.redraws == 0 and after.renders == 0
    assert view.canvas.drawn == after
    assert view.canvas.figures("tick") == lane_texts(after, app.t)["tick"]
    assert "drained 1, inserts 1," in view.canvas.figures("tick")
    assert view.canvas.lit("tick") and not view.canvas.lit("main")
    updates = view.canvas.item_updates
    view.canvas.draw(after, before)  # the same moment again: no item is touched
    assert view.canvas.item_updates == updates
    tokens(root, view, 3)
    again = tick(view)
    assert (again.tokens, again.merged, again.ticks, again.inserts) == (9, 7, 2, 2)
    assert again.last_insert == len("".join(TOKENS[6:9]))


def test_no_coalesce_inserts_outnumber_ticks(root: tk.Tk, make_app) -> None:
    app, view = paused_view(make_app, "no-coalesce")
    app.flow.send("q")
    before = tokens(root, view, 6)
    assert (before.queued, before.waiting_pieces, before.merged) == (6, 0, 0)  # one event each
    after = tick(view)
    assert (after.ticks, after.drained, after.tick_inserts, after.inserts) == (1, 6, 6, 6)
    assert after.redraws == 6  # one forced redraw per token
    assert after.inserts > after.ticks
    assert "drained 6, inserts 6," in view.canvas.figures("tick")


def test_blocking_puts_the_work_on_the_main_thread_and_none_in_a_tick(
    root: tk.Tk, make_app
) -> None:
    app, view = paused_view(make_app, "blocking")
    # The handler iterates the model on the main thread: the view's gate lets it through
    # (nothing on that thread could release it), and the answer ends inside the click.
    app.flow.send("q")
    assert app.flow.answering.answer is None and app.flow.answering.finished
    lanes = tick(view)
    assert not lanes.worker
    assert lanes.tokens == lanes.outside_inserts == lanes.inserts == len(TOKENS)
    assert lanes.ticks == lanes.drained == lanes.tick_inserts == 0  # the tick lane is empty
    assert lanes.redraws == len(TOKENS)
    assert view.canvas.lit("main") and not view.canvas.lit("tick")
    assert f"never returned to the loop: {len(TOKENS)}" in view.canvas.figures("main")
    assert lanes.outside_spells == 1
    assert "the main thread made" in view.canvas.figures("worker")


def test_asyncio_tk_inserts_from_its_own_timer_and_the_loop_goes_on_between(
    root: tk.Tk, make_app
) -> None:
    """The asyncio loop Tk steps: a worker makes the tokens (the model is never on the main
    thread), the text comes on screen from the step timer, not the tick, in many runs with
    the loop going on between them; and the view follows it (a moment per new insert)."""
    app = make_app(ScriptedBackend(rate=200, text=TEXT))
    app.teaching.set_mode("asyncio-tk")
    app.menubar.invoke("stages")
    view = app.stages.window
    assert isinstance(view, StageWindow) and not view.player.paused
    app.flow.send("q")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    pump_until(
        root,
        lambda: view.player.shown().inserts == len(app.transcript.answers[-1].arrivals),
        what="the last moment",
    )
    drawn(root, view)
    lanes = view.player.shown()
    assert lanes.worker and lanes.tokens == len(TOKENS)
    assert lanes.token == TOKENS[-1]  # its latest text, though it skips the channel
    assert lanes.ticks == 0 and lanes.outside_inserts == lanes.inserts > 1
    assert lanes.outside_spells > 1
    assert "from a timer of its own" in view.canvas.figures("main")
    assert len(view.player.history) > 1  # it moved while the answer streamed


def answered_in_view(root: tk.Tk, make_app: Any, mode: str) -> StageWindow:
    """A whole answer in ``mode``, the view open and playing, until it shows text came."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    app.teaching.set_mode(mode)
    app.menubar.invoke("stages")
    view = app.stages.window
    assert isinstance(view, StageWindow)
    app.flow.send("q")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    pump_until(root, lambda: view.player.shown().inserts > 0, what="the moment it came")
    drawn(root, view)
    return view


def drawn(root: tk.Tk, view: StageWindow) -> None:
    """Until the latest moment is on the canvas: playing at full speed, the lanes are drawn
    at most every DRAW_MS (the stage-draw timer), a moment kept may wait for it."""
    pump_until(root, lambda: view.canvas.drawn == view.player.shown(), what="the moment drawn")


def test_asyncio_blocking_call_draws_the_model_on_the_main_thread(root: tk.Tk, make_app) -> None:
    """The broken coroutine iterates the model itself, on the loop Tk steps: no worker made
    the tokens, the main thread did, and the whole answer came in one step."""
    view = answered_in_view(root, make_app, "asyncio-blocking-call")
    lanes = view.player.shown()
    assert not lanes.worker and lanes.tokens == len(TOKENS)
    assert lanes.token == TOKENS[-1]
    assert "the main thread made" in view.canvas.figures("worker")


def test_asyncio_render_counts_its_whole_answer_renders(root: tk.Tk, make_app) -> None:
    """The coroutine renders the whole answer for every chunk, as per-chunk-render's tick
    does: the Tk lane counts those renders and the size of the last."""
    view = answered_in_view(root, make_app, "asyncio-render")
    lanes = view.player.shown()
    assert lanes.renders == lanes.outside_inserts == len(TOKENS)
    assert lanes.rendered == len(TEXT)
    assert "whole-answer renders" in view.canvas.figures("tk")


def test_per_chunk_render_the_render_bar_grows_with_the_answer(root: tk.Tk, make_app) -> None:
    app, view = paused_view(make_app, "per-chunk-render")
    app.flow.send("q")
    bars = []
    for count in range(1, 4):
        tokens(root, view, 1)
        lanes = tick(view)
        assert (lanes.renders, lanes.rendered) == (count, len("".join(TOKENS[:count])))
        bars.append(bar_fraction(lane_amounts(lanes)["tk"]))
    assert bars == sorted(bars) and bars[0] < bars[-1]


def test_playing_at_full_speed_the_lanes_are_redrawn_at_most_every_draw_ms(
    root: tk.Tk, make_app
) -> None:
    """Three moments in one turn of the loop: each is kept for step back, the first is drawn,
    and the latest is drawn when the ``stage-draw`` timer fires — not every one of them."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    view = app.stages.open()
    player = view.player
    assert not player.paused and player.speed == 1
    pump_until(root, lambda: not player.scheduler.pending("stage-draw"), what="a quiet view")
    kept, draws = len(player.history), view.draws
    for _ in range(3):
        player.feed.step()  # a moment of its own
        player.record()
    assert len(player.history) == kept + 3 and view.draws == draws + 1
    assert view.canvas.drawn == player.history[-3]
    pump_until(root, lambda: view.draws == draws + 2, what="the timer's draw")
    assert view.canvas.drawn == player.history[-1]
    player.feed.step()
    player.record()
    view.run("toggle")  # paused: the latest moment is drawn at once, and stays
    assert view.canvas.drawn == player.history[-1] and not player.scheduler.pending("stage-draw")


def test_step_back_shows_each_earlier_moment_exactly(root: tk.Tk, make_app) -> None:
    app, view = paused_view(make_app, "fixed")
    app.flow.send("q")
    for _ in range(3):
        tokens(root, view, 2)
        tick(view)
    kept = list(view.player.history)
    drawn_before = {lane: view.canvas.figures(lane) for lane in LANES}
    view.run("back")
    assert view.canvas.drawn == kept[-2] == view.player.shown()
    assert {lane: view.canvas.figures(lane) for lane in LANES} == lane_texts(kept[-2], app.t)
    view.run("back")
    assert view.canvas.drawn == kept[-3]
    view.run("forward")
    view.run("forward")
    assert view.canvas.drawn == kept[-1] and view.player.cursor is None
    assert {lane: view.canvas.figures(lane) for lane in LANES} == drawn_before
    assert list(view.player.history) == kept  # looking back recorded nothing


@needs_xdotool
def test_paused_the_drawing_stands_still_and_the_window_answers_keys(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    app.menubar.invoke("stages")
    view = app.stages.window
    keyboard_focus(root, view)
    xdotool("key", "space")  # pause, as a class would
    handled(root)
    assert view.player.paused and app.pump.held
    app.flow.send("q")
    draws, drawn = view.draws, view.canvas.drawn
    view.player.gate.release(5)  # the worker makes five tokens meanwhile
    pump_until(root, lambda: view.player.gate.arrived > 5, what="five tokens sent")
    keyboard_focus(root, app.input)
    xdotool("type", "--delay", "5", "still here")
    pump_until(root, lambda: "still here" in app.input.get("1.0", "end"), what="typed text")
    assert (view.draws, view.canvas.drawn) == (draws, drawn)  # frozen, the window not
    assert app.transcript.answers[-1].length == 0  # and no tick put the text on screen
    keyboard_focus(root, view)
    xdotool("key", "Right")  # one tick
    handled(root)
    lanes = view.player.shown()
    assert view.draws == draws + 1
    assert (lanes.ticks, lanes.tick_inserts, lanes.merged) == (1, 1, 4)


def test_closing_the_view_puts_the_tick_and_the_backend_back(root: tk.Tk, make_app) -> None:
    app, view = paused_view(make_app, "fixed")
    view.run("speed_50")
    assert app.pump.interval_ms == 16 * 50
    assert app.controller.backend.gate is view.player.gate
    app.flow.send("q")
    tokens(root, view, 2)
    view.destroy()
    assert not app.pump.held and app.pump.interval_ms == 16 and app.pump.watch is None
    assert app.controller.backend.gate is None
    pump_until(root, lambda: not app.flow.answering.answer, what="the answer to end by itself")
    assert app.transcript.answers[-1].text == TEXT


def test_every_string_of_the_view_in_both_languages(root: tk.Tk, make_app) -> None:
    keys = {key for key in STRINGS["en"] if key.startswith("stages.")}
    keys.add("menu.stages")
    for lang in LANGUAGES:
        assert keys <= set(STRINGS[lang]), keys - set(STRINGS[lang])
    for lane in LANES:
        assert f"stages.lane.{lane}" in keys and f"stages.thread.{lane}" in keys
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    view = app.stages.open()
    app.toggle_language()
    root.update()
    assert view.title() == STRINGS["zh"]["stages.title"]
    assert view.buttons["step_tick"].cget("text") == STRINGS["zh"]["stages.button.step_tick"]
    assert view.legend.cget("text") == STRINGS["zh"]["stages.keys"]
    for sequence in KEYS:  # every key the view binds is in its legend
        shown = {"<space>": "空格", "<Right>": "→", "<Down>": "↓", "<Left>": "←", "<Up>": "↑"}
        shown["<Escape>"] = "Esc"
        assert shown.get(sequence, sequence.removeprefix("<Key-").rstrip(">")) in view.legend.cget(
            "text"
        )


@pytest.mark.parametrize("whole_screen", [False, True])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_readable_at_1280x720_on_a_projector(
    root: tk.Tk, make_app, language: str, whole_screen: bool
) -> None:
    """At its own size (it opens over the chat, as large as the screen allows) and at the
    projector's whole screen, in both languages: the lanes' text large, every lane shown."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT), projector=True, language=language)
    view = app.stages.open()
    if whole_screen:
        view.geometry("1280x720+0+0")
    laid_out(view)
    assert app.fonts.size > 11 and view.canvas.font.actual("size") >= 14  # large, as it fits
    assert not layout_problems(view)
    bottom = view.canvas.bbox("all")[3]
    assert bottom <= view.canvas.winfo_height()  # every lane shows


@pytest.mark.parametrize("language", ["en", "zh"])
def test_no_control_is_squeezed_at_the_views_own_size(root: tk.Tk, make_app, language: str) -> None:
    """Seen at 1280x720 with projector text in Chinese: the strip of controls was wider than
    the view, and the last speed button shrank to a sliver. The view is as wide as its strip."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT), projector=True, language=language)
    view = app.stages.open()
    laid_out(view)
    for name, button in view.buttons.items():
        assert button.winfo_width() >= button.winfo_reqwidth(), name


def test_the_demo_of_a_lesson_that_shows_it_opens_the_view(root: tk.Tk, make_app) -> None:
    from tkchat.course.lessons import load_lessons

    shows = {lesson.id for lesson in load_lessons("en") if lesson.stages}
    assert shows == {
        "04-blocking",
        "06-heavy-per-chunk",
        "07-three-stages",
        "11-backpressure",
        "13-ordering",
    }
    assert shows == {lesson.id for lesson in load_lessons("zh") if lesson.stages}
    app = make_app(ScriptedBackend(rate=0, text=TEXT))
    flood = next(lesson for lesson in load_lessons("en") if lesson.id == "11-backpressure")
    app.demos.setup(flood)
    view = app.stages.window
    assert isinstance(view, StageWindow) and view.winfo_exists()
    view.run("toggle")  # paused: the demo's new backend has the view's gate
    assert app.controller.backend.gate is view.player.gate


def stacking(root: tk.Tk) -> list[str]:
    """The mapped toplevels, lowest first (as the X server stacks them)."""
    return list(root.tk.splitlist(root.tk.call("wm", "stackorder", str(root))))


@needs_xdotool
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_demo_opens_the_view_behind_the_chat_and_esc_puts_it_back_there(
    root: tk.Tk, make_app, language: str, tmp_path: Path
) -> None:
    """Seen at 1280x720 with projector text: the view a demo opened covered the whole chat,
    Send and the lesson included, and no key sent it away. The class watches the chat: the
    view opens behind it, the chat keeps the keys; F9 brings it; Esc in it, back again."""
    from tkchat.course.lessons import load_lessons

    # a window on a local model (one that failed: no load to wait for), as in a class: the
    # demo switches it to the scripted backend, whose "Ready — scripted …" comes after
    app = make_app(LlamaBackend(tmp_path / "none.gguf"), projector=True, language=language)
    flood = next(lesson for lesson in load_lessons(language) if lesson.id == "11-backpressure")
    app.demos.setup(flood)
    view = app.stages.window
    assert isinstance(view, StageWindow)
    laid_out(view)
    pump_until(root, lambda: len(stacking(root)) == 2, what="both windows mapped")
    assert stacking(root) == [str(view), str(root)]  # the chat on top
    assert str(root.focus_lastfor()) == str(app.input)
    # the demo's backend loads, and its "Ready — scripted …" does not hide the line's F9
    pump_until(root, lambda: app.flow.model_ready, what="the demo's backend")
    handled(root)
    assert "F9" in app.status.get(), app.status.get()
    app.menubar.invoke("stages")  # F9
    handled(root)
    assert stacking(root) == [str(root), str(view)]
    keyboard_focus(root, view)
    xdotool("key", "Escape")
    handled(root)
    assert stacking(root) == [str(view), str(root)] and view.winfo_exists()
    assert str(root.focus_lastfor()) == str(app.input)


def test_slow_motion_slows_the_tick_and_lets_a_ticks_worth_of_tokens_through(
    root: tk.Tk, make_app
) -> None:
    app, view = paused_view(make_app, "fixed")
    view.run("speed_10")
    assert app.pump.interval_ms == 160 and app.pump.held  # still paused: nothing released
    assert view.player.gate._allowed == 0
    view.run("toggle")  # play at 1/10
    assert not app.pump.held and view.timers.pending("stage-play")
    per_tick = round(FLOOD_RATE * 16 / 1000)  # a flood: what 16 ms bring at 5,000 tokens/s
    assert view.player.gate._allowed == per_tick
    pump_until(root, lambda: view.player.gate._allowed == 2 * per_tick, what="the next one")
    view.run("speed_1")
    assert app.pump.interval_ms == 16 and app.controller.backend.gate is None
    assert not view.timers.pending("stage-play")


def test_opening_the_view_forces_no_layout(root: tk.Tk, make_app, monkeypatch) -> None:
    """Opening the view forced the new window's whole layout (``update_idletasks``, to read
    the strip's width) inside the callback that opened it: one long task. Tk lays it out in
    its own idle passes, after that callback, and the view fits its strip then."""
    app = make_app(ScriptedBackend(rate=0, text=TEXT), projector=True, language="zh")
    forced: list[str] = []
    for name in ("update", "update_idletasks"):
        real = getattr(tk.Misc, name)

        def counted(widget: tk.Misc, real: Any = real, name: str = name) -> None:
            forced.append(f"{name} on {widget}")
            real(widget)

        monkeypatch.setattr(tk.Misc, name, counted)
    app.menubar.invoke("stages")  # F9
    view = app.stages.window
    assert isinstance(view, StageWindow)
    assert forced == [] and view.strip.winfo_width() == 1  # not placed yet: nothing laid out
    monkeypatch.undo()
    laid_out(view)
    assert view.winfo_width() >= view.strip.winfo_reqwidth()


@pytest.mark.parametrize("narrow_screen", [False, True])
def test_opened_narrower_than_its_strip_the_view_widens_to_it_within_the_screen(
    root: tk.Tk, make_app, monkeypatch, narrow_screen: bool
) -> None:
    """The view's own size narrower than its strip of controls (as with projector text in
    Chinese at 1280x720): it widens to the strip, no button squeezed; on a screen narrower
    than the strip, to the screen's width."""
    monkeypatch.setattr("tkchat.ui.stages.window.LARGE_WINDOW_SIZE", (600, 720))
    if narrow_screen:
        monkeypatch.setattr(StageWindow, "winfo_screenwidth", lambda _self: 800)
    app = make_app(ScriptedBackend(rate=0, text=TEXT), projector=True, language="zh")
    view = app.stages.open()
    own = int(view.geometry().split("x")[0])  # as opened, before Tk lays it out
    laid_out(view)
    strip, screen = view.strip.winfo_reqwidth(), view.winfo_screenwidth()
    assert own < strip and (strip > screen) == narrow_screen
    assert view.winfo_width() == min(strip, screen)
    if not narrow_screen:
        for name, button in view.buttons.items():
            assert button.winfo_width() >= button.winfo_reqwidth(), name
