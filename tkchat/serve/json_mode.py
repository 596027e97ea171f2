"""JSON mode of the OpenAI endpoint: ``response_format`` read, checked, and made a grammar.

``{"type": "text"}`` (or none) is plain text, as always. ``{"type": "json_object"}`` and
``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` ask for JSON, and
how they are honoured depends on the backend (:data:`~tkchat.generate.backend.JsonSupport`):

- the local model samples under a grammar (:mod:`tkchat.generate.json_grammar`), so its
  answer is valid JSON — of the schema, for ``json_schema`` — unless ``max_tokens`` cuts it
  first (``finish_reason`` is then ``"length"``, as OpenAI's);
- an OpenAI-compatible server behind ``--server`` gets ``response_format`` as it was sent,
  and decides (a refusal of its own reaches the client as a server error quoting it);
- the scripted backend, a replay, and a tkchat server behind ``--server`` cannot: 400
  ``unsupported_value``, rather than prose where a client expects JSON.

A schema that cannot become a grammar is a 400 whose message says why. ``strict`` is read
(it must be a boolean) but changes nothing: a grammar is always strict.

:func:`parse_response_format` is a pure function; :func:`json_format_for` is a coroutine on
the server's event loop that builds the grammar on a thread of the loop's pool (a big schema
takes a while to convert; the grammar of a schema seen before comes from a cache).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

from tkchat.generate.backend import Backend, JsonFormat
from tkchat.limits import MAX_NAME_CHARS, cut
from tkchat.serve.errors import bad_request

PARAM = "response_format"
SCHEMA_PARAM = "response_format.json_schema.schema"
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for json_schema.name


@dataclass(frozen=True)
class AskedFormat:
    """What a client asked for: ``wire``, its ``response_format`` as JSON text; ``schema``,
    the JSON schema as JSON text (None: any JSON object)."""

    wire: str
    schema: str | None


def parse_response_format(payload: dict[str, Any]) -> AskedFormat | None:
    """The JSON mode a request asks for (None: text), or 400 naming the field at fault."""
    value = payload.get(PARAM)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request(f'"{PARAM}" must be an object.', PARAM, "invalid_type")
    kind = value.get("type")
    if kind == "text":
        return None
    wire = json.dumps(value, ensure_ascii=False)
    if kind == "json_object":
        return AskedFormat(wire, None)
    if kind != "json_schema":
        raise bad_request(
            f'"{PARAM}.type" must be "text", "json_object" or "json_schema", not '
            f"{json.dumps(kind)[:60]}.",
            f"{PARAM}.type",
            "unsupported_value" if isinstance(kind, str) else "invalid_type",
        )
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise bad_request(
            f'"{PARAM}.json_schema" must be an object with a "name" and a "schema".',
            f"{PARAM}.json_schema",
            "missing_required_parameter" if spec is None else "invalid_type",
        )
    name = spec.get("name")
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise bad_request(
            f'"{PARAM}.json_schema.name" must be 1 to 64 letters, digits, "_" or "-".',
            f"{PARAM}.json_schema.name",
        )
    if spec.get("strict") is not None and not isinstance(spec.get("strict"), bool):
        raise bad_request(
            f'"{PARAM}.json_schema.strict" must be true or false.',
            f"{PARAM}.json_schema.strict",
            "invalid_type",
        )
    schema = spec.get("schema")
    if schema is None:
        return AskedFormat(wire, None)  # OpenAI makes the schema optional: any object
    if not isinstance(schema, dict):
        raise bad_request(f'"{SCHEMA_PARAM}" must be a JSON schema object.', SCHEMA_PARAM)
    return AskedFormat(wire, json.dumps(schema, ensure_ascii=False))


async def json_format_for(payload: dict[str, Any], backend: Backend) -> JsonFormat | None:
    """Event loop. The request's JSON mode as the backend takes it (the grammar built off the
    loop), None for text; 400 for a malformed one, or one this backend cannot honour."""
    asked = parse_response_format(payload)
    if asked is None:
        return None
    support = backend.json_support
    if support == "passed_on":
        return JsonFormat(asked.wire)
    if support == "none":
        raise bad_request(
            f'"{PARAM}" asks for JSON, which this server\'s model '
            f"({cut(backend.name, MAX_NAME_CHARS)}) cannot "
            "promise: JSON mode needs the local model, or an OpenAI-compatible server behind "
            "--server.",
            PARAM,
            "unsupported_value",
        )
    from tkchat.generate.json_grammar import GrammarError, grammar_for

    try:
        grammar = await asyncio.to_thread(grammar_for, asked.schema)
    except GrammarError as exc:
        raise bad_request(str(exc), SCHEMA_PARAM) from exc
    return JsonFormat(asked.wire, grammar)
