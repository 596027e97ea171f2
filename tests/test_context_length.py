"""The context a local model gets: its trained context (read from the GGUF header), capped at
8,192 tokens; the figure in the status line; a per-model choice in Settings, remembered and
applied on the next load; ``--n-ctx`` above both."""

from __future__ import annotations

import json
import struct
import threading
import tkinter as tk
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.cli import build_parser
from tkchat.generate.llama_backend import (
    DEFAULT_N_CTX,
    MAX_AUTO_N_CTX,
    LlamaBackend,
    auto_n_ctx,
)
from tkchat.generate.model_file import bundled_model_path, trained_context
from tkchat.store.settings import (
    AppSettings,
    load_settings,
    save_settings,
    settings_from_json,
)
from tkchat.ui.window.chat_window import ChatApp

BUNDLED_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled() -> Path:
    path = bundled_model_path()
    assert path is not None, "the bundled model is part of the test install"
    return path


# -- reading the trained context --------------------------------------------------------------


def test_the_bundled_model_was_trained_for_8192_tokens() -> None:
    assert bundled().name == BUNDLED_NAME
    assert trained_context(bundled()) == 8192


def gguf(path: Path, pairs: list[tuple[str, int, bytes]]) -> Path:
    """A GGUF header with the given (key, type, packed value) pairs and no tensors."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack("<Q", len(raw)) + raw

    body = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs))
    for key, kind, value in pairs:
        body += text(key) + struct.pack("<I", kind) + value
    path.write_bytes(body)
    return path


def test_the_architecture_s_own_length_is_read_past_arrays(tmp_path: Path) -> None:
    tokens = struct.pack("<IQ", 8, 3) + b"".join(
        struct.pack("<Q", len(t)) + t for t in (b"a", b"bc", b"def")
    )
    path = gguf(
        tmp_path / "m.gguf",
        [
            ("general.architecture", 8, struct.pack("<Q", 5) + b"qwen2"),
            ("tokenizer.ggml.tokens", 9, tokens),
            ("llama.context_length", 4, struct.pack("<I", 2048)),  # not this model's
            ("qwen2.context_length", 10, struct.pack("<Q", 131072)),
        ],
    )
    assert trained_context(path) == 131072
    assert auto_n_ctx(131072) == MAX_AUTO_N_CTX == 8192


def test_a_file_that_does_not_say_gets_the_old_default(tmp_path: Path) -> None:
    silent = gguf(tmp_path / "s.gguf", [("general.architecture", 8, struct.pack("<Q", 1) + b"x")])
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(bundled().read_bytes()[:100])
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    for path in (silent, cut, junk, tmp_path / "missing.gguf"):
        assert trained_context(path) is None, path
    assert auto_n_ctx(None) == DEFAULT_N_CTX
    assert auto_n_ctx(2048) == 2048  # a model trained for less gets what it was trained for


# -- the per-model setting and --n-ctx ----------------------------------------------------------


def test_the_per_model_context_is_saved_and_a_bad_entry_is_named(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert save_settings(AppSettings(model_contexts={BUNDLED_NAME: 2048}), path) is None
    assert json.loads(path.read_text())["model_contexts"] == {BUNDLED_NAME: 2048}
    assert load_settings(path)[0].model_contexts == {BUNDLED_NAME: 2048}
    settings, ignored = settings_from_json(
        {"model_contexts": {"a.gguf": 4096, "b.gguf": 12, "c.gguf": "big", "d.gguf": True}}
    )
    assert settings.model_contexts == {"a.gguf": 4096}
    assert ignored == ["model_contexts"]


@pytest.mark.parametrize("value", ["0", "100", "lots", "2000000"])
def test_n_ctx_on_the_command_line_must_be_a_usable_size(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--n-ctx", value])
    assert "whole number of tokens" in capsys.readouterr().err
    assert build_parser().parse_args(["--n-ctx", "2048"]).n_ctx == 2048


@pytest.mark.model
def test_n_ctx_wins_over_the_setting_which_wins_over_the_trained_context() -> None:
    asked: list[str] = []

    def chosen(name: str) -> int | None:
        asked.append(name)
        return 1024

    for wanted, expected in ((512, 512), (None, 1024)):
        backend = LlamaBackend(None, n_ctx=wanted, context_for=chosen)
        backend.load()
        try:
            assert (backend.n_ctx, backend.n_ctx_train) == (expected, 8192)
        finally:
            backend.close()
    assert asked == [BUNDLED_NAME, BUNDLED_NAME]


# -- in the window --------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.model
def test_the_window_says_the_context_given_of_the_trained_and_settings_change_it(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """The bundled model loads with all of its trained 8,192 tokens and says so; choosing
    1,024 in Settings is remembered for that file and used when it is next loaded."""
    # (the first-run model suggestion would take the status line)
    app = make_app(LlamaBackend(None), app_settings=AppSettings(model_hint_shown=True))
    assert app.flow.model_ready
    assert app.controller.backend.n_ctx == 8192
    assert "context 8,192 of 8,192 trained" in app.status.get()
    assert app.context_meter.n_ctx == 8192
    assert "trained" not in app.context_meter.full  # all of it: nothing more to say

    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.context is not None
    assert dialog.context.get() == ""  # automatic
    assert "8,192" in dialog.notes["context"].cget("text")
    dialog.context.insert(0, "99")
    dialog.save()
    assert not dialog.closed and "256" in dialog.errors()["context"]  # nothing applied
    dialog.context.delete(0, "end")
    dialog.context.insert(0, "1024")
    dialog.save()
    assert dialog.closed
    assert app.remembered.current.model_contexts == {BUNDLED_NAME: 1024}
    assert "next time it loads" in app.status.get()
    assert app.controller.backend.n_ctx == 8192  # not until it loads again

    app.models.load(None)
    pump_until(root, lambda: app.flow.model_ready, what="the model to load again")
    assert app.controller.backend.n_ctx == 1024
    assert "context 1,024 of 8,192 trained" in app.status.get()
    assert app.context_meter.full == "context 1,024 tokens (of 8,192 trained)"
    app.toggle_language()
    assert "1,024" in app.status.get() and "训练" in app.status.get()

    app.chat_settings.open()  # back to automatic: the entry goes
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.context is not None
    assert dialog.context.get() == "1024"
    dialog.reset()  # "Reset to defaults": automatic
    assert dialog.context.get() == ""
    dialog.save()
    assert app.remembered.current.model_contexts == {}
    assert "自动" in app.status.get()


@pytest.mark.gui
def test_a_scripted_backend_has_no_context_row(make_app: Callable[..., ChatApp]) -> None:
    from tkchat.generate.scripted import ScriptedBackend

    app = make_app(ScriptedBackend(rate=0, tokens=3))
    assert "trained" not in app.status.get()
    app.chat_settings.open()
    assert app.chat_settings.dialog is not None and app.chat_settings.dialog.context is None
    app.chat_settings.dialog.cancel()


@pytest.mark.gui
def test_settings_saved_are_measured_at_once(root: tk.Tk, make_app: Callable[..., ChatApp]) -> None:
    """A longer system prompt takes more of the context from the moment it is saved: the
    meter says so before the next answer, and the draft is counted again against it."""
    from tkchat.generate.scripted import ScriptedBackend

    app = make_app(ScriptedBackend(rate=0, tokens=3))
    app.flow.send("A first question.")
    pump_until(root, lambda: len(app.flow.answering.finished) == 1, what="the answer")
    meter = app.context_meter
    before = meter.used
    assert before is not None
    counts = app.draft.counts
    app.input.insert("1.0", "a draft")
    pump_until(root, lambda: app.draft.figure is not None, what="the draft's count")
    assert app.draft.counts == counts + 1
    app.chat_settings.apply(" ".join(["long"] * 200), app.session.sampling, None)
    pump_until(
        root,
        lambda: meter.used is not None and meter.used > before + 150,  # (the default prompt went)
        what="the meter to count the new system prompt",
    )
    pump_until(root, lambda: app.draft.counts == counts + 2, what="the draft counted again")
    assert (
        app.flow.answering.finished and len(app.flow.answering.finished) == 1
    )  # measured, not answered


# -- "Save and reload the model": the new context now, not at the next load -----------------


def reload_with(root: tk.Tk, app: ChatApp, context: str) -> None:
    """Open Settings, type ``context`` in the context field and click "Save and reload the
    model" with a real click."""
    from tests.x_input import click, focus_window

    focus_window(root)
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.context is not None and dialog.reload_button is not None
    dialog.context.delete(0, "end")
    dialog.context.insert(0, context)
    click(root, dialog.reload_button)
    assert dialog.closed


