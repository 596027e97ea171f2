"""The bench's clicks (tkchat/lab/display.py, InputProber): real X clicks on the window's Ping
button, through XTest, on a machine without xdotool too."""

from __future__ import annotations

import ctypes.util
import os
import tkinter as tk
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.display import InputProber
from tkchat.lab.selftest.senses import can_click
from tkchat.lab.window import TkLabWindow
from tkchat.ui.window.chat_window import ChatApp

HAS_XTEST = bool(ctypes.util.find_library("X11") and ctypes.util.find_library("Xtst"))


def without_xdotool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """PATH as it is, less every folder that holds an xdotool (the Python running stays)."""
    kept = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "xdotool").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(kept) or str(tmp_path))


@pytest.mark.skipif(not HAS_XTEST, reason="needs libX11 and libXtst")
def test_the_prober_clicks_through_xtest_where_there_is_no_xdotool(
    root: tk.Tk,
    make_app: Callable[..., ChatApp],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """It once counted as unable to click wherever xdotool was missing, though its clicks
    no longer need it: the bench then measured no input latency on such a machine."""
    without_xdotool(monkeypatch, tmp_path)
    assert can_click()
    app = make_app(ScriptedBackend(rate=0))
    pump_until(root, lambda: bool(root.winfo_viewable()), what="the window on screen")
    prober = InputProber(TkLabWindow(app))
    assert prober.available
    prober.locate()
    try:
        first = prober.begin()
        pump_until(root, lambda: len(app.health.ping_times) >= first + 3, what="three clicks")
        latencies = prober.end(first)
    finally:
        prober.close()
    assert len(latencies) >= 3 and all(ms >= 0 for ms in latencies)
