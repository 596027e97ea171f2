"""The models people already have: the picker finds the GGUF files of GPT4All, Jan, Ollama
and ``~/models`` (beside the Hugging Face cache and LM Studio), each labelled with where it
came from, in English and Chinese. Every layout is built in a temporary home, as each app
writes it (tkchat/models/stores.py names the sources)."""

from __future__ import annotations

import functools
import json
import tkinter as tk
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.generate.model_file import GGUF_MAGIC
from tkchat.models import finder as model_finder
from tkchat.models.finder import FoundModel, find_models, model_places
from tkchat.models.stores import jan_label, ollama_models, ollama_name
from tkchat.ui.base.translator import Translator
from tkchat.ui.models.picker import ModelPicker

DIGEST = "a" * 64
OTHER = "b" * 64


@pytest.fixture(autouse=True)
def no_bundled_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_finder, "bundled_model_path", lambda: None)


def gguf(path: Path, extra: int = 16) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(GGUF_MAGIC + b"\x03\x00\x00\x00" + b"\x00" * extra)
    return path


def manifest(root: Path, name: str, layers: list[dict[str, object]]) -> Path:
    """An Ollama manifest at ``manifests/<host>/<namespace>/<model>/<tag>``."""
    path = root / "manifests" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json"},
                "layers": layers,
            }
        )
    )
    return path


def model_layer(digest: str) -> dict[str, object]:
    return {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}


def ollama_store(root: Path) -> None:
    """Ollama's layout: a library model with two tags on one blob, a user's model, one from
    Hugging Face, a vision model's projector beside its weights, and broken entries."""
    gguf(root / "blobs" / f"sha256-{DIGEST}", extra=2000)
    gguf(root / "blobs" / f"sha256-{OTHER}")
    template = {
        "mediaType": "application/vnd.ollama.image.template",
        "digest": "sha256:" + "c" * 64,
    }
    projector = {"mediaType": "application/vnd.ollama.image.projector", "digest": "sha256:" + OTHER}
    manifest(root, "registry.ollama.ai/library/llama3.2/3b", [model_layer(DIGEST), template])
    manifest(root, "registry.ollama.ai/library/llama3.2/latest", [template, model_layer(DIGEST)])
    manifest(root, "registry.ollama.ai/me/mine/latest", [projector, model_layer(OTHER)])
    manifest(root, "hf.co/bartowski/SmolLM2-GGUF/Q4_K_M", [model_layer(OTHER)])
    manifest(root, "registry.ollama.ai/library/gone/7b", [model_layer("d" * 64)])  # no blob
    manifest(root, "registry.ollama.ai/library/tensors/1b", [template])  # no GGUF layer
    broken = root / "manifests" / "registry.ollama.ai" / "library" / "broken" / "1b"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")


