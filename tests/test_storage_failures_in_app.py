"""Storage failures in the real window: a locked database, a read-only folder or file, and a
disk that is full at start, fills up while an answer streams, or is full when a question is
sent. Each time the window says why, the chat keeps working (question on screen, whole answer,
a ``done``), and what was already on disk is neither emptied nor replaced.

The store-level behaviour is in tests/test_store.py; this file checks the same failures end to
end through ``ChatApp(history=True)``. Faults are injected the way test_store does it, through
the store's connection seam (a test cannot fill a real disk, and root ignores chmod); where the
machine allows it, a real read-only folder (``chattr +i``, which binds root too) and a real
folder that cannot be created are used as well.

What "the window shows" means here: the status line (and the red banner, if shown) as sampled
between two turns of the event loop, i.e. what a user could actually have seen. A text set and
replaced within one callback never reaches the screen and does not count.

No timing assertions: the answer is a :class:`ScriptedBackend` whose loading and streaming
wait at gates the test opens, and every wait is a bounded ``pump_until``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import shutil
import sqlite3
import subprocess
import threading
import tkinter as tk
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import Faults, pump_until, saved_content
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.backend import GenerationRequest, LoadWatch, TokenStream
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.store import ConversationStore, database_path, open_store
from tkchat.store import writer as writer_module
from tkchat.ui.chats import history as history_module
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.window.chat_window import ChatApp

pytestmark = pytest.mark.gui

FULL = "database or disk is full"  # SQLite's own text for SQLITE_FULL
READ_ONLY = "attempt to write a readonly database"  # SQLITE_READONLY
CANNOT_OPEN = "unable to open database file"  # SQLITE_CANTOPEN
SCRIPT_PHRASE = "never block the thread that draws"  # in SCRIPT, shown as plain text
WAIT_S = 30.0  # generous: a hang becomes a failure, a slow machine does not


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own history folder (not created yet: the app creates it)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer tries a write the full disk refused again after RETRY_FULL_S (1 s): what
    these tests check is that it does, and what it writes then, not how long it waits."""
    monkeypatch.setattr(writer_module, "RETRY_FULL_S", 0.05)


@dataclass
class GatedScript(ScriptedBackend):
    """The scripted answer, as fast as possible, except that loading waits for ``loaded``
    (unless ``hold_load`` is False) and streaming waits before each piece number in ``pauses``
    until the test sets that event. A wait ends at once on Stop or at shutdown."""

    rate: float = 0.0
    hold_load: bool = False
    loaded: threading.Event = field(default_factory=threading.Event)
    pauses: dict[int, threading.Event] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.hold_load:
            self.loaded.set()

    def load(self, watch: LoadWatch | None = None) -> None:
        self.loaded.wait(WAIT_S * 2)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        pieces = super().stream(request, cancel)
        for index in itertools.count():
            gate = self.pauses.get(index)
            while gate is not None and not gate.wait(0.02):
                if cancel.is_set():
                    return "cancelled"
            try:
                piece = next(pieces)
            except StopIteration as end:
                return end.value  # type: ignore[no-any-return]
            yield piece
        raise AssertionError("unreachable")

    def open_all(self) -> None:
        self.loaded.set()
        for gate in self.pauses.values():
            gate.set()


@pytest.fixture
def backends(make_app: Callable[..., ChatApp]) -> Iterator[list[GatedScript]]:
    """Every gate is opened before the apps close (set up after ``make_app``, so torn down
    before it), so a failing test never leaves a worker waiting at a gate."""
    made: list[GatedScript] = []
    yield made
    for backend in made:
        backend.open_all()


@pytest.fixture
def gated(backends: list[GatedScript]) -> Callable[..., GatedScript]:
    def build(**kwargs: object) -> GatedScript:
        backend = GatedScript(**kwargs)  # type: ignore[arg-type]
        backends.append(backend)
        return backend

    return build


