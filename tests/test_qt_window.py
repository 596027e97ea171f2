"""The Qt client (``tkchat --toolkit qt``) on a real X display: the same events as the Tk
window, streamed exactly (one append per tick, the model stepped by the test), stopped for
real, failing clearly, measured the same way, reported to the self-test in order — in-process,
and from a real ``tkchat serve``.

The Qt window runs in this process's GUI thread (the test's own thread), on Xvfb through Qt's
X11 platform ("xcb": the "offscreen" one takes no real input). A test fails if a slot raised.
"""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import free_port, get_json, wait_until
from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.conversation import Sampling
from tkchat.events import Chunk, Done, Error
from tkchat.generate.backend import Backend
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, scripted_tokens

QtWidgets = pytest.importorskip(
    "PySide6.QtWidgets", reason="the Qt client needs PySide6: pip install -e '.[qt]'"
)

from PySide6.QtCore import QObject  # noqa: E402 - after the skip above

from tkchat.qt.consume import AppendPerSignal, TimerDrain  # noqa: E402
from tkchat.qt.launch import QtOptions, application, open_window  # noqa: E402
from tkchat.qt.window import ChatWindow  # noqa: E402

pytestmark = pytest.mark.gui


def test_the_installed_pyside6_does_not_release_none_too_often() -> None:
    """PySide6 6.12.0 on Python 3.10/3.11 drops a reference to None on every call of a method
    that returns nothing, and the process aborts after a few thousand (pyproject.toml keeps
    it out). In a child process: that failure is an abort, not an exception."""
    code = (
        "from PySide6.QtCore import QObject\n"
        "o = QObject()\n"
        "for _ in range(100_000):\n"
        "    o.setObjectName('x')\n"
        "print('survived')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "survived" in result.stdout, result.stderr[-400:]


@pytest.fixture(scope="session")
def qapp(display: None) -> Any:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    return application()


def qt_until(ready: Callable[[], object], timeout: float = 20.0, what: str = "condition") -> None:
    """Run the Qt event loop (as ``exec`` would) until ``ready()``; fail after ``timeout``."""
    app = application()
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        app.processEvents()
        time.sleep(0.002)


@pytest.fixture
def make_window(qapp: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ChatWindow]]:
    """Open Qt windows on a backend and wait for their model; close them all at the end. The
    test fails if any slot raised (PySide6 reports it through ``sys.excepthook``)."""
    raised: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda kind, value, tb: raised.append(repr(value)))
    windows: list[ChatWindow] = []

    def build(backend: Backend, mode: str = "fixed", **options: Any) -> ChatWindow:
        options.setdefault("sampling", Sampling(max_tokens=4096))
        window = open_window(backend, QtOptions(mode=mode, geometry="800x600+0+0", **options))
        windows.append(window)
        qt_until(lambda: window.model_ready or window.last_error, what="the model to load")
        return window

    yield build
    for window in windows:
        window.close()
        assert not window.reader_thread.isRunning(), "the reader thread outlived its window"
    assert not raised, f"a slot raised: {raised}"


def ask(window: ChatWindow, question: str = "Why does the window stay smooth?") -> None:
    before = len(window.finished)
    assert window.send(question)
    qt_until(lambda: len(window.finished) > before, what="the answer to end")


# -- in-process: the same worker, channel and consumer as the Tk window ------------------------


def test_the_fixed_drain_appends_once_per_tick_whatever_arrived(qapp: Any) -> None:
    """:class:`TimerDrain`: the reader's batches are only collected; the first arms the 16 ms
    timer, and its firing hands everything since to the consumer: one tick, one append of
    all of it, in order. No timer while nothing arrives."""
    shown: list[TickResult] = []
    consumer = StreamConsumer()
    consumer.follow(7)
    parent = QObject()
    drain = TimerDrain(consumer, shown.append, parent)
    assert not drain.timer.isActive()
    drain.arrive([Chunk(7, 1, "one ")])
    drain.arrive([Chunk(7, 2, "two "), Chunk(7, 3, "three")])  # before the tick
    assert shown == [] and drain.timer.isActive()
    qt_until(lambda: shown, what="the tick")
    (tick,) = shown
    assert tick.chunks == ("one ", "two ", "three") and tick.text == "one two three"
    assert not drain.timer.isActive()  # idle again: no timer until the next batch


