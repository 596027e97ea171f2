"""``tkchat selftest``: three questions asked of a real window, with real input events, and a
grade.

1. While an answer streams, is a click on another button (Ping) handled within 100 ms?
2. When the model dies mid-answer, is the window usable again within 100 ms, with a clear
   message?
3. While a long answer streams, are scrolling and keystrokes handled within 100 ms?

Then the benchmark's targets (lag p99 and max, long tasks, tokens/s against the same loop
with no window), that Tk was called only from the main thread, and that nothing escaped the
pipeline (:mod:`tkchat.measure.grade`). Any mode can be graded, a student's own included
(``--mode mine.py:Pipeline``), and the report is printed in the student's language.

The window runs its ordinary main loop. A *driver thread* plays the user: it types, clicks and
scrolls with ``xdotool`` (real X events on the display), notes the time just before each event,
and reads plain attributes the handlers leave behind (never a widget: only the main thread
touches Tk). Latency = the handler's time minus the injection time, paired in order.

**A wall-clock limit on every answer.** A pipeline whose ``start`` never returns keeps the main
thread for ever, and a self-test waiting for it would hang just the same. So each answer gets
``limit_s`` seconds. If by then the main loop has not run for a second, the driver interrupts
the main thread (a SIGINT to that thread; the handler raises
:class:`~tkchat.ui.teaching.outside.PipelineInterrupted`, but only inside a Tk callback, never in
the idle main loop); if the answer is still open, it clicks Stop. What was not handled
counts with the time it took, so the question fails *with figures*. Should even the interrupt
not bring the window back, the self-test prints what it has and exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import tkinter as tk
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Protocol

from tkchat.conversation import Message, Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import Backend, GenerationRequest, TokenStream, WrappedBackend
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import make_backend
from tkchat.generate.faults import FaultInjector
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.measure.grade import (
    Check,
    Measured,
    PipelineCall,
    all_passed,
    report,
    target_checks,
)
from tkchat.measure.script import ensure_display
from tkchat.modes import is_outside_mode
from tkchat.stats import LagSample, median, percentile
from tkchat.transport.channel import EventChannel
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.teaching.outside import (
    TK_THREADS,
    GuardedPipeline,
    OutsidePipelineError,
    PipelineInterrupted,
    TkCalledFromThread,
    in_tk_callback,
    load_outside_class,
)
from tkchat.ui.transcript import AnswerView
from tkchat.ui.window.chat_window import AppOptions, ChatApp
from tkchat.ui.window.translator import Translator

LIMIT_MS = 100.0  # RAIL's "respond within 100 ms"; Nielsen's "feels instant"
STUCK_S = 1.0  # a main loop silent this long is not coming back by itself
RECOVER_S = 10.0  # how long an interrupt or a Stop may take to bring the window back
IDLE_S = 1.0  # the idle baseline
# per-chunk-render's cost is quadratic in the answer: a 3,000-token scripted answer would keep
# one question frozen for minutes. 400 tokens show the same failure in seconds.
SCRIPTED_TOKENS = {"per-chunk-render": 400}
PROMPT = "Write a long explanation, with code, of why a chat window can freeze."


class GaveUp(Exception):
    """The window did not come back, even after an interrupt: the self-test ends here."""


@dataclass
class Points:
    """Screen coordinates of what the driver clicks, published by the main thread."""

    ping: tuple[int, int] = (0, 0)
    transcript: tuple[int, int] = (0, 0)
    input: tuple[int, int] = (0, 0)
    stop: tuple[int, int] = (0, 0)


class HandlerClock:
    """Main thread: handlers append the time they ran. Driver thread: reads the lists."""

    def __init__(self) -> None:
        self.scrolls: list[float] = []
        self.keys: list[float] = []

    def scroll(self, _event: tk.Event) -> None:
        self.scrolls.append(time.perf_counter())

    def key(self, _event: tk.Event) -> None:
        self.keys.append(time.perf_counter())


@dataclass
class MeteredRun:
    """One pass through the model loop, timed where the tokens come out."""

    started: float
    tokens: int = 0
    first_at: float | None = None
    last_at: float | None = None

    @property
    def tokens_per_s(self) -> float | None:
        """As the worker computes it: (tokens - 1) / (last - first token)."""
        if self.first_at is None or self.last_at is None or self.tokens < 2:
            return None
        span = self.last_at - self.first_at
        return (self.tokens - 1) / span if span > 0 else None


class TokenMeter(WrappedBackend):
    """A backend wrapper that times every token, whoever iterates the stream — tkchat's
    worker, a student's thread or a blocking loop on the main thread — so tokens/s is
    measured the same way for every pipeline and for the ``raw`` baseline."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.runs: list[MeteredRun] = []  # appended by whichever thread streams

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        run = MeteredRun(time.perf_counter())
        self.runs.append(run)
        tokens = self.inner.stream(request, cancel)
        try:
            while True:
                try:
                    piece = next(tokens)
                except StopIteration as end:
                    return end.value or "stop"
                now = time.perf_counter()
                run.tokens += 1
                run.last_at = now
                if run.first_at is None:
                    run.first_at = now
                yield piece
        finally:
            tokens.close()


