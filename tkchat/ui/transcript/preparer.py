"""The work a piece of markdown needs before it can be painted, done on a thread of its own.

A piece of prose is laid out by tkhtmlview's parser (:mod:`.html_layout`), a piece of code
cut into Pygments' looks: pure Python, and the costliest part of painting (for the bundled
model's 600-character list, 5 ms of the main thread's time, its answer's costliest callback;
for a 1,000-character piece of Python, 3-4 ms). The painter asks :meth:`Preparer.ready` as
soon as a block is complete (which asks for the work the first time), and paints the piece
once it is: the main thread then only maps looks to tags and inserts.

The thread holds the GIL while it works: the main thread waits up to the switch interval
(1 ms in a window, tkchat/threads.py) for it after each of its Tcl calls meanwhile. That is
less than the work it no longer does, and the work is shorter than it was on the main thread
(no Tk widget written and read back).

Main thread, but the thread's own :meth:`Preparer._work`. Nothing here touches Tk.
"""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from tkchat.threads import own_thread

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
KEEP_DONE = 256  # results not yet taken (a dropped answer's never are): the oldest go
THREAD = "tkchat-markdown"


class Preparer(Generic[K, V]):
    """``work(key)`` done on a thread of its own, once per key asked for. The main thread
    asks :meth:`ready` (which asks for the work the first time) and, once it is, takes the
    result with :meth:`take`. Work that raised is ready with nothing to take: the main thread
    then does it itself, and its error is reported there."""

    def __init__(self, work: Callable[[K], V]) -> None:
        self._work_on = work
        self._lock = threading.Lock()
        self._done: OrderedDict[K, V | None] = OrderedDict()
        self._asked: set[K] = set()
        self._requests: queue.SimpleQueue[tuple[K] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.prepared = 0  # pieces done on the preparer's thread (for tests)

    def ready(self, key: K) -> bool:
        """Main thread. Is ``key``'s work done? If not, it is asked for (once)."""
        with self._lock:
            if key in self._done:
                return True
            if key in self._asked:
                return False
            self._asked.add(key)
            if self._thread is None:
                self._thread = own_thread(self._work, name=THREAD)
                self._thread.start()
        self._requests.put((key,))
        return False

    def take(self, key: K) -> V | None:
        """Main thread. ``key``'s result, if done (and forgotten here)."""
        with self._lock:
            return self._done.pop(key, None)

    def close(self) -> None:
        """The thread ends once it has done what it was asked before."""
        if self._thread is not None:
            self._requests.put(None)

    def _work(self) -> None:
        """The preparer's thread: the work asked for, in order."""
        while (request := self._requests.get()) is not None:
            key = request[0]
            result: V | None
            try:
                result = self._work_on(key)
            except Exception:  # the main thread does it again, and reports it
                result = None
            with self._lock:
                self._asked.discard(key)
                self._done[key] = result
                self.prepared += 1
                while len(self._done) > KEEP_DONE:
                    self._done.popitem(last=False)
