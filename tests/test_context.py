"""The context policy (tkchat/generate/context.py): what the model sees when a chat outgrows
its context. Unit tests count words; the real-model tests at the end use llama.cpp's tokenizer."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from tests.conftest import run_to_end
from tkchat.conversation import MAX_N_CTX, Message, Sampling
from tkchat.events import Chunk, Done, Error
from tkchat.generate.backend import ContextOverflowError, GenerationRequest
from tkchat.generate.context import answer_room, fit_to_context
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend
from tkchat.transport.channel import EventChannel

PER_MESSAGE = 3  # template tokens per message, like a real chat template


def count_words(messages: Sequence[Message]) -> int:
    return sum(len(m.content.split()) + PER_MESSAGE for m in messages)


def chat(turns: int, words: int = 20, system: bool = True) -> list[Message]:
    messages = [Message("system", "be brief")] if system else []
    for turn in range(turns):
        messages.append(Message("user", f"q{turn} " + "w " * (words - 1)))
        messages.append(Message("assistant", f"a{turn} " + "w " * (words - 1)))
    messages.append(Message("user", "newest " + "w " * (words - 1)))
    return messages


def test_a_chat_that_fits_is_sent_whole_with_one_count() -> None:
    calls: list[int] = []

    def counting(messages: Sequence[Message]) -> int:
        calls.append(len(messages))
        return count_words(messages)

    messages = chat(3)
    fit = fit_to_context(messages, counting, n_ctx=4096, max_tokens=256)
    assert fit.messages == tuple(messages) and fit.dropped == 0
    assert fit.used == count_words(messages)
    assert calls == [len(messages)]


@pytest.mark.parametrize("n_ctx", [200, 300, 512, 1000])
def test_the_oldest_turns_go_first_and_the_rest_fits_with_room_for_the_answer(n_ctx: int) -> None:
    messages = chat(20)
    fit = fit_to_context(messages, count_words, n_ctx=n_ctx, max_tokens=64)
    assert fit.dropped > 0
    assert fit.messages[0] == messages[0]  # the system prompt stays
    assert fit.messages[-1] == messages[-1]  # and so does the question
    assert fit.messages[1].role == "user"  # whole turns: never an answer without its question
    assert fit.messages[1:] == tuple(messages[1 + fit.dropped :])  # the newest ones, in order
    assert fit.used == count_words(fit.messages)
    assert fit.used + answer_room(64, n_ctx) <= n_ctx
    # and as few as possible were left out: one more turn would not have fitted
    one_more = (messages[0], *messages[1 + fit.dropped - 2 :])
    assert count_words(one_more) + answer_room(64, n_ctx) > n_ctx


def newest_that_fit(messages: Sequence[Message], n_ctx: int, max_tokens: int) -> int:
    """The policy, spelled out the slow way: how many earlier messages are left out when
    whole turns are left out oldest first until the rest fits with room for the answer."""
    system = 1 if messages[0].role == "system" and len(messages) > 1 else 0
    room = answer_room(max_tokens, n_ctx)
    earlier = len(messages) - system - 1
    for dropped in range(earlier + 1):
        at = system + dropped
        whole_turns = dropped == earlier or messages[at].role == "user"
        kept = [*messages[:system], *messages[at:]]
        if whole_turns and count_words(kept) + room <= n_ctx:
            return dropped
    return earlier


@pytest.mark.parametrize("seed", range(40))
def test_the_kept_turns_are_the_newest_that_fit_however_the_chat_is_made(seed: int) -> None:
    """Counted from the newest in growing steps, the policy keeps exactly what leaving the
    oldest out one turn at a time would: chats of every length, turns of every size, two
    answers in a row (a regenerated answer), with and without a system prompt."""
    rng = random.Random(seed)
    messages = [Message("system", "be brief")] if rng.random() < 0.5 else []
    for turn in range(rng.randrange(0, 60)):
        messages.append(Message("user", f"q{turn} " + "w " * rng.randrange(0, 80)))
        for _ in range(rng.choice((1, 1, 1, 2))):
            messages.append(Message("assistant", f"a{turn} " + "w " * rng.randrange(0, 200)))
    messages.append(Message("user", "newest " + "w " * rng.randrange(0, 60)))
    n_ctx, max_tokens = rng.choice((128, 256, 512, 1024, 4096)), rng.choice((16, 64, 256))
    counted: list[tuple[Message, ...]] = []

    def counting(chat: Sequence[Message]) -> int:
        counted.append(tuple(chat))
        return count_words(chat)

    fit = fit_to_context(messages, counting, n_ctx=n_ctx, max_tokens=max_tokens)
    assert len(set(counted)) == len(counted)  # no chat counted twice
    dropped = newest_that_fit(messages, n_ctx, max_tokens)
    assert fit.dropped == dropped
    system = messages[:1] if messages[0].role == "system" and len(messages) > 1 else []
    assert fit.messages == (*system, *messages[len(system) + dropped :])
    assert fit.used == count_words(fit.messages)


def test_a_chat_far_longer_than_the_context_is_never_counted_whole() -> None:
    """A 1,000-message chat was counted whole (a million tokens on the real model: 1.9 s of
    the worker and 25 ms of the window's loop, held by llama-cpp-python's list of them),
    then message by message, at every question and every context-meter count. Now: a few
    counts, none of more than twice the turns that fit."""
    counted: list[int] = []

    def counting(messages: Sequence[Message]) -> int:
        counted.append(len(messages))
        return count_words(messages)

    messages = chat(500, words=200)
    fit = fit_to_context(messages, counting, n_ctx=8192, max_tokens=512)
    assert fit.dropped == newest_that_fit(messages, 8192, 512) > 900
    assert max(counted) <= 2 * len(fit.messages) + 2
    assert len(counted) <= 2 * math.ceil(math.log2(500)) + 1


def test_without_a_system_prompt_the_newest_question_is_kept() -> None:
    messages = chat(10, system=False)
    fit = fit_to_context(messages, count_words, n_ctx=150, max_tokens=32)
    assert fit.messages[0].role == "user" and fit.messages[-1] == messages[-1]
    assert fit.dropped == len(messages) - len(fit.messages)


def test_a_question_too_long_for_the_context_is_a_clear_error() -> None:
    messages = [Message("system", "be brief"), Message("user", "word " * 5000)]
    with pytest.raises(ContextOverflowError) as caught:
        fit_to_context(messages, count_words, n_ctx=1024, max_tokens=64)
    assert "5," in str(caught.value) and "1,024" in str(caught.value)
    assert caught.value.kind == "context_overflow"


def test_a_question_that_only_just_fits_gets_a_shorter_answer_room() -> None:
    messages = [Message("user", "word " * 900)]
    fit = fit_to_context(messages, count_words, n_ctx=1024, max_tokens=512)
    assert fit.dropped == 0 and fit.used == 903


@pytest.mark.parametrize(
    ("max_tokens", "n_ctx", "room"),
    [(512, 4096, 512), (8000, 4096, 2048), (0, 1000, 500), (5, 20, 5)],
)
def test_answer_room_is_max_tokens_at_most_half_the_context(
    max_tokens: int, n_ctx: int, room: int
) -> None:
    assert answer_room(max_tokens, n_ctx) == room


def test_the_worker_reports_what_it_left_out_in_the_final_stats() -> None:
    backend = ScriptedBackend(rate=0, tokens=5, context=300)
    controller = GenerationController(backend, EventChannel())
    messages = tuple(chat(30))
    gen = controller.start(GenerationRequest(messages, Sampling(max_tokens=20)))
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Done), final
    assert final.stats.context_dropped > 0
    assert 0 < final.stats.prompt_tokens <= 300
    assert controller.current is not None
    assert controller.current.context_dropped == final.stats.context_dropped


@pytest.mark.parametrize(
    ("tokens", "n_ctx"), [(None, 8192), (4000, 8192), (4097, 16_384), (30_000, 65_536)]
)
def test_a_scripted_backends_context_keeps_room_for_the_answer_it_plays(
    tokens: int | None, n_ctx: int
) -> None:
    """Lesson 11's flood of 30,000 tokens read "context 30,019 / 8,192 tokens": the scripted
    backend played past its context, which a model cannot (its answer ends where the context
    does). Its context is at least twice its answer, so that the room the policy keeps for an
    answer (at most half the context) holds the whole of it."""
    backend = ScriptedBackend(tokens=tokens)
    assert backend.n_ctx == n_ctx
    if tokens is not None:
        assert answer_room(tokens, backend.n_ctx) == tokens
    assert ScriptedBackend(tokens=10**9).n_ctx == MAX_N_CTX  # "until stopped": a usable size


def test_a_scripted_conversation_never_takes_more_than_its_context() -> None:
    """Answers of 9,000 tokens in one chat, each more than the default context: the prompt and
    the answer fit the context at each turn; the fourth turn leaves the first out, as on a
    model."""
    backend = ScriptedBackend(rate=0, tokens=9000)
    controller = GenerationController(backend, EventChannel())
    messages = [Message("user", "Flood the window with text.")]
    for turn in range(4):
        request = GenerationRequest(tuple(messages), Sampling(max_tokens=9000))
        events = run_to_end(controller.channel, controller.start(request))
        final = events[-1]
        assert isinstance(final, Done), final
        assert final.stats.tokens == 9000
        assert final.stats.prompt_tokens + final.stats.tokens <= backend.n_ctx, turn
        text = "".join(event.text for event in events if isinstance(event, Chunk))
        messages += [Message("assistant", text), Message("user", "Again.")]
    assert final.stats.context_dropped > 0


# -- the bundled model ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_model() -> LlamaBackend:
    path = bundled_model_path()
    assert path is not None, "the bundled model is part of the test install"
    backend = LlamaBackend(str(path), n_ctx=256)  # (llama.cpp's smallest: a short read)
    backend.load()
    yield backend
    backend.close()


@pytest.mark.model
def test_a_scripted_backend_splits_each_message_once_however_often_the_chat_is_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The policy counts the whole chat, then the newest turns, at every question: each
    message's text is split into tokens once, and counted from what was kept after."""
    from tkchat.generate import scripted

    split: list[str] = []
    real = scripted.scripted_tokens
    monkeypatch.setattr(scripted, "scripted_tokens", lambda text: split.append(text) or real(text))
    scripted._message_tokens.cache_clear()
    backend = ScriptedBackend(rate=0)
    messages = [*chat(40, words=30), Message("user", "one more, never counted before")]
    first = fit_to_context(messages, backend.count_tokens, 1024, 256)
    assert first.dropped > 0  # (the premise: the chat was counted whole, then in part)
    assert sorted(split) == sorted({m.content for m in messages})
    again = fit_to_context(messages, backend.count_tokens, 1024, 256)
    assert again == first and len(split) == len({m.content for m in messages})


