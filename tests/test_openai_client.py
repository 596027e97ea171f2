"""``tkchat serve`` through the official ``openai`` Python client, a client no one here wrote:
each call as a program written for OpenAI makes it, and what it gets back — the answer, the
``usage``, ``stop``, ``seed``, the exception class and its ``type``/``param``/``code`` — as
OpenAI would give it (issue 23).

The scripted backend where the text is the point (reproducible, so a stop string can be put
across two tokens on purpose); the bundled model where the model is (``seed``, a stop on the
real tokenizer's digits, the context).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("uvicorn")

from tests.conftest import wait_until  # noqa: E402
from tests.test_server import LONG_ANSWERS, Live, serve, serve_bundled_model  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402
from tkchat.serve.line import LineLimits  # noqa: E402

ASK = [{"role": "user", "content": "Why does the window stay smooth?"}]


def client(live: Live, **options: Any) -> Any:
    """The official client, pointed at the live server, retrying nothing unless told to."""
    options.setdefault("max_retries", 0)
    return openai.OpenAI(
        base_url=f"http://127.0.0.1:{live.port}/v1", api_key="unused", timeout=60, **options
    )


@pytest.fixture(scope="module")
def fast() -> Iterator[Live]:
    with serve(ScriptedBackend(rate=0)) as live:
        yield live


@pytest.fixture
def slow() -> Iterator[Live]:
    """Answers at 100 tokens/s for minutes: the model stays taken until someone stops."""
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=LONG_ANSWERS) as live:
        yield live


# -- answers: usage, stop, max_completion_tokens -------------------------------------------


def test_a_completion_reports_its_usage(fast: Live) -> None:
    answer = client(fast).chat.completions.create(model="any", messages=ASK, max_tokens=3)
    assert answer.choices[0].message.content == "## Why the"
    assert answer.choices[0].finish_reason == "length"
    usage = answer.usage
    assert usage is not None and usage.completion_tokens == 3
    assert usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_a_stream_with_include_usage_ends_with_a_usage_chunk(fast: Live) -> None:
    chunks = list(
        client(fast).chat.completions.create(
            model="any",
            messages=ASK,
            max_tokens=4,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    *body, last = chunks
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == 4 and last.usage.prompt_tokens > 0
    assert all(c.usage is None for c in body)
    assert "".join(c.choices[0].delta.content or "" for c in body) == "## Why the window"
    assert body[-1].choices[0].finish_reason == "length"


def test_a_stream_without_include_usage_has_no_usage_chunk(fast: Live) -> None:
    chunks = list(
        client(fast).chat.completions.create(model="any", messages=ASK, max_tokens=2, stream=True)
    )
    assert all(c.choices for c in chunks) and all(c.usage is None for c in chunks)


def test_a_stop_string_is_never_sent_and_finishes_with_stop(fast: Live) -> None:
    """The issue's case: ``stop=["smooth"]`` still returned "smooth"."""
    answer = client(fast).chat.completions.create(model="any", messages=ASK, stop=["smooth"])
    assert answer.choices[0].message.content == "## Why the window stays "
    assert answer.choices[0].finish_reason == "stop"


