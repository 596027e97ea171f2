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

from tkchat.measure.grade import all_passed, report
from tkchat.measure.script import ensure_display
from tkchat.measure.selftest import (
    Driver,
    HandlerClock,
    Interrupter,
    Liveness,
    Points,
    TokenMeter,
    selftest_backend,
)
from tkchat.qt.launch import QtOptions, application, open_window
from tkchat.ui.window.translator import Translator


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
    mode: str,
    backend_kind: str,
    model: str | None,
    rate: float,
    *,
    language: str = "en",
    limit_s: float,
    tokens: int | None = None,
) -> int:
    """Main thread (Qt's GUI thread). 0 when all three pass, 1 if not, 2 on a setup error."""
    if shutil.which("xdotool") is None:
        print("tkchat selftest needs xdotool (apt-get install xdotool)", file=sys.stderr)
        return 2
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    ensure_display()
    faults, sampling = selftest_backend(mode, backend_kind, model, rate, tokens)
    meter = TokenMeter(faults)
    app = application()
    window = open_window(
        meter, QtOptions(mode=mode, sampling=sampling, geometry="900x700+0+0", language=language)
    )
    window.probe.recorded = []  # the whole run; the driver takes the spans it needs
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
        points.stop = _centre(window.stop_button)
        published.set()

    t = Translator(language)
    life = Liveness()
    driver = Driver(
        window,
        faults,
        meter,
        points,
        clock,
        published,
        sampling=sampling,
        life=life,
        # never installed: the Qt window's two modes do not hold its thread (the Tk window's
        # self-test interrupts pipelines of one's own, which the Qt client does not load)
        interrupter=Interrupter(limit_s),
        limit_s=limit_s,
        t=t,
    )

    def watch_tick() -> None:
        life.beat()
        if driver.finished.is_set():
            window.close()

    watch = QTimer(window)
    watch.timeout.connect(watch_tick)
    watch.start(100)
    QTimer.singleShot(500, window, publish)
    threading.Thread(target=driver.run, name="tkchat-selftest-driver", daemon=True).start()
    app.exec()
    if driver.error is not None:
        print(t("selftest.could_not_finish", error=driver.error), file=sys.stderr)
        return 2
    rate_text = t("selftest.rate", rate=f"{rate:g}") if backend_kind == "scripted" else ""
    header = [
        t("selftest.title", mode=f"Qt {mode}", backend=backend_kind, rate=rate_text),
        t("selftest.limit", seconds=f"{limit_s:g}"),
    ]
    checks = sorted(driver.checks, key=lambda check: check.key)
    complete = len(checks) == 3
    print("\n".join(report(t, header, checks, None, complete=complete)))
    return 0 if complete and all_passed(checks) else 1
