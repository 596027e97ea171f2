"""Long waits without the model: progress events, Stop while a prompt is read, cancelled loads.

The scripted backend reads its prompt at a chosen rate (``prompt_rate``) and reports progress
as the real model does, so the contract, the window's progress line and Stop during reading
are checked here quickly and exactly; ``test_long_prompt.py`` does the same with the bundled
model. Which progress reports become events is decided by ``ProgressPacer`` and the load's
throttle — tested with the clock passed in (a :class:`SteppingClock` given to the controller),
and the window is looked at while a reading or a load is held at a gate: no timing is
asserted, and nothing waits for the clock.
"""

from __future__ import annotations

import threading
import tkinter as tk
from dataclasses import dataclass, field

import pytest

from tests.conftest import pump_until, run_to_end
from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.conversation import Message, Sampling
from tkchat.events import (
    Chunk,
    Done,
    Error,
    ModelFailed,
    ModelLoading,
    ModelReady,
    Progress,
    from_wire,
    to_wire,
)
from tkchat.generate.backend import (
    GenerationRequest,
    LoadCancelled,
    LoadWatch,
    PromptProgress,
    TokenStream,
    WrappedBackend,
)
from tkchat.generate.controller import GenerationController
from tkchat.generate.faults import FaultInjector
from tkchat.generate.remote import openai_protocol
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.generate.worker import PROGRESS_INTERVAL_S, ProgressPacer
from tkchat.transport.channel import EventChannel

LONG = (Message("system", "Be brief."), Message("user", "tea " * 400))  # ~400 scripted tokens


def reading_backend(prompt_rate: float = 2000.0, **kwargs: object) -> ScriptedBackend:
    """Reads ``LONG`` (411 tokens) with a report every ``prompt_rate / 20`` tokens (0.05 s
    apart: a report every 100 tokens at 2,000 tokens/s), then answers."""
    return ScriptedBackend(rate=0, tokens=20, prompt_rate=prompt_rate, **kwargs)  # type: ignore[arg-type]


# -- the pacer: which reports become events ----------------------------------------------------


def test_a_prompt_read_in_a_blink_sends_no_progress() -> None:
    pacer = ProgressPacer()
    assert not pacer.note(PromptProgress(0, 50), 10.0)
    assert not pacer.note(PromptProgress(50, 50), 10.0 + PROGRESS_INTERVAL_S / 2)
    assert pacer.sent == 0 and pacer.reused == 0
    assert pacer.eval_ms == pytest.approx(PROGRESS_INTERVAL_S / 2 * 1000)


def test_progress_at_most_once_per_interval_and_the_last_once_a_bar_shows() -> None:
    pacer = ProgressPacer()
    step = PROGRESS_INTERVAL_S / 4 * 1.01  # (a hair over, so float rounding cannot matter)
    sent = [pacer.note(PromptProgress(i * 10, 400), 100.0 + i * step) for i in range(40)]
    assert pacer.note(PromptProgress(400, 400), 100.0 + 40 * step)  # the bar fills up
    assert not pacer.note(PromptProgress(400, 400), 101.0 + 40 * step)  # once
    assert sum(sent) == 9  # one per interval after the first: reports at 4, 8, ... 36
    assert [i for i, due in enumerate(sent) if due] == list(range(4, 40, 4))


def test_progress_never_goes_back_or_out_of_range() -> None:
    pacer = ProgressPacer()
    pacer.note(PromptProgress(100, 400), 0.0)
    assert pacer.reused == 100  # the first report: the prefix found in the cache
    assert not pacer.note(PromptProgress(50, 400), 1.0)  # backwards: a confused server
    assert not pacer.note(PromptProgress(500, 400), 2.0)  # more than the total
    assert not pacer.note(PromptProgress(-1, 400), 3.0)
    assert pacer.note(PromptProgress(200, 400), 4.0)
    assert pacer.done == 200


# -- the event on the wire and in the consumer --------------------------------------------------


def test_progress_round_trips_on_the_wire() -> None:
    event = Progress(7, 2, 1234, 4426)
    wire = to_wire(event)
    assert wire == {"type": "progress", "gen": 7, "seq": 2, "done": 1234, "total": 4426}
    assert from_wire(wire) == event


@pytest.mark.parametrize(
    "done, total",
    [(5, 4), (-1, 4), (True, 4), ("1", 4), (1, None), (1.5, 4)],
)
def test_malformed_progress_is_refused(done: object, total: object) -> None:
    with pytest.raises(ValueError):
        from_wire({"type": "progress", "gen": 1, "seq": 1, "done": done, "total": total})


