"""The watchdog: a second process that draws the chat window's heartbeat, and so its freezes,
while they happen.

The watchdog runs as the app starts it (``python -m tkchat watchdog``) and, with ``--state``,
prints what its window shows as a JSON line per redraw. A reader thread in the test records
when each line arrived, so the test sees the watchdog's screen *during* a freeze of the test's
own main thread (the thread that sends the beats): a watchdog that only caught up afterwards
would have nothing to say while the freeze lasted. That freeze is held by the test until the
watchdog has been seen counting it up — not for a time: how long the gaps and silences are is
checked on :class:`HeartbeatTrace` and :class:`WatchdogWindow` with given times.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tkinter as tk
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import pump_until, wait_until, window_name
from tests.x_input import needs_xdotool, xdotool
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.watchdog import (
    FROZEN_AFTER_S,
    TITLE,
    HeartbeatTrace,
    WatchdogWindow,
    default_geometry,
)
from tkchat.lab.watchdog_place import SCREEN_SHARE, overlap, parse_geometry, placement
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching import watchdog_link
from tkchat.ui.teaching.watchdog_link import (
    HeartbeatSender,
    WatchdogHandle,
    open_watchdog,
    screen_geometry,
    watchdog_command,
)

REPO = Path(__file__).resolve().parent.parent


# -- the trace: what the chart shows, from beat times (no window) ----------------------------


def test_steady_beats_leave_no_gap_and_a_silence_opens_one_that_the_next_beat_closes() -> None:
    trace = HeartbeatTrace(span_s=15.0, frozen_after_s=0.25)
    assert trace.update(0.0) is None  # nothing to say before the first beat
    for n in range(20):
        trace.beat(n * 0.05)
        trace.update(n * 0.05 + 0.04)
    assert list(trace.gaps) == [] and trace.beats == 20
    assert trace.update(1.0) == pytest.approx(0.05)
    assert trace.open_gap is None
    assert trace.update(1.3) == pytest.approx(0.35)
    gap = trace.open_gap
    assert gap is not None and gap.start == pytest.approx(0.95)
    assert gap.length(2.0) == pytest.approx(1.05)  # it grows while the silence lasts
    trace.beat(2.2)
    assert trace.open_gap is None and gap.end == 2.2 and gap.length(99.0) == pytest.approx(1.25)
    trace.update(2.25)
    trace.update(30.0)  # silent since 2.2: a new gap, and the first one scrolled out
    assert [(g.start, g.end) for g in trace.gaps] == [(2.2, None)]
    assert all(when >= 15.0 for when, _silence in trace.samples)


def test_a_silence_that_fell_between_two_looks_is_still_a_gap() -> None:
    trace = HeartbeatTrace(frozen_after_s=0.25)
    trace.beat(1.0)
    trace.beat(1.6)  # the watchdog itself did not look in between
    assert [(g.start, g.end) for g in trace.gaps] == [(1.0, 1.6)]


# -- the process ---------------------------------------------------------------------------


class StateLines:
    """Test thread: every state line the watchdog prints, with when it arrived here."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            self.lines.append((time.monotonic(), json.loads(raw)))

    @property
    def latest(self) -> dict[str, Any]:
        return self.lines[-1][1] if self.lines else {}

    def between(self, start: float, end: float) -> list[dict[str, Any]]:
        return [state for at, state in self.lines if start < at < end]


@pytest.fixture
def leaving_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing a watchdog waits for it to leave by itself for as long as it takes here (the
    app gives it half a second before terminating it): whether it leaves at the end of its
    pipe is what is tested, not how soon a busy machine lets it."""
    monkeypatch.setattr(watchdog_link, "CLOSE_WAIT_S", 60.0)


@pytest.fixture
def watched(
    root: tk.Tk, leaving_by_itself: None
) -> Iterator[tuple[AfterScheduler, WatchdogHandle, StateLines]]:
    """A real watchdog process fed by beats from this test's Tk main thread."""
    scheduler = AfterScheduler(root)
    handle = open_watchdog(
        scheduler, command=[*watchdog_command(), "--state"], stdout=subprocess.PIPE
    )
    lines = StateLines(handle.process.stdout)
    yield scheduler, handle, lines
    handle.close()
    scheduler.close()
    if handle.process.poll() is None:
        handle.process.kill()
    handle.process.wait(5)


