"""Measurement scripts, and what the measuring tools read of the window they measure.

A script is a generator that yields what to wait for, resumed by the Tk loop: it yields a
number of seconds or a condition; the runner re-arms ``after`` to resume it, so the main loop
stays free while a script waits — a measurement must not be the thing that freezes the window
it measures. ``tkchat bench`` and the lesson demos are written this way; tests drive the same
scripts with their own pump (tests/conftest.py ``run_script``).

What the tools read of a window is named here once. The selftest (:mod:`tkchat.lab.selftest`)
reads :class:`MeasuredWindow`: plain attributes its main thread writes, never a widget, so the
Tk ``ChatApp`` and the Qt ``ChatWindow`` both satisfy it. The benchmark
(:mod:`tkchat.lab.bench.bench`, with :mod:`tkchat.lab.bench.prompt_bench`) drives the Tk window
further, through :class:`BenchWindow`: what it sends, stops and switches, and the figures it
reads (the painter's slices, the lag probe's recording, the saved conversations it opens).
Each Protocol lists only what a tool uses; ``ChatApp`` satisfies them as it is (mypy checks it
where a tool makes one), so the tools never reach into the rest of the window.

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable, Generator, Sequence
from typing import Protocol

from tkchat.events import Done, Error
from tkchat.generate.controller import GenerationController
from tkchat.stats import LagSample
from tkchat.ui.base.session import ChatSession
from tkchat.ui.chats.conversations import SavedConversations
from tkchat.ui.chats.history import History
from tkchat.ui.health import HealthBar
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.loop_witness import LoopWitness
from tkchat.ui.transcript.transcript import AnswerView

Wait = float | Callable[[], bool]
Script = Generator[Wait, None, None]


class ScriptRunner:
    """Drives a script from inside the Tk main loop; ends the loop (``quit``) when done."""

    def __init__(self, root: tk.Tk, script: Script) -> None:
        self.root = root
        self.script = script
        self.error: BaseException | None = None

    def start(self) -> None:
        self.root.after(0, self._step)

    def _step(self) -> None:
        try:
            wait = next(self.script)
        except StopIteration:
            self.root.quit()
            return
        except BaseException as exc:  # report after the loop ends, never lose it
            self.error = exc
            self.root.quit()
            return
        if callable(wait):
            self._poll(wait, time.monotonic() + 600)
        else:
            self.root.after(max(1, int(wait * 1000)), self._step)

    def _poll(self, ready: Callable[[], bool], deadline: float) -> None:
        if ready():
            self._step()
        elif time.monotonic() > deadline:
            self.error = TimeoutError("a benchmark step waited more than 10 minutes")
            self.root.quit()
        else:
            self.root.after(10, self._poll, ready, deadline)


# -- what the benchmark drives and reads (the Tk window) -------------------------------------


class Painter(Protocol):
    """The markdown painter's record: every slice's duration, and whether it is busy."""

    @property
    def slice_ms(self) -> Sequence[float]: ...
    @property
    def streaming_slice_ms(self) -> Sequence[float]: ...
    @property
    def busy(self) -> bool: ...


class Scrolled(Protocol):
    def yview_moveto(self, fraction: float) -> object: ...


class BenchTranscript(Protocol):
    """The transcript: its answers and inserts, its painter, and an answer written into it
    directly (the render run)."""

    @property
    def answers(self) -> Sequence[AnswerView]: ...
    @property
    def inserts(self) -> int: ...
    @property
    def painter(self) -> Painter: ...
    @property
    def text(self) -> Scrolled: ...
    def plain_text(self) -> str: ...
    def begin_answer(self) -> AnswerView: ...
    def append(self, view: AnswerView, text: str, *, live: bool = True) -> None: ...
    def finish(self, view: AnswerView) -> None: ...


class RecordingProbe(Protocol):
    """The lag probe, recording every firing between start and stop."""

    @property
    def recorded(self) -> list[LagSample] | None: ...
    def start_recording(self) -> None: ...
    def stop_recording(self) -> list[LagSample]: ...


class StatusText(Protocol):
    def get(self) -> str: ...


class ModeSetter(Protocol):
    def set_mode(self, mode: str) -> None: ...


class ModelLoader(Protocol):
    def load(self, path: str | None) -> None: ...


class Answering(Protocol):
    """The answer on its way (:class:`~tkchat.ui.chats.answering.Answering`): the view it is
    written into, every final event handled, and the pipeline answering (a broken demo's
    keeps its render costs)."""

    @property
    def answer(self) -> AnswerView | None: ...
    @property
    def finished(self) -> Sequence[Done | Error]: ...
    @property
    def pipeline(self) -> object: ...


class Flow(Protocol):
    """The window's chat flow (:class:`~tkchat.ui.chats.flow.ChatFlow`): its commands, and
    whether the model and a saved chat are ready."""

    @property
    def answering(self) -> Answering: ...
    @property
    def model_ready(self) -> bool: ...
    @property
    def model_failed(self) -> bool: ...
    @property
    def showing_conversation(self) -> bool: ...
    def send(self, text: str | None = None) -> bool: ...
    def stop(self) -> None: ...
    def new_chat(self) -> None: ...


class BenchWindow(Protocol):
    """What the benchmark drives and reads of the Tk window. ``flow``: send, Stop, a new
    chat, the answer on its way; ``session``: the chat as the model reads it (the bench sets
    its sampling); ``archive`` and ``conversations``: the saved conversations (None without
    ``--history``); ``witness``: the sampler of who held the loop; ``scheduler``: every timer
    (the bench times each callback's CPU through it)."""

    @property
    def flow(self) -> Flow: ...
    @property
    def transcript(self) -> BenchTranscript: ...
    @property
    def health(self) -> HealthBar: ...
    @property
    def probe(self) -> RecordingProbe: ...
    @property
    def controller(self) -> GenerationController: ...
    @property
    def status(self) -> StatusText: ...
    @property
    def teaching(self) -> ModeSetter: ...
    @property
    def models(self) -> ModelLoader: ...
    @property
    def session(self) -> ChatSession: ...
    @property
    def archive(self) -> History | None: ...
    @property
    def conversations(self) -> SavedConversations | None: ...
    @property
    def witness(self) -> LoopWitness: ...
    @property
    def scheduler(self) -> AfterScheduler: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
