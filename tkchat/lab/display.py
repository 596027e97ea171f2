"""A virtual screen for headless machines: start Xvfb when ``DISPLAY`` is unset; and real
clicks on it (:class:`InputProber`, XTest events sent as the self-test sends them), for the
bench's input latency.

Used by ``tkchat bench`` and the test suite, so both run the real Tk window anywhere.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from tkchat.lab.selftest.senses import XInput, can_click
from tkchat.threads import own_thread

if TYPE_CHECKING:
    from tkchat.lab.window import LabWindow


class DisplayError(RuntimeError):
    pass


def ensure_display(size: str = "1600x1000x24") -> subprocess.Popen[bytes] | None:
    """Return the Xvfb process started (or None if a display was already set).

    Xvfb chooses a free display number itself and writes it to a pipe (``-displayfd``): two
    processes starting a screen at once (the suite's workers, a bench beside them) each get
    their own. (Picking the number here, from the lock files, let the loser of such a race
    see the winner's socket and use its screen — and die with it when the winner's session
    stopped it.)"""
    if os.environ.get("DISPLAY"):
        return None
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise DisplayError(
            "No display (DISPLAY is unset) and Xvfb is not installed: "
            "apt-get install xvfb, or run on a desktop."
        )
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(write_end), "-screen", "0", size, "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write_end,),
        )
    finally:
        os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as said:
            number = said.readline().strip().decode()  # once the screen is ready; "" if it died
    except OSError:
        number = ""
    if not number.isdigit():
        _stop(proc)
        raise DisplayError("Xvfb did not start (it named no display)")
    os.environ["DISPLAY"] = f":{number}"
    atexit.register(_stop, proc)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


class InputProber:
    """Clicks the window's Ping button every 100 ms with real X events, from its own thread,
    noting when each click was sent; the button's handler notes when it ran."""

    def __init__(self, window: LabWindow) -> None:
        self.window = window
        self.point: tuple[int, int] | None = None
        self.sent: list[float] = []
        self._active = threading.Event()
        self._quit = threading.Event()
        self._thread = own_thread(self._run, name="tkchat-input-prober")
        self.available = can_click()  # (XTest needs no xdotool)

    def locate(self) -> None:
        """Main thread: where the Ping button is on the screen (the window shown)."""
        self.point = self.window.points().get("ping")
        if self.available:
            self._thread.start()

    def begin(self) -> int:
        """Main thread: start clicking; returns the handler count to pair from."""
        self.sent = []
        self._active.set()
        return len(self.window.ping_times)

    def end(self, handled_from: int) -> list[float]:
        """Main thread: stop clicking; the latencies (ms) of the clicks handled so far."""
        self._active.clear()
        handled = self.window.ping_times[handled_from:]
        return [(h - s) * 1000 for s, h in zip(self.sent, handled, strict=False)]

    def close(self) -> None:
        self._quit.set()
        self._active.set()

    def _run(self) -> None:
        """Prober thread: never touches Tk. Its clicks go through XTest from one helper
        process that stays (the self-test's :class:`XInput`), each noted when it was sent.
        An ``xdotool`` process a click, as before, cost the machine a process start ten times
        a second beside the window it measured: the fixed window's lag p99 in the claims'
        model run (128 tokens, 2 answers, 10 stops; quiet, 2026-12-05) was 3.61, 1.93 and
        1.58 ms clicked that way against 0.97, 1.03 and 0.89 ms not clicked."""
        clicks = XInput()
        try:
            while not self._quit.is_set():
                self._active.wait()
                if self._quit.is_set() or self.point is None:
                    return
                try:
                    self.sent.append(clicks.click(self.point))
                except (OSError, subprocess.SubprocessError):
                    return  # XTest refused and no xdotool: the row shows no input latency
                time.sleep(0.1)
        finally:
            clicks.close()
