"""Versions of a regenerated answer and branches of an edited question.

:class:`VariantsStore` is their part of :class:`~tkchat.store.db.ConversationStore` (mixed
into it, which owns the transactions): its methods' docstrings say what each does for a
caller; the statements follow, as functions of the connection a transaction holds. How the
versions are kept is in :mod:`tkchat.store.schema` (``message_variants``).

A message that may still be streaming is collapsed first (:func:`~tkchat.store.messages.
collapse`): the version put aside must hold all of its text. Everything runs on the
caller's thread, inside the store's transaction.

A branch put aside keeps, for each of its messages, the version it showed: its text, its
status and, for an answer, its figures (what it was made with too: :mod:`tkchat.store.
figures`), so that ◀ ▶ on the question brings them all back; and for an answer that was
regenerated, every version (text, status, figures) and which one it showed, so that it comes
back with its ◀ n/m ▶. (A question's own versions inside a branch put aside are not kept.)
"""

from __future__ import annotations

import json
import sqlite3
from typing import NamedTuple, cast

from tkchat.store.errors import StoreError
from tkchat.store.figures import (
    AnswerFigures,
    figures_by_slot,
    put_figures,
    put_figures_at,
    shown_figures,
)
from tkchat.store.messages import MessagesStore, collapse, read_messages, touch
from tkchat.store.records import ROLES, STATUSES, Status, StoredMessage, text_value

# One version of an answer in a branch put aside: its content, status and figures (or None).
KeptVersion = tuple[str, str, AnswerFigures | None]


class Kept(NamedTuple):
    """A message of a branch put aside: the version it showed (role, content, status, an
    answer's figures or None); for an answer regenerated, every version by slot and the one
    it showed (``versions`` empty: it had only the one). A plain value, any thread."""

    role: str
    content: str
    status: str
    figures: AnswerFigures | None = None
    versions: tuple[KeptVersion, ...] = ()
    shown: int = 0


class VariantsStore(MessagesStore):
    """The versions' and branches' part of the conversation store, on its messages' part
    (mixed into :class:`~tkchat.store.db.ConversationStore`, which gives the transactions and
    the clock). Each method runs on its caller's thread, one short transaction, under the
    store's lock."""

    def new_variant(self, conversation_id: int) -> int:
        """Regenerate: the conversation's last message (an answer) gets a new, empty version,
        ``streaming``, which is shown from now on; the one shown so far is kept as a version.
        Returns the message's id (the new text streams into it like into a new message)."""
        with self._writing("keep the earlier answer") as conn:
            return insert_variant(conn, conversation_id, self._clock())

    def variant_texts(self, message_id: int) -> list[tuple[str, Status]]:
        """Every version of a message, by slot, as (content, status); the one shown is read
        from the message itself. A slot never written (cannot happen through this class)
        reads as an empty complete message."""
        shown = self.message(message_id)
        with self._reading("read the answer's versions") as conn:
            kept = kept_versions(conn, message_id)
        kept[shown.variant] = (shown.content, shown.status)
        return [kept.get(slot, ("", "complete")) for slot in range(shown.variants)]

    def new_question_variant(self, conversation_id: int, position: int, text: str) -> int:
        """Edit and resend: the question at ``position`` gets a new version, ``text``, shown
        from now on, with nothing after it yet; the one shown so far is kept as a version
        with the messages that followed it (its branch). Returns the question's id (its
        answer is then added after it as usual)."""
        content = text_value(text, "message")
        with self._writing("keep the earlier question") as conn:
            return insert_question_variant(conn, conversation_id, position, content, self._clock())

    def variant_tails(self, message_id: int) -> list[list[Kept]]:
        """For each version of a question, by slot, the messages of its branch (:class:`Kept`:
        role, content, status, figures, an answer's versions); the version shown has [] here
        (its branch is the conversation itself), and so has every version of an answer."""
        shown = self.message(message_id)
        with self._reading("read the question's branches") as conn:
            rows = kept_tails(conn, message_id)
        tails = {slot: tail_from_json(tail) for slot, tail in rows.items() if slot != shown.variant}
        return [tails.get(slot, []) for slot in range(shown.variants)]

    def choose_variant(self, message_id: int, slot: int) -> None:
        """Show version ``slot`` of a message: the conversation continues from it, export
        writes it. The version shown so far is kept. For a question, the branches are
        swapped too: the messages after it are put aside with the version shown so far,
        and those of the chosen version's branch take their place (one transaction)."""
        with self._writing("choose the version shown") as conn:
            swap_in_variant(conn, message_id, slot, self._clock())


