"""A conversation as a file: readable Markdown out, versioned JSON out and back in.

:class:`ExportStore` is the store's part that does it (mixed into
:class:`~tkchat.store.db.ConversationStore`): it reads a conversation and hands it to
:func:`to_markdown` or :func:`to_export`; for an import it runs :func:`parse_export` first and
inserts only what came back, in one transaction, so a bad file is refused whole before
anything is written. The JSON shape is a promise to files already on people's disks: see
:func:`to_export` before changing it.

The store's methods run on their caller's thread (in the app, the Tk thread that runs the
Export/Import menu commands), each one short transaction; everything else here is pure
and touches no database (any thread).

Each answer goes out with what it was made with, as kept with its figures
(:mod:`tkchat.store.figures`): its model, its figures, and its system prompt where it is not
the conversation's (which is the one current at export: it may have changed since).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from tkchat.limits import cut
from tkchat.store.errors import StoreError, invalid
from tkchat.store.figures import ENDINGS, AnswerFigures, put_figures, read_figures
from tkchat.store.messages import MessagesStore
from tkchat.store.records import (
    DEFAULT_TITLE,
    ROLES,
    STATUSES,
    Conversation,
    StoredMessage,
    clean_title,
    is_int,
    is_number,
    settings_json,
)

EXPORT_FORMAT = "tkchat-conversation"
EXPORT_VERSION = 1


class ExportStore(MessagesStore):
    """Export and import, the store's part (mixed into
    :class:`~tkchat.store.db.ConversationStore`, which gives the transactions, the clock and
    the conversations). Each method runs on its caller's thread."""

    def get(self, conversation_id: int) -> Conversation:
        raise NotImplementedError  # ConversationStore's

    def export_markdown(self, conversation_id: int) -> str:
        """The conversation as readable Markdown: the title as ``#``, each message under a
        ``##`` role heading, content verbatim (a code fence an interrupted answer left open
        is closed, so it cannot swallow the headings after it)."""
        conversation = self.get(conversation_id)
        messages = self.messages(conversation_id)
        return to_markdown(conversation, messages, self._shown_figures(conversation_id))

    def export_json(self, conversation_id: int) -> dict[str, Any]:
        """The conversation in the versioned export shape (see :func:`to_export`)."""
        conversation = self.get(conversation_id)
        messages = self.messages(conversation_id)
        figures = self._shown_figures(conversation_id)
        return to_export(conversation, messages, figures, exported_at=self._clock())

    def _shown_figures(self, conversation_id: int) -> dict[int, AnswerFigures]:
        """The figures of the version each message shows, by message id."""
        with self._reading("read the answers' figures") as conn:
            kept = read_figures(conn, conversation_id, shown_only=True)
        return {message_id: figures for (message_id, _slot), figures in kept.items()}

    def import_json(self, data: Mapping[str, Any] | str | bytes) -> Conversation:
        """Add a conversation from an export (the dict, or the file's text/bytes) as a new
        conversation with new ids, in one transaction. Anything malformed raises
        ``StoreError(kind="invalid")`` naming the bad field; nothing is stored then."""
        parsed = parse_export(data, now=self._clock())
        now = self._clock()
        with self._writing("import the conversation") as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, "
                "settings) VALUES (?, ?, ?, ?, ?)",
                (parsed.title, parsed.created_at, now, parsed.system_prompt, parsed.settings),
            )
            conversation_id = cast(int, cursor.lastrowid)
            for position, (role, content, status, created_at) in enumerate(parsed.messages):
                message = conn.execute(
                    "INSERT INTO messages (conversation_id, position, role, content, status, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (conversation_id, position, role, content, status, created_at),
                )
                figures = parsed.figures[position] if position < len(parsed.figures) else None
                if figures is not None:
                    put_figures(conn, cast(int, message.lastrowid), figures)
        return self.get(conversation_id)


# --- Markdown -------------------------------------------------------------------------------