def test_the_consumer_keeps_the_latest_progress_of_the_current_generation() -> None:
    consumer = StreamConsumer()
    consumer.follow(3)
    tick = consumer.accept(
        [Progress(3, 1, 10, 100), Progress(2, 5, 99, 100), Progress(3, 2, 40, 100)]
    )
    assert tick.progress == Progress(3, 2, 40, 100) and tick.stale == 1 and not tick.chunks
    tick = consumer.accept([Chunk(3, 3, "Hi"), Done(3, 4, "stop")])
    assert tick.progress is None and tick.text == "Hi" and tick.final is not None


# -- the worker, with a backend that reads slowly ------------------------------------------------


class SteppingClock:
    """A clock for the progress throttles (``GenerationController.progress_clock``) that moves
    ``step`` seconds each time it is read, once per report: which reports become events
    then follows from the reports alone, however fast or busy the machine."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class HeldReading(WrappedBackend):
    """Reads as ``inner`` does, but after the report that reaches ``hold_at`` tokens, waits
    until :attr:`release` is set (or Stop comes): a window can be looked at, or stopped,
    while the prompt is certainly being read. Worker thread."""

    def __init__(self, inner: ScriptedBackend, hold_at: int) -> None:
        super().__init__(inner)
        self.hold_at = hold_at
        self.release = threading.Event()
        self.holding = threading.Event()

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        tokens = self.inner.stream(request, cancel)
        try:
            while True:
                try:
                    piece = next(tokens)
                except StopIteration as end:
                    return end.value or "stop"
                yield piece
                if isinstance(piece, PromptProgress) and piece.done >= self.hold_at:
                    self.holding.set()
                    while not self.release.wait(0.005):  # (a gate poll that also sees Stop)
                        if cancel.is_set():
                            return "cancelled"
        finally:
            tokens.close()


def test_progress_events_count_order_and_total() -> None:
    """Reports every 100 tokens, the clock moving 0.11 s per report: the first report starts
    the reading (no event in its first 0.2 s), then one event per 0.2 s, and the last."""
    backend = reading_backend(prompt_rate=2000.0)  # a report every 100 tokens
    total = backend.count_tokens(LONG)
    controller = GenerationController(backend, EventChannel())
    controller.progress_clock = SteppingClock(step=0.11)
    gen = controller.start(GenerationRequest(LONG, Sampling(max_tokens=20)))
    events = run_to_end(controller.channel, gen)
    progress = [e for e in events if isinstance(e, Progress)]
    first_chunk = next(i for i, e in enumerate(events) if isinstance(e, Chunk))
    assert events[: len(progress)] == progress and first_chunk == len(progress)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert {p.total for p in progress} == {total} and total == 411
    # reports 0, 100, 200, 300, 400, 411 at 0.11, 0.22, ... 0.66 s
    assert [p.done for p in progress] == [200, 400, total]
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "stop" and final.stats.tokens == 20
    assert final.stats.prompt_eval_ms == pytest.approx(550)  # the first report to the last
    assert final.stats.prompt_reused == 0
    assert controller.current is not None and controller.current.progress_sent == len(progress)


@pytest.mark.parametrize("at", ["first report", "mid-way", "last report"])
def test_stop_while_the_prompt_is_read(at: str) -> None:
    backend = reading_backend(prompt_rate=2000.0)  # a report every 100 tokens
    total = backend.count_tokens(LONG)
    controller = GenerationController(backend, EventChannel())
    stop_at = {"first report": 0, "mid-way": 200, "last report": 400}[at]  # of 411
    seen: list[int] = []

    class Watching(FaultInjector):
        def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
            for piece in super().stream(request, cancel):
                if isinstance(piece, PromptProgress):
                    seen.append(piece.done)
                    if piece.done >= stop_at:
                        controller.stop()
                yield piece

    controller.backend = Watching(backend)
    gen = controller.start(GenerationRequest(LONG, Sampling(max_tokens=20)))
    worker = controller.current
    assert worker is not None
    events = run_to_end(controller.channel, gen)
    assert worker.join(5)
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "cancelled" and final.stats.tokens == 0
    assert not any(isinstance(e, Chunk) for e in events)
    assert max(seen) < total  # it stopped before the prompt was all read
    controller.stop()  # a second Stop: nothing left to stop, nothing happens
    assert sum(isinstance(e, Done) for e in events) == 1
    # the model is free: the next question starts and ends at once
    controller.backend = backend
    backend.prompt_rate = 0
    gen2 = controller.start(GenerationRequest(LONG, Sampling(max_tokens=5)))
    assert isinstance(run_to_end(controller.channel, gen2)[-1], Done)


def test_faults_count_tokens_not_progress() -> None:
    """The self-test's crash at token k counts answer tokens: progress is not a token."""
    injector = FaultInjector(reading_backend(prompt_rate=4000.0))
    injector.arm(3)
    controller = GenerationController(injector, EventChannel())
    gen = controller.start(GenerationRequest(LONG, Sampling(max_tokens=20)))
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Error) and final.kind == "model_died" and final.stats.tokens == 3


