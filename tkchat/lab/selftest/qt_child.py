"""The Qt window under test: ``python -m tkchat.lab.selftest.qt_child …``, started by
the grader (:mod:`.runner`) for ``tkchat selftest --toolkit qt``.

The same questions as the Tk window's (the same driver, in the grader's process): only the
window differs, and how the handlers note when they ran — an event filter on the Qt widgets
instead of Tk bindings. Qt must draw on X11 for this (``QT_QPA_PLATFORM=xcb``): ``xdotool``
can click only X windows, and Qt's "offscreen" platform receives no input at all.
"""

from __future__ import annotations

import os
import time

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QWidget

from tkchat.lab.selftest.child import BEAT_MS, parse
from tkchat.lab.selftest.instruments import (
    CallTimer,
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
    report_fd,
)
from tkchat.qt.launch import QtOptions, application, open_window
from tkchat.qt.window import Answer, ChatWindow
from tkchat.ui.teaching.watchdog_link import HeartbeatSender


class InputRecorder(QObject):
    """GUI thread: notes when wheel events reach the transcript, X keys the input box and
    clicks the Stop button (after its own handler), then lets them through."""

    def __init__(self, window: ChatWindow, sources: Sources) -> None:
        super().__init__()
        self.window = window
        self.sources = sources

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        inputs = self.sources.inputs
        if event.type() == QEvent.Type.Wheel:
            inputs.setdefault("scroll", []).append(time.perf_counter())
        elif (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_X
        ):
            inputs.setdefault("key", []).append(time.perf_counter())
        return False  # the widget still handles it

    def stopped(self) -> None:
        """Connected after the window's own handler: runs once Stop has done its work."""
        answers = self.window.transcript.answers
        self.sources.stop_chars.append(len(answers[-1].text) if answers else 0)
        self.sources.inputs.setdefault("stop", []).append(time.perf_counter())


def _time_the_appends(window: ChatWindow, timer: CallTimer) -> None:
    """The Qt window's consumption has no pipeline object: its inserts are what it does per
    tick (or per token, in the broken variant), timed as ``show`` so that a late input can be
    attributed as the Tk window's are."""
    append = window.transcript.append

    def timed(answer: Answer, text: str) -> None:
        timer.run("show", lambda: append(answer, text))

    window.transcript.append = timed  # type: ignore[method-assign]


def _centre(widget: QWidget) -> tuple[int, int]:
    point: QPoint = widget.mapToGlobal(widget.rect().center())
    return point.x(), point.y()


def main(argv: list[str] | None = None) -> int:
    """The Qt window's process (Qt's GUI thread)."""
    args = parse(argv)
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    out = report_fd(args.report_fd)
    faults, sampling = selftest_backend(args.mode, args.backend, args.model, args.rate, args.tokens)
    commands = ChildCommands(TokenMeter(faults, out), faults, sampling)
    app = application()
    window = open_window(
        commands.meter,
        QtOptions(mode=args.mode, sampling=sampling, geometry="900x700+0+0", language=args.lang),
    )
    probe = QueueProbe(lambda ms, then: QTimer.singleShot(ms, window, then))
    timer = CallTimer(SchedClock())
    _time_the_appends(window, timer)
    sources = Sources(calls=timer.calls, probe=probe.samples)
    commands.witness = QuestionWitness(None, probe.samples, out, toolkit="Qt")  # no sampler
    recorder = InputRecorder(window, sources)
    window.transcript.view.viewport().installEventFilter(recorder)
    window.input.installEventFilter(recorder)
    window.stop_button.clicked.connect(recorder.stopped)
    report = WindowReport(window, commands.meter, faults, sources, out)
    sender = HeartbeatSender(None, args.beat_fd, BEAT_MS)

    def publish() -> None:
        """Where the driver's clicks go (again every tick: the layout may still move)."""
        sources.points.update(
            ping=_centre(window.health.ping_button),
            transcript=_centre(window.transcript.view.viewport()),
            input=_centre(window.input),
            stop=_centre(window.stop_button),
        )

    def tick() -> None:
        sender.beat()
        if window.isVisible():
            publish()
        if commands.closing.is_set():
            report.tick()  # the last of it
            window.close()

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
