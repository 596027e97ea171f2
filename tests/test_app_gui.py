"""The chat window, driven on a real Tk window (Xvfb) with the scripted backend."""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import tkinter as tk
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import hostile_answer, png_bytes, pump_until, saved_content, wait_until
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import LoadWatch
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.scripted import (
    SCRIPT,
    ScriptedBackend,
    TokenGate,
    long_answer,
    scripted_tokens,
)
from tkchat.render.safe_markdown import split_blocks
from tkchat.store.db import ConversationStore
from tkchat.store.files import DATABASE_NAME
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript import markdown_view
from tkchat.ui.transcript.markdown_view import MAX_BLOCK_CHARS

pytestmark = pytest.mark.gui


def finish(root: tk.Tk, app, count: int = 1) -> Done | Error:
    pump_until(root, lambda: len(app.flow.answering.finished) >= count, what="the answer to finish")
    pump_until(root, lambda: not app.transcript.painter.busy, what="markdown to render")
    return app.flow.answering.finished[count - 1]


def xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=True, timeout=20)


def test_window_is_up_before_the_model_loads(root: tk.Tk, make_app) -> None:
    gate = threading.Event()

    class SlowLoading(ScriptedBackend):
        def load(self, watch: LoadWatch | None = None) -> None:
            gate.wait(10)

    app = make_app(SlowLoading(rate=0), wait=False)
    pump_until(root, lambda: bool(root.winfo_viewable()), what="the window on screen")
    assert "Loading" in app.status.get()
    assert not app.flow.send("too early")  # refused, and the status says why
    assert "not ready" in app.status.get()
    gate.set()
    pump_until(root, lambda: app.flow.model_ready, what="model ready")
    assert "Ready" in app.status.get()


@pytest.mark.parametrize("freeze_heap", [True, False])
def test_a_loaded_model_s_objects_are_frozen_where_the_window_asks(
    root: tk.Tk, make_app, freeze_heap: bool
) -> None:
    """What a model's load made is set aside from full collections (tkchat/ui/window/heap.py)
    in a window that asks for it (the command line's); a test's window does not."""
    gate = threading.Event()
    made: list[list[int]] = []

    class Loading(ScriptedBackend):
        def load(self, watch: LoadWatch | None = None) -> None:
            made.extend([i] for i in range(1000))  # containers the collector tracks
            gate.wait(10)

    app = make_app(Loading(rate=0), wait=False, freeze_heap=freeze_heap)
    before = gc.get_freeze_count()
    gate.set()
    try:
        pump_until(root, lambda: app.flow.model_ready, what="model ready")
        frozen = gc.get_freeze_count() - before
        assert (frozen >= len(made)) if freeze_heap else frozen == 0
    finally:
        gc.unfreeze()  # (this test process makes many more windows)


def test_streamed_text_is_exact_with_split_utf8_and_then_rendered(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0, split_utf8=True))
    assert app.flow.send("show me")
    answer = app.flow.answering.answer
    final = finish(root, app)
    assert isinstance(final, Done) and final.reason == "stop"
    assert answer.text == SCRIPT  # every character whole, nothing lost, nothing doubled
    assert answer.rendered
    shown = app.transcript.plain_text()
    expected = ("😀", "🚀", "𝄞", "中文", "def drain(self) -> None:", "Why the window stays")
    for piece in expected:
        assert piece in shown
    assert "```" not in shown and "## Why" not in shown  # rendered, not shown raw
    assert "\ufffd" not in shown


def test_enter_sends_and_shift_enter_adds_a_line_with_real_keys(root: tk.Tk, make_app) -> None:
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    app = make_app(ScriptedBackend(rate=0))
    root.focus_force()
    app.input.focus_set()
    pump_until(root, lambda: root.focus_get() is app.input, what="the box to have the focus")
    xdotool("type", "--delay", "5", "first line")
    xdotool("key", "shift+Return")
    xdotool("type", "--delay", "5", "second")
    pump_until(root, lambda: "second" in app.input.get("1.0", "end"), what="typed text")
    assert app.input.get("1.0", "end-1c") == "first line\nsecond"
    xdotool("key", "Return")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    assert app.input.get("1.0", "end-1c") == ""
    assert "first line\nsecond" in app.transcript.plain_text()


