"""Finding conversations by their text: the optional FTS5 index, its upkeep, and the queries.

``messages_fts`` is an FTS5 trigram index over ``messages.content``, kept up to date by
triggers. It is derived data: when this SQLite has no FTS5 the triggers are dropped (search
falls back to a scan through :func:`contains`) and the index is rebuilt the next time FTS5 is
available. Search gives the same results either way; the index only makes it fast.

Threads: :func:`sync_fts` runs when a store opens, on that thread. The queries run inside
``ConversationStore.search``, on its caller's thread (the Tk thread in the app) and under the
store's lock. :func:`snippet` and :func:`contains` are pure.
"""

from __future__ import annotations

import re
import sqlite3

from tkchat.limits import MAX_INDEXED_CHARS
from tkchat.store.errors import rollback
from tkchat.store.records import CONVERSATION_COLUMNS, Conversation, conversation_from_row

SNIPPET_CONTEXT = 40  # characters shown on each side of a search hit
_CONTAINS = "tkchat_contains"  # the SQL name of contains()

# A streaming answer is left out of the index until it ends: re-indexing a growing message
# on every batched append re-tokenised the whole answer twice a second — quadratic work that
# showed as a 45–100 ms lag spike in a 650,000-character flood. It is indexed once, when its
# status leaves "streaming" (finish, or mark_interrupted after a crash).
#
# And only its first MAX_INDEXED_CHARS: a trigram index takes about twice the text, and an
# answer's end is one transaction that the write-ahead log must hold whole; unbounded, the
# end of a 340,000-character answer needed 1.1 MB of log, more than a small disk had. Every
# statement indexes and un-indexes the same prefix, so the index stays consistent. (The
# names carry a version: triggers of an older definition are replaced, and the index built
# again, the first time this tkchat opens the file.)
_INDEXED = f"substr({{row}}.content, 1, {MAX_INDEXED_CHARS})"
_OLD_TRIGGERS = ("messages_fts_insert", "messages_fts_delete", "messages_fts_update")
_FTS_TRIGGERS = {
    "messages_fts_insert_2": f"""CREATE TRIGGER messages_fts_insert_2 AFTER INSERT ON messages
        WHEN new.status != 'streaming' BEGIN
        INSERT INTO messages_fts (rowid, content) VALUES (new.id, {_INDEXED.format(row="new")});
        END""",
    "messages_fts_delete_2": f"""CREATE TRIGGER messages_fts_delete_2 AFTER DELETE ON messages
        WHEN old.status != 'streaming' BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            VALUES ('delete', old.id, {_INDEXED.format(row="old")}); END""",
    # One trigger, two statements in order: the old entry goes before the new one comes in.
    "messages_fts_update_2": f"""CREATE TRIGGER messages_fts_update_2
        AFTER UPDATE OF content, status ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
            SELECT 'delete', old.id, {_INDEXED.format(row="old")} WHERE old.status != 'streaming';
        INSERT INTO messages_fts (rowid, content)
            SELECT new.id, {_INDEXED.format(row="new")} WHERE new.status != 'streaming'; END""",
}


# --- keeping the index ------------------------------------------------------------------------


def fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 with the trigram tokenizer (SQLite >= 3.34), which gives
    case-insensitive substring search in any script, Chinese included."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.tkchat_fts_probe USING fts5(x, tokenize='trigram')")
        conn.execute("DROP TABLE temp.tkchat_fts_probe")
    except sqlite3.Error:
        return False
    return True


def sync_fts(conn: sqlite3.Connection, want: bool | None) -> bool:
    """Make the FTS index match what this SQLite can do; return whether search may use it.
    ``want=False`` forces the scan (tests cover the fallback with it); ``None`` uses FTS5
    when available. Nothing is written when the index is already in the right state."""
    use = fts5_available(conn) if want is not False else False
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    has_table = "messages_fts" in names
    has_triggers = all(name in names for name in _FTS_TRIGGERS)
    if use and has_table and has_triggers:
        return True
    conn.execute("BEGIN IMMEDIATE")
    try:
        if use:
            _build_fts(conn, has_table)
        else:
            # Without FTS5 a trigger on messages_fts would make every message write fail.
            # The stale index is rebuilt by _build_fts when FTS5 is next available.
            for name in (*_OLD_TRIGGERS, *_FTS_TRIGGERS):
                conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    return use


