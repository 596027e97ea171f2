"""The wire protocol of ``tkchat serve``: the app's own event contract over SSE.

``GET /health`` names the server (``{"server": "tkchat", ...}``) and its model and context
size; ``POST /chat`` answers a chat with the same ``chunk`` / ``done`` / ``error`` events the
worker sends in-process, one ``data:`` line each. Because both ends share the contract, a
server-side error keeps its ``kind`` (``per_client``, ``line_full``, ``context_overflow``...)
on the client. While a request waits in the server's line, the server also sends its place
(an SSE event named ``queued``): the window does not show it, and skips it.

The functions are pure or run on the worker thread that reads the stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tkchat.events import Chunk, Done, Error, Progress
from tkchat.generate.backend import GenerationRequest, PromptProgress, TokenStream
from tkchat.generate.remote.errors import RemoteError, bad_stream, closed_mid_answer
from tkchat.limits import MAX_N_CTX
from tkchat.transport.sse import SSEMessage, parse_event

HEALTH_PATH = "/health"
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
