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
