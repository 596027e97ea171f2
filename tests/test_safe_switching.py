"""Safe switching: the loaded model stays until the new one has loaded (Send waits meanwhile,
and the status line says so); a model that fails to load leaves the old one answering, and
is never listed as recent; a file cut short, or not GGUF at all, gets a sentence that says so
("… ends after 20 of 98 MB: the download did not finish").

The controller's part runs on doubles (any backend can be kept or freed); the window's on the
real bundled model and real files cut short, as a download that stopped would leave them.
"""

from __future__ import annotations

import os
import threading
import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Message, Sampling
from tkchat.events import Done, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest, LoadWatch, ModelLoadError
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path, check_complete, check_gguf
from tkchat.generate.scripted import ScriptedBackend
from tkchat.store.settings import AppSettings, forget_model, load_settings
from tkchat.transport.channel import EventChannel
from tkchat.ui.window.chat_window import ChatApp

WAIT_S = 60


@dataclass(eq=False)
class Model(ScriptedBackend):
    """A backend whose load waits for ``gate`` (if any), then fails with ``fails`` (if any);
    it counts its loads and closes."""

    fails: str | None = None
    gate: threading.Event | None = None
    loads: int = 0
    closes: int = 0

    def load(self, watch: LoadWatch | None = None) -> None:
        if self.gate is not None:
            assert self.gate.wait(WAIT_S)
        self.loads += 1
        if self.fails:
            raise ModelLoadError(self.fails)

    def close(self) -> None:
        self.closes += 1


def next_news(controller: GenerationController) -> ModelReady | ModelFailed:
    while True:
        event = controller.channel.get(timeout=WAIT_S)
        if isinstance(event, (ModelReady, ModelFailed)):
            return event


def ready(backend: Model) -> GenerationController:
    controller = GenerationController(backend, EventChannel())
    controller.load_async()
    assert isinstance(next_news(controller), ModelReady)
    return controller


# -- the controller ------------------------------------------------------------------------------


def test_the_old_model_is_freed_only_once_the_new_one_has_loaded() -> None:
    old, gate = Model(name="old"), threading.Event()
    new = Model(name="new", gate=gate)
    controller = ready(old)
    controller.switch_backend(new, replace=True)
    assert controller.kept is old and old.closes == 0  # still loaded while "new" loads
    gate.set()
    event = next_news(controller)
    assert isinstance(event, ModelReady) and event.name == "new"
    assert controller.backend is new and controller.loaded and controller.kept is None
    assert old.closes == 1  # freed now, not before


def test_a_model_that_fails_to_load_leaves_the_old_one_in_use() -> None:
    old, new = Model(name="old"), Model(name="broken.gguf", fails="broken.gguf ends early.")
    controller = ready(old)
    controller.switch_backend(new, replace=True)
    event = next_news(controller)
    assert isinstance(event, ModelFailed) and not event.cancelled
    assert (event.message, event.kept, event.name) == ("broken.gguf ends early.", "old", new.name)
    assert controller.backend is old and controller.loaded and controller.kept is None
    assert old.closes == 0  # it answers on
    assert controller.start(_request()) > 0  # and it does answer
    assert controller.current is not None and controller.current.join(WAIT_S)


def test_a_second_choice_while_the_first_loads_still_keeps_the_working_model() -> None:
    old, gate = Model(name="old"), threading.Event()
    first = Model(name="first", gate=gate)
    second = Model(name="second", fails="no good")
    controller = ready(old)
    controller.switch_backend(first, replace=True)
    controller.switch_backend(second, replace=True)  # gives the first one up
    gate.set()
    news = [next_news(controller), next_news(controller)]
    failed = [e for e in news if isinstance(e, ModelFailed)]
    assert {e.cancelled for e in failed} == {True, False}
    [real_failure] = [e for e in failed if not e.cancelled]
    assert real_failure.kept == "old" and controller.backend is old and controller.loaded
    assert old.closes == 0 and first.closes == 1  # the first was loaded, then freed


def test_closing_during_a_switch_frees_both_models() -> None:
    old, gate = Model(name="old"), threading.Event()
    new = Model(name="new", gate=gate)
    controller = ready(old)
    controller.switch_backend(new, replace=True)
    gate.set()
    assert controller.shutdown(timeout=WAIT_S)
    assert old.closes == 1 and new.closes >= 1


def test_a_lesson_switch_frees_a_model_kept_for_a_switch_it_interrupts() -> None:
    """A lesson's demo backend replaces a switch in progress: the model that was kept is
    freed (nobody holds it any more), the demo's backend loads."""
    old, gate = Model(name="old"), threading.Event()
    controller = ready(old)
    controller.switch_backend(Model(name="new", gate=gate), replace=True)
    demo = Model(name="scripted")
    controller.switch_backend(demo)
    gate.set()
    while not (isinstance(event := next_news(controller), ModelReady) and event.name == "scripted"):
        pass
    assert controller.backend is demo and controller.kept is None and old.closes == 1


def _request() -> GenerationRequest:
    return GenerationRequest((Message("user", "hi"),), Sampling(max_tokens=4))


# -- the file itself -----------------------------------------------------------------------------


def bundled() -> Path:
    path = bundled_model_path()
    assert path is not None, "the bundled model is part of the test install"
    return path


def cut(tmp_path: Path, size: int, name: str = "cut.gguf") -> Path:
    """The first ``size`` bytes of the bundled model: a download that stopped."""
    target = tmp_path / name
    with bundled().open("rb") as source, target.open("wb") as out:
        out.write(source.read(size))
    return target


