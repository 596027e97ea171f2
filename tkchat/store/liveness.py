"""Which tkchat processes have a history open: so that one starting up never marks another's
live answer ``interrupted``.

An answer is saved as ``streaming`` while it streams; a process killed mid-answer leaves it
so, and the next start-up marks it ``interrupted``. But a second window (or ``tkchat --server``
with saved chats) started on the same folder while the first streams found the first's live
answer ``streaming`` too, and marked it. So every process that opens the history for writing
holds a shared advisory lock (``flock``) on the history's folder for as long as it is open
(the folder, not a file: nothing new appears beside the database, and SQLite's own locks on
the database file are left alone), and
a process that could take that lock *exclusively* when it opened is alone: only then are the
answers still ``streaming`` a dead process's. One that is not alone leaves them (the next
process to start alone marks them). The system drops a dead process's lock itself, so a
crash never leaves the history looking busy.

Where the system has no ``flock`` (Windows), every process counts as alone: as before.
Runs on the caller's thread (the history thread that opens the store).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


class LiveLock:
    """This process's share of the lock on ``database``'s folder; :attr:`alone`: nobody else
    had it when this one opened."""

    def __init__(self, database: Path) -> None:
        self.alone = True
        self._fd: int | None = None
        if sys.platform == "win32":
            return
        try:
            import fcntl
        except ImportError:  # (a stripped-down Python: counted alone, as before)
            return
        try:
            self._fd = os.open(database.parent, os.O_RDONLY)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.alone = False
            # shared from now on, alone or not: the next process to open sees this one
            fcntl.flock(self._fd, fcntl.LOCK_SH)
        except OSError:  # (a file system without flock: counted alone, as before)
            self.close()
            self.alone = True

    def close(self) -> None:
        """Let go (closing the file drops the lock). Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
