"""The wire protocol of ``tkchat serve``: the app's own event contract over SSE.

``GET /health`` names the server (``{"server": "tkchat", ...}``) and its model, context
size and the largest chat ``POST /chat`` takes (characters, and bytes of JSON: a long
chat's oldest turns are left out of what is sent, :func:`within_limits`); ``POST /chat``
answers a chat with the same ``chunk`` / ``done`` / ``error`` events the worker sends
in-process, one ``data:`` line each. Because both ends share the contract, a
server-side error keeps its ``kind`` (``per_client``, ``line_full``, ``context_overflow``...)
on the client. While a request waits in the server's line, the server also sends its place
(an SSE event named ``queued``): the window does not show it, and skips it.

The functions are pure or run on the worker thread that reads the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from tkchat.conversation import Message
from tkchat.events import Chunk, Done, Error, Progress
from tkchat.generate.backend import GenerationRequest, PromptProgress, TokenStream
from tkchat.generate.remote.errors import RemoteError, bad_stream, closed_mid_answer
from tkchat.limits import MAX_N_CTX
from tkchat.transport.sse import SSEMessage, parse_event

HEALTH_PATH = "/health"
# What a tkchat server takes when its /health does not say (its defaults: tkchat serve).
DEFAULT_MAX_PROMPT_CHARS = 32_000
DEFAULT_MAX_BODY_BYTES = 64_000
_BODY_ROOM = 1_000  # bytes of a body besides its messages' texts: sampling, stop, keys
_MESSAGE_ROOM = 40  # bytes of one message besides its text: {"role": ..., "content": ...}
CHAT_PATH = "/chat"


def is_tkchat(status: int, health: Any) -> bool:
    """Whether the answer to ``GET /health`` comes from ``tkchat serve``."""
    return status == 200 and isinstance(health, dict) and health.get("server") == "tkchat"


def context_size(health: dict[str, Any]) -> int | None:
    """The model's context size from a tkchat ``/health`` (older servers nest it); None when
    absent or not believable (over :data:`~tkchat.limits.MAX_N_CTX`: the context meter and
    the token estimates would divide by a lie)."""
    for holder in (health, health.get("model"), health.get("backend")):
        if isinstance(holder, dict):
            value = holder.get("n_ctx")
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_N_CTX:
                return value
    return None


def model_name(health: dict[str, Any]) -> str | None:
    """The name of the model a tkchat server runs, from its ``/health``."""
    for key in ("model", "backend", "name"):
        value = health.get(key)
        if isinstance(value, dict):
            value = value.get("name")
        if isinstance(value, str) and value:
            return value
    return None


def limits(health: dict[str, Any]) -> tuple[int, int]:
    """The largest chat the server's ``POST /chat`` takes: its characters and its body's
    bytes (a server that does not say: tkchat serve's defaults)."""

    def said(key: str, default: int) -> int:
        value = health.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return default

    return (
        said("max_prompt_chars", DEFAULT_MAX_PROMPT_CHARS),
        said("max_body_bytes", DEFAULT_MAX_BODY_BYTES),
    )


def within_limits(
    messages: Sequence[Message], max_chars: int, max_bytes: int
) -> tuple[Message, ...]:
    """The system prompt and the newest whole turns of ``messages`` that the server takes:
    at most ``max_chars`` characters, and a body of at most ``max_bytes`` (JSON's escapes
    counted: a Chinese character is six bytes there). The newest message always goes (the
    server says so if it alone is too long). The server then fits what it got into its
    model's context, with its own tokenizer. Worker thread; pure."""
    system = tuple(messages[:1]) if messages and messages[0].role == "system" else ()
    rest = messages[len(system) :]
    chars = sum(len(m.content) for m in system)
    size = _BODY_ROOM + sum(_bytes(m) for m in system)
    # From the newest back while they fit (only what is kept is measured: a long chat's
    # whole JSON is not made on every question and every measure of the meter).
    start = len(rest)
    while start > 0:
        message = rest[start - 1]
        chars += len(message.content)
        size += _bytes(message)
        if start < len(rest) and (chars > max_chars or size > max_bytes):
            break
        start -= 1
    # Whole turns only, as the context policy (generate/context.py): a chat that starts
    # with the assistant's turn is refused by many chat templates. (One that fits whole
    # goes as it is.)
    while 0 < start < len(rest) - 1 and rest[start].role != "user":
        start += 1
    return (*system, *rest[start:])


def _bytes(message: Message) -> int:
    return len(json.dumps(message.content)) + _MESSAGE_ROOM


def request_body(request: GenerationRequest) -> dict[str, Any]:
    """The JSON of ``POST /chat``. The server fits the chat into its context itself."""
    sampling = request.sampling
    body: dict[str, Any] = {
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
    }
    if sampling.max_tokens:  # 0 means "no limit" in tkchat: the server's own default
        body["max_tokens"] = sampling.max_tokens
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if request.stop:  # the server stops there too; the worker enforces them all the same
        body["stop"] = list(request.stop)
    return body


def answer_text(messages: Iterator[SSEMessage]) -> TokenStream:
    """Worker thread. The text of ``chunk`` events as UTF-8 (and ``progress`` as it is);
    ``done`` ends the stream with its reason, ``error`` raises with the server's kind, and an
    end without either is a connection lost mid-answer."""
    for message in messages:
        if message.event not in (None, "", "message"):
            continue  # an event type this client does not know (e.g. a queue position)
        try:
            event = parse_event(message)
        except ValueError as exc:
            raise bad_stream(str(exc)) from exc
        if isinstance(event, Chunk):
            if event.text:
                yield event.text.encode("utf-8")
        elif isinstance(event, Progress):
            yield PromptProgress(event.done, event.total)
        elif isinstance(event, Done):
            return event.reason
        elif isinstance(event, Error):
            raise RemoteError(event.message, kind=event.kind)
    raise closed_mid_answer()
