"""Per-answer figures, kept with the answer: how many tokens, how fast, how soon the first
one came, and how it ended — what LM Studio shows under each answer.

:class:`AnswerFigures` is the value (Tk-free, any thread); :class:`FiguresStore` is the part of
:class:`~tkchat.store.db.ConversationStore` that keeps them (it is mixed into the store, and
runs in the store's transactions, on the caller's thread). They live in a table of their own,
``answer_figures`` (schema version 4, :mod:`tkchat.store.schema`), one row per version of an
answer: a regenerated answer keeps each version's own figures, and reopening a chat shows
them again. A message deleted takes its figures with it (``ON DELETE CASCADE``): so does a
branch put aside when an edited question is sent (a branch keeps each message's text and
status, as it keeps no other versions of them).
"""

from __future__ import annotations

import math
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, get_args

from tkchat.store.errors import StoreError, invalid

# How an answer ended: the model's own end ("stop"), its length limit, the user's Stop, or an
# error. The schema's CHECK constraint repeats the list.
Ending = Literal["stop", "length", "stopped", "error"]
ENDINGS: tuple[str, ...] = get_args(Ending)


@dataclass(frozen=True, slots=True)
class AnswerFigures:
    """``tokens`` generated; ``tokens_per_s`` while decoding (None with fewer than two);
    ``ttft_s``: seconds from the question to the first token (None if none came);
    ``ended``: one of :data:`ENDINGS`."""

    tokens: int
    tokens_per_s: float | None
    ttft_s: float | None
    ended: Ending

    def check(self) -> AnswerFigures:
        """Itself, if every value is one the store keeps (else ``StoreError(kind="invalid")``
        naming it): what SQLite would otherwise store as it came, NaN or a string."""
        if not isinstance(self.tokens, int) or isinstance(self.tokens, bool) or self.tokens < 0:
            raise invalid(f"An answer's token count must be a whole number, not {self.tokens!r}.")
        for name in ("tokens_per_s", "ttft_s"):
            value = getattr(self, name)
            if value is not None and not _finite_positive(value):
                raise invalid(f"An answer's {name} must be a number ≥ 0, not {value!r}.")
        if self.ended not in ENDINGS:
            raise invalid(f"An answer ends with one of {', '.join(ENDINGS)}, not {self.ended!r}.")
        return self


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
            cursor = conn.execute(
                "INSERT OR REPLACE INTO answer_figures "
                "(message_id, slot, tokens, tokens_per_s, ttft_s, ended) "
                "SELECT id, variant, ?, ?, ?, ? FROM messages WHERE id = ?",
                (
                    figures.tokens,
                    figures.tokens_per_s,
                    figures.ttft_s,
                    figures.ended,
                    message_id,
                ),
            )
            if cursor.rowcount == 0:
                raise StoreError(f"There is no message {message_id}.", kind="not_found")

    def figures(self, conversation_id: int) -> dict[tuple[int, int], AnswerFigures]:
        """Every figure kept for a conversation's answers, by (message id, version)."""
        with self._reading("read the answers' figures") as conn:
            rows = conn.execute(
                "SELECT f.message_id, f.slot, f.tokens, f.tokens_per_s, f.ttft_s, f.ended "
                "FROM answer_figures f JOIN messages m ON m.id = f.message_id "
                "WHERE m.conversation_id = ?",
                (conversation_id,),
            ).fetchall()
        return {(mid, slot): AnswerFigures(*values) for mid, slot, *values in rows}


__all__ = ["ENDINGS", "AnswerFigures", "Ending", "FiguresStore"]
