"""tkchat's generation events in the shapes the OpenAI chat API uses, so that existing
OpenAI clients can talk to ``tkchat serve``.

Streamed (``stream: true``): ``chat.completion.chunk`` frames, first the role, then the
text, then an empty delta carrying ``finish_reason``, then ``data: [DONE]``. (tkchat's
``progress`` events have no place in that shape: they are left out, and the stream stays
standard.) An error in
mid-stream is a ``data: {"error": ...}`` frame followed by ``[DONE]``, which is what vLLM
does. Not streamed: one ``chat.completion`` object, or an error object with status 400 for
a prompt too long for the context and 500 for anything else.

Pure functions of their arguments (the SSE framing itself is
:mod:`tkchat.transport.sse`); the handlers call them on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tkchat.events import Chunk, Done, Error, GenerationEvent, Progress
from tkchat.transport.sse import OPENAI_DONE, openai_chunk, openai_error


@dataclass(frozen=True)
class OpenAIIds:
    """What every chunk of one OpenAI-style completion repeats."""

    completion_id: str
    model: str
    created: int

    def chunk(self, **delta: str | None) -> bytes:
        return openai_chunk(self.completion_id, self.model, self.created, **delta)


def stream_frame(ids: OpenAIIds, event: GenerationEvent) -> bytes:
    """The SSE bytes for one event of a streamed completion (none for a progress event); a
    final event ends the stream."""
    if isinstance(event, Chunk):
        return ids.chunk(content=event.text)
    if isinstance(event, Progress):
        return b""
    if isinstance(event, Error):
        return openai_error(event.kind, event.message) + OPENAI_DONE
    return ids.chunk(finish_reason=_finish_reason(event)) + OPENAI_DONE


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
    }


def completion_error(error: Error) -> tuple[int, dict[str, Any]]:
    """The status and body of a completion that ended in ``error`` (not streamed)."""
    status = 400 if error.kind == "context_overflow" else 500
    return status, {"error": {"message": error.message, "type": error.kind, "kind": error.kind}}


def model_list(model: str, created: int) -> dict[str, Any]:
    """``GET /v1/models``: the one model this server has."""
    return {
        "object": "list",
        "data": [
            {
                "id": model,
                "object": "model",
                "created": created,
                "owned_by": "tkchat",
            },
        ],
    }


def _finish_reason(final: Done | None) -> str:
    # "cancelled" has no OpenAI name; only a client that left (or a shutdown) causes it.
    return "length" if final is not None and final.reason == "length" else "stop"