class Screen:
    """What the user could see of the window's messages: the status line, the red banner and
    the storage banner when they are shown, sampled after every turn of the event loop."""

    def __init__(self, root: tk.Misc, app: ChatApp) -> None:
        self.root = root
        self.app = app
        self.seen: list[str] = []  # each text shown, in order (consecutive repeats once)

    def now(self) -> str:
        texts = [self.app.status.get()]
        if self.app.teaching.warning.winfo_manager():
            texts.append(str(self.app.teaching.warning.cget("text")))
        if self.app.storage_banner.shown:
            texts.append(self.app.storage_banner.text)
        return "\n".join(texts)

    def look(self) -> str:
        text = self.now()
        if not self.seen or self.seen[-1] != text:
            self.seen.append(text)
        return text

    def until(self, ready: Callable[[], object], what: str, timeout: float = WAIT_S) -> None:
        def check() -> bool:
            self.look()
            return bool(ready())

        pump_until(self.root, check, timeout=timeout, what=what)

    def shown(self, *words: str) -> list[str]:
        """The distinct messages seen so far (a status line, a banner's text) that contain all
        of ``words`` (case-insensitive). A warning in the status line and the same warning
        in the banner that stays are one message."""
        found: list[str] = []
        for text in self.seen:
            for line in text.split("\n"):
                message = line.removeprefix("⚠" + NO_BREAK)
                if all(w.lower() in message.lower() for w in words) and message not in found:
                    found.append(message)
        return found


def seed_history() -> None:
    """Yesterday's conversation, written by an earlier session."""
    with ConversationStore(database_path()) as store:
        conversation = store.create("kept from yesterday")
        store.add_message(conversation.id, "user", "what is a mutex?")
        store.add_message(conversation.id, "assistant", "A lock only one thread holds.")


def rows() -> list[tuple[object, ...]]:
    """Every conversation and message row, read with a separate plain connection (proves
    what is committed to the file, whatever the app's own connections think)."""
    conn = sqlite3.connect(database_path())
    try:
        found = conn.execute(
            "SELECT 'conversation', id, title, deleted_at, system_prompt "
            "FROM conversations ORDER BY id"
        ).fetchall()
        found += conn.execute(
            "SELECT 'message', id, conversation_id, position, role, "
            + saved_content(conn)
            + ", status FROM messages ORDER BY id"
        ).fetchall()
        return found
    finally:
        conn.close()


