"""A saved chat put back on screen a little at a time, so that no callback's work grows with
the chat's length; and only its end, so that Tk's work does not grow with it either.

Opening a chat of 1,000 messages (3.4 million characters) read them all from the store in
the sidebar's click, about 11 ms of the main thread for the reading alone, before the first
was on screen (2026-12-04, the long-chat bench's chat). Now each callback of the opening
either reads one page of :data:`PAGE_MESSAGES` from the store or, once all are read, puts at
most :data:`SHOW_MAX_MESSAGES` on screen, within :data:`SHOW_BUDGET_S`; when the last is
there, a callback of its own lets the painting begin (near the view only:
:class:`~tkchat.ui.transcript.paint_zone.PaintZone`) and hands the chat to the model.

The whole chat is read (the model reads all of it), but only its last
:data:`SHOWN_CHARS` characters go on screen, from a question on; a line at the top says how
many earlier messages are left out, and a click on it shows :data:`SHOWN_CHARS` more
(:meth:`SavedConversations.show_earlier
<tkchat.ui.chats.conversations.SavedConversations.show_earlier>`). Why: Tk works out the
height of every line the widget holds, in the background after an insert and again after
every change of width, however far from the view the line is. A 1,000-message chat (3.4
million characters) cost the window 0.45 s of CPU after opening and 0.30 s after each
resize, against 0.10 s for 100 messages (2026-12-03, the long-chat bench); hiding the text
with an ``elide`` tag instead cost 8.1 s after one resize. A chat opened from a search shows
at least from its first match.

Main thread only.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tkchat.conversation import Message
from tkchat.store import AnswerFigures, StoredMessage
from tkchat.ui.chats.history import History
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import AnswerView, Transcript

SHOW_BUDGET_S = 0.004  # per callback: a few messages, then the loop has its turn
SHOW_MAX_MESSAGES = 8  # per callback, however short they are
PAGE_MESSAGES = 32  # read from the store in one callback
SHOWN_CHARS = 400_000  # on screen at opening, and more with each click on "earlier"
TIMER = "show-conversation"


def first_shown(messages: Sequence[tuple[str, int]], end: int, budget: int) -> int:
    """Where to start showing ``messages`` (each its role and length) so that those from
    there to ``end`` hold at most ``budget`` characters: at least the one before ``end``,
    and from a question (an answer is not shown without the question it answers)."""
    start, total = end, 0
    while start > 0 and total + messages[start - 1][1] <= budget:
        start -= 1
        total += messages[start][1]
    if start == end and end > 0:
        start = end - 1
    while start > 0 and messages[start][0] != "user":
        start -= 1
    return start


@dataclass(frozen=True)
class Shown:
    """Which part of a chat goes on screen: the messages before position ``before`` (None:
    to its end) that hold :data:`SHOWN_CHARS`, from a question on; and at least from the
    first message holding ``find`` (a search's text, case ignored)."""

    before: int | None = None
    find: str = ""

    def start(self, chat: Sequence[StoredMessage]) -> int:
        messages = [(m.role, len(m.content)) for m in chat]
        end = len(messages) if self.before is None else self.before
        start = first_shown(messages, end, SHOWN_CHARS)
        find = self.find.strip().lower()
        if find:
            matches = (i for i, m in enumerate(chat) if find in m.content.lower())
            start = first_shown(messages, min(start, next(matches, start)) + 1, 0)
        return start


class ChatOpening:
    """One saved chat on its way to the screen: the part of it ``shown`` says. When that is
    all there: ``on_read(chat)`` with what the model reads (all the questions and answers,
    in order; None: the model has them already), then ``on_done()``. Main thread only."""

    def __init__(
        self,
        conversation_id: int,
        archive: History,
        transcript: Transcript,
        scheduler: AfterScheduler,
        on_read: Callable[[list[Message]], None] | None,
        on_done: Callable[[], None],
        shown: Shown | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        self.archive = archive
        self.transcript = transcript
        self.scheduler = scheduler
        self.on_read = on_read
        self.on_done = on_done
        self.shown = shown or Shown()
        # Its answers' figures, by message and version.
        self.figures: dict[int, dict[int, AnswerFigures]] = {}
        for (message_id, version), kept in archive.figures(conversation_id).items():
            self.figures.setdefault(message_id, {})[version] = kept
        self.active = True  # until it is all on screen (or cancelled)
        self._read: list[StoredMessage] = []  # the questions and answers, all of them
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
        """Read a page; once all are read, put a few on screen."""
        started = time.perf_counter()
        read = 0
        if self._more:
            read = self._read_page()
        shown = 0
        if self._to_show and not read:  # (a page read is this callback's work)
            with self.transcript.adding_many():
                while self._to_show and shown < SHOW_MAX_MESSAGES:
                    if time.perf_counter() - started >= SHOW_BUDGET_S:
                        break
                    self._show(self._to_show.popleft())
                    shown += 1
        self.read_per_callback.append(read)
        self.shown_per_callback.append(shown)
        if self._more:  # the next page at once: nothing was drawn
            self.scheduler.once(TIMER, 0, self._step)
        elif self._to_show:
            self.scheduler.once(TIMER, 1, self._step)
        else:  # all there: what follows in a callback of its own
            self.scheduler.once(TIMER, 1, self._done)

    def _read_page(self) -> int:
        page = self.archive.page(self.conversation_id, self._after, PAGE_MESSAGES)
        self._more = len(page) == PAGE_MESSAGES
        if page:
            self._after = page[-1].position
        chat = [m for m in page if m.role in ("user", "assistant")]
        self._read += chat
        self._chat += [m.as_message() for m in chat]
        if not self._more:  # all read: which of them go on screen
            self._left_out(self.shown.start(self._read))
        return len(page)

    def _left_out(self, start: int) -> None:
        """The messages before ``start`` stay off screen; a line says so."""
        self.transcript.leave_out(start)
        self._to_show.extend(self._read[start:])

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
        if self.on_read is not None:
            self.on_read(self._chat)
        self.transcript.zone.release()
        self.on_done()
