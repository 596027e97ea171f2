"""Per-answer figures, kept with the answer: how many tokens, how fast, how soon the first
one came, and how it ended — what LM Studio shows under each answer.

:class:`AnswerFigures` is the value (Tk-free, any thread); :class:`FiguresStore` is the part of
:class:`~tkchat.store.db.ConversationStore` that keeps them (it is mixed into the store, and
runs in the store's transactions, on the caller's thread). They live in a table of their own,
``answer_figures`` (schema version 4; the model and the system prompt since version 5,
:mod:`tkchat.store.schema`), one row per version of an answer: a regenerated answer keeps each
version's own figures, and reopening a chat shows them again. A message deleted takes its
figures with it (``ON DELETE CASCADE``). A branch put aside when an edited question is sent
keeps, with each message's text and status, the figures of the version it showed, and of
every version of an answer regenerated (:mod:`tkchat.store.variants`); they come back with
the branch.
"""

from __future__ import annotations

import math
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import astuple, dataclass
from typing import Literal, get_args

from tkchat.limits import cut
from tkchat.store.errors import StoreError, invalid

# How an answer ended: the model's own end ("stop"), its length limit, the user's Stop, or an
# error. The schema's CHECK constraint repeats the list.
Ending = Literal["stop", "length", "stopped", "error"]
ENDINGS: tuple[str, ...] = get_args(Ending)


