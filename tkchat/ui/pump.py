"""The consumption loop: every 16 ms, drain the queue and hand one tick's result to the app.

This is the only way events reach the window. It never blocks (``drain`` takes what is
queued now), never loops over a stream, and re-arms itself through the scheduler so it stops
cleanly when the window closes.

It also cannot die. A loop that re-arms only after its work succeeded stops for good at the
first exception: the heartbeat would keep ticking ("alive!") while no answer ever reached the
screen again. So the next tick is armed whatever this one did, and a failure is handed to
``on_failure`` (the window ends the answer and says so) and logged once per answer.

The pipeline view (:mod:`tkchat.ui.stages`) may slow it (``interval_ms``), hold it (a paused
class: no tick until :meth:`EventPump.hold` lets go, or :meth:`EventPump.tick_now` runs one),
and watch it (``watch``: told when each tick begins and ends). Held is the only way it is not
armed, and only that view holds it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.transport.channel import EventChannel
from tkchat.ui.scheduler import AfterScheduler

TICK_MS = 16  # one frame at 60 Hz: faster would not be seen, slower starts to look jerky
MAX_EVENTS_PER_TICK = 4096  # the sender coalesces long before this; a guard, not a tuning knob

log = logging.getLogger(__name__)


class TickWatch(Protocol):
    """Told of every tick (main thread): what the pipeline view counts per tick."""

    def began(self) -> None: ...

    def ended(self, events: int, ms: float) -> None: ...


class EventPump:
    """Main thread only."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        channel: EventChannel,
        consumer: StreamConsumer,
        on_tick: Callable[[TickResult], None],
        on_failure: Callable[[Exception], None] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.channel = channel
        self.consumer = consumer
        self.on_tick = on_tick
        self.on_failure = on_failure
        self.tick_ms: list[float] = []  # recent tick durations, for the benchmark
        self.events = 0
        self.failures = 0  # ticks that raised (each one was survived)
        self._logged_for_gen: int | None = -2  # the generation whose failure was logged (-2: none)
        self.interval_ms = TICK_MS  # the pipeline view's slow motion makes it longer
        self.held = False  # the pipeline view paused it: a tick runs only when stepped
        self.watch: TickWatch | None = None  # the pipeline view, while it is open

    def start(self) -> None:
        self.scheduler.once("pump", self.interval_ms, self._tick)

    def hold(self, on: bool) -> None:
        """Pause the ticks (the queue keeps what arrives) or go on ticking."""
        self.held = on
        if on:
            self.scheduler.cancel("pump")
        elif not self.scheduler.pending("pump"):
            self.scheduler.once("pump", self.interval_ms, self._tick)

    def _tick(self) -> None:
        try:
            self.tick_now()
        finally:
            # Armed last, so the 16 ms count from the end of this tick's work; but armed
            # always (unless held on purpose), so one bad tick costs one tick, not the rest
            # of the session.
            if not self.held:
                self.scheduler.once("pump", self.interval_ms, self._tick)

    def tick_now(self) -> None:
        """One tick's work: drain, hand over, time it. (The pipeline view's *step* calls it.)"""
        started = time.perf_counter()
        watch, drained = self.watch, 0
        if watch is not None:
            watch.began()
        try:
            events = self.channel.drain(MAX_EVENTS_PER_TICK)
            drained = len(events)
            # With nothing new, the consumer still gets the tick while it holds events back:
            # that is how an event that never comes ends the answer (its deadline is checked).
            if events or self.consumer.waiting:
                self.events += len(events)
                self.on_tick(self.consumer.accept(events))
                self.tick_ms.append((time.perf_counter() - started) * 1000)
                if len(self.tick_ms) > 10_000:
                    del self.tick_ms[:5_000]
        except Exception as exc:
            self._failed(exc)
        if watch is not None:
            watch.ended(drained, (time.perf_counter() - started) * 1000)

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        if self._logged_for_gen != self.consumer.gen:  # a tick failing 60 times a second
            self._logged_for_gen = self.consumer.gen  # would otherwise flood the log
            log.error("the event pump's tick failed; the answer was ended", exc_info=exc)
        if self.on_failure is not None:
            try:
                self.on_failure(exc)
            except Exception:  # the report must not become a second way to die
                log.exception("reporting a failed tick failed too")
