"""tkchat's generation events in the shapes the OpenAI chat API uses, so that existing
OpenAI clients can talk to ``tkchat serve``.

Streamed (``stream: true``): ``chat.completion.chunk`` frames, first the role, then the
text, then an empty delta carrying ``finish_reason``; with ``stream_options.include_usage``,
every chunk carries ``"usage": null`` and one more chunk with no choices carries the token
counts; then ``data: [DONE]``. tkchat's ``progress`` events have no place in that shape and
are left out; a place in the line becomes a comment (``: queued, 3rd in line``), which
clients skip and which keeps the connection alive while the request waits. An error in
mid-stream is a ``data: {"error": ...}`` frame followed by ``[DONE]``, which is what vLLM
does. Not streamed: one ``chat.completion`` object with its ``usage``, or an error object
(400 ``context_length_exceeded`` for a prompt too long for the context, 500 for anything
else).

``usage`` counts what the worker counted: ``prompt_tokens`` the context tokens the model read
(an estimate when the model is behind another server, which alone has the tokenizer),
``completion_tokens`` the tokens generated.

Pure functions of their arguments (the SSE framing itself is
:mod:`tkchat.transport.sse`); the handlers call them on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tkchat.events import Chunk, Done, Error, GenerationStats, Progress, QueuePlace
from tkchat.serve.errors import error_object
from tkchat.transport.sse import (
    OPENAI_DONE,
    encode_comment,
    openai_chunk,
    openai_error,
    openai_frame,
)

News = Chunk | Progress | Done | Error | QueuePlace


@dataclass(frozen=True)
class OpenAIIds:
    """What every chunk of one OpenAI-style completion repeats."""

    completion_id: str
    model: str
    created: int
    include_usage: bool = False  # stream_options.include_usage: a last chunk with usage

    def chunk(self, **delta: str | None) -> bytes:
        return openai_chunk(
            self.completion_id,
            self.model,
            self.created,
            usage_field=self.include_usage,
            **delta,
        )

    def usage_chunk(self, stats: GenerationStats) -> bytes:
        payload = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage(stats),
        }
        return openai_frame(payload)


def stream_frame(ids: OpenAIIds, event: News) -> bytes:
    """The SSE bytes for one piece of news in a streamed completion (none for progress); a
    final event ends the stream."""
    if isinstance(event, Chunk):
        return ids.chunk(content=event.text)
    if isinstance(event, Progress):
        return b""
    if isinstance(event, QueuePlace):
        return encode_comment(f"queued, {ordinal(event.position)} in line")
    if isinstance(event, Error):
        status, error = _error(event)
        return openai_error(error) + OPENAI_DONE
    end = ids.chunk(finish_reason=_finish_reason(event))
    if ids.include_usage:
        end += ids.usage_chunk(event.stats)
    return end + OPENAI_DONE


def completion(ids: OpenAIIds, content: str, final: Done | None) -> dict[str, Any]:
    """The ``chat.completion`` object of a whole answer that ended with ``final``."""
    return {
        "id": ids.completion_id,
        "object": "chat.completion",
        "created": ids.created,
        "model": ids.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": _finish_reason(final),
            }
        ],
        "usage": usage(final.stats if final is not None else GenerationStats()),
    }


def usage(stats: GenerationStats) -> dict[str, int]:
    return {
        "prompt_tokens": stats.prompt_tokens,
        "completion_tokens": stats.tokens,
        "total_tokens": stats.prompt_tokens + stats.tokens,
    }


def completion_error(error: Error) -> tuple[int, dict[str, Any]]:
    """The status and body of a completion that ended in ``error`` (not streamed)."""
    status, body = _error(error)
    return status, {"error": body}


def _error(error: Error) -> tuple[int, dict[str, Any]]:
    if error.kind in ("context_overflow", "prompt_cap"):  # (both: the prompt is too long)
        return 400, error_object(
            400, error.kind, error.message, param="messages", code="context_length_exceeded"
        )
    if error.kind == "upstream_refused":  # the server behind --server refused the request
        return 400, error_object(400, error.kind, error.message)
    return 500, error_object(500, error.kind, error.message)


def model_object(model: str, created: int) -> dict[str, Any]:
    """One model as ``GET /v1/models`` lists it."""
    return {"id": model, "object": "model", "created": created, "owned_by": "tkchat"}


def model_list(model: str, created: int) -> dict[str, Any]:
    """``GET /v1/models``: the one model this server has."""
    return {"object": "list", "data": [model_object(model, created)]}


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st... (English: the comment is for people reading raw
    streams; the page says it in the reader's language)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _finish_reason(final: Done | None) -> str:
    # "cancelled" has no OpenAI name; only a client that left (or a shutdown) causes it.
    return "length" if final is not None and final.reason == "length" else "stop"