def alive(state: dict[str, Any]) -> bool:
    return str(state.get("counter", "")).startswith("alive") and not state["frozen"]


def test_the_watchdog_receives_beats_and_shows_the_window_alive(watched, root: tk.Tk) -> None:
    _scheduler, handle, lines = watched
    pump_until(
        root,
        lambda: lines.latest.get("beats", 0) >= 10 and alive(lines.latest),
        what="ten beats, and the window shown alive",
    )
    assert handle.sender.sent >= 10 and handle.sender.dropped == 0
    # (xdotool gives up on its search when a window it lists is gone before it reads it:
    # searched again until it answers)
    found: set[str] = set()
    wait_until(lambda: found.update(_watchdog_windows()) or found, what="the watchdog's window")
    names = {window_name(window).strip() for window in found}
    assert TITLE in names, names


def test_a_freeze_shows_in_the_watchdog_while_it_happens(watched, root: tk.Tk) -> None:
    """The main thread is stuck in a callback (no beat goes out) until a helper thread has
    read three state lines of the watchdog counting the freeze up: printed while the main
    thread was stuck, so the watchdog's loop drew the freeze as it happened."""
    scheduler, _handle, lines = watched
    pump_until(root, lambda: lines.latest.get("beats", 0) >= 10, what="the first beats")
    freeze: dict[str, float] = {}
    seen = threading.Event()

    def counting_up() -> list[dict[str, Any]]:
        frozen = [s for s in lines.between(freeze.get("start", math.inf), math.inf) if s["frozen"]]
        counters = [s["counter"] for s in frozen]
        return frozen if len(set(counters)) >= 3 else []

    def watch() -> None:  # helper thread: reads the watchdog's lines, touches no widget
        try:
            wait_until(lambda: "start" in freeze and counting_up(), timeout=120, what="FROZEN")
        finally:
            seen.set()

    def stuck() -> None:  # the app's main thread, stuck in a callback: no beat goes out
        freeze["start"] = time.monotonic()
        seen.wait(150)
        freeze["end"] = time.monotonic()

    helper = threading.Thread(target=watch, daemon=True)
    helper.start()
    scheduler.once("freeze", 0, stuck)
    pump_until(root, lambda: "end" in freeze, timeout=180, what="the freeze")
    helper.join(5)
    during = [s for s in lines.between(freeze["start"], freeze["end"]) if s["frozen"]]
    assert len({s["counter"] for s in during}) >= 3, "the watchdog did not count the freeze up"
    counters = [float(s["counter"].split()[1]) for s in during]
    assert all(s["counter"].startswith("FROZEN ") for s in during)
    assert counters == sorted(counters)  # counting up
    assert all(s["silence_ms"] >= FROZEN_AFTER_S * 1000 for s in during)
    # Afterwards the window is alive again and the gap stays on the chart, labelled.
    pump_until(
        root,
        lambda: bool(lines.latest.get("gaps_ms")) and alive(lines.latest),
        what="the gap recorded and the window shown alive",
    )
    state = lines.latest
    longest = max(state["gaps_ms"])  # from its last beat before to its first after
    assert longest >= max(s["silence_ms"] for s in during)
    shown = [float(m[1]) for x in state["gap_labels"] if (m := re.fullmatch(r"frozen (\S+) s", x))]
    assert any(abs(seconds - longest / 1000) <= 0.051 for seconds in shown), (state, longest)


def test_the_watchdog_exits_when_the_app_side_closes_it(watched, root: tk.Tk) -> None:
    _scheduler, handle, lines = watched
    pump_until(root, lambda: lines.latest.get("beats", 0) >= 3, what="beats")
    handle.close()
    # left by itself (exit code 0) within the wait close() gives it, or it would be terminated
    assert handle.process.poll() == 0, "the watchdog had to be terminated"
    assert not handle.alive


