"""The lab's one view of a chat window: what a tool reads of it, and what it does to it.

Every tool of the lab — the grader's window process, the bench and its scenarios, the lessons'
demos, record and replay — sees a chat window through :class:`LabWindow`, and through nothing
else. Its reading half is the grader's observer: plain attributes the window's main thread
writes (the answers, the final events, the Ping clicks handled), never a widget, so the grader's
report may read them from a thread of its own. Its doing half is what a user does (send, Stop,
close) and what a measuring tool needs of any toolkit (a timer on the window's loop, where to
click, the inputs handled, the lag probe's recording).

The Tk ``ChatApp`` reaches it through :class:`TkLabWindow`, made by :func:`open_lab_window`,
the one way the lab makes a window; the Qt ``ChatWindow`` through a tiny adapter of its own
(:class:`tkchat.lab.selftest.qt_child.QtLabWindow`). This module is the only one of the lab
that knows the Tk window's parts (tests/test_architecture.py checks it).

What only the Tk window has is its :class:`Instruments` (``instruments``; None for the Qt
window): the white-box figures the bench reads — the painter's slices, the inserts and events
counted, the answers' times, the callbacks' cost, the sampler of who held the loop — and what
only the bench makes it do — switch mode, open a saved chat, scroll, write an answer directly.
Each is a named member here, never a part of the window handed out.

Main thread only, except the observer's attributes (any thread may read them).
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Protocol

from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.modes import FIXED
from tkchat.stats import LagSample
from tkchat.ui.window.options import AppOptions

if TYPE_CHECKING:
    from tkchat.conversation import Sampling
    from tkchat.course.lessons import Lesson
    from tkchat.store.db import ConversationStore
    from tkchat.store.records import Conversation
    from tkchat.trace.recorder import RunRecorder
    from tkchat.trace.sampler import LoopSampler
    from tkchat.ui.base.notice import NoticeBanner
    from tkchat.ui.chats.conversations import SavedConversations
    from tkchat.ui.pipeline import Pipeline, PipelineHost
    from tkchat.ui.scheduler import CallbackCosts
    from tkchat.ui.transcript.transcript import AnswerView
    from tkchat.ui.window.chat_window import ChatApp

__all__ = [
    "AnswerSeen",
    "AnswerTimes",
    "AppOptions",
    "Counts",
    "Instruments",
    "LabWindow",
    "TkLabWindow",
    "instruments_of",
    "open_lab_window",
]

# The inputs :meth:`LabWindow.watch_inputs` reports: a wheel step down (anywhere in the
# window), the X key typed into the input box, and Stop pressed (once Stop has done its work).
INPUTS = ("scroll", "key", "stop")


class AnswerSeen(Protocol):
    """An answer as a tool reads it: all its text so far."""

    @property
    def text(self) -> str: ...


class LabWindow(Protocol):
    """A chat window as the lab sees it, whichever toolkit draws it."""

    # -- what it reads: plain attributes the window's main thread writes ----------------------

    @property
    def model_ready(self) -> bool: ...
    @property
    def answers(self) -> Sequence[AnswerSeen]:
        """The transcript's answers, in order (a new chat empties it)."""

    @property
    def answer(self) -> object | None:
        """The answer on its way (None between answers)."""

    @property
    def finished(self) -> Sequence[Done | Error]:
        """The final events handled, in order. A final is appended once its
        ``final_handled_at`` and ``last_error`` are set, and before ``answer`` is cleared:
        what a report reads on its own thread then never shows an answer closed without its
        final, nor a final without its time."""

    @property
    def last_error(self) -> str | None: ...
    @property
    def final_handled_at(self) -> float | None: ...
    @property
    def ping_times(self) -> Sequence[float]:
        """When each click on Ping was handled (``perf_counter``)."""

    @property
    def controller(self) -> GenerationController: ...
    @property
    def closed(self) -> bool: ...

    # -- what it does ---------------------------------------------------------------------------

    def send(self, text: str | None = None) -> bool:
        """What Send does with ``text`` (None: the input box's); whether an answer began."""

    def stop(self) -> None: ...
    def close(self) -> None: ...
    def later(self, name: str, ms: int, callback: Callable[[], object]) -> None:
        """Run ``callback`` on the window's loop in ``ms``, unless the window has closed.
        ``name`` names the timer where the toolkit keeps names (Tk: the sampler's ledger
        says whose callback ran; a later timer of the name replaces it)."""

    def points(self) -> dict[str, tuple[int, int]]:
        """Where to click, on the screen: the centres of ``ping``, ``transcript``, ``input``
        and ``stop`` (empty while the window is not shown)."""

    def watch_inputs(self, note: Callable[[str], None]) -> None:
        """From now on, ``note(kind)`` as each input is handled, ``kind`` one of
        :data:`INPUTS`."""

    def start_lag_recording(self) -> None:
        """The lag probe keeps every firing from now on."""

    def stop_lag_recording(self) -> list[LagSample]: ...
    @property
    def instruments(self) -> Instruments | None:
        """The Tk window's instruments; None for a window without them (the Qt one)."""


