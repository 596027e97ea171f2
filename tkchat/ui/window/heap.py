"""The objects start-up made, set aside from Python's cyclic garbage collector.

A full collection walks every container object the process holds, and runs on the main
thread at a moment nobody chooses: with the modules, Tk's wrappers and the window's parts
(about 45,000 objects) each full collection took 15-23 ms of the main thread's CPU in the
long-chat bench (measured on this project's 2-core machine) — a third of a long task's
budget in one go, and more under load. None of those objects ever becomes garbage. Frozen
(:func:`gc.freeze`) once the window is built, they are never walked again: later collections
walk only what was made since (the conversation, its rendered pieces).

A model loaded later (at start-up it loads on a worker, after the main loop has begun; or
one chosen in Model > Choose model) brings objects of its own, and the modules its first use
imports: about 20,000 more, whose full collection took 20 ms here, now and then in the middle
of an answer (the fixed window's lag max). They are frozen too, once the model is ready
(:func:`freeze_loaded_model`): a young collection first, then the freeze, 0.1-0.4 ms.

Main thread: :func:`freeze_what_is_alive` once, before the main loop starts;
:func:`freeze_loaded_model` when a model is ready.
"""

from __future__ import annotations

import gc


def freeze_what_is_alive() -> None:
    """Collect what is garbage now, then keep the rest out of every later collection: once
    start-up is over; and in a bench, its own records of the runs before the next one is
    measured (they are not the window's: tkchat/lab/bench/bench.py)."""
    gc.collect()
    gc.freeze()


def freeze_loaded_model() -> None:
    """What the model's load made, out of later collections too. No full collection here
    (70 ms on this machine: the window is live): the young generations only, where a load's
    garbage is; none was left for a full one to find, measured after the bundled model
    loaded."""
    gc.collect(1)
    gc.freeze()