_ROLE_HEADINGS = {"system": "System", "user": "User", "assistant": "Assistant"}
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def to_markdown(
    conversation: Conversation,
    messages: list[StoredMessage],
    figures: Mapping[int, AnswerFigures] | None = None,
) -> str:
    """Readable Markdown for a conversation (pure; any thread). ``figures``: those of the
    version each message shows, by message id: a short italic line under each answer
    (model, tokens, speed, first token), and its system prompt where it was not the one at
    the top."""
    parts = [f"# {conversation.title}"]
    if conversation.system_prompt:
        parts.append(f"## System prompt\n\n{close_fences(conversation.system_prompt.strip())}")
    for message in messages:
        body = close_fences(message.content.strip("\n")) or "*(empty)*"
        section = f"## {_ROLE_HEADINGS[message.role]}\n\n{body}"
        if message.status != "complete":
            section += f"\n\n*[{message.status}]*"  # as the window marks a stopped answer
        made = (figures or {}).get(message.id)
        if made is not None:
            section += "\n\n" + made_with_markdown(made, conversation.system_prompt)
        parts.append(section)
    return "\n\n".join(parts) + "\n"


def made_with_markdown(figures: AnswerFigures, header_prompt: str) -> str:
    """The italic line under an answer, e.g. ``*smollm2-135m · 42 tokens · 18.3 tokens/s ·
    first token 0.31 s*``, then its own system prompt, quoted, if not ``header_prompt``."""
    items = [] if figures.model is None else [figures.model.replace("*", "\\*")]
    items.append(f"{figures.tokens:,} token{'' if figures.tokens == 1 else 's'}")
    if figures.tokens_per_s is not None:
        items.append(f"{figures.tokens_per_s:,.1f} tokens/s")
    if figures.ttft_s is not None:
        items.append(f"first token {figures.ttft_s:.2f} s")
    if figures.ended == "length":  # (stopped and error are marked above, as in the window)
        items.append("cut at the length limit")
    line = f"*{' · '.join(items)}*"
    prompt = figures.system_prompt
    if prompt is None or prompt == header_prompt:
        return line
    if not prompt.strip():
        return line + "\n\n*System prompt for this answer: none.*"
    quoted = "\n".join(
        f"> {row}" if row else ">" for row in close_fences(prompt.strip()).split("\n")
    )
    return f"{line}\n\n*System prompt for this answer:*\n\n{quoted}"


def close_fences(text: str) -> str:
    """``text`` with a closing fence added if a fenced code block is left open (as in an
    answer interrupted mid-code), so later Markdown is not swallowed into the code."""
    open_fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if match is None:
            continue
        fence, rest = match.groups()
        if open_fence is None:
            if not (fence[0] == "`" and "`" in rest):  # a backtick fence's info has no `
                open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    return text if open_fence is None else f"{text}\n{open_fence}"


# --- JSON export shape ----------------------------------------------------------------------


def to_export(
    conversation: Conversation,
    messages: list[StoredMessage],
    figures: Mapping[int, AnswerFigures] | None = None,
    *,
    exported_at: float | None = None,
) -> dict[str, Any]:
    """The export shape, version 1 (pure; any thread). All times are Unix seconds (UTC)::

        {"format": "tkchat-conversation", "version": 1, "exported_at": 1767000000.0,
         "conversation": {"title": str, "created_at": float, "updated_at": float,
                          "system_prompt": str, "settings": {str: JSON value},
                          "messages": [{"role": "system" | "user" | "assistant",
                                        "content": str, "status": <one of STATUSES>,
                                        "created_at": float,
                                        # an answer's, each only where known:
                                        "model": str,
                                        "figures": {"tokens": int, "tokens_per_s": float
                                                    | null, "ttft_s": float | null,
                                                    "ended": <one of ENDINGS>},
                                        "system_prompt": str}, ...]}}

    ``figures``: those of the version each message shows, by message id. A message's
    ``system_prompt`` is written only where it is not the conversation's; an answer with a
    ``model`` and none was made with the conversation's. ``model``, ``figures`` and an
    answer's ``system_prompt`` came later than version 1's first files: a reader that does not
    know them ignores them (tkchat's always did: :func:`parse_export` reads the fields it knows
    and no others), so the version stays 1; a file without them reads as before.

    Ids are not exported: an import always creates a new conversation. A reader must reject a
    ``version`` it does not know (a later version may change meanings, not only add fields).

    ``exported_at`` defaults to now. The store passes its own clock, so that every timestamp
    a store operation produces comes from one place (which tests replace with a counter).
    """
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": time.time() if exported_at is None else exported_at,
        "conversation": {
            "title": conversation.title,
            "created_at": conversation.created_at,
            "updated_at": conversation.updated_at,
            "system_prompt": conversation.system_prompt,
            "settings": dict(conversation.settings),
            "messages": [
                {
                    "role": m.role,
                    "content": m.content,
                    "status": m.status,
                    "created_at": m.created_at,
                    **made_with((figures or {}).get(m.id), conversation.system_prompt),
                }
                for m in messages
            ],
        },
    }


