"""How an answer travels from the model to the screen.

:class:`Pipeline` is what the window calls when a question is sent, when a tick brings text,
and when the answer ends. :class:`FixedPipeline` is tkchat's way; the deliberately broken ways
live in ``tkchat/antipatterns/``, one module each, and implement the same three methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tkchat.generate.backend import GenerationRequest

if TYPE_CHECKING:
    from tkchat.ui.app import ChatApp
    from tkchat.ui.transcript import AnswerView


class Pipeline(Protocol):
    name: str
    broken: bool  # labelled "broken" in the window: it freezes it on purpose
    coalesce: bool  # may the sender merge chunks when the queue backs up?
    summary: str  # one line for the window and ``--help``

    def start(self, app: ChatApp, request: GenerationRequest) -> None:
        """Main thread, from the Send handler: begin generating ``app.answer``."""

    def show(self, app: ChatApp, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Main thread, from the 16 ms tick: put newly arrived text on screen."""

    def finish(self, app: ChatApp, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        """Main thread: the answer ended (done, stopped or error)."""


class EndsInTranscript:
    """Shared ending: mark the answer stopped or failed, then paint its markdown in slices."""

    def finish(self, app: ChatApp, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        app.transcript.finish(view, stopped=stopped, error=error)


class FixedPipeline(EndsInTranscript):
    """Worker thread → queue → one insert per 16 ms tick → markdown painted in slices."""

    name = "fixed"
    broken = False
    coalesce = True
    summary = "worker thread → queue → one insert every 16 ms; markdown painted in slices"

    def start(self, app: ChatApp, request: GenerationRequest) -> None:
        app.consumer.follow(app.controller.start(request))

    def show(self, app: ChatApp, view: AnswerView, chunks: tuple[str, ...]) -> None:
        app.transcript.append(view, "".join(chunks))  # everything of this tick, one insert
