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

import ctypes
import os
import platform
import struct
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
    a millisecond of asking, not five; and ask the kernel for short slices for this thread
    (:func:`short_slices`), so that it gets a core back as soon as it wakes."""
    if sys.getswitchinterval() > GUI_SWITCH_INTERVAL_S:
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    short_slices(True)


# The time slice the window's thread asks Linux for (EEVDF's custom slice, kernel 6.12 and
# later: the shortest it grants). A thread with a shorter slice than the running one has an
# earlier deadline, so when it wakes it takes the core at once; with the default slice
# (1.4 ms here) it waited until a model thread's slice ran out. While a prompt is read on
# both cores of a 2-core machine, the window's timer fired up to 12 ms late. Measured with
# 42 answer starts each (tkchat bench --modes fixed on the bundled model, quiet,
# 2026-12-05): the worst lag in an answer's first 300 ms was over 8 ms 4 times with the
# default slice, 0 times with this one (over 5 ms: 20 against 7), for the same tokens/s and
# time to the first token. The thread's share of the CPU is its nice value's, as before.
GUI_SLICE_NS = 100_000
_SCHED_OTHER = 0
# sched_setattr and sched_getattr, by machine (the generic table serves aarch64 and riscv64).
_SCHED_ATTR_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "riscv64": (274, 275)}
_SCHED_ATTR = struct.Struct("=IIQiIQQQ")  # struct sched_attr, its first version (48 bytes)


def short_slices(on: bool) -> bool:
    """The calling thread asks for :data:`GUI_SLICE_NS` slices (``on``) or the kernel's
    default ones again. True if the kernel reports the slice asked for; False where there are
    no custom slices (not Linux, another machine, a kernel before 6.12: the request is
    ignored there) or the thread is not under the default policy, which is left as it was.
    Its nice value is kept. Any thread; the window's main thread calls it."""
    now = _sched_attr()
    if now is None or now[1] != _SCHED_OTHER:
        return False
    _size, policy, _flags, nice, priority, *_ = now
    wanted = GUI_SLICE_NS if on else 0  # 0: the default slice again
    attr = _SCHED_ATTR.pack(_SCHED_ATTR.size, policy, 0, nice, priority, wanted, 0, 0)
    if not _sched_call(0, attr, 0):
        return False
    return not on or slice_ns() == GUI_SLICE_NS


def slice_ns() -> int | None:
    """The calling thread's time slice as Linux reports it (kernel 6.12 and later: the
    default or the one asked for; 0 before), or None where it cannot be read."""
    now = _sched_attr()
    return None if now is None else int(now[5])


def _sched_attr() -> tuple[int, ...] | None:
    """The calling thread's ``struct sched_attr``, or None where it cannot be read."""
    buffer = ctypes.create_string_buffer(_SCHED_ATTR.size)
    if not _sched_call(1, buffer, _SCHED_ATTR.size, 0):
        return None
    return _SCHED_ATTR.unpack(buffer.raw)


def _sched_call(which: int, *args: object) -> bool:
    """``sched_setattr`` (0) or ``sched_getattr`` (1) for the calling thread (pid 0), where
    this machine has it; True if it returned 0."""
    calls = _SCHED_ATTR_SYSCALLS.get(platform.machine()) if sys.platform == "linux" else None
    if calls is None:
        return False
    try:
        return int(ctypes.CDLL(None).syscall(calls[which], 0, *args)) == 0
    except OSError:
        return False


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
