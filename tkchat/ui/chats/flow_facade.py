"""The chat flow as the window presents it: its commands and what it keeps, on the window.

The window's buttons, menu and shortcuts, the tests, the bench and the selftest all speak to
the window (``app.send()``, ``app.finished``, ``app.model_ready``); :class:`FlowFacade` puts
those names on it and hands each to the window's :class:`~tkchat.ui.chats.flow.ChatFlow`, so
the window class itself only builds and wires, and the tools' Protocols
(:mod:`tkchat.lab.bench.script`) find what they read.

Main thread only.
"""

from __future__ import annotations

from tkchat.events import Done, Error
from tkchat.ui.chats.flow import ChatFlow
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.transcript.transcript import AnswerView


class FlowFacade:
    """Mixed into the window, which sets ``flow``."""

    flow: ChatFlow

    # -- the commands ----------------------------------------------------------------------------

    def send(self, text: str | None = None) -> bool:
        """Send the box's text (or ``text``): :meth:`ChatFlow.send`."""
        return self.flow.send(text)

    def stop(self) -> None:
        self.flow.stop()

    def regenerate(self) -> bool:
        return self.flow.regenerate()

    def new_chat(self) -> None:
        self.flow.new_chat()

    # -- what the flow keeps -------------------------------------------------------------------

    @property
    def answer(self) -> AnswerView | None:
        return self.flow.answering.answer

    @property
    def finished(self) -> list[Done | Error]:
        return self.flow.answering.finished

    @property
    def last_error(self) -> str | None:
        return self.flow.answering.last_error

    @property
    def final_handled_at(self) -> float | None:
        return self.flow.answering.final_handled_at

    @property
    def last_cancel_ms(self) -> float | None:
        return self.flow.answering.last_cancel_ms

    @property
    def model_ready(self) -> bool:
        return self.flow.model_ready

    @property
    def model_failed(self) -> bool:
        return self.flow.model_failed

    @property
    def showing_conversation(self) -> bool:
        return self.flow.showing_conversation

    @property
    def pipeline(self) -> Pipeline:
        return self.flow.answering.pipeline

    @pipeline.setter
    def pipeline(self, pipeline: Pipeline) -> None:  # the selftest times the one in use
        self.flow.answering.pipeline = pipeline
