"""A saved chat put back on screen a little at a time, so that no callback's work grows with
the chat's length.

Opening a chat of 1,000 messages (3.4 million characters) read them all from the store in
the sidebar's click, about 11 ms of the main thread for the reading alone, before the first
was on screen (2026-12-04, the long-chat bench's chat). Now each callback of the opening
reads at most one page of :data:`PAGE_MESSAGES` from the store, once those read before are
on screen, and puts at most :data:`SHOW_MAX_MESSAGES` on screen, within
:data:`SHOW_BUDGET_S`; when the last is there, a callback of its own lets the painting begin
(near the view only: :class:`~tkchat.ui.transcript.paint_zone.PaintZone`) and hands the
chat to the model.

Main thread only.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from tkchat.conversation import Message
from tkchat.store import AnswerFigures, StoredMessage
from tkchat.ui.chats.history import History
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import AnswerView, Transcript

SHOW_BUDGET_S = 0.004  # per callback: a few messages, then the loop has its turn
SHOW_MAX_MESSAGES = 8  # per callback, however short they are
PAGE_MESSAGES = 32  # read from the store in one callback, once those before are on screen
TIMER = "show-conversation"


class ChatOpening:
    """One saved chat on its way to the screen. ``figures``: its answers' figures, by
    message and version. When it is all there: ``on_read(chat)`` with what the model reads
    (the questions and answers, in order), then ``on_done()``. Main thread only."""

    def __init__(
        self,
        conversation_id: int,
        archive: History,
        transcript: Transcript,
        scheduler: AfterScheduler,
        figures: dict[int, dict[int, AnswerFigures]],
        on_read: Callable[[list[Message]], None],
        on_done: Callable[[], None],
    ) -> None:
        self.conversation_id = conversation_id
        self.archive = archive
        self.transcript = transcript
        self.scheduler = scheduler
        self.figures = figures
        self.on_read = on_read
        self.on_done = on_done
        self.active = True  # until it is all on screen (or cancelled)
        self._to_show: deque[StoredMessage] = deque()  # read, not yet on screen
        self._after = -1  # the position of the last message read
        self._more = True  # may the store hold more after it?
        self._chat: list[Message] = []
        self.shown_per_callback: list[int] = []  # (for tests: what each callback did)
        self.read_per_callback: list[int] = []

    def start(self) -> None:
        self.transcript.zone.hold()  # nothing is painted until it is all there
        self.scheduler.once(TIMER, 0, self._step)

    def cancel(self) -> None:
        """Another chat replaces the screen: the rest of this one must not follow it there."""
        self.active = False
        self._to_show.clear()
        self.scheduler.cancel(TIMER)

    def _step(self) -> None:
        """Read a page if those read are all on screen, then put a few on screen."""
        started = time.perf_counter()
        read = 0
        if not self._to_show and self._more:
            read = self._read_page()
        shown = 0
        with self.transcript.adding_many():
            while self._to_show and shown < SHOW_MAX_MESSAGES:
                if time.perf_counter() - started >= SHOW_BUDGET_S:
                    break
                self._show(self._to_show.popleft())
                shown += 1
        self.read_per_callback.append(read)
        self.shown_per_callback.append(shown)
        if self._to_show or self._more:
            self.scheduler.once(TIMER, 1, self._step)
        else:  # all there: what follows in a callback of its own
            self.scheduler.once(TIMER, 1, self._done)

    def _read_page(self) -> int:
        page = self.archive.page(self.conversation_id, self._after, PAGE_MESSAGES)
        self._more = len(page) == PAGE_MESSAGES
        if page:
            self._after = page[-1].position
        chat = [m for m in page if m.role in ("user", "assistant")]
        self._to_show.extend(chat)
        self._chat += [m.as_message() for m in chat]
        return len(page)

    def _show(self, message: StoredMessage) -> None:
        view = self.transcript.add_saved(
            message.role,
            message.content,
            message.status,
            self.archive.versions(message),
            message.variant,
            self.archive.branches(message) if message.role == "user" else None,
        )
        view.saved_as = message.id
        if isinstance(view, AnswerView):
            view.figures = self.figures.get(message.id, {})
            self.transcript.show_figures(view)

    def _done(self) -> None:
        self.active = False
        self.on_read(self._chat)
        self.transcript.zone.release()
        self.on_done()
