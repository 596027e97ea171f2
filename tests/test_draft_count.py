"""The draft's token count under the message box, counted off the Tk thread with the model's
own tokenizer, and a draft too long for the context refused before sending (kept in the box).
On a real Tk window with the real bundled model."""

from __future__ import annotations

import threading
import tkinter as tk
from collections.abc import Callable, Iterator, Sequence

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Message, Sampling
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.store.settings import AppSettings
from tkchat.ui.chats import draft_count
from tkchat.ui.window.chat_window import ChatApp

pytestmark = [pytest.mark.gui, pytest.mark.model]

QUESTION = "What is the capital of France? Answer in one word."
# Many lines of mixed text (the window's own lines wrap it): English and Chinese.
PASTE = "\n".join(
    f"Line {i}: the quick brown fox 敏捷的棕色狐狸 jumps over the dog." for i in range(900)
)


class KeptModel(LlamaBackend):
    """The bundled model, loaded once for this module's windows: closing one does not free
    it (a window's load finds it loaded and is done)."""

    def close(self) -> None:
        """Kept for the next window; the module's fixture frees it."""

    def free(self) -> None:
        super().close()


@pytest.fixture(scope="module")
def model() -> Iterator[KeptModel]:
    kept = KeptModel(None)
    kept.load()
    yield kept
    kept.free()