@dataclass(frozen=True)
class Counts:
    """The Tk window's counters at one moment: two readings measure what came between."""

    inserts: int  # widget inserts of streamed answer text (the window's "UI updates")
    events: int  # events the pump handled
    slices: int  # markdown painting slices run (index into :meth:`Instruments.slice_ms`)
    streaming_slices: int  # those that painted an answer still streaming
    ordering: dict[str, int]  # what the chaos transport did, what the consumer put right


@dataclass(frozen=True)
class AnswerTimes:
    """When an answer began (its question sent), when its first text was on screen, and
    every moment text reached the screen (``perf_counter``, characters so far: the live list)."""

    started_at: float
    first_text_at: float | None
    arrivals: Sequence[tuple[float, int]]


def instruments_of(window: LabWindow) -> Instruments:
    """``window``'s instruments: the bench measures the Tk window, which has them."""
    instruments = window.instruments
    if instruments is None:
        raise TypeError("this window has no instruments: the bench measures the Tk window")
    return instruments


class Instruments:
    """What the bench reads of the Tk window besides what every window shows, and what it
    makes it do. Main thread only."""

    def __init__(self, app: ChatApp) -> None:
        self._app = app
        self.root: tk.Tk = app.root  # the toplevel: the tools' own timers, scratch widgets
        self._banner: NoticeBanner | None = None

    # -- the chat, beyond send and Stop ---------------------------------------------------------

    @property
    def model_failed(self) -> bool:
        return self._app.flow.model_failed

    @property
    def showing_conversation(self) -> bool:
        """A saved chat is still being put on screen."""
        return self._app.flow.showing_conversation

    def new_chat(self) -> None:
        self._app.flow.new_chat()

    def set_mode(self, mode: str) -> None:
        """As the mode picker does."""
        self._app.teaching.set_mode(mode)

    def load_model(self, path: str | None) -> None:
        """As the Model menu does (the old model freed first)."""
        self._app.models.load(path)

    def set_up_demo(self, lesson: Lesson) -> None:
        """As a lesson's "Set up the demo" button does."""
        self._app.demos.setup(lesson)

    @property
    def sampling(self) -> Sampling:
        """The chat's sampling (a new chat starts from the defaults)."""
        return self._app.session.sampling

    @sampling.setter
    def sampling(self, sampling: Sampling) -> None:
        self._app.session.sampling = sampling

    def request(self, prompt: str | None = None) -> GenerationRequest:
        """What the model would read: ``prompt`` asked alone, or (None) the chat so far."""
        session = self._app.session
        return session.request() if prompt is None else session.request_for(prompt)

    @property
    def status_text(self) -> str:
        return self._app.status.get()

    def shown_text(self) -> str:
        """The transcript's text as shown (with its soft line breaks)."""
        return self._app.transcript.plain_text()

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline answering (the self-test wraps it, the same name kept)."""
        return self._app.flow.answering.pipeline

    @pipeline.setter
    def pipeline(self, pipeline: Pipeline) -> None:
        self._app.flow.answering.pipeline = pipeline

    @property
    def pipeline_problem(self) -> str | None:
        """Why the mode's pipeline could not be made (a file of one's own), if it could not."""
        return self._app.pipelines.problem

    # -- white-box figures -------------------------------------------------------------------

    def counts(self) -> Counts:
        transcript = self._app.transcript
        ordering = asdict(self._app.demos.ordering_counters())
        return Counts(
            inserts=transcript.inserts,
            events=self._app.pump.events,
            slices=len(transcript.painter.slice_ms),
            streaming_slices=len(transcript.painter.streaming_slice_ms),
            ordering={k: int(v) for k, v in ordering.items() if k != "chaos_on"},
        )

    def slice_ms(self, since: int = 0) -> list[float]:
        """Every markdown painting slice's duration (ms) from the ``since``-th on."""
        return self._app.transcript.painter.slice_ms[since:]

    def streaming_slice_ms(self, since: int = 0) -> list[float]:
        """Those that painted an answer still streaming."""
        return self._app.transcript.painter.streaming_slice_ms[since:]

    @property
    def painting(self) -> bool:
        """The painter still has markdown to paint."""
        return self._app.transcript.painter.busy

    def answer_times(self, index: int = -1) -> AnswerTimes:
        view = self._app.transcript.answers[index]
        return AnswerTimes(view.started_at, view.first_text_at, view.arrivals)

    def time_callbacks(self) -> CallbackCosts:
        """From now on, the main-thread CPU time of each of the window's callbacks, the
        worst kept in what this returns (until :meth:`stop_timing_callbacks`)."""
        from tkchat.ui.scheduler import CallbackCosts

        costs = self._app.scheduler.costs = CallbackCosts()
        return costs

    def stop_timing_callbacks(self) -> None:
        self._app.scheduler.costs = None

    @property
    def sampler(self) -> LoopSampler:
        """The window's main-thread sampler (tkchat/trace/): who held the loop."""
        return self._app.witness.sampler

    @property
    def stages_open(self) -> bool:
        """Is the pipeline view open?"""
        window = self._app.stages.window
        return window is not None and bool(window.winfo_exists())

    def show_stages(self, on: bool) -> None:
        """The pipeline view (tkchat/ui/stages/) open at full speed, as F9 opens it, or
        closed."""
        if on:
            self._app.stages.open()
        else:
            self._app.stages.close()

    def sample_loop(self, on: bool | None) -> None:
        """The sampler on or off whatever the view shows; None: as the view says."""
        self._app.witness.force(on)

    @property
    def health_running(self) -> bool:
        """Is the health bar's clock ticking and are its figures redrawn?"""
        return self._app.health.running

    def show_health(self, on: bool) -> None:
        """The health bar ticking and redrawn (as shipped), or standing still."""
        if on and not self._app.health.running:
            self._app.health.start()
        elif not on:
            self._app.health.stop()

    @property
    def consuming_plainly(self) -> bool:
        return isinstance(self._app.flow.answering.pipeline, PlainConsumer)

    def consume_plainly(self, on: bool) -> None:
        """The next answers put on screen by :class:`PlainConsumer` (on) or by the fixed
        pipeline again (off). Between answers: the one answering keeps its consumer."""
        answering = self._app.flow.answering
        if on and not self.consuming_plainly:
            answering.pipeline = PlainConsumer(self._app.pipeline_host)
        elif not on and self.consuming_plainly:
            answering.pipeline = self._app.pipelines(FIXED)

    def run_recorder(self) -> RunRecorder:
        """A recorder of one run: the sampler's samples, the callbacks, the tokens."""
        from tkchat.trace.recorder import RunRecorder

        witness = self._app.witness
        return RunRecorder(witness.sampler, witness.ledger, self._app.controller)

    # -- driving the transcript ------------------------------------------------------------------

    def scroll_to(self, fraction: float) -> None:
        self._app.transcript.text.yview_moveto(fraction)

    def scroll_pages(self, pages: int) -> None:
        """Page Down (``pages`` > 0) or Up, as the keys do."""
        self._app.transcript.text.yview_scroll(pages, "pages")

    def write_answer(self, text: str) -> object:
        """An answer written straight into the transcript, as if it had streamed in (not
        finished: :meth:`finish_answer` with what this returns)."""
        transcript = self._app.transcript
        view = transcript.begin_answer()
        transcript.append(view, text, live=False)
        return view

    def finish_answer(self, written: object) -> None:
        """End an answer :meth:`write_answer` wrote: its markdown is painted, in slices."""
        from tkchat.ui.transcript.transcript import AnswerView

        assert isinstance(written, AnswerView)
        self._app.transcript.finish(written)

    # -- saved chats (a window with the history) -------------------------------------------------

    @property
    def store(self) -> ConversationStore | None:
        """Where the chats are saved (None without the history)."""
        archive = self._app.archive
        return archive.store if archive is not None else None

    def list_saved(self) -> list[Conversation]:
        archive = self._app.archive
        return archive.conversations() if archive is not None else []

    def open_saved(self, conversation_id: int) -> None:
        """As a click in the sidebar does."""
        self._saved().show(conversation_id)

    def search_saved(self, text: str) -> None:
        self._saved().search(text)

    def rename_saved(self, conversation_id: int, title: str) -> None:
        self._saved().rename(conversation_id, title)

    def delete_saved(self, conversation_id: int) -> None:
        self._saved().delete(conversation_id)

    def restore_saved(self, conversation_id: int) -> None:
        self._saved().undelete(conversation_id)

    def _saved(self) -> SavedConversations:
        saved = self._app.conversations
        if saved is None:
            raise RuntimeError("this window keeps no history (open it with history=True)")
        return saved

    # -- words -----------------------------------------------------------------------------------

    def say(self, key: str, **values: object) -> str:
        """An interface string in the window's language."""
        return self._app.t(key, **values)

    def notice(self, text: str, *, status: bool = False) -> None:
        """``text`` in a banner above the transcript (one, replaced by the next), and in the
        status line too with ``status``."""
        from tkchat.ui.base.notice import NoticeBanner

        app = self._app
        if self._banner is None:
            self._banner = NoticeBanner(app.chat, app.banner_anchor, app.t)
        self._banner.show(text)
        if status:
            app.status.show(lambda: text)