def made_with(figures: AnswerFigures | None, header_prompt: str) -> dict[str, Any]:
    """A message's ``model``, ``figures`` and ``system_prompt`` in the export (see
    :func:`to_export`): only those known, the prompt only where not ``header_prompt``."""
    if figures is None:
        return {}
    made: dict[str, Any] = {} if figures.model is None else {"model": figures.model}
    made["figures"] = {
        "tokens": figures.tokens,
        "tokens_per_s": figures.tokens_per_s,
        "ttft_s": figures.ttft_s,
        "ended": figures.ended,
    }
    if figures.system_prompt is not None and figures.system_prompt != header_prompt:
        made["system_prompt"] = figures.system_prompt
    return made


@dataclass(frozen=True, slots=True)
class ParsedExport:
    """A validated export, ready to insert."""

    title: str
    created_at: float
    system_prompt: str
    settings: str  # JSON text
    messages: tuple[tuple[str, str, str, float], ...]  # role, content, status, created_at
    # By message, as ``messages``: an answer's figures, model and system prompt, or None.
    figures: tuple[AnswerFigures | None, ...] = ()


def parse_export(
    data: Mapping[str, Any] | str | bytes, *, now: float | None = None
) -> ParsedExport:
    """Validate an export (pure; any thread). Raises ``StoreError(kind="invalid")`` whose text
    names the first problem, e.g. "conversation.messages[2].role must be one of ...". Missing
    optional fields get defaults (a missing time becomes ``now``, default: the current time,
    passed in by the store for the same reason as in :func:`to_export`); an answer saved while
    ``streaming`` imports as ``interrupted`` (nothing is streaming it any more)."""
    root = _load_json(data)
    _expect(root, Mapping, "the file", "a JSON object")
    if root.get("format") != EXPORT_FORMAT:
        raise _bad_file(f'"format" must be "{EXPORT_FORMAT}" (is this a tkchat export?)')
    version = root.get("version")
    if not is_int(version) or version < 1:
        raise _bad_file('"version" must be a whole number from 1')
    if version > EXPORT_VERSION:
        raise _bad_file(f"it was made by a newer tkchat (version {version})")
    conversation = root.get("conversation")
    _expect(conversation, Mapping, "conversation", "an object")
    if now is None:
        now = time.time()
    messages = conversation.get("messages", [])
    _expect(messages, list, "conversation.messages", "a list")
    settings = conversation.get("settings", {})
    _expect(settings, Mapping, "conversation.settings", "an object")
    try:
        settings_text = settings_json(settings)
    except StoreError as exc:
        raise _bad_file(f"conversation.settings: {exc}") from exc
    system_prompt = _field(conversation, "system_prompt", str, "conversation", "")
    return ParsedExport(
        title=clean_title(_field(conversation, "title", str, "conversation", DEFAULT_TITLE)),
        created_at=_time_field(conversation, "created_at", "conversation", now),
        system_prompt=system_prompt,
        settings=settings_text,
        messages=tuple(_parse_message(m, i, now) for i, m in enumerate(messages)),
        figures=tuple(_parse_made_with(m, i, system_prompt) for i, m in enumerate(messages)),
    )


