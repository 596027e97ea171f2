"""Conversations that are never lost: the window's side of ``tkchat.store``.

Main thread only, except where a docstring says otherwise. The streaming answer — the only
frequent write — goes through :class:`~tkchat.store.writer.StoreWriter`, whose thread batches it
(within 0.15 s, one appended part per flush), so saving never shows in the lag figures. The
rare writes a user triggers (a sent question, a rename, a delete) are single small
transactions on the main thread:
a sent question must be durable *before* its answer starts, and in SQLite's WAL mode with
``synchronous=NORMAL`` a commit is an append to one file, well under a millisecond.

Opening the database (which checks its integrity, reading the whole file) runs on a thread of
its own; the window is usable meanwhile and the history appears when it is ready.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tkchat.conversation import Sampling
from tkchat.store import (
    AnswerFigures,
    Conversation,
    ConversationStore,
    MessageTicket,
    StoredMessage,
    StoreError,
    StoreWriter,
    open_store,
    settings_from_sampling,
)
from tkchat.threads import own_thread
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import AnswerView, Branch, UserView

TITLE_CHARS = 48
POLL_MS = 100
# A chat deleted longer ago than this is removed for good when a window opens: its Undo bar
# went with the window that deleted it (which removes its own deletions when it closes; this
# catches a window that crashed). Long enough that a second window open on the same history
# never removes a chat the first one still offers to undo.
PURGE_AFTER_S = 600.0


@dataclass
class _Opened:
    """What the opening thread found (handed to the main thread once, then read only)."""

    store: ConversationStore | None = None
    warning: str | None = None
    interrupted: int = 0
    conversations: list[Conversation] = field(default_factory=list)


class History:
    """Keeps the window's conversations in the store. ``on_ready(conversations)`` and
    ``on_warning(text)`` are called on the main thread."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        *,
        on_ready: Callable[[list[Conversation]], None],
        on_warning: Callable[[str], None],
    ) -> None:
        self.scheduler = scheduler
        self.on_ready = on_ready
        self.on_warning = on_warning
        self.store: ConversationStore | None = None
        self.writer: StoreWriter | None = None
        self.conversation_id: int | None = None
        self._answer: tuple[AnswerView, MessageTicket, int] | None = None  # view, ticket, saved
        self._errors: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._opened = _Opened()
        self._thread = own_thread(self._open, name="tkchat-history")
        self._thread.start()
        self.scheduler.once("history", POLL_MS, self._poll)

    @property
    def ready(self) -> bool:
        return self.store is not None

    def _open(self) -> None:
        """History thread: open (or fall back), mark answers cut off by a crash, remove chats
        deleted long ago (:data:`PURGE_AFTER_S`), list."""
        store, warning = open_store()
        opened = _Opened(store=store, warning=warning)
        try:
            if not store.read_only:  # (read-only: shown as it is, answers cut off included)
                opened.interrupted = store.mark_interrupted()
                store.purge_deleted(PURGE_AFTER_S)
            opened.conversations = store.list_conversations()
        except StoreError as exc:
            opened.warning = str(exc)
        self._opened = opened

    def _poll(self) -> None:
        """Main thread: pick up the opened store once, then relay the writer's errors."""
        if self.store is None and not self._thread.is_alive():
            opened = self._opened
            self.store = opened.store
            if self.store is not None and not self.store.read_only:
                # (A history opened read-only is only shown: its warning said so, once.)
                self.writer = StoreWriter(self.store, on_error=self._errors.put)
            if opened.warning:
                self.on_warning(opened.warning)
            self.on_ready(opened.conversations)
        while True:
            try:
                self.on_warning(self._errors.get_nowait())
            except queue.Empty:
                break
        self.scheduler.once("history", POLL_MS, self._poll)

    # -- saving ----------------------------------------------------------------------------------

    def question(
        self,
        text: str,
        *,
        system_prompt: str,
        settings_from: Sampling,
        edited: int | None = None,
    ) -> int | None:
        """The user's question, committed before its answer starts (see the module
        docstring); returns its id. ``edited``: it is a new version of chat message
        ``edited`` (a question), whose branch is kept (:meth:`ConversationStore.
        new_question_variant`). Editing the first question names the chat after it again,
        unless the user renamed it."""
        if self.store is None or self.store.read_only:
            return None
        try:
            if self.conversation_id is None:
                conversation = self.store.create(
                    auto_title(text),
                    system_prompt=system_prompt,
                    settings=settings_from_sampling(settings_from),
                )
                self.conversation_id = conversation.id
            elif edited is not None:
                return self._new_version(self.store, self.conversation_id, edited, text)
            return self.store.add_message(self.conversation_id, "user", text)
        except StoreError as exc:
            self.on_warning(str(exc))
            return None

    def _new_version(
        self, store: ConversationStore, conversation_id: int, index: int, text: str
    ) -> int:
        if self.writer is not None:
            self.writer.flush(timeout=2.0)  # the answer it is still saving is in the branch
        chat = [m for m in store.messages(conversation_id) if m.role != "system"]
        if index >= len(chat):
            raise StoreError("The question edited is not in the saved chat.", kind="not_found")
        if index == 0 and store.get(conversation_id).title == auto_title(chat[0].content):
            store.rename(conversation_id, auto_title(text))  # (a title of one's own stays)
        return store.new_question_variant(conversation_id, chat[index].position, text)

    def answer_started(self, view: AnswerView) -> None:
        """A new answer streams into ``view``; a regenerate's (it has earlier versions) is
        saved as a new version of the last answer, which keeps the others."""
        if self.writer is None or self.conversation_id is None:
            return
        if len(view.versions) > 1:
            ticket = self.writer.new_variant(self.conversation_id)
        else:
            ticket = self.writer.add_message(
                self.conversation_id, "assistant", "", status="streaming"
            )
        view.saved_as = ticket
        self._answer = (view, ticket, 0)

    def version_chosen(self, view: UserView | AnswerView, index: int) -> None:
        """The message in ``view``, the chat's ``index``-th, shows another of its versions (a
        question: with its branch): the saved conversation continues from it and exports it
        (written by the writer thread, in order after what is queued before, such as an
        answer's text). A message of a branch shown again has no id here (the store put it
        back under a new one): it is found by its place, after the swap queued before it."""
        if self.writer is None:
            return
        if view.saved_as is not None:
            self.writer.choose_variant(view.saved_as, view.shown)
        elif self.conversation_id is not None:
            conversation_id, slot = self.conversation_id, view.shown
            self.writer.submit(lambda store: _choose_at(store, conversation_id, index, slot))

    def branches(self, message: StoredMessage) -> list[Branch]:
        """For each version of a saved question, the branch that followed it (the shown
        one's: []), its answers with their figures and versions. Main thread (a read)."""
        if self.store is None or message.variants < 2:
            return []
        try:
            return self.store.variant_tails(message.id)
        except StoreError as exc:
            self.on_warning(str(exc))
            return [[] for _slot in range(message.variants)]

    def versions(self, message: StoredMessage) -> list[tuple[str, str]]:
        """Every version of a saved answer, (text, status) by number; [] for an answer with
        one. Main thread (a read; the writer is flushed when a conversation is opened)."""
        if self.store is None or message.variants < 2:
            return []
        try:
            return [(text, str(status)) for text, status in self.store.variant_texts(message.id)]
        except StoreError as exc:
            self.on_warning(str(exc))
            return []

    @property
    def answer_open(self) -> bool:
        """Whether an answer is streaming into the current conversation (saved as it grows)."""
        return self._answer is not None

    def answer_grew(self) -> None:
        """Queue the text shown since the last call (the writer batches it)."""
        if self._answer is None or self.writer is None:
            return
        view, ticket, saved = self._answer
        if view.length > saved:
            self.writer.append(ticket, view.text_from(saved))
            self._answer = (view, ticket, view.length)

    def answer_ended(self, status: str, figures: AnswerFigures | None = None) -> None:
        """``status``: complete, stopped or error. The window's full text is the final one;
        ``figures`` are kept with the version it is (tkchat/store/figures.py)."""
        if self._answer is None or self.writer is None:
            return
        view, ticket, _saved = self._answer
        self.writer.finish(ticket, status, content=view.text)  # type: ignore[arg-type]
        if figures is not None:
            self.writer.save_figures(ticket, figures)
        self._answer = None

    def figures(self, conversation_id: int) -> dict[tuple[int, int], AnswerFigures]:
        """Every answer's figures in a saved chat, by (message id, version). Main thread (a
        read; the writer is flushed when a conversation is opened)."""
        if self.store is None:
            return {}
        try:
            return self.store.figures(conversation_id)
        except StoreError as exc:
            self.on_warning(str(exc))
            return {}

    # -- browsing --------------------------------------------------------------------------------

    def conversations(self) -> list[Conversation]:
        return self.store.list_conversations() if self.store is not None else []

    def open(self, conversation_id: int) -> None:
        """Make ``conversation_id`` the current one; its messages are then read a page at a
        time (:meth:`page`)."""
        if self.store is None:
            return
        if self.writer is not None:
            self.writer.flush(timeout=2.0)  # what was just streamed is part of it
        self.conversation_id = conversation_id

    def page(self, conversation_id: int, after: int, limit: int) -> list[StoredMessage]:
        """At most ``limit`` messages of the conversation after position ``after`` (-1: from
        the first); [] once there are no more (or on a failure, which is shown)."""
        if self.store is None:
            return []
        try:
            return self.store.messages_page(conversation_id, after, limit)
        except StoreError as exc:
            self.on_warning(str(exc))
            return []

    def run(self, operation: Callable[[ConversationStore], object]) -> None:
        """A rename, delete or restore: one small transaction; a failure is shown."""
        if self.store is None:
            return
        try:
            operation(self.store)
        except StoreError as exc:
            self.on_warning(str(exc))

    def save_settings(self, system_prompt: str, sampling: Sampling) -> None:
        """The current conversation's system prompt and sampling (the settings dialog)."""
        conversation_id = self.conversation_id
        if conversation_id is None:
            return  # a new chat: they are saved with its first question

        def save(store: ConversationStore) -> None:
            store.set_system_prompt(conversation_id, system_prompt)
            store.set_settings(conversation_id, settings_from_sampling(sampling))

        self.run(save)

    def export(self, conversation_id: int, kind: str, path: Path) -> str:
        """Write a conversation as Markdown (``kind="markdown"``) or JSON; raises StoreError
        or OSError with the reason. Returns the path written, as text."""
        if self.store is None:
            raise StoreError("The conversations are not open yet.")
        if self.writer is not None:
            self.writer.flush(timeout=2.0)  # the answer just streamed belongs in the file
        if kind == "markdown":
            text = self.store.export_markdown(conversation_id)
        else:
            text = (
                json.dumps(self.store.export_json(conversation_id), ensure_ascii=False, indent=2)
                + "\n"
            )
        path.write_text(text, encoding="utf-8")
        return str(path)

    def import_file(self, path: Path) -> Conversation:
        """Add the conversation in an exported JSON file; raises StoreError (malformed,
        with the field named) or OSError (unreadable)."""
        if self.store is None:
            raise StoreError("The conversations are not open yet.")
        return self.store.import_json(path.read_bytes())

    def search(self, text: str) -> list[tuple[Conversation, str]]:
        return self.store.search(text) if self.store is not None else []

    def close(self) -> None:
        """Main thread, at exit: write what is queued (bounded wait), then close."""
        if self.writer is not None:
            self.writer.close(timeout=2.0)
        if self.store is not None:
            self.store.close()


def _choose_at(store: ConversationStore, conversation_id: int, index: int, slot: int) -> None:
    """The writer thread: show version ``slot`` of the chat's ``index``-th message."""
    chat = [m for m in store.messages(conversation_id) if m.role != "system"]
    if index < len(chat):
        store.choose_variant(chat[index].id, slot)


def auto_title(question: str) -> str:
    """The title a chat gets from its first question (until the user renames it)."""
    return " ".join(question.split())[:TITLE_CHARS] or "New chat"