def counted_threads(backend: LlamaBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record which thread each count runs on (the backend's own count, wrapped for this
    test)."""
    names: list[str] = []
    count = backend.count_tokens

    def recording(messages: Sequence[Message]) -> int:
        names.append(threading.current_thread().name)
        return count(messages)

    monkeypatch.setattr(backend, "count_tokens", recording)
    return names


def exact(app: ChatApp, text: str) -> int:
    """The draft's own tokens, counted here (not through the recorded count_tokens): the
    message in the chat template, less the template around an empty one."""
    backend = app.controller.backend
    assert isinstance(backend, LlamaBackend)
    with app.controller.model_lock:
        whole = len(backend.chat_tokens((Message("user", text),)))
        return whole - len(backend.chat_tokens((Message("user", ""),)))


def test_the_draft_count_is_the_text_s_own_not_the_chat_template_s(
    root: tk.Tk, make_app: Callable[..., ChatApp], model: KeptModel
) -> None:
    """Reported (issue 37): "ab" showed 31 tokens, 29 of them the chat template's."""
    app = make_app(model)
    app.input.insert("1.0", "ab")
    pump_until(root, lambda: shown(app).endswith(" tokens"), what="the draft's count")
    assert shown(app) == f"{exact(app, 'ab')} tokens"
    assert 1 <= exact(app, "ab") <= 2  # a word, not a template


def type_text(root: tk.Tk, app: ChatApp, text: str) -> None:
    """Key by key, each key's events handled before the next, as a typist's would be."""
    for char in text:
        app.input.insert("insert", char)
        root.update()


def shown(app: ChatApp) -> str:
    return str(app.draft_label.cget("text"))


def test_typing_shows_the_draft_s_tokens_counted_off_the_tk_thread(
    root: tk.Tk, make_app: Callable[..., ChatApp], model: KeptModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debounced: each key puts the count off again (typed here with a pause longer than
    any test, so no count can start while the keys come), one count after the last key;
    the figure shown is the final text's, counted on another thread."""
    app = make_app(model)
    threads = counted_threads(model, monkeypatch)
    assert shown(app) == ""
    debounce = draft_count.DEBOUNCE_MS
    monkeypatch.setattr(draft_count, "DEBOUNCE_MS", 3_600_000)
    type_text(root, app, QUESTION[:-1])
    assert app.draft.counts == 0 and app.draft.scheduler.pending("draft-count")
    monkeypatch.setattr(draft_count, "DEBOUNCE_MS", debounce)
    type_text(root, app, QUESTION[-1])  # the last key: the pause after it is the usual one
    tokens = exact(app, QUESTION)
    pump_until(root, lambda: shown(app) == f"{tokens} tokens", what="the draft's count")
    assert app.draft.counts == 1  # one count of the whole question, not one per key
    assert threads and "MainThread" not in threads, threads
    app.toggle_language()
    assert shown(app) == f"{tokens} 个 token"
    app.input.clear()
    pump_until(root, lambda: shown(app) == "", what="the count to go with the text")


def test_a_50000_character_paste_is_counted_off_the_tk_thread(
    root: tk.Tk, make_app: Callable[..., ChatApp], model: KeptModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tokenizing this much takes tens of milliseconds (twice: the draft alone, then the
    conversation with it): on the Tk thread that would be a stall of twice that per
    keystroke. Counted on another thread, once (how long the window stalls meanwhile is the
    bench's to measure)."""
    app = make_app(model)
    threads = counted_threads(model, monkeypatch)
    assert len(PASTE) >= 50_000
    tokens = exact(app, PASTE)  # one count of the paste, here
    before = app.draft.counts
    app.input.insert("1.0", PASTE)
    pump_until(
        root,
        lambda: shown(app).startswith(f"{tokens:,} tokens"),
        timeout=60,
        what="the paste's count",
    )
    assert app.draft.counts == before + 1  # counted once, not again and again
    assert threads and "MainThread" not in threads, threads
    assert "more than the context of 8,192" in shown(app)  # ~25,000 tokens: it cannot fit


def test_a_draft_too_long_for_the_context_is_refused_and_stays_in_the_box(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    app = make_app(
        LlamaBackend(None, n_ctx=512),
        app_settings=AppSettings(model_hint_shown=True),
        sampling=Sampling(max_tokens=4),  # (the answers are not what is tested)
    )
    assert app.controller.backend.n_ctx == 512
    long_text = " ".join(["tokens"] * 600)
    app.input.insert("1.0", long_text)
    root.focus_force()  # a generated key goes where the X focus is: here, first
    app.input.focus_set()
    pump_until(root, lambda: root.focus_get() is app.input, what="the keyboard focus")
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


def test_a_long_draft_sent_while_an_answer_streams_waits_in_the_box_then_goes_after_stop(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """Send does not stop a streaming answer (issue 37): a draft long enough to need its count
    stays in the box; after Stop, Send counts it with the model free, then sends it."""
    from tkchat.generate.scripted import ScriptedBackend, TokenGate

    gate = TokenGate()  # one token, then the answer waits: it is streaming, for good
    app = make_app(ScriptedBackend(gate=gate, tokens=2000))
    gate.release(1)
    app.flow.send("Tell me a long story.")
    answer = app.flow.answering.answer
    pump_until(
        root,
        lambda: answer is not None and answer.text != "",
        what="the answer to stream",
    )
    draft = " ".join(["word"] * 2000)  # 10,000 bytes: more than the context could hold unseen
    app.input.set_draft(draft)
    assert app.flow.send() is False and app.status.get() == app.t("app.busy_answering")
    assert app.flow.answering.answer is answer and app.input.draft == draft
    app.flow.stop()
    assert app.flow.send() is False and "Counting" in app.status.get()
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
    root: tk.Tk, make_app: Callable[..., ChatApp], model: KeptModel
) -> None:
    """The figure must be about the conversation as it is: a count still running when the
    conversation changes (settings saved, another branch shown) is not trusted."""
    app = make_app(model)
    pump_until(root, lambda: app.flow.model_ready, what="the model")
    type_text(root, app, QUESTION)
    pump_until(root, lambda: app.draft.figure_for(QUESTION) is not None, what="the count")
    before = app.draft.counts
    with app.controller.model_lock:  # the count thread waits for the model here
        type_text(root, app, " Please.")
        pump_until(root, lambda: app.draft.counts == before + 1, what="a count to start")
        app.draft.refresh()  # the conversation changed while it ran
        root.update()  # (the refresh's own count waits: one count at a time)
    text = QUESTION + " Please."
    pump_until(root, lambda: app.draft.figure_for(text) is not None, what="a fresh count")
    assert app.draft.counts == before + 2
