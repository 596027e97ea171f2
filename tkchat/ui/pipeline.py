"""How an answer travels from the model to the screen.

:class:`Pipeline` is what the window calls when a question is sent, when a tick brings text,
and when the answer ends. :class:`FixedPipeline` is tkchat's way; the deliberately broken ways
live in ``tkchat/antipatterns/``, one module each, and implement the same three methods.

A pipeline sees only :class:`PipelineHost`: the few parts of the window it may use. It cannot
reach the rest of the app, so a pipeline (or a student's) can be read, tested and swapped
without the whole window in mind. A student's comes from a file of its own
(``--mode mine.py:Pipeline``): :mod:`tkchat.ui.teaching.outside` loads it and guards the window
from it, and :func:`tkchat.ui.window.pipeline_choice.make_pipeline` makes the one a mode names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import AnswerView, Transcript


@dataclass(frozen=True)
class PipelineHost:
    """What a pipeline may use of the window. Main thread only, like everything in it."""

    controller: GenerationController  # starts a worker (or lends the model to a broken demo)
    consumer: StreamConsumer  # which generation the 16 ms tick follows
    transcript: Transcript  # where the answer is written
    # Redraw the window now (``update_idletasks``): only the broken demos call it, to show
    # text while they keep the main thread from returning to the event loop.
    redraw: Callable[[], None]
    # End the answer with its final event, for a demo that reads the events itself instead
    # of letting the tick do it.
    end_answer: Callable[[Done | Error], None]
    # The window's named Tk timers: the asyncio-tk modes step their asyncio loop from one
    # (``tkchat/aio/tk_loop.py``); closing the window cancels it with the others.
    scheduler: AfterScheduler


class Pipeline(Protocol):
    name: str
    broken: bool  # labelled "broken" in the window: it freezes it on purpose
    coalesce: bool  # may the sender merge chunks when the queue backs up?

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread, from the Send handler: begin generating the answer shown in ``view``."""

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Main thread, from the 16 ms tick: put newly arrived text on screen."""

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        """Main thread: the answer ended (done, stopped or error)."""


class EndsInTranscript:
    """Shared start of every pipeline: keep the host; end by marking the answer stopped or
    failed, then painting its markdown in slices."""

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)


class FixedPipeline(EndsInTranscript):
    """Worker thread → queue → one insert per 16 ms tick → markdown painted in slices."""

    name = "fixed"
    broken = False
    coalesce = True

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))  # everything of this tick, one insert