@dataclass(frozen=True, slots=True)
class AnswerFigures:
    """``tokens`` generated; ``tokens_per_s`` while decoding (None with fewer than two);
    ``ttft_s``: seconds from the question to the first token (None if none came);
    ``ended``: one of :data:`ENDINGS`; ``model``: the name of the model that answered (as
    the window's title shows it) and ``system_prompt``: the one it was asked with ("": none),
    both None for an answer saved before tkchat kept them."""

    tokens: int
    tokens_per_s: float | None
    ttft_s: float | None
    ended: Ending
    model: str | None = None
    system_prompt: str | None = None

    def check(self) -> AnswerFigures:
        """Itself, if every value is one the store keeps (else ``StoreError(kind="invalid")``
        naming it): what SQLite would otherwise store as it came, NaN or a string."""
        if not isinstance(self.tokens, int) or isinstance(self.tokens, bool) or self.tokens < 0:
            raise invalid(
                f"An answer's token count must be a whole number, not {_shown(self.tokens)}."
            )
        for name in ("tokens_per_s", "ttft_s"):
            value = getattr(self, name)
            if value is not None and not _finite_positive(value):
                raise invalid(f"An answer's {name} must be a number ≥ 0, not {_shown(value)}.")
        if self.ended not in ENDINGS:
            raise invalid(
                f"An answer ends with one of {', '.join(ENDINGS)}, not {_shown(self.ended)}."
            )
        for name in ("model", "system_prompt"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise invalid(f"An answer's {name} must be text, not {type(value).__name__}.")
        return self

    def as_dict(self) -> dict[str, object]:
        """The figures as a JSON object (a branch put aside keeps them so): every field,
        the model and system prompt only where known."""
        kept: dict[str, object] = {
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "ttft_s": self.ttft_s,
            "ended": self.ended,
        }
        for name in ("model", "system_prompt"):
            if getattr(self, name) is not None:
                kept[name] = getattr(self, name)
        return kept

    @staticmethod
    def from_dict(kept: object) -> AnswerFigures:
        """Figures from :meth:`as_dict`'s object; ``StoreError(kind="invalid")`` if it is
        not one (a missing field, a value the store does not keep)."""
        if not isinstance(kept, dict):
            raise invalid(f"An answer's figures must be an object, not {type(kept).__name__}.")
        try:
            figures = AnswerFigures(
                kept["tokens"],
                kept.get("tokens_per_s"),
                kept.get("ttft_s"),
                kept["ended"],
                kept.get("model"),
                kept.get("system_prompt"),
            )
        except KeyError as exc:
            raise invalid(f"An answer's figures have no {exc.args[0]!r}.") from exc
        return figures.check()


def _shown(value: object) -> str:
    """A value in a sentence, bounded (it may come from a file: a megabyte of text)."""
    if isinstance(value, str):
        return cut(repr(value[:100]), 60)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return cut(repr(value) if abs(value) < 1e30 else "a huge number", 60)
    return f"a {type(value).__name__}"


def _finite_positive(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (math.isfinite(value) and value >= 0)
    )


class FiguresStore:
    """The figures' part of the conversation store (mixed into
    :class:`~tkchat.store.db.ConversationStore`, which gives the transactions)."""

    def _reading(self, doing: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # ConversationStore's

    def _writing(self, doing: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError  # ConversationStore's

    def set_figures(self, message_id: int, figures: AnswerFigures) -> None:
        """Keep ``figures`` for the version message ``message_id`` shows now (an answer's
        end: its text is final). Raises ``StoreError(kind="not_found")`` for a message that
        is not there (deleted meanwhile)."""
        figures.check()
        with self._writing("save the answer's figures") as conn:
            if not put_figures(conn, message_id, figures):
                raise StoreError(f"There is no message {message_id}.", kind="not_found")

    def figures(self, conversation_id: int) -> dict[tuple[int, int], AnswerFigures]:
        """Every figure kept for a conversation's answers, by (message id, version)."""
        with self._reading("read the answers' figures") as conn:
            return read_figures(conn, conversation_id)


# The columns of AnswerFigures' fields, in its order (model and system_prompt: schema 5).
_COLUMNS = "tokens, tokens_per_s, ttft_s, ended, model, system_prompt"
_READ = ", ".join(f"f.{column}" for column in _COLUMNS.split(", "))


def read_figures(
    conn: sqlite3.Connection, conversation_id: int, *, shown_only: bool = False
) -> dict[tuple[int, int], AnswerFigures]:
    """A conversation's figures by (message id, version); ``shown_only``: only those of the
    version each message shows (what an export writes)."""
    rows = conn.execute(
        f"SELECT f.message_id, f.slot, {_READ} FROM answer_figures f "
        "JOIN messages m ON m.id = f.message_id WHERE m.conversation_id = ?"
        + (" AND f.slot = m.variant" if shown_only else ""),
        (conversation_id,),
    ).fetchall()
    return {(mid, slot): AnswerFigures(*values) for mid, slot, *values in rows}


def shown_figures(conn: sqlite3.Connection, message_id: int) -> AnswerFigures | None:
    """The figures of the version message ``message_id`` shows now, if it has any (a
    branch put aside keeps them: :mod:`tkchat.store.variants`)."""
    row = conn.execute(
        f"SELECT {_READ} FROM answer_figures f JOIN messages m "
        "ON m.id = f.message_id AND m.variant = f.slot WHERE m.id = ?",
        (message_id,),
    ).fetchone()
    return None if row is None else AnswerFigures(*row)


def figures_by_slot(conn: sqlite3.Connection, message_id: int) -> dict[int, AnswerFigures]:
    """Every version's figures of message ``message_id``, by slot (a branch put aside keeps
    those of an answer regenerated: :mod:`tkchat.store.variants`)."""
    rows = conn.execute(
        f"SELECT f.slot, {_READ} FROM answer_figures f WHERE f.message_id = ?", (message_id,)
    ).fetchall()
    return {slot: AnswerFigures(*values) for slot, *values in rows}


def put_figures_at(
    conn: sqlite3.Connection, message_id: int, slot: int, figures: AnswerFigures
) -> None:
    """Keep ``figures`` for version ``slot`` of message ``message_id`` (a branch brought
    back: each of its answers' versions gets its own again)."""
    conn.execute(
        f"INSERT OR REPLACE INTO answer_figures (message_id, slot, {_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (message_id, slot, *astuple(figures)),
    )


def put_figures(conn: sqlite3.Connection, message_id: int, figures: AnswerFigures) -> bool:
    """Keep ``figures`` for the version message ``message_id`` shows; False if there is no
    such message."""
    cursor = conn.execute(
        f"INSERT OR REPLACE INTO answer_figures (message_id, slot, {_COLUMNS}) "
        "SELECT id, variant, ?, ?, ?, ?, ?, ? FROM messages WHERE id = ?",
        (*astuple(figures), message_id),
    )
    return cursor.rowcount > 0


__all__ = [
    "ENDINGS",
    "AnswerFigures",
    "Ending",
    "FiguresStore",
    "figures_by_slot",
    "put_figures",
    "put_figures_at",
    "read_figures",
    "shown_figures",
]
