"""GenerationWorker and GenerationController with the scripted backend and small fakes.

Every test checks the event contract: whole characters, seq 1, 2, 3, ... and exactly one final
event per generation. Deadlines below only turn a hang into a clear failure; nothing here
measures speed (that is the benchmark's job).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import queue
import random
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from tests.conftest import wait_until
from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.conversation import Message, Sampling
from tkchat.events import (
    AppEvent,
    Chunk,
    Done,
    Error,
    GenerationEvent,
    ModelFailed,
    ModelReady,
)
from tkchat.generate.backend import (
    BackendError,
    ContextOverflowError,
    GenerationRequest,
    LoadWatch,
    ModelLoadError,
    TokenStream,
)
from tkchat.generate.controller import GenerationController
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, scripted_tokens
from tkchat.generate.worker import GenerationWorker, Utf8Assembler
from tkchat.threads import WORKER_NICE
from tkchat.transport.channel import EventChannel

DEADLINE_S = 5.0  # generous: only there so a hang fails with a message instead of forever
SCRIPT_TOKENS = scripted_tokens()


def make_request(
    prompt: str = "Why does the window stay smooth?", max_tokens: int = 100_000
) -> GenerationRequest:
    return GenerationRequest((Message("user", prompt),), Sampling(max_tokens=max_tokens))


# -- helpers ---------------------------------------------------------------------------------


def is_final(event: AppEvent) -> bool:
    return isinstance(event, (Done, Error))


class Collector:
    """Pulls events off a channel until a condition holds, keeping everything it saw."""

    def __init__(self, channel: EventChannel) -> None:
        self.channel = channel
        self.events: list[AppEvent] = []

    def of(self, gen: int) -> list[GenerationEvent]:
        return [e for e in self.events if isinstance(e, (Chunk, Done, Error)) and e.gen == gen]

    def until(self, condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
        def holds_or_take_one() -> bool:
            if condition():
                return True
            with contextlib.suppress(queue.Empty):  # this get is the wait between two looks
                self.events.append(self.channel.get(timeout=0.05))
            return False

        try:
            wait_until(holds_or_take_one, timeout=timeout, what=what, interval=0)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}; got {len(self.events)} events, last: {self.events[-3:]!r}"
            ) from None

    def until_final(self, *gens: int, timeout: float = DEADLINE_S) -> None:
        self.until(
            lambda: all(any(is_final(e) for e in self.of(gen)) for gen in gens),
            f"the final event of generation(s) {gens}",
            timeout,
        )

    def until_text(self, gen: int, timeout: float = DEADLINE_S) -> None:
        self.until(
            lambda: any(isinstance(e, Chunk) for e in self.of(gen)),
            f"the first chunk of generation {gen}",
            timeout,
        )

    def settle(self) -> None:
        """Take whatever is still queued (call after the worker threads have exited)."""
        self.events.extend(self.channel.drain())


def collect_events(
    channel: EventChannel, gen: int, timeout: float = DEADLINE_S
) -> list[GenerationEvent]:
    """Drain until ``gen``'s final event (with a deadline); return ``gen``'s events."""
    collector = Collector(channel)
    collector.until_final(gen, timeout=timeout)
    return collector.of(gen)


def check_generation(events: list[GenerationEvent], gen: int) -> tuple[str, Done | Error]:
    """Assert the contract for one generation; return its text and its final event."""
    assert events, f"generation {gen} sent nothing"
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), (
        f"seq of generation {gen} is not 1, 2, 3, ...: {[e.seq for e in events]}"
    )
    finals = [e for e in events if isinstance(e, (Done, Error))]
    assert len(finals) == 1, f"generation {gen}: {len(finals)} final events, expected exactly 1"
    final = events[-1]
    assert isinstance(final, (Done, Error)), "the final event must come last"
    text = "".join(e.text for e in events if isinstance(e, Chunk))
    return text, final


def assert_whole_characters(events: list[GenerationEvent]) -> None:
    for event in events:
        if isinstance(event, Chunk):
            assert "\ufffd" not in event.text, f"replacement character in {event!r}"
            assert not any(0xD800 <= ord(c) <= 0xDFFF for c in event.text), (
                f"lone surrogate in {event!r}"
            )
            event.text.encode("utf-8")  # strict: would raise on a surrogate


def run_worker(
    backend: object,
    request: GenerationRequest | None = None,
    *,
    gen: int = 1,
    channel: EventChannel | None = None,
) -> tuple[GenerationWorker, list[GenerationEvent]]:
    """Run one generation to its end; check that the thread exits and nothing follows."""
    channel = channel or EventChannel()
    lock = threading.Lock()
    worker = GenerationWorker(backend, request or make_request(), gen, channel, lock)  # type: ignore[arg-type]
    worker.start()
    collector = Collector(channel)
    collector.until_final(gen)
    assert worker.join(DEADLINE_S), "the worker thread did not exit"
    collector.settle()
    assert not lock.locked(), "the worker left the model lock held"
    return worker, collector.of(gen)


# -- fake backends ---------------------------------------------------------------------------


@dataclass
class FakeBackend:
    """Defaults for the Backend protocol; subclasses override ``stream``."""

    name: str = "fake"
    n_ctx: int = 2048
    context_known: bool = True
    model: str | None = None
    json_support: str = "none"
    closed: int = 0

    def load(self, watch: LoadWatch | None = None) -> None:
        pass

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(messages)

    def close(self) -> None:
        self.closed += 1

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        raise NotImplementedError


@dataclass
class EndlessBackend(FakeBackend):
    """Yields a word every millisecond until cancelled; records that its loop was closed."""

    loop_closed: threading.Event = field(default_factory=threading.Event)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        try:
            while True:
                cancel.wait(0.001)
                yield "tick 😀 ".encode()
        finally:
            self.loop_closed.set()


@dataclass
class RaisesAtOnceBackend(FakeBackend):
    """``stream`` is a plain function that raises before returning any generator."""

    exc: Exception = field(default_factory=lambda: ValueError("bad sampling settings"))

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        raise self.exc


@dataclass
class RaisesAfterBackend(FakeBackend):
    """A generator that yields ``before`` pieces, then raises ``exc``."""

    before: tuple[bytes, ...] = ()
    exc: Exception = field(default_factory=lambda: BackendError("lost the model"))

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        yield from self.before
        raise self.exc


@dataclass
class StubbornBackend(FakeBackend):
    """Misbehaves: keeps yielding when the worker closes it (ignores GeneratorExit)."""

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        while True:
            try:
                yield b"x"
            except GeneratorExit:
                yield b"still here"


class RateLimitedError(BackendError):
    kind = "rate_limited"


@dataclass
class ByPromptBackend(FakeBackend):
    """Plays a different backend depending on the user's prompt (one shared model)."""

    by_prompt: dict[str, object] = field(default_factory=dict)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        backend = self.by_prompt[request.messages[-1].content]
        return backend.stream(request, cancel)  # type: ignore[attr-defined,no-any-return]


