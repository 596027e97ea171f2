"""The window takes the GIL back within a millisecond while another Python thread computes
(:func:`tkchat.threads.favour_the_gui_thread`): tkinter lets the GIL go around every Tcl call,
and at CPython's default interval each call could wait 5 ms for it.

What is checked is that the window sets the interpreter's switch interval; how much sooner
the main thread gets the GIL back is CPython's behaviour, measured by the bench.
"""

from __future__ import annotations

import sys
import tkinter as tk

from tkchat.generate.scripted import ScriptedBackend
from tkchat.threads import GUI_SWITCH_INTERVAL_S, favour_the_gui_thread


def test_favouring_the_gui_thread_sets_the_window_s_switch_interval() -> None:
    sys.setswitchinterval(0.005)  # CPython's default (the fixture restores the interval)
    favour_the_gui_thread()
    assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S < 0.005


def test_a_window_hands_the_gil_over_every_millisecond(root: tk.Tk, make_app) -> None:
    sys.setswitchinterval(0.005)  # the fixture restores the interval
    make_app(ScriptedBackend(rate=0))
    assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S