def found(home: Path, environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    models = find_models(folder=None, recent=[], environ=environ or {}, home=home)
    return [(model.name, model.source) for model in models]


# -- the layouts -------------------------------------------------------------------------------


def test_ollama_models_are_listed_by_their_ollama_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ollama_store(home / ".ollama" / "models")
    assert found(home) == [
        ("hf.co/bartowski/SmolLM2-GGUF:Q4_K_M", "ollama"),  # (its blob is me/mine's too)
        ("llama3.2:3b", "ollama"),  # one blob, two tags: listed once, by the first name
    ]
    names = [name for name, _blob in ollama_models(home / ".ollama" / "models")]
    assert names == [
        "hf.co/bartowski/SmolLM2-GGUF:Q4_K_M",
        "llama3.2:3b",
        "llama3.2:latest",
        "me/mine:latest",
    ]
    models = find_models(folder=None, recent=[], environ={}, home=home)
    assert all(isinstance(m, FoundModel) and m.path.name.startswith("sha256-") for m in models)


def test_ollama_names_as_ollama_list_shows_them() -> None:
    assert ollama_name("registry.ollama.ai", "library", "llama3.2", "3b") == "llama3.2:3b"
    assert ollama_name("registry.ollama.ai", "me", "mine", "latest") == "me/mine:latest"
    assert ollama_name("hf.co", "org", "Repo-GGUF", "Q8_0") == "hf.co/org/Repo-GGUF:Q8_0"


def test_ollama_models_folder_comes_from_its_variable_or_the_service(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ollama_store(home / ".ollama" / "models")
    elsewhere = tmp_path / "big-disk" / "ollama"
    gguf(elsewhere / "blobs" / f"sha256-{DIGEST}")
    manifest(elsewhere, "registry.ollama.ai/library/qwen2.5/0.5b", [model_layer(DIGEST)])
    # OLLAMA_MODELS replaces the default folder, as it does for Ollama itself
    assert found(home, {"OLLAMA_MODELS": str(elsewhere)}) == [("qwen2.5:0.5b", "ollama")]
    places = [place for source, place in model_places(folder=None, environ={}, home=home)]
    assert home / ".ollama" / "models" in places
    assert Path("/usr/share/ollama/.ollama/models") in places  # Linux: the system service


def test_an_ollama_blob_used_recently_keeps_its_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ollama_store(home / ".ollama" / "models")
    blob = home / ".ollama" / "models" / "blobs" / f"sha256-{DIGEST}"
    models = find_models(folder=None, recent=[str(blob)], environ={}, home=home)
    assert (models[0].name, models[0].source, models[0].path) == ("llama3.2:3b", "recent", blob)


@pytest.mark.parametrize(
    ("where", "environ"),
    [
        (".local/share/nomic.ai/GPT4All", {}),  # Linux
        ("Library/Application Support/nomic.ai/GPT4All", {}),  # macOS
        ("AppData/Local/nomic.ai/GPT4All", {}),  # Windows, LOCALAPPDATA unset
        ("xdg-data/nomic.ai/GPT4All", {"XDG_DATA_HOME": "~/xdg-data"}),
        ("local-app-data/nomic.ai/GPT4All", {"LOCALAPPDATA": "~/local-app-data"}),
        (".cache/gpt4all", {}),  # the gpt4all Python package
    ],
)
def test_gpt4alls_download_folder(tmp_path: Path, where: str, environ: dict[str, str]) -> None:
    home = tmp_path / "home"
    gguf(home / where / "Llama-3.2-3B-Instruct-Q4_0.gguf")
    assert found(home, environ) == [("Llama-3.2-3B-Instruct-Q4_0.gguf", "gpt4all")]


@pytest.mark.parametrize(
    "data",
    [
        ".local/share/Jan/data",  # Linux (Jan 0.6 and later)
        "Library/Application Support/Jan/data",  # macOS
        "AppData/Roaming/Jan/data",  # Windows
        ".config/Jan/data",  # Linux, earlier releases
    ],
)
def test_jans_models_are_named_by_their_folder(tmp_path: Path, data: str) -> None:
    home = tmp_path / "home"
    gguf(home / data / "llamacpp" / "models" / "unsloth" / "gemma-3-1b-it-GGUF" / "model.gguf")
    gguf(home / data / "llamacpp" / "models" / "Jan-v1-4B" / "model.gguf")
    gguf(home / data / "llamacpp" / "models" / "Jan-v1-4B" / "mmproj.gguf")  # not a model
    assert sorted(found(home)) == [("Jan-v1-4B", "jan"), ("unsloth/gemma-3-1b-it-GGUF", "jan")]


def test_jan_moved_elsewhere_and_jan_before_0_6(tmp_path: Path) -> None:
    home = tmp_path / "home"
    moved = tmp_path / "D" / "jan-data"
    settings = home / ".local" / "share" / "Jan" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"data_folder": str(moved)}))
    gguf(moved / "llamacpp" / "models" / "qwen3-0.6b" / "model.gguf")
    gguf(home / "jan" / "models" / "tinyllama-1.1b" / "tinyllama-1.1b-chat.Q4_K_M.gguf")
    assert sorted(found(home)) == [
        ("qwen3-0.6b", "jan"),
        ("tinyllama-1.1b-chat.Q4_K_M.gguf", "jan"),
    ]
    root = moved / "llamacpp" / "models"
    assert jan_label(root / "a" / "b" / "model.gguf", root) == "a/b"
    assert jan_label(root / "a" / "own-name.gguf", root) is None  # a file with a name keeps it