# -- llama.cpp's server: return_progress -------------------------------------------------------


def test_only_a_llama_cpp_server_is_asked_for_progress() -> None:
    request = GenerationRequest(LONG, Sampling(max_tokens=5))
    assert "return_progress" not in openai_protocol.request_body(request, "m")
    assert openai_protocol.request_body(request, "m", progress=True)["return_progress"] is True
    llama_cpp = {"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]}
    other = {"object": "list", "data": [{"id": "m", "owned_by": "vllm"}]}
    assert openai_protocol.is_llama_cpp(llama_cpp)
    assert not openai_protocol.is_llama_cpp(other)
    assert not openai_protocol.is_llama_cpp({"data": "nonsense"})
    assert not openai_protocol.is_llama_cpp(None)


@pytest.mark.parametrize(
    "chunk, expected",
    [
        ({"prompt_progress": {"total": 36, "cache": 4, "processed": 20}}, PromptProgress(20, 36)),
        ({"choices": []}, None),  # absent: fine
        ({"prompt_progress": {"total": 36}}, None),
        ({"prompt_progress": {"total": 36, "processed": 40}}, None),
        ({"prompt_progress": {"total": "36", "processed": 1}}, None),
        ({"prompt_progress": [1, 2]}, None),
    ],
)
def test_llama_cpp_prompt_progress_is_read_when_sane(
    chunk: dict[str, object], expected: PromptProgress | None
) -> None:
    assert openai_protocol.prompt_progress(chunk) == expected


# -- loading: progress and cancel ----------------------------------------------------------------


@dataclass
class StepLoading(ScriptedBackend):
    """Loads in ``steps`` steps, reporting each, at once."""

    steps: int = 20

    def load(self, watch: LoadWatch | None = None) -> None:
        for step in range(self.steps + 1):
            if watch is not None:
                watch.progress(step / self.steps)


@dataclass
class HeldLoading(ScriptedBackend):
    """Reports that its load began, then waits until :attr:`release` is set (and loads) or
    the load is cancelled (and frees what it took). Loader thread."""

    loads: list[str] = field(default_factory=list)
    freed: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    def load(self, watch: LoadWatch | None = None) -> None:
        watch = watch or LoadWatch()
        self.loads.append("started")
        watch.progress(0.0)
        while not self.release.wait(0.005):  # (a gate poll that also sees the cancel)
            if watch.cancelled:
                break
        if not watch.progress(1.0):
            self.freed += 1  # what a real backend frees when the load is given up
            raise LoadCancelled(f"Loading {self.name} was cancelled; its memory is free.")
        self.loads.append("loaded")


def loaded_at_once(name: str) -> HeldLoading:
    backend = HeldLoading(name=name)
    backend.release.set()
    return backend


def load_events(channel: EventChannel, until: type, timeout: float = 30.0) -> list[object]:
    events: list[object] = []
    while True:
        event = channel.get(timeout=timeout)
        events.append(event)
        if isinstance(event, until):
            return events


def test_load_progress_is_throttled_by_its_clock() -> None:
    """21 reports, the clock moving 30 ms per report: the first, then one per 0.1 s (every
    fourth report), and the last."""
    controller = GenerationController(StepLoading(steps=20), EventChannel())
    controller.progress_clock = SteppingClock(step=0.03)
    controller.load_async()
    events = load_events(controller.channel, ModelReady)
    progress = [e.fraction for e in events if isinstance(e, ModelLoading)]
    assert progress == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert controller.load_reports == len(progress)


def test_cancel_a_load_twice_gives_one_sentence() -> None:
    backend = HeldLoading()
    controller = GenerationController(backend, EventChannel())
    controller.load_async()
    load_events(controller.channel, ModelLoading)
    assert controller.cancel_load()
    assert not controller.cancel_load()  # a second cancel changes nothing
    events = load_events(controller.channel, ModelFailed)
    failed = events[-1]
    assert isinstance(failed, ModelFailed) and failed.cancelled
    assert "cancelled" in failed.message and "\n" not in failed.message
    assert backend.freed == 1 and "loaded" not in backend.loads
    assert controller._loader is not None
    controller._loader.join(5)
    assert not controller._loader.is_alive()
    assert not controller.loading and not controller.loaded
    assert controller.channel.drain() == []  # the loader is gone: exactly one sentence


def test_choosing_another_backend_while_one_loads_cancels_it() -> None:
    first = HeldLoading(name="first")
    second = loaded_at_once("second")
    controller = GenerationController(first, EventChannel())
    controller.load_async()
    load_events(controller.channel, ModelLoading)
    controller.switch_backend(second, replace=True)
    events = load_events(controller.channel, ModelReady)
    failed = [e for e in events if isinstance(e, ModelFailed)]
    assert len(failed) == 1 and failed[0].cancelled and "first" in failed[0].message
    ready = events[-1]
    assert isinstance(ready, ModelReady) and ready.name == "second"
    assert controller.backend is second and controller.loaded
    assert first.freed == 1 and second.loads == ["started", "loaded"]


def test_shutdown_during_a_load_cancels_it_and_returns() -> None:
    backend = HeldLoading()
    controller = GenerationController(backend, EventChannel())
    controller.load_async()
    load_events(controller.channel, ModelLoading)
    assert controller.shutdown(timeout=5)
    assert backend.freed == 1 and not controller.loading


# -- the window --------------------------------------------------------------------------------


@pytest.mark.gui
def test_the_window_shows_reading_progress_then_the_answer(root: tk.Tk, make_app) -> None:
    tokens = TokenGate()  # the answer, a token at a time after the reading
    backend = HeldReading(reading_backend(prompt_rate=2000.0, gate=tokens), hold_at=200)
    app = make_app(backend, sampling=Sampling(max_tokens=20))
    app.controller.progress_clock = SteppingClock(step=0.11)  # an event at 200 tokens
    assert not app.progress.showing
    assert app.flow.send(LONG[1].content)
    pump_until(root, lambda: app.progress.showing, what="the progress line")
    assert app.progress.kind == "reading" and backend.holding.is_set()
    total = app.controller.current.prompt_tokens  # (with the window's system prompt)
    assert app.status.get() == f"Reading your message … 200 / {total} tokens (Esc stops)"
    assert float(app.progress.bar.cget("value")) == pytest.approx(200 / total)
    app.toggle_language()
    assert app.status.get().startswith("正在读取你的消息")
    app.toggle_language()
    # The estimate, from the speed since a prompt's first report (the times given here):
    app.progress.reading(Progress(-1, 1, 100, 410), now=50.0)
    assert " left" not in app.status.get()  # no speed measured yet
    app.progress.reading(Progress(-1, 2, 300, 410), now=51.0)  # 200 tokens a second
    assert (
        app.status.get() == "Reading your message … 300 / 410 tokens · about 1 s left (Esc stops)"
    )
    backend.release.set()
    tokens.release(1)
    pump_until(root, lambda: bool(app.transcript.answers[-1].text), timeout=30, what="text")
    assert not app.progress.showing and not app.progress.winfo_ismapped()
    assert app.status.get() == "Generating … (Esc stops)"  # what it said before the reading
    tokens.release(19)
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=30, what="the answer")


