"""A small Qt chat window on tkchat's pipeline: the article's PyQt client, done right.

How an answer travels (compare the Tk window's ``ui/pump.py``)::

    Send ─► GenerationController.start() ─► GenerationWorker thread ─► EventChannel (queue)
                                                                          │
    reader QThread: channel.get() ─► emit arrived(batch) ── queued ──┐    │ (waits here)
                                                                     ▼
    GUI thread: slot ─► consumption.arrive(batch) ─► 16 ms QTimer ─► StreamConsumer
                                                                   ─► one insert per tick

The worker, the channel and the consumer are the Tk window's own objects: the same events,
the same guarantees (stale generations dropped, order restored, exactly one final event). Only
the last hop is Qt's. Everything in this module runs on the GUI thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QMimeData, Qt, QTimer, Slot
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from tkchat.consume.stream_consumer import TRANSPORT_GAP, StreamConsumer, TickResult
from tkchat.conversation import DEFAULT_SYSTEM_PROMPT, Message, Sampling
from tkchat.events import AppEvent, Done, Error, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.i18n import STRINGS
from tkchat.i18n import qt_window as qt_strings
from tkchat.qt.consume import make_consumption
from tkchat.qt.health import HealthBar, QtLagProbe
from tkchat.qt.reader import start_reader, stop_reader
from tkchat.render.soft_breaks import LineState, soft_break, unbreak
from tkchat.threads import WORKER_NICE, favour_the_gui_thread


class Translate:
    """``t(key, **values)``: the Qt client's own strings first, then the Tk window's."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self._strings = {**STRINGS[lang], **qt_strings.STRINGS[lang]}

    def __call__(self, key: str, **values: object) -> str:
        return self._strings[key].format(**values)


@dataclass
class Answer:
    """One answer of the transcript, and all its text so far (what the tests compare)."""

    number: int
    text: str = ""