def test_stop_keeps_the_partial_answer_and_nothing_leaks_into_the_next(
    root: tk.Tk, make_app
) -> None:
    gate = TokenGate()
    app = make_app(ScriptedBackend(gate=gate))
    app.flow.send("one")
    first = app.flow.answering.answer
    worker = app.controller.current
    gate.release(10)  # ten tokens, then the answer waits at the gate: it is streaming
    pump_until(root, lambda: first.text == "".join(scripted_tokens()[:10]), what="some text")
    root.focus_force()  # a generated key goes where the X focus is: here, first
    pump_until(root, lambda: root.focus_get() is not None, what="the keyboard focus")
    root.event_generate("<Escape>")  # the Stop key
    pump_until(root, lambda: not worker.is_alive(), what="the worker to exit")
    partial = first.text
    assert partial == "".join(scripted_tokens()[:10]) and gate.passed == 10
    assert worker.exited_at is not None and worker.cancelled_at is not None
    gate.release(10**6)  # the next answer goes through
    app.flow.send("two")
    second = app.flow.answering.answer
    final = finish(root, app)
    assert isinstance(final, Done) and final.reason == "stop"
    assert first.text == partial  # nothing of the stopped generation arrived afterwards
    assert second.text == SCRIPT  # and nothing of it leaked into the new answer
    assert "[stopped]" in app.transcript.plain_text()


def test_sending_while_streaming_waits_until_the_answer_is_stopped(root: tk.Tk, make_app) -> None:
    """Send (the button's command) while an answer streams: the answer goes on, the box keeps
    the draft, Send is greyed; after Stop the same Send goes, and its answer is whole."""
    gate = TokenGate()
    app = make_app(ScriptedBackend(gate=gate))
    app.flow.send("one")
    first = app.flow.answering.answer
    gate.release(5)  # five tokens, then the answer waits at the gate
    pump_until(root, lambda: len(first.text) > 5, what="some text")
    assert app.send_button.instate(["disabled"]) and app.stop_button.instate(["!disabled"])
    app.input.set_draft("two")
    assert app.flow.send() is False
    assert app.flow.answering.answer is first and app.input.draft == "two"
    assert app.status.get() == app.t("app.busy_answering")
    app.stop_button.invoke()
    assert app.send_button.instate(["!disabled"])
    app.send_button.invoke()
    assert app.input.draft == "" and app.transcript.entries[2].text == "two"
    gate.release(10**6)
    final = finish(root, app)
    assert isinstance(final, Done) and final.reason == "stop"
    assert app.transcript.answers[-1].text == SCRIPT
    assert len(first.text) < len(SCRIPT) and first.status == "stopped"


def test_backend_crash_gives_a_message_and_a_usable_window(root: tk.Tk, make_app) -> None:
    backend = ScriptedBackend(rate=0, fail_at=30)
    app = make_app(backend)
    app.flow.send("crash please")
    final = finish(root, app)
    assert isinstance(final, Error)
    assert "crashed at token 30" in final.message
    assert "crashed at token 30" in app.transcript.plain_text()
    assert app.stop_button.instate(["disabled"]) and not app.send_button.instate(["disabled"])
    backend.fail_at = None
    app.flow.send("again")
    assert isinstance(finish(root, app, 2), Done)


