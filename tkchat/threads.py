"""tkchat's own threads, known by the thread objects tkchat started — never by their names.

Only the main thread may call Tk. A pipeline of one's own (``lessons/exercises/``) may start
threads, and :class:`tkchat.ui.teaching.outside.TkThreadGuard` stops any call into Tk that
one of them makes; tkchat's own threads (the model's worker, the loader, the store's writer,
...) are let through, and pay nothing for the guard. Which is which is decided by *object*:
every thread tkchat starts is made by :func:`own_thread`, which remembers it. A name proves
nothing — a student may well call a thread ``tkchat-feeder``.

The set is one per process because threads are: it holds weak references only, so a thread
that has ended and been dropped leaves it by itself.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

_OWN: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def own_thread(
    target: Callable[..., object],
    *,
    name: str,
    args: tuple[Any, ...] = (),
    daemon: bool = True,
) -> threading.Thread:
    """A new thread of tkchat's, not started yet (any thread may call this)."""
    thread = threading.Thread(target=target, name=name, args=args, daemon=daemon)
    _OWN.add(thread)  # before it can run: the guard asks at its first call
    return thread


def is_own(thread: threading.Thread) -> bool:
    """Whether ``thread`` was made by :func:`own_thread`."""
    return thread in _OWN


# How much nicer than the window a model's worker runs. At nice +2 the scheduler weighs it
# about two thirds of a nice-0 thread (CFS weights 655 vs 1024), so when every core is busy
# the Tk main thread, which sleeps most of the time and wakes for a frame, gets its turn
# first. Measured with `tkchat bench --busy` on the bundled model (2-core machine, a hog per
# core, 2026-12-02): at nice +5 the model ran at 11-15 tokens/s against 31-34 at nice 0, for
# a window lag p99 of 1.2-1.3 x the hogs' idle p99 against 1.6 x (no long task at either);
# nice +2 gave 23-26 tokens/s and 1.5 x.
WORKER_NICE = 2


# How long a thread may hold the GIL while another waits for it (CPython's default: 5 ms).
# tkinter lets the GIL go around every Tcl call and takes it back afterwards, so while any
# other Python thread computes (a token count of a long chat, a scripted flood, a lexer
# loading), each Tcl call of the main thread can wait a whole interval for it: a callback of
# twenty calls waited 100 ms, with 5 ms of its own CPU. Measured in `tkchat bench --long-chat`
# (quiet 2-core machine, 2026-12-02): at 5 ms, 3-4 long tasks at 1,000 messages (lag max
# 145-154 ms); at 1 ms, none (43 ms).
GUI_SWITCH_INTERVAL_S = 0.001


def favour_the_gui_thread() -> None:
    """Main thread, once a window is built. Hand the GIL over every millisecond (process
    wide: the interpreter has one interval) so that a waiting GUI thread gets it back within
    a millisecond of asking, not five."""
    if sys.getswitchinterval() > GUI_SWITCH_INTERVAL_S:
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)


def lower_this_thread(step: int = WORKER_NICE) -> bool:
    """Worker thread. Lower the scheduling priority of the *calling thread only* (the window's
    main thread keeps its own); True if it was lowered.

    - Linux: a thread is a task with a nice value of its own, and
      ``setpriority(PRIO_PROCESS, tid)`` changes only that task. Raising one's nice needs no
      privilege (lowering it again would: each generation runs on a new thread, so nothing
      needs to). Threads this one starts inherit its nice value, so llama.cpp's compute
      threads, started from the worker, run at it too.
    - Windows: ``SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL)``.
    - macOS: ``setpriority`` would lower the whole process, so the thread's quality of service
      is set instead: ``pthread_set_qos_class_self_np(QOS_CLASS_UTILITY)``.

    The Windows and macOS calls go through ctypes and were not run on those systems here; a
    failure leaves the priority as it was (False), never the generation.
    """
    try:
        if sys.platform == "win32":
            return _lower_windows()
        if sys.platform == "darwin":
            return _lower_macos()
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + step))
        return True
    except (OSError, AttributeError, ValueError):
        return False


def _lower_windows() -> bool:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32")  # type: ignore[attr-defined,unused-ignore]
    below_normal = -1  # THREAD_PRIORITY_BELOW_NORMAL
    return bool(kernel32.SetThreadPriority(kernel32.GetCurrentThread(), below_normal))


def _lower_macos() -> bool:  # pragma: no cover - macOS only
    import ctypes

    libc = ctypes.CDLL("/usr/lib/libSystem.dylib")
    qos_class_utility = 0x11
    return bool(libc.pthread_set_qos_class_self_np(qos_class_utility, 0) == 0)
