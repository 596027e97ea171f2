"""The draft's token count under the message box, counted off the Tk thread with the model's
own tokenizer, and a draft too long for the context refused before sending (kept in the box).
On a real Tk window with the real bundled model."""

from __future__ import annotations

import gc
import threading
import time
import tkinter as tk
from collections.abc import Callable, Sequence

import pytest

from tests.conftest import pump_for, pump_until
from tkchat.conversation import Message
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.store.settings import AppSettings
from tkchat.ui.window.chat_window import ChatApp

pytestmark = [pytest.mark.gui, pytest.mark.model]

QUESTION = "What is the capital of France? Answer in one word."
# Many lines of mixed text (the window's own lines wrap it): English and Chinese.
PASTE = "\n".join(
    f"Line {i}: the quick brown fox 敏捷的棕色狐狸 jumps over the dog." for i in range(900)
)


def counted_threads(backend: LlamaBackend) -> list[str]:
    """Record which thread each count runs on (the backend's own count, wrapped)."""
    names: list[str] = []
    count = backend.count_tokens

    def recording(messages: Sequence[Message]) -> int:
        names.append(threading.current_thread().name)
        return count(messages)

    backend.count_tokens = recording  # type: ignore[method-assign]
    return names


def exact(app: ChatApp, text: str) -> int:
    """The draft's tokens, counted here (not through the recorded count_tokens)."""
    backend = app.controller.backend
    assert isinstance(backend, LlamaBackend)
    with app.controller.model_lock:
        return len(backend.chat_tokens((Message("user", text),)))


def type_text(root: tk.Tk, app: ChatApp, text: str) -> None:
    """Key by key, with the event loop running between keys, as a typist would."""
    for char in text:
        app.input.insert("insert", char)
        pump_for(root, 0.004)


def shown(app: ChatApp) -> str:
    return str(app.draft_label.cget("text"))


