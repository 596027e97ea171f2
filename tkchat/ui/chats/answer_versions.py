"""Every version of a regenerated answer and of an edited question, and choosing which one
the chat goes on from.

A regenerate no longer throws the last answer away: the new one becomes its next version
("◀ 3/3 ▶" in the answer's header). Choosing another with ◀ or ▶ puts it on screen in the
answer's place (:meth:`~tkchat.ui.transcript.transcript.Transcript.show_version`, painted
in slices), in the model's context (so the next question is asked after the version shown)
and in the saved conversation (the writer thread writes it; export writes the version shown).

A question edited and sent again keeps its earlier versions the same way, each with the branch
that followed it: ◀ ▶ on the question show another version with its own branch. On screen the
question and everything after it are drawn again, the branch in slices (a branch of 200
messages in one callback would be a long task); in the saved conversation the branches are
swapped in one transaction (:meth:`~tkchat.store.db.ConversationStore.choose_variant`). A
branch put aside keeps the version each of its messages showed, with an answer's figures,
and every version of an answer that was regenerated (each with its figures) and which one it
showed: shown again, it has its ◀ n/m ▶ as it had. (A question's own versions inside a branch
put aside are not kept.)

Main thread only.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from tkchat.store import Kept
from tkchat.ui.base.services import Services
from tkchat.ui.chats.history import History
from tkchat.ui.chats.opening import SHOW_BUDGET_S, SHOW_MAX_MESSAGES
from tkchat.ui.transcript.transcript import AnswerView, Branch, Transcript, UserView
from tkchat.ui.transcript.view_keeper import keep_held, screen_y

_SLICE = "show-branch"


class AnswerVersions:
    """The versions of the messages on screen."""

    def __init__(self, transcript: Transcript, services: Services, archive: History | None) -> None:
        self.transcript = transcript
        self.session = services.session
        self.archive = archive
        self.scheduler = services.scheduler
        self._to_show: deque[Kept] = deque()  # a branch not yet on screen
        self._question: UserView | None = None  # whose branch that is
        self.on_shown: Callable[[], None] = lambda: None  # a branch is all on screen
        self._held_at: int | None = None  # where the question's header is kept on screen

    @property
    def showing(self) -> bool:
        """Is a branch still being put on screen? (Nothing may be sent meanwhile.) Not
        once the chat it belonged to was cleared: its next slice then stops."""
        return bool(self._to_show) and self._question in self.transcript.entries

    def show(self, view: UserView | AnswerView, step: int) -> bool:
        """A message's ◀ (``step`` -1) or ▶ (+1): show that version. Refused (False) while
        the answer streams, while a branch is put on screen, or where there is no version
        that way. (The window stops an answer streaming before a question's version.)"""
        if not self.can_show(view, step):
            return False
        number = view.shown + step
        if isinstance(view, AnswerView):
            self.transcript.show_version(view, number)
            self.transcript.show_figures(view, hold=True)  # that version's own
            self.session.replace(self.transcript.position(view), view.text)
            chosen: UserView | AnswerView = view
        else:
            chosen = self._show_branch(view, number)
        if self.archive is not None:
            self.archive.version_chosen(chosen, self.transcript.position(chosen))
        return True

    def can_show(self, view: UserView | AnswerView, step: int) -> bool:
        """Is there a version of ``view`` that way, which can be shown now?"""
        if not 0 <= view.shown + step < len(view.versions) or self.showing:
            return False
        if isinstance(view, AnswerView) and view.status == "streaming":
            return False
        return view in self.transcript.entries  # (not a link of a message removed since)

    def resent(self, view: UserView, text: str) -> tuple[list[str], list[Branch]]:
        """An edited question is sent again: the versions its new view has (the earlier
        ones, each with its branch, then ``text`` with none yet). Call it before the
        question and what follows are removed."""
        versions, branches = self._kept(view)
        return [*versions, text], [*branches, []]

    def _kept(self, view: UserView) -> tuple[list[str], list[Branch]]:
        """``view``'s versions and branches, the one shown as it stands on screen now."""
        index = self.transcript.entries.index(view)
        versions = list(view.versions) or [view.text]
        branches = list(view.branches) or [[]]
        versions[view.shown] = view.text
        branches[view.shown] = [kept(entry) for entry in self.transcript.entries[index + 1 :]]
        return versions, branches

    def _show_branch(self, view: UserView, number: int) -> UserView:
        """Draw the question again as version ``number``, then its branch (sliced); its
        header stays where it was on screen (:meth:`_hold`)."""
        versions, branches = self._kept(view)
        index = self.transcript.position(view)
        self._held_at = screen_y(self.transcript.text, view.head_mark)
        self.transcript.remove_from(view)
        question = self.transcript.add_user(versions[number], versions, branches, number)
        question.saved_as = view.saved_as
        self.session.rewind(index)
        self.session.ask(question.text)
        for message in branches[number]:
            if message.role == "user":
                self.session.ask(message.content)
            else:
                self.session.answered(message.content)
        self._to_show = deque(branches[number])
        self._question = question
        self._hold(question)
        if self._to_show:
            self.transcript.zone.hold()  # plain text first; what is near the view painted after
            self.scheduler.once(_SLICE, 0, self._show_some)
        return question

    def _hold(self, question: UserView | None) -> None:
        """The question's header where it was when its ◀ or ▶ was clicked, as its branch
        grows below it (each message written at the end would pull a reader at the end
        along, and the arrow away from under the pointer)."""
        if self._held_at is not None and question is not None:
            keep_held(self.transcript.text, question.head_mark, self._held_at)

    def _show_some(self) -> None:
        """Put the branch on screen until this callback's budget is spent."""
        if not self.showing:  # the chat was cleared meanwhile: the rest must not follow
            self._to_show.clear()
            self._question = None
            return
        started, shown = time.perf_counter(), 0
        with self.transcript.adding_many():
            while self._to_show and time.perf_counter() - started < SHOW_BUDGET_S:
                if shown == SHOW_MAX_MESSAGES:
                    break
                self._add(self._to_show.popleft())
                shown += 1
        self._hold(self._question)
        if self._to_show:
            self.scheduler.once(_SLICE, 1, self._show_some)
        else:
            self._question = None
            self.transcript.zone.release()
            self.on_shown()  # what Regenerate may do follows the branch's last message

    def _add(self, message: Kept) -> None:
        """One message of a branch on screen, an answer with its versions and figures."""
        versions = [(text, status) for text, status, _figures in message.versions]
        view = self.transcript.add_saved(
            message.role, message.content, message.status, versions, message.shown
        )
        if not isinstance(view, AnswerView):
            return
        if message.versions:
            view.figures = {
                slot: figures
                for slot, (_text, _status, figures) in enumerate(message.versions)
                if figures is not None
            }
        elif message.figures is not None:
            view.figures = {view.shown: message.figures}
        if view.figures:
            self.transcript.show_figures(view)


def kept(entry: UserView | AnswerView) -> Kept:
    """A message on screen as a branch keeps it: the version it shows, with its figures,
    and an answer's other versions with theirs."""
    if not isinstance(entry, AnswerView):
        return Kept(entry.role, entry.text, "complete")
    shown = entry.figures.get(entry.shown)
    if len(entry.versions) < 2:
        return Kept(entry.role, entry.text, entry.status, shown)
    texts = list(entry.versions)
    texts[entry.shown] = (entry.text, entry.status)  # (the truth for the one shown)
    versions = tuple(
        (text, status, entry.figures.get(slot)) for slot, (text, status) in enumerate(texts)
    )
    return Kept(entry.role, entry.text, entry.status, shown, versions, entry.shown)


def versions_after_regenerate(view: AnswerView) -> list[tuple[str, str]]:
    """The versions of the answer a regenerate replaces ``view`` with: all of ``view``'s (it
    has ended, so the one shown is as it ended), then the new one, empty and streaming."""
    kept = list(view.versions) or [(view.text, view.status)]
    kept[view.shown] = (view.text, view.status)
    return [*kept, ("", "streaming")]
