"""The model's slots and the line in front of them: starting a worker when a request's turn
comes, stopping it when the client leaves, and measuring how fast it stopped.

The line
--------
A generation request never finds the door shut because another is running: it joins the line
of :mod:`~tkchat.serve.line` (FIFO, bounded, one request at a time per client) and starts when
a slot frees — one slot for a local model, ``LineLimits.parallel`` in front of a server that
answers several at once. While it waits, its response carries its place (the ``queued``
event, or a comment in an OpenAI stream). A slot frees as soon as the worker leaves the model
loop, which happens before its final event is sent, so a client that asks again right after
``done`` is served at once. Each request's ``max_tokens`` is cut to
``LineLimits.answer_tokens``, so no one answer holds the model for long.

Client disconnect
-----------------
Each response watches its connection (see :mod:`tkchat.serve.streaming`). When the client
goes away it leaves the line, if it was waiting; if it was being answered the worker is
cancelled right there, on the loop, and it leaves the model loop within one token. For each
such cancel, ``/health`` reports ``disconnect_to_exit_ms`` (the disconnect seen → the worker
out of the model loop, both ``perf_counter``) and ``tokens_after_disconnect``; the benchmark
reads them.

Nothing is kept between requests but the model itself: each request brings its whole
conversation, and the only cache, the local model's prompt prefix, is compared token by token
(tkchat/generate/prompt_eval.py), so one client's conversation can never reach another's answer
(tests/test_line.py checks it on the real model).

Threads: everything here runs on the event loop, except the worker's ``on_exit`` callback,
which runs on the worker thread and only schedules :meth:`GenerationSlot._worker_exited`
onto the loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

from starlette.types import Send

from tkchat.events import Done, Error, GenerationEvent, QueuePlace
from tkchat.generate.backend import Backend, GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.worker import GenerationWorker
from tkchat.serve.bridge import AsyncEventBridge
from tkchat.serve.line import Client, Line, LineLimits, Need, Spent
from tkchat.serve.streaming import GenerationResponse
from tkchat.transport.channel import EventChannel

KEEPALIVE_S = 15.0  # a comment frame after this much silence keeps proxies and idle timers calm
PLACE_REFRESH_S = 5.0  # a waiting request hears its place (a fresher estimate) this often
CANCEL_HISTORY = 20  # disconnect measurements kept for /health
FINAL_EVENTS = (Done, Error)

News = GenerationEvent | QueuePlace  # what a response sends: its place, then its generation


@dataclass(eq=False)
class Job:
    """One request as the event loop sees it: waiting in the line until ``worker`` is set.
    Loop thread only (the worker has its own)."""

    bridge: AsyncEventBridge
    endpoint: str
    request: GenerationRequest
    ticket: int = 0  # its number in the order of arrival (the line serves in this order)
    joined_at: int = 0  # its position when it joined (0: a slot was free, no wait)
    worker: GenerationWorker | None = None
    disconnect_at: float | None = None  # perf_counter when the client was seen leaving
    tokens_at_disconnect: int = 0

    @property
    def waiting(self) -> bool:
        return self.worker is None

    @property
    def running(self) -> bool:
        """From its turn until the worker has left the model loop (set before it sends its
        final event)."""
        return self.worker is not None and self.worker.exited_at is None


class GenerationSlot:
    """The model, the line and the generations that hold its slots. Loop thread, except
    where a docstring says otherwise."""

    def __init__(self, backend: Backend, *, keepalive_s: float, limits: LineLimits) -> None:
        self.backend = backend
        # The controller owns the generation counter and the model lock, as in the window.
        # Its own channel stays unused: each request brings its own bridge to its own stream.
        self.controller = GenerationController(backend, EventChannel())
        # The server keeps no conversation (docs/serve.md): no student's chat is kept in
        # memory for later, only the one cache the model reads into.
        self.controller.kept_states.limit = 0
        self.keepalive_s = keepalive_s
        self.limits = limits
        self.line: Line[Job] = Line(limits, self._start_worker, self._tell)
        self.job: Job | None = None  # the generation started last
        self.cancels: deque[dict[str, Any]] = deque(maxlen=CANCEL_HISTORY)

    @property
    def busy(self) -> bool:
        return any(job.running for job in self.line.serving)

    def enqueue(self, request: GenerationRequest, endpoint: str, client: Client) -> Job:
        """Put a request in the line (it starts at once if a slot is free), or refuse it
        with 429/503 (:mod:`~tkchat.serve.line`)."""
        sampling = request.sampling
        answer = min(sampling.max_tokens or self.limits.answer_tokens, self.limits.answer_tokens)
        request = replace(
            request,
            sampling=replace(sampling, max_tokens=answer),
            max_prompt_tokens=self.limits.prompt_tokens,
        )
        job = Job(AsyncEventBridge(asyncio.get_running_loop()), endpoint, request)
        job.ticket = self.line.counts["joined"] + 1
        need = Need(sum(len(m.content) for m in request.messages), answer)
        self.line.join(job, client, need)
        place = self.line.place(job)
        job.joined_at = place.position if place is not None else 0
        return job

    def _start_worker(self, job: Job) -> None:
        """The job's turn (called by the line): a worker on the model, started now."""
        # One local model runs one generation at a time (its lock); a server with parallel
        # slots needs no lock of ours between its streams.
        lock = self.controller.model_lock if self.limits.parallel == 1 else threading.Lock()
        job.worker = GenerationWorker(
            self.backend,
            job.request,
            self.controller.new_gen(),
            cast(EventChannel, job.bridge),  # duck-typed: the worker only puts and asks for room
            lock,
            on_exit=lambda _worker: job.bridge.call_soon(self._worker_exited, job),
        )
        self.job = job
        self.controller.current = job.worker  # so controller.stop()/shutdown() reach it
        job.worker.start()

    def _tell(self, job: Job, place: QueuePlace) -> None:
        job.bridge.put_local(place)

    def client_gone(self, job: Job) -> None:
        """The client left (or the response ended): out of the line, or stop the model now,
        and note when."""
        self.line.leave(job)
        if job.disconnect_at is not None or not job.running:
            return
        assert job.worker is not None
        job.disconnect_at = time.perf_counter()
        job.tokens_at_disconnect = job.worker.tokens
        job.worker.cancel()

    def _worker_exited(self, job: Job) -> None:
        """Scheduled onto the loop by the worker thread as it ends: free the slot for the next
        in line, and record a disconnect."""
        worker = job.worker
        self.line.finished(
            job, answered=worker is not None and worker.tokens > 0, spent=_spent(worker)
        )
        if job.disconnect_at is None or worker is None:
            return
        exited_at = worker.exited_at if worker.exited_at is not None else time.perf_counter()
        self.cancels.append(
            {
                "gen": worker.gen,
                "endpoint": job.endpoint,
                "disconnect_to_exit_ms": round((exited_at - job.disconnect_at) * 1000, 3),
                "tokens_after_disconnect": worker.tokens - job.tokens_at_disconnect,
                "tokens": worker.tokens,
                # perf_counter is the machine's monotonic clock, the same in every process: a
                # client on this machine can subtract its own abort time (tkchat bench does).
                "disconnect_at": job.disconnect_at,
                "exited_at": exited_at,
            }
        )

    def stop_all(self) -> None:
        """Shutting down: nobody new starts, and whatever generates stops (its reader is gone)."""
        self.line.close()
        for job in list(self.line.serving):
            if job.worker is not None:
                job.worker.cancel()

    def shutdown(self) -> None:
        """Main thread, after the server stopped: stop every generation, free the model."""
        self.stop_all()
        self.controller.shutdown()

    def respond(
        self, job: Job, produce: Callable[[Job, Send], Awaitable[None]]
    ) -> GenerationResponse:
        """The response that runs ``produce`` for ``job`` and, when the client leaves, takes it
        out of the line or stops its worker."""
        return GenerationResponse(partial(produce, job), partial(self.client_gone, job))

    async def events(self, job: Job) -> AsyncIterator[list[News] | None]:
        """Batches of the job's news up to its final event: its place while it waits (and
        every :data:`PLACE_REFRESH_S`), then its generation's events; ``None`` after
        ``keepalive_s`` of silence (time for a keep-alive)."""
        while True:
            timeout = PLACE_REFRESH_S if job.waiting else self.keepalive_s
            batch = cast(list[News], await job.bridge.next_batch(timeout))
            if not batch and job.waiting:
                place = self.line.place(job)
                batch = [place] if place is not None else []
            final = bool(batch) and isinstance(batch[-1], FINAL_EVENTS)
            if final:
                # Its client may ask again before this last event has even been written.
                self.line.release(job)
            yield batch or None
            if final:
                return


def _spent(worker: GenerationWorker | None) -> Spent | None:
    """What the worker's turn used, for the line's rates: its start to its first token (the
    prompt read; both the worker's own clock) and its answer's tokens."""
    if worker is None or worker.started_at is None or worker.first_token_at is None:
        return None
    return Spent(max(0.0, worker.first_token_at - worker.started_at), worker.tokens)
