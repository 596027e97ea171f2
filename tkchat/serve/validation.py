"""Read a request body and turn it into a :class:`GenerationRequest`, or refuse it.

Every limit a client can hit before the model is touched lives here: the body size (413
``body_too_large``, enforced while reading, so a huge body is never held in memory), the
prompt size (413 ``prompt_too_long``), and the shape of the JSON (400 ``bad_request``,
with a message that names the offending field). Unknown keys are ignored on purpose:
OpenAI clients send many that mean nothing to a local model.

The same checks serve ``/chat`` and ``/v1/chat/completions``; the two differ only in
whether the conversation may be shortened to fit the context (``fit_context``).

:func:`read_json` is a coroutine on the server's event loop; the rest are plain functions
the handlers call there. None of them waits for the model.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from starlette.requests import ClientDisconnect, Request

from tkchat.conversation import Message, Sampling
from tkchat.generate.backend import GenerationRequest
from tkchat.serve.errors import RequestRejected, bad_request

ROLES = frozenset({"system", "user", "assistant"})


async def read_json(request: Request, limit: int) -> Any:
    """The body as JSON; 413 past ``limit`` bytes (checked before reading when the length is
    declared, and while reading when it is not), 400 if it is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    try:
        async for piece in request.stream():
            body += piece
            if len(body) > limit:
                raise _too_large(limit)
    except ClientDisconnect:
        # The client left mid-body, or the body deadline (serve/connections.py) closed the
        # socket: an answer nobody will read, not a server error to log with a traceback.
        raise RequestRejected(
            400, "client_disconnected", "The client left before its body was read."
        ) from None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise bad_request(f"The body is not valid JSON: {exc}") from exc
    except ValueError as exc:
        # Python refuses to convert an integer of more than 4,300 digits (a guard against
        # its quadratic int parsing); no field of ours needs one, so it is the client's error.
        raise bad_request(
            "The body is not valid JSON for this server: a number in it is too long."
        ) from exc


def _too_large(limit: int) -> RequestRejected:
    return RequestRejected(413, "body_too_large", f"The request body is over {limit} bytes.")


def parse_chat_request(
    payload: Any, max_prompt_chars: int, *, fit_context: bool = True
) -> GenerationRequest:
    """A JSON body (``/chat`` or the OpenAI shape) as a request for the worker, or 400/413.
    ``fit_context``: see :class:`GenerationRequest` (``/chat`` fits, the OpenAI API does not)."""
    if not isinstance(payload, dict):
        raise bad_request("The body must be a JSON object.")
    messages = _parse_messages(payload.get("messages"))
    chars = sum(len(m.content) for m in messages)
    if chars > max_prompt_chars:
        raise RequestRejected(
            413,
            "prompt_too_long",
            f"The messages hold {chars} characters; this server accepts at most "
            f"{max_prompt_chars}. Shorten the conversation.",
        )
    return GenerationRequest(messages, _parse_sampling(payload), fit_context=fit_context)


def parse_stream_flag(payload: dict[str, Any]) -> bool:
    """The OpenAI ``stream`` switch (absent means false); 400 unless it is a JSON boolean."""
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request('"stream" must be true or false.')
    return stream


def _parse_messages(value: Any) -> tuple[Message, ...]:
    if not isinstance(value, list) or not value:
        raise bad_request('"messages" must be a non-empty list of {"role", "content"} objects.')
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise bad_request(f"messages[{index}] must be an object.")
        role = item.get("role")
        if role not in ROLES:
            raise bad_request(f"messages[{index}].role must be one of system, user, assistant.")
        messages.append(Message(role, _parse_content(item.get("content"), index)))
    return tuple(messages)


def _parse_content(value: Any, index: int) -> str:
    if isinstance(value, str):
        return _unicode_text(value, index)
    # OpenAI clients may send content as a list of parts; text parts are all a text model reads.
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in value
    ):
        return _unicode_text("".join(p["text"] for p in value), index)
    raise bad_request(f"messages[{index}].content must be a string.")


def _unicode_text(text: str, index: int) -> str:
    """``text`` if it is real Unicode. JSON lets a client write a lone surrogate
    (``"\\ud800"``) that is no character at all: the tokenizer would fail on it mid-request,
    so it is refused here, before the model is touched."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(exc.object[exc.start])
            raise bad_request(
                f"messages[{index}].content holds a lone surrogate (\\u{code:04x} at character"
                f" {exc.start}), which is not a Unicode character."
            ) from exc
    return text


def _parse_sampling(payload: dict[str, Any]) -> Sampling:
    default = Sampling()
    max_tokens = payload.get("max_tokens", payload.get("max_completion_tokens"))
    seed = payload.get("seed")
    if seed is not None and not _is_int(seed):
        raise bad_request('"seed" must be an integer or null.')
    if seed is not None and not 0 <= seed < 2**32:
        raise bad_request('"seed" must be between 0 and 4294967295.')
    return Sampling(
        temperature=_number(
            "temperature", payload.get("temperature"), default.temperature, 0.0, 5.0
        ),
        top_p=_number("top_p", payload.get("top_p"), default.top_p, 0.0, 1.0),
        max_tokens=int(
            _number("max_tokens", max_tokens, default.max_tokens, 1, 1 << 20, integer=True)
        ),
        seed=seed,
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not 1


def _number(
    name: str, value: Any, default: float, low: float, high: float, *, integer: bool = False
) -> float:
    """An optional number within [low, high]; ``default`` when absent or null. The value is
    returned as sent (an int stays an int)."""
    if value is None:
        return default
    if _is_int(value) or (not integer and isinstance(value, float)):
        if not low <= value <= high:
            raise bad_request(f'"{name}" must be between {low:g} and {high:g}.')
        return value
    raise bad_request(f'"{name}" must be {"an integer" if integer else "a number"}.')