def test_a_stop_string_across_two_tokens_is_found_in_a_stream(fast: Live) -> None:
    """ " stays" and " smooth" are two tokens of the scripted answer: the stop string
    spans both, and no chunk may carry its first half before the second arrives."""
    chunks = list(
        client(fast).chat.completions.create(
            model="any", messages=ASK, stop=["ays smo", "never there"], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "## Why the window st"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_one_stop_string_as_a_plain_string(fast: Live) -> None:
    answer = client(fast).chat.completions.create(model="any", messages=ASK, stop="window")
    assert answer.choices[0].message.content == "## Why the "


def test_max_completion_tokens_limits_the_answer(fast: Live) -> None:
    answer = client(fast).chat.completions.create(
        model="any", messages=ASK, max_completion_tokens=5
    )
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == 5


def test_the_servers_answer_cap_cuts_a_longer_request() -> None:
    with serve(ScriptedBackend(rate=0), limits=LineLimits(answer_tokens=6)) as live:
        answer = client(live).chat.completions.create(model="any", messages=ASK, max_tokens=500)
    assert answer.choices[0].finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == 6


def test_developer_messages_and_text_parts_are_read(fast: Live) -> None:
    answer = client(fast).chat.completions.create(
        model="any",
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        ],
        max_tokens=1,
    )
    assert answer.choices[0].message.content == "##"


# -- models ----------------------------------------------------------------------------------


def test_models_list_and_retrieve(fast: Live) -> None:
    api = client(fast)
    (model,) = api.models.list().data
    assert model.id == "scripted" and model.owned_by == "tkchat" and model.object == "model"
    assert isinstance(model.created, int) and model.created > 1_700_000_000
    assert api.models.retrieve("scripted").id == "scripted"
    with pytest.raises(openai.NotFoundError) as caught:
        api.models.retrieve("gpt-4o")
    assert caught.value.code == "model_not_found"


# -- errors: the client's own classes tell them apart -------------------------------------

TOOL = {"type": "function", "function": {"name": "f"}}
REFUSED = [
    ({"temperature": 5}, "temperature", "invalid_value"),
    ({"top_p": 1.5}, "top_p", "invalid_value"),
    ({"max_tokens": 0}, "max_tokens", "invalid_value"),
    ({"seed": -1}, "seed", "invalid_value"),
    ({"n": 2}, "n", "unsupported_value"),
    (
        {"tools": [{"type": "function", "function": {"name": "f"}}]},
        "tools",
        "unsupported_parameter",
    ),
    # the scripted text cannot be JSON; the bundled model can (tests/test_json_mode.py)
    ({"response_format": {"type": "json_object"}}, "response_format", "unsupported_value"),
    ({"logprobs": True}, "logprobs", "unsupported_parameter"),
    ({"logit_bias": {"50256": -100}}, "logit_bias", "unsupported_parameter"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
]


@pytest.mark.parametrize("extra,param,code", REFUSED, ids=[r[1] for r in REFUSED])
def test_what_openai_refuses_or_tkchat_lacks_is_a_bad_request(
    fast: Live, extra: dict[str, Any], param: str, code: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(fast).chat.completions.create(model="any", messages=ASK, **extra)
    error = caught.value
    assert error.status_code == 400 and error.type == "invalid_request_error"
    assert error.param == param and error.code == code, error.body
    assert param in error.message


RANGES = [
    ({"max_tokens": 0}, '"max_tokens" must be between 1 and 1,048,576, not 0.'),
    ({"max_completion_tokens": 2_000_000}, "between 1 and 1,048,576, not 2000000."),
    ({"temperature": 5}, '"temperature" must be between 0 and 2, not 5.'),
    ({"top_p": 1.5}, '"top_p" must be between 0 and 1, not 1.5.'),
    ({"seed": -1}, '"seed" must be between 0 and 4,294,967,295.'),
]


@pytest.mark.parametrize("extra,message", RANGES, ids=[str(r[0]) for r in RANGES])
def test_a_range_is_said_in_whole_numbers(fast: Live, extra: dict[str, Any], message: str) -> None:
    """The issue's case: ``max_tokens=0`` was told "between 1 and 1.04858e+06"."""
    with pytest.raises(openai.BadRequestError) as caught:
        client(fast).chat.completions.create(model="any", messages=ASK, **extra)
    assert message in caught.value.message and "e+" not in caught.value.message


def test_stream_options_without_a_stream_is_a_bad_request(fast: Live) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(fast).chat.completions.create(
            model="any", messages=ASK, stream_options={"include_usage": True}
        )
    assert caught.value.param == "stream_options"


def test_a_prompt_over_the_servers_limit_is_a_413(fast: Live) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        client(fast).chat.completions.create(
            model="any", messages=[{"role": "user", "content": "x" * 33_000}]
        )
    assert caught.value.status_code == 413 and caught.value.code == "prompt_too_long"
    assert caught.value.param == "messages"


def test_a_backend_failure_mid_stream_is_an_api_error() -> None:
    with serve(ScriptedBackend(rate=0, fail_at=5)) as live:
        stream = client(live).chat.completions.create(model="any", messages=ASK, stream=True)
        with pytest.raises(openai.APIError) as caught:
            list(stream)
        assert "crashed at token 5" in caught.value.message
        with pytest.raises(openai.InternalServerError) as failed:
            client(live).chat.completions.create(model="any", messages=ASK)
    assert failed.value.type == "server_error" and failed.value.code == "RuntimeError"


def test_a_missing_or_wrong_token_is_an_authentication_error() -> None:
    with serve(ScriptedBackend(rate=0), token="s3cret") as live:
        with pytest.raises(openai.AuthenticationError) as caught:
            client(live).chat.completions.create(model="any", messages=ASK)
        assert caught.value.code == "invalid_api_key"
        api = openai.OpenAI(base_url=f"http://127.0.0.1:{live.port}/v1", api_key="s3cret")
        answer = api.chat.completions.create(model="any", messages=ASK, max_tokens=1)
    assert answer.choices[0].message.content == "##"


# -- the line, as an OpenAI client meets it --------------------------------------------------


def at_once(api: Any, users: list[str]) -> dict[int, Any]:
    """One request per entry of ``users`` (its OpenAI ``user`` field), all sent at once, each
    on a thread of its own: the answers, by index."""
    answers: dict[int, Any] = {}

    def ask(index: int) -> None:
        answers[index] = api.chat.completions.create(
            model="any", messages=ASK, max_tokens=20, user=users[index]
        )

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(users))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


def test_three_requests_at_once_all_get_their_answers() -> None:
    """The issue's case: one answered, two 429s — also after the client's own retries."""
    with serve(ScriptedBackend(rate=200)) as live:
        answers = at_once(client(live, max_retries=2), [f"student-{i}" for i in range(3)])
        counts = live.health()["line"]["counts"]
    assert sorted(answers) == [0, 1, 2]
    assert {a.choices[0].finish_reason for a in answers.values()} == {"length"}
    assert counts["joined"] == 3 and counts.get("per_client", 0) == 0


def test_a_streaming_request_waits_in_line_with_keep_alive_comments(slow: Live) -> None:
    first = client(slow).chat.completions.create(
        model="any", messages=ASK, stream=True, max_tokens=50_000
    )
    next(iter(first))  # the role chunk: the first request holds the model
    wait_until(lambda: slow.health()["busy"], what="the first answer to start")
    got: list[str] = []

    def second() -> None:
        stream = client(slow).chat.completions.create(
            model="any", messages=ASK, stream=True, max_tokens=3
        )
        got.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))

    waiter = threading.Thread(target=second)
    waiter.start()
    wait_until(lambda: slow.health()["line"]["waiting"] == 1, what="the second in line")
    first.close()  # the first client leaves; the second one's turn
    waiter.join(30)
    assert got == ["## Why the"]


