"""The consumption loop: every 16 ms, drain the queue and hand one tick's result to the app.

This is the only way events reach the window. It never blocks (``drain`` takes what is
queued now), never loops over a stream, and re-arms itself through the scheduler so it stops
cleanly when the window closes.

It also cannot die. A loop that re-arms only after its work succeeded stops for good at the
first exception: the heartbeat would keep ticking ("alive!") while no answer ever reached the
screen again. So the next tick is armed whatever this one did, and a failure is handed to
``on_failure`` (the window ends the answer and says so) and logged once per answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.transport.channel import EventChannel
from tkchat.ui.scheduler import AfterScheduler

TICK_MS = 16  # one frame at 60 Hz: faster would not be seen, slower starts to look jerky
MAX_EVENTS_PER_TICK = 4096  # the sender coalesces long before this; a guard, not a tuning knob

log = logging.getLogger(__name__)


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

    def start(self) -> None:
        self.scheduler.once("pump", TICK_MS, self._tick)

    def _tick(self) -> None:
        started = time.perf_counter()
        try:
            events = self.channel.drain(MAX_EVENTS_PER_TICK)
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
        finally:
            # Armed last, so the 16 ms count from the end of this tick's work; but armed
            # always, so one bad tick costs one tick, not the rest of the session.
            self.scheduler.once("pump", TICK_MS, self._tick)

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
