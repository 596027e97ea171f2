"""How long each thread of this process has waited for a core, from Linux.

A thread that waits for the GIL is asleep, not queued; but when the thread holding the GIL
is itself waiting for a core (another program has it), that sleep is the machine's doing.
The timed calls of a graded pipeline (:func:`tkchat.lab.selftest.instruments.held_ms`) and
the main-thread sampler (:mod:`tkchat.trace.sampler`) both excuse it the same way, from
these figures: :func:`core_waits` before and after, and :func:`others_waited` between them.

Any thread. Each thread's ``/proc/self/task/N/schedstat`` (its second figure: nanoseconds
spent ready to run, waiting for a core); empty where the system does not say.
"""

from __future__ import annotations

import os
import threading

TASKS = "/proc/self/task"


def available() -> bool:
    """Whether this system says how long a thread waited for a core."""
    return os.path.exists(f"{TASKS}/{threading.get_native_id()}/schedstat")


def core_waits() -> dict[int, int]:
    """Every thread's total wait for a core so far, in ns, by native thread id."""
    found: dict[int, int] = {}
    try:
        names = os.listdir(TASKS)
    except OSError:
        return found
    for name in names:
        try:
            with open(f"{TASKS}/{name}/schedstat", "rb") as stat:
                found[int(name)] = int(stat.read().split()[1])
        except (OSError, ValueError, IndexError):  # it ended meanwhile
            continue
    return found


def others_waited(before: dict[int, int], after: dict[int, int], skip: set[int]) -> float:
    """Seconds the threads not in ``skip`` waited for a core between two readings, summed
    (a thread born meanwhile: since it began)."""
    waited = sum(wait - before.get(tid, 0) for tid, wait in after.items() if tid not in skip)
    return max(0, waited) / 1e9