@pytest.mark.gui
@pytest.mark.model
def test_save_and_reload_loads_the_model_again_with_the_new_context_now(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """A context typed in Settings applies at once with "Save and reload the model": the
    answer streaming is stopped (and kept, marked stopped), the conversation stays on
    screen, Send waits for the reload as at start-up, and the model answers with the new
    context. The model in use is kept until the new load is ready."""
    from tkchat.events import ModelReady

    app = make_app(LlamaBackend(None), app_settings=AppSettings(model_hint_shown=True))
    first = app.controller.backend
    assert first.n_ctx == 8192
    readies: list[ModelReady] = []
    loaded = app.model_loaded
    app.model_loaded = lambda event: (readies.append(event), loaded(event))  # type: ignore[method-assign]

    assert app.flow.send("Write a long story about a lighthouse.")
    assert app.flow.answering.answer is not None  # streaming while the reload is chosen
    reload_with(root, app, "1024")
    assert app.flow.answering.answer is None  # stopped first, and kept
    assert [type(e).__name__ for e in app.transcript.entries] == ["UserView", "AnswerView"]
    assert app.transcript.entries[1].status == "stopped"  # type: ignore[union-attr]
    assert app.remembered.current.model_contexts == {BUNDLED_NAME: 1024}
    assert not app.flow.model_ready and app.send_button.instate(["disabled"])
    assert "again with the new settings" in app.status.get()
    app.input.insert("1.0", "Say hello.")
    assert not app.flow.send()  # waits, as at start-up: sent once the model is ready
    assert "as soon as it is" in app.status.get()

    pump_until(root, lambda: bool(readies), timeout=60, what="the model loaded again")
    backend = app.controller.backend
    assert backend is not first and isinstance(backend, LlamaBackend)
    assert readies[-1].n_ctx == 1024 and backend.n_ctx == 1024
    assert first._llm is None  # the copy kept meanwhile is freed
    assert app.context_meter.n_ctx == 1024
    pump_until(root, lambda: len(app.transcript.entries) == 4, timeout=60, what="the queued send")
    assert app.transcript.entries[2].text == "Say hello."  # type: ignore[union-attr]
    pump_until(root, lambda: app.flow.answering.answer is None, timeout=60, what="its answer")


@pytest.mark.gui
@pytest.mark.model
def test_a_reload_that_fails_keeps_the_model_in_use_and_the_settings_it_loaded_with(
    root: tk.Tk, make_app: Callable[..., ChatApp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's file is gone when it is loaded again: the copy loaded before answers on,
    the banner says why in one sentence, and the context goes back to what that copy was
    loaded with (the next start would fail the same way). The file is still a recent model,
    and the picker does not mark it: a context is not a broken file."""
    linked = tmp_path / "linked.gguf"
    linked.symlink_to(bundled())
    first = LlamaBackend(str(linked))
    app = make_app(first, app_settings=AppSettings(model_hint_shown=True))
    assert app.flow.model_ready and first.n_ctx == 8192
    recent = app.remembered.current.recent_models
    linked.unlink()
    # The new load waits (on the loader thread) until the test has seen the choice saved.
    let_go = threading.Event()
    real_load = LlamaBackend.load

    def held_load(self: LlamaBackend, watch: object = None) -> None:
        let_go.wait(timeout=60)
        real_load(self, watch)  # type: ignore[arg-type]

    monkeypatch.setattr(LlamaBackend, "load", held_load)
    reload_with(root, app, "2048")
    assert app.remembered.current.model_contexts == {"linked.gguf": 2048}
    assert app.send_button.instate(["disabled"])  # Send waits for the reload
    let_go.set()
    pump_until(root, lambda: app.flow.model_ready, timeout=60, what="the old model back")

    assert app.controller.backend is first and first._llm is not None and first.n_ctx == 8192
    assert app.model_banner.text.endswith("linked.gguf is still loaded and in use.")
    assert app.remembered.current.model_contexts == {}  # as it loaded
    assert app.remembered.current.recent_models == recent
    assert app.models.failed_files == {}
    assert app.send_button.instate(["!disabled"])


@pytest.mark.gui
def test_the_scripted_backend_offers_no_reload(make_app: Callable[..., ChatApp]) -> None:
    """Nothing to load again: no model rows, so no "Save and reload the model"; nor does
    the switch reload anything but a loaded local model."""
    from tkchat.generate.scripted import ScriptedBackend

    app = make_app(ScriptedBackend(rate=0, tokens=3))
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.reload_button is None
    dialog.cancel()
    assert not app.models.reload(lambda: None)


@pytest.mark.gui
@pytest.mark.model
def test_a_labelled_model_keeps_its_name_and_its_context_by_its_file(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    """A model shown by a label (Jan's, Ollama's) has its context remembered by its file's
    name, which is what a load looks up: the reload gives it the context chosen, and it is
    still shown by its label."""
    app = make_app(
        LlamaBackend(str(bundled()), label="smollm2-135m-jan"),
        app_settings=AppSettings(model_hint_shown=True),
    )
    reload_with(root, app, "1024")
    assert app.remembered.current.model_contexts == {BUNDLED_NAME: 1024}
    pump_until(root, lambda: app.flow.model_ready, timeout=60, what="the model loaded again")
    backend = app.controller.backend
    assert backend.n_ctx == 1024 and backend.name == "smollm2-135m-jan"
    assert "smollm2-135m-jan" in root.title()
