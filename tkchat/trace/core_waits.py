"""How long each thread of this process has waited for a core, from Linux.

A thread that waits for the GIL is asleep, not queued; but when the thread holding the GIL
is itself waiting for a core (another program has it), that sleep is the machine's doing.
The timed calls of a graded pipeline (:func:`tkchat.lab.selftest.instruments.held_ms`) and
the main-thread sampler (:mod:`tkchat.trace.sampler`) both excuse it the same way, from
these figures: :meth:`CoreWaits.read` before and after, and :func:`others_waited` between.

Each thread's ``/proc/self/task/N/schedstat`` (its second figure: nanoseconds spent ready
to run, waiting for a core), kept open and read in place (a sampler reads it hundreds of
times a second); empty where the system does not say. Use one :class:`CoreWaits` from one
thread.
"""

from __future__ import annotations

import contextlib
import os
import threading

TASKS = "/proc/self/task"


def available() -> bool:
    """Whether this system says how long a thread waited for a core."""
    return os.path.exists(f"{TASKS}/{threading.get_native_id()}/schedstat")


class CoreWaits:
    """Every thread's wait for a core so far, read with one ``pread`` a thread."""

    def __init__(self) -> None:
        self._files: dict[int, int] = {}  # native thread id -> its schedstat, open

    def read(self) -> dict[int, int]:
        """Every thread's total wait for a core so far, in ns, by native thread id."""
        try:
            names = os.listdir(TASKS)
        except OSError:
            return {}
        found: dict[int, int] = {}
        for name in names:
            tid = int(name)
            fd = self._files.get(tid)
            try:
                if fd is None:
                    fd = self._files[tid] = os.open(f"{TASKS}/{name}/schedstat", os.O_RDONLY)
                found[tid] = int(os.pread(fd, 128, 0).split()[1])
            except (OSError, ValueError, IndexError):  # it ended meanwhile
                continue
        for tid in [tid for tid in self._files if tid not in found]:  # threads that ended
            with contextlib.suppress(OSError):
                os.close(self._files.pop(tid))
        return found

    def close(self) -> None:
        for fd in self._files.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._files.clear()


def others_waited(before: dict[int, int], after: dict[int, int], skip: set[int]) -> float:
    """Seconds the threads not in ``skip`` waited for a core between two readings, summed
    (a thread born meanwhile: since it began)."""
    waited = sum(wait - before.get(tid, 0) for tid, wait in after.items() if tid not in skip)
    return max(0, waited) / 1e9
