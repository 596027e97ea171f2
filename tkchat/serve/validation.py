"""Read a request body and turn it into a :class:`GenerationRequest`, or refuse it.

Every limit a client can hit before the model is touched lives here: the body size (413
``body_too_large``, enforced while reading, so a huge body is never held in memory), the
prompt size (413 ``prompt_too_long``), and the shape of the JSON (400 ``bad_request``, whose
``param`` names the offending field). The ranges are OpenAI's (``temperature`` 0-2, ``top_p``
0-1, ``stop`` at most four strings...), so a request that OpenAI would refuse is refused here
too, rather than run with a value clipped in silence.

The OpenAI endpoint also refuses what tkchat does not do (:func:`refuse_unsupported`: ``n`` >
1, ``tools``, ``logprobs``...) with ``code`` ``unsupported_parameter`` or
``unsupported_value``: a client asking for a tool call must not get prose in its place.
``response_format`` (JSON mode) is read by :mod:`tkchat.serve.json_mode`. Other unknown keys
are ignored on purpose: OpenAI clients send many that mean nothing to a local model
(``model``, ``store``, ``metadata``...).

:func:`read_json` is a coroutine on the server's event loop; the rest are plain functions
the handlers call there. None of them waits for the model.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from starlette.requests import ClientDisconnect, Request

from tkchat.conversation import SEED_MAX, TEMPERATURE_RANGE, Message, Sampling
from tkchat.generate.backend import GenerationRequest
from tkchat.limits import MAX_STOP_CHARS, MAX_STOP_STRINGS
from tkchat.serve.errors import RequestRejected, bad_request

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
MAX_ANSWER_TOKENS = 1 << 20  # what a request may ask for; the server's own cap is lower
MAX_USER_CHARS = 256  # the OpenAI ``user`` field, which names a client in the line
# An oversized body is read (and dropped) up to this many bytes, so that its 413 reaches the
# client; one declared longer is refused at once.
DRAIN_MAX_BYTES = 16 << 20


async def read_json(request: Request, limit: int) -> Any:
    """The body as JSON; 413 past ``limit`` bytes (once it is read, up to
    :data:`DRAIN_MAX_BYTES`; at once if its declared length is over that), 400 if it is not
    JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > DRAIN_MAX_BYTES:
        raise _too_large(limit)
    body = bytearray()
    received = 0
    try:
        async for piece in request.stream():
            received += len(piece)
            if received <= limit:
                body += piece
            elif received > DRAIN_MAX_BYTES:
                break
        # Over the limit: the rest was read and dropped before the 413. Answered and closed
        # with the body unread, the connection is reset, and a client still sending sees
        # that instead of the 413 (an OpenAI client posting a 4 MB chat did, 2026-12-05).
        if received > limit:
            raise _too_large(limit)
    except ClientDisconnect:
        # The client left mid-body, or the body deadline (serve/connections.py) closed the
        # socket: an answer nobody will read, not a server error to log with a traceback.
        raise RequestRejected(
            400, "client_disconnected", "The client left before its body was read."
        ) from None
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise bad_request(
            f"The body is not UTF-8 text (byte {exc.start} is not): send JSON in UTF-8.",
            code="invalid_json",
        ) from None
    except RecursionError:
        raise bad_request(
            "The body's JSON nests too deeply to read: no field of a request needs that.",
            code="invalid_json",
        ) from None
    except json.JSONDecodeError as exc:
        raise bad_request(
            f"The body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
            code="invalid_json",
        ) from None
    except ValueError as exc:
        # Python refuses to convert an integer of more than 4,300 digits (a guard against
        # its quadratic int parsing); no field of ours needs one, so it is the client's error.
        raise bad_request(
            "The body is not valid JSON for this server: a number in it is too long.",
            code="invalid_json",
        ) from exc


def _too_large(limit: int) -> RequestRejected:
    return RequestRejected(
        413, "body_too_large", f"The request body is over {limit} bytes.", code="request_too_large"
    )


