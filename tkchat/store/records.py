"""What the store hands out, and the rules for what may go into it.

:class:`Conversation` and :class:`StoredMessage` are the read-only records every caller sees
(the window, the writer thread, export). The checks below guard the values that reach the
database; they live here rather than beside :class:`~tkchat.store.db.ConversationStore`
because an import from a file goes through the same ones, so a hand-made export is held to
exactly the rules a call to the store is. Pure; any thread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard, get_args

from tkchat.conversation import Message
from tkchat.store.errors import invalid

# The schema's CHECK constraints repeat these lists (SQL cannot read them from here); a new
# role or status needs a migration as well as a change here.
Role = Literal["system", "user", "assistant"]
Status = Literal["complete", "streaming", "interrupted", "stopped", "error"]
ROLES: tuple[str, ...] = get_args(Role)
STATUSES: tuple[str, ...] = get_args(Status)

DEFAULT_TITLE = "New chat"
_TITLE_MAX = 200


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation's header (its messages come from
    :meth:`~tkchat.store.db.ConversationStore.messages`). ``settings`` is a fresh dict on every
    read: changing it does not change the store."""

    id: int
    title: str
    created_at: float
    updated_at: float
    system_prompt: str = ""
    settings: dict[str, Any] = field(default_factory=dict, hash=False)
    deleted_at: float | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    conversation_id: int
    position: int
    role: Role
    content: str
    status: Status
    created_at: float
    variant: int = 0  # which version of a regenerated answer is shown (from 0)
    variants: int = 1  # how many versions it has

    def as_message(self) -> Message:
        """The backend's view of this message (for building a ``GenerationRequest``)."""
        return Message(self.role, self.content)


CONVERSATION_COLUMNS = "id, title, created_at, updated_at, system_prompt, settings, deleted_at"


def conversation_from_row(row: tuple[Any, ...]) -> Conversation:
    """A :class:`Conversation` from a row of :data:`CONVERSATION_COLUMNS`. Settings that do
    not read as a JSON object (a hand-edited file) become defaults: they must not hide the
    conversation."""
    conversation_id, title, created_at, updated_at, system_prompt, settings, deleted_at = row
    try:
        loaded = json.loads(settings)
    except (ValueError, TypeError, RecursionError):
        loaded = None
    return Conversation(
        conversation_id,
        title,
        created_at,
        updated_at,
        system_prompt,
        loaded if isinstance(loaded, dict) else {},
        deleted_at,
    )


def check_choice(value: object, choices: tuple[str, ...], what: str) -> None:
    """Refuse a role or status the schema would reject, with a sentence instead of SQLite's
    "CHECK constraint failed"."""
    if value not in choices:
        raise invalid(f"A message {what} must be one of {', '.join(choices)}, not {value!r}.")


def text_value(value: object, what: str) -> str:
    """``value`` if it is text; SQLite would otherwise store a number or bytes as they are."""
    if not isinstance(value, str):
        raise invalid(f"The {what} must be text, not {type(value).__name__}.")
    return value


def clean_title(title: object) -> str:
    """One line for the sidebar: whitespace collapsed, at most 200 characters, and never
    empty (a blank title becomes "New chat", so every row has something to click)."""
    cleaned = " ".join(text_value(title, "title").split())[:_TITLE_MAX]
    return cleaned or DEFAULT_TITLE


def settings_json(settings: Mapping[str, Any]) -> str:
    """A conversation's settings as the JSON text stored for them. Refuses what JSON cannot
    hold faithfully (NaN, non-text keys, arbitrary objects) now, rather than storing something
    that would not read back the same."""
    if not isinstance(settings, Mapping) or not all(isinstance(k, str) for k in settings):
        raise invalid("Settings must be a mapping with text keys.")
    try:
        return json.dumps(dict(settings), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise invalid(f"Settings must be plain JSON values ({exc}).") from exc


# What counts as a number in a JSON file a person may have edited (a conversation's sampling
# settings, an imported export, settings.json): Python's json gives back bool, int and float,
# and, unless told otherwise, NaN and infinity.


def is_int(value: object) -> TypeGuard[int]:
    """A whole number. ``bool`` is an ``int`` subclass, but ``"seed": true`` in a file is a
    mistake, not the number 1, so it is refused."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """A whole or decimal number that is finite (NaN compares false with every bound, so a
    range check alone would let it through)."""
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


__all__ = [
    "CONVERSATION_COLUMNS",
    "DEFAULT_TITLE",
    "ROLES",
    "STATUSES",
    "Conversation",
    "Role",
    "Status",
    "StoredMessage",
    "check_choice",
    "clean_title",
    "conversation_from_row",
    "is_int",
    "is_number",
    "settings_json",
    "text_value",
]
