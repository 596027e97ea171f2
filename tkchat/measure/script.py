"""Running the real window for a measurement: a virtual screen, and measurement scripts.

:func:`ensure_display` starts Xvfb when ``DISPLAY`` is unset, so ``tkchat bench``, the
self-test and the test suite run the real Tk window on a headless machine too.

Measurement scripts: a generator that yields what to wait for, resumed by the Tk loop.

A script yields a number of seconds or a condition; the runner re-arms ``after`` to resume it,
so the main loop stays free while a script waits — a measurement must not be the thing that
freezes the window it measures. ``tkchat bench`` and the lesson demos are written this way;
tests drive the same scripts with their own pump (tests/conftest.py ``run_script``).

Main thread only.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
import tkinter as tk
from collections.abc import Callable, Generator
from pathlib import Path

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


# -- a virtual screen ------------------------------------------------------------------------


class DisplayError(RuntimeError):
    pass


def ensure_display(size: str = "1600x1000x24") -> subprocess.Popen[bytes] | None:
    """Return the Xvfb process started (or None if a display was already set)."""
    if os.environ.get("DISPLAY"):
        return None
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise DisplayError(
            "No display (DISPLAY is unset) and Xvfb is not installed: "
            "apt-get install xvfb, or run on a desktop."
        )
    for number in range(90, 190):
        if Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():
            continue
        proc = subprocess.Popen(
            [xvfb, f":{number}", "-screen", "0", size, "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if Path(f"/tmp/.X11-unix/X{number}").exists():
                os.environ["DISPLAY"] = f":{number}"
                atexit.register(_stop, proc)
                return proc
            if proc.poll() is not None:
                break  # that number was taken after all; try the next
            time.sleep(0.05)
        _stop(proc)
    raise DisplayError("Could not start Xvfb on any display number from :90 to :189")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
