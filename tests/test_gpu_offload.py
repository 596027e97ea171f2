"""GPU offload: the setting (Settings, ``--gpu-layers``; automatic by default) reaches the
model — the ``n_gpu_layers`` llama.cpp is given — and the window says plainly where the model
runs, in English and Chinese.

This machine's llama-cpp-python is built for the CPU only (``llama_supports_gpu_offload()``
is False), so that is the case the real window shows here. The offloading case is the real
model too, loaded with what a GPU build would be given (llama.cpp ignores layers it has no
GPU for); only the capability query is replaced, where a test says so.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

import pytest

from tests.conftest import pump_until
from tkchat.cli import build_parser
from tkchat.cli.from_args import backend_options, child_model_args
from tkchat.events import Offload
from tkchat.generate import hardware as offload
from tkchat.generate.factory import LlamaOptions
from tkchat.generate.hardware import ALL_LAYERS, OffloadChoice, layers_to_offload
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.i18n import STRINGS
from tkchat.store.settings import AppSettings, load_settings
from tkchat.ui.base.translator import Translator
from tkchat.ui.chats.flow import offload_text
from tkchat.ui.settings.dialog import parse_gpu_layers
from tkchat.ui.window.chat_window import ChatApp

LLAMA_ALL = 0x7FFFFFFF  # what llama-cpp-python hands llama.cpp for "all layers" (-1)
BUNDLED_LAYERS = 31  # SmolLM2-135M: 30 blocks and the output layer


@pytest.fixture
def gpu_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if llama-cpp-python had been built with CUDA, Metal or Vulkan."""
    monkeypatch.setattr(offload, "gpu_offload_supported", lambda: True)


# -- the choice ----------------------------------------------------------------------------------


def test_automatic_is_all_layers_where_the_build_can_offload_and_none_where_not() -> None:
    assert layers_to_offload(None, supported=True) == ALL_LAYERS
    assert layers_to_offload(None, supported=False) == 0
    assert layers_to_offload(0, supported=True) == 0
    assert layers_to_offload(12, supported=False) == 12  # asked for: llama.cpp ignores it
    choice = OffloadChoice(None, ALL_LAYERS, True)
    assert choice.outcome(31) == Offload(True, 31, 31)
    assert OffloadChoice(40, 40, True).outcome(31) == Offload(True, 31, 31)
    assert OffloadChoice(10, 10, True).outcome(31) == Offload(True, 10, 31)
    assert OffloadChoice(10, 10, False).outcome(31) == Offload(False, 0, 31)


def test_this_machines_llama_cpp_python_is_cpu_only() -> None:
    """What the window's tests below show; a GPU build here would need them to say more."""
    assert offload.gpu_offload_supported() is False


def test_the_command_line_option() -> None:
    parser = build_parser()
    for text, expected in (("auto", None), ("all", ALL_LAYERS), ("0", 0), ("24", 24)):
        assert parser.parse_args(["--gpu-layers", text]).gpu_layers == expected
    with pytest.raises(SystemExit):
        parser.parse_args(["--gpu-layers", "-3"])
    given = parser.parse_args(["--gpu-layers", "5"])
    assert child_model_args(given)[-2:] == ["--gpu-layers", "5"]  # compare's windows too
    options = backend_options(given, gpu_layers=20)
    assert isinstance(options, LlamaOptions) and options.gpu_layers == 5  # over Settings
    not_given = parser.parse_args([])
    assert "--gpu-layers" not in child_model_args(not_given)
    options = backend_options(not_given, gpu_layers=20)
    assert isinstance(options, LlamaOptions) and options.gpu_layers == 20  # Settings decide
    serve = parser.parse_args(["serve"])
    options = backend_options(serve)
    assert isinstance(options, LlamaOptions) and options.gpu_layers is None  # automatic


def test_the_settings_field() -> None:
    assert parse_gpu_layers("") is None and parse_gpu_layers(" Auto ") is None
    assert parse_gpu_layers("all") == ALL_LAYERS and parse_gpu_layers("0") == 0
    assert parse_gpu_layers("33") == 33
    for bad in ("-1", "many", "1.5", "10001"):
        assert parse_gpu_layers(bad) == ("settings.error.gpu", {})