# -- Utf8Assembler ---------------------------------------------------------------------------


def test_assembler_byte_by_byte_gives_back_the_script() -> None:
    assembler = Utf8Assembler()
    pieces = [assembler.feed(bytes([byte])) for byte in SCRIPT.encode("utf-8")]
    assert "".join(pieces) + assembler.finish() == SCRIPT
    assert all("\ufffd" not in piece for piece in pieces)
    assert all(len(piece) <= 1 for piece in pieces)  # nothing but whole characters come out


def test_assembler_holds_a_split_character_until_it_is_complete() -> None:
    assembler = Utf8Assembler()
    emoji = "𝄞".encode()
    assert len(emoji) == 4
    assert assembler.feed(b"a" + emoji[:1]) == "a"
    assert assembler.feed(emoji[1:3]) == ""
    assert assembler.feed(emoji[3:] + "中".encode()[:2]) == "𝄞"
    assert assembler.feed("中".encode()[2:]) == "中"
    assert assembler.finish() == ""


@pytest.mark.parametrize("seed", range(20))
def test_assembler_with_random_cuts(seed: int) -> None:
    rng = random.Random(seed)
    data = SCRIPT.encode("utf-8")
    cuts = sorted(rng.sample(range(1, len(data)), k=rng.randint(1, 200)))
    assembler = Utf8Assembler()
    out = [assembler.feed(data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    assert "".join(out) + assembler.finish() == SCRIPT


def test_assembler_replaces_invalid_bytes_instead_of_raising() -> None:
    assembler = Utf8Assembler()
    assert assembler.feed(b"ok \xff\xfe ok") == "ok \ufffd\ufffd ok"


def test_assembler_finish_marks_an_incomplete_tail() -> None:
    assembler = Utf8Assembler()
    assert assembler.feed("中".encode()[:2]) == ""
    assert assembler.finish() == "\ufffd"


# -- whole generations -----------------------------------------------------------------------


def test_full_script_arrives_intact_and_in_order() -> None:
    worker, events = run_worker(ScriptedBackend(rate=0))
    text, final = check_generation(events, 1)
    assert text == SCRIPT
    assert isinstance(final, Done)
    assert final.reason == "stop"
    assert final.stats.tokens == len(SCRIPT_TOKENS)
    assert final.stats.ttft_ms is not None and final.stats.ttft_ms >= 0
    assert worker.exited_at is not None
    assert worker.cancelled_at is None
    assert_whole_characters(events)


def test_full_script_at_a_rate_arrives_intact() -> None:
    # A high rate still goes through the pacing code path (cancel.wait between tokens).
    _, events = run_worker(ScriptedBackend(rate=20_000))
    text, final = check_generation(events, 1)
    assert text == SCRIPT
    assert isinstance(final, Done) and final.reason == "stop"


@pytest.mark.parametrize("coalesce", [True, False])
def test_split_utf8_still_yields_exactly_the_script(coalesce: bool) -> None:
    backend = ScriptedBackend(rate=0, split_utf8=True)
    pieces = list(backend.pieces(None))
    _, events = run_worker(backend, channel=EventChannel(coalesce=coalesce))
    text, final = check_generation(events, 1)
    assert text == SCRIPT
    assert "😀" in text and "𝄞" in text and "中文" in text
    assert isinstance(final, Done) and final.reason == "stop"
    assert final.stats.tokens == len(pieces)
    assert_whole_characters(events)


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_repeated_script_up_to_a_token_count() -> None:
    backend = ScriptedBackend(rate=0, tokens=len(SCRIPT_TOKENS) * 2 + 5)
    _, events = run_worker(backend)
    text, final = check_generation(events, 1)
    assert text == SCRIPT * 2 + "".join(SCRIPT_TOKENS[:5])
    assert isinstance(final, Done) and final.reason == "stop"


@pytest.mark.parametrize("max_tokens", [1, 7, 50])
def test_max_tokens_cap_ends_with_length(max_tokens: int) -> None:
    _, events = run_worker(ScriptedBackend(rate=0), make_request(max_tokens=max_tokens))
    text, final = check_generation(events, 1)
    assert text == "".join(SCRIPT_TOKENS[:max_tokens])
    assert isinstance(final, Done)
    assert final.reason == "length"
    assert final.stats.tokens == max_tokens


def test_max_tokens_equal_to_the_answer_is_a_normal_stop() -> None:
    request = make_request(max_tokens=len(SCRIPT_TOKENS))
    _, events = run_worker(ScriptedBackend(rate=0), request)
    text, final = check_generation(events, 1)
    assert text == SCRIPT
    assert isinstance(final, Done) and final.reason == "stop"


@pytest.mark.parametrize("fail_at", [1, 2, 10, len(SCRIPT_TOKENS)])
def test_fail_at_gives_one_error_after_the_text_before_it(fail_at: int) -> None:
    _, events = run_worker(ScriptedBackend(rate=0, fail_at=fail_at))
    text, final = check_generation(events, 1)
    assert text == "".join(SCRIPT_TOKENS[: fail_at - 1])
    assert isinstance(final, Error)
    assert final.kind == "RuntimeError"
    assert f"token {fail_at}" in final.message
    assert final.stats.tokens == fail_at - 1


def test_stream_raising_immediately_gives_one_error() -> None:
    _, events = run_worker(RaisesAtOnceBackend())
    assert events == [events[0]]
    final = events[0]
    assert isinstance(final, Error)
    assert final.seq == 1
    assert final.kind == "ValueError"
    assert final.message == "ValueError: bad sampling settings"


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (BackendError("something failed"), "backend_error"),
        (ContextOverflowError("the chat is too long"), "context_overflow"),
        (ModelLoadError("the model went away"), "model_load"),
        (RateLimitedError("slow down"), "rate_limited"),
    ],
)
def test_backend_error_subclass_at_once_gives_its_kind(exc: BackendError, kind: str) -> None:
    _, events = run_worker(RaisesAtOnceBackend(exc=exc))
    text, final = check_generation(events, 1)
    assert text == ""
    assert isinstance(final, Error)
    assert final.kind == kind
    assert final.message == str(exc)


