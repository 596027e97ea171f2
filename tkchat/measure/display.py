"""A virtual screen for headless machines: start Xvfb when ``DISPLAY`` is unset.

Used by ``tkchat bench`` and the test suite, so both run the real Tk window anywhere.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
from pathlib import Path


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