def test_typing_shows_the_draft_s_tokens_counted_off_the_tk_thread(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    app = make_app(LlamaBackend(None))
    threads = counted_threads(app.controller.backend)  # type: ignore[arg-type]
    assert shown(app) == ""
    type_text(root, app, QUESTION)
    tokens = exact(app, QUESTION)
    pump_until(root, lambda: shown(app) == f"{tokens} tokens", what="the draft's count")
    # Debounced: one count of the whole question (a few more if the loaded machine paused
    # the typist), not one per key; the figure shown is the final text's, not a prefix's.
    assert 1 <= app.draft.counts < len(QUESTION) // 5
    assert threads and "MainThread" not in threads, threads
    app.toggle_language()
    assert shown(app) == f"{tokens} 个 token"
    app.input.clear()
    pump_until(root, lambda: shown(app) == "", what="the count to go with the text")


def test_a_50000_character_paste_is_counted_without_freezing_the_window(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """Tokenizing this much takes tens of milliseconds (twice: the draft alone, then the
    conversation with it): on the Tk thread that would be a stall of twice that per
    keystroke. The window's longest stall while it counts is held to one count's time (what
    this test measures, counting the paste itself) plus its longest stall when nothing is
    counted (this machine's noise, measured right after)."""
    app = make_app(LlamaBackend(None))
    threads = counted_threads(app.controller.backend)  # type: ignore[arg-type]
    assert len(PASTE) >= 50_000
    started = time.perf_counter()
    tokens = exact(app, PASTE)  # one count of the paste, here
    count_s = time.perf_counter() - started
    app.input.insert("1.0", PASTE)
    pump_for(root, 0.05)  # the box lays out the paste (Tk's own work, not ours)
    before = app.draft.counts
    deadline = time.perf_counter() + 20

    def counting() -> bool:
        assert time.perf_counter() < deadline, f"no count shown: {shown(app)!r}"
        assert app.draft.counts <= before + 2, "counted again and again"
        return not shown(app).startswith(f"{tokens:,} tokens")

    # The collector's pauses are the test session's (the garbage of every window before),
    # not this window's: none while the stalls are timed.
    gc.collect()
    gc.disable()
    try:
        longest = _longest_stall(root, counting)
        quiet_until = time.perf_counter() + 0.5
        quiet = _longest_stall(root, lambda: time.perf_counter() < quiet_until)
    finally:
        gc.enable()
    assert "MainThread" not in threads
    assert "more than the context of 8,192" in shown(app)  # ~25,000 tokens: it cannot fit
    assert longest < count_s + quiet, (
        f"the window stalled {longest * 1000:.0f} ms while counting; one count takes "
        f"{count_s * 1000:.0f} ms, a stall with nothing counted {quiet * 1000:.0f} ms"
    )


def _longest_stall(root: tk.Tk, going: Callable[[], bool]) -> float:
    """The longest time one turn of the Tk loop took while ``going()``, in seconds."""
    longest, last = 0.0, time.perf_counter()
    while going():
        root.update()
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
        time.sleep(0.002)
    return longest


def test_a_draft_too_long_for_the_context_is_refused_and_stays_in_the_box(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    app = make_app(LlamaBackend(None, n_ctx=512), app_settings=AppSettings(model_hint_shown=True))
    assert app.controller.backend.n_ctx == 512
    long_text = " ".join(["tokens"] * 600)
    app.input.insert("1.0", long_text)
    app.input.focus_set()
    # Sent before its count is in: it waits for the count, then is refused.
    app.input.event_generate("<Return>")
    assert "Counting" in app.status.get()
    pump_until(root, lambda: "Not sent" in app.status.get(), what="the refusal")
    status = app.status.get()
    assert "512" in status and "kept in the box" in status
    assert "more than the context of 512" in shown(app)
    assert app.input.draft == long_text  # nothing lost
    assert (
        app.transcript.entries == []
        and app.session.chat == []
        and app.flow.answering.finished == []
    )
    assert not app.controller.is_generating()
    # Known now: Send refuses at once, in the window's language.
    app.toggle_language()
    assert app.flow.send() is False
    assert "未发送" in app.status.get() and "512" in app.status.get()
    assert app.input.draft == long_text
    app.toggle_language()

    # Shortened, but still long enough to need a count: it waits for it and is then sent.
    fits = " ".join(["word"] * 60)
    app.input.set_draft(fits)
    assert app.flow.send() is False and "Counting" in app.status.get()
    pump_until(root, lambda: len(app.transcript.entries) == 2, what="the question to be sent")
    assert app.session.chat[0] == Message("user", fits)
    assert app.input.draft == ""
    pump_until(root, lambda: len(app.flow.answering.finished) == 1, what="the answer")

    # A short question needs no count at all: it goes at once.
    app.input.set_draft("Hi")
    assert app.flow.send() is True
    pump_until(root, lambda: len(app.flow.answering.finished) == 2, what="the second answer")


def test_sending_a_long_draft_while_an_answer_streams_stops_it_and_sends_after_the_count(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """Send stops a streaming answer, as always; a draft long enough to need its count is
    counted once the model is free, then sent."""
    from tkchat.generate.scripted import ScriptedBackend

    app = make_app(ScriptedBackend(rate=20, tokens=2000))
    app.flow.send("Tell me a long story.")
    pump_until(
        root,
        lambda: app.flow.answering.answer is not None and app.flow.answering.answer.text != "",
        what="the answer to stream",
    )
    draft = " ".join(["word"] * 2000)  # 10,000 bytes: more than the context could hold unseen
    app.input.set_draft(draft)
    assert app.flow.send() is False and "Counting" in app.status.get()
    assert app.flow.answering.answer is None  # the streaming answer ended there, marked stopped
    pump_until(root, lambda: len(app.transcript.entries) == 4, what="the long draft to be sent")
    assert app.transcript.entries[1].text  # what had streamed stays
    assert app.session.chat[2] == Message("user", draft) and app.input.draft == ""
    app.flow.stop()


def test_a_count_that_fails_does_not_hold_the_message_back(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    from tkchat.generate.scripted import ScriptedBackend

    class CannotCountAside(ScriptedBackend):
        def count_tokens(self, messages: Sequence[Message]) -> int:
            if threading.current_thread().name == "tkchat-count":
                raise RuntimeError("no tokenizer here")
            return super().count_tokens(messages)

    app = make_app(CannotCountAside(rate=0, tokens=5))
    draft = " ".join(["word"] * 2000)
    app.input.set_draft(draft)
    assert app.flow.send() is False and "Counting" in app.status.get()
    pump_until(root, lambda: len(app.flow.answering.finished) == 1, what="the answer")
    assert app.session.chat[0] == Message("user", draft) and app.input.draft == ""
    assert shown(app) == ""


def test_a_count_begun_before_the_conversation_changed_is_counted_again(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """The figure must be about the conversation as it is: a count still running when the
    conversation changes (settings saved, another branch shown) is not trusted."""
    app = make_app(LlamaBackend(None))
    pump_until(root, lambda: app.flow.model_ready, what="the model")
    type_text(root, app, QUESTION)
    pump_until(root, lambda: app.draft.figure_for(QUESTION) is not None, what="the count")
    before = app.draft.counts
    with app.controller.model_lock:  # the count thread waits for the model here
        type_text(root, app, " Please.")
        pump_until(root, lambda: app.draft.counts == before + 1, what="a count to start")
        app.draft.refresh()  # the conversation changed while it ran
        pump_for(root, 0.1)
    text = QUESTION + " Please."
    pump_until(root, lambda: app.draft.figure_for(text) is not None, what="a fresh count")
    assert app.draft.counts == before + 2
