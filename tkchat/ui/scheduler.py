"""Every ``after`` callback of the app goes through here (as idlelib keeps its ids).

Each timer has a name; scheduling a name again replaces the pending one, so a loop can never
run twice in parallel. Given a ``ledger``, the scheduler tells it which timer runs: the
window's sampler (``tkchat/trace/``) reads it to name what held the loop. On close,
:meth:`AfterScheduler.close` cancels every pending id and refuses new ones, so nothing fires
into a destroyed window ("invalid command name" errors).

Since every callback passes here, this is also where the bench learns what the window's own
work cost (:class:`CallbackCosts`, when it hands one in): each callback's CPU time on the
main thread. Beside the lag it tells a window that was slow from a window that was kept
waiting (by the machine, the GIL, the X server).
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass

from tkchat.trace.ledger import CallbackLedger


@dataclass
class CallbackCosts:
    """The worst of the callbacks run while it was handed in: main-thread CPU, ms.

    ``clock`` is what a callback's cost is read from (seconds; the main thread's CPU time):
    a test hands in one its callbacks move."""

    worst_ms: float = 0.0
    worst: str = ""  # the timer's name
    count: int = 0
    clock: Callable[[], float] = time.thread_time

    def add(self, name: str, cpu_ms: float) -> None:
        self.count += 1
        if cpu_ms > self.worst_ms:
            self.worst_ms, self.worst = cpu_ms, name


class AfterScheduler:
    """Main thread only."""

    def __init__(self, widget: tk.Misc) -> None:
        self.widget = widget
        self._pending: dict[str, str] = {}
        self.closed = False
        self.ledger: CallbackLedger | None = None  # the sampler's: which timer runs
        self.costs: CallbackCosts | None = None  # the bench's, while it measures

    def once(self, name: str, delay_ms: int, callback: Callable[[], object]) -> None:
        """Run ``callback`` after ``delay_ms`` (0: as soon as the loop is free)."""
        self._arm(name, callback, lambda fire: self.widget.after(delay_ms, fire))

    def when_idle(self, name: str, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the loop has nothing else to do (after redraws and events)."""
        self._arm(name, callback, self.widget.after_idle)

    def _arm(
        self,
        name: str,
        callback: Callable[[], object],
        schedule: Callable[[Callable[[], None]], str],
    ) -> None:
        if self.closed:
            return
        self.cancel(name)

        def fire() -> None:
            self._pending.pop(name, None)
            ledger, costs = self.ledger, self.costs
            if ledger is None and costs is None:
                callback()
                return
            began = costs.clock() if costs is not None else 0.0
            if ledger is not None:
                ledger.begin(name, callback)
            try:
                callback()
            finally:
                if ledger is not None:
                    ledger.end()
                if costs is not None:
                    costs.add(name, (costs.clock() - began) * 1000)

        self._pending[name] = schedule(fire)

    def cancel(self, name: str) -> None:
        after_id = self._pending.pop(name, None)
        if after_id is not None:
            self.widget.after_cancel(after_id)

    def pending(self, name: str) -> bool:
        return name in self._pending

    def close(self) -> None:
        self.closed = True
        for name in list(self._pending):
            self.cancel(name)
