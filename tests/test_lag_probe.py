"""The Tk lag probe's timer: stopped, it forgets its pending firing; in the command line's
window it starts once the window is on screen and drawn, so the window's first layout and
drawing is not a freeze on a fresh timeline. Counted with a real Tk window, no clock."""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.ui import lag_probe
from tkchat.ui.lag_probe import PROBING, STARTING, LagProbe
from tkchat.ui.scheduler import AfterScheduler


def test_a_stopped_probe_forgets_its_pending_firing(root: tk.Tk) -> None:
    scheduler = AfterScheduler(root)
    probe = LagProbe(scheduler)
    probe.start()
    assert scheduler.pending(PROBING)
    probe.stop()
    assert not scheduler.pending(PROBING) and not probe.running


def test_the_probe_starts_once_the_window_is_shown(
    root: tk.Tk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lag_probe, "SHOWN_POLL_MS", 1)  # a look every millisecond
    window = tk.Toplevel(root)
    window.withdraw()
    looks = [0]
    viewable = window.winfo_viewable

    def counted() -> int:
        looks[0] += 1
        return viewable()

    monkeypatch.setattr(window, "winfo_viewable", counted)
    scheduler = AfterScheduler(root)
    probe = LagProbe(scheduler)
    probe.start()  # as the window's build does
    probe.start_once_shown(window)
    assert not probe.running and not scheduler.pending(PROBING)
    pump_until(root, lambda: looks[0] >= 5, what="five looks at the withdrawn window")
    assert not probe.running and not probe.recent  # nothing measured while it is not shown
    window.deiconify()
    pump_until(root, lambda: probe.running, what="the probe to start")
    assert viewable() and not scheduler.pending(STARTING)
    window.destroy()


def test_a_window_never_shown_is_measured_after_the_wait(
    root: tk.Tk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lag_probe, "SHOWN_POLL_MS", 1)
    monkeypatch.setattr(lag_probe, "SHOWN_WAIT_MS", 0)
    window = tk.Toplevel(root)
    window.withdraw()
    probe = LagProbe(AfterScheduler(root))
    probe.start_once_shown(window)
    pump_until(root, lambda: probe.running, what="the probe to start anyway")
    assert not window.winfo_viewable()
    window.destroy()