class TranscriptView(QPlainTextEdit):
    """The transcript's widget: copying a selection gives the text as it arrived, without the
    soft line ends the view shows (GUI thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.original = ""  # everything written, as it was given (see Transcript._write)

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 - Qt's name
        data = QMimeData()
        data.setText(unbreak(self.textCursor().selection().toPlainText(), self.original))
        return data


class Transcript:
    """A read-only ``QPlainTextEdit`` that only ever grows at its end.

    Qt lays a paragraph out as a whole, as Tk does a logical line: one line of 600 KB from a
    server froze the window 11-13 s. So, as in the Tk transcript, what is *shown* gets a line
    end after at most :data:`~tkchat.limits.DISPLAY_LINE_CHARS` characters
    (:func:`~tkchat.render.soft_breaks.soft_break`); an :class:`Answer`'s ``text`` (what the
    conversation sent back to the model keeps) is exactly what arrived, and so is what a copied
    selection holds (:class:`TranscriptView`)."""

    def __init__(self, t: Translate) -> None:
        self.t = t
        self.view = TranscriptView()
        self.view.setReadOnly(True)
        self.answers: list[Answer] = []
        self.updates = 0  # inserts of answer text: the window's "updates/s"
        self.column: LineState | int = 0  # the last line shown: where soft breaks fall

    def _write(self, text: str) -> None:
        """Insert at the end through a cursor of our own: a click into the text moves the
        widget's cursor, never where answers grow. The view follows only if it was at the
        bottom (someone scrolling up to read stays where they are)."""
        shown, self.column = soft_break(text, self.column)
        self.view.original += text
        bar = self.view.verticalScrollBar()
        following = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(shown)
        if following:
            bar.setValue(bar.maximum())

    def question(self, text: str) -> Answer:
        """The question, then the heading of a new, empty answer."""
        lead = "\n\n" if self.answers else ""
        you, assistant = self.t("transcript.you"), self.t("transcript.assistant")
        self._write(f"{lead}{you}: {text}\n\n{assistant}: ")
        self.answers.append(Answer(len(self.answers) + 1))
        return self.answers[-1]

    def append(self, answer: Answer, text: str) -> None:
        answer.text += text
        self._write(text)
        self.updates += 1

    def end(self, *, stopped: bool, error: str | None) -> None:
        if error is not None:
            self._write(f"\n⚠ {self.t('transcript.failed')}: {error}")
        elif stopped:
            self._write(" " + self.t("transcript.stopped"))


class ChatWindow(QMainWindow):
    """The Qt chat window. ``mode``: "fixed", or "no-coalesce" (BROKEN on purpose)."""

    def __init__(
        self,
        controller: GenerationController,
        *,
        mode: str = "fixed",
        sampling: Sampling | None = None,
        language: str = "en",
        autosend: str | None = None,
    ) -> None:
        super().__init__()
        self.controller = controller
        controller.worker_nice = WORKER_NICE  # the model yields a core to the GUI thread
        favour_the_gui_thread()  # its toolkit calls wait 1 ms for the GIL, not 5
        self.mode = mode
        self.sampling = sampling or Sampling()
        self.t = Translate(language)
        self.autosend = autosend
        self.consumer = StreamConsumer()
        self.consumption = make_consumption(mode, self.consumer, self._show, self)
        controller.channel.coalesce = self.consumption.coalesce
        self.messages: list[Message] = [Message("system", DEFAULT_SYSTEM_PROMPT)]
        self.answer: Answer | None = None
        # Plain attributes for the tests and the self-test (read from its driver thread).
        self.model_ready = False
        self.finished: list[Done | Error] = []
        self.last_error: str | None = None
        self.final_handled_at: float | None = None
        self.closed = False
        self._build()
        self.reader, self.reader_thread = start_reader(controller.channel, self)
        # Emitted on the reader's thread, received here: Qt queues the call for the GUI thread.
        self.reader.arrived.connect(self._arrived, Qt.ConnectionType.QueuedConnection)
        self.health.start()
        self._say("app.loading", name=controller.backend.name)

    # -- building ------------------------------------------------------------------------------

    @property
    def probe(self) -> QtLagProbe:
        """The lag probe (the self-test records it for the whole run)."""
        return self.health.probe

    def _build(self) -> None:
        t = self.t
        self.health = HealthBar(t, self._tokens_so_far, lambda: self.transcript.updates)
        self.transcript = Transcript(t)
        self.input = QLineEdit()
        self.input.setPlaceholderText(t("qt.placeholder"))
        self.input.returnPressed.connect(self.send)
        self.send_button = QPushButton(t("button.send"))
        self.stop_button = QPushButton(t("button.stop"))
        for button in (self.send_button, self.stop_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # typing stays in the input box
        self.send_button.clicked.connect(lambda: self.send())
        self.stop_button.clicked.connect(self.stop)
        self.send_button.setEnabled(False)
        self.stop_button.setEnabled(False)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.stop)
        self.status = QLabel()
        column = QVBoxLayout()
        if self.consumption.broken:
            warning = QLabel(t("warning.broken", mode=self.mode, summary=t(f"qt.mode.{self.mode}")))
            warning.setWordWrap(True)
            warning.setStyleSheet("background: #b3261e; color: white; padding: 4px;")
            column.addWidget(warning)
        column.addWidget(self.health)
        column.addWidget(self.transcript.view, 1)
        row = QHBoxLayout()
        row.addWidget(self.input, 1)
        row.addWidget(self.send_button)
        row.addWidget(self.stop_button)
        column.addLayout(row)
        column.addWidget(self.status)
        body = QWidget()
        body.setLayout(column)
        self.setCentralWidget(body)
        self._set_title()
        self.input.setFocus()

    def _set_title(self) -> None:
        broken = self.t("app.title.broken", mode=self.mode) if self.consumption.broken else ""
        self.setWindowTitle(self.t("qt.title", name=self.controller.backend.name, broken=broken))

    def _say(self, key: str, **values: object) -> None:
        self.status.setText(self.t(key, **values))

    # -- sending and stopping --------------------------------------------------------------------

    def send(self, text: str | None = None) -> bool:
        """Ask ``text`` (default: the input box). False, and nothing changes, when there is
        nothing to ask, no model yet, or an answer is still streaming."""
        question = (self.input.text() if text is None else text).strip()
        if not question or not self.model_ready or self.answer is not None:
            return False
        self.input.clear()
        self.messages.append(Message("user", question))
        self.answer = self.transcript.question(question)
        request = GenerationRequest(tuple(self.messages), self.sampling)
        self.consumer.follow(self.controller.start(request))  # returns at once: a worker runs
        self.send_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        broken = self.consumption.broken
        self._say("app.generating_broken" if broken else "app.generating", mode=self.mode)
        return True

    @Slot()
    def stop(self) -> None:
        """Stop means the model stops: the worker is cancelled and leaves the model loop
        within one token. The partial answer stays, marked stopped; nothing of that
        generation can show up later."""
        worker = self.controller.stop()
        if self.answer is not None:
            self._end_answer(stopped=worker is not None, error=None)
            self._say("app.stopped")
        self.consumer.follow(-1)

    def _end_answer(self, *, stopped: bool, error: str | None) -> None:
        answer, self.answer = self.answer, None
        if answer is None:
            return
        self.transcript.end(stopped=stopped, error=error)
        self.messages.append(Message("assistant", answer.text))
        self.send_button.setEnabled(self.model_ready)
        self.stop_button.setEnabled(False)

    # -- events, on the GUI thread -----------------------------------------------------------------

    @Slot(object)
    def _arrived(self, batch: Sequence[AppEvent]) -> None:
        """The reader's queued signal: hand the batch on, then let the reader read again."""
        try:
            self.consumption.arrive(batch)
        finally:
            self.reader.taken()

    def _show(self, tick: TickResult) -> None:
        """One tick's result (the fixed drain's, or one event's in the broken mode)."""
        for event in tick.app_events:
            if isinstance(event, ModelReady):
                self._model_ready(event)
            elif isinstance(event, ModelFailed):
                self._model_failed(self.t(event.key) if event.key else event.message)
        if self.answer is not None and tick.chunks:
            self.transcript.append(self.answer, tick.text)  # one insert for the whole tick
        if tick.final is not None:
            self.handle_final(tick.final)

    def handle_final(self, final: Done | Error) -> None:
        """The answer's ``done`` or ``error``: end it, and say how it went. Its time and
        message are noted before it joins ``finished``, and it joins before the answer ends:
        the self-test's report, reading from its own thread, sees them in that order."""
        self.final_handled_at = time.perf_counter()
        if isinstance(final, Error):
            message = final.message
            if final.kind == TRANSPORT_GAP:
                self.controller.stop()  # the answer is over: its worker must not go on unseen
                message = self.t("app.transport_gap", seq=final.seq)
            self.last_error = message
            self.finished.append(final)
            self._end_answer(stopped=False, error=message)
            self._say("app.error", message=message)
            return
        self.finished.append(final)
        self._end_answer(stopped=final.reason == "cancelled", error=None)
        speed = final.stats.tokens_per_s
        self.status.setText(
            self.t("app.done", tokens=f"{final.stats.tokens:,}")
            + (self.t("app.done.speed", speed=f"{speed:.0f}") if speed else "")
            + (self.t("app.done.length") if final.reason == "length" else "")
        )

    def _model_ready(self, event: ModelReady) -> None:
        self.model_ready = True
        self.send_button.setEnabled(self.answer is None)
        self._say("app.ready", name=event.name, seconds=f"{event.load_s:.1f}", n_ctx=event.n_ctx)
        self._set_title()
        if self.autosend:
            prompt, self.autosend = self.autosend, None
            QTimer.singleShot(50, self, lambda: self.send(prompt))  # after this slot returns

    def _model_failed(self, message: str) -> None:
        self.model_ready = False
        self.send_button.setEnabled(False)
        self.last_error = message
        self._say("app.error", message=message)

    def _tokens_so_far(self) -> int:
        worker = self.controller.current
        return worker.tokens if worker is not None else 0

    # -- closing ---------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the model, the probe and the reader, and free the model: no thread left
        behind. Called once, when the window closes."""
        if self.closed:
            return
        self.closed = True
        self.stop()
        self.health.probe.stop()
        stop_reader(self.reader, self.reader_thread)
        self.controller.shutdown(timeout=2.0)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        self.shutdown()
        super().closeEvent(event)
