"""Which ``after`` callback is running, and which ran last: the scheduler's part of the story.

Every timer of the window goes through :class:`tkchat.ui.scheduler.AfterScheduler`, and each
has a name ("pump", "lag-probe", "painter"…). The scheduler tells a ledger when one begins and
ends; the sampler reads it from its own thread (a reference read, no lock), which gives two
things sampling alone cannot: the name of a timer too short to be sampled, and, when Tk then
spends a long time on its own work (redisplay, layout), which callback ran just before.

While :meth:`CallbackLedger.keep` is on, every callback is also kept (bounded) for the trace:
exact slices, where the sampler's are only as fine as its interval.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Ran:
    """One callback that ran: its timer's name, its function, when it began and ended."""

    timer: str
    function: str
    start: float
    end: float


KeptCall = tuple[str, str, float, float]  # a kept Ran: (timer, function, start, end)


def function_name(callback: Callable[..., object]) -> str:
    """``EventPump._tick`` for a bound method, the qualified name of anything else."""
    return str(getattr(callback, "__qualname__", None) or type(callback).__qualname__)


class CallbackLedger:
    """Written on the main thread (by the scheduler), read on any."""

    def __init__(self) -> None:
        self.current: tuple[str, str, float] | None = None  # (timer, function, start)
        self.last: Ran | None = None
        # A callback may run inside another (a when_idle timer inside update_idletasks):
        # the ones it interrupted, innermost last.
        self._outer: list[tuple[str, str, float]] = []
        self.count = 0  # callbacks begun so far
        # Kept as plain tuples, which the garbage collector stops tracking (a Ran each, 20,000
        # of them in a teaching window, made every full collection walk them all).
        self.kept: deque[KeptCall] | None = None

    def keep(self, at_most: int | None) -> None:
        """Keep every callback from now on, the last ``at_most`` of them (None: stop)."""
        self.kept = None if at_most is None else deque(maxlen=at_most)

    def begin(self, timer: str, callback: Callable[..., object]) -> None:
        self.count += 1
        if self.current is not None:
            self._outer.append(self.current)
        self.current = (timer, function_name(callback), time.perf_counter())

    def end(self) -> None:
        current = self.current
        self.current = self._outer.pop() if self._outer else None
        if current is None:
            return
        ran = Ran(current[0], current[1], current[2], time.perf_counter())
        self.last = ran
        if self.kept is not None:
            self.kept.append((ran.timer, ran.function, ran.start, ran.end))

    def kept_since(self, start: float) -> list[Ran]:
        """The kept callbacks that ended at ``start`` or later, oldest first."""
        return [Ran(*call) for call in list(self.kept or ()) if call[3] >= start]