def insert_variant(conn: sqlite3.Connection, conversation_id: int, now: float) -> int:
    """See ``ConversationStore.new_variant``."""
    touch(conn, conversation_id, now)
    last = _last_message(conn, conversation_id)
    if last is None or last.role != "assistant":
        raise StoreError("There is no answer to regenerate.", kind="not_found")
    keep_shown(conn, last)
    conn.execute(
        "UPDATE messages SET content = '', status = 'streaming', variant = ? WHERE id = ?",
        (last.variants, last.id),
    )
    return last.id


def kept_versions(conn: sqlite3.Connection, message_id: int) -> dict[int, tuple[str, Status]]:
    """slot -> (content, status) of the versions put aside (the one shown may be stale)."""
    rows = conn.execute(
        "SELECT slot, content, status FROM message_variants WHERE message_id = ?", (message_id,)
    ).fetchall()
    return {slot: (text, status) for slot, text, status in rows}


def kept_tails(conn: sqlite3.Connection, message_id: int) -> dict[int, str | None]:
    """slot -> the branch JSON kept with each version (see :func:`cut_tail`)."""
    rows = conn.execute(
        "SELECT slot, tail FROM message_variants WHERE message_id = ?", (message_id,)
    ).fetchall()
    return dict(rows)


def insert_question_variant(
    conn: sqlite3.Connection, conversation_id: int, position: int, content: str, now: float
) -> int:
    """See ``ConversationStore.new_question_variant``."""
    touch(conn, conversation_id, now)
    found = read_messages(
        conn, "WHERE conversation_id = ? AND position = ?", (conversation_id, position)
    )
    if not found or found[0].role != "user":
        raise StoreError(f"There is no question at {position}.", kind="not_found")
    question = found[0]
    keep_shown(conn, question, cut_tail(conn, question))
    conn.execute(
        "UPDATE messages SET content = ?, status = 'complete', variant = ? WHERE id = ?",
        (content, question.variants, question.id),
    )
    return question.id


def swap_in_variant(conn: sqlite3.Connection, message_id: int, slot: int, now: float) -> None:
    """See ``ConversationStore.choose_variant``."""
    collapse(conn, [message_id])
    found = read_messages(conn, "WHERE id = ?", (message_id,))
    if not found:
        raise StoreError(f"There is no message {message_id}.", kind="not_found")
    current = found[0]
    if not 0 <= slot < current.variants:
        raise StoreError(f"Message {message_id} has no version {slot}.", kind="invalid")
    if slot == current.variant:
        return
    question = current.role == "user"
    keep_shown(conn, current, cut_tail(conn, current) if question else None)
    chosen = conn.execute(
        "SELECT content, status, tail FROM message_variants WHERE message_id = ? AND slot = ?",
        (message_id, slot),
    ).fetchone()
    content, status, tail = chosen if chosen is not None else ("", "complete", None)
    conn.execute(
        "UPDATE messages SET content = ?, status = ?, variant = ? WHERE id = ?",
        (content, status, slot, message_id),
    )
    for offset, kept in enumerate(tail_from_json(tail), start=1):
        put_back(conn, current.conversation_id, current.position + offset, kept, now)
    touch(conn, current.conversation_id, now)


def put_back(
    conn: sqlite3.Connection, conversation_id: int, position: int, kept: Kept, now: float
) -> None:
    """A message of a branch shown again, at ``position``: the version it showed, and an
    answer's other versions with each one's figures."""
    cursor = conn.execute(
        "INSERT INTO messages (conversation_id, position, role, content, status, "
        "created_at, variant) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (conversation_id, position, kept.role, kept.content, kept.status, now, kept.shown),
    )
    message_id = cast(int, cursor.lastrowid)
    if kept.figures is not None:
        put_figures(conn, message_id, kept.figures)
    for slot, (content, status, figures) in enumerate(kept.versions):
        if slot != kept.shown:  # (the one shown is the messages row itself)
            conn.execute(
                "INSERT INTO message_variants (message_id, slot, content, status) "
                "VALUES (?, ?, ?, ?)",
                (message_id, slot, content, status),
            )
            if figures is not None:
                put_figures_at(conn, message_id, slot, figures)


