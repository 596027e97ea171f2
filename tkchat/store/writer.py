"""Saving off the Tk thread: one background thread owns the writes while answers stream.

The window (the Tk main thread) calls :class:`StoreWriter`'s methods; each only puts a small
operation on a queue and returns at once, so no write — and no wait for a lock or a slow
disk — ever runs on the caller's thread. The writer thread applies them in order with its own
SQLite connection (WAL: the window's reads never wait for it).

A streaming answer grows through :meth:`StoreWriter.append`: the text is coalesced in memory
and written in one transaction at most ``flush_interval`` seconds (0.15 s) after it arrived,
so a ``kill -9`` loses at most about the last 0.2 s of an answer, from its first moments on,
and a flood of tokens costs a few small transactions a second, not one per token. Each
flush writes only its own text (an appended part, :mod:`tkchat.store.messages`), so the bytes
written grow linearly with the answer. Its end — the last text, the final content and the
status — is one transaction; then the write-ahead log is emptied
(:meth:`~tkchat.store.db.ConversationStore.checkpoint`).

A full disk or a lock refuses a write: the text stays in memory (what the window shows is
not touched), the failure is said once, the log is emptied so a failed write keeps no space,
and the write is tried again every :data:`RETRY_FULL_S` until it succeeds.

Callbacks (``on_saved``, ``on_error``, ``submit``'s ``on_done``) run on the WRITER thread.
A Tk window must not touch widgets there: hop back to the Tk thread, for example by putting
an event on the queue the window already drains (``lambda mid: events.put(Saved(mid))``).
"""

from __future__ import annotations

import collections
import itertools
import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tkchat.limits import MAX_INDEXED_CHARS
from tkchat.store.db import BUSY_TIMEOUT_S, ConversationStore
from tkchat.store.errors import StoreError
from tkchat.store.figures import AnswerFigures
from tkchat.store.records import ROLES, STATUSES, Role, Status
from tkchat.threads import own_thread

FLUSH_INTERVAL_S = 0.15
RETRY_FULL_S = 1.0  # how soon a write a full disk (or a lock) refused is tried again
ROOM_MARGIN = 64 * 1024  # free bytes the writer never writes into (see ensure_room)
RETRIED = ("full", "locked")  # failures that may go away by themselves: written again later
_KEPT_ERRORS = 100
_log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MessageTicket:
    """Stands for a message the writer has not saved yet, so the window can stream into it
    (``append``/``finish``) before its real id exists. The id arrives in ``on_saved``."""

    seq: int


MessageRef = int | MessageTicket  # a stored message's id, or a ticket from add_message


@dataclass(slots=True)
class _Add:
    ticket: MessageTicket
    conversation_id: int
    role: Role
    content: str
    status: Status
    on_saved: Callable[[int], None] | None
    variant: bool = False  # a new version of the conversation's last answer, not a new message


@dataclass(slots=True)
class _Append:
    ref: MessageRef
    text: str


@dataclass(slots=True)
class _Finish:
    ref: MessageRef
    status: Status
    content: str | None
    more: str = ""  # its text not written yet, written with its end (one transaction)


@dataclass(slots=True)
class _Submit:
    operation: Callable[[ConversationStore], Any]
    on_done: Callable[[Any], None] | None


@dataclass(slots=True)
class _Barrier:
    """flush() and close(): everything queued before it has been written when it is done."""

    stop: bool
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False


_Op = _Add | _Append | _Finish | _Submit | _Barrier


def ensure_room(store: ConversationStore, text: str, *, ending: bool = False) -> None:
    """Raise the full-disk ``StoreError`` unless the disk has room to save ``text`` *and*
    still empty the log afterwards. Writing into the last free bytes is what kept a disk
    full after tkchat exited: a write a full disk cut short leaves its frames in the log,
    and a log whose pages the file has no room for cannot be emptied. So the writer stops
    short: it needs :data:`ROOM_MARGIN` beyond twice the text (its frames in the log, then
    the file's copy of them), and for an answer's end its index entry too (about two bytes
    per indexed character, and its copy)."""
    if store.path is None:
        return
    try:
        free = shutil.disk_usage(store.path.parent).free
    except OSError:
        return  # cannot tell: let SQLite find out
    size = len(text.encode("utf-8", "surrogatepass"))
    index = 4 * min(size, MAX_INDEXED_CHARS) if ending else 0
    if free < ROOM_MARGIN + 2 * size + index:
        raise StoreError(
            "Could not save the answer: the disk is full (tkchat leaves the last "
            f"{ROOM_MARGIN >> 10} kB free). Conversations saved earlier are intact.",
            kind="full",
            detail=f"{free} bytes free",
        )


