"""Two ways for the Qt window to put arriving events on screen: tkchat's, and the article's.

Both receive the reader's batches in a slot on the GUI thread, and both hand events to the
same Tk-free :class:`~tkchat.consume.stream_consumer.StreamConsumer` (stale generations dropped,
order restored). They differ only in *when* text goes into the widget:

- :class:`TimerDrain` (fixed): the slot only collects. The first batch after a quiet spell
  arms a 16 ms single-shot ``QTimer``; whatever arrives before it fires joins the same append.
  At most one insert per frame, whatever the token rate — and no timer at all while idle.
- :class:`AppendPerSignal` (BROKEN on purpose): the slot writes each event's text at once,
  as the article's ``chunk_received.connect(... insertPlainText ...)`` does: one append per
  token. Qt queues the signals for you, which makes this look right; it is ``no-coalesce``.

Both run on the GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QObject, Qt, QTimer

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.events import AppEvent

TICK_MS = 16  # one frame at 60 Hz, as the Tk window's pump

Show = Callable[[TickResult], None]


class Consumption(Protocol):
    name: str
    broken: bool
    coalesce: bool  # may the worker's sender merge text while the queue backs up?

    def arrive(self, events: Sequence[AppEvent]) -> None:
        """GUI thread, from the reader's queued signal."""


class TimerDrain:
    """FIXED: collect in the slot, append once per 16 ms tick."""

    name = "fixed"
    broken = False
    coalesce = True

    def __init__(self, consumer: StreamConsumer, show: Show, parent: QObject) -> None:
        self.consumer = consumer
        self.show = show
        self._pending: list[AppEvent] = []
        # Owned by the window: Qt stops it when the window is destroyed.
        self.timer = QTimer(parent)
        self.timer.setSingleShot(True)
        self.timer.setInterval(TICK_MS)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(self._drain)

    def arrive(self, events: Sequence[AppEvent]) -> None:
        self._pending.extend(events)  # cheap: a few microseconds, whatever the rate
        if not self.timer.isActive():
            self.timer.start()

    def _drain(self) -> None:
        """The tick: everything since the last one goes to the consumer, then on screen."""
        events, self._pending = self._pending, []
        self.show(self.consumer.accept(events))
        if self.consumer.waiting:  # an early event waits for a late one: check its deadline
            self.timer.start()


class AppendPerSignal:
    """BROKEN on purpose: every event straight into the widget, one append per token."""

    name = "no-coalesce"
    broken = True
    coalesce = False  # the article's worker emits every token on its own

    def __init__(self, consumer: StreamConsumer, show: Show, parent: QObject) -> None:
        self.consumer = consumer
        self.show = show

    def arrive(self, events: Sequence[AppEvent]) -> None:
        for event in events:
            self.show(self.consumer.accept([event]))


def make_consumption(
    mode: str, consumer: StreamConsumer, show: Show, parent: QObject
) -> Consumption:
    """The consumption for ``mode`` ("fixed" or "no-coalesce"); ValueError for another."""
    for kind in (TimerDrain, AppendPerSignal):
        if kind.name == mode:
            made: Consumption = kind(consumer, show, parent)
            return made
    raise ValueError(f"the Qt window has no mode {mode!r}; choose fixed or no-coalesce")