def test_backend_error_mid_stream_keeps_the_text_before_it() -> None:
    before = (b"Hello ", "世界 ".encode(), "😀".encode()[:2])  # ends inside an emoji
    backend = RaisesAfterBackend(before=before, exc=ContextOverflowError("too long"))
    _, events = run_worker(backend)
    text, final = check_generation(events, 1)
    assert text == "Hello 世界 "
    assert isinstance(final, Error)
    assert (final.kind, final.message) == ("context_overflow", "too long")
    assert final.stats.tokens == 3
    assert_whole_characters(events)


def test_a_backend_ignoring_close_still_gets_exactly_one_final() -> None:
    """Contract holds even when a backend misbehaves on cancel."""
    channel = EventChannel()
    worker = GenerationWorker(StubbornBackend(), make_request(), 1, channel, threading.Lock())
    worker.start()
    collector = Collector(channel)
    collector.until_text(1)
    worker.cancel()
    collector.until_final(1)
    assert worker.join(DEADLINE_S)
    collector.settle()
    _, final = check_generation(collector.of(1), 1)
    assert isinstance(final, (Done, Error))


def test_on_exit_is_called_once_with_the_worker() -> None:
    seen: list[GenerationWorker] = []
    channel = EventChannel()
    worker = GenerationWorker(
        ScriptedBackend(rate=0), make_request(), 3, channel, threading.Lock(), on_exit=seen.append
    )
    worker.start()
    assert worker.join(DEADLINE_S)
    assert seen == [worker]


