"""What the chat flow (:mod:`tkchat.ui.chats.flow`) sees of the window and of its parts.

The flow decides what Send, Stop, Edit, Regenerate, ◀ ▶ and a chat switch do; the window
shows it. Between the two stand these Protocols, each the few members the flow uses: the
window (:class:`tkchat.ui.window.chat_window.ChatApp`) and its widgets satisfy them as they
are, and a test gives plain doubles instead, so the flow's logic runs without a Tk window
(``tests/test_chat_flow.py``).

Main thread only, like everything the flow calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.conversation import Sampling
from tkchat.events import Done, Error, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.store.figures import AnswerFigures
from tkchat.ui.base.session import ChatSession
from tkchat.ui.transcript.transcript import AnswerView, Branch, UserView

Control = Literal["send", "stop", "regenerate"]  # the window's buttons the flow switches


class TranscriptOps(Protocol):
    """The messages on screen, in order, and the few ways the flow changes them."""

    @property
    def entries(self) -> Sequence[UserView | AnswerView]: ...
    @property
    def answers(self) -> Sequence[AnswerView]: ...
    def add_user(
        self,
        message: str,
        versions: list[str] | None = None,
        branches: list[Branch] | None = None,
        *,
        follow: bool = False,
    ) -> UserView: ...
    def begin_answer(self, versions: list[tuple[str, str]] | None = None) -> AnswerView: ...
    def remove_from(self, view: UserView | AnswerView) -> None: ...
    @property
    def painting(self) -> bool: ...
    def position(self, view: UserView | AnswerView) -> int: ...
    def clear(self) -> None: ...
    def show_figures(self, view: AnswerView, *, hold: bool = False) -> None: ...


class Status(Protocol):
    """The status line (:class:`tkchat.ui.base.status.StatusLine`)."""

    def say(self, key: str, **values: object) -> None: ...
    def show(self, make: Callable[[], str]) -> None: ...
    def t(self, key: str, **values: object) -> str: ...  # its translator


class DraftBox(Protocol):
    """The message box's text (:class:`tkchat.ui.base.message_box.MessageBox`)."""

    @property
    def draft(self) -> str: ...
    def set_draft(self, text: str) -> None: ...
    def clear(self) -> None: ...


class Progress(Protocol):
    """The progress line beside the status (a prompt being read, a model loading)."""

    def follow(self, tick: TickResult) -> None: ...
    def hide(self, kind: str | None = None) -> None: ...


class Banner(Protocol):
    """A notice that stays until dismissed (why the model failed to load)."""

    def show(self, text: str) -> None: ...
    def hide(self) -> None: ...


class ModeChoice(Protocol):
    """The mode box of the teaching controls: which pipeline answers the next question."""

    mode: str

    def set_mode(self, mode: str) -> None: ...


class PeakReset(Protocol):
    """The lag probe, whose peaks the live figures count from each question."""

    def reset_peaks(self) -> None: ...


class ChatView(Protocol):
    """The window, as the chat flow sees it."""

    @property
    def transcript(self) -> TranscriptOps: ...
    @property
    def status(self) -> Status: ...
    @property
    def input(self) -> DraftBox: ...
    @property
    def progress(self) -> Progress: ...
    @property
    def model_banner(self) -> Banner: ...
    @property
    def teaching(self) -> ModeChoice: ...
    @property
    def probe(self) -> PeakReset: ...

    def enable(self, control: Control, on: bool) -> None:
        """Let ``control`` be used, or grey it out."""

    def focus_input(self) -> None:
        """The cursor in the message box, after its text."""

    def model_loaded(self, event: ModelReady) -> None:
        """What the window itself shows of a model that has loaded (title, meter, catalogue)."""

    def model_not_loaded(self, event: ModelFailed) -> None:
        """A model did not load (the recent models forget it; another may still be in use)."""


# -- the window's parts the flow drives ---------------------------------------------------------


class Versions(Protocol):
    """The versions of the messages on screen (:mod:`tkchat.ui.chats.answer_versions`).
    ``on_shown()``: a question's branch, put on screen in slices, is all there."""

    on_shown: Callable[[], None]

    @property
    def showing(self) -> bool: ...
    def can_show(self, view: UserView | AnswerView, step: int) -> bool: ...
    def show(self, view: UserView | AnswerView, step: int) -> bool: ...
    def resent(self, view: UserView, text: str) -> tuple[list[str], list[Branch]]: ...


class ContextFollower(Protocol):
    """The context meter's keeper (:class:`tkchat.ui.chats.context_meter.ContextWatch`)."""

    def reset(self, n_ctx: int | None) -> None: ...
    def follow(self) -> None: ...
    def after(self, final: Done | Error) -> None: ...
    def rewound(self, keep: int) -> None: ...
    def measure(self, request: GenerationRequest) -> None: ...


class DraftGate(Protocol):
    """The draft's token count (:class:`tkchat.ui.chats.draft_count.DraftCounter`), which may
    refuse a draft too long for the model's context."""

    waiting: str | None  # a draft sent before its count was known

    def fits(self, prompt: str) -> bool: ...
    def refresh(self) -> None: ...


class Archive(Protocol):
    """Saving as the chat goes (:class:`tkchat.ui.chats.history.History`)."""

    def question(
        self,
        text: str,
        *,
        system_prompt: str,
        settings_from: Sampling,
        edited: int | None = None,
    ) -> int | None: ...
    def answer_started(self, view: AnswerView) -> None: ...
    def answer_grew(self) -> None: ...
    def answer_ended(self, status: str, figures: AnswerFigures | None = None) -> None: ...


class SavedChats(Protocol):
    """The saved conversations and their sidebar
    (:class:`tkchat.ui.chats.conversations.SavedConversations`)."""

    @property
    def archive(self) -> Archive: ...
    @property
    def ready(self) -> bool: ...
    @property
    def showing(self) -> bool: ...
    def refresh(self) -> None: ...
    def forget_current(self) -> None: ...
    def stop_showing(self) -> None: ...
    def show(self, conversation_id: int) -> None: ...
    def show_earlier(self) -> bool: ...


class Scheduler(Protocol):
    """:class:`tkchat.ui.scheduler.AfterScheduler`: every timer named."""

    def once(self, name: str, delay_ms: int, callback: Callable[[], object]) -> None: ...


@dataclass(frozen=True)
class FlowParts:
    """What the flow works with besides its window: the model's side (``controller``, and
    ``consumer``, which decides whose events reach the screen), the chat as the model reads
    it (``session``), and the parts that keep the rest in step. ``saved``: None when the
    window keeps no history."""

    controller: GenerationController
    consumer: StreamConsumer
    session: ChatSession
    versions: Versions
    context: ContextFollower
    draft: DraftGate
    saved: SavedChats | None = None
