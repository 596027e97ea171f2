"""The OpenAI-compatible wire protocol: ``POST /v1/chat/completions`` with ``stream: true``.

Spoken by llama.cpp's server, llama-cpp-python's, Ollama, vLLM and LM Studio. ``GET
/v1/models`` lists the models (the first is used when the user named none); each streamed
``chat.completion.chunk`` carries a piece of text in ``choices[0].delta.content``, and the
stream ends with ``data: [DONE]``. Such a server applies no context policy of ours, and
tells nothing of its context size.

llama.cpp's server (it lists its models as ``"owned_by": "llamacpp"``) also reports how far
it has read a long prompt when the request asks (``"return_progress": true``): chunks with
``"prompt_progress": {"total", "cache", "processed", "time_ms"}``. Other servers are never
asked, and a server that sends none is fine: progress is a bonus, never required.

The functions are pure or run on the worker (or loader) thread that reads the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tkchat.events import FinishReason
from tkchat.generate.backend import GenerationRequest, PromptProgress, TokenStream
from tkchat.generate.remote.errors import (
    RemoteError,
    bad_stream,
    closed_mid_answer,
    error_detail,
    snippet,
)
from tkchat.transport.sse import SSEMessage

MODELS_PATH = "/v1/models"
CHAT_PATH = "/v1/chat/completions"


def served_models(status: int, body: Any, base_url: str) -> list[str]:
    """Loader thread. The model ids of a ``GET /v1/models`` answer (possibly none); raises
    RemoteError when the server is not ready or is not OpenAI-compatible at all."""
    if status not in (200, 404, 405):  # e.g. 503 while llama.cpp's server loads
        raise RemoteError(
            f"The server at {base_url} is not ready: GET {MODELS_PATH} "
            f"answered {status}{error_detail(body)}",
            kind="server_error",
        )
    if status != 200 or not isinstance(body, dict) or "data" not in body:
        answer = f"answered {status}" if status != 200 else "did not answer a list of models"
        raise RemoteError(
            f"The server at {base_url} is neither tkchat nor OpenAI-compatible: "
            f"GET {MODELS_PATH} {answer}",
            kind="server_error",
        )
    data = body.get("data")
    if not isinstance(data, list):
        return []
    return [str(item["id"]) for item in data if isinstance(item, dict) and item.get("id")]


def is_llama_cpp(models: Any) -> bool:
    """Whether a ``GET /v1/models`` answer comes from llama.cpp's server."""
    data = models.get("data") if isinstance(models, dict) else None
    return isinstance(data, list) and any(
        isinstance(item, dict) and item.get("owned_by") == "llamacpp" for item in data
    )


def request_body(
    request: GenerationRequest, model: str | None, *, progress: bool = False
) -> dict[str, Any]:
    """The JSON of a streaming chat completion, with only the standard OpenAI fields: strict
    servers reject unknown ones (top_k and repeat_penalty have the same defaults in llama.cpp's
    and llama-cpp-python's servers). ``progress``: also ask llama.cpp's server for
    ``return_progress``."""
    sampling = request.sampling
    body: dict[str, Any] = {
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "stream": True,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
    }
    if model is not None:
        body["model"] = model
    if sampling.max_tokens:  # 0 means "no limit" in tkchat; servers want it left out
        body["max_tokens"] = sampling.max_tokens
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if request.stop:  # the server stops there too; the worker enforces them all the same
        body["stop"] = list(request.stop)
    if request.json_format is not None:  # JSON mode: the server constrains its own sampling
        body["response_format"] = json.loads(request.json_format.wire)
    if progress:
        body["return_progress"] = True
    return body


def prompt_progress(chunk: dict[str, Any]) -> PromptProgress | None:
    """llama.cpp's ``prompt_progress`` of a chunk (``processed`` counts the cached tokens
    too, as tkchat's ``done`` does); None when absent or not two sane integers."""
    report = chunk.get("prompt_progress")
    if not isinstance(report, dict):
        return None
    done, total = report.get("processed"), report.get("total")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (done, total)):
        return None
    assert isinstance(done, int) and isinstance(total, int)  # (for mypy)
    return PromptProgress(done, total) if 0 <= done <= total else None


@dataclass(frozen=True)
class ChunkParts:
    """What one ``chat.completion.chunk`` says: llama.cpp's prompt progress (if any), a piece
    of text (possibly empty), and the finish reason (once, on the last one)."""

    progress: PromptProgress | None = None
    text: str = ""
    finish: str | None = None


def read_chunk(data: str) -> ChunkParts | None:
    """One data line of the stream, read: None for ``[DONE]``; raises RemoteError for a
    broken line or a failure the server reports mid-stream. Pure: the worker's reader
    (:func:`answer_text`) and the asyncio client's (``tkchat/aio/remote_source.py``) use it."""
    if data.strip() == "[DONE]":
        return None
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise bad_stream(f"a data line is not JSON ({exc}): {snippet(data)}") from exc
    except RecursionError as exc:  # thousands of nested brackets
        raise bad_stream(f"a data line is JSON nested too deeply: {snippet(data)}") from exc
    if not isinstance(chunk, dict):
        raise bad_stream(f"a data line is not a JSON object: {snippet(data)}")
    if chunk.get("error"):  # llama.cpp and vLLM report a failure mid-stream like this
        raise RemoteError("The server reported an error" + error_detail(chunk), kind="server_error")
    # the progress chunk's choices, if any, carry an empty delta: read on as usual
    progress = prompt_progress(chunk)
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise bad_stream(f"a chunk has no choices: {snippet(data)}")
    if not choices:
        return ChunkParts(progress)  # e.g. the usage summary some servers send last
    choice = choices[0]
    if not isinstance(choice, dict):
        raise bad_stream(f"a choice is not a JSON object: {snippet(data)}")
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    finish = str(choice["finish_reason"]) if choice.get("finish_reason") else None
    return ChunkParts(progress, content if isinstance(content, str) else "", finish)


def ended(finish: str | None) -> FinishReason:
    """The answer's end, as the last finish reason the server gave says."""
    return "length" if finish == "length" else "stop"


def answer_text(messages: Iterator[SSEMessage]) -> TokenStream:
    """Worker thread. ``choices[0].delta.content`` of each chunk as UTF-8, until ``[DONE]``;
    returns "length" when the server cut the answer there, else "stop"."""
    finish: str | None = None
    for message in messages:
        parts = read_chunk(message.data)
        if parts is None:
            return ended(finish)
        if parts.progress is not None:
            yield parts.progress
        if parts.text:
            yield parts.text.encode("utf-8")
        finish = parts.finish or finish
    if finish is not None:
        # The answer itself was complete (a finish_reason came); only the [DONE] is missing,
        # which some servers omit. Losing a finished answer over that would help nobody.
        return ended(finish)
    raise closed_mid_answer()