def test_the_app_carries_on_when_the_watchdog_is_gone(watched, root: tk.Tk) -> None:
    _scheduler, handle, lines = watched
    pump_until(root, lambda: lines.latest.get("beats", 0) >= 3, what="beats")
    handle.process.kill()
    handle.process.wait(5)
    pump_until(root, lambda: handle.sender.gone, what="the sender to notice")
    # It stopped: no beat is due any more, so nothing more is sent.
    assert not handle.sender.running and not handle.alive
    assert not handle.sender.scheduler.pending(HeartbeatSender.TIMER)
    sent = handle.sender.sent
    root.update()
    assert handle.sender.sent == sent
    assert handle.sender.beat() is False  # asking again is harmless


def test_sending_never_blocks_on_a_watchdog_that_does_not_read(root: tk.Tk) -> None:
    scheduler = AfterScheduler(root)
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    handle = open_watchdog(scheduler, command=sleeper)
    handle.sender.stop()  # beats by hand, far faster than the loop would

    def hung(_signum: int, _frame: object) -> None:
        raise AssertionError("a beat blocked on a full pipe")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        written = [handle.sender.beat() for _ in range(20_000)]  # ~600 kB into a 64 kB pipe
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        handle.close()
        scheduler.close()
    assert handle.sender.dropped > 0 and not all(written)
    assert handle.sender.sent > 100  # it did write until the pipe was full
    # It never reads its end-of-file, so close() terminated it.
    assert handle.process.wait(5) == -signal.SIGTERM


PARENT = textwrap.dedent(
    """
    import sys, tkinter as tk
    from tkchat.ui.scheduler import AfterScheduler
    from tkchat.ui.teaching.watchdog_link import open_watchdog, watchdog_command
    root = tk.Tk()
    # the watchdog prints what it shows to this process's stdout: the test reads it
    handle = open_watchdog(
        AfterScheduler(root), command=[*watchdog_command(), "--state"], stdout=sys.stdout
    )
    print(handle.process.pid, flush=True)
    root.mainloop()
    """
)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for whoever adopts it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _watchdog_windows() -> set[str]:
    """The visible X windows titled like the watchdog (xdotool)."""
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", "^tkchat watchdog"],
        capture_output=True,
        text=True,
    )
    return set(found.stdout.split())


def test_the_watchdog_exits_when_the_app_is_killed(display: None) -> None:
    watchdog_pid: int | None = None
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert parent.stdout is not None
        watchdog_pid = pid = int(parent.stdout.readline())
        lines = StateLines(parent.stdout)  # (read to the end: the watchdog never waits on it)
        wait_until(lambda: lines.latest.get("beats", 0) >= 1, timeout=60, what="a beat shown")
        assert _running(watchdog_pid)
        parent.kill()  # SIGKILL: the app gets no chance to close anything
        parent.wait(5)
        wait_until(lambda: not _running(pid), what="the watchdog to exit after the killed app")
    finally:
        if parent.poll() is None:
            parent.kill()
        if watchdog_pid is not None and _running(watchdog_pid):
            os.kill(watchdog_pid, signal.SIGKILL)


# -- the window, in this process -----------------------------------------------------------


def test_closing_the_watchdog_window_ends_it(root: tk.Tk) -> None:
    beats: list[float] = []
    window = WatchdogWindow(
        root,
        lambda: [beats.pop() for _ in range(len(beats))],
        lambda: False,
        clock=lambda: 100.0,  # its clock stands still: a beat at 100.0 is never late
    )
    window.start()
    beats.append(100.0)
    pump_until(root, lambda: window.shown_text(window.counter).startswith("alive"))
    root.tk.eval(root.protocol("WM_DELETE_WINDOW"))  # what the window manager's close does
    assert window.closed and not window.scheduler.pending("watchdog-tick")
    with pytest.raises(tk.TclError):
        root.winfo_exists()


def test_the_window_closes_itself_when_the_beats_end(root: tk.Tk) -> None:
    ended = {"now": False}
    window = WatchdogWindow(root, list, lambda: ended["now"])
    window.start()  # its first look: no beat yet, the beats not ended
    root.update()
    assert not window.closed
    assert window.shown_text(window.counter) == "waiting for the chat window…"
    ended["now"] = True
    pump_until(root, lambda: window.closed, what="the window to close")