def _load_json(data: Mapping[str, Any] | str | bytes) -> Any:
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _bad_file(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if isinstance(data, str):
        try:
            return json.loads(data)
        except json.JSONDecodeError as exc:
            raise _bad_file(f"it is not valid JSON ({exc.msg}, line {exc.lineno})") from exc
        except (ValueError, RecursionError) as exc:  # a number of thousands of digits; depth
            raise _bad_file(f"it is not a JSON tkchat reads ({cut(str(exc), 80)})") from exc
    return data


def _parse_message(message: object, index: int, now: float) -> tuple[str, str, str, float]:
    where = f"conversation.messages[{index}]"
    _expect(message, Mapping, where, "an object")
    assert isinstance(message, Mapping)
    role = message.get("role")
    if role not in ROLES:
        raise _bad_file(f"{where}.role must be one of {', '.join(ROLES)}, not {_quoted(role)}")
    status = message.get("status", "complete")
    if status not in STATUSES:
        raise _bad_file(
            f"{where}.status must be one of {', '.join(STATUSES)}, not {_quoted(status)}"
        )
    content = message.get("content")
    if not isinstance(content, str):
        raise _bad_file(f"{where}.content must be text")
    created_at = _time_field(message, "created_at", where, now)
    return role, content, "interrupted" if status == "streaming" else status, created_at


def _parse_made_with(message: Mapping[str, Any], index: int, header: str) -> AnswerFigures | None:
    """An answer's ``figures`` with its ``model`` and ``system_prompt`` (see
    :func:`to_export`); None for a message without figures (a file from before) or one that
    is not an answer. The store keeps the model and the prompt with the figures: without
    them, they are not read."""
    where = f"conversation.messages[{index}]"
    figures = message.get("figures")
    if figures is None or message.get("role") != "assistant":
        return None
    _expect(figures, Mapping, f"{where}.figures", "an object")
    tokens = figures.get("tokens")
    if not is_int(tokens) or tokens < 0:
        raise _bad_file(f"{where}.figures.tokens must be a whole number ≥ 0, not {_quoted(tokens)}")
    rates = [figures.get(name) for name in ("tokens_per_s", "ttft_s")]
    for name, value in zip(("tokens_per_s", "ttft_s"), rates, strict=True):
        if value is not None and not (is_number(value) and value >= 0):
            raise _bad_file(f"{where}.figures.{name} must be a number ≥ 0, not {_quoted(value)}")
    ended = figures.get("ended")
    if ended not in ENDINGS:
        raise _bad_file(
            f"{where}.figures.ended must be one of {', '.join(ENDINGS)}, not {_quoted(ended)}"
        )
    model = _field(message, "model", str, where, None) if "model" in message else None
    prompt = (
        _field(message, "system_prompt", str, where, None) if "system_prompt" in message else None
    )
    if prompt is None and model is not None:
        prompt = header  # written only where it differed (see to_export)
    speed, ttft = (None if value is None else float(value) for value in rates)
    return AnswerFigures(tokens, speed, ttft, ended, model, prompt)


def _expect(value: object, kind: type, where: str, described: str) -> None:
    if not isinstance(value, kind):
        raise _bad_file(f"{where} must be {described}, not {type(value).__name__}")


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str, default: Any) -> Any:
    value = obj.get(key, default)
    if not isinstance(value, kind):
        raise _bad_file(f"{where}.{key} must be {kind.__name__}, not {type(value).__name__}")
    return value


def _time_field(obj: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = obj.get(key, default)
    if not is_number(value):
        raise _bad_file(f"{where}.{key} must be a number of seconds, not {_quoted(value)}")
    return float(value)


def _quoted(value: object) -> str:
    """A value from the file in a sentence: bounded (a file may hold a megabyte there)."""
    if isinstance(value, str | int | float | bool) or value is None:
        shown = repr(value[:100] if isinstance(value, str) else value)
        return cut(shown if len(shown) < 4_300 else shown[:100], 60)
    return f"a {type(value).__name__}"


def _bad_file(problem: str) -> StoreError:
    return invalid(f"This is not a conversation tkchat can import: {problem}.")


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ExportStore",
    "ParsedExport",
    "close_fences",
    "made_with",
    "made_with_markdown",
    "parse_export",
    "to_export",
    "to_markdown",
]