def parse_chat_request(
    payload: Any, max_prompt_chars: int, *, fit_context: bool = True
) -> GenerationRequest:
    """A JSON body (``/chat`` or the OpenAI shape) as a request for the worker, or 400/413.
    ``fit_context``: see :class:`GenerationRequest` (``/chat`` fits, the OpenAI API does not)."""
    if not isinstance(payload, dict):
        raise bad_request("The body must be a JSON object.", code="invalid_type")
    messages = _parse_messages(payload.get("messages"))
    chars = sum(len(m.content) for m in messages)
    if chars > max_prompt_chars:
        raise RequestRejected(
            413,
            "prompt_too_long",
            f"The messages hold {chars} characters; this server accepts at most "
            f"{max_prompt_chars}. Shorten the conversation.",
            param="messages",
        )
    return GenerationRequest(
        messages,
        _parse_sampling(payload),
        fit_context=fit_context,
        stop=_parse_stop(payload.get("stop")),
    )


def parse_stream_flags(payload: dict[str, Any]) -> tuple[bool, bool]:
    """The OpenAI ``stream`` switch (absent means false) and ``stream_options.include_usage``
    (a last chunk with the token counts); 400 unless both are JSON booleans, and for options
    without a stream, as OpenAI answers."""
    stream = payload.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad_request('"stream" must be true or false.', "stream", "invalid_type")
    options = payload.get("stream_options")
    if options is None:
        return stream, False
    if not isinstance(options, dict):
        raise bad_request('"stream_options" must be an object.', "stream_options", "invalid_type")
    if not stream:
        raise bad_request(
            '"stream_options" is only allowed when "stream" is true.', "stream_options"
        )
    usage = options.get("include_usage", False)
    if not isinstance(usage, bool):
        raise bad_request(
            '"stream_options.include_usage" must be true or false.',
            "stream_options.include_usage",
            "invalid_type",
        )
    return stream, usage


def parse_user(payload: dict[str, Any]) -> str | None:
    """The OpenAI ``user`` field (which end user asks): a client's name in the line."""
    user = payload.get("user")
    if user is None:
        return None
    if not isinstance(user, str) or len(user) > MAX_USER_CHARS:
        raise bad_request(
            f'"user" must be a string of at most {MAX_USER_CHARS} characters.', "user"
        )
    return user or None


# What OpenAI has and tkchat does not, each with the values that ask for nothing
# (clients often send those: an empty tool list, ``n`` 1).
_UNSUPPORTED: dict[str, tuple[Any, ...]] = {
    "n": (None, 1),
    "tools": (None, []),
    "tool_choice": (None, "none"),
    "functions": (None, []),
    "function_call": (None, "none"),
    "parallel_tool_calls": (None, True, False),
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "logit_bias": (None, {}),
    "frequency_penalty": (None, 0, 0.0),
    "presence_penalty": (None, 0, 0.0),
    "modalities": (None, ["text"]),
    "audio": (None,),
    "prediction": (None,),
}


def refuse_unsupported(payload: dict[str, Any]) -> None:
    """400 for a feature of the OpenAI API this server does not have (see the module)."""
    for name, harmless in _UNSUPPORTED.items():
        value = payload.get(name)
        if any(value == ok and type(value) is type(ok) for ok in harmless):
            continue
        code = "unsupported_value" if name == "n" else "unsupported_parameter"
        raise bad_request(
            f'"{name}" is not supported by this server (tkchat serve: one local chat model, '
            f"one answer per request, without tools): {_shown(value)}.",
            name,
            code,
        )


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def _parse_messages(value: Any) -> tuple[Message, ...]:
    if value is None:
        raise bad_request('"messages" is required.', "messages", "missing_required_parameter")
    if not isinstance(value, list) or not value:
        raise bad_request(
            '"messages" must be a non-empty list of {"role", "content"} objects.', "messages"
        )
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise bad_request(f"messages[{index}] must be an object.", f"messages[{index}]")
        name = item.get("role")
        role = ROLES.get(name) if isinstance(name, str) else None
        if role is None:
            raise bad_request(
                f"messages[{index}].role must be one of system, developer, user, assistant.",
                f"messages[{index}].role",
            )
        messages.append(Message(role, _parse_content(item.get("content"), index)))
    return tuple(messages)