def _texts_inside(window: WatchdogWindow) -> list[str]:
    """The canvas's texts, each checked to lie wholly inside it."""
    canvas, shown = window.canvas, []
    for item in canvas.find_all():
        if canvas.type(item) == "text":
            left, top, right, bottom = canvas.bbox(item)
            text = canvas.itemcget(item, "text")
            assert left >= 0 and right <= canvas.winfo_width(), text
            assert top >= 0 and bottom <= canvas.winfo_height(), text
            shown.append(text)
    return shown


def test_at_192_dpi_the_window_grows_with_its_text(root: tk.Tk, scaled) -> None:
    """Seen by hand on an Xvfb at 192 dpi: the window stayed 720×400 pixels while its text,
    sized in points, doubled — "waiting for the c" and the caption cut in half. It grows with
    the density, up to its share of the screen, and its text fits whatever it gets."""
    scaled(192 / 72)
    window = WatchdogWindow(root, list, lambda: False)
    root.geometry(default_geometry(root))
    window.start()
    root.update()  # laid out at that size
    canvas = window.canvas
    share_w, share_h = (
        int(SCREEN_SHARE * side) for side in (root.winfo_screenwidth(), root.winfo_screenheight())
    )
    assert canvas.winfo_width() >= min(2 * 700, share_w - 2)
    assert canvas.winfo_height() >= min(2 * 380, share_h - 2)
    assert window.counter in canvas.find_all() and _texts_inside(window)
    window.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_a_projector_its_smallest_text_stays_readable(root: tk.Tk, lang: str) -> None:
    """Seen at 1280×720 with the lesson panel: the watchdog got 576×211 pixels, and its axis
    and caption shrank to 8 px. They stay at 13 px or more, and still inside the window."""
    window = WatchdogWindow(root, list, lambda: False, language=lang)
    root.geometry("576x211")
    window.start()
    root.update()
    scaling = float(root.tk.call("tk", "scaling"))
    for font in (window.axis_font, window.label_font):
        assert font.actual("size") * scaling >= 12.9, font.actual("size")
    assert window.counter in window.canvas.find_all() and _texts_inside(window)
    window.close()


def test_a_freeze_that_began_before_the_chart_is_as_tall_at_its_edge_as_its_silence(
    root: tk.Tk,
) -> None:
    """Seen by hand: once a 6 s freeze began more than 15 s ago, its red triangle started at
    0 s on the chart's left edge, while the line of the silence there stood at 2.5 s. The red
    area's left side is as tall as the silence was at that edge."""
    clock = [100.0]
    window = WatchdogWindow(root, list, lambda: False, clock=lambda: clock[0])
    root.geometry("576x324")
    root.update()
    span = window.trace.span_s
    start, end = 100.0 - span - 3.0, 100.0 - span + 3.0  # 6 s, its first 3 s off the chart
    beats = [start - 0.05, start, *(end + 0.05 * n for n in range(int((100.0 - end) / 0.05)))]
    for at in beats:
        window.trace.beat(at)
        window.trace.update(at)
    window.draw(clock[0], window.trace.update(clock[0]))
    (gap,) = window.canvas.find_withtag("gap")
    xs, ys = window.canvas.coords(gap)[0::2], window.canvas.coords(gap)[1::2]
    bottom, left_edge = max(ys), min(xs)
    at_edge = min(y for x, y in zip(xs, ys, strict=True) if x == left_edge)
    assert (bottom - at_edge) / (bottom - min(ys)) == pytest.approx(3.0 / 6.0, abs=0.02)
    window.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_watchdog_speaks_the_chat_window_s_language(root: tk.Tk, lang: str) -> None:
    """``--lang zh``: all of it Chinese — title (which names the keys), counter, caption,
    axes, a freeze's label."""
    clock = [100.0]
    window = WatchdogWindow(root, list, lambda: False, clock=lambda: clock[0], language=lang)
    root.geometry("576x324")
    root.update()
    for at in (96.0, 96.05, 99.0, 99.05):  # beats, a 3 s silence, beats again
        window.trace.beat(at)
        window.trace.update(at)
    window.trace.update(clock[0])
    window.draw(clock[0], window.trace.update(clock[0]))
    window.canvas.itemconfigure(window.counter, text=window._counter_look(None)[0])
    shown = [root.title(), *_texts_inside(window)]
    # (the program's name and the keys' names, Esc and M, are Latin on every keyboard)
    latin = [t for t in shown if re.search(r"[A-Za-z]", re.sub(r"tkchat|\bEsc\b|\bM\b", "", t))]
    if lang == "zh":
        assert not latin, latin
        assert "现在" in shown and "正在等待聊天窗口…" in shown
        assert [text for text in shown if re.fullmatch(r"冻结了 \d\.\d 秒", text)]
    else:
        assert root.title() == TITLE and "now" in shown
        assert [text for text in shown if re.fullmatch(r"frozen \d\.\d s", text)]
    window.close()


