"""The window takes the GIL back within a millisecond while another Python thread computes
(:func:`tkchat.threads.favour_the_gui_thread`): tkinter lets the GIL go around every Tcl call,
and at CPython's default interval each call could wait 5 ms for it."""

from __future__ import annotations

import statistics
import sys
import threading
import time
import tkinter as tk

from tkchat.generate.scripted import ScriptedBackend
from tkchat.threads import GUI_SWITCH_INTERVAL_S, favour_the_gui_thread


class _Computing:
    """A thread running pure Python (it holds the GIL until asked for it), counting its
    rounds so the test knows it ran."""

    def __init__(self) -> None:
        self.rounds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="test-compute", daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            sum(range(2_000))
            self.rounds += 1


def _handover_s(root: tk.Tk, computing: _Computing, wanted: int = 15) -> float:
    """The median time the main thread takes to get the GIL back from ``computing`` and make
    one Tcl call, over rounds in which that thread held the GIL: the main thread lets the
    GIL go for 2 ms (a sleep), then needs it again."""
    waits: list[float] = []
    for _ in range(400):
        rounds = computing.rounds
        began = time.perf_counter()
        time.sleep(0.002)
        root.tk.call("expr", "1")
        took = time.perf_counter() - began - 0.002
        if computing.rounds != rounds:  # it ran, so it held the GIL when the sleep ended
            waits.append(took)
            if len(waits) == wanted:
                break
    assert len(waits) == wanted, f"the computing thread ran in {len(waits)} rounds of 400"
    return statistics.median(waits)


def test_the_main_thread_gets_the_gil_back_sooner_at_the_windows_interval(
    root: tk.Tk,
) -> None:
    computing = _Computing()
    computing.thread.start()
    try:
        sys.setswitchinterval(0.005)  # CPython's default (the fixture restores the interval)
        default = _handover_s(root, computing)
        favour_the_gui_thread()
        assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S
        favoured = _handover_s(root, computing)
    finally:
        computing.stop.set()
        computing.thread.join(timeout=10)
    # A wait of about one interval each time: 5 ms against 1 ms. Both are taken under the
    # same conditions, so a busy machine stretches both.
    assert favoured < 0.6 * default, (favoured, default)


def test_a_window_hands_the_gil_over_every_millisecond(root: tk.Tk, make_app) -> None:
    sys.setswitchinterval(0.005)  # the fixture restores the interval
    make_app(ScriptedBackend(rate=0))
    assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S
