"""Doubles of what the chat flow (tkchat/ui/chats/flow.py) sees, for driving it without Tk.

:class:`FakeView` implements the flow's own Protocol of the window
(:class:`tkchat.ui.chats.chat_view.ChatView`) with plain Python: it records what the window
would show. The model side stays real: a scripted backend behind a real controller, the real
consumer and the real 16 ms pump, ticked by :class:`ManualScheduler` instead of Tk's ``after``,
on a clock of its own that each tick moves 16 ms on. :class:`ChatRig` puts them together as
the window does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.conversation import Sampling
from tkchat.events import ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.scripted import ScriptedBackend
from tkchat.store.figures import AnswerFigures
from tkchat.transport.channel import EventChannel
from tkchat.ui.base.session import ChatSession
from tkchat.ui.chats.chat_view import Control, FlowParts
from tkchat.ui.chats.flow import ChatFlow
from tkchat.ui.pipeline import FixedPipeline, PipelineHost
from tkchat.ui.pump import TICK_MS, EventPump
from tkchat.ui.transcript.transcript import AnswerView, Branch, UserView


class ManualScheduler:
    """The AfterScheduler's contract (one pending timer per name; scheduling a name again
    replaces it) on a clock of its own: each :meth:`run_due` moves it one pump tick on and
    fires the timers then due. No real time decides which timer has fired."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[int, Callable[[], object]]] = {}
        self.closed = False
        self.now_ms = 0

    def once(self, name: str, delay_ms: int, callback: Callable[[], object]) -> None:
        self.pending[name] = (self.now_ms + delay_ms, callback)

    def when_idle(self, name: str, callback: Callable[[], object]) -> None:
        self.once(name, 0, callback)

    def cancel(self, name: str) -> None:
        self.pending.pop(name, None)

    def run_due(self) -> None:
        self.now_ms += TICK_MS
        for name, timer in list(self.pending.items()):
            if timer[0] <= self.now_ms and self.pending.get(name) is timer:
                del self.pending[name]
                timer[1]()


class FakeTranscript:
    """The messages "on screen": the views the flow adds, and what the pipeline writes."""

    def __init__(self) -> None:
        self.entries: list[UserView | AnswerView] = []
        self.answers: list[AnswerView] = []
        self.ended: list[tuple[AnswerView, str]] = []  # each pipeline finish: (view, how)
        self.figured: list[tuple[AnswerView, AnswerFigures | None]] = []  # lines drawn
        self.painting = False  # painting near the view still to come (a test sets it)

    def add_user(
        self,
        message: str,
        versions: list[str] | None = None,
        branches: list[Branch] | None = None,
        *,
        follow: bool = False,
    ) -> UserView:
        view = UserView(
            len(self.entries) + 1,
            f"head-{len(self.entries)}",
            message,
            versions=list(versions or []),
            branches=list(branches or []),
            shown=len(versions or [1]) - 1,
        )
        self.entries.append(view)
        return view

    def begin_answer(self, versions: list[tuple[str, str]] | None = None) -> AnswerView:
        view = AnswerView(
            len(self.answers) + 1,
            f"start-{len(self.entries)}",
            f"end-{len(self.entries)}",
            started_at=time.perf_counter(),
            versions=list(versions or []),
            shown=len(versions or [1]) - 1,
        )
        self.answers.append(view)
        self.entries.append(view)
        return view

    def remove_from(self, view: UserView | AnswerView) -> None:
        del self.entries[self.entries.index(view) :]
        self.answers = [entry for entry in self.entries if isinstance(entry, AnswerView)]

    def position(self, view: UserView | AnswerView) -> int:
        return self.entries.index(view)  # (no chat left out of this one)

    def clear(self) -> None:
        self.entries.clear()
        self.answers.clear()

    def show_figures(self, view: AnswerView, *, hold: bool = False) -> None:
        self.figured.append((view, view.figures.get(view.shown)))

    # -- what the fixed pipeline calls -------------------------------------------------------

    def append(self, view: AnswerView, text: str, *, live: bool = True) -> None:
        view.text += text

    def finish(self, view: AnswerView, *, stopped: bool = False, error: str | None = None) -> None:
        view.status = "error" if error else "stopped" if stopped else "complete"
        self.ended.append((view, view.status))


