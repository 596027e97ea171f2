"""Runs one generation on a worker thread and turns its tokens into events.

The worker owns three guarantees of the event contract:

- text is whole characters: token bytes go through an incremental UTF-8 decoder, so a
  character whose bytes are split across tokens is sent once, complete;
- Stop really stops: ``cancel`` is checked after every token and the token generator is
  closed, so the model loop is left within one token;
- exactly one final event: ``done`` or ``error``, whatever the backend does (raise, hang up);
- stop strings (an OpenAI client's ``stop``) end the answer where they begin, for every
  backend, and are never sent (:mod:`tkchat.generate.stop`);
- bounded answers: ``max_tokens`` and :data:`~tkchat.limits.MAX_ANSWER_CHARS` are enforced
  here, for every backend (a server that ignores ``max_tokens`` is cut off all the same), and
  an error's message is cut to :data:`~tkchat.limits.MAX_ERROR_CHARS` (the full one logged).

While a long prompt is read, the backend reports how far; :class:`ProgressPacer` turns that
into a few ``progress`` events a second (none at all for a prompt read in a blink).
"""

from __future__ import annotations

import codecs
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from tkchat.events import FinishReason, GenerationStats
from tkchat.generate.backend import (
    Backend,
    BackendError,
    ContextOverflowError,
    GenerationRequest,
    PromptCapError,
    PromptProgress,
)
from tkchat.generate.chat_template import TemplateCancelled, stop_with
from tkchat.generate.context import MIN_ANSWER_ROOM, answer_room, fit_to_context
from tkchat.generate.stop import StopScanner
from tkchat.limits import MAX_ANSWER_CHARS, MAX_ERROR_CHARS, MAX_LOGGED_ERROR_CHARS, cut
from tkchat.threads import lower_this_thread, own_thread
from tkchat.transport.channel import EventSink, GenerationSender

log = logging.getLogger(__name__)


