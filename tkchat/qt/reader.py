"""The one Qt-specific thread: a reader that turns the event queue into queued signals.

The model runs on tkchat's ``GenerationWorker`` thread, the same object the Tk window and the
server use; it knows nothing of Qt and only ``put()``\\s events on the channel. The Qt GUI
thread must never wait on that queue. So a :class:`ChannelReader`, moved to a ``QThread`` of
its own, does the waiting, and hands what it read to the window as a signal. The signal crosses
threads, so Qt queues it: the slot runs later, on the GUI thread, between clicks and repaints.

At most one batch is in flight. The reader waits until the window has taken its last batch
before it reads again; meanwhile the worker's sender keeps merging new text into the chunk
still waiting in the channel (``transport/channel.py``). A busy window therefore receives one
bigger batch, not a pile of one-token signals — the same bound on memory as the Tk pump.
"""

from __future__ import annotations

import queue
import threading

from PySide6.QtCore import QObject, QThread, Signal, Slot

from tkchat.transport.channel import EventChannel

WAIT_S = 0.1  # how often a waiting reader looks whether it should stop


class ChannelReader(QObject):
    """Lives on its own ``QThread`` (:func:`start_reader`); ``taken`` and ``stop`` are called
    from the GUI thread."""

    arrived = Signal(object)  # a tuple of events, in queue order

    def __init__(self, channel: EventChannel) -> None:
        super().__init__()
        self.channel = channel
        self._stop = threading.Event()
        self._taken = threading.Event()

    @Slot()
    def run(self) -> None:
        """Reader thread, until :meth:`stop`. Block on the queue, never on the GUI."""
        while not self._stop.is_set():
            try:
                first = self.channel.get(timeout=WAIT_S)
            except queue.Empty:
                continue
            self._taken.clear()
            self.arrived.emit((first, *self.channel.drain()))
            while not self._taken.wait(WAIT_S):  # the window has not taken it yet
                if self._stop.is_set():
                    return

    def taken(self) -> None:
        """GUI thread, from the slot: the batch is handled, read the next one."""
        self._taken.set()

    def stop(self) -> None:
        """Any thread. The reader leaves its loop within ``WAIT_S``."""
        self._stop.set()


def start_reader(channel: EventChannel, parent: QObject) -> tuple[ChannelReader, QThread]:
    """GUI thread. A reader on a new ``QThread`` (owned by ``parent``), already running.
    Connect to ``reader.arrived`` with a queued connection; end with :func:`stop_reader`."""
    thread = QThread(parent)
    thread.setObjectName("tkchat-qt-reader")
    reader = ChannelReader(channel)
    reader.moveToThread(thread)  # its slots now run on that thread
    thread.started.connect(reader.run)
    thread.start()
    return reader, thread


def stop_reader(reader: ChannelReader, thread: QThread, timeout_ms: int = 2000) -> bool:
    """GUI thread. Stop the reader and wait for its thread; False if it did not end in time."""
    reader.stop()
    thread.quit()  # ends the thread's own event loop once ``run`` has returned
    return bool(thread.wait(timeout_ms))