@pytest.mark.gui
def test_stop_while_reading_hides_the_progress_and_the_next_question_starts(
    root: tk.Tk, make_app
) -> None:
    inner = reading_backend(prompt_rate=2000.0)
    app = make_app(HeldReading(inner, hold_at=200), sampling=Sampling(max_tokens=20))
    app.controller.progress_clock = SteppingClock(step=0.11)
    app.flow.send(LONG[1].content)
    pump_until(root, lambda: app.progress.showing, what="the progress line")
    worker = app.controller.current
    app.flow.stop()
    assert not app.progress.showing
    pump_until(root, lambda: not worker.is_alive(), timeout=10, what="the worker to leave")
    app.flow.stop()  # a second Stop is harmless
    inner.prompt_rate = 0
    assert app.flow.send("And now?")
    pump_until(
        root, lambda: len(app.flow.answering.finished) == 1, timeout=10, what="the next answer"
    )
    assert (
        isinstance(app.flow.answering.finished[-1], Done)
        and app.flow.answering.finished[-1].reason != "cancelled"
    )


@pytest.mark.gui
def test_the_window_shows_load_progress_and_a_cancelled_load_in_one_sentence(
    root: tk.Tk, make_app
) -> None:
    slow = HeldLoading(name="slow.gguf")
    app = make_app(slow, wait=False)
    pump_until(root, lambda: app.progress.kind == "loading", what="the load progress")
    assert str(app.progress.label.cget("text")) == "0 % loaded"
    assert app.status.get() == "Loading slow.gguf …"
    app.controller.switch_backend(loaded_at_once("quick"), replace=True)
    pump_until(root, lambda: app.flow.model_ready, what="the other model")
    assert not app.progress.showing
    assert slow.freed == 1
    assert not [n for n in app.transcript.plain_text().splitlines() if "cancelled" in n]


def test_loadwatch_after_cancel_reports_nothing() -> None:
    reports: list[float] = []
    watch = LoadWatch(reports.append)
    assert watch.progress(0.5) and reports == [0.5]
    watch.cancel()
    watch.cancel()
    assert watch.cancelled and not watch.progress(0.7) and reports == [0.5]