def test_five_requests_at_once_from_one_user_all_wait_their_turn() -> None:
    """The issue's case: five at once under one ``user`` got two 429s, despite the client's
    retries. Now they wait in line, and none is refused (the client retries nothing here)."""
    with serve(ScriptedBackend(rate=200)) as live:
        answers = at_once(client(live), ["ann"] * 5)
        counts = live.health()["line"]["counts"]
    assert sorted(answers) == [0, 1, 2, 3, 4]
    assert {a.choices[0].finish_reason for a in answers.values()} == {"length"}
    assert counts["served"] == 5 and counts.get("per_client", 0) == 0


def test_past_its_share_a_user_is_rate_limited_with_retry_after() -> None:
    limits = LineLimits(per_client=1, answer_tokens=1 << 20)
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=limits) as live:
        api = client(live)
        first = api.chat.completions.create(
            model="any", messages=ASK, stream=True, max_tokens=50_000, user="ann"
        )
        next(iter(first))
        with pytest.raises(openai.RateLimitError) as caught:
            api.chat.completions.create(model="any", messages=ASK, user="ann")
        answers: list[Any] = []
        bob = threading.Thread(
            target=lambda: answers.append(
                api.chat.completions.create(model="any", messages=ASK, max_tokens=1, user="bob")
            )
        )
        bob.start()  # another user is not refused: he waits his turn
        wait_until(lambda: live.health()["line"]["waiting"] == 1, what="bob in line")
        first.close()
        bob.join(30)
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.body["kind"] == "per_client"
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert answers and answers[0].choices[0].message.content == "##"


def test_a_full_line_is_a_503_with_retry_after() -> None:
    limits = LineLimits(waiting=1, answer_tokens=1 << 20)
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=limits) as live:
        api = client(live)
        first = api.chat.completions.create(model="any", messages=ASK, stream=True)
        next(iter(first))
        waiting = threading.Thread(
            target=lambda: api.chat.completions.create(model="any", messages=ASK, max_tokens=1)
        )
        waiting.start()
        wait_until(lambda: live.health()["line"]["waiting"] == 1, what="one in line")
        with pytest.raises(openai.InternalServerError) as caught:
            api.chat.completions.create(model="any", messages=ASK)
        first.close()
        waiting.join(30)
    error = caught.value
    assert error.status_code == 503 and error.code == "line_full"
    assert int(error.response.headers["retry-after"]) >= 1


# -- the bundled model ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Iterator[Live]:
    with serve_bundled_model(512) as live:
        yield live


COUNT = [{"role": "user", "content": "Count from 1 to 10, one number per line."}]


@pytest.mark.model
def test_a_stop_string_on_the_real_model(model: Live) -> None:
    """The issue's case: ``stop=["3"]`` still returned "1234567890"."""
    api = client(model)
    free = api.chat.completions.create(model="any", messages=COUNT, max_tokens=40, temperature=0)
    text = free.choices[0].message.content or ""
    assert "3" in text, text  # without the stop string the model gets there
    stopped = api.chat.completions.create(
        model="any", messages=COUNT, max_tokens=40, temperature=0, stop=["3"]
    )
    assert stopped.choices[0].message.content == text[: text.index("3")]
    assert stopped.choices[0].finish_reason == "stop"


@pytest.mark.model
def test_a_seed_gives_the_same_answer_again(model: Live) -> None:
    api = client(model)
    story = [{"role": "user", "content": "Tell me a short story about a cat."}]

    def ask(seed: int) -> str:
        answer = api.chat.completions.create(
            model="any", messages=story, max_tokens=24, temperature=1.2, seed=seed
        )
        return answer.choices[0].message.content or ""

    first, again, other = ask(11), ask(11), ask(12)
    assert first == again and first.strip()
    assert other != first  # (a different seed: at temperature 1.2, a different story)


@pytest.mark.model
def test_a_prompt_longer_than_the_context_is_context_length_exceeded(model: Live) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(model).chat.completions.create(
            model="any", messages=[{"role": "user", "content": "cats and tea " * 300}]
        )
    assert caught.value.code == "context_length_exceeded" and caught.value.param == "messages"
