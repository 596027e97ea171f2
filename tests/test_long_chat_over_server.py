"""A long saved chat goes on through ``tkchat --server`` (found in the field, 2026-12-05).

A 1,000-message saved chat (3.4 million characters) continued against ``tkchat serve`` failed
with "413 Request Entity Too Large": the client sent the whole chat, and the server takes a
body of at most 64,000 bytes and a chat of at most 32,000 characters (it fits what it gets
into its model's context itself, with its own tokenizer). Now the server says both limits in
``GET /health``, and the client sends the system prompt and the newest whole turns within
them. Counted, never timed.
"""

from __future__ import annotations

import json

from tests.test_remote_backend import generate, text_of
from tests.test_server import serve
from tkchat.conversation import Message, Sampling
from tkchat.events import Done
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.remote import RemoteBackend
from tkchat.generate.remote.tkchat_protocol import request_body, within_limits
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.bench.scenarios.chat_text import long_conversation


def chat(messages: int) -> list[Message]:
    said = [Message(role, text) for role, text in long_conversation(messages)]
    return [Message("system", "Be brief."), *said, Message("user", "And one more question?")]


def body_bytes(messages: tuple[Message, ...]) -> int:
    request = GenerationRequest(messages, Sampling(max_tokens=64, seed=1))
    return len(json.dumps(request_body(request)).encode())


def test_the_newest_whole_turns_within_the_servers_limits_are_sent() -> None:
    messages = chat(40)  # ~133,000 characters, in English and Chinese
    sent = within_limits(messages, 32_000, 64_000)
    assert sent[0] == messages[0] and sent[-1] == messages[-1]
    assert sent[1].role == "user"  # whole turns: it starts with a question
    assert tuple(messages[-(len(sent) - 1) :]) == sent[1:]  # the newest, in order
    assert sum(len(m.content) for m in sent) <= 32_000
    assert body_bytes(sent) <= 64_000
    one_more = messages[-(len(sent) + 1) :]  # a turn more would not fit
    assert sum(len(m.content) for m in one_more) > 32_000 or body_bytes(tuple(one_more)) > 64_000


def test_chinese_is_counted_as_the_body_carries_it() -> None:
    """JSON escapes a Chinese character as six bytes: the body's limit is the tighter one."""
    turn = [Message("user", "问" * 500), Message("assistant", "答" * 2_000)]
    messages = [*(turn * 20), Message("user", "还有一个问题？")]
    sent = within_limits(messages, 32_000, 64_000)
    assert sum(len(m.content) for m in sent) < 32_000 // 2
    assert body_bytes(sent) <= 64_000 < body_bytes((*turn, *sent))


def test_a_chat_that_fits_goes_whole_and_the_newest_message_always_goes() -> None:
    short = chat(4)
    assert within_limits(short, 32_000, 64_000) == tuple(short)
    huge = [Message("user", "x" * 50_000)]
    assert within_limits(huge, 32_000, 64_000) == tuple(huge)  # the server says it is too long


def test_a_long_chat_is_answered_by_tkchat_serve() -> None:
    with serve(ScriptedBackend(rate=0, text="Here is an answer.")) as live:
        backend = RemoteBackend(f"http://127.0.0.1:{live.port}")
        backend.load()
        assert backend.limits == (32_000, 64_000)  # as its /health says
        long = chat(300)
        events = generate(backend, tuple(long), Sampling(max_tokens=16))
        # The context meter's estimate is of what was sent, not of the whole chat.
        sent = within_limits(long, *backend.limits)
        assert backend.count_tokens(long) == backend.count_tokens(sent) < backend.n_ctx
    assert isinstance(events[-1], Done), events[-1]
    assert text_of(events)
