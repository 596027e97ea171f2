"""JSON mode of ``tkchat serve`` (``response_format``), through the official ``openai`` client
(issue 37): the bundled model answers under a grammar, so its answer is JSON — of the schema,
for ``json_schema`` — streamed or not; a schema that cannot be a grammar, or a backend that
cannot constrain its answer, is an OpenAI-shaped 400; an OpenAI-compatible server behind
``--server`` gets ``response_format`` as the client sent it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("uvicorn")

from tests.test_openai_client import ASK, client  # noqa: E402
from tests.test_remote_backend import FakeServer, loaded  # noqa: E402
from tests.test_remote_backend import llama_server as llama_cpp_server  # noqa: E402, F401 - a fixture
from tests.test_server import Live, serve, serve_bundled_model  # noqa: E402
from tkchat.generate import json_grammar  # noqa: E402
from tkchat.generate.remote import RemoteBackend  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
PERSON_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "person", "schema": PERSON, "strict": True},
}
INVENT = [{"role": "user", "content": "Invent a person: give a name and an age."}]
CAPITAL = [{"role": "user", "content": "What is the capital of France? Answer in JSON."}]
# Enough for the model to close its JSON (6 and 18 tokens at temperature 0), so the answer ends
# by itself; a cut answer says "length" (test_an_answer_cut_by_max_tokens_says_length).
ENOUGH = 64


@pytest.fixture(scope="module")
def model() -> Iterator[Live]:
    """The bundled model behind ``tkchat serve``, once for the module."""
    with serve_bundled_model(512) as live:
        yield live


def ask(live: Live, messages: list[dict[str, str]], stream: bool, **extra: Any) -> tuple[str, str]:
    """The answer's text and finish_reason, streamed or as one object, at temperature 0."""
    api = client(live)
    options: dict[str, Any] = {"max_tokens": ENOUGH, "temperature": 0, "seed": 1, **extra}
    if not stream:
        answer = api.chat.completions.create(model="any", messages=messages, **options)
        return answer.choices[0].message.content or "", answer.choices[0].finish_reason
    chunks = list(
        api.chat.completions.create(model="any", messages=messages, stream=True, **options)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks[-1].choices[0].finish_reason


def is_person(value: Any) -> bool:
    """Valid against PERSON, checked by hand (jsonschema is not a dependency)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("age"), int)
        and not isinstance(value.get("age"), bool)
    )


# -- the bundled model answers JSON --------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_json_object_answers_a_json_object(model: Live, stream: bool) -> None:
    text, finish = ask(model, CAPITAL, stream, response_format={"type": "json_object"})
    assert finish == "stop", text  # it closed the object itself: the grammar allowed no more
    assert isinstance(json.loads(text), dict), text


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_json_schema_answers_json_of_the_schema(model: Live, stream: bool) -> None:
    text, finish = ask(model, INVENT, stream, response_format=PERSON_FORMAT)
    assert finish == "stop", text
    assert is_person(json.loads(text)), text


@pytest.mark.model
def test_without_response_format_the_same_question_gets_prose(model: Live) -> None:
    """What the grammar changes: asked plainly, the model does not write that JSON."""
    for plain in (None, {"type": "text"}):
        extra = {} if plain is None else {"response_format": plain}
        text, _ = ask(model, INVENT, False, **extra)
        with pytest.raises(ValueError):
            json.loads(text)


@pytest.mark.model
def test_an_answer_cut_by_max_tokens_says_length(model: Live) -> None:
    """JSON mode does not hide a cut: the text is unfinished JSON and says so."""
    text, finish = ask(model, INVENT, False, response_format=PERSON_FORMAT, max_tokens=4)
    assert finish == "length" and text.startswith("{")
    with pytest.raises(ValueError):
        json.loads(text)


# -- what is refused, as OpenAI refuses ----------------------------------------------------

MALFORMED = [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nope"}}},
     "response_format.json_schema.schema", "Unrecognized schema"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object",
      "properties": 5}}}, "response_format.json_schema.schema", "cannot be turned into"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nowhere"}}},
     "response_format.json_schema.schema", "Error resolving ref"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array",
      "items": {"type": "string"}, "maxItems": 100_000}}}, "response_format.json_schema.schema",
     "at most 100,000"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": [1, 2]}},
     "response_format.json_schema.schema", "must be a JSON schema object"),
    ({"type": "json_schema", "json_schema": {"schema": PERSON}},
     "response_format.json_schema.name", "1 to 64"),
    ({"type": "json_schema"}, "response_format.json_schema", "must be an object"),
    ({"type": "json_schema", "json_schema": {"name": "x", "strict": "yes"}},
     "response_format.json_schema.strict", "true or false"),
    ({"type": "xml"}, "response_format.type", '"json_object" or "json_schema"'),
]  # fmt: skip


@pytest.mark.model
@pytest.mark.parametrize("response_format,param,said", MALFORMED, ids=[m[2] for m in MALFORMED])
def test_a_malformed_response_format_is_a_bad_request(
    model: Live, response_format: Any, param: str, said: str
) -> None:
    joined = model.health()["line"]["counts"].get("joined", 0)
    with pytest.raises(openai.BadRequestError) as caught:
        client(model).chat.completions.create(
            model="any", messages=INVENT, response_format=response_format
        )
    error = caught.value
    assert error.status_code == 400 and error.type == "invalid_request_error"
    assert error.param == param and said in error.message, error.message
    assert model.health()["line"]["counts"].get("joined", 0) == joined  # refused before the line


def test_the_scripted_backend_refuses_json_mode_and_takes_text() -> None:
    """Its text is fixed: JSON mode would be a promise it cannot keep."""
    with serve(ScriptedBackend(rate=0)) as live:
        api = client(live)
        for response_format in ({"type": "json_object"}, PERSON_FORMAT):
            with pytest.raises(openai.BadRequestError) as caught:
                api.chat.completions.create(
                    model="any", messages=ASK, response_format=response_format
                )
            assert caught.value.param == "response_format"
            assert caught.value.code == "unsupported_value"
            assert "(scripted) cannot promise" in caught.value.message
        answer = api.chat.completions.create(
            model="any", messages=ASK, max_tokens=1, response_format={"type": "text"}
        )
    assert answer.choices[0].message.content == "##"


# -- a server behind --server ----------------------------------------------------------------


def test_an_openai_server_behind_gets_response_format_as_sent() -> None:
    fake = FakeServer()
    try:
        with serve(loaded(fake.url)) as live:
            client(live).chat.completions.create(
                model="any", messages=ASK, response_format=PERSON_FORMAT
            )
            client(live).chat.completions.create(model="any", messages=ASK)
    finally:
        fake.stop()
    asked, plain = fake.bodies[-2:]
    assert asked["response_format"] == PERSON_FORMAT
    assert "response_format" not in plain  # strict servers: nothing they were not asked


def test_a_tkchat_server_behind_refuses_json_mode_clearly() -> None:
    """Its /chat takes no response_format: the client is told to ask that server itself."""
    with serve(ScriptedBackend(rate=0)) as inner:
        backend = RemoteBackend(f"http://127.0.0.1:{inner.port}")
        backend.load()
        with serve(backend) as outer, pytest.raises(openai.BadRequestError) as caught:
            client(outer).chat.completions.create(
                model="any", messages=ASK, response_format={"type": "json_object"}
            )
    assert caught.value.code == "unsupported_value"
    assert "OpenAI-compatible server behind --server" in caught.value.message


# -- the grammar: off the event loop, once per schema ---------------------------------------


class GrammarModel(ScriptedBackend):
    """A scripted model that says it samples under a grammar: the server builds one for it."""

    json_support = "grammar"  # type: ignore[assignment]


def test_the_grammar_is_built_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, bool]] = []
    convert = json_grammar.grammar_for

    def watched(schema: str | None) -> str:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        built.append((threading.current_thread().name, on_loop))
        return convert(schema)

    monkeypatch.setattr(json_grammar, "grammar_for", watched)
    with serve(GrammarModel(rate=0)) as live:
        answer = client(live).chat.completions.create(
            model="any", messages=ASK, max_tokens=1, response_format=PERSON_FORMAT
        )
    assert answer.choices[0].message.content == "##"
    assert len(built) == 1 and built[0][1] is False, built


def test_a_schemas_grammar_is_made_once() -> None:
    schema = json.dumps(PERSON)
    first = json_grammar.grammar_for(schema)
    assert json_grammar.grammar_for(json.dumps(PERSON)) is first  # the same object: remembered
    assert 'root ::= "{" space name-kv "," space age-kv "}" space' in first


@pytest.mark.model
def test_llama_cpp_servers_json_mode_reaches_the_client_through_tkchat(
    llama_cpp_server: tuple[str, Path],  # noqa: F811 - the fixture, imported above
) -> None:
    """The real peer behind --server: llama-cpp-python's server honours json_object with its
    own grammar (the answer is JSON) and refuses json_schema, which it does not know (it
    answers 500, with its validation error): the client reads that refusal, relayed as the
    server error it is, not prose (a 4xx would be relayed as a 400: test_remote_backend.py)."""
    with serve(loaded(llama_cpp_server[0])) as live:
        text, finish = ask(live, CAPITAL, False, response_format={"type": "json_object"})
        assert finish == "stop" and isinstance(json.loads(text), dict), text
        with pytest.raises(openai.InternalServerError) as caught:
            ask(live, INVENT, False, response_format=PERSON_FORMAT)
    assert "response_format" in caught.value.message, caught.value.message
