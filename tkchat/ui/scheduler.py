"""Every ``after`` callback of the app goes through here (as idlelib keeps its ids).

Each timer has a name; scheduling a name again replaces the pending one, so a loop can never
run twice in parallel. Given a ``ledger``, the scheduler tells it which timer runs: the
window's sampler (``tkchat/trace/``) reads it to name what held the loop. On close,
:meth:`AfterScheduler.close` cancels every pending id and refuses new ones, so nothing fires
into a destroyed window ("invalid command name" errors).
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.trace.ledger import CallbackLedger


class AfterScheduler:
    """Main thread only."""

    def __init__(self, widget: tk.Misc) -> None:
        self.widget = widget
        self._pending: dict[str, str] = {}
        self.closed = False
        self.ledger: CallbackLedger | None = None

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
            ledger = self.ledger
            if ledger is None:
                callback()
                return
            ledger.begin(name, callback)
            try:
                callback()
            finally:
                ledger.end()

        self._pending[name] = schedule(fire)

    def cancel(self, name: str) -> None:
        after_id = self._pending.pop(name, None)
        if after_id is not None:
            self.widget.after_cancel(after_id)

    def pending(self, name: str) -> bool:
        return name in self._pending

    def pending_ids(self) -> set[str]:
        """Tk's ids of the timers not yet fired (a test checks they are gone after close)."""
        return set(self._pending.values())

    def close(self) -> None:
        self.closed = True
        for name in list(self._pending):
            self.cancel(name)