# -- cancellation ----------------------------------------------------------------------------


def test_cancel_mid_stream_ends_with_cancelled_and_the_thread_exits() -> None:
    channel = EventChannel()
    backend = ScriptedBackend(rate=500, tokens=1_000_000)  # would take minutes
    worker = GenerationWorker(backend, make_request(), 1, channel, threading.Lock())
    worker.start()
    collector = Collector(channel)
    collector.until_text(1)
    worker.cancel()
    assert worker.cancelled_at is not None
    collector.until_final(1)
    assert worker.join(DEADLINE_S), "a cancelled worker must leave the model loop"
    collector.settle()

    text, final = check_generation(collector.of(1), 1)
    assert isinstance(final, Done)
    assert final.reason == "cancelled"
    assert text, "the first chunk arrived before the cancel"
    repeats = len(text) // len(SCRIPT) + 2
    assert (SCRIPT * repeats).startswith(text)  # a prefix of the repeating script, nothing else
    assert worker.exited_at is not None


def test_a_gated_answer_sends_exactly_the_tokens_let_through_and_stops_at_the_gate() -> None:
    """The stepped scripted backend: no clock paces it, the test does. Stop reaches a worker
    waiting at the gate: the answer ends cancelled with nothing more, and the thread exits."""
    channel = EventChannel()
    gate = TokenGate()
    backend = ScriptedBackend(gate=gate, tokens=1_000)
    worker = GenerationWorker(backend, make_request(), 1, channel, threading.Lock())
    worker.start()
    gate.release(5)
    assert gate.wait_passed(5, DEADLINE_S)
    collector = Collector(channel)
    collector.until(lambda: "".join(collector_texts(collector)) == "".join(SCRIPT_TOKENS[:5]), "5")
    assert gate.passed == 5  # the sixth waits at the gate
    worker.cancel()
    collector.until_final(1)
    assert worker.join(DEADLINE_S), "Stop must reach a worker waiting at the gate"
    collector.settle()
    text, final = check_generation(collector.of(1), 1)
    assert isinstance(final, Done) and final.reason == "cancelled"
    assert text == "".join(SCRIPT_TOKENS[:5]) and gate.passed == 5


def collector_texts(collector: Collector) -> list[str]:
    return [e.text for e in collector.of(1) if isinstance(e, Chunk)]


def test_cancel_closes_the_backend_generator() -> None:
    backend = EndlessBackend()
    channel = EventChannel()
    lock = threading.Lock()
    worker = GenerationWorker(backend, make_request(), 1, channel, lock)
    worker.start()
    collector = Collector(channel)
    collector.until_text(1)
    worker.cancel()
    worker.cancel()  # idempotent
    assert worker.join(DEADLINE_S)
    assert backend.loop_closed.is_set(), "the backend's model loop was not closed"
    assert not lock.locked()
    collector.settle()
    text, final = check_generation(collector.of(1), 1)
    assert isinstance(final, Done) and final.reason == "cancelled"
    assert text.replace("tick 😀 ", "") == ""
    assert_whole_characters(collector.of(1))


