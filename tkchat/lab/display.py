"""A virtual screen for headless machines: start Xvfb when ``DISPLAY`` is unset; and real
clicks on it (:class:`InputProber`, with xdotool), for the bench's input latency.

Used by ``tkchat bench`` and the test suite, so both run the real Tk window anywhere.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from tkchat.threads import own_thread

if TYPE_CHECKING:
    from tkchat.ui.health import HealthBar


class DisplayError(RuntimeError):
    pass


def ensure_display(size: str = "1600x1000x24") -> subprocess.Popen[bytes] | None:
    """Return the Xvfb process started (or None if a display was already set).

    Xvfb picks a free display number itself and says which (``-displayfd``) once it accepts
    connections. Picking one here was a race: two processes starting at once (the test
    suite's workers, two suites) both saw :93 free; one server failed, and its process took
    the other's socket for its own, so two test sessions typed and clicked on one screen."""
    if os.environ.get("DISPLAY"):
        return None
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise DisplayError(
            "No display (DISPLAY is unset) and Xvfb is not installed: "
            "apt-get install xvfb, or run on a desktop."
        )
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(write), "-screen", "0", size, "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write,),
        )
        os.close(write)
        write = -1
        number = _read_line(read, timeout=10.0)
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    if not number.isdigit():
        _stop(proc)
        raise DisplayError("Xvfb did not start (it named no display within 10 s)")
    os.environ["DISPLAY"] = f":{number}"
    atexit.register(_stop, proc)
    return proc


def _read_line(fd: int, timeout: float) -> str:
    """What ``fd`` holds up to its first line end, or "" if it closed or ``timeout`` seconds
    passed first (a deadline that only turns a hang into an error)."""
    data = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return ""
        chunk = os.read(fd, 64)
        if not chunk:
            return ""
        data += chunk
    return data.split(b"\n", 1)[0].decode("ascii", "replace").strip()


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