def _check(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")


class StoreWriter:
    """Writes conversations on a background thread. See the module docstring.

    ``target`` is the database path, or a :class:`ConversationStore`: a file-backed store's
    path is opened again on the writer thread (its own connection), while an in-memory store
    (the fallback of ``open_store``) is shared — there is no file for a second connection —
    and its lock serialises the two threads.

    ``on_error(message)`` receives one sentence per failure (the same failure repeated, such
    as a full disk at every flush, is reported once until a write succeeds again); it runs on
    the writer thread — except for a call made after :meth:`close`, which is reported on the
    caller's thread since the writer is gone. Without ``on_error``, errors are logged. Either
    way the last 100 are kept in ``errors``.

    ``clock`` is what the flush timer reads (seconds; :func:`time.monotonic`): appended text
    is due ``flush_interval`` after it by this clock, a refused write is tried again
    :data:`RETRY_FULL_S` after it. The writer waits for that in real time (a queue wait of at
    most the time the clock leaves, then it looks again), so a test that hands in a clock it
    moves decides when text is due, and the writer writes it within one such wait.
    """

    def __init__(
        self,
        target: Path | str | ConversationStore,
        *,
        on_error: Callable[[str], None] | None = None,
        flush_interval: float = FLUSH_INTERVAL_S,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Start the writer thread. Runs on the caller's thread and returns at once: the
        database is opened on the writer thread (a failure there goes to ``on_error``)."""
        self._target = target
        self._on_error = on_error
        self._flush_interval = flush_interval
        self._clock = clock
        self._busy_timeout_s = busy_timeout_s
        self._queue: queue.SimpleQueue[_Op] = queue.SimpleQueue()
        self._tickets = itertools.count(1)
        self._closed = False
        self.errors: collections.deque[str] = collections.deque(maxlen=_KEPT_ERRORS)
        # Writer-thread state: touched only by _run and what it calls.
        self._store: ConversationStore | None = None
        self._ids: dict[MessageTicket, int | None] = {}
        self._pending: dict[MessageRef, list[str]] = {}
        # An answer's end (status and final text) that a full disk or a lock refused: kept
        # and retried with the text, or a complete answer would stay "streaming" forever
        # and be marked interrupted at the next start.
        self._finishes: dict[int, _Finish] = {}
        self._deadline: float | None = None
        self._failed = False
        self._last_error: str | None = None
        self._thread = own_thread(self._run, name="tkchat-store-writer")
        self._thread.start()

    # -- the caller's side: each method only enqueues -------------------------------------------

    def add_message(
        self,
        conversation_id: int,
        role: Role,
        content: str,
        on_saved: Callable[[int], None] | None = None,
        *,
        status: Status = "complete",
    ) -> MessageTicket:
        """Queue a new message; return a ticket to ``append``/``finish`` it right away.
        ``on_saved(message_id)`` runs on the WRITER thread once it is committed (the UI must
        hop back to its own thread). Non-blocking; any thread."""
        # A wrong role is the caller's bug: say so here, not later on another thread.
        _check(role, ROLES, "role")
        _check(status, STATUSES, "status")
        ticket = MessageTicket(next(self._tickets))
        self._put(_Add(ticket, conversation_id, role, content, status, on_saved))
        return ticket

    def new_variant(self, conversation_id: int) -> MessageTicket:
        """Queue a regenerate: the conversation's last answer gets a new, empty version,
        shown from then on (:meth:`ConversationStore.new_variant`); the ticket streams into
        it as into a new message. Non-blocking; any thread."""
        ticket = MessageTicket(next(self._tickets))
        self._put(_Add(ticket, conversation_id, "assistant", "", "streaming", None, True))
        return ticket

    def choose_variant(self, message: MessageRef, slot: int) -> None:
        """Queue showing version ``slot`` of a message (:meth:`ConversationStore.choose_variant`);
        ``message`` may be a ticket not saved yet. Non-blocking; any thread."""

        def choose(store: ConversationStore) -> None:  # the writer thread
            message_id = self._resolve(message)
            if message_id is not None:
                store.choose_variant(message_id, slot)

        self._put(_Submit(choose, None))

    def save_figures(self, message: MessageRef, figures: AnswerFigures) -> None:
        """Queue an answer's figures, for the version it shows (:meth:`ConversationStore.
        set_figures`); queued after its :meth:`finish`, they are written after it. Refused
        here (ValueError) if a value is not one the store keeps. Non-blocking; any thread."""
        try:
            figures.check()
        except StoreError as exc:
            raise ValueError(str(exc)) from exc

        def save(store: ConversationStore) -> None:  # the writer thread
            message_id = self._resolve(message)
            if message_id is not None:
                store.set_figures(message_id, figures)

        self._put(_Submit(save, None))

    def append(self, message: MessageRef, text: str) -> None:
        """Queue text to add to the end of a (streaming) message. Coalesced: written at most
        every ``flush_interval`` seconds. Non-blocking; any thread."""
        if not isinstance(text, str):
            raise TypeError(f"append() needs text, not {type(text).__name__}")
        if text:
            self._put(_Append(message, text))

    def finish(self, message: MessageRef, status: Status, *, content: str | None = None) -> None:
        """Queue the end of an answer: its pending text is written, then its status (and, if
        given, its whole final ``content``, which replaces what was streamed — the window's
        own copy is authoritative). Non-blocking; any thread."""
        _check(status, STATUSES, "status")
        self._put(_Finish(message, status, content))

    def submit(
        self,
        operation: Callable[[ConversationStore], T],
        on_done: Callable[[T], None] | None = None,
    ) -> None:
        """Queue any store operation (rename, delete, create, ...) to run on the writer thread,
        in order with the rest; ``on_done(result)`` runs there too. Non-blocking."""
        self._put(_Submit(operation, on_done))

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds until everything queued so far is written. True if
        it was, and nothing failed since the last flush; False on a failure or a timeout.
        Blocks the caller for at most ``timeout``: call it at shutdown, or in tests."""
        if self._closed or not self._thread.is_alive():
            return False
        barrier = _Barrier(stop=False)
        self._queue.put(barrier)
        return barrier.done.wait(timeout) and barrier.ok

    def close(self, timeout: float = 5.0) -> bool:
        """Write what is queued, close the connection and end the thread, waiting at most
        ``timeout`` seconds; True if the thread ended in time with nothing left unwritten
        since the last flush. The thread is a daemon, so a writer stuck on a dead disk never
        keeps the app from exiting. Idempotent. Blocks the caller for at most ``timeout``."""
        if not self._closed:
            self._closed = True
            barrier = _Barrier(stop=True)
            self._queue.put(barrier)
            self._thread.join(timeout)
            return not self._thread.is_alive() and barrier.ok
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def commits(self) -> int:
        """Write transactions committed by the writer's store so far (shared with the window
        when the store is shared). Read from any thread."""
        store = self._store
        return 0 if store is None else store.commits

    def _put(self, op: _Op) -> None:
        if self._closed:
            # A call after close (a late token at shutdown) is a failure to save: say so.
            self._report(f"Not saved: the conversation writer is closed ({type(op).__name__}).")
            return
        self._queue.put(op)

    # -- the writer thread --------------------------------------------------------------------

    def _run(self) -> None:
        """The writer thread's loop: apply operations in order; write coalesced text when its
        deadline passes (checked after every operation, so a flood that never lets the queue
        run empty is still written on time)."""
        self._ensure_store()
        while True:
            op = self._next_op()
            try:
                if self._step(op):
                    return
            except Exception as exc:
                # A bug must not end the thread that saves, nor leave flush() waiting.
                _log.exception("store writer failed")
                self._fail(f"Could not save: unexpected {type(exc).__name__}: {exc}")
                if isinstance(op, _Barrier) and not op.done.is_set():
                    op.done.set()
                    if op.stop:
                        return

    def _step(self, op: _Op | None) -> bool:
        """Handle one operation (None: the batch deadline passed); True means stop."""
        if isinstance(op, _Append):
            # Key by the real id when known, so a ticket and an id for the same message
            # share one list and their text cannot be reordered.
            saved_id = self._ids.get(op.ref) if isinstance(op.ref, MessageTicket) else None
            self._pending.setdefault(saved_id or op.ref, []).append(op.text)
            if self._deadline is None:
                self._deadline = self._clock() + self._flush_interval
        elif op is not None:
            if isinstance(op, _Finish):
                # Its own text goes with its end, in one commit; the final content, when
                # given, replaces it anyway.
                more = self._take_pending(op.ref)
                op.more = more if op.content is None else ""
            self._write_pending()  # keep order: earlier text before any later operation
            if isinstance(op, _Barrier):
                self._pass_barrier(op)
                return op.stop
            self._apply(op)
        if self._deadline is not None and self._clock() >= self._deadline:
            self._write_pending()
        return False

    def _take_pending(self, ref: MessageRef) -> str:
        """Remove and return the coalesced text of one message (kept under its ticket, its
        id, or both: see ``_step``)."""
        target = self._known_id(ref)
        keys = [k for k in self._pending if k == ref or (target and self._known_id(k) == target)]
        return "".join("".join(self._pending.pop(key)) for key in keys)

    def _known_id(self, ref: MessageRef) -> int | None:
        return self._ids.get(ref) if isinstance(ref, MessageTicket) else ref

    def _next_op(self) -> _Op | None:
        timeout = None if self._deadline is None else max(0.0, self._deadline - self._clock())
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def _pass_barrier(self, barrier: _Barrier) -> None:
        barrier.ok = not self._failed and not self._pending and not self._finishes
        self._failed = False
        if barrier.stop:
            self._close_store()
        barrier.done.set()

    def _apply(self, op: _Add | _Finish | _Submit) -> None:
        store = self._ensure_store()
        if store is None:
            if isinstance(op, _Add):
                self._ids[op.ticket] = None
            return
        try:
            if isinstance(op, _Add):
                self._add(store, op)
            elif isinstance(op, _Finish):
                self._finish(store, op)
            else:
                result = op.operation(store)
                self._call(op.on_done, result)
        except StoreError as exc:
            self._fail(str(exc))
        except Exception as exc:
            # A bug in a submitted operation: reported, and the next operation still runs.
            _log.exception("store writer operation failed")
            self._fail(f"Could not save: unexpected {type(exc).__name__}: {exc}")
        else:
            self._succeeded()

    def _add(self, store: ConversationStore, op: _Add) -> None:
        self._ids[op.ticket] = None  # if the insert fails, later appends know it never will
        if op.variant:
            message_id = store.new_variant(op.conversation_id)
        else:
            message_id = store.add_message(op.conversation_id, op.role, op.content, op.status)
        self._ids[op.ticket] = message_id
        self._call(op.on_saved, message_id)

    def _finish(self, store: ConversationStore, op: _Finish) -> None:
        message_id = self._resolve(op.ref)
        if message_id is None:
            return
        try:
            ensure_room(store, op.content or op.more, ending=True)
            store.update_message(message_id, content=op.content, status=op.status, more=op.more)
        except StoreError as exc:
            if exc.kind in RETRIED:
                self._finishes[message_id] = op
                self._retry_later(store)
            raise
        store.checkpoint()  # the answer is whole: the log need not keep it twice

    def _write_finishes(self, store: ConversationStore) -> bool:
        """Retry the answer ends a full disk refused; False if one still fails."""
        if not self._finishes:
            return True
        for message_id, op in list(self._finishes.items()):
            try:
                ensure_room(store, op.content or op.more, ending=True)
                store.update_message(message_id, content=op.content, status=op.status, more=op.more)
            except StoreError as exc:
                self._fail(str(exc))
                if exc.kind in RETRIED:
                    return False
            del self._finishes[message_id]  # written, or never will be (say, deleted since)
        store.checkpoint()
        return True

    def _retry_later(self, store: ConversationStore) -> None:
        """A write was refused (a full disk, a lock): give back the log's space (a failed
        write may have grown it) and try again in :data:`RETRY_FULL_S`."""
        store.checkpoint()
        self._deadline = self._clock() + max(self._flush_interval, RETRY_FULL_S)

    def _write_pending(self) -> None:
        """Write all coalesced text in one transaction. On failure the text stays pending and
        is retried at the next deadline (a full disk may get space again); it is reported
        once."""
        if not self._pending and not self._finishes:
            # Nothing left to write (an answer's end took its own text): no deadline either,
            # or _next_op would wait 0 s and come back here, spinning with the GIL held.
            self._deadline = None
            return
        store = self._ensure_store()
        parts: dict[int, str] = {}
        for ref, texts in self._pending.items():
            message_id = self._resolve(ref)
            if message_id is not None:
                parts[message_id] = parts.get(message_id, "") + "".join(texts)
        if store is not None:
            try:
                if parts:
                    ensure_room(store, "".join(parts.values()))
                    store.append_text(parts)
                    store.checkpoint(grown_only=True)  # see ConversationStore.checkpoint
            except StoreError as exc:
                self._fail(str(exc))
                self._retry_later(store)
                return
            if not self._write_finishes(store):
                self._pending.clear()  # the text is in; only the ends wait
                self._retry_later(store)
                return
            self._succeeded()
        if store is not None or not parts:
            self._pending.clear()
            self._deadline = None
        else:
            self._deadline = self._clock() + self._flush_interval

    def _resolve(self, ref: MessageRef) -> int | None:
        if not isinstance(ref, MessageTicket):
            return ref
        message_id = self._ids.get(ref)
        if message_id is None:
            self._fail("Part of an answer was not saved: its message could not be stored.")
        return message_id

    def _ensure_store(self) -> ConversationStore | None:
        """The writer's store, opened on first use (and again after a failed open: a lock
        held by another program may have been released since)."""
        if self._store is not None:
            return self._store
        try:
            self._store = self._open_store()
        except StoreError as exc:
            self._fail(str(exc))
        return self._store

    def _open_store(self) -> ConversationStore:
        target = self._target
        if isinstance(target, ConversationStore):
            if target.path is None:
                return target  # in memory: share it (see the class docstring)
            return ConversationStore(
                target.path,
                busy_timeout_s=self._busy_timeout_s,
                fts=target.fts,
                check_integrity=False,
            )
        # The window's open_store already checked the file; do not read it all again.
        return ConversationStore(
            Path(target), busy_timeout_s=self._busy_timeout_s, check_integrity=False
        )

    def _close_store(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.checkpoint()  # leave no log behind: the disk is as full as what is saved
        if store is not None and store is not self._target:
            store.close()

    # -- reporting ------------------------------------------------------------------------------

    def _call(self, callback: Callable[[Any], None] | None, value: Any) -> None:
        """Run a caller's callback; its exception must not kill the writer thread."""
        if callback is None:
            return
        try:
            callback(value)
        except Exception as exc:  # the caller's bug: reported, not fatal to the writer
            self._fail(f"A storage callback failed: {type(exc).__name__}: {exc}")

    def _fail(self, message: str) -> None:
        self._failed = True
        self._report(message)

    def _succeeded(self) -> None:
        self._last_error = None

    def _report(self, message: str) -> None:
        self.errors.append(message)
        if message == self._last_error:
            return  # the same failure again (a full disk at every flush): said once already
        self._last_error = message
        if self._on_error is None:
            _log.error("%s", message)
            return
        try:
            self._on_error(message)
        except Exception:  # a broken error handler must not stop saving
            _log.exception("on_error failed for: %s", message)


__all__ = ["FLUSH_INTERVAL_S", "RETRY_FULL_S", "MessageRef", "MessageTicket", "StoreWriter"]
