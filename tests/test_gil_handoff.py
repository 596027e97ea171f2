"""The window takes the GIL back within a millisecond while another Python thread computes
(:func:`tkchat.threads.favour_the_gui_thread`): tkinter lets the GIL go around every Tcl call,
and at CPython's default interval each call could wait 5 ms for it.

It also asks Linux for short scheduler slices for its thread, so that it gets a core back as
soon as it wakes. What is checked is that the window sets the interpreter's switch interval
and that the kernel reports the slice asked for; how much sooner the main thread gets the
GIL or a core back is CPython's and the kernel's behaviour, measured by the bench.
"""

from __future__ import annotations

import os
import platform
import sys
import threading
import tkinter as tk

from tkchat.generate.scripted import ScriptedBackend
from tkchat.threads import (
    GUI_SLICE_NS,
    GUI_SWITCH_INTERVAL_S,
    favour_the_gui_thread,
    lower_this_thread,
    short_slices,
    slice_ns,
)


def test_favouring_the_gui_thread_sets_the_window_s_switch_interval() -> None:
    sys.setswitchinterval(0.005)  # CPython's default (the fixture restores the interval)
    favour_the_gui_thread()
    assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S < 0.005


def test_a_window_hands_the_gil_over_every_millisecond(root: tk.Tk, make_app) -> None:
    sys.setswitchinterval(0.005)  # the fixture restores the interval
    make_app(ScriptedBackend(rate=0))
    assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S
    if _custom_slices():  # and its thread's slice is the short one
        assert slice_ns() == GUI_SLICE_NS


def test_the_window_s_thread_asks_the_kernel_for_short_slices() -> None:
    """Linux 6.12 and later grant a thread a slice of its own (EEVDF's custom slice): the
    window's thread asks for the shortest, keeping its nice value; elsewhere the request
    says it was not granted and changes nothing."""
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    default = slice_ns()  # (the fixture gave this thread the kernel's default slice)
    favour_the_gui_thread()
    if _custom_slices():
        assert default is not None and default > GUI_SLICE_NS
        assert slice_ns() == GUI_SLICE_NS
        assert short_slices(False) and slice_ns() == default  # and back
    else:
        assert not short_slices(True) and slice_ns() == default
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == nice


def test_a_lowered_thread_keeps_its_nice_and_another_policy_is_left_alone() -> None:
    seen: dict[str, object] = {}

    def lowered() -> None:  # as the model's worker is
        lower_this_thread(2)
        seen["asked"] = short_slices(True)
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["slice"] = slice_ns()

    def batch() -> None:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # this thread only
        before = slice_ns()
        seen["batch asked"] = short_slices(True)
        seen["batch policy"] = os.sched_getscheduler(0)
        seen["batch slice"] = slice_ns() == before

    for target in (lowered, batch):
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    custom = _custom_slices()
    assert seen["asked"] is custom and seen["nice"] == 2
    assert seen["slice"] == (GUI_SLICE_NS if custom else seen["slice"])
    assert seen["batch asked"] is False and seen["batch policy"] == os.SCHED_BATCH
    assert seen["batch slice"] is True


def _custom_slices() -> bool:
    """Whether this kernel grants custom slices (Linux 6.12 and later)."""
    if sys.platform != "linux":
        return False
    major, minor = (int(part) for part in platform.release().split(".")[:2])
    return (major, minor) >= (6, 12)
