"""One model, one generation at a time: starting a worker, refusing when busy, stopping it
when the client leaves, and measuring how fast it stopped.

Busy policy
-----------
A model generates one answer at a time. A generation request that arrives while another
is running (a cancelled one included, until its worker has left the model loop, which takes
at most one token) is refused at once: HTTP 429, ``Retry-After: 1`` and
``{"error": {"kind": "busy", ...}}``. There is deliberately no queue. A queue would need
position updates, fairness and a timeout, and it would hide the wait from the user; a clear
refusal lets the client decide. The slot frees as soon as the worker leaves the model loop,
which happens before its final event is sent, so a client that asks again right after
``done`` is never refused.

Client disconnect
-----------------
Each response watches its connection (see :mod:`tkchat.serve.streaming`). When the client
goes away the worker is cancelled right there, on the loop, and it leaves the model loop
within one token. For each such cancel, ``/health`` reports ``disconnect_to_exit_ms`` (the
disconnect seen → the worker out of the model loop, both ``perf_counter``) and
``tokens_after_disconnect``; the benchmark reads them.

Threads: everything here runs on the event loop, except the worker's ``on_exit`` callback,
which runs on the worker thread and only schedules :meth:`GenerationSlot._worker_exited`
onto the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from starlette.types import Send

from tkchat.events import Done, Error, GenerationEvent
from tkchat.generate.backend import Backend, GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.worker import GenerationWorker
from tkchat.serve.bridge import AsyncEventBridge
from tkchat.serve.errors import RequestRejected
from tkchat.serve.streaming import GenerationResponse
from tkchat.transport.channel import EventChannel

KEEPALIVE_S = 15.0  # a comment frame after this much silence keeps proxies and idle timers calm
CANCEL_HISTORY = 20  # disconnect measurements kept for /health
FINAL_EVENTS = (Done, Error)


@dataclass(eq=False)
class Job:
    """One generation as the event loop sees it. Loop thread only (the worker has its own)."""

    bridge: AsyncEventBridge
    endpoint: str
    worker: GenerationWorker = field(init=False)
    disconnect_at: float | None = None  # perf_counter when the client was seen leaving
    tokens_at_disconnect: int = 0

    @property
    def running(self) -> bool:
        """Until the worker has left the model loop (set before it sends its final event)."""
        return self.worker.exited_at is None


class GenerationSlot:
    """The one model and the generation that holds it, if any. Loop thread, except where a
    docstring says otherwise."""

    def __init__(self, backend: Backend, *, keepalive_s: float) -> None:
        self.backend = backend
        # The controller owns the generation counter and the model lock, as in the window.
        # Its own channel stays unused: each request brings its own bridge to its own stream.
        self.controller = GenerationController(backend, EventChannel())
        self.keepalive_s = keepalive_s
        self.job: Job | None = None
        self.cancels: deque[dict[str, Any]] = deque(maxlen=CANCEL_HISTORY)

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running

    def start(self, request: GenerationRequest, endpoint: str) -> Job:
        """Claim the model and start a worker, or refuse with 429 (the busy policy). No await
        between the check and the claim: on one loop, two requests cannot both pass."""
        if self.busy:
            raise RequestRejected(
                429,
                "busy",
                "The model is answering another request; try again in a moment.",
                {"Retry-After": "1"},
            )
        job = Job(AsyncEventBridge(asyncio.get_running_loop()), endpoint)
        job.worker = GenerationWorker(
            self.backend,
            request,
            self.controller.new_gen(),
            cast(EventChannel, job.bridge),  # duck-typed: the worker only puts and asks for room
            self.controller.model_lock,
            on_exit=lambda _worker: job.bridge.call_soon(self._worker_exited, job),
        )
        self.job = job
        self.controller.current = job.worker  # so controller.stop()/shutdown() reach it
        job.worker.start()
        return job

    def client_gone(self, job: Job) -> None:
        """The client left (or the response ended): stop the model now, and note when."""
        if job.disconnect_at is not None or not job.running:
            return
        job.disconnect_at = time.perf_counter()
        job.tokens_at_disconnect = job.worker.tokens
        job.worker.cancel()

    def _worker_exited(self, job: Job) -> None:
        """Scheduled onto the loop by the worker thread as it ends: record a disconnect."""
        if job.disconnect_at is None:
            return
        worker = job.worker
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

    def respond(
        self, job: Job, produce: Callable[[Job, Send], Awaitable[None]]
    ) -> GenerationResponse:
        """The response that runs ``produce`` for ``job`` and stops the job's worker when the
        client leaves."""
        return GenerationResponse(partial(produce, job), partial(self.client_gone, job))

    async def events(self, job: Job) -> AsyncIterator[list[GenerationEvent] | None]:
        """Batches of the job's events up to its final one; ``None`` after ``keepalive_s`` of
        silence (time for a keep-alive)."""
        while True:
            batch = cast(list[GenerationEvent], await job.bridge.next_batch(self.keepalive_s))
            yield batch or None
            if batch and isinstance(batch[-1], FINAL_EVENTS):
                return