def keep_shown(conn: sqlite3.Connection, message: StoredMessage, tail: str | None = None) -> None:
    """Put the version shown aside, in its slot (with its branch, for a question)."""
    conn.execute(
        "INSERT OR REPLACE INTO message_variants (message_id, slot, content, status, tail) "
        "VALUES (?, ?, ?, ?, ?)",
        (message.id, message.variant, message.content, message.status, tail),
    )


def cut_tail(conn: sqlite3.Connection, question: StoredMessage) -> str:
    """Delete the messages after ``question`` and return them as a branch's JSON: the
    version each one showed, with its figures, and an answer's other versions (``versions``:
    each one's content, status and figures, by slot; ``shown``: the one it showed). A
    question's own other versions go with it."""
    where = "WHERE conversation_id = ? AND position > ?"
    args = (question.conversation_id, question.position)
    rows = read_messages(conn, where + " ORDER BY position", args)
    tail: list[dict[str, object]] = []
    for m in rows:
        kept: dict[str, object] = {"role": m.role, "content": m.content, "status": m.status}
        figures = shown_figures(conn, m.id)
        if figures is not None:
            kept["figures"] = figures.as_dict()
        if m.role == "assistant" and m.variants > 1:
            kept["versions"] = _versions_json(conn, m)
            kept["shown"] = m.variant
        tail.append(kept)
    conn.execute(f"DELETE FROM messages {where}", args)  # (their figures go with them)
    return json.dumps(tail, ensure_ascii=False)


def _versions_json(conn: sqlite3.Connection, answer: StoredMessage) -> list[dict[str, object]]:
    """Every version of ``answer`` as a branch keeps it (the one shown from its row)."""
    texts = kept_versions(conn, answer.id)
    texts[answer.variant] = (answer.content, answer.status)
    figures = figures_by_slot(conn, answer.id)
    versions: list[dict[str, object]] = []
    for slot in range(answer.variants):
        content, status = texts.get(slot, ("", "complete"))
        version: dict[str, object] = {"content": content, "status": status}
        if slot in figures:
            version["figures"] = figures[slot].as_dict()
        versions.append(version)
    return versions


def tail_from_json(tail: str | None) -> list[Kept]:
    """A branch put aside (see :func:`cut_tail`; one kept before schema 5 has no figures,
    and one kept by a tkchat that did not keep an answer's versions has none); one that does
    not read as such (edited by hand) is an error, not a guess."""
    if tail is None:
        return []
    try:
        branch = [_kept(item) for item in json.loads(tail)]
    except (ValueError, TypeError, KeyError, AttributeError, StoreError) as exc:
        raise StoreError("A kept branch of this chat is damaged.", kind="invalid") from exc
    return branch


def _kept(item: dict[str, object]) -> Kept:
    """One message of a branch's JSON; ValueError (or another of those tail_from_json
    catches) if it is not one."""
    versions = tuple(
        _version(version["content"], version["status"], version.get("figures"))
        for version in cast(list[dict[str, object]], item.get("versions", []))
    )
    shown = item.get("shown", 0)
    if not isinstance(shown, int) or not 0 <= shown < max(len(versions), 1):
        raise ValueError("no such version")
    content, status, figures = _version(item["content"], item["status"], item.get("figures"))
    if item["role"] not in ROLES:
        raise ValueError("no such role")
    return Kept(str(item["role"]), content, status, figures, versions, shown)


def _version(content: object, status: object, figures: object) -> KeptVersion:
    if status not in STATUSES or not isinstance(content, str):
        raise ValueError("not a message's version")
    return content, str(status), None if figures is None else AnswerFigures.from_dict(figures)


def _last_message(conn: sqlite3.Connection, conversation_id: int) -> StoredMessage | None:
    found = read_messages(
        conn, "WHERE conversation_id = ? ORDER BY position DESC LIMIT 1", (conversation_id,)
    )
    if found:
        collapse(conn, [found[0].id])  # (read_messages gave its whole text already)
    return found[0] if found else None


__all__ = [
    "Kept",
    "KeptVersion",
    "VariantsStore",
    "cut_tail",
    "keep_shown",
    "kept_tails",
    "kept_versions",
    "put_back",
    "swap_in_variant",
    "insert_question_variant",
    "insert_variant",
    "tail_from_json",
]