class PlainConsumer:
    """The simplest correct consumer of the fixed pipeline's events: the bench's plain
    baseline (tkchat/lab/bench/scenarios/costs.py). The same worker, queue and 16 ms tick as
    the fixed pipeline; each tick's text goes in at the end of the answer as it arrived, in
    one insert, and the view follows the end, as the simplest Tk chat does: no markdown
    painted, no line ends added. It keeps the fixed pipeline's name (the mode is still
    fixed: the window would otherwise make the mode's own pipeline again). Main thread."""

    name = FIXED
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        transcript = self.host.transcript
        if view.job is not None:  # set up to be painted as it streams: it stays plain
            transcript.painter.drop(view.job)
            view.job = None
        view.paintable = False  # and the zone never paints it either
        self.host.consumer.follow(self.host.controller.start(request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        from tkchat.ui.readonly import writable

        transcript = self.host.transcript
        text = "".join(chunks)
        with writable(transcript.text):
            transcript.text.insert(view.end_mark, text, ("answer",))
        transcript.record(view, text)
        transcript.text.see("end")

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error, render=False)


class TkLabWindow:
    """The Tk ``ChatApp`` as the lab sees it (:class:`LabWindow`). Main thread only, but
    the observer's attributes, which the grader's report reads from its own thread."""

    def __init__(self, app: ChatApp) -> None:
        self.chat_app = app  # for the window's own tests; no lab module reaches past this class
        self.controller = app.controller
        self.instruments = Instruments(app)

    @property
    def model_ready(self) -> bool:
        return self.chat_app.flow.model_ready

    @property
    def answers(self) -> Sequence[AnswerView]:
        return self.chat_app.transcript.answers

    @property
    def answer(self) -> object | None:
        return self.chat_app.flow.answering.answer

    @property
    def finished(self) -> Sequence[Done | Error]:
        return self.chat_app.flow.answering.finished

    @property
    def last_error(self) -> str | None:
        return self.chat_app.flow.answering.last_error

    @property
    def final_handled_at(self) -> float | None:
        return self.chat_app.flow.answering.final_handled_at

    @property
    def ping_times(self) -> Sequence[float]:
        return self.chat_app.health.ping_times

    @property
    def closed(self) -> bool:
        return self.chat_app.closed

    def send(self, text: str | None = None) -> bool:
        return self.chat_app.flow.send(text)

    def stop(self) -> None:
        self.chat_app.flow.stop()

    def close(self) -> None:
        self.chat_app.close()

    def later(self, name: str, ms: int, callback: Callable[[], object]) -> None:
        self.chat_app.scheduler.once(name, ms, callback)

    def points(self) -> dict[str, tuple[int, int]]:
        app = self.chat_app
        if not app.root.winfo_ismapped():
            return {}

        def centre(widget: tk.Misc) -> tuple[int, int]:
            return (
                widget.winfo_rootx() + widget.winfo_width() // 2,
                widget.winfo_rooty() + widget.winfo_height() // 2,
            )

        return {
            "ping": centre(app.health.ping_button),
            "transcript": centre(app.transcript.text),
            "input": centre(app.input),
            "stop": centre(app.stop_button),
        }

    def watch_inputs(self, note: Callable[[str], None]) -> None:
        app = self.chat_app

        def stopped(event: tk.Event) -> None:
            """After the button's own binding has run its command (``all`` comes last)."""
            if str(event.widget) == str(app.stop_button):
                note("stop")

        # On every widget ("all"): a pipeline may show its answer in a widget of its own,
        # embedded in the transcript, and that widget then gets the wheel.
        app.root.bind_all("<Button-5>", lambda _e: note("scroll"), add="+")
        app.input.bind("<KeyPress-x>", lambda _e: note("key"), add="+")
        app.root.bind_all("<ButtonRelease-1>", stopped, add="+")

    def start_lag_recording(self) -> None:
        self.chat_app.probe.start_recording()

    def stop_lag_recording(self) -> list[LagSample]:
        return self.chat_app.probe.stop_recording()


def set_aside_records() -> None:
    """A lab tool's own records (a bench's runs so far) out of the garbage collector, as the
    app sets start-up's objects aside (tkchat/ui/window/heap.py): a full collection that
    walks them is the tool's cost, not the window's. Main thread, between measurements."""
    from tkchat.ui.window.heap import freeze_what_is_alive

    freeze_what_is_alive()


def open_lab_window(
    root: tk.Tk,
    controller: GenerationController,
    options: AppOptions | None = None,
    *,
    freeze: bool = False,
) -> TkLabWindow:
    """The chat window, in ``root``, for a tool of the lab: the bench, the lessons' demos,
    the grader's window process, record and replay. ``freeze``: start-up's objects set aside
    from the garbage collector as the app does (tkchat/ui/window/heap.py), for a bench that
    measures the window as it runs. The caller loads the model (``controller.load_async()``)."""
    from tkchat.ui.window.chat_window import ChatApp
    from tkchat.ui.window.heap import freeze_what_is_alive

    if freeze:  # each model it loads too
        options = replace(options or AppOptions(), freeze_heap=True)
    window = TkLabWindow(ChatApp(root, controller, options))
    if freeze:
        freeze_what_is_alive()
    return window