@pytest.mark.parametrize("kind", ["missing", "folder", "not-gguf", "tilde"])
def test_bad_model_path_gives_one_clear_message(
    root: tk.Tk,
    make_app,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    bogus = tmp_path / "notes.gguf"
    bogus.write_text("this is not a model")
    path, expected = {
        "missing": (str(tmp_path / "nope.gguf"), "Model file not found"),
        "folder": (str(tmp_path), "is a folder"),
        "not-gguf": (str(bogus), "Not a GGUF model file"),
        "tilde": ("~/nope.gguf", f"Model file not found: {tmp_path}/nope.gguf"),
    }[kind]
    app = make_app(LlamaBackend(path))
    assert not app.flow.model_ready
    assert app.model_banner.shown and expected in app.model_banner.text
    assert app.send_button.instate(["disabled"])
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_heartbeat_and_health_figures_update(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    beats = app.health.beats
    app.flow.send("go")
    rates = lambda: str(app.health.rates.cget("text"))  # noqa: E731
    pump_until(
        root,
        lambda: app.health.beats > beats and "tokens/s" in rates() and "updates/s" in rates(),
        what="a heartbeat and the rates",
    )
    assert "lag" in app.health.lag.cget("text")
    # (the rates' labels are there before the first tick has put text on screen)
    pump_until(root, lambda: app.transcript.inserts > 0, what="the answer's first insert")


def test_close_mid_generation_leaves_no_thread_and_no_error(root: tk.Tk, make_app) -> None:
    gate = TokenGate()
    app = make_app(ScriptedBackend(gate=gate))
    app.flow.send("long")
    worker = app.controller.current
    gate.release(4)  # then it waits at the gate: mid-answer, for good
    assert gate.wait_passed(4)
    app.close()
    assert not worker.is_alive()
    assert app.scheduler.closed
    with pytest.raises(tk.TclError):
        root.winfo_exists()


QUIT_RATE, QUIT_TOKENS = 5, 3000  # an answer of ten minutes


def streaming_answer_saved(path: Path) -> bool:
    """Whether the window (another process) has saved some of its answer, still streaming."""
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                f"SELECT {saved_content(conn)} FROM messages"
                " WHERE role = 'assistant' AND status = 'streaming'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and bool(row[0])


def test_the_app_process_quits_mid_answer_and_saves_it_as_stopped(
    display: None, tmp_path: Path
) -> None:
    """Ctrl+Q while an answer streams: the process ends at once, cleanly, long before the
    answer would have (minutes), and the answer is saved as stopped (a quit is not a crash:
    the next start must not call it interrupted)."""
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    env = {**os.environ, "TKCHAT_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tkchat", "--backend", "scripted", "--rate", str(QUIT_RATE)]
        + ["--tokens", str(QUIT_TOKENS), "--max-tokens", str(QUIT_TOKENS)]
        + ["--lang", "en", "--prompt", "hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        found = subprocess.run(
            ["xdotool", "search", "--sync", "--onlyvisible", "--name", "^tkchat"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        window = found.stdout.split()[0]
        wait_until(
            lambda: streaming_answer_saved(tmp_path / DATABASE_NAME),
            timeout=60,
            what="the answer to stream (and some of it to be saved)",
        )
        xdotool("windowfocus", "--sync", window)
        xdotool("key", "ctrl+q")
        _out, err = proc.communicate(timeout=30)  # (the answer would take ten minutes)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert "Error" not in err and "Traceback" not in err and "invalid command" not in err
    store = ConversationStore(tmp_path / DATABASE_NAME)
    try:
        (conversation,) = store.list_conversations()
        user, answer = store.messages(conversation.id)
    finally:
        store.close()
    assert (user.role, user.content) == ("user", "hello")
    assert answer.role == "assistant" and answer.status == "stopped"
    assert answer.content and ScriptedBackend().text.startswith(answer.content)


def test_long_answer_renders_in_many_slices_and_loses_nothing(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """11,000 characters with code blocks: painted block by block across many callbacks
    (the time per slice is the benchmark's business), and every line ends up on screen.
    The painter's clock moves a millisecond at each reading: a slice's budget (a few ms)
    holds a few pieces, however fast the machine."""
    clock = SimpleNamespace(now=0.0)

    def perf_counter() -> float:
        clock.now += 0.001
        return clock.now

    monkeypatch.setattr(markdown_view, "time", SimpleNamespace(perf_counter=perf_counter))
    answer_text = long_answer(11_000)
    app = make_app(ScriptedBackend(rate=0, text=answer_text), sampling=Sampling(max_tokens=0))
    painter = app.transcript.painter
    slices_before = len(painter.slice_ms)
    app.flow.send("a long one")
    view = app.flow.answering.answer
    final = finish(root, app)
    assert isinstance(final, Done) and view.text == answer_text and view.rendered
    slices = len(painter.slice_ms) - slices_before
    blocks = split_blocks(answer_text, MAX_BLOCK_CHARS)
    assert len(blocks) > 20 and slices > 1
    assert max(len(b) for b in blocks) <= MAX_BLOCK_CHARS
    shown = app.transcript.plain_text()
    for line in answer_text.splitlines():
        words = line.strip("#-`> ").replace("**", "").replace("*", "").strip()
        if words and not words.startswith("python"):
            assert words in shown, f"missing after render: {words!r}"
    assert "```" not in shown
    # styles are shared: a long answer adds a handful of tags, not one per formatting run
    # (nor one per Copy code link: every tag slows every delete down)
    assert len(app.transcript.text.tag_names()) < 40


def test_a_timer_due_during_a_slice_runs_before_the_next_slice(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lag probe's worst lags were two markdown slices long: a slice's follow-up timer
    came due before the probe's, and both were due when the loop looked, so the next slice
    ran first. A timer due just after a slice's follow-up, both due when the loop looks,
    runs before the next slice, whatever the slices cost. (The follow-up's millisecond is
    made 0 here, the test's timer set after it at 0: both due at once, in that order, with
    no clock to wait on.)"""
    order: list[str] = []
    painter_slice = markdown_view.MarkdownPainter._slice
    once = AfterScheduler.once

    def due_at_once(scheduler: AfterScheduler, name: str, delay_ms: int, callback) -> None:
        once(scheduler, name, 0 if (name, delay_ms) == ("markdown", 1) else delay_ms, callback)

    def slice_then_a_timer(painter: markdown_view.MarkdownPainter) -> None:
        order.append("slice")
        painter_slice(painter)
        if painter.scheduler.pending("markdown"):  # another slice to come
            order.append("timer set")
            root.after(0, lambda: order.append("timer"))

    monkeypatch.setattr(AfterScheduler, "once", due_at_once)
    monkeypatch.setattr(markdown_view.MarkdownPainter, "_slice", slice_then_a_timer)
    answer = long_answer(11_000)
    app = make_app(ScriptedBackend(rate=0, text=answer), sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    view = app.flow.answering.answer
    final = finish(root, app)
    assert isinstance(final, Done) and view is not None and view.rendered
    set_at = [i for i, was in enumerate(order) if was == "timer set"]
    assert len(set_at) >= 2  # slices that had another to come
    assert all(order[i + 1] == "timer" for i in set_at), order


def test_rendering_is_cached_per_block(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    painter = app.transcript.painter
    app.flow.send("one")
    finish(root, app)
    cached = len(painter._cache)
    app.flow.send("two")  # the same script: every block is already rendered
    finish(root, app, 2)
    assert cached > 3 and len(painter._cache) == cached
    assert all(view.rendered for view in app.transcript.answers)


def test_hostile_answer_in_the_app_touches_no_network_and_no_file(
    root: tk.Tk, make_app, counting_server, no_proxy, io_spies, tmp_path: Path
) -> None:
    """The painter path of the real window (not just tkhtmlview): markup from the model is
    shown as text, and nothing is fetched or opened."""
    port, hits = counting_server
    local_png = tmp_path / "local.png"
    local_png.write_bytes(png_bytes())
    text = hostile_answer(port, local_png)
    app = make_app(ScriptedBackend(rate=0, text=text), sampling=Sampling(max_tokens=0))
    app.flow.send("be hostile")
    final = finish(root, app)
    assert isinstance(final, Done) and app.transcript.answers[0].rendered
    assert hits == [] and io_spies == {"get": [], "open": []}
    shown = app.transcript.plain_text()
    assert "<script>alert(1)</script>" in shown  # shown as text, never run or interpreted
    assert f'<img src="http://127.0.0.1:{port}/a.png">' in shown
    assert not app.transcript.text.image_names()  # Tk answers "" when there are none


def test_new_chat_between_the_workers_end_and_its_final_event(root: tk.Tk, make_app) -> None:
    """The worker has left the model loop but its `done` is still in the queue when the chat
    is cleared: the answer must end there, and its late `done` must not paint into a
    transcript whose marks are gone (it raised "bad text index" in a tick)."""
    app = make_app(ScriptedBackend(rate=0))
    app.flow.send("one")
    worker = app.controller.current
    assert worker is not None and worker.join(10)  # done, but nobody has drained its events
    app.flow.new_chat()
    assert app.flow.answering.answer is None and app.transcript.entries == []
    channel = app.controller.channel
    pump_until(root, lambda: channel.qsize() == 0, what="the late events to be taken")
    root.update()  # and handled: nothing raises, nothing shows
    assert app.transcript.entries == [] and not app.transcript.painter.busy
    app.flow.send("two")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the next answer")
    assert app.transcript.answers[-1].text == ScriptedBackend().text


def test_new_chat_while_a_saved_conversation_is_being_shown(root: tk.Tk, make_app) -> None:
    """Ctrl+N while a long saved chat is still being put on screen: the rest of it must not
    keep arriving in the new chat."""
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    store = app.archive.store
    saved = store.create("long")
    for index in range(30):  # (none of its slices has run when the chat is left)
        store.add_message(saved.id, "user", f"question {index}")
        store.add_message(saved.id, "assistant", "answer " * 50)
    app.conversations.show(saved.id)
    assert app.flow.showing_conversation  # its slices are scheduled, none has run yet
    app.flow.new_chat()
    assert not app.scheduler.pending("show-conversation")  # the rest will not follow
    root.update()
    assert app.transcript.entries == [] and not app.flow.showing_conversation


def test_a_model_that_fails_to_load_stays_said_and_disables_what_needs_it(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    """Reported: with a saved chat, `--model notamodel.gguf` said "see the message below" but
    the restored chat replaced the message; Regenerate stayed enabled and said "your message
    is kept in the box" with an empty box."""
    from tkchat.store.db import ConversationStore
    from tkchat.store.files import database_path

    store = ConversationStore(database_path())
    chat = store.create("yesterday")
    store.add_message(chat.id, "user", "a question from yesterday")
    store.add_message(chat.id, "assistant", "an answer from yesterday")
    store.close()
    missing = str(tmp_path / "notamodel.gguf")
    app = make_app(LlamaBackend(missing), history=True)
    pump_until(
        root,
        lambda: app.conversations.ready and not app.flow.showing_conversation,
        what="the restored chat",
    )
    root.update()
    assert "yesterday" in app.transcript.plain_text()  # the chat was restored …
    assert app.model_banner.shown and missing in app.model_banner.text  # … and the reason stays
    assert app.send_button.instate(["disabled"])
    assert app.regenerate_button.instate(["disabled"])
    assert not app.menubar.enabled("regenerate")
    app.input.insert("1.0", "my next question")
    assert not app.flow.send() and not app.flow.regenerate()
    assert "Model menu" in app.status.get()
    assert app.input.get("1.0", "end-1c") == "my next question"  # kept, as the status says


def test_the_status_line_forgets_the_previous_chat(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    app.flow.send("first")
    finish(root, app)
    assert app.status.get().startswith("Done")
    app.flow.new_chat()
    assert not app.status.get().startswith("Done") and "Ready" in app.status.get()
    app.flow.send("second")
    finish(root, app, 2)
    tree = app.conversations.sidebar.tree
    first = int([iid for iid in tree.get_children() if iid.isdigit()][-1])
    app.conversations.show(first)
    assert not app.status.get().startswith("Done")
