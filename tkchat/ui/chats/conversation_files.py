"""File ▸ Export and Import: a conversation as Markdown or JSON, and a JSON export back in.

The store does the converting (``tkchat/store``); this part asks for the file name, writes or
reads the file, and says how it went. Main thread only: a conversation is a small file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from tkinter import filedialog

from tkchat.store import StoreError
from tkchat.ui.base.services import Services
from tkchat.ui.chats.history import History


class ConversationFiles:
    """The export and import commands of one window. ``open_conversation(id)`` shows an
    imported conversation."""

    def __init__(
        self,
        services: Services,
        archive: History | None,
        open_conversation: Callable[[int], None],
    ) -> None:
        self.root, self.t, self.status = services.root, services.translate, services.status
        self.archive = archive
        self.open_conversation = open_conversation
        # File choosers, replaceable by tests (a native dialog cannot be driven on Xvfb).
        self.ask_save_path: Callable[..., str] = filedialog.asksaveasfilename
        self.ask_open_path: Callable[..., str] = filedialog.askopenfilename

    def export(self, kind: str, conversation_id: int | None = None) -> str | None:
        """Save a conversation (default: the current one) as ``kind`` "markdown" or "json";
        return the path written (None: cancelled or failed, and the status line says why)."""
        archive = self.archive
        if conversation_id is None and archive is not None:
            conversation_id = archive.conversation_id
        if archive is None or conversation_id is None:
            self.status.say("app.nothing_to_export")
            return None
        title = next(
            (c.title for c in archive.conversations() if c.id == conversation_id), "conversation"
        )
        suffix = ".md" if kind == "markdown" else ".json"
        chosen = self.ask_save_path(
            parent=self.root,
            title=self.t("menu.export_md" if kind == "markdown" else "menu.export_json"),
            initialfile=file_name(title, suffix),
            defaultextension=suffix,
            filetypes=[("Markdown" if kind == "markdown" else "JSON", "*" + suffix)],
        )
        if not chosen:
            return None  # cancelled
        try:
            written = archive.export(conversation_id, kind, Path(chosen))
        except (StoreError, OSError) as exc:
            self.status.say("app.export_failed", path=chosen, reason=_reason(exc))
            return None
        self.status.say("app.exported", path=written)
        return written

    def import_(self) -> int | None:
        """Add a conversation from an exported JSON file and open it; return its id."""
        archive = self.archive
        if archive is None:
            return None
        chosen = self.ask_open_path(
            parent=self.root,
            title=self.t("menu.import"),
            filetypes=[("JSON", "*.json"), ("*", "*")],
        )
        if not chosen:
            return None
        try:
            conversation = archive.import_file(Path(chosen))
        except (StoreError, OSError) as exc:
            self.status.say("app.import_failed", path=chosen, reason=_reason(exc))
            return None
        self.open_conversation(conversation.id)
        self.status.say("app.imported", title=conversation.title)
        return conversation.id


def file_name(title: str, suffix: str) -> str:
    """A safe default file name for an export: the title without path separators."""
    stem = re.sub(r'[\\/:*?"<>|\x00-\x1f]+', " ", title).strip(" .")[:60] or "conversation"
    return stem + suffix


def _reason(exc: BaseException) -> str:
    """The part of an error a user can act on ("No such file or directory")."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
