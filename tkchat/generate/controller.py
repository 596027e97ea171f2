"""Starts, stops and loads: the one place that creates worker threads for a backend.

Tk-free, so the UI, the benchmark and the tests drive generation the same way. Methods are
called from the consumer thread (Tk's main thread in the app); the work runs on workers.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from tkchat.events import ModelFailed, ModelLoading, ModelReady
from tkchat.generate.backend import (
    Backend,
    BackendError,
    ContextOverflowError,
    GenerationRequest,
    LoadCancelled,
    LoadWatch,
)
from tkchat.generate.context import ContextFit, fit_to_context
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.prompt_eval import KeptStates
from tkchat.generate.worker import GenerationWorker
from tkchat.limits import cut
from tkchat.threads import own_thread
from tkchat.transport.channel import EventChannel, EventSink, GenerationSender

# Wraps the channel for one generation (the chaos transport of lesson 13 is one).
SinkWrapper = Callable[[EventSink], EventSink]

LOAD_PROGRESS_INTERVAL_S = 0.1  # llama.cpp reports after every tensor: hundreds a second


class Running(Protocol):
    """A generation Stop can reach: a :class:`GenerationWorker`, or one that runs as an
    asyncio task (``tkchat/aio/``). What a stopped answer's figures, the cancel watch and
    the live figures read of it (``perf_counter`` times; ``tokens`` so far)."""

    tokens: int
    started_at: float | None
    first_token_at: float | None
    cancelled_at: float | None
    exited_at: float | None

    @property
    def prompt_tokens(self) -> int:
        """Context tokens of the prompt once fitted (0: not known, as for a server's)."""

    @property
    def context_dropped(self) -> int:
        """Earlier messages left out so that the chat fits the context."""

    @property
    def sender(self) -> GenerationSender | None:
        """What numbers its events onto the channel (its counts, the token times a trace
        keeps); None when its events do not travel through the channel (``asyncio-tk``)."""

    def cancel(self) -> None:
        """Any thread; returns at once. Its model loop ends soon after, and it sends exactly
        one final event as every generation does."""

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> bool: ...


class GenerationController:
    """Owns the backend, the generation counter and the current worker."""

    def __init__(self, backend: Backend, channel: EventChannel) -> None:
        self.backend = backend
        self.channel = channel
        self._model_lock = threading.Lock()
        self._gen = 0
        self.current: GenerationWorker | None = None
        # A generation that runs elsewhere than on a worker of this controller's (an asyncio
        # task: the asyncio modes, ``tkchat/aio/``), set by :meth:`start_elsewhere`: Stop,
        # a new generation and shutdown reach it as they reach ``current``.
        self.elsewhere: Running | None = None
        self._newest: Running | None = None  # the one started last of those two
        self.loaded = False
        self._loader: threading.Thread | None = None
        self._watch: LoadWatch | None = None  # the load in progress, to cancel it
        # A loaded backend kept while ``backend`` loads to replace it: used again if that
        # load fails, freed once it succeeds (:meth:`switch_backend` with ``replace``).
        self.kept: Backend | None = None
        self._swap = threading.Lock()  # backend, kept and loaded change together
        self.load_reports = 0  # ModelLoading events sent (all loads): for the benchmark
        # Called once per generation that ``start`` begins, with the channel: the sink its
        # worker sends to instead (None: the channel itself). Set it from the consumer thread;
        # it applies from the next generation.
        self.sink_wrapper: SinkWrapper | None = None
        # How many token times each new worker's sender keeps (0: none): a trace's tokens.
        self.keep_token_times = 0
        # How far below the caller's priority each new worker runs (0: not lowered). A window
        # sets it (tkchat.threads.WORKER_NICE), so that its main thread gets a core on a busy
        # machine; a server has no window to protect, and its model would only yield to
        # other programs.
        self.worker_nice = 0
        # What the progress throttles read (seconds): the load's (a ModelLoading event at
        # most every LOAD_PROGRESS_INTERVAL_S) and each new worker's prompt-reading pacer.
        # Set it from the consumer thread; a test hands in a clock it steps, so which reports
        # become events follows from the test alone.
        self.progress_clock: Callable[[], float] = time.perf_counter
        # Local models' caches kept from earlier chats and from models closed (bounded; set
        # its ``limit`` from the Settings): here, so that they outlive each backend. Only a
        # thread holding the model lock saves or loads one.
        self.kept_states = KeptStates()

    # -- loading -------------------------------------------------------------------------------

    def load_async(self, unload: Backend | None = None) -> None:
        """Load the model on a daemon thread; news arrives as ModelLoading (progress), then
        ModelReady or ModelFailed. ``unload``: a backend to free first, on that thread. A load
        still in progress is cancelled first (:meth:`cancel_load`)."""
        self.cancel_load()
        backend = self.backend
        watch = self._watch = LoadWatch(self._progress_reporter(backend))
        self._loader = own_thread(self._load, args=(backend, watch, unload), name="tkchat-load")
        self._loader.start()

    def cancel_load(self) -> bool:
        """Any thread. Give up the load in progress, if any: llama.cpp stops at the next
        tensor and frees what it had allocated; the loader then sends one ModelFailed with
        ``cancelled=True``. Returns whether there was a load to cancel; calling it again
        changes nothing."""
        watch = self._watch
        if watch is None or watch.cancelled or not self.loading:
            return False
        watch.cancel()
        return True

    def _progress_reporter(self, backend: Backend) -> Callable[[float], None]:
        """The loader's progress report: a ModelLoading event for the first report, then at
        most one every :data:`LOAD_PROGRESS_INTERVAL_S` (by :attr:`progress_clock`), and the
        last one (fully loaded)."""
        last: list[float | None] = [None]
        clock = self.progress_clock

        def report(fraction: float) -> None:
            now = clock()
            before = last[0]
            if fraction >= 1.0 or before is None or now - before >= LOAD_PROGRESS_INTERVAL_S:
                last[0] = now
                self.load_reports += 1
                self.channel.put(ModelLoading(backend.name, fraction))

        return report

    def _load(self, backend: Backend, watch: LoadWatch, unload: Backend | None = None) -> None:
        """Loader thread. ``unload``: a backend to free first, once the last generation on
        it has left the model loop (the model lock says so). A load that was cancelled —
        possibly while it waited for the lock — frees what it loaded. A backend :attr:`kept`
        while this one loads is freed when it has loaded, and used again when it fails."""
        started = time.perf_counter()
        try:
            with self._model_lock:
                if unload is not None:
                    self._close(unload)
                if watch.cancelled:
                    raise LoadCancelled(f"Loading {backend.name} was cancelled before it began.")
                if isinstance(backend, LlamaBackend):
                    backend.kept = self.kept_states
                backend.load(watch)
                if watch.cancelled or not self._replaced(backend):
                    backend.close()  # loaded, but no longer wanted: free it at once
                    raise LoadCancelled(
                        f"Loading {backend.name} was cancelled; the memory it had taken is "
                        "free again."
                    )
        except LoadCancelled as exc:
            self.channel.put(ModelFailed(str(exc), cancelled=True))
            return
        except Exception as exc:  # never a silent dead thread: the user reads what happened
            message, key = str(exc), exc.key if isinstance(exc, BackendError) else None
            if not isinstance(exc, BackendError):
                message = f"Could not load the model: {type(exc).__name__}: {exc}"
            kept = self._fall_back(backend)
            self.channel.put(ModelFailed(cut(message), kept=kept, name=backend.name, key=key))
            return
        elapsed = time.perf_counter() - started
        # Only a local GGUF says what it was trained with and where it runs (a server or
        # the scripted backend has no such figure): those are asked of that class alone.
        local = backend if isinstance(backend, LlamaBackend) else None
        trained = local.n_ctx_train if local is not None else None
        offload = local.offload if local is not None else None
        self.channel.put(ModelReady(backend.name, elapsed, backend.n_ctx, trained, offload))

    def _replaced(self, backend: Backend) -> bool:
        """Loader thread, model lock held: ``backend`` has loaded. If it is still the one
        wanted it is in use now, and the backend kept until then is freed (nothing generates
        on it: the lock is ours); False if another was chosen meanwhile."""
        with self._swap:
            if backend is not self.backend:
                return False
            kept, self.kept = self.kept, None
            self.loaded = True
        if kept is not None and kept is not backend:
            self._close(kept)
        return True

    def _close(self, backend: Backend) -> None:
        """Loader thread, model lock held: free ``backend``, a local model's cache kept
        first (switching back to the same file then reads only what is new)."""
        if isinstance(backend, LlamaBackend) and backend.kept is self.kept_states:
            backend.keep_state()
        backend.close()

    def _fall_back(self, failed: Backend) -> str | None:
        """Loader thread: ``failed`` did not load; the backend kept for that case (if any,
        and if nobody chose another meanwhile) is the one in use again. Its name, or None."""
        with self._swap:
            kept = self.kept
            if kept is None or failed is not self.backend:
                return None
            self.backend, self.kept = kept, None
            self.loaded = True
        return kept.name

    @property
    def loading(self) -> bool:
        """Whether a model is being loaded (or unloaded) right now."""
        return self._loader is not None and self._loader.is_alive()

    def switch_backend(self, backend: Backend, *, replace: bool = False) -> None:
        """Stop what runs, then load ``backend`` (if needed) and use it from now on; news
        arrives as ModelReady/ModelFailed, as at start-up.

        ``replace`` (the model picker): the loaded backend is :attr:`kept` — loaded, and
        used again should ``backend`` fail to load — until ``backend`` has loaded, then it
        is freed. For that while both models are in memory. Without ``replace`` the previous
        backend stays loaded for good (a lesson switching between the model and the scripted
        backend); one still kept from an earlier replacement is freed (nobody holds it)."""
        self.stop()
        self.cancel_load()  # choosing another model while one loads gives that load up
        with self._swap:
            old, self.backend = self.backend, backend
            standing = old if self.loaded else self.kept  # the model that works, if any
            self.kept = standing if replace and standing is not backend else None
            orphan = standing if not replace and standing is not old else None
            self.loaded = False
        self.load_async(orphan if orphan is not backend else None)

    def measure_context(self, request: GenerationRequest, *, draft: bool = False) -> ContextMeasure:
        """Count, on a thread, what ``request`` would take of the context (the context meter
        of a conversation just opened). The count waits for the model lock. ``draft``: the
        last message is one not sent yet; count it alone too, and note whether it fits."""
        measure = ContextMeasure(self.backend, request, self._model_lock, draft=draft)
        measure.start()
        return measure

    # -- generating ----------------------------------------------------------------------------

    def start(self, request: GenerationRequest) -> int:
        """Cancel whatever runs, start a new generation, return its id (``gen``)."""
        self.stop()
        wrap = self.sink_wrapper
        sink = self.channel if wrap is None else wrap(self.channel)
        worker = self.new_worker(request, sink, self.new_gen())
        self.current = self._newest = worker
        worker.start()
        return self._gen

    def start_elsewhere(self, begin: Callable[[int], Running]) -> int:
        """Cancel whatever runs, then ``begin(gen)``: start a generation of a fresh id that
        does not run on a worker of this controller's (an asyncio task) and return it, for
        Stop to cancel. Returns the id."""
        self.stop()
        gen = self.new_gen()
        self.elsewhere = self._newest = begin(gen)
        return gen

    def new_gen(self) -> int:
        """A fresh generation id: events of every earlier id become stale."""
        self._gen += 1
        return self._gen

    @property
    def model_lock(self) -> threading.Lock:
        """Held by whoever runs the model loop (one generation at a time)."""
        return self._model_lock

    def new_worker(
        self, request: GenerationRequest, channel: EventSink, gen: int
    ) -> GenerationWorker:
        """A worker on this model (sharing its lock) that sends to ``channel``; not started.
        The benchmark's ``raw`` mode uses it to run the same loop with no UI."""
        worker = GenerationWorker(self.backend, request, gen, channel, self._model_lock)
        worker.nice = self.worker_nice
        worker.progress_clock = self.progress_clock
        self.keep_times(worker.sender)
        return worker

    def keep_times(self, sender: GenerationSender) -> GenerationSender:
        """``sender``, set to keep its last :attr:`keep_token_times` token times (a trace's
        tokens), if any are wanted: a worker's, or an asyncio task's (``tkchat/aio/``)."""
        if self.keep_token_times:
            sender.times = deque(maxlen=self.keep_token_times)
        return sender

    @property
    def gen(self) -> int:
        """Id of the latest generation; events of any other id are stale."""
        return self._gen

    def stop(self) -> Running | None:
        """Ask the generation that runs (the current worker, or one :meth:`started elsewhere
        <start_elsewhere>`) to stop (non-blocking). Returns it, for measuring."""
        newest = self.running
        # Whether it runs is read before it is asked to stop: a task on another thread's
        # loop (asyncio-thread) can end between the cancel and a later look, and a stopped
        # answer would then pass for one that ended by itself.
        if newest is not None and not newest.is_alive():
            newest = None
        for running in (self.current, self.elsewhere):
            if running is not None and running.is_alive():
                running.cancel()  # an older one still leaving its loop is asked again
        return newest

    @property
    def running(self) -> Running | None:
        """The generation started last, whichever kind — the current worker, or one
        :meth:`started elsewhere <start_elsewhere>` — running or ended: what the live
        figures read (tokens so far, the context meter, a trace's token times)."""
        # (the server sets ``current`` itself: an asyncio task is newest only if it was)
        elsewhere = self.elsewhere
        if elsewhere is not None and self._newest is elsewhere:
            return elsewhere
        return self.current

    def is_generating(self) -> bool:
        return any(r is not None and r.is_alive() for r in (self.current, self.elsewhere))

    def shutdown(self, timeout: float = 2.0) -> bool:
        """Stop, wait briefly for the worker to leave the model loop, free the model.

        Returns False if a thread was still busy after ``timeout`` (it is a daemon thread and
        dies with the process; the model is then not closed under its feet)."""
        self.stop()
        self.cancel_load()  # closing the window gives up a load in progress
        ok = True
        for running in (self.current, self.elsewhere):
            if running is not None:
                ok = running.join(timeout) and ok
        if self._loader is not None and self._loader.is_alive():
            self._loader.join(timeout)
            ok = ok and not self._loader.is_alive()
        # A context count (:class:`ContextMeasure`, the meter's or a draft's) may still be
        # tokenizing with the model: it holds the model lock, and the model is freed only
        # under it (freed beneath a count, llama.cpp read freed memory: a segfault at close,
        # three bench runs in four here).
        if ok and self._model_lock.acquire(timeout=timeout):
            try:
                self.kept_states.limit = 0  # nothing is kept past the end
                self.backend.close()
                if self.kept is not None:  # a replacement was loading: the old model goes too
                    self.kept.close()
                    self.kept = None
            finally:
                self._model_lock.release()
            return True
        return False


class ContextMeasure:
    """One context count on a daemon thread; read ``result`` once ``done`` (None: the count
    failed, and the meter keeps what it showed). For a ``draft`` (a message not sent yet, the
    request's last): ``draft_tokens``, its text's own tokens (the chat template's around it
    left out: they are not the user's), and ``too_long``, whether the
    policy of :mod:`tkchat.generate.context` would refuse it — the same test the worker makes,
    so the window refuses exactly what the model could not read."""

    def __init__(
        self,
        backend: Backend,
        request: GenerationRequest,
        model_lock: threading.Lock,
        *,
        draft: bool = False,
    ) -> None:
        self.backend = backend
        self.request = request
        self.model_lock = model_lock
        self.draft = draft
        self.result: ContextFit | None = None
        self.draft_tokens: int | None = None
        self.too_long = False
        self.n_ctx = backend.n_ctx
        self.done = threading.Event()
        self._thread = own_thread(self._run, name="tkchat-count")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        """Counting thread."""
        try:
            with self.model_lock:
                self.n_ctx = self.backend.n_ctx
                if self.draft:
                    # the message's own tokens: without the chat template's around it (31
                    # tokens were shown for "ab", 29 of them the template's)
                    last = self.request.messages[-1]
                    whole = self.backend.count_tokens([last])
                    bare = self.backend.count_tokens([replace(last, content="")])
                    self.draft_tokens = max(0, whole - bare)
                self.result = fit_to_context(
                    self.request.messages,
                    self.backend.count_tokens,
                    self.backend.n_ctx,
                    self.request.sampling.max_tokens,
                )
        except ContextOverflowError:
            self.too_long = True
        except Exception:
            pass  # a count only feeds the meter; a generation reports its own errors
        finally:
            self.done.set()
