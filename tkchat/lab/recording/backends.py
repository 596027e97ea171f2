"""Record a backend's tokens, and play recorded tokens back as a backend.

:class:`RecordingBackend` wraps any backend and notes, on the worker thread, when each token
came and which characters it completed (``tkchat record``). :class:`ReplayBackend` yields
such tokens again at their recorded pace (``tkchat replay``): the window above it — the fixed
pipeline or a broken one — cannot tell it from the model, so a class without the model, or
on a slower machine, sees the consumer handle exactly the stream measured elsewhere.

Neither knows the file format (:mod:`tkchat.lab.recording.file`): they take and give plain
``(seconds since the answer began, text)`` pairs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from tkchat.conversation import Message
from tkchat.events import FinishReason
from tkchat.generate.backend import (
    Backend,
    BackendError,
    GenerationRequest,
    JsonSupport,
    LoadWatch,
    PromptProgress,
    TokenStream,
    WrappedBackend,
)
from tkchat.generate.scripted import TokenGate
from tkchat.generate.worker import Utf8Assembler

TimedText = tuple[float, str]  # (seconds since the answer began, the characters completed)


class RecordingBackend(WrappedBackend):
    """Wraps a backend; each generation's tokens are kept in :attr:`tokens` (the latest
    generation only). Written on the worker thread by appending, read on the main thread
    once the answer has ended (or as it grows: a list append is atomic)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.tokens: list[TimedText] = []
        self.started: float | None = None  # perf_counter when the latest generation began
        self.request: GenerationRequest | None = None  # what it was asked

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread. The inner stream, unchanged; each token noted as it passes."""
        started = self.started = time.perf_counter()
        self.request = request
        tokens: list[TimedText] = []
        self.tokens = tokens
        assembler = Utf8Assembler()
        inner = self.inner.stream(request, cancel)
        try:
            while True:
                try:
                    piece = next(inner)
                except StopIteration as end:
                    return end.value or "stop"
                if not isinstance(piece, PromptProgress):
                    tokens.append((time.perf_counter() - started, assembler.feed(piece)))
                yield piece
        finally:
            inner.close()


class ReplayedError(BackendError):
    """The recorded answer ended with an error: the replay ends with the same message."""

    kind = "replayed_error"


def wait_unless_stopped(cancel: threading.Event, seconds: float) -> bool:
    """Wait ``seconds``; True (at once) if Stop comes first. Worker thread."""
    return cancel.wait(seconds)


@dataclass
class ReplayBackend:
    """Yields ``tokens`` at their recorded times, then ends as the recording did: with
    ``reason`` ("stop", "length", "cancelled"), or, if ``error`` is set, by raising it.

    ``speed`` 2.0 plays twice as fast; 1.0 is the recorded pace. ``clock`` and ``wait`` keep
    the pace (``perf_counter``, and a wait Stop cuts short): a test gives its own, and sees
    exactly which waits the recording asked for, with no time passing.

    ``gate`` (a :class:`~tkchat.generate.scripted.TokenGate`, set by the pipeline view while
    it steps or slows the answer) paces it instead: each token waits to be let through, and
    once the gate is taken out the recorded pace goes on from the token it had reached (a
    class that paused for a minute does not get a minute of tokens at once)."""

    tokens: Sequence[TimedText]
    reason: FinishReason = "stop"
    error: str | None = None
    speed: float = 1.0
    name: str = "replay"
    n_ctx: int = 8192
    # The recording holds no tokenizer: the chat goes as it is, counted roughly.
    context_known: ClassVar[bool] = False
    model: ClassVar[str | None] = None
    json_support: ClassVar[JsonSupport] = "none"  # it plays what was recorded, whatever is asked
    generations: int = field(default=0, init=False)
    # ``clock`` when the latest replayed answer began: where the recorded lag is drawn
    started: float | None = field(default=None, init=False)
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False)
    wait: Callable[[threading.Event, float], bool] = field(default=wait_unless_stopped, repr=False)
    gate: TokenGate | None = field(default=None, repr=False)

    @property
    def rate(self) -> float:
        """Tokens per second at the pace it plays (0: all at once), which the pipeline view's
        slow motion divides."""
        last = self.tokens[-1][0] if self.tokens else 0.0
        return len(self.tokens) / last * self.speed if last > 0 else 0.0

    def load(self, watch: LoadWatch | None = None) -> None:
        """Nothing to load: the tokens are in memory."""

    def close(self) -> None:
        """Nothing to free."""

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m.content) // 4 + 4 for m in messages)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread (or, in the ``blocking`` demo, the main thread: that is its point).
        The recorded answer whatever was asked: it is a recording."""
        self.generations += 1
        pace = self.started = self.clock()  # what the recorded times count from
        for at, text in self.tokens:
            gate = self.gate  # (read once: the view may take it out meanwhile)
            if gate is not None:
                if not gate.enter(cancel):
                    return "cancelled"
                pace = self.clock() - at / self.speed  # the pace goes on from this token
            elif self._wait(pace, at, cancel):
                return "cancelled"
            yield text.encode("utf-8")
        if self.error is not None:
            raise ReplayedError(self.error)
        return self.reason

    def _wait(self, started: float, at: float, cancel: threading.Event) -> bool:
        """Wait until ``at`` seconds (scaled) after ``started``; True if Stop came first."""
        delay = started + at / self.speed - self.clock()
        return delay > 0 and self.wait(cancel, delay)
