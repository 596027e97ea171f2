"""Every version of a regenerated answer, and choosing which one the chat goes on from.

A regenerate no longer throws the last answer away: the new one becomes its next version
("◀ 3/3 ▶" in the answer's header). Choosing another with ◀ or ▶ puts it on screen in the
answer's place (:meth:`~tkchat.ui.transcript.Transcript.show_version`, painted in slices), in
the model's context (so the next question is asked after the version shown) and in the saved
conversation (the writer thread writes it; export writes the version shown).

Main thread only.
"""

from __future__ import annotations

from tkchat.ui.history import History
from tkchat.ui.session import ChatSession
from tkchat.ui.transcript import AnswerView, Transcript


class AnswerVersions:
    """The versions of the answers on screen."""

    def __init__(
        self, transcript: Transcript, session: ChatSession, archive: History | None
    ) -> None:
        self.transcript = transcript
        self.session = session
        self.archive = archive

    def show(self, view: AnswerView, step: int) -> bool:
        """The answer's ◀ (``step`` -1) or ▶ (+1): show that version. Refused (False) while
        the answer streams, or where there is no version that way."""
        number = view.shown + step
        if view.status == "streaming" or not 0 <= number < len(view.versions):
            return False
        if view not in self.transcript.entries:
            return False  # (a link of an answer already removed: nothing to show)
        self.transcript.show_version(view, number)
        self.session.replace(self.transcript.entries.index(view), view.text)
        if self.archive is not None:
            self.archive.version_chosen(view)
        return True


def versions_after_regenerate(view: AnswerView) -> list[tuple[str, str]]:
    """The versions of the answer a regenerate replaces ``view`` with: all of ``view``'s (it
    has ended, so the one shown is as it ended), then the new one, empty and streaming."""
    kept = list(view.versions) or [(view.text, view.status)]
    kept[view.shown] = (view.text, view.status)
    return [*kept, ("", "streaming")]