def test_home_models_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    gguf(home / "models" / "Phi-3-mini-4k-instruct-q4.gguf")
    assert found(home) == [("Phi-3-mini-4k-instruct-q4.gguf", "home")]


# -- in the picker, in both languages ------------------------------------------------------------


@pytest.mark.gui
def test_the_picker_labels_each_model_with_where_it_came_from(root: tk.Tk, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ollama_store(home / ".ollama" / "models")
    gguf(home / ".local" / "share" / "nomic.ai" / "GPT4All" / "orca-mini-3b.gguf")
    gguf(
        home / ".local" / "share" / "Jan" / "data" / "llamacpp" / "models" / "qwen3" / "model.gguf"
    )
    gguf(home / "models" / "phi-3.gguf")
    chosen: list[tuple[str | None, str | None]] = []
    translate = Translator("en")
    picker = ModelPicker(
        root,
        translate=translate,
        current=None,
        recent=[],
        folder=None,
        on_choose=lambda path, label: chosen.append((path, label)),
        on_folder=lambda _folder: None,
        finder=functools.partial(find_models, environ={}, home=home),
    )
    pump_until(
        root, lambda: not picker.timers.pending("poll"), what="the search"
    )  # (polled for until shown)
    ids = list(picker.tree.get_children())
    rows = {picker.cell(iid, "#0"): picker.cell(iid, "where") for iid in ids}
    assert rows == {
        "hf.co/bartowski/SmolLM2-GGUF:Q4_K_M": "Ollama",
        "llama3.2:3b": "Ollama",
        "orca-mini-3b.gguf": "GPT4All",
        "qwen3": "Jan",
        "phi-3.gguf": "~/models",
    }
    translate.set_language("zh")
    where = {picker.cell(iid, "#0"): picker.cell(iid, "where") for iid in ids}
    assert where["llama3.2:3b"] == "Ollama 模型库" and where["qwen3"] == "Jan 模型目录"
    assert where["orca-mini-3b.gguf"] == "GPT4All 模型目录"
    assert where["phi-3.gguf"] == "~/models 文件夹"
    [llama] = [iid for iid in ids if picker.cell(iid, "#0") == "llama3.2:3b"]
    picker.tree.selection_set(llama)
    picker.choose_selected()
    blob = home / ".ollama" / "models" / "blobs" / f"sha256-{DIGEST}"
    assert chosen == [(str(blob), "llama3.2:3b")]  # the window shows and loads it by this name


def test_a_jan_model_opened_by_its_path_keeps_jans_name(tmp_path: Path) -> None:
    """Reported (issue 37): a Jan model was "smollm2-135m-jan" in the picker and
    "model.gguf" in the title after a restart (the last model opens by its path, with no
    label). The window's model options now name it by its folder, as the picker does."""
    import argparse

    from tkchat.cli import build_parser
    from tkchat.cli.from_args import backend_options
    from tkchat.generate.factory import LlamaOptions
    from tkchat.models.stores import stored_label

    path = tmp_path / "Jan" / "data" / "llamacpp" / "models" / "smollm2-135m-jan" / "model.gguf"
    assert stored_label(str(path)) == "smollm2-135m-jan"
    assert stored_label(str(tmp_path / "models" / "a" / "b" / "model.gguf")) == "a/b"
    assert stored_label(str(tmp_path / "models" / "tiny.Q4_K_M.gguf")) is None  # named already
    args: argparse.Namespace = build_parser().parse_args([])
    options = backend_options(args, model=str(path))
    assert isinstance(options, LlamaOptions) and options.label == "smollm2-135m-jan"
    plain = backend_options(args, model=str(tmp_path / "tiny.gguf"))
    assert isinstance(plain, LlamaOptions) and plain.label is None