def test_a_file_cut_short_says_how_much_of_it_there_is(tmp_path: Path) -> None:
    assert check_complete(bundled()) == bundled()  # whole: as long as its header says
    with pytest.raises(ModelLoadError) as cut_short:
        check_complete(cut(tmp_path, 20_000_000))
    assert str(cut_short.value) == (
        "cut.gguf ends after 20 of 98 MB: the download did not finish (or the file was cut). "
        "Download it again."
    )
    with pytest.raises(ModelLoadError, match=r"ends after 4,000 bytes, inside its header"):
        check_complete(cut(tmp_path, 4000))
    last_byte_missing = cut(tmp_path, bundled().stat().st_size - 1, "nearly.gguf")
    with pytest.raises(ModelLoadError, match="ends after 98 of 98 MB"):
        check_complete(last_byte_missing)


def test_a_file_that_is_not_gguf_says_so(tmp_path: Path) -> None:
    html = tmp_path / "model.gguf"
    html.write_text("<!doctype html><title>Sign in to download</title>")
    with pytest.raises(ModelLoadError, match="Not a GGUF model file"):
        check_gguf(html)


# -- in the window, on the real model --------------------------------------------------------------


@pytest.fixture
def small_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.gui
@pytest.mark.model
def test_a_download_that_did_not_finish_leaves_the_working_model_answering(
    root: tk.Tk, make_app: Callable[..., ChatApp], tmp_path: Path, small_home: None
) -> None:
    first = LlamaBackend(str(bundled()))
    app = make_app(first, persist_settings=True, app_settings=AppSettings(model_hint_shown=True))
    assert app.flow.model_ready
    broken = cut(tmp_path, 20_000_000, "SmolLM2-download.gguf")
    app.models.load(str(broken))
    assert app.send_button.instate(["disabled"])  # Send waits for the switch
    pump_until(root, lambda: app.flow.model_ready, timeout=WAIT_S, what="the old model back")

    assert app.controller.backend is first and first._llm is not None  # never unloaded
    assert app.send_button.instate(["!disabled"])
    banner = app.model_banner.text
    assert "SmolLM2-download.gguf ends after 20 of 98 MB: the download did not finish" in banner
    assert f"{first.name} is still loaded and in use" in banner
    assert app.status.get() == (
        f"{first.name} is still in use: the new model did not load (see above)."
    )
    app.toggle_language()
    assert app.status.get().startswith(f"仍在使用 {first.name}")
    app.toggle_language()
    assert str(broken) not in app.remembered.current.recent_models  # never listed as recent
    assert str(broken) not in load_settings()[0].recent_models

    app.input.insert("1.0", "Say hello.")
    assert app.flow.send()
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=WAIT_S, what="an answer")
    assert isinstance(app.flow.answering.finished[-1], Done) and app.transcript.answers[-1].text

    app.models.choose()
    picker = app.models.picker
    assert picker is not None
    pump_until(
        root, lambda: not picker.timers.pending("poll"), timeout=WAIT_S, what="the model search"
    )
    assert [m for m in picker.rows() if m.path == broken] == []
    # the picker knows it failed, and why (a row for it, in a folder searched, is marked)
    assert "ends after 20 of 98 MB" in picker.failed[os.path.abspath(broken)]
    picker.cancel()


@pytest.mark.gui
@pytest.mark.model
def test_a_file_that_is_not_gguf_leaves_the_working_model_too(
    root: tk.Tk, make_app: Callable[..., ChatApp], tmp_path: Path, small_home: None
) -> None:
    first = LlamaBackend(str(bundled()))
    app = make_app(first, app_settings=AppSettings(model_hint_shown=True))
    page = tmp_path / "model.gguf"
    page.write_text("<!doctype html><title>Sign in to download</title>")
    app.models.load(str(page))
    pump_until(root, lambda: app.flow.model_ready, timeout=WAIT_S, what="the old model back")
    assert app.controller.backend is first and "Not a GGUF model file" in app.model_banner.text


@pytest.mark.gui
@pytest.mark.model
def test_a_recent_model_that_no_longer_loads_is_forgotten(
    root: tk.Tk, make_app: Callable[..., ChatApp], tmp_path: Path
) -> None:
    """The model opened at start (the most recent one) was cut since: the window says why,
    and the recent models forget it, so the next start opens the one before."""
    broken = cut(tmp_path, 20_000_000, "was-fine.gguf")
    settings = AppSettings(model_hint_shown=True, recent_models=[str(broken), str(bundled())])
    app = make_app(LlamaBackend(str(broken)), persist_settings=True, app_settings=settings)
    assert not app.flow.model_ready and "ends after 20 of 98 MB" in app.model_banner.text
    assert app.remembered.current.recent_models == [str(bundled())]
    assert load_settings()[0].recent_models == [str(bundled())]


def test_forget_model_names_the_same_file_by_any_path(tmp_path: Path) -> None:
    model = tmp_path / "a.gguf"
    model.write_bytes(b"GGUF")
    link = tmp_path / "link.gguf"
    link.symlink_to(model)
    settings = AppSettings(recent_models=[str(link), str(tmp_path / "b.gguf")])
    assert forget_model(settings, model).recent_models == [str(tmp_path / "b.gguf")]
    assert settings.recent_models[0] == str(link)  # a copy: the settings are not changed