@dataclass
class FakeStatus:
    lines: list[str] = field(default_factory=list)  # "key" or "key: values", as said

    def say(self, key: str, **values: object) -> None:
        self.lines.append(f"{key}: {values}" if values else key)

    def show(self, make: Callable[[], str]) -> None:
        self.lines.append(make())

    def t(self, key: str, **values: object) -> str:
        return f"{key}: {values}" if values else key

    @property
    def last(self) -> str:
        return self.lines[-1] if self.lines else ""


@dataclass
class FakeBox:
    draft: str = ""

    def set_draft(self, text: str) -> None:
        self.draft = text

    def clear(self) -> None:
        self.draft = ""


@dataclass
class FakeProgress:
    ticks: int = 0

    def follow(self, tick: TickResult) -> None:
        self.ticks += 1

    def hide(self, kind: str | None = None) -> None:
        pass


@dataclass
class FakeBanner:
    text: str | None = None  # None: hidden

    def show(self, text: str) -> None:
        self.text = text

    def hide(self) -> None:
        self.text = None


@dataclass
class FakeModes:
    mode: str = "fixed"

    def set_mode(self, mode: str) -> None:
        self.mode = mode


@dataclass
class FakeProbe:
    resets: int = 0

    def reset_peaks(self) -> None:
        self.resets += 1


class FakeView:
    """The window, as the flow sees it (ChatView), in plain Python."""

    def __init__(self) -> None:
        self.transcript = FakeTranscript()
        self.status = FakeStatus()
        self.input = FakeBox()
        self.progress = FakeProgress()
        self.model_banner = FakeBanner()
        self.teaching = FakeModes()
        self.probe = FakeProbe()
        self.enabled: dict[Control, bool] = {"send": True, "stop": False, "regenerate": False}
        self.focused = 0
        self.loaded: list[ModelReady] = []
        self.not_loaded: list[ModelFailed] = []

    def enable(self, control: Control, on: bool) -> None:
        self.enabled[control] = on

    def focus_input(self) -> None:
        self.focused += 1

    def model_loaded(self, event: ModelReady) -> None:
        self.loaded.append(event)

    def model_not_loaded(self, event: ModelFailed) -> None:
        self.not_loaded.append(event)


# -- the parts the flow drives ----------------------------------------------------------------


@dataclass
class FakeVersions:
    showing: bool = False
    shown: list[tuple[UserView | AnswerView, int]] = field(default_factory=list)
    on_shown: Callable[[], None] = lambda: None  # the flow's: a branch is all on screen

    def can_show(self, view: UserView | AnswerView, step: int) -> bool:
        return 0 <= view.shown + step < len(view.versions)

    def show(self, view: UserView | AnswerView, step: int) -> bool:
        if not self.can_show(view, step):
            return False
        self.shown.append((view, step))
        return True

    def resent(self, view: UserView, text: str) -> tuple[list[str], list[Branch]]:
        return [*(view.versions or [view.text]), text], [*(view.branches or [[]]), []]


@dataclass
class FakeContext:
    calls: list[str] = field(default_factory=list)

    def reset(self, n_ctx: int | None) -> None:
        self.calls.append("reset")

    def follow(self) -> None:
        self.calls.append("follow")

    def after(self, final: object) -> None:
        self.calls.append("after")

    def rewound(self, keep: int) -> None:
        self.calls.append(f"rewound {keep}")

    def measure(self, request: GenerationRequest) -> None:
        self.calls.append("measure")


@dataclass
class FakeDraft:
    fit: bool = True  # what fits() answers
    waiting: str | None = None
    refreshed: int = 0

    def fits(self, prompt: str) -> bool:
        return self.fit

    def refresh(self) -> None:
        self.refreshed += 1