class Utf8Assembler:
    """Bytes in, whole characters out. Invalid bytes become U+FFFD instead of an exception."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self._decoder.decode(data, final=False)

    def finish(self) -> str:
        """Flush: an incomplete character left at the very end becomes U+FFFD."""
        return self._decoder.decode(b"", final=True)


PROGRESS_INTERVAL_S = 0.2  # at most five progress events a second: plenty for a bar


class ProgressPacer:
    """Which of a backend's :class:`PromptProgress` reports become ``progress`` events, and
    how long reading the prompt took. Worker thread.

    No event in the first :data:`PROGRESS_INTERVAL_S` (a short prompt shows no bar that
    flashes by), then at most one per interval, and the last report (all read) once a bar
    is showing, so it fills up before the answer starts. Reports that go backwards or out of
    range (a confused server) are ignored: what the window sees only ever grows.
    """

    def __init__(self) -> None:
        self.started: float | None = None  # the first report: reading began
        self.finished: float | None = None  # the report with everything read
        self.reused = 0  # done in the first report: the prefix found in the cache
        self.restored = 0  # of it, what came from a kept cache (the first report says)
        self.kept_bytes = 0
        self.done = -1
        self.sent = 0
        self._last: float = 0.0

    def note(self, report: PromptProgress, now: float) -> bool:
        """Take one report; True: send it as an event."""
        if not 0 <= report.done <= report.total or report.done < self.done:
            return False
        if self.started is None:
            self.started, self._last, self.reused = now, now, report.done
            self.restored, self.kept_bytes = min(report.restored, report.done), report.kept_bytes
        self.done = report.done
        if report.done == report.total:
            due = self.sent > 0 and self.finished is None  # once, even if repeated
            if self.finished is None:
                self.finished = now
        else:
            due = now - self._last >= PROGRESS_INTERVAL_S
        if due:
            self._last = now
            self.sent += 1
        return due

    @property
    def eval_ms(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return (self.finished - self.started) * 1000


class _Answer:
    """What one generation has produced so far: its counts and times, and the filters its
    text goes through (UTF-8 assembly, stop strings, the length budget). Worker thread."""

    def __init__(self, stops: tuple[str, ...], started: float) -> None:
        self.started = started
        self.assembler = Utf8Assembler()
        self.stops = StopScanner(stops)
        self.hit_stop = False  # a stop string ended the answer
        self.pacer = ProgressPacer()
        self.tokens = 0
        self.first_at: float | None = None
        self.last_at = started
        self.text_at: float | None = None  # the first text sent
        self.chars = 0

    def count_token(self) -> float:
        """One more token, now; returns now."""
        self.last_at = time.perf_counter()
        self.tokens += 1
        if self.first_at is None:
            self.first_at = self.last_at
        return self.last_at

    def within_budget(self, text: str) -> tuple[str, bool]:
        """``text`` cut to what is left of MAX_ANSWER_CHARS, and whether that was reached."""
        room = MAX_ANSWER_CHARS - self.chars
        full = len(text) > room
        if full:
            text = text[:room]
        self.chars += len(text)
        return text, full

    def stats(self, worker: GenerationWorker) -> GenerationStats:
        tps = None
        if self.first_at is not None and self.tokens > 1 and self.last_at > self.first_at:
            tps = (self.tokens - 1) / (self.last_at - self.first_at)
        return GenerationStats(
            tokens=self.tokens,
            ttft_ms=None if self.text_at is None else (self.text_at - self.started) * 1000,
            tokens_per_s=tps,
            elapsed_s=time.perf_counter() - self.started,
            finished_at=worker.exited_at or time.perf_counter(),
            prompt_tokens=worker.prompt_tokens,
            context_dropped=worker.context_dropped,
            prompt_reused=self.pacer.reused,
            prompt_eval_ms=self.pacer.eval_ms,
            prompt_restored=self.pacer.restored,
            kept_bytes=self.pacer.kept_bytes,
        )


class GenerationWorker:
    """One generation, on its own daemon thread. Create, then :meth:`start`."""

    def __init__(
        self,
        backend: Backend,
        request: GenerationRequest,
        gen: int,
        channel: EventSink,
        model_lock: threading.Lock,
        *,
        on_exit: Callable[[GenerationWorker], None] | None = None,
    ) -> None:
        self.backend = backend
        # One model runs one generation at a time: a new question waits on this lock for the
        # previous (stopped) worker to leave the model loop, which takes at most one token.
        self.model_lock = model_lock
        self.request = request
        self.gen = gen
        self.cancel_event = threading.Event()
        self.sender = GenerationSender(channel, gen)
        self.cancelled_at: float | None = None  # perf_counter when cancel() was called
        self.exited_at: float | None = None  # perf_counter when the model loop was left
        self.started_at: float | None = None  # perf_counter when start() was called
        self.first_token_at: float | None = None  # perf_counter of the first token
        self.tokens = 0  # tokens so far; read by the UI for the live tokens/s (an int is atomic)
        self.prompt_tokens = 0  # context tokens of the prompt, once fitted (read by the UI too)
        self.context_dropped = 0  # earlier messages left out so the chat fits the context
        self.progress_sent = 0  # progress events sent while the prompt was read
        self.nice = 0  # how far below its starter's priority it runs (the controller sets it)
        self.lowered = False  # this thread's scheduling priority is below the window's
        # What the prompt-reading pacer reads (seconds): which progress reports become
        # events. The controller sets it (a test hands in a clock it steps).
        self.progress_clock: Callable[[], float] = time.perf_counter
        self._on_exit = on_exit
        self._thread = own_thread(self._run, name=f"tkchat-gen-{gen}")

    def start(self) -> None:
        self.started_at = time.perf_counter()
        self._thread.start()

    def cancel(self) -> None:
        """Any thread. Ask the worker to stop; it leaves the model loop within one token."""
        if not self.cancel_event.is_set():
            self.cancelled_at = time.perf_counter()
            self.cancel_event.set()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def native_id(self) -> int | None:
        """The worker thread's id in the system (None before it starts): a benchmark reads
        how long it waited for a CPU (:func:`tkchat.stats.cpu_wait_ms`)."""
        return self._thread.native_id

    # -- worker thread -------------------------------------------------------------------------

    def _fit(self) -> GenerationRequest:
        """Worker thread, model lock held. The request as the model will see it: the context
        policy of :mod:`tkchat.generate.context` where the backend knows its context size (a
        remote server applies its own). Stop inside a model's chat template leaves the
        request as it is: the stream then ends at once, cancelled."""
        try:
            return self._fitted()
        except TemplateCancelled:
            return self.request

    def _fitted(self) -> GenerationRequest:
        request = self.request
        cap = request.max_prompt_tokens
        if not request.fit_context or not self.backend.context_known:
            # the backend's count (an estimate, for a remote server)
            self.prompt_tokens = self.backend.count_tokens(request.messages)
            if cap is not None and self.prompt_tokens > cap:
                raise _over_cap(self.prompt_tokens, cap)
            return request
        n_ctx, max_tokens = self.backend.n_ctx, request.sampling.max_tokens
        narrowing = cap if cap is not None and cap < n_ctx else None
        if narrowing is not None:  # the cap as a smaller context: the oldest turns go first
            room = max(answer_room(max_tokens, n_ctx), MIN_ANSWER_ROOM)
            n_ctx = min(n_ctx, narrowing + room)
        try:
            fit = fit_to_context(request.messages, self.backend.count_tokens, n_ctx, max_tokens)
        except ContextOverflowError:
            if narrowing is None:
                raise
            # its newest message alone is over the cap
            count = self.backend.count_tokens(request.messages[-1:])
            raise _over_cap(count, narrowing) from None
        self.prompt_tokens, self.context_dropped = fit.used, fit.dropped
        return replace(request, messages=fit.messages) if fit.dropped else request

    def _run(self) -> None:
        """Worker thread. Never raises: every path ends with one final event."""
        # Below the window's priority: on a busy machine the Tk main thread gets its turn.
        self.lowered = self.nice > 0 and lower_this_thread(self.nice)
        answer = _Answer(self.request.stop, time.perf_counter())
        try:
            with self.model_lock, stop_with(self.cancel_event):  # Stop reaches a chat template
                reason = self._generate(answer)
            self._finish(answer, reason)
        except BackendError as exc:
            self.exited_at = self.exited_at or time.perf_counter()
            full = getattr(exc, "full_message", None) or str(exc)
            self._send_error(exc.kind, full, answer.stats(self))
        except Exception as exc:  # the contract holds even for bugs in a backend
            self.exited_at = self.exited_at or time.perf_counter()
            self._send_error(type(exc).__name__, f"{type(exc).__name__}: {exc}", answer.stats(self))
        finally:
            if self._on_exit is not None:
                self._on_exit(self)

    def _generate(self, answer: _Answer) -> FinishReason:
        """Worker thread, model lock held. Pull the backend's pieces until it ends, Stop, a
        stop string or a limit; the stream is closed on every way out (GeneratorExit inside
        the backend: its loop ends here)."""
        # Enforced here whatever the backend does: a piece is a token (a server's chunk
        # counts as one), and no answer grows past MAX_ANSWER_CHARS.
        max_tokens = self.request.sampling.max_tokens
        stream = self.backend.stream(self._fit(), self.cancel_event)
        try:
            while not self.cancel_event.is_set():
                try:
                    piece = next(stream)
                except StopIteration as end:  # the backend's return value
                    return end.value or "stop"
                if isinstance(piece, PromptProgress):
                    if answer.pacer.note(piece, self.progress_clock()):
                        self._send_progress(piece)
                    continue
                if 0 < max_tokens <= answer.tokens:
                    # One piece more than asked for: a backend (a server) that ignores
                    # max_tokens. It is not shown.
                    return "length"
                ended = self._take(answer, piece)
                if ended is not None:
                    return ended
            return "cancelled"
        finally:
            stream.close()
            self.exited_at = time.perf_counter()

    def _take(self, answer: _Answer, piece: bytes) -> FinishReason | None:
        """Worker thread. One token: count it, send its text (less a stop string and what
        follows it); the reason to end here, if there is one."""
        now = answer.count_token()
        self.tokens = answer.tokens
        if self.first_token_at is None:
            self.first_token_at = now
        text = answer.assembler.feed(piece)
        if answer.stops.stops:  # (a flood without stop strings skips the call)
            text, answer.hit_stop = answer.stops.feed(text)
        full = self._emit(answer, text, now)
        if answer.hit_stop:
            return "stop"
        return "length" if full else None

    def _emit(self, answer: _Answer, text: str, now: float) -> bool:
        """Worker thread. Send ``text``, cut to what is left of MAX_ANSWER_CHARS; True once
        the answer is that long."""
        text, full = answer.within_budget(text)
        if text:
            if answer.text_at is None:
                answer.text_at = now
            self.sender.text(text)
        return full

    def _finish(self, answer: _Answer, reason: FinishReason) -> None:
        """Worker thread, out of the model loop. The last text, then ``done``."""
        if self.cancel_event.is_set():
            reason = "cancelled"
        if reason == "stop" and not answer.hit_stop:
            # Bytes left at a natural end are corrupt output: show them as U+FFFD. After a
            # length cut they are just half a character, and are dropped.
            text, answer.hit_stop = answer.stops.feed(answer.assembler.finish())
            self._emit(answer, text, time.perf_counter())
        if not answer.hit_stop:  # what waited to see if a stop string began there is text
            self._emit(answer, answer.stops.flush(), time.perf_counter())
        self.sender.done(reason, answer.stats(self))

    def _send_error(self, kind: str, message: str, stats: GenerationStats) -> None:
        """Worker thread. The final ``error``, its message cut for the screen; a cut message
        is logged whole (bounded too), so the full text stays available to whoever needs it."""
        shown = cut(message, MAX_ERROR_CHARS)
        if shown != message:
            log.warning(
                "generation %d failed (%s): %s", self.gen, kind, message[:MAX_LOGGED_ERROR_CHARS]
            )
        self.sender.error(cut(kind, 40), shown, stats)

    def _send_progress(self, report: PromptProgress) -> None:
        self.sender.progress(report.done, report.total)
        self.progress_sent += 1


def _over_cap(tokens: int, cap: int) -> PromptCapError:
    return PromptCapError(
        f"This prompt is {tokens:,} tokens; this server reads at most {cap:,} per request "
        "(tkchat serve --max-prompt-tokens), so that one long question does not hold the model "
        "from everyone else. Shorten it."
    )
