"""Saved conversations in the window: the sidebar, and putting a saved chat back on screen.

:class:`~tkchat.ui.chats.history.History` talks to the store; this part is what the user does with
it: open one (a few messages a callback: :mod:`.opening`), rename, delete and undo,
search. It changes the chat only through what it is given: the transcript, the session, and
what it asks of the chat flow (:class:`ChatHooks`).

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass

from tkchat.conversation import Message
from tkchat.store import (
    Conversation,
    StoreError,
    sampling_from_settings,
)
from tkchat.ui.base.services import Services
from tkchat.ui.chats.history import History
from tkchat.ui.chats.opening import ChatOpening, Shown
from tkchat.ui.chats.sidebar import ConversationSidebar
from tkchat.ui.transcript.transcript import Transcript


@dataclass(frozen=True)
class ChatHooks:
    """What the saved conversations ask of the chat they are shown in (the window's chat
    flow). ``new_chat()``: the sidebar's New chat. ``clear_chat()``: empty the screen and
    stop what runs, before another conversation is shown. ``shown()``: a conversation is
    fully on screen. ``ready(conversations)``: the store is open (newest first)."""

    new_chat: Callable[[], None]
    clear_chat: Callable[[], None]
    shown: Callable[[], None]
    ready: Callable[[list[Conversation]], None]


class SavedConversations:
    """The store's conversations, listed in a sidebar (built here, under ``parent``).

    ``chat``: what it asks of the chat. ``on_warning(text)``: saving failed or will not
    happen. ``on_export(id)``: the sidebar's Export of a conversation."""

    def __init__(
        self,
        parent: tk.Misc,
        services: Services,
        transcript: Transcript,
        chat: ChatHooks,
        *,
        on_warning: Callable[[str], None],
        on_export: Callable[[int], object] | None = None,
    ) -> None:
        self.scheduler = scheduler = services.scheduler
        self.transcript = transcript
        self.session = services.session
        self.clear_chat = chat.clear_chat
        self.on_shown = chat.shown
        self._on_ready = chat.ready
        self.opening: ChatOpening | None = None  # the chat being put on screen, if any
        self._deleted_here: set[int] = set()  # removed for good at close (see delete)
        # The chat on screen when it was deleted, and the one (None: a new chat) shown in its
        # place: Undo puts it back on screen while that is still so (see undelete).
        self._reopen: tuple[int, int | None] | None = None
        self._find: str | None = None  # the search the chat on screen was opened from
        self.archive = History(scheduler, on_ready=self._ready, on_warning=on_warning)
        self.sidebar = ConversationSidebar(
            parent,
            translate=services.translate,
            on_new=chat.new_chat,
            on_select=self.show,
            on_rename=self.rename,
            on_delete=self.delete,
            on_undo_delete=self.undelete,
            on_search=self.search,
            on_export=on_export,
        )
        self.on_deleted_current: Callable[[], None] = chat.new_chat

    @property
    def ready(self) -> bool:
        return self.archive.ready

    @property
    def showing(self) -> bool:
        """Whether a saved conversation is still being put on screen."""
        return self.opening is not None and self.opening.active

    def _ready(self, conversations: list[Conversation]) -> None:
        self._on_ready(conversations)
        self.refresh()

    def refresh(self) -> None:
        """The sidebar lists what the store holds now."""
        if self.archive.ready:
            self.sidebar.set_conversations(
                self.archive.conversations(), self.archive.conversation_id
            )

    def forget_current(self) -> None:
        """A new chat: it is created in the store with its first question."""
        self.archive.conversation_id = None
        self.refresh()

    # -- what the sidebar asks -------------------------------------------------------------------

    def rename(self, conversation_id: int, title: str) -> None:
        self.archive.run(lambda store: store.rename(conversation_id, title))
        self.refresh()

    def delete(self, conversation_id: int, after: int | None = None) -> None:
        """Soft delete: the sidebar offers Undo for a few seconds; the chat leaves the file
        when this window closes (or, after a crash, at a later start: History's opening).
        The chat on screen deleted, ``after`` opens in its place (the sidebar's next row;
        by default the one listed after it now), or a new empty chat when none is left: the
        pane never stays on a chat that is gone."""
        if after is None:
            after = self.sidebar.neighbour_of(conversation_id)
        self.archive.run(lambda store: store.delete(conversation_id))
        self._deleted_here.add(conversation_id)
        self._reopen = None  # only the latest delete can be undone (the sidebar's one bar)
        if self.archive.conversation_id == conversation_id:
            if after is not None:
                self.show(after)
            else:
                self.on_deleted_current()
            self._reopen = (conversation_id, self.archive.conversation_id)
        self.refresh()

    def undelete(self, conversation_id: int) -> None:
        """Undo: the chat is back in the list and, if it was on screen when it was deleted,
        on screen again, unless the user has moved on since (another chat opened, a question
        asked in the one that took its place: an answer streaming is not stopped for it)."""
        reopen, self._reopen = self._reopen, None
        self.archive.run(lambda store: store.restore(conversation_id))
        self._deleted_here.discard(conversation_id)
        if (
            reopen is not None
            and reopen[0] == conversation_id
            and self.archive.conversation_id == reopen[1]
            and not self.archive.answer_open
        ):
            self.show(conversation_id)  # (it refreshes the list too)
        else:
            self.refresh()
        # Under a search the sidebar keeps its results (a refresh only drops deleted chats
        # from them): run the search again, or the restored chat stays missing from them.
        query = self.sidebar.search_var.get().strip()
        if query:
            self.search(query)

    def search(self, text: str) -> None:
        if text.strip():
            self.sidebar.show_search_results(self.archive.search(text))
        else:
            self.refresh()

    # -- opening ---------------------------------------------------------------------------------

    def show(self, conversation_id: int) -> None:
        """Put a saved conversation on screen and make it the model's context. Opened from a
        search's results, it opens at the search's first match, every match highlighted."""
        self._find = self.sidebar.search_query()
        self.clear_chat()
        self.archive.open(conversation_id)
        try:
            store = self.archive.store
            conversation = store.get(conversation_id) if store is not None else None
        except StoreError:
            conversation = None
        # It brings its own system prompt and sampling; the model reads its messages once
        # they are all read (ChatOpening: a page at a time, so no callback reads them all).
        if conversation is not None:
            sampling = sampling_from_settings(conversation.settings)
            prompt = conversation.system_prompt
        else:
            prompt, sampling = self.session.system_prompt, self.session.sampling
        self.session.open(prompt, sampling, [])
        # 200 messages inserted in one callback took 85 ms: a long task. A few a callback
        # instead, as plain text, painted once all are there and only near the view.
        self._start_opening(
            conversation_id,
            on_read=lambda chat: self.session.open(prompt, sampling, chat),
            on_done=self._shown,
            shown=Shown(find=self._find or ""),
        )
        self.refresh()

    def _start_opening(
        self,
        conversation_id: int,
        on_read: Callable[[list[Message]], None] | None,
        on_done: Callable[[], None],
        shown: Shown,
    ) -> None:
        self.opening = ChatOpening(
            conversation_id,
            self.archive,
            self.transcript,
            self.scheduler,
            on_read,
            on_done,
            shown,
        )
        self.opening.start()

    def show_earlier(self) -> bool:
        """The line above a chat whose start is left out was clicked: the chat is put on
        screen again from the store, with more of its start (:mod:`.opening`), and the
        message that was first on screen is put back at the top of the view. The model's
        context is not touched: it has the whole chat. Refused (False) while the chat is
        still being put on screen or an answer streams into it."""
        conversation_id = self.archive.conversation_id
        if conversation_id is None or self.showing or self.archive.answer_open:
            return False
        entries = self.transcript.entries
        first = entries[0].saved_as if entries else None
        before = self.transcript.left_out
        self.archive.open(conversation_id)  # (what is still being written is written first)
        self.transcript.clear()

        def shown() -> None:
            self._show_found(jump=False)
            back = [view for view in self.transcript.entries if view.saved_as == first]
            if back:
                self.transcript.text.yview(back[0].head_mark)
                self.transcript.zone.moved()
            self.on_shown()

        self._start_opening(conversation_id, None, shown, Shown(before=before))
        return True

    def stop_showing(self) -> None:
        """Another chat replaces the screen: the rest of a conversation being put on screen
        must not follow it there."""
        if self.opening is not None:
            self.opening.cancel()

    def _shown(self) -> None:
        """All of it is on screen (and the model's): painting begins near the view."""
        self.on_shown()
        self._show_found(jump=True)

    def _show_found(self, *, jump: bool) -> None:
        """The search the chat was opened from: its matches marked, and (``jump``) the
        first in view."""
        if self._find:
            first = self.transcript.found.show(self._find)
            if first is not None and jump:
                self.transcript.text.see(first)
                self.transcript.zone.moved()  # paint what is near the match

    def close(self) -> None:
        """At exit: the chats deleted in this window leave the file (their Undo bar is gone
        with the window), then the store closes."""
        deleted = set(self._deleted_here)
        if deleted:
            self.archive.run(lambda store: store.purge_deleted(0, only=deleted))
        self.sidebar.destroy()
        self.archive.close()