@dataclass
class FakeArchive:
    saved: list[str] = field(default_factory=list)  # what the flow asked to save, in order
    figures: list[AnswerFigures | None] = field(default_factory=list)  # each answer's, saved

    def question(
        self, text: str, *, system_prompt: str, settings_from: Sampling, edited: int | None = None
    ) -> int | None:
        self.saved.append(f"question {text}")
        return None

    def answer_started(self, view: AnswerView) -> None:
        self.saved.append("answer started")

    def answer_grew(self) -> None:
        pass

    def answer_ended(self, status: str, figures: AnswerFigures | None = None) -> None:
        self.saved.append(f"answer {status}")
        self.figures.append(figures)


@dataclass
class FakeSaved:
    archive: FakeArchive = field(default_factory=FakeArchive)
    ready: bool = True
    showing: bool = False
    opened: list[int] = field(default_factory=list)

    def refresh(self) -> None:
        pass

    def forget_current(self) -> None:
        pass

    def stop_showing(self) -> None:
        self.showing = False

    def show(self, conversation_id: int) -> None:
        self.opened.append(conversation_id)

    def show_earlier(self) -> bool:
        return False


class ChatRig:
    """A chat flow wired as the window wires it, around ``backend``, with doubles for
    everything on the window's side; :meth:`until` runs the pump as the Tk loop would."""

    def __init__(
        self, backend: ScriptedBackend, *, saved: FakeSaved | None = None, autosend: str = ""
    ) -> None:
        self.backend = backend
        self.scheduler = ManualScheduler()
        self.controller = GenerationController(backend, EventChannel())
        self.consumer = StreamConsumer()
        self.session = ChatSession("", Sampling())
        self.view = FakeView()
        self.versions, self.context, self.draft = FakeVersions(), FakeContext(), FakeDraft()
        self.saved = saved
        parts = FlowParts(
            self.controller,
            self.consumer,
            self.session,
            self.versions,
            self.context,
            self.draft,
            saved,
        )
        self.host = PipelineHost(
            self.controller,
            self.consumer,
            self.view.transcript,  # type: ignore[arg-type]  # (the double, not the widget)
            lambda: None,
            lambda final: self.flow.answering.handle_final(final),
            self.scheduler,  # type: ignore[arg-type]  # (the double: the same contract)
        )
        self.flow = ChatFlow(
            self.view,
            parts,
            scheduler=self.scheduler,
            translate=lambda key, **values: f"{key} {values}" if values else key,
            pipelines=lambda _mode: FixedPipeline(self.host),
            pipeline=FixedPipeline(self.host),
            autosend=autosend or None,
        )
        self.pump = EventPump(
            self.scheduler,  # type: ignore[arg-type]
            self.controller.channel,
            self.consumer,
            self.flow.on_tick,
            self.flow.answering.failed,
        )
        self.pump.start()

    def until(self, ready: Callable[[], object], timeout: float = 10.0, what: str = "it") -> None:
        """Tick the pump (and every other timer) until ``ready()``."""
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            self.scheduler.run_due()
            time.sleep(0.002)

    def settle(self, ms: int = 500) -> None:
        """Everything still to come has come: the model's threads have left, the pump has
        taken every event they sent, and then ``ms`` more of the scheduler's clock has run
        (every timer the flow set for less than that has fired). What a test asserts after
        this cannot change later."""
        controller = self.controller
        self.until(
            lambda: not controller.is_generating() and not controller.loading,
            what="the model's threads to leave",
        )
        self.until(lambda: controller.channel.qsize() == 0, what="the pump to take every event")
        for _ in range(-(-ms // TICK_MS)):
            self.scheduler.run_due()

    def load(self) -> None:
        self.controller.load_async()
        self.until(lambda: self.flow.model_ready, what="the model to load")

    def close(self) -> None:
        self.controller.shutdown(timeout=2.0)