def test_the_broken_variant_appends_per_event() -> None:
    """:class:`AppendPerSignal`: each event straight to the widget, as it arrives."""
    shown: list[TickResult] = []
    consumer = StreamConsumer()
    consumer.follow(7)
    AppendPerSignal(consumer, shown.append, QObject()).arrive(
        [Chunk(7, 1, "one "), Chunk(7, 2, "two "), Chunk(7, 3, "three")]
    )
    assert [tick.text for tick in shown] == ["one ", "two ", "three"]


def first_text(backend: ScriptedBackend, pieces: int) -> str:
    """The text of the backend's first ``pieces`` pieces, as the worker sends it (a
    character whose bytes are not all in yet waits)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    return decoder.decode(b"".join(backend.pieces(pieces)))


@pytest.mark.parametrize("split_utf8", [False, True])
def test_fixed_streams_the_scripted_answer_exactly_one_append_per_tick(
    make_window: Callable[..., ChatWindow], split_utf8: bool
) -> None:
    """The window as a whole, its model stepped: while the window reads nothing, what the
    model gives merges into the chunk still waiting (the reader holds one batch at a time:
    what it found at once), so 61 tokens come in at most three chunks and two batches, and
    at most two appends; every tick that brought text made one append; the answer is exactly
    the script (characters split across tokens too)."""
    gate = TokenGate()
    backend = ScriptedBackend(gate=gate, split_utf8=split_utf8)
    window = make_window(backend)
    assert "tkchat (Qt)" in window.windowTitle() and "BROKEN" not in window.windowTitle()
    ticks: list[int] = []  # chunks of each tick that brought text
    show = window.consumption.show

    def counted(tick: TickResult) -> None:
        if tick.chunks:
            ticks.append(len(tick.chunks))
        show(tick)

    window.consumption.show = counted  # type: ignore[attr-defined]
    assert window.send("Why does the window stay smooth?")
    worker = window.controller.current
    assert worker is not None
    gate.release(61)  # the window's thread is here, not reading
    wait_until(lambda: worker.sender.pieces == 61, what="the worker to send 61 tokens")
    assert worker.sender.chunks <= 3  # (the first, one the reader drained with it, the rest)
    shown = first_text(backend, 61)
    qt_until(lambda: window.transcript.answers[0].text == shown, what="them on screen")
    assert window.transcript.updates == len(ticks) <= 2
    gate.release(1_000_000)
    qt_until(lambda: window.finished, what="the answer to end")
    final = window.finished[0]
    assert isinstance(final, Done) and final.reason == "stop"
    assert window.transcript.answers[0].text == SCRIPT
    assert SCRIPT in window.transcript.view.toPlainText()  # on screen too, not just kept
    assert window.transcript.updates == len(ticks)  # one insert per tick that brought text
    assert sum(ticks) == worker.sender.chunks
    assert window.status.text().startswith(f"Done — {final.stats.tokens} tokens")


def test_broken_variant_appends_once_per_token_and_says_so(
    make_window: Callable[..., ChatWindow],
) -> None:
    window = make_window(ScriptedBackend(rate=0), mode="no-coalesce")
    assert "BROKEN" in window.windowTitle()
    ask(window)
    final = window.finished[0]
    assert isinstance(final, Done)
    assert window.transcript.answers[0].text == SCRIPT  # still correct, just costly
    assert window.transcript.updates == final.stats.tokens  # the mistake: one per token


def test_the_window_speaks_chinese_too(make_window: Callable[..., ChatWindow]) -> None:
    window = make_window(ScriptedBackend(rate=0, fail_at=5), mode="no-coalesce", language="zh")
    assert window.windowTitle().startswith("tkchat（Qt）—— scripted —— 故障模式")
    assert window.send_button.text() == "发送" and window.health.ping_button.text() == "点我"
    ask(window)
    assert window.status.text().startswith("出错：")


def test_stop_stops_the_worker_and_nothing_of_it_shows_later(
    make_window: Callable[..., ChatWindow],
) -> None:
    """Stop: the worker, waiting at its 21st token, leaves the model loop; what it sent
    after — its text still on the way, its final event — reaches the window and is dropped
    (the consumer counts it stale), and the next question starts at once."""
    gate = TokenGate()
    window = make_window(ScriptedBackend(gate=gate, tokens=100_000))
    assert window.send("Go on for ever.")
    gate.release(20)
    qt_until(lambda: len(window.transcript.answers[0].text) > 40, what="text to stream")
    worker = window.controller.current
    assert worker is not None
    stale = window.consumer.counts().stale_dropped
    window.stop_button.click()
    assert worker.join(10), "the worker did not leave the model loop"
    assert worker.cancelled_at is not None and worker.exited_at is not None
    assert gate.passed <= 20  # it stopped at the gate: no token after Stop
    shown = window.transcript.answers[0].text
    # Its last event (the cancelled final) arrived and was dropped: nothing more can come.
    qt_until(lambda: window.consumer.counts().stale_dropped > stale, what="its final event")
    assert window.transcript.answers[0].text == shown
    assert window.transcript.view.toPlainText().endswith("[stopped]")
    assert window.send_button.isEnabled() and not window.stop_button.isEnabled()
    assert window.send("And now?")  # the next question starts at once
    gate.release(20)
    qt_until(lambda: len(window.transcript.answers[1].text) > 40, what="the next answer")
    assert window.transcript.answers[0].text == shown
    window.stop()


def test_a_crash_mid_answer_gives_one_clear_message_and_a_usable_window(
    make_window: Callable[..., ChatWindow],
) -> None:
    window = make_window(ScriptedBackend(rate=0, fail_at=20))
    ask(window)
    assert [type(final) for final in window.finished] == [Error]
    assert window.last_error is not None and "crashed at token 20" in window.last_error
    assert window.status.text() == f"Error: {window.last_error}"
    assert window.transcript.view.toPlainText().count(window.last_error) == 1
    assert SCRIPT.startswith(window.transcript.answers[0].text)
    assert window.send_button.isEnabled()
    ask(window, "Again?")  # usable: the next answer runs (and crashes the same way)
    assert len(window.finished) == 2


def test_a_model_that_cannot_load_is_said_and_send_stays_off(
    make_window: Callable[..., ChatWindow], tmp_path: Any
) -> None:
    from tkchat.generate.factory import LlamaOptions, make_backend

    missing = tmp_path / "no-such-model.gguf"
    window = make_window(make_backend(LlamaOptions(str(missing))))
    assert not window.model_ready and window.last_error
    assert str(missing) in window.last_error
    assert window.status.text() == f"Error: {window.last_error}"
    assert not window.send_button.isEnabled() and not window.send("Hello?")


def test_without_llama_cpp_the_qt_window_says_what_the_model_needs_in_its_language(
    make_window: Callable[..., ChatWindow], monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama-cpp-python not importable: the one sentence (tests/test_without_llama_cpp.py),
    in the window's language, not a traceback."""
    from tkchat.generate.factory import LlamaOptions, make_backend
    from tkchat.i18n import strings

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # an import of it fails
    window = make_window(make_backend(LlamaOptions(None)), language="zh")
    assert window.last_error == strings("zh")("app.engine_missing")
    assert not window.send_button.isEnabled()