def test_where_the_model_runs_in_words_in_both_languages() -> None:
    for lang, cpu_build, cpu_chosen, all_layers, some in (
        (
            "en",
            "CPU only: this llama-cpp-python was built without GPU support",
            "CPU only: GPU offload is off in Settings",
            "GPU: all 31 layers",
            "GPU: 10 of 31 layers",
        ),
        (
            "zh",
            "只用 CPU：这个 llama-cpp-python 编译时没有 GPU 支持",
            "只用 CPU：设置里关掉了 GPU 卸载",
            "GPU：全部 31 层",
            "GPU：31 层中的 10 层",
        ),
    ):
        t = Translator(lang)
        assert offload_text(Offload(False, 0, 31), t) == cpu_build
        assert offload_text(Offload(True, 0, 31), t) == cpu_chosen
        assert offload_text(Offload(True, 31, 31), t) == all_layers
        assert offload_text(Offload(True, 10, 31), t) == some
    assert {k for k in STRINGS["en"] if "offload" in k} == {
        k for k in STRINGS["zh"] if "offload" in k
    }


# -- the real model ------------------------------------------------------------------------------


def loaded(backend: LlamaBackend) -> tuple[int, Offload | None]:
    """Load ``backend``; the n_gpu_layers llama.cpp was given, and what the backend says."""
    backend.load()
    try:
        return backend.llm.model_params.n_gpu_layers, backend.offload
    finally:
        backend.close()


@pytest.mark.model
def test_the_setting_reaches_llama_cpp() -> None:
    assert loaded(LlamaBackend(None)) == (0, Offload(False, 0, BUNDLED_LAYERS))  # automatic
    assert loaded(LlamaBackend(None, gpu_layers=7)) == (7, Offload(False, 0, BUNDLED_LAYERS))


@pytest.mark.model
def test_automatic_gives_a_gpu_build_every_layer(gpu_build: None) -> None:
    assert loaded(LlamaBackend(None)) == (LLAMA_ALL, Offload(True, 31, BUNDLED_LAYERS))
    assert loaded(LlamaBackend(None, gpu_layers=0)) == (0, Offload(True, 0, BUNDLED_LAYERS))
    assert loaded(LlamaBackend(None, gpu_layers=12)) == (12, Offload(True, 12, BUNDLED_LAYERS))


# -- the window ----------------------------------------------------------------------------------


@pytest.mark.gui
@pytest.mark.model
def test_the_window_says_cpu_only_plainly_and_settings_change_the_offload(
    root: tk.Tk, make_app: Callable[..., ChatApp]
) -> None:
    app = make_app(
        LlamaBackend(None), app_settings=AppSettings(model_hint_shown=True), persist_settings=True
    )
    assert app.flow.model_ready
    cpu_only = "CPU only: this llama-cpp-python was built without GPU support"
    assert app.status.get().endswith(f"trained · {cpu_only}")
    app.toggle_language()
    assert app.status.get().endswith("只用 CPU：这个 llama-cpp-python 编译时没有 GPU 支持")
    app.toggle_language()

    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.gpu is not None
    assert dialog.gpu.get() == ""  # automatic
    assert "CPU only" in dialog.notes["gpu"].cget("text")
    dialog.gpu.insert(0, "lots")
    dialog.save()
    assert not dialog.closed and "layers" in dialog.errors()["gpu"]  # nothing applied
    dialog.gpu.delete(0, "end")
    dialog.gpu.insert(0, "3")
    dialog.save()
    assert dialog.closed
    assert app.remembered.current.gpu_layers == 3 and load_settings()[0].gpu_layers == 3
    assert app.status.get() == "GPU layers: 3 — from the next time a model loads."

    app.models.load(None)
    pump_until(root, lambda: app.flow.model_ready, what="the model to load again")
    backend = app.controller.backend
    assert isinstance(backend, LlamaBackend) and backend.llm.model_params.n_gpu_layers == 3
    assert app.status.get().endswith(cpu_only)  # asked for 3, but this build has no GPU


@pytest.mark.gui
@pytest.mark.model
def test_a_gpu_build_is_said_to_offload_every_layer(
    root: tk.Tk, make_app: Callable[..., ChatApp], gpu_build: None
) -> None:
    app = make_app(LlamaBackend(None), app_settings=AppSettings(model_hint_shown=True))
    assert app.status.get().endswith("· GPU: all 31 layers")
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.gpu is not None
    assert "can offload" in dialog.notes["gpu"].cget("text")
    dialog.gpu.insert(0, "0")
    dialog.save()
    app.models.load(None)
    pump_until(root, lambda: app.flow.model_ready, what="the model on the CPU")
    assert app.status.get().endswith("· CPU only: GPU offload is off in Settings")


@pytest.mark.gui
def test_a_scripted_backend_says_nothing_of_gpus(make_app: Callable[..., ChatApp]) -> None:
    """Only a local model has layers to place; the scripted one (and a server) have none."""
    from tkchat.generate.scripted import ScriptedBackend

    app = make_app(ScriptedBackend(rate=0, tokens=3))
    assert "GPU" not in app.status.get() and "CPU" not in app.status.get()
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.gpu is None
    dialog.cancel()
