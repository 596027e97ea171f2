"""Measurement scripts: how the lab's tools wait without freezing the window they measure.

A script is a generator that yields what to wait for, resumed by the Tk loop: it yields a
number of seconds or a condition; the runner re-arms ``after`` to resume it, so the main loop
stays free while a script waits — a measurement must not be the thing that freezes the window
it measures. ``tkchat bench`` and the lesson demos are written this way; tests drive the same
scripts with their own pump (tests/conftest.py ``run_script``). What a script reads of the
window, and does to it, is :class:`tkchat.lab.window.LabWindow`.

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable, Generator

Wait = float | Callable[[], bool]
Script = Generator[Wait, None, None]


class ScriptRunner:
    """Drives a script from inside the Tk main loop; ends the loop (``quit``) when done."""

    def __init__(self, root: tk.Tk, script: Script) -> None:
        self.root = root
        self.script = script
        self.error: BaseException | None = None

    def start(self) -> None:
        self.root.after(0, self._step)

    def _step(self) -> None:
        try:
            wait = next(self.script)
        except StopIteration:
            self.root.quit()
            return
        except BaseException as exc:  # report after the loop ends, never lose it
            self.error = exc
            self.root.quit()
            return
        if callable(wait):
            self._poll(wait, time.monotonic() + 600)
        else:
            self.root.after(max(1, int(wait * 1000)), self._step)

    def _poll(self, ready: Callable[[], bool], deadline: float) -> None:
        if ready():
            self._step()
        elif time.monotonic() > deadline:
            self.error = TimeoutError("a benchmark step waited more than 10 minutes")
            self.root.quit()
        else:
            self.root.after(10, self._poll, ready, deadline)
