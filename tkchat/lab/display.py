"""A virtual screen for headless machines: start Xvfb when ``DISPLAY`` is unset; and real
clicks on it (:class:`InputProber`, with xdotool), for the bench's input latency.

Used by ``tkchat bench`` and the test suite, so both run the real Tk window anywhere.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat.stats import display_server_pid
from tkchat.threads import own_thread

if TYPE_CHECKING:
    from tkchat.ui.health import HealthBar


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
            # Ours only if its lock names our server: two processes starting a display at
            # once (two pytest-xdist workers) both saw the number free, and the one whose
            # server lost the race took the other's socket for its own: both shared a screen.
            socket = Path(f"/tmp/.X11-unix/X{number}")
            if socket.exists() and display_server_pid(f":{number}") == proc.pid:
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


class InputProber:
    """Clicks the window's Ping button every 100 ms with real X events, from its own thread,
    noting the time just before each click; the button's handler notes when it ran."""

    def __init__(self, health: HealthBar) -> None:
        self.health = health
        self.point: tuple[int, int] | None = None
        self.sent: list[float] = []
        self._active = threading.Event()
        self._quit = threading.Event()
        self._thread = own_thread(self._run, name="tkchat-input-prober")
        self.available = shutil.which("xdotool") is not None

    def locate(self) -> None:
        """Main thread: where the Ping button is on the screen."""
        button = self.health.ping_button
        self.point = (
            button.winfo_rootx() + button.winfo_width() // 2,
            button.winfo_rooty() + button.winfo_height() // 2,
        )
        if self.available:
            self._thread.start()

    def begin(self) -> int:
        """Main thread: start clicking; returns the handler count to pair from."""
        self.sent = []
        self._active.set()
        return len(self.health.ping_times)

    def end(self, handled_from: int) -> list[float]:
        """Main thread: stop clicking; the latencies (ms) of the clicks handled so far."""
        self._active.clear()
        handled = self.health.ping_times[handled_from:]
        return [(h - s) * 1000 for s, h in zip(self.sent, handled, strict=False)]

    def close(self) -> None:
        self._quit.set()
        self._active.set()

    def _run(self) -> None:
        """Prober thread: never touches Tk, only runs xdotool."""
        while not self._quit.is_set():
            self._active.wait()
            if self._quit.is_set() or self.point is None:
                return
            self.sent.append(time.perf_counter())
            subprocess.run(
                ["xdotool", "mousemove", *map(str, self.point), "click", "1"],
                check=False,
                timeout=30,
            )
            time.sleep(0.1)