def _class_must_see(app: Any) -> dict[str, tk.Misc]:
    """What the class watches in a freeze demo: the lesson, its picker and demo button, the
    chat's text (streaming while the window is frozen), the health bar (the heartbeat), the
    message box and Send row. Not the lag timeline: the frozen loop cannot redraw it, and the
    watchdog, its live stand-in, steps behind the window once the window answers again."""
    panel = app.teaching.lesson_panel
    assert panel is not None and panel.timeline is not None
    lesson = {f"lesson panel {part}": part for part in panel.winfo_children()}
    parts = {
        **{name: part for name, part in lesson.items() if part is not panel.timeline},
        "chat's text": app.transcript,
        "health bar": app.health,
        "message box": app.input,
        "Send": app.send_button,
        "Stop": app.stop_button,
    }
    return {name: widget for name, widget in parts.items() if widget.winfo_ismapped()}


def _on_screen(widget: tk.Misc) -> tuple[int, int, int, int]:
    return widget.winfo_width(), widget.winfo_height(), widget.winfo_rootx(), widget.winfo_rooty()


@pytest.mark.parametrize("projector", [True, False], ids=["projector", "plain"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_watchdog_covers_nothing_the_class_must_see(
    root: tk.Tk, teach_projector_window: Callable[..., Any], lang: str, projector: bool
) -> None:
    """The window ``tkchat --teach --projector`` (or ``--teach --lessons``) opens at 1280×720,
    in both languages, at 96 and at 192 dpi: the watchdog goes over the lag timeline, clear
    of the lesson (in projector mode it hid the lesson's lower half), the chat's text (over
    it, it hid the answer streaming in lessons 04, 05, 14 and 19), the health bar and the
    Send row."""
    from tests.test_projector import SCREEN_720P

    app = teach_projector_window(lang, projector=projector)
    root.geometry(SCREEN_720P)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
    root.update()
    must_see = _class_must_see(app)
    panel = app.teaching.lesson_panel
    assert "chat's text" in must_see and f"lesson panel {panel.body}" in must_see
    timeline = panel.timeline
    assert timeline.winfo_ismapped()  # the premise: both modes draw it at 1280×720
    room = parse_geometry(screen_geometry(timeline))
    window = parse_geometry(screen_geometry(root))
    for scale in (1.0, 2.0):
        place = placement(1280, 720, scale, room=room, window=window)
        width, height, x, y = place
        assert x >= 0 and y >= 0 and x + width <= 1280 and y + height <= 720
        assert width >= 0.5 * 576 and height >= 0.5 * 324  # large enough to read
        assert overlap(place, _on_screen(timeline))
        for name, widget in must_see.items():
            assert not overlap(place, _on_screen(widget)), (scale, name, place)
    app.close()


def test_a_screen_with_room_beside_the_window_gets_it_there() -> None:
    """A chat window that leaves a corner of the screen free: the watchdog goes there, over
    nothing of the window; without the window's word, the screen's bottom right, as before."""
    window = (1100, 700, 0, 0)
    place = placement(1920, 1080, room=(700, 300, 0, 300), window=window)
    assert place == (720, 400, 1920 - 720 - 16, 1080 - 400 - 16)
    assert not overlap(place, window)
    # a maximised window leaves no corner: over its room, as large as the room holds
    assert placement(1920, 1080, room=(700, 300, 0, 300), window=(1920, 1050, 0, 30)) == (
        700,
        300,
        0,
        300,
    )
    assert placement(1280, 720) == (576, 324, 1280 - 576 - 16, 720 - 324 - 16)
    # a room too small to read in: the corner
    assert placement(1280, 720, room=(200, 100, 0, 300), window=(1280, 720, 0, 0))[2:] == (688, 380)


# -- from the chat window ------------------------------------------------------------------


@needs_xdotool
def test_the_watchdog_a_demo_opens_keeps_clear_and_its_keys_move_and_close_it(
    root: tk.Tk, teach_projector_window: Callable[..., Any], leaving_by_itself: None
) -> None:
    """The real watchdog process, opened as a freeze demo opens it, in the window ``tkchat
    --teach --projector`` opens at 1280×720: on the X server its window covers nothing the
    class must see; M moves it to the other side of the screen; Esc closes it (and the demo
    opens it again)."""
    from tests.test_projector import SCREEN_720P

    app = teach_projector_window("en")
    root.geometry(SCREEN_720P)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
    root.update()
    handle = app.demos.open_watchdog()
    found: set[str] = set()
    wait_until(lambda: found.update(_watchdog_windows()) or found, what="the watchdog's window")
    (window,) = found
    place = _x_geometry(window)
    for name, widget in _class_must_see(app).items():
        assert not overlap(place, _on_screen(widget)), (name, place)
    xdotool("windowfocus", "--sync", window, "key", "m")
    wait_until(lambda: _x_geometry(window) != place, what="M to move the watchdog")
    width, height, x, y = _x_geometry(window)
    assert (width, height, y) == (place[0], place[1], place[3])
    assert x == root.winfo_screenwidth() - place[2] - width  # the other side
    xdotool("windowfocus", "--sync", window, "key", "Escape")
    wait_until(lambda: handle.process.poll() is not None, what="Esc to close the watchdog")
    assert handle.process.returncode == 0 and not handle.alive
    again = app.demos.open_watchdog()
    assert again is not handle and again.process.poll() is None
    app.close()


@pytest.mark.parametrize("steps_aside", [True, False], ids=["over the window", "in a corner"])
def test_over_the_window_it_is_in_front_only_while_the_window_is_frozen(
    root: tk.Tk, steps_aside: bool
) -> None:
    """(Given times.) Over the chat window, the watchdog opens in front, comes to the front
    when the beats stop and goes behind the window when they come back; in a free corner of
    the screen it stays in front throughout. (What the X server then shows: the next test.)"""
    clock, beats = [100.0], [100.0]
    window = WatchdogWindow(root, lambda: [beats.pop()] if beats else [], lambda: False)
    window.clock = lambda: clock[0]
    window.steps_aside = steps_aside
    seen = []
    for now, beat in ((100.1, True), (100.5, False), (101.0, False), (101.05, True)):
        clock[0] = now
        if beat:
            beats.append(now)
        window._tick()
        seen.append((window.trace.open_gap is not None, window.in_front))
    frozen = [False, True, True, False]
    in_front = [True, True, True, not steps_aside]  # behind the window, beating again
    assert seen == list(zip(frozen, in_front, strict=True))
    window.close()


@needs_xdotool
def test_after_a_freeze_the_watchdog_leaves_the_lag_timeline_to_show_it(
    root: tk.Tk,
    teach_projector_window: Callable[..., Any],
    leaving_by_itself: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real watchdog a freeze demo opens, at 1280×720 in projector mode, over the lag
    timeline: on the X server the timeline is hidden under it while the window is frozen
    (the watchdog's own word, read from a helper thread during the freeze), and is the
    window on top at that point once the window answers again (asked of the X server)."""
    from tests.test_projector import SCREEN_720P
    from tkchat.ui.teaching import demo_setup

    opened: list[StateLines] = []

    def with_state(scheduler: AfterScheduler, **place: Any) -> WatchdogHandle:
        command = [*watchdog_command(**place), "--state"]
        handle = open_watchdog(scheduler, command=command, stdout=subprocess.PIPE)
        opened.append(StateLines(handle.process.stdout))
        return handle

    monkeypatch.setattr(demo_setup, "open_watchdog", with_state)
    app = teach_projector_window("en")
    root.geometry(SCREEN_720P)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
    root.update()
    app.demos.open_watchdog()
    (lines,) = opened
    timeline = app.teaching.lesson_panel.timeline
    middle = (
        timeline.winfo_rootx() + timeline.winfo_width() // 2,
        timeline.winfo_rooty() + timeline.winfo_height() // 2,
    )
    pump_until(root, lambda: alive(lines.latest), what="the watchdog, beats arriving")
    pump_until(root, lambda: root.winfo_containing(*middle) is None, what="it, over the timeline")
    freeze: dict[str, float] = {}

    def stuck() -> None:  # the main thread, frozen until the watchdog says it is in front
        freeze["start"] = time.monotonic()
        since = freeze["start"]
        wait_until(
            lambda: any(s["frozen"] and s["in_front"] for s in lines.between(since, math.inf)),
            timeout=120,
            what="the watchdog in front of the frozen window",
        )
        freeze["end"] = time.monotonic()

    app.demos.scheduler.once("freeze", 0, stuck)
    pump_until(root, lambda: "end" in freeze, timeout=180, what="the freeze")
    pump_until(root, lambda: lines.latest.get("in_front") is False, what="the watchdog behind")
    pump_until(
        root,
        lambda: str(root.winfo_containing(*middle)).startswith(str(timeline)),
        what="the lag timeline on top again",
    )
    app.close()


def _x_geometry(window: str) -> tuple[int, int, int, int]:
    """Where the X server has ``window``: (width, height, x, y) (xdotool)."""
    shell = subprocess.run(
        ["xdotool", "getwindowgeometry", "--shell", window], capture_output=True, text=True
    ).stdout
    said = dict(line.split("=", 1) for line in shell.split())
    return int(said["WIDTH"]), int(said["HEIGHT"]), int(said["X"]), int(said["Y"])


def test_the_app_opens_one_watchdog_and_closes_it_with_itself(
    root: tk.Tk, make_app, leaving_by_itself: None
) -> None:
    app = make_app(ScriptedBackend(rate=50))
    handle = app.demos.open_watchdog()
    assert app.demos.open_watchdog() is handle  # once
    pump_until(root, lambda: handle.sender.sent >= 5, what="beats to the watchdog")
    assert handle.alive
    app.close()
    assert handle.process.poll() == 0


def test_a_demo_closing_the_watchdog_leaves_the_wait_for_it_to_a_thread_of_its_own(
    root: tk.Tk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walking the class: setting up a demo that closes the watchdog drew a long task of
    about 100 ms on the timeline ("WatchdogHandle.close"): the event loop waited for the
    process to leave. Closed with ``wait=False``, the loop goes on at once while the process
    is still there (this one ignores its end-of-file for a minute), and the reaper thread
    terminates it after CLOSE_WAIT_S."""
    monkeypatch.setattr(watchdog_link, "CLOSE_WAIT_S", 60.0)
    scheduler = AfterScheduler(root)
    stubborn = [sys.executable, "-c", "import sys, time; sys.stdin.read(); time.sleep(60)"]
    handle = open_watchdog(scheduler, command=stubborn)
    try:
        handle.close(wait=False)
        assert handle.process.poll() is None  # close() returned without waiting for it
        assert handle.reaper is not None and handle.reaper.name == "tkchat-watchdog-reaper"
        monkeypatch.setattr(watchdog_link, "CLOSE_WAIT_S", 0.0)  # (read by the next reap)
        again = open_watchdog(scheduler, command=stubborn)
        again.close(wait=False)
        assert again.reaper is not None
        again.reaper.join(30)
        assert again.process.wait(30) == -signal.SIGTERM  # terminated, not left behind
    finally:
        scheduler.close()
        for process in (handle.process,):
            process.kill()
            process.wait(5)
        if handle.reaper is not None:
            handle.reaper.join(30)
