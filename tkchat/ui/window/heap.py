"""The objects start-up made, set aside from Python's cyclic garbage collector.

A full collection walks every container object the process holds, and runs on the main
thread at a moment nobody chooses: with the modules, Tk's wrappers and the window's parts
(about 45,000 objects) each full collection took 15-23 ms of the main thread's CPU in the
long-chat bench (measured on this project's 2-core machine) — a third of a long task's
budget in one go, and more under load. None of those objects ever becomes garbage. Frozen
(:func:`gc.freeze`) once the window is built, they are never walked again: later collections
walk only what was made since (the conversation, its rendered pieces).

Main thread, once, before the main loop starts.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Collect what start-up left behind, then keep the rest out of every later collection."""
    gc.collect()
    gc.freeze()