def fts_ready(conn: sqlite3.Connection) -> bool:
    """Whether search may use the index as it is, without writing anything (a history
    opened read-only cannot build or repair it: it then scans)."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    return (
        fts5_available(conn)
        and "messages_fts" in names
        and all(name in names for name in _FTS_TRIGGERS)
    )


def _build_fts(conn: sqlite3.Connection, has_table: bool) -> None:
    if not has_table:
        conn.execute(
            "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
            "content_rowid='id', tokenize='trigram')"
        )
    for name in (*_OLD_TRIGGERS, *_FTS_TRIGGERS):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in _FTS_TRIGGERS.values():
        conn.execute(statement)
    # Not 'rebuild': it would index whole messages. Each row as the triggers index it, and
    # streaming ones not at all (see _FTS_TRIGGERS).
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')")
    conn.execute(
        "INSERT INTO messages_fts (rowid, content) "
        f"SELECT id, {_INDEXED.format(row='messages')} FROM messages WHERE status != 'streaming'"
    )


# --- querying ---------------------------------------------------------------------------------


def contains(haystack: str | None, folded_needle: str) -> bool:
    """SQL ``tkchat_contains``: Unicode case-insensitive substring test (SQLite's own LIKE
    folds ASCII only, so "É" would not find "é")."""
    return haystack is not None and folded_needle in haystack.casefold()


def add_contains_function(conn: sqlite3.Connection) -> None:
    """Make :func:`contains` callable from this connection's SQL (a Python function has to be
    registered on every connection that uses it)."""
    conn.create_function(_CONTAINS, 2, contains, deterministic=True)


def message_hits(conn: sqlite3.Connection, query: str, *, use_fts: bool) -> dict[int, str]:
    """conversation id -> the content of its first matching message (by position)."""
    if use_fts and len(query) >= 3:  # the trigram index cannot match fewer characters
        phrase = '"' + query.replace('"', '""') + '"'
        rows = conn.execute(
            "SELECT m.conversation_id, m.content FROM messages_fts AS f "
            "JOIN messages AS m ON m.id = f.rowid WHERE messages_fts MATCH ? "
            "ORDER BY m.conversation_id, m.position",
            (phrase,),
        )
    else:
        rows = conn.execute(
            "SELECT conversation_id, content FROM messages "
            f"WHERE {_CONTAINS}(content, ?) ORDER BY conversation_id, position",
            (query.casefold(),),
        )
    hits: dict[int, str] = {}
    for conversation_id, content in rows:
        hits.setdefault(conversation_id, content)
    return hits


def title_hits(conn: sqlite3.Connection, query: str) -> set[int]:
    """The ids of the conversations whose title contains ``query`` (titles are not indexed:
    they are short and few, so a scan is cheap)."""
    return {
        row[0]
        for row in conn.execute(
            f"SELECT id FROM conversations WHERE {_CONTAINS}(title, ?)",
            (query.casefold(),),
        )
    }


def search_conversations(
    conn: sqlite3.Connection, query: str, *, use_fts: bool, limit: int
) -> list[tuple[Conversation, str]]:
    """``ConversationStore.search``: the conversations (not deleted) with a hit in a message
    or the title, newest first, each with its snippet; at most ``limit``."""
    hits = message_hits(conn, query, use_fts=use_fts)
    titled = title_hits(conn, query)
    rows = conn.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE deleted_at IS NULL "
        "ORDER BY updated_at DESC, id DESC"
    ).fetchall()
    results: list[tuple[Conversation, str]] = []
    for row in rows:
        conversation = conversation_from_row(row)
        if conversation.id in hits:
            results.append((conversation, snippet(hits[conversation.id], query)))
        elif conversation.id in titled:
            results.append((conversation, snippet(conversation.title, query)))
        if len(results) >= limit:
            break
    return results


def snippet(text: str, query: str, context: int = SNIPPET_CONTEXT) -> str:
    """One line of ``text`` around the first case-insensitive occurrence of ``query``,
    with "…" where it was cut (the start of the text if there is no occurrence)."""
    match = re.search(re.escape(query), text, re.IGNORECASE)
    start, end = (match.start(), match.end()) if match else (0, 0)
    left, right = max(0, start - context), min(len(text), end + context)
    piece = " ".join(text[left:right].split())
    return ("…" if left > 0 else "") + piece + ("…" if right < len(text) else "")


__all__ = [
    "SNIPPET_CONTEXT",
    "add_contains_function",
    "contains",
    "fts5_available",
    "fts_ready",
    "message_hits",
    "search_conversations",
    "snippet",
    "sync_fts",
    "title_hits",
]