def test_cancel_before_start_sends_only_the_final() -> None:
    backend = EndlessBackend()
    channel = EventChannel()
    worker = GenerationWorker(backend, make_request(), 5, channel, threading.Lock())
    worker.cancel()
    worker.start()
    events = collect_events(channel, 5)
    assert worker.join(DEADLINE_S)
    assert events == [Done(5, 1, "cancelled", events[0].stats)]  # type: ignore[union-attr]


# -- the controller --------------------------------------------------------------------------


def test_controller_runs_one_generation() -> None:
    channel = EventChannel()
    controller = GenerationController(ScriptedBackend(rate=0), channel)
    assert controller.gen == 0
    assert not controller.is_generating()
    gen = controller.start(make_request())
    assert gen == controller.gen == 1
    events = collect_events(channel, gen)
    assert controller.current is not None and controller.current.join(DEADLINE_S)
    assert not controller.is_generating()
    text, final = check_generation(events, gen)
    assert text == SCRIPT
    assert isinstance(final, Done) and final.reason == "stop"
    assert controller.stop() is None  # nothing left to stop


def test_controller_start_while_running_ends_the_old_one_and_runs_the_new_one() -> None:
    endless = EndlessBackend()
    backend = ByPromptBackend(
        by_prompt={"endless": endless, "script": ScriptedBackend(rate=0, split_utf8=True)}
    )
    channel = EventChannel()
    controller = GenerationController(backend, channel)
    consumer = StreamConsumer()
    collector = Collector(channel)

    old = controller.start(make_request("endless"))
    consumer.follow(old)
    collector.until_text(old)
    old_worker = controller.current
    assert old_worker is not None and controller.is_generating()

    new = controller.start(make_request("script"))  # the user asks again without Stop
    consumer.follow(new)
    assert (old, new) == (1, 2)
    assert old_worker.cancel_event.is_set()
    collector.until_final(old, new)
    assert old_worker.join(DEADLINE_S)
    assert controller.current is not None and controller.current.join(DEADLINE_S)
    collector.settle()
    assert endless.loop_closed.is_set()

    old_text, old_final = check_generation(collector.of(old), old)
    assert isinstance(old_final, Done) and old_final.reason == "cancelled"
    assert old_text.replace("tick 😀 ", "") == ""

    new_text, new_final = check_generation(collector.of(new), new)
    assert new_text == SCRIPT
    assert isinstance(new_final, Done) and new_final.reason == "stop"
    assert_whole_characters(collector.of(new))

    # What the UI shows after follow(new): the new answer only, once.
    shown = consumer.accept(collector.events)
    assert shown.text == SCRIPT
    assert shown.final == new_final
    assert "tick" not in shown.text


def test_controller_stop_cancels_and_returns_the_worker() -> None:
    channel = EventChannel()
    controller = GenerationController(EndlessBackend(), channel)
    gen = controller.start(make_request())
    collector = Collector(channel)
    collector.until_text(gen)
    worker = controller.stop()
    assert worker is controller.current
    assert worker is not None and worker.cancelled_at is not None
    collector.until_final(gen)
    assert worker.join(DEADLINE_S)
    _, final = check_generation(collector.of(gen), gen)
    assert isinstance(final, Done) and final.reason == "cancelled"


def test_controller_shutdown_stops_and_closes_the_backend() -> None:
    backend = EndlessBackend()
    channel = EventChannel()
    controller = GenerationController(backend, channel)
    gen = controller.start(make_request())
    Collector(channel).until_text(gen)
    assert controller.shutdown(timeout=DEADLINE_S)
    assert backend.closed == 1
    assert not controller.is_generating()
    final = [e for e in channel.drain() if is_final(e)]
    assert len(final) == 1


@dataclass
class CountingBackend(ScriptedBackend):
    """A model whose count waits for the test, and whose close says what it found: the
    close of a model a count still reads was a segfault in llama.cpp (seen at the bench's
    close, three runs in four)."""

    counting: threading.Event = field(default_factory=threading.Event)
    go_on: threading.Event = field(default_factory=threading.Event)
    closed_while_counting: bool | None = None

    def count_tokens(self, messages: Sequence[Message]) -> int:
        self.counting.set()
        assert self.go_on.wait(DEADLINE_S)
        self.counting.clear()
        return super().count_tokens(messages)

    def close(self) -> None:
        self.closed_while_counting = self.counting.is_set()


