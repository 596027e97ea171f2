"""The Qt window under test, started by the grader (:mod:`.runner`) for ``tkchat selftest
--toolkit qt`` as the Tk window is (:mod:`.child`: its setup on stdin).

The same questions as the Tk window's (the same driver, in the grader's process): only the
window differs, and how the handlers note when they ran — an event filter on the Qt widgets
instead of Tk bindings. Qt must draw on X11 for this (``QT_QPA_PLATFORM=xcb``): ``xdotool``
can click only X windows, and Qt's "offscreen" platform receives no input at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QWidget

from tkchat.events import Done, Error
from tkchat.lab.selftest.child import BEAT_MS, read_setup
from tkchat.lab.selftest.instruments import (
    CallTimer,
    GcClock,
    QueueProbe,
    SchedClock,
    TokenMeter,
    selftest_backend,
)
from tkchat.lab.selftest.observe import (
    ChildCommands,
    QuestionWitness,
    Sources,
    WindowReport,
    note_inputs,
    publish_points,
    report_fd,
)
from tkchat.qt.launch import QtOptions, application, open_window
from tkchat.qt.window import Answer, ChatWindow
from tkchat.stats import LagSample
from tkchat.ui.teaching.watchdog_link import HeartbeatSender


class InputRecorder(QObject):
    """GUI thread: notes when wheel events reach the transcript and X keys the input box,
    then lets them through."""

    def __init__(self, note: Callable[[str], None]) -> None:
        super().__init__()
        self.note = note

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Wheel:
            self.note("scroll")
        elif (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_X
        ):
            self.note("key")
        return False  # the widget still handles it


def _centre(widget: QWidget) -> tuple[int, int]:
    point: QPoint = widget.mapToGlobal(widget.rect().center())
    return point.x(), point.y()


class QtLabWindow:
    """The Qt ``ChatWindow`` as the lab sees it (:class:`~tkchat.lab.window.LabWindow`):
    its own attributes, the answers and Ping clicks of its parts, Qt's timers and events.
    It has no instruments: the bench measures the Tk window. GUI thread, but the observer's
    attributes, which the report reads from its own thread."""

    instruments = None

    def __init__(self, window: ChatWindow) -> None:
        self.window = window
        self.controller = window.controller
        self._recorders: list[InputRecorder] = []  # (Qt keeps no reference to a filter)

    @property
    def model_ready(self) -> bool:
        return self.window.model_ready

    @property
    def answers(self) -> Sequence[Answer]:
        return self.window.transcript.answers

    @property
    def answer(self) -> object | None:
        return self.window.answer

    @property
    def finished(self) -> Sequence[Done | Error]:
        return self.window.finished

    @property
    def last_error(self) -> str | None:
        return self.window.last_error

    @property
    def final_handled_at(self) -> float | None:
        return self.window.final_handled_at

    @property
    def ping_times(self) -> Sequence[float]:
        return self.window.health.ping_times

    @property
    def closed(self) -> bool:
        return self.window.closed

    def send(self, text: str | None = None) -> bool:
        return self.window.send(text)

    def stop(self) -> None:
        self.window.stop()

    def close(self) -> None:
        self.window.close()

    def later(self, name: str, ms: int, callback: Callable[[], object]) -> None:
        QTimer.singleShot(ms, self.window, callback)

    def points(self) -> dict[str, tuple[int, int]]:
        window = self.window
        if not window.isVisible():
            return {}
        return {
            "ping": _centre(window.health.ping_button),
            "transcript": _centre(window.transcript.view.viewport()),
            "input": _centre(window.input),
            "stop": _centre(window.stop_button),
        }

    def watch_inputs(self, note: Callable[[str], None]) -> None:
        recorder = InputRecorder(note)
        self._recorders.append(recorder)
        self.window.transcript.view.viewport().installEventFilter(recorder)
        self.window.input.installEventFilter(recorder)
        # connected after the window's own handler: runs once Stop has done its work
        self.window.stop_button.clicked.connect(lambda: note("stop"))

    def start_lag_recording(self) -> None:
        self.window.probe.start_recording()

    def stop_lag_recording(self) -> list[LagSample]:
        return self.window.probe.stop_recording()


def _time_the_appends(window: ChatWindow, timer: CallTimer) -> None:
    """The Qt window's consumption has no pipeline object: its inserts are what it does per
    tick (or per token, in the broken variant), timed as ``show`` so that a late input can be
    attributed as the Tk window's are."""
    append = window.transcript.append

    def timed(answer: Answer, text: str) -> None:
        timer.run("show", lambda: append(answer, text))

    window.transcript.append = timed  # type: ignore[method-assign]


def main() -> int:
    """The Qt window's process (Qt's GUI thread)."""
    args = read_setup(sys.stdin)
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    out = report_fd(args.report_fd)
    faults, sampling = selftest_backend(args.mode, args.backend, args.model, args.rate, args.tokens)
    commands = ChildCommands(TokenMeter(faults, out), faults, sampling)
    app = application()
    window = open_window(
        commands.meter,
        QtOptions(mode=args.mode, sampling=sampling, geometry="900x700+0+0", language=args.lang),
    )
    seen = QtLabWindow(window)
    probe = QueueProbe(lambda ms, then: seen.later("selftest-probe", ms, then))
    timer = CallTimer(SchedClock(), GcClock())
    _time_the_appends(window, timer)
    sources = Sources(calls=timer.calls, probe=probe.samples)
    commands.witness = QuestionWitness(None, probe.samples, out, toolkit="Qt")  # no sampler
    note_inputs(seen, sources)
    report = WindowReport(seen, commands.meter, faults, sources, out)
    sender = HeartbeatSender(None, args.beat_fd, BEAT_MS)

    def tick() -> None:
        if commands.closing.is_set():
            beats.stop()  # no beat after the last report (tkchat/lab/selftest/child.py)
            report.tick()  # the last of it
            seen.close()
            return
        sender.beat()
        publish_points(seen, sources)  # (every tick: the layout may still move)

    beats = QTimer(window)
    beats.timeout.connect(tick)
    beats.start(BEAT_MS)
    report.start(commands.closing)
    probe.start()  # the whole run; the grader takes the spans it needs
    commands.start(window.controller)
    app.exec()
    out.send("bye")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