def test_a_long_chat_on_the_real_model_is_answered_instead_of_failing(
    small_model: LlamaBackend,
) -> None:
    """Before the policy, llama.cpp's context overflow ended such a chat with an error. Room
    is left for a 128-token answer (so what is read is short), and the answer is stopped at
    its first token: it was answered."""
    controller = GenerationController(small_model, EventChannel())
    messages = tuple(chat(2, words=25))
    assert small_model.count_tokens(messages) > 128  # really too long, with that room
    gen = controller.start(GenerationRequest(messages, Sampling(max_tokens=128, seed=1)))
    first = controller.channel.get(timeout=120)
    while not isinstance(first, Chunk | Error):
        first = controller.channel.get(timeout=120)
    controller.stop()
    final = run_to_end(controller.channel, gen)[-1] if isinstance(first, Chunk) else first
    assert isinstance(final, Done), final
    assert final.stats.context_dropped > 0 and final.stats.tokens > 0
    assert final.stats.prompt_tokens + 128 <= 256


@pytest.mark.model
def test_a_single_huge_message_on_the_real_model_says_how_long_it_is(
    small_model: LlamaBackend,
) -> None:
    controller = GenerationController(small_model, EventChannel())
    gen = controller.start(
        GenerationRequest((Message("user", "tea " * 2000),), Sampling(max_tokens=8))
    )
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Error) and final.kind == "context_overflow"
    assert "context holds 256" in final.message and "Shorten the message" in final.message