def test_shutdown_frees_the_model_only_once_a_count_has_left_it() -> None:
    backend = CountingBackend()
    controller = GenerationController(backend, EventChannel())
    measure = controller.measure_context(make_request())
    assert backend.counting.wait(DEADLINE_S)  # the meter's count is reading the model
    # a count still under way when the window closes: shutdown waits for the model lock
    shut: list[bool] = []
    closing = threading.Thread(target=lambda: shut.append(controller.shutdown(DEADLINE_S)))
    closing.start()
    backend.go_on.set()
    closing.join(DEADLINE_S)
    assert shut == [True] and measure.done.is_set()
    assert backend.closed_while_counting is False


def test_a_model_a_count_will_not_leave_is_not_freed() -> None:
    backend = CountingBackend()
    controller = GenerationController(backend, EventChannel())
    controller.measure_context(make_request())
    assert backend.counting.wait(DEADLINE_S)
    assert controller.shutdown(timeout=0.01) is False  # (a bound, not a clock: it returns)
    assert backend.closed_while_counting is None  # not closed under the count's feet
    backend.go_on.set()


def test_controller_load_async_reports_ready() -> None:
    channel = EventChannel()
    controller = GenerationController(ScriptedBackend(), channel)
    controller.load_async()
    event = channel.get(timeout=DEADLINE_S)
    assert isinstance(event, ModelReady)
    assert (event.name, event.n_ctx) == ("scripted", 8192)
    assert event.load_s >= 0
    assert controller.loaded


@dataclass
class FailingLoadBackend(FakeBackend):
    exc: Exception = field(default_factory=lambda: ModelLoadError("Model file not found: x"))

    def load(self, watch: LoadWatch | None = None) -> None:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (ModelLoadError("Model file not found: /m.gguf"), "Model file not found: /m.gguf"),
        (OSError("disk on fire"), "Could not load the model: OSError: disk on fire"),
    ],
)
def test_controller_load_async_reports_failure(exc: Exception, message: str) -> None:
    channel = EventChannel()
    controller = GenerationController(FailingLoadBackend(exc=exc), channel)
    controller.load_async()
    event = channel.get(timeout=DEADLINE_S)
    assert event == ModelFailed(message, name="fake")  # (the backend's name, for the window)
    assert not controller.loaded


def test_pieces_helper_really_splits_characters() -> None:
    """Guard for the split_utf8 tests: the scripted backend must cut multi-byte characters."""
    pieces = list(ScriptedBackend(split_utf8=True).pieces(None))
    assert b"".join(pieces) == SCRIPT.encode("utf-8")
    assert sum(not _decodes(p) for p in pieces) > 10
    decoder = codecs.getincrementaldecoder("utf-8")()
    assert "".join(decoder.decode(p) for p in pieces) == SCRIPT


# -- the window keeps its core ---------------------------------------------------------------


def _nice_of_task(tid: int) -> int:
    """A thread's nice value as the kernel keeps it (field 19 of /proc/self/task/TID/stat)."""
    with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
    return int(fields[16])  # fields[0] is field 3 (state): field 19 is index 16


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice values per thread: Linux")
def test_a_worker_not_asked_to_runs_at_its_starters_priority() -> None:
    """A server's workers (no window to protect) keep the priority they were started with:
    lowered, the model would only yield to other programs."""
    channel = EventChannel()
    worker = GenerationWorker(
        ScriptedBackend(rate=500, tokens=1_000_000), make_request(), 1, channel, threading.Lock()
    )
    worker.start()
    Collector(channel).until_text(1)
    try:
        tid = worker._thread.native_id
        assert tid is not None and not worker.lowered
        assert _nice_of_task(tid) == _nice_of_task(threading.get_native_id())
    finally:
        worker.cancel()
        worker.join(5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice values per thread: Linux")
def test_the_worker_runs_nicer_than_the_window_and_only_it() -> None:
    channel = EventChannel()
    main_before = _nice_of_task(threading.get_native_id())
    controller = GenerationController(ScriptedBackend(rate=500, tokens=1_000_000), channel)
    controller.worker_nice = WORKER_NICE  # as the window sets it
    worker = controller.new_worker(make_request(), channel, 1)
    worker.start()
    collector = Collector(channel)
    collector.until_text(1)  # the worker is inside its model loop
    tid = worker._thread.native_id
    assert tid is not None
    try:
        assert worker.lowered
        assert _nice_of_task(tid) == min(19, main_before + WORKER_NICE)
        assert os.getpriority(os.PRIO_PROCESS, tid) == _nice_of_task(tid)
        assert _nice_of_task(threading.get_native_id()) == main_before, "the window's stays"
    finally:
        worker.cancel()
        collector.until_final(1)
        assert worker.join(DEADLINE_S)
