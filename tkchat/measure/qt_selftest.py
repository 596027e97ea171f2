"""``tkchat selftest --toolkit qt``: the self-test's three questions, asked of the Qt window.

The same driver as the Tk window's (``selftest.py``): the same backend, the same prompt, the
same real X events from ``xdotool``, the same 100 ms limit. Only the window differs, and how
the handlers note when they ran: an event filter on the Qt widgets instead of Tk bindings.

Qt must draw on X11 for this (``QT_QPA_PLATFORM=xcb``): ``xdotool`` can click only X windows,
and Qt's "offscreen" platform receives no input at all.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QWidget

from tkchat.measure.display import ensure_display
from tkchat.measure.selftest import Driver, HandlerClock, Points, report, selftest_backend
from tkchat.qt.app import QtOptions, application, open_window


class InputRecorder(QObject):
    """GUI thread: notes when wheel events reach the transcript and X keys the input box,
    then lets them through. (The driver thread reads the lists.)"""

    def __init__(self, clock: HandlerClock) -> None:
        super().__init__()
        self.clock = clock

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Wheel:
            self.clock.scrolls.append(time.perf_counter())
        elif (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_X
        ):
            self.clock.keys.append(time.perf_counter())
        return False  # the widget still handles it


def _centre(widget: QWidget) -> tuple[int, int]:
    point: QPoint = widget.mapToGlobal(widget.rect().center())
    return point.x(), point.y()


def run_qt_selftest(
    mode: str, backend_kind: str, model: str | None, rate: float, tokens: int | None = None
) -> int:
    """Main thread (Qt's GUI thread). 0 when all three pass, 1 if not, 2 on a setup error."""
    if shutil.which("xdotool") is None:
        print("tkchat selftest needs xdotool (apt-get install xdotool)", file=sys.stderr)
        return 2
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    ensure_display()
    faults, sampling = selftest_backend(mode, backend_kind, model, rate, tokens)
    app = application()
    window = open_window(faults, QtOptions(mode=mode, sampling=sampling, geometry="900x700+0+0"))
    clock = HandlerClock()
    recorder = InputRecorder(clock)
    window.transcript.view.viewport().installEventFilter(recorder)
    window.input.installEventFilter(recorder)
    points = Points()
    published = threading.Event()

    def publish() -> None:
        """GUI thread: where things are on the screen, for the driver's clicks."""
        points.ping = _centre(window.health.ping_button)
        points.transcript = _centre(window.transcript.view.viewport())
        points.input = _centre(window.input)
        published.set()

    driver = Driver(window, faults, points, clock, published)
    watch = QTimer(window)
    watch.timeout.connect(lambda: window.close() if driver.finished.is_set() else None)
    watch.start(100)
    QTimer.singleShot(500, window, publish)
    threading.Thread(target=driver.run, name="tkchat-selftest-driver", daemon=True).start()
    app.exec()
    return report(driver, f"Qt window, mode {mode}", backend_kind, rate)