class TimedPipeline:
    """The window's pipeline, with every call into it timed twice: from call to return, and
    the CPU time the calling thread spent in it (``time.thread_time``). The second is the
    work the pipeline itself did; it does not grow when this machine is busy with other
    programs and the thread waits for a core (on the shared 2-core machine here, a correct
    ``start`` once took 88 ms from call to return, nearly all of it waiting for the new
    worker thread to be scheduled). Calls come on the main thread — and on a worker, for a
    pipeline that wrongly ends its answer from one."""

    def __init__(self, inner: Pipeline) -> None:
        self.inner = inner
        self.name = inner.name
        self.broken = inner.broken
        self.coalesce = inner.coalesce
        self.calls: list[PipelineCall] = []

    def _timed(self, method: str, call: Callable[[], None]) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            call()
        finally:
            wall_ms = (time.perf_counter() - started) * 1000
            self.calls.append(PipelineCall(method, wall_ms, (time.thread_time() - cpu) * 1000))

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self._timed("start", lambda: self.inner.start(view, request))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self._timed("show", lambda: self.inner.show(view, chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self._timed("finish", lambda: self.inner.finish(view, stopped=stopped, error=error))


class Liveness:
    """Main thread: ``beat()`` from a 100 ms timer. Driver thread: ``stuck()``."""

    def __init__(self) -> None:
        self.alive_at = time.perf_counter()

    def beat(self) -> None:
        self.alive_at = time.perf_counter()

    def stuck(self) -> bool:
        return time.perf_counter() - self.alive_at > STUCK_S


class Interrupter:
    """Interrupts a main thread that is stuck inside a Tk callback."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.requested = False
        self.count = 0
        self._previous: object = None

    def install(self) -> None:
        """Main thread (only it may set signal handlers)."""
        self._previous = signal.signal(signal.SIGINT, self._handle)

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def interrupt(self) -> None:
        """Driver thread. A real signal, aimed at the main thread, so that a main thread
        waiting in a lock or a sleep wakes up too (EINTR), not only one running Python."""
        self.requested = True
        ident = threading.main_thread().ident
        assert ident is not None
        signal.pthread_kill(ident, signal.SIGINT)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """Main thread, between two bytecodes."""
        if not self.requested:  # a Ctrl+C from the terminal: stop, as it always would
            raise KeyboardInterrupt
        self.requested = False
        if in_tk_callback(frame):  # stuck in a handler: end it; the main loop goes on
            self.count += 1
            raise PipelineInterrupted(f"{self.limit_s:g} s")
        # otherwise the main loop is free again by now: nothing to interrupt


@dataclass
class Asked:
    """One question sent: which answer, and when."""

    index: int
    finished_before: int
    runs_before: int
    tk_before: int  # calls into Tk from other threads, stopped so far
    at: float = 0.0  # perf_counter when Enter was pressed: the answer's time limit runs from here


def _xdotool(*args: object) -> None:
    subprocess.run(
        ["xdotool", *map(str, args)],
        check=True,
        timeout=30,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait(ready: Callable[[], bool], timeout: float, what: str) -> None:
    if not _within(ready, timeout):
        raise TimeoutError(f"the self-test waited {timeout:.0f} s for {what}")


def _within(ready: Callable[[], bool], timeout: float) -> bool:
    """Whether ``ready()`` became true within ``timeout`` seconds."""
    deadline = time.monotonic() + max(0.0, timeout)
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _latencies(injected: list[float], handled: list[float]) -> list[float]:
    """Pair the n-th injection with the n-th handler run; unhandled ones count as infinite."""
    return [
        (handled[i] - sent) * 1000 if i < len(handled) else float("inf")
        for i, sent in enumerate(injected)
    ]


def _figures(latencies: list[float]) -> dict[str, float | int | None]:
    finite = [x for x in latencies if x != float("inf")]
    return {
        "events": len(latencies),
        "handled": len(finite),
        "p50_ms": round(percentile(finite, 50) or 0, 1) if finite else None,
        "p99_ms": round(percentile(finite, 99) or 0, 1) if finite else None,
        "max_ms": round(max(finite), 1) if finite else None,
    }


def _worst(latencies: list[float]) -> str:
    finite = [x for x in latencies if x != float("inf")]
    return f"{max(finite):.1f}" if finite else "∞"


def _unhandled(t: Translator, latencies: list[float]) -> list[str]:
    """A note for the events never handled at all (they count as infinitely late)."""
    missing = sum(1 for x in latencies if x == float("inf"))
    if not missing:
        return []
    return [t("selftest.note.unhandled", missing=missing, events=len(latencies))]


class _Answer(Protocol):
    @property
    def text(self) -> str: ...


class _Transcript(Protocol):
    @property
    def answers(self) -> Sequence[_Answer]: ...


class _Health(Protocol):
    @property
    def ping_times(self) -> list[float]: ...


class _Probe(Protocol):
    @property
    def recorded(self) -> list[LagSample] | None: ...


class SelftestWindow(Protocol):
    """What the driver reads of a window, whichever toolkit draws it (the Tk ``ChatApp`` or
    the Qt ``ChatWindow``): plain attributes its main thread writes, never a widget."""

    @property
    def model_ready(self) -> bool: ...
    @property
    def transcript(self) -> _Transcript: ...
    @property
    def health(self) -> _Health: ...
    @property
    def probe(self) -> _Probe: ...
    @property
    def controller(self) -> GenerationController: ...
    @property
    def answer(self) -> object | None: ...
    @property
    def finished(self) -> Sequence[Done | Error]: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def final_handled_at(self) -> float | None: ...


class Driver:
    """Plays the user from its own thread."""

    def __init__(
        self,
        app: SelftestWindow,
        faults: FaultInjector,
        meter: TokenMeter,
        points: Points,
        clock: HandlerClock,
        published: threading.Event,
        *,
        sampling: Sampling,
        life: Liveness,
        interrupter: Interrupter,
        limit_s: float,
        t: Translator,
    ) -> None:
        self.app = app
        self.sampling = sampling
        self.faults = faults
        self.meter = meter
        self.points = points
        self.clock = clock
        self.published = published
        self.life = life
        self.interrupter = interrupter
        self.limit_s = limit_s
        self.t = t
        self.checks: list[Check] = []
        self.idle: list[LagSample] = []
        self.streaming: list[LagSample] = []
        self.raw_tokens_per_s: float | None = None
        self.streamed_tokens_per_s: list[float] = []
        self.error: BaseException | None = None
        self.gave_up = False
        self.finished = threading.Event()

    def run(self) -> None:
        try:
            _wait(lambda: self.app.model_ready, 120, "the model to load")
            _wait(self.published.is_set, 10, "the window to be shown")
            self.baselines()
            self.checks.append(self.question_click())
            self.checks.append(self.question_scroll_and_keys())
            self.checks.append(self.question_model_dies())
        except GaveUp:
            self.gave_up = True
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.finished.set()

    # -- baselines -----------------------------------------------------------------------------

    def baselines(self) -> None:
        """Idle lag (the window open, nothing streaming), then the same model loop with no
        window at all, read here on the driver thread (``raw``)."""
        began = time.perf_counter()
        time.sleep(IDLE_S)
        self.idle = self._lags_since(began)
        controller = self.app.controller
        request = GenerationRequest((Message("user", PROMPT),), self.sampling)
        channel = EventChannel()
        runs = len(self.meter.runs)
        worker = controller.new_worker(request, channel, gen=0)
        worker.start()
        if not worker.join(max(60.0, 4 * self.limit_s)):
            raise TimeoutError("the raw baseline did not finish")
        done = [run.tokens_per_s for run in self.meter.runs[runs:]]
        self.raw_tokens_per_s = done[0] if done else None

    def _lags_since(self, began: float) -> list[LagSample]:
        """The lag probe's samples since ``began`` (it records the whole run)."""
        recorded = (self.app.probe.recorded or [])[:]  # a copy: the main thread appends
        return [sample for sample in recorded if sample.at >= began]

    # -- helpers ---------------------------------------------------------------------------------

    def _ask(self) -> Asked:
        """Type the prompt into the input box and press Enter."""
        asked = Asked(
            len(self.app.transcript.answers),
            len(self.app.finished),
            len(self.meter.runs),
            TK_THREADS.count,
        )
        _xdotool("mousemove", *self.points.input, "click", 1)
        _xdotool("type", "--delay", 2, PROMPT)
        asked.at = time.perf_counter()
        _xdotool("key", "Return")
        if not _within(lambda: len(self.app.transcript.answers) > asked.index, self.limit_s):
            self._recover([])
            raise TimeoutError("the window did not begin an answer")
        return asked

    def _left(self, asked: Asked) -> float:
        """What is left of this answer's time limit."""
        return self.limit_s - (time.perf_counter() - asked.at)

    def _blocked(self, asked: Asked) -> bool:
        """Whether a thread's call into Tk was stopped since ``asked``: that thread has
        ended, so the answer it was writing will not go on."""
        return TK_THREADS.count > asked.tk_before

    def _await_text(self, asked: Asked, notes: list[str]) -> None:
        """Wait (within the limit) until some text of the answer is on screen."""
        answer = self.app.transcript.answers[asked.index]

        def shown() -> bool:
            return len(answer.text) > 40

        _within(lambda: shown() or self._blocked(asked), self._left(asked))
        if not shown():
            notes.append(self.t("selftest.note.no_text", seconds=f"{self.limit_s:g}"))

    def _over(self, asked: Asked) -> Callable[[], bool]:
        return lambda: len(self.app.finished) > asked.finished_before

    def _settle(self, asked: Asked, all_handled: Callable[[], bool], notes: list[str]) -> None:
        """Wait for the answer to end (within the limit; past it, make it end), then up to
        5 s more for the injected events."""
        over = self._over(asked)
        if not _within(lambda: over() or self._blocked(asked), self._left(asked)) or not over():
            self._recover(notes, asked)
        _within(all_handled, 5.0)
        self._note_speed(asked)

    def _recover(self, notes: list[str], asked: Asked | None = None, tries: int = 2) -> None:
        """Past the limit: bring the window back (interrupt a stuck main thread), then end
        the answer (Stop), as a user would after waiting that long. The same, at once, for an
        answer whose thread was stopped at a call into Tk. :class:`GaveUp` when the window
        cannot be brought back."""
        if tries <= 0:
            raise GaveUp
        seconds = f"{self.limit_s:g}"
        if asked is not None and self._blocked(asked) and self.app.answer is not None:
            notes.append(self.t("selftest.note.tk_blocked"))
            self._press_stop()
            if _within(lambda: self.app.answer is None, RECOVER_S):
                return
        if self.life.stuck():
            notes.append(self.t("selftest.note.interrupted", seconds=seconds))
            self.interrupter.interrupt()
            if not _within(lambda: not self.life.stuck(), RECOVER_S):
                raise GaveUp
        if self.app.answer is not None:
            notes.append(self.t("selftest.note.stopped", seconds=seconds))
            self._press_stop()
            if not _within(lambda: self.app.answer is None, RECOVER_S):
                if not self.life.stuck():
                    raise GaveUp
                self._recover(notes, tries=tries - 1)  # Stop itself got stuck: once more

    def _press_stop(self) -> None:
        """Click Stop (Esc stops only the controller's own worker; Stop ends any answer)."""
        _xdotool("mousemove", *self.points.stop, "click", 1)

    def _note_speed(self, asked: Asked) -> None:
        for run in self.meter.runs[asked.runs_before :]:
            if run.tokens_per_s is not None:
                self.streamed_tokens_per_s.append(run.tokens_per_s)

    # -- the three questions -------------------------------------------------------------------

    def question_click(self) -> Check:
        notes: list[str] = []
        asked = self._ask()
        self._await_text(asked, notes)
        pings = self.app.health.ping_times
        before = len(pings)
        injected = []
        for _ in range(5):
            injected.append(time.perf_counter())
            _xdotool("mousemove", *self.points.ping, "click", 1)
            time.sleep(0.1)
        self._settle(asked, lambda: len(pings) - before >= len(injected), notes)
        self.streaming += self._lags_since(asked.at)
        lat = _latencies(injected, pings[before:])
        return Check(
            "q1",
            max(lat) <= LIMIT_MS,
            self.t("selftest.detail.q1", ms=_worst(lat)),
            _figures(lat),
            notes + _unhandled(self.t, lat),
        )

    def question_scroll_and_keys(self) -> Check:
        notes: list[str] = []
        asked = self._ask()
        self._await_text(asked, notes)
        scrolls_before, keys_before = len(self.clock.scrolls), len(self.clock.keys)
        sent_scrolls: list[float] = []
        sent_keys: list[float] = []
        for _ in range(8):
            sent_scrolls.append(time.perf_counter())
            _xdotool("mousemove", *self.points.transcript, "click", 5)
            time.sleep(0.05)
            sent_keys.append(time.perf_counter())
            _xdotool("key", "x")  # the input box still has the keyboard focus
            time.sleep(0.05)
        self._settle(
            asked,
            lambda: (
                len(self.clock.scrolls) - scrolls_before >= len(sent_scrolls)
                and len(self.clock.keys) - keys_before >= len(sent_keys)
            ),
            notes,
        )
        self.streaming += self._lags_since(asked.at)
        lat = _latencies(sent_scrolls, self.clock.scrolls[scrolls_before:]) + _latencies(
            sent_keys, self.clock.keys[keys_before:]
        )
        return Check(
            "q3",
            max(lat) <= LIMIT_MS,
            self.t("selftest.detail.q3", ms=_worst(lat)),
            _figures(lat),
            notes + _unhandled(self.t, lat),
        )

    def question_model_dies(self) -> Check:
        notes: list[str] = []
        self.faults.arm(after_tokens=30)
        asked = self._ask()

        def died() -> bool:
            return self.faults.died_at is not None

        _within(lambda: died() or self._blocked(asked), self._left(asked))
        if not died():
            if not self._blocked(asked):
                notes.append(self.t("selftest.note.never_died", seconds=f"{self.limit_s:g}"))
            self._recover(notes, asked)
            return Check("q2", False, self.t("selftest.detail.q2_never"), {}, notes)
        died_at = self.faults.died_at
        assert died_at is not None
        pings = self.app.health.ping_times
        before = len(pings)
        clicked = time.perf_counter()
        _xdotool("mousemove", *self.points.ping, "click", 1)
        if not _within(self._over(asked), self._left(asked)):
            self._recover(notes, asked)
        _within(lambda: len(pings) > before, 5.0)
        over = len(self.app.finished) > asked.finished_before
        ended = self.app.final_handled_at if over else None
        shown_ms = (ended - died_at) * 1000 if ended is not None else None
        click_ms = (pings[before] - clicked) * 1000 if len(pings) > before else None
        final = self.app.finished[-1] if ended is not None else None
        message = self.app.last_error or ""
        clear = isinstance(final, Error) and "stopped responding" in message
        passed = (
            clear
            and shown_ms is not None
            and shown_ms <= LIMIT_MS
            and click_ms is not None
            and click_ms <= LIMIT_MS
        )
        return Check(
            "q2",
            passed,
            self.t(
                "selftest.detail.q2",
                shown="∞" if shown_ms is None else f"{shown_ms:.1f}",
                click="∞" if click_ms is None else f"{click_ms:.1f}",
                message=self.t("selftest.message", message=message)
                if clear
                else self.t("selftest.no_message"),
            ),
            {
                "error_shown_ms": None if shown_ms is None else round(shown_ms, 1),
                "click_after_ms": None if click_ms is None else round(click_ms, 1),
            },
            notes,
        )


def selftest_backend(
    mode: str, backend_kind: str, model: str | None, rate: float, tokens: int | None = None
) -> tuple[FaultInjector, Sampling]:
    """The backend every window's self-test asks (wrapped so question 2 can kill it), and
    the sampling of its answers. ``tokens``: the answers' length limit (a flood)."""
    # scripted: the answer is ``tokens`` long (the text repeated: a flood), and no longer
    inner = make_backend(backend_kind, model=model, rate=rate, tokens=tokens)
    sampling = Sampling(max_tokens=tokens or 400, seed=7)  # about 3 s with the bundled model
    if isinstance(inner, ScriptedBackend):
        # about 3,000 tokens: long enough to click, scroll and type into at any rate
        inner.text = long_answer(15_000)
        sampling = Sampling(max_tokens=tokens or SCRIPTED_TOKENS.get(mode, 0), seed=7)
    return FaultInjector(inner), sampling


class CallbackErrors:
    """Main thread: what Tk callbacks raised (the window survives them; the grade counts)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(
        self, kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if isinstance(value, PipelineInterrupted):
            return  # the limit's own doing, already noted on its question
        self.errors.append(f"{kind.__name__}: {value}"[:300])


def run_selftest(
    mode: str,
    backend_kind: str,
    model: str | None,
    rate: float,
    *,
    language: str,
    limit_s: float,
    tokens: int | None = None,
) -> int:
    """Main thread. Returns 0 when every check passes, 1 otherwise, 2 when the self-test
    could not run (no xdotool, a pipeline file that cannot be loaded)."""
    t = Translator(language)
    if shutil.which("xdotool") is None:
        print(t("selftest.no_xdotool"), file=sys.stderr)
        return 2
    if is_outside_mode(mode):
        try:
            load_outside_class(mode)
        except OutsidePipelineError as exc:
            print(exc.sentence(t))
            print(t("selftest.grade.none"))
            return 2
    ensure_display()
    TK_THREADS.install()  # before any thread a pipeline might start
    faults, sampling = selftest_backend(mode, backend_kind, model, rate, tokens)
    meter = TokenMeter(faults)
    root = tk.Tk()
    errors = CallbackErrors()
    root.report_callback_exception = errors
    controller = GenerationController(meter, EventChannel())
    app = ChatApp(root, controller, AppOptions(mode=mode, sampling=sampling, language=language))
    if app.pipeline.name != mode:  # the class would not even be made: said in the window
        print(app.pipeline_problem or mode)
        print(t("selftest.grade.none"))
        app.close()
        return 2
    timed = TimedPipeline(app.pipeline)
    app.pipeline = timed  # (the same name: the window keeps it for every answer)
    root.geometry("900x700+0+0")
    clock = HandlerClock()
    # On every widget ("all"): a pipeline may show its answer in a widget of its own, embedded
    # in the transcript, and that widget then gets the wheel.
    root.bind_all("<Button-5>", clock.scroll, add="+")
    app.input.bind("<KeyPress-x>", clock.key, add="+")
    points = Points()
    published = threading.Event()

    def publish() -> None:
        """Main thread: where things are on the screen, for the driver's clicks."""

        def centre(widget: tk.Misc) -> tuple[int, int]:
            return (
                widget.winfo_rootx() + widget.winfo_width() // 2,
                widget.winfo_rooty() + widget.winfo_height() // 2,
            )

        points.ping = centre(app.health.ping_button)
        points.transcript = centre(app.transcript.text)
        points.input = centre(app.input)
        points.stop = centre(app.stop_button)
        published.set()

    life = Liveness()
    interrupter = Interrupter(limit_s)
    driver = Driver(
        app,
        faults,
        meter,
        points,
        clock,
        published,
        sampling=sampling,
        life=life,
        interrupter=interrupter,
        limit_s=limit_s,
        t=t,
    )
    header = [
        t(
            "selftest.title",
            mode=mode,
            backend=backend_kind,
            rate=t("selftest.rate", rate=f"{rate:g}") if backend_kind == "scripted" else "",
        ),
        t("selftest.limit", seconds=f"{limit_s:g}"),
    ]

    def results() -> tuple[list[str], bool]:
        """Any thread: the report of what has been measured so far, and whether it passes."""
        pipeline = timed.inner
        raised = list(pipeline.raised) if isinstance(pipeline, GuardedPipeline) else []
        first = TK_THREADS.first_since(tk_calls_before)
        measured = Measured(
            idle=driver.idle,
            streaming=driver.streaming,
            raw_tokens_per_s=driver.raw_tokens_per_s,
            tokens_per_s=median(driver.streamed_tokens_per_s),
            flood=backend_kind == "scripted",
            calls=timed.calls[:],
            tk_calls=TK_THREADS.count - tk_calls_before,
            first_tk_call=None if first is None else first.values(),
            raised=raised + errors.errors,
        )
        checks = sorted(driver.checks, key=lambda check: check.key)
        checks += target_checks(t, measured)
        complete = len(driver.checks) == 3
        ok = complete and all_passed(checks)
        return report(t, header, checks, measured, complete=complete), ok

    def watch() -> None:
        life.beat()
        if driver.finished.is_set():
            app.close()
        else:
            app.scheduler.once("selftest", 100, watch)

    tk_calls_before = TK_THREADS.count
    app.probe.start_recording()  # the whole run; the driver takes the spans it needs
    interrupter.install()
    threading.excepthook = _quiet_about_stopped_threads(threading.excepthook)
    controller.load_async()
    root.after(500, publish)
    app.scheduler.once("selftest", 100, watch)
    threading.Thread(target=driver.run, name="tkchat-selftest-driver", daemon=True).start()
    try:
        _main_loop_until(root, driver, results, t)
    finally:
        interrupter.uninstall()
    if driver.error is not None:
        print(t("selftest.could_not_finish", error=driver.error), file=sys.stderr)
        return 2
    lines, ok = results()
    print("\n".join(lines))
    return 0 if ok else 1


def _quiet_about_stopped_threads(
    hook: Callable[[threading.ExceptHookArgs], object],
) -> Callable[[threading.ExceptHookArgs], object]:
    """A thread stopped at a call into Tk is in the grade; its traceback would only repeat
    it on stderr."""

    def quiet(args: threading.ExceptHookArgs) -> object:
        if isinstance(args.exc_value, TkCalledFromThread):
            return None
        return hook(args)

    return quiet


def _main_loop_until(
    root: tk.Tk, driver: Driver, results: Callable[[], tuple[list[str], bool]], t: Translator
) -> None:
    """Run the window; if the driver gives up on it (stuck even after an interrupt), print
    what was measured and leave at once — the main thread is not coming back."""

    def give_up_watch() -> None:
        driver.finished.wait()
        if driver.gave_up:
            lines, _passed = results()
            print("\n".join([*lines[:-1], t("selftest.gave_up"), lines[-1]]), flush=True)
            os._exit(1)

    threading.Thread(target=give_up_watch, name="tkchat-selftest-exit", daemon=True).start()
    root.mainloop()