def test_the_lag_probe_fires_on_qts_loop_and_records_a_late_firing(
    qapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's Qt half: its timer fires on Qt's loop and re-arms; a firing 300 ms after
    it was due (by the clock the probe reads, here the test's) records 300 ms, a long task.
    (The arithmetic is ``tkchat.stats``': tests/test_stats.py.)"""
    from tkchat import stats
    from tkchat.qt.health import QtLagProbe

    clock = [1000.0]
    monkeypatch.setattr(stats, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    owner = QObject()  # (Qt deletes a timer with its owner: kept alive here)
    probe = QtLagProbe(owner)
    probe.start()  # due at 1000.005
    clock[0] = 1000.305  # the GUI thread held 300 ms past it
    qt_until(lambda: probe.recent, what="the probe's timer to fire")
    assert probe.recent[-1].lag_ms == pytest.approx(300.0) and probe.long_tasks == 1
    assert probe._timer.isActive()  # re-armed: due at 1000.310
    clock[0] = 1000.310
    qt_until(lambda: len(probe.recent) == 2, what="the next firing")
    assert probe.recent[-1].lag_ms == pytest.approx(0.0) and probe.max_ms() == pytest.approx(300)
    probe.stop()
    assert not probe._timer.isActive()


def test_the_health_bar_keeps_its_timers_and_shows_the_lag(
    make_window: Callable[..., ChatWindow],
) -> None:
    window = make_window(ScriptedBackend(rate=0))
    health = window.health
    assert health._beat_timer.isActive() and health.probe._timer.isActive()
    qt_until(lambda: "p99" in health.lag.text(), what="the bar's refresh")
    assert "max" in health.lag.text()


def test_rates_and_lag_are_the_tk_windows_own_definition() -> None:
    """One definition for both windows (tkchat.stats), not two copies that could drift: each
    probe adds only its toolkit's timer (and the Tk one its timeline's history)."""
    from tkchat import stats
    from tkchat.qt import health as qt_health
    from tkchat.ui import health as tk_health
    from tkchat.ui import lag_probe as tk_lag

    assert qt_health.RateMeter is tk_health.RateMeter is stats.RateMeter
    arithmetic = {"_fire", "now_ms", "p99_ms", "max_ms", "reset_peaks", "start", "stop"}
    for probe in (qt_health.QtLagProbe, tk_lag.LagProbe):
        assert issubclass(probe, stats.LagWindow)
        assert not arithmetic & set(vars(probe)), probe
    assert tk_lag.LONG_TASK_MS is stats.LONG_TASK_MS


# -- from a real `tkchat serve` on loopback -----------------------------------------------------


@pytest.fixture
def tkchat_serve() -> Iterator[str]:
    """``tkchat serve`` in its own process: the script, repeated up to 20,000 tokens, at 200
    tokens/s (long enough to stop mid-way)."""
    pytest.importorskip("uvicorn", reason="tkchat serve needs the serve extra")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tkchat", "serve", "--backend", "scripted", "--rate", "200"]
        + ["--tokens", "20000", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            error = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"tkchat serve exited: {error}")
        try:
            return bool(get_json(f"{url}/health", timeout=0.5))
        except OSError:
            return False

    try:
        wait_until(up, timeout=30, what="tkchat serve to answer /health", interval=0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_streams_from_tkchat_serve_and_stop_reaches_the_server(
    make_window: Callable[..., ChatWindow], tkchat_serve: str
) -> None:
    from tkchat.generate.remote import RemoteBackend

    script_tokens = len(scripted_tokens(SCRIPT))
    window = make_window(RemoteBackend(tkchat_serve), sampling=Sampling(max_tokens=script_tokens))
    assert window.model_ready, window.status.text()
    assert f"server scripted at {tkchat_serve.removeprefix('http://')}" in window.windowTitle()
    ask(window)
    final = window.finished[0]
    assert isinstance(final, Done) and final.reason == "length", final
    assert window.transcript.answers[0].text == SCRIPT

    # Stop closes the stream; the server sees the disconnect and cancels its worker.
    window.sampling = Sampling(max_tokens=20_000)
    assert window.send("Once more, at length.")
    qt_until(lambda: len(window.transcript.answers[1].text) > 40, what="the second answer")
    worker = window.controller.current
    assert worker is not None
    window.stop()
    assert worker.join(5.0)

    def cancels() -> list[dict[str, Any]]:
        return get_json(f"{tkchat_serve}/health").get("cancels") or []

    wait_until(lambda: bool(cancels()), timeout=5, what="the server to record the cancel")
    assert cancels()[-1]["tokens_after_disconnect"] <= 1


# -- the self-test's report of the Qt window --------------------------------------------------
# (Whether ``tkchat selftest --toolkit qt`` PASSes the fixed window and FAILs no-coalesce in a
# flood is a timing on the machine that runs it: the selftest bench's claim.)


def test_the_self_tests_report_never_sees_a_qt_answer_closed_without_its_error(
    make_window: Callable[..., ChatWindow],
) -> None:
    """Issue 35: "2. the model dies mid-answer: error shown ∞ ms" failed the Qt window's
    self-test on a loaded machine. The report (the Qt child's, the Tk one's) takes its turn as
    the final joins ``finished`` and after the answer ended: line by line, the grader never
    has the answer closed without its final, with its time and message."""
    from tests.test_selftest_grade import Lines, TickOnAppend
    from tkchat.generate.faults import FaultInjector
    from tkchat.lab.selftest.observe import Sources, WindowReport
    from tkchat.lab.selftest.protocol import WindowState
    from tkchat.lab.selftest.qt_child import QtLabWindow

    faults = FaultInjector(ScriptedBackend(rate=0))
    window = make_window(faults)
    lines = Lines()
    meter = SimpleNamespace(open={}, waits_at_death=None)
    report = WindowReport(QtLabWindow(window), meter, faults, Sources(), lines)  # type: ignore[arg-type]
    window.finished = TickOnAppend(report.tick)
    faults.arm(after_tokens=20)
    assert window.send("Write a long explanation.")
    report.tick()  # the answer open
    qt_until(lambda: window.answer is None, what="the answer to end")
    report.tick()
    state = WindowState()
    for line in lines.lines:
        state.take(line)
        if state.opened and not state.answer_open:
            assert state.finals, f"the answer closed before its final: {lines.lines}"
    (final,) = state.finals
    assert final["end"] == "error" and "stopped responding" in str(final["message"])
    assert isinstance(final["t"], float) and state.died and final["t"] >= state.died[0]


# -- a hostile server's one long line -----------------------------------------------------------


def test_a_long_line_is_displayed_with_line_ends_and_kept_exactly(
    make_window: Callable[..., ChatWindow],
) -> None:
    """600 KB in one line, streamed from a server: Qt lays a paragraph out as a whole, so the
    transcript shows it with line ends added (the Tk transcript's soft breaks) — no shown
    line over ``DISPLAY_LINE_CHARS`` — and the answer keeps what arrived, as does a copied
    selection. (How long the window then stays late, against Qt laying out the line
    unbroken, is the hostile bench's claim.)"""
    from tests.test_hostile_servers import LONG_LINE, one_long_line, tkchat_server
    from tkchat.generate.remote import RemoteBackend
    from tkchat.limits import DISPLAY_LINE_CHARS

    with tkchat_server(one_long_line) as server:
        window = make_window(RemoteBackend(server.url))
        ask(window, "one long line, please")
    assert isinstance(window.finished[-1], Done)
    assert window.transcript.answers[-1].text == LONG_LINE  # what the history keeps
    shown = window.transcript.view.toPlainText()
    assert max(map(len, shown.split("\n"))) <= DISPLAY_LINE_CHARS
    assert shown.replace("\n", "").endswith(LONG_LINE)
    # a selection copies what arrived, not the line ends the view added
    window.transcript.view.selectAll()
    window.transcript.view.copy()
    copied = application().clipboard().text()
    assert copied.endswith(f"Assistant: {LONG_LINE}"), copied[-80:]