def _parse_content(value: Any, index: int) -> str:
    name = f"messages[{index}].content"
    if isinstance(value, str):
        return _unicode_text(value, name)
    # OpenAI clients may send content as a list of parts; text parts are all a text model reads.
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in value
    ):
        return _unicode_text("".join(p["text"] for p in value), name)
    raise bad_request(f"{name} must be a string.", name, "invalid_type")


def _unicode_text(text: str, name: str) -> str:
    """``text`` if it is real Unicode. JSON lets a client write a lone surrogate
    (``"\\ud800"``) that is no character at all: the tokenizer would fail on it mid-request,
    so it is refused here, before the model is touched."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(exc.object[exc.start])
            raise bad_request(
                f"{name} holds a lone surrogate (\\u{code:04x} at character"
                f" {exc.start}), which is not a Unicode character.",
                name,
            ) from exc
    return text


def _parse_stop(value: Any) -> tuple[str, ...]:
    """``stop``: null, a string, or a list of at most four strings (empty ones mean nothing)."""
    if value is None:
        return ()
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise bad_request('"stop" must be a string or a list of strings.', "stop", "invalid_type")
    if len(stops) > MAX_STOP_STRINGS:
        raise bad_request(f'"stop" may hold at most {MAX_STOP_STRINGS} strings.', "stop")
    for stop in stops:
        if len(stop) > MAX_STOP_CHARS:
            raise bad_request(
                f'Each "stop" string may be at most {MAX_STOP_CHARS} characters.', "stop"
            )
        _unicode_text(stop, "stop")
    return tuple(s for s in stops if s)


def _parse_sampling(payload: dict[str, Any]) -> Sampling:
    default = Sampling()
    seed = payload.get("seed")
    if seed is not None and not _is_int(seed):
        raise bad_request('"seed" must be an integer or null.', "seed", "invalid_type")
    if seed is not None and not 0 <= seed <= SEED_MAX:
        raise bad_request(f'"seed" must be between 0 and {_figure(SEED_MAX)}.', "seed")
    # max_completion_tokens is OpenAI's newer name for max_tokens; it wins when both are sent.
    length = (
        "max_completion_tokens"
        if payload.get("max_completion_tokens") is not None
        else ("max_tokens")
    )
    low, high = TEMPERATURE_RANGE
    return Sampling(
        temperature=_number("temperature", payload, default.temperature, low, high),
        top_p=_number("top_p", payload, default.top_p, 0.0, 1.0),
        max_tokens=int(
            _number(length, payload, default.max_tokens, 1, MAX_ANSWER_TOKENS, integer=True)
        ),
        seed=seed,
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not 1


def _figure(bound: float) -> str:
    """A range's end as a person reads it: a whole number in full with thousands separators
    (``1,048,576``, never ``1.04858e+06`` as ``:g`` writes it), a fraction as Python writes
    it (``0.5``)."""
    if float(bound).is_integer():
        return f"{int(bound):,}"
    return repr(float(bound))


def _number(
    name: str,
    payload: dict[str, Any],
    default: float,
    low: float,
    high: float,
    *,
    integer: bool = False,
) -> float:
    """The optional number ``payload[name]`` within [low, high]; ``default`` when absent or
    null. The value is returned as sent (an int stays an int)."""
    value = payload.get(name)
    if value is None:
        return default
    if _is_int(value) or (not integer and isinstance(value, float)):
        if not low <= value <= high:
            raise bad_request(
                f'"{name}" must be between {_figure(low)} and {_figure(high)}, not {value}.', name
            )
        return value
    raise bad_request(
        f'"{name}" must be {"an integer" if integer else "a number"}.', name, "invalid_type"
    )