def messages_after(before: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """(role, content, status) of the messages stored since ``before`` was taken."""
    known = {row[1] for row in before if row[0] == "message"}
    return [(r[4], r[5], r[6]) for r in rows() if r[0] == "message" and r[1] not in known]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def history_ready(app: ChatApp) -> bool:
    return app.archive is not None and app.archive.ready and not app.flow.showing_conversation


def ask(screen: Screen, question: str) -> None:
    """Send ``question`` and check the whole answer arrives and is shown."""
    app = screen.app
    count = len(app.flow.answering.finished)
    assert app.flow.send(question), screen.now()
    screen.until(lambda: len(app.flow.answering.finished) > count, what="the answer's final event")
    screen.until(lambda: not app.transcript.painter.busy, what="the answer rendered")
    check_answered(app, question)


def check_answered(app: ChatApp, question: str) -> None:
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop", final
    assert app.transcript.answers[-1].text == SCRIPT  # all of it, nothing cut off
    shown = app.transcript.plain_text()
    assert question in shown and SCRIPT_PHRASE in shown


def start_in_memory(
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
    *cause: str,
) -> Screen:
    """Open the window on a history that cannot be written; check the warning it shows
    (before the model is loaded, so nothing else has used the status line yet), then load
    the model and check a whole question and answer still work, in memory."""
    backend = gated(hold_load=True)
    app = make_app(backend, wait=False, history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="the history (or its fallback)")
    shown = screen.look()
    assert "not be saved" in shown, shown
    for word in cause:
        assert word in shown, shown
    assert app.archive is not None and app.archive.store is not None
    assert app.archive.store.path is None  # an in-memory session, as the warning says

    backend.loaded.set()
    screen.until(lambda: app.flow.model_ready, what="the model")
    ask(screen, "does it still answer?")
    # The session keeps its conversation in memory: it is listed like a saved one.
    assert [c.title for c in app.archive.conversations()] == ["does it still answer?"]
    return screen


@pytest.fixture
def screen_for(root: tk.Tk) -> Callable[[ChatApp], Screen]:
    return lambda app: Screen(root, app)


# --- a database locked by another program -----------------------------------------------------


def hold_lock(path: Path, how: str) -> sqlite3.Connection:
    """Another program's connection holding the database: ``writer`` has an open EXCLUSIVE
    transaction (in WAL mode readers may still read, nobody may write); ``exclusive-mode``
    also uses ``locking_mode=EXCLUSIVE``, so nobody may even read."""
    holder = sqlite3.connect(path, isolation_level=None)
    if how == "exclusive-mode":
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT COUNT(*) FROM conversations").fetchall()
    return holder


@pytest.mark.parametrize("how", ["writer", "exclusive-mode"])
def test_locked_database_gives_an_in_memory_session_and_keeps_the_file(
    data_dir: Path,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
    how: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The window opens the history with a busy timeout that is only waited out here: the
    # lock is never released while it waits. A short one gives the same failure at once.
    short = functools.partial(open_store, busy_timeout_s=0.05)
    monkeypatch.setattr(history_module, "open_store", short)
    seed_history()
    before, before_bytes = rows(), digest(database_path())
    holder = hold_lock(database_path(), how)
    try:
        screen = start_in_memory(screen_for, make_app, gated, "in use by another program")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Released: yesterday's conversation is all there, and nothing of this session was
    # written into (or over) the file.
    assert rows() == before
    assert digest(database_path()) == before_bytes
    screen.app.close()
    assert rows() == before and digest(database_path()) == before_bytes
    with ConversationStore(database_path()) as reopened:  # and it opens normally again
        assert [c.title for c in reopened.list_conversations()] == ["kept from yesterday"]


# --- a read-only database or folder -----------------------------------------------------------


def start_read_only(
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> Screen:
    """Open the window on yesterday's history, which tkchat may read but not write: it is
    shown (listed, and reopened), one sentence says it is read-only, and a question still
    gets its whole answer, with no second sentence about saving."""
    backend = gated(hold_load=True)
    app = make_app(backend, wait=False, history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="yesterday's history, read-only")
    shown = screen.look()
    assert "read-only" in shown and "nothing new will be saved" in shown, shown
    assert app.archive is not None and app.archive.store is not None
    assert app.archive.store.read_only and app.archive.store.path is not None
    assert [c.title for c in app.archive.conversations()] == ["kept from yesterday"]
    assert "A lock only one thread holds." in app.transcript.plain_text()  # reopened
    backend.loaded.set()
    screen.until(lambda: app.flow.model_ready, what="the model")
    ask(screen, "does it still answer?")
    assert len(screen.shown("read-only")) == 1, screen.seen  # one sentence, said once
    assert screen.shown("could not") == [], screen.seen
    return screen


def test_read_only_database_is_shown_read_only_and_kept(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    seed_history()
    before, before_bytes = rows(), digest(database_path())
    faults.write_error = READ_ONLY
    screen = start_read_only(screen_for, make_app, gated)
    screen.app.close()
    faults.write_error = None
    assert rows() == before
    assert digest(database_path()) == before_bytes


def test_database_that_cannot_be_opened_gives_an_in_memory_session_and_keeps_the_file(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    seed_history()
    before, before_bytes = rows(), digest(database_path())
    faults.connect_error = CANNOT_OPEN
    screen = start_in_memory(screen_for, make_app, gated, "may not write", CANNOT_OPEN)
    screen.app.close()
    faults.connect_error = None
    assert rows() == before
    assert digest(database_path()) == before_bytes


def _chattr(flag: str, *paths: Path) -> bool:
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    done = subprocess.run([chattr, flag, *map(str, paths)], capture_output=True, check=False)
    return done.returncode == 0


@dataclass
class Frozen:
    """A history in a folder nobody may write to, and what it held before."""

    folder: Path
    path: Path
    before: list[tuple[object, ...]]
    before_bytes: str

    def thaw(self) -> None:
        _chattr("-i", self.path, self.folder)


@pytest.fixture
def immutable_history(data_dir: Path) -> Iterator[Frozen]:
    """A real read-only folder holding a history: ``chattr +i`` on the folder and the file
    (unlike chmod, it binds root too). Skipped where the file system or rights do not allow
    it; the injected read-only test covers the same path there."""
    seed_history()
    frozen = Frozen(data_dir, database_path(), rows(), digest(database_path()))
    if not _chattr("+i", frozen.path, data_dir):
        frozen.thaw()
        pytest.skip("chattr +i is not available here (needs ext4-like fs and CAP_LINUX_IMMUTABLE)")
    try:
        probe = data_dir / "probe"
        try:
            probe.write_text("x")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("chattr +i did not make the folder read-only here")
        yield frozen
    finally:
        frozen.thaw()


def test_real_read_only_folder_is_shown_read_only_and_kept(
    data_dir: Path,
    immutable_history: Frozen,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    frozen = immutable_history
    screen = start_read_only(screen_for, make_app, gated)
    screen.app.close()
    assert sorted(p.name for p in data_dir.iterdir()) == ["conversations.sqlite3"]
    assert digest(frozen.path) == frozen.before_bytes
    frozen.thaw()
    assert rows() == frozen.before


def test_folder_that_cannot_be_created_gives_an_in_memory_session(
    data_dir: Path,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    # A real failure, even for root: a file where the data folder should be.
    data_dir.write_text("someone's notes, not a folder")
    screen = start_in_memory(screen_for, make_app, gated, "may not write", str(data_dir))
    screen.app.close()
    assert data_dir.read_text() == "someone's notes, not a folder"


# --- a full disk ------------------------------------------------------------------------------


def test_full_disk_at_start_gives_an_in_memory_session_and_keeps_the_file(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    seed_history()
    before, before_bytes = rows(), digest(database_path())
    faults.write_error = FULL
    screen = start_in_memory(screen_for, make_app, gated, "is full")
    screen.app.close()
    faults.write_error = None  # space is back: the history is exactly as it was
    assert rows() == before
    assert digest(database_path()) == before_bytes
    store, warning = open_store()
    with store:
        assert warning is None and store.path is not None  # on disk, not in memory
        assert [c.title for c in store.list_conversations()] == ["kept from yesterday"]


@dataclass
class MidAnswer:
    """An answer that was streaming when the disk filled up (see ``fill_disk_mid_answer``)."""

    screen: Screen
    backend: GatedScript
    before: list[tuple[object, ...]]  # the rows on disk before the question
    question: str
    saved_prefix: str  # the part of the answer on disk when the disk filled up


FIRST_PAUSE, SECOND_PAUSE = 10, 25  # piece numbers (SCRIPT has well over 25)


def fill_disk_mid_answer(
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> MidAnswer:
    """Reopen yesterday's conversation, ask, and let the first part of the answer reach the
    disk; then fill the disk and stream on until the window says so. The answer is left
    paused at ``SECOND_PAUSE``, the disk still full."""
    seed_history()
    before = rows()
    backend = gated(pauses={FIRST_PAUSE: threading.Event(), SECOND_PAUSE: threading.Event()})
    app = make_app(backend, history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="yesterday's conversation reopened")
    question = "explain the event loop"
    assert app.flow.send(question)
    view = app.flow.answering.answer
    assert view is not None

    def saved_answer() -> str | None:
        found = [m for m in messages_after(before) if m[0] == "assistant"]
        return str(found[0][1]) if found else None

    screen.until(
        lambda: view.text and saved_answer() == view.text,
        what="the first part of the answer written to disk",
    )
    saved_prefix = view.text
    assert messages_after(before) == [
        ("user", question, "complete"),
        ("assistant", saved_prefix, "streaming"),
    ]

    faults.write_error = FULL
    backend.pauses[FIRST_PAUSE].set()
    screen.until(lambda: screen.shown("disk is full"), what="a full-disk warning")
    assert app.flow.answering.answer is view  # still streaming (held at the second pause)
    assert len(view.text) > len(saved_prefix)  # the answer went on on screen...
    assert saved_answer() == saved_prefix  # ...and the failed write left the disk as it was
    return MidAnswer(screen, backend, before, question, saved_prefix)


def test_disk_fills_while_an_answer_streams_and_the_text_is_saved_when_space_returns(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    mid = fill_disk_mid_answer(faults, screen_for, make_app, gated)
    screen, app = mid.screen, mid.screen.app
    faults.write_error = None  # space was freed before the answer ended
    mid.backend.pauses[SECOND_PAUSE].set()
    screen.until(lambda: app.flow.answering.finished, what="the answer's final event")
    screen.until(lambda: not app.transcript.painter.busy, what="the answer rendered")
    check_answered(app, mid.question)
    # The writer kept the text it could not write and wrote it once it could (its promise):
    # the whole answer, complete, after the question, in yesterday's conversation.
    screen.until(
        lambda: (
            messages_after(mid.before)
            == [("user", mid.question, "complete"), ("assistant", SCRIPT, "complete")]
        ),
        what="the whole answer saved once space returned",
    )
    assert [r for r in rows() if r in mid.before] == mid.before  # yesterday's rows intact
    # One clear warning that says why, not one per failed flush.
    warned = screen.shown("disk is full")
    assert len(warned) == 1, screen.seen
    assert "saved earlier are intact" in warned[0]


def test_disk_still_full_when_the_answer_ends_the_text_is_saved_when_space_returns(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    mid = fill_disk_mid_answer(faults, screen_for, make_app, gated)
    screen, app = mid.screen, mid.screen.app
    mid.backend.pauses[SECOND_PAUSE].set()  # the answer ends while the disk is still full
    screen.until(lambda: app.flow.answering.finished, what="the answer's final event")
    screen.until(lambda: not app.transcript.painter.busy, what="the answer rendered")
    check_answered(app, mid.question)
    assert [m[1] for m in messages_after(mid.before)] == [mid.question, mid.saved_prefix]

    faults.write_error = None  # space was freed after the answer ended
    screen.until(
        lambda: [m[1] for m in messages_after(mid.before)] == [mid.question, SCRIPT],
        what="the kept text written once space returned",
    )
    assert [r for r in rows() if r in mid.before] == mid.before  # yesterday's rows intact
    # It was said, with its cause: when the text could not be written, and (a different
    # sentence, so said again) when the answer's end could not be written either.
    warnings = screen.shown("could not")
    assert warnings and all("disk is full" in text for text in warnings), screen.seen


def test_disk_still_full_when_the_answer_ends_the_answer_is_saved_as_complete(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    mid = fill_disk_mid_answer(faults, screen_for, make_app, gated)
    screen, app = mid.screen, mid.screen.app
    mid.backend.pauses[SECOND_PAUSE].set()
    screen.until(lambda: app.flow.answering.finished, what="the answer's final event")
    check_answered(app, mid.question)
    faults.write_error = None
    screen.until(
        lambda: [m[1] for m in messages_after(mid.before)] == [mid.question, SCRIPT],
        what="the kept text written once space returned",
    )
    app.close()  # flushes the writer: anything it still meant to write is written now
    assert messages_after(mid.before) == [
        ("user", mid.question, "complete"),
        ("assistant", SCRIPT, "complete"),
    ]


# --- a question sent while the disk is full -----------------------------------------------------


def test_follow_up_question_while_the_disk_is_full_warns_and_still_answers(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    seed_history()
    before = rows()
    gate = threading.Event()
    backend = gated(pauses={0: gate})
    app = make_app(backend, history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="yesterday's conversation reopened")
    assert app.archive is not None and app.archive.conversation_id is not None

    faults.write_error = FULL
    question = "and a semaphore?"
    assert app.flow.send(question)
    assert question in app.transcript.plain_text()  # the question is on screen at once
    screen.until(lambda: screen.shown("disk is full"), what="a full-disk warning")
    gate.set()
    screen.until(lambda: app.flow.answering.finished, what="the answer's final event")
    screen.until(lambda: not app.transcript.painter.busy, what="the answer rendered")
    check_answered(app, question)
    assert rows() == before  # nothing half-saved: no question, no orphan answer row

    faults.write_error = None  # space is back: the next question is saved as usual
    ask(screen, "thanks")
    assert messages_after(before) == [
        ("user", "thanks", "complete"),
        ("assistant", SCRIPT, "complete"),
    ]


def test_first_question_of_a_new_chat_while_the_disk_is_full_still_answers(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    seed_history()
    before = rows()
    app = make_app(gated(), history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="yesterday's conversation reopened")
    app.flow.new_chat()
    faults.write_error = FULL
    ask(screen, "a new topic")  # on screen, whole answer, done
    assert rows() == before  # the failed create left nothing behind
    faults.write_error = None
    ask(screen, "now it can be saved")
    titles = [c.title for c in app.archive.conversations()] if app.archive else []
    assert titles == ["now it can be saved", "kept from yesterday"]


def test_first_question_of_a_new_chat_while_the_disk_is_full_is_reported(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    gate = threading.Event()
    app = make_app(gated(pauses={0: gate}), history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="the history")
    faults.write_error = FULL
    assert app.flow.send("a question that cannot be saved")
    screen.until(lambda: screen.shown("disk is full"), what="a full-disk warning", timeout=5)


# --- the warning must not vanish while the session is still unsaved ----------------------------


def test_the_not_saved_warning_stays_on_screen_while_the_session_is_unsaved(
    data_dir: Path,
    faults: Faults,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    faults.write_error = FULL
    backend = gated(hold_load=True)
    app = make_app(backend, wait=False, history=True)
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="the history's fallback")
    assert "not be saved" in screen.look()
    backend.loaded.set()
    screen.until(lambda: app.flow.model_ready, what="the model")
    ask(screen, "is this saved?")
    assert "not be saved" in screen.look(), screen.seen


# --- a real 2 MB disk (a tmpfs), filled while an answer streams -------------------------------

SMALL_DISK = "size=2m"
LONG_ANSWER_TOKENS = 65_000  # SCRIPT again and again: over 300,000 characters
RESERVE = 160 * 1024  # free bytes left beside the filler: the answer fills them mid-way
FIRST_PART_TOKENS = 2_000  # about 12 kB of the answer: it fits in RESERVE


@dataclass
class SmallDisk:
    """A 2 MB file system holding the history, and a filler file that takes most of it."""

    folder: Path
    filler: Path

    def free(self) -> int:
        stat = os.statvfs(self.folder)
        return stat.f_bavail * stat.f_frsize

    def fill(self, leave: int) -> None:
        """Take all the free space but ``leave`` bytes."""
        with self.filler.open("ab") as out:
            out.write(b"\0" * max(0, self.free() - leave))

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    """The history on a real 2 MB tmpfs. Skipped where mounting is not allowed (not root,
    or a container without the right); the injected full-disk tests above cover it then."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mount = shutil.which("mount")
    done = subprocess.run(
        [mount or "mount", "-t", "tmpfs", "-o", SMALL_DISK, "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mount is None or done.returncode != 0:
        pytest.skip(f"cannot mount a 2 MB tmpfs here: {done.stderr.decode(errors='replace')}")
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(folder / "data"))
    try:
        yield SmallDisk(folder, folder / "filler")
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def long_answer() -> str:
    """What the scripted backend answers with LONG_ANSWER_TOKENS pieces."""
    backend = ScriptedBackend(rate=0, tokens=LONG_ANSWER_TOKENS)
    return b"".join(backend.pieces(LONG_ANSWER_TOKENS)).decode("utf-8")


def log_files(folder: Path) -> dict[str, int]:
    """The history's write-ahead log (or rollback journal), by name and size."""
    return {
        p.name: p.stat().st_size for p in folder.iterdir() if p.name.endswith(("-wal", "-journal"))
    }


def test_a_2_mb_disk_filled_mid_answer_keeps_all_of_it_once_space_returns(
    small_disk: SmallDisk,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    """The review's case: on a 2 MB disk that filled mid-answer and then had 1.8 MB freed,
    the log grew again until the disk was full: 190,056 of 313,123 characters kept, the
    answer left streaming, the disk still full after exit. Now: what was shown stays, one
    sentence says it could not be saved, all of it is saved once space returns, and the
    disk is left no fuller than the answer itself makes it."""
    text = long_answer()
    assert len(text) > 300_000
    hold = threading.Event()
    backend = gated(tokens=LONG_ANSWER_TOKENS, pauses={LONG_ANSWER_TOKENS - 10: hold})
    app = make_app(backend, history=True, sampling=Sampling(max_tokens=0))
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="the history on the small disk")
    data = small_disk.folder / "data"
    database_before = database_path().stat().st_size
    free_before = small_disk.free()
    small_disk.fill(leave=RESERVE)
    assert app.flow.send("tell me everything")
    screen.until(lambda: screen.shown("disk is full"), what="a full-disk warning", timeout=60)
    view = app.flow.answering.answer
    assert view is not None
    screen.until(lambda: len(view.text) > len(text) // 2, what="more of the answer")
    small_disk.empty()  # space returns while the answer still streams
    hold.set()
    screen.until(lambda: app.flow.answering.finished, what="the answer's end", timeout=120)
    assert app.transcript.answers[-1].text == text  # on screen: all of it
    screen.until(
        lambda: [m[1:] for m in messages_after([]) if m[0] == "assistant"] == [(text, "complete")],
        what="the whole answer saved once space returned",
        timeout=60,
    )
    assert len(screen.shown("disk is full")) == 1, screen.seen  # one sentence, said once
    app.close()
    assert all(size == 0 for size in log_files(data).values()), log_files(data)
    grown = database_path().stat().st_size - database_before
    assert small_disk.free() >= free_before - grown - 16 * 1024  # tmpfs counts 4 kB pages
    store, warning = open_store()
    with store:
        assert warning is None and store.mark_interrupted() == 0


def test_a_2_mb_disk_still_full_at_exit_is_left_no_fuller_and_the_next_start_recovers(
    small_disk: SmallDisk,
    screen_for: Callable[[ChatApp], Screen],
    make_app: Callable[..., ChatApp],
    gated: Callable[..., GatedScript],
) -> None:
    """The disk stays full to the end: the answer is all on screen, the log is emptied on
    the way out (it held 1,944 kB of a 2 MB disk), and once space is back the next start
    opens the history, with the part of the answer that was saved."""
    text = long_answer()
    first_part = threading.Event()  # the answer waits there until its start is on disk
    backend = gated(tokens=LONG_ANSWER_TOKENS, pauses={FIRST_PART_TOKENS: first_part})
    app = make_app(backend, history=True, sampling=Sampling(max_tokens=0))
    screen = screen_for(app)
    screen.until(lambda: history_ready(app), what="the history on the small disk")
    data = small_disk.folder / "data"
    database_before = database_path().stat().st_size
    small_disk.fill(leave=RESERVE)
    free_before = small_disk.free()
    assert app.flow.send("tell me everything")
    screen.until(
        lambda: any(m[0] == "assistant" and m[1] for m in messages_after([])),
        what="the start of the answer saved (it fits the space left)",
    )
    first_part.set()  # and the rest does not
    screen.until(lambda: app.flow.answering.finished, what="the answer's end", timeout=120)
    assert app.transcript.answers[-1].text == text  # what was shown stays on screen
    screen.until(lambda: screen.shown("disk is full"), what="a full-disk warning")
    app.close()  # the disk is still full
    logs = log_files(data)
    assert sum(logs.values()) == 0, logs  # no log left holding the disk
    # All it kept is what it saved: the space taken is the database's growth, no more.
    grown = database_path().stat().st_size - database_before
    assert small_disk.free() >= free_before - grown - 16 * 1024  # tmpfs counts 4 kB pages
    small_disk.empty()
    store, warning = open_store()  # the next start: space is back
    with store:
        assert warning is None and store.path is not None  # on disk, not in memory
        assert store.mark_interrupted() <= 1
        [conversation] = store.list_conversations()
        question, reply = store.messages(conversation.id)
        assert question.content == "tell me everything"
        assert text.startswith(reply.content) and len(reply.content) > 0
        assert reply.status in ("interrupted", "complete")
