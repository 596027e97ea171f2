"""The consumption loop: every 16 ms, drain the queue and hand one tick's result to the app.

This is the only way events reach the window. It never blocks (``drain`` takes what is
queued now), never loops over a stream, and re-arms itself through the scheduler so it stops
cleanly when the window closes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.transport.channel import EventChannel
from tkchat.ui.scheduler import AfterScheduler

TICK_MS = 16  # one frame at 60 Hz: faster would not be seen, slower starts to look jerky
MAX_EVENTS_PER_TICK = 4096  # the sender coalesces long before this; a guard, not a tuning knob


class EventPump:
    """Main thread only."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        channel: EventChannel,
        consumer: StreamConsumer,
        on_tick: Callable[[TickResult], None],
    ) -> None:
        self.scheduler = scheduler
        self.channel = channel
        self.consumer = consumer
        self.on_tick = on_tick
        self.tick_ms: list[float] = []  # recent tick durations, for the benchmark
        self.events = 0

    def start(self) -> None:
        self.scheduler.once("pump", TICK_MS, self._tick)

    def _tick(self) -> None:
        started = time.perf_counter()
        events = self.channel.drain(MAX_EVENTS_PER_TICK)
        if events:
            self.events += len(events)
            self.on_tick(self.consumer.accept(events))
            self.tick_ms.append((time.perf_counter() - started) * 1000)
            if len(self.tick_ms) > 10_000:
                del self.tick_ms[:5_000]
        self.scheduler.once("pump", TICK_MS, self._tick)
