"""Application settings: every field survives a restart, and no disk problem loses a file.

Real files in ``tmp_path`` throughout. Faults a test cannot cause for real (a full disk) are
injected by replacing one ``os`` function for the duration of a test; a read-only folder and
an unreadable file are real, in a child process that drops root's privileges (root ignores
file permissions).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tkchat.conversation import DEFAULT_SYSTEM_PROMPT, Sampling
from tkchat.store import files as damaged
from tkchat.store import settings as settings_module
from tkchat.store.db import settings_from_sampling
from tkchat.store.settings import (
    MAX_RECENT_MODELS,
    AppSettings,
    load_settings,
    remember_model,
    save_settings,
    settings_path,
)

REPO = Path(__file__).resolve().parent.parent
needs_symlinks = pytest.mark.skipif(
    sys.platform == "win32", reason="symlinks need extra privileges on Windows"
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "settings.json"


def everything_changed(folder: Path) -> AppSettings:
    """Settings in which every field differs from its default."""
    return AppSettings(
        language="zh",
        font_size=17,
        system_prompt="Réponds en français. 用中文也可以。",
        sampling=Sampling(
            temperature=0.7, top_p=0.5, top_k=12, repeat_penalty=1.3, max_tokens=0, seed=42
        ),
        recent_models=[str(folder / "b.gguf"), str(folder / "a model.gguf")],
        model_folder=str(folder),
        geometry="1140x680+10+20",
        window_size="1140x680",
        theme="dark",
        chat_only=True,
        hf_endpoint="https://hf-mirror.com",
        model_hint_shown=True,
        model_contexts={"a model.gguf": 2048, "模型.gguf": 32768},
        gpu_layers=20,
        kept_mb=64,
    )


def valid_file_data(folder: Path) -> dict[str, Any]:
    """What save_settings writes for everything_changed (built by hand, not by the module)."""
    return {
        "language": "zh",
        "font_size": 17,
        "system_prompt": "Réponds en français. 用中文也可以。",
        "sampling": {
            "temperature": 0.7,
            "top_p": 0.5,
            "top_k": 12,
            "repeat_penalty": 1.3,
            "max_tokens": 0,
            "seed": 42,
        },
        "recent_models": [str(folder / "b.gguf"), str(folder / "a model.gguf")],
        "model_folder": str(folder),
        "geometry": "1140x680+10+20",
        "window_size": "1140x680",
        "theme": "dark",
        "chat_only": True,
        "hf_endpoint": "https://hf-mirror.com",
        "model_hint_shown": True,
        "model_contexts": {"a model.gguf": 2048, "模型.gguf": 32768},
        "gpu_layers": 20,
        "kept_mb": 64,
    }


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def folder_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- where, and the round trip ---------------------------------------------------------------


def test_settings_live_in_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path / "custom"))
    assert settings_path() == tmp_path / "custom" / "settings.json"
    assert save_settings(AppSettings(font_size=11)) is None  # the default path is used
    assert (tmp_path / "custom" / "settings.json").is_file()
    assert load_settings() == (AppSettings(font_size=11), None)


def test_every_field_round_trips(path: Path, tmp_path: Path) -> None:
    settings = everything_changed(tmp_path)
    assert settings != AppSettings()
    for name in AppSettings.__dataclass_fields__:  # the fixture really changes every field
        assert getattr(settings, name) != getattr(AppSettings(), name), name
    assert save_settings(settings, path) is None
    assert load_settings(path) == (settings, None)
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk == valid_file_data(tmp_path)  # readable, hand-editable JSON
    assert on_disk["sampling"] == settings_from_sampling(settings.sampling)


def test_defaults_round_trip_and_mean_follow_the_system(path: Path) -> None:
    defaults = AppSettings()
    assert defaults.language is None and defaults.font_size is None
    assert defaults.system_prompt == DEFAULT_SYSTEM_PROMPT and defaults.sampling == Sampling()
    assert defaults.recent_models == [] and defaults.model_folder is None
    assert defaults.geometry is None
    assert save_settings(defaults, path) is None
    assert load_settings(path) == (defaults, None)


def test_a_missing_file_gives_the_defaults_silently_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no such folder" / "settings.json"
    assert load_settings(missing) == (AppSettings(), None)
    assert not missing.parent.exists()


def test_a_file_from_an_older_version_keeps_what_it_has(path: Path) -> None:
    write_json(path, {"language": "en", "font_size": 9})  # the other keys did not exist yet
    assert load_settings(path) == (AppSettings(language="en", font_size=9), None)


def test_a_byte_order_mark_from_notepad_is_accepted(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"font_size": 20}).encode())
    assert load_settings(path) == (AppSettings(font_size=20), None)


# --- a file that is not settings at all -------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(b'{"font_size": 12,', "not valid JSON", id="truncated"),
        pytest.param(b"", "not valid JSON", id="empty"),
        pytest.param(b"\xff\xfe\x00garbage", "not valid JSON", id="not-utf8"),
        pytest.param(b"[" * 100_000, "not valid JSON", id="nested-too-deep"),
        pytest.param(b'{"font_size": 1' + b"0" * 5000 + b"}", "not valid JSON", id="huge-int"),
        pytest.param(b"[1, 2]", "holds an array, not a JSON object", id="array"),
        pytest.param(b"null", "holds null, not a JSON object", id="null"),
        pytest.param(b'"dark"', "holds a string, not a JSON object", id="string"),
        pytest.param(b"12", "holds a number, not a JSON object", id="number"),
    ],
)
def test_a_corrupt_file_is_kept_aside_byte_for_byte(
    path: Path, content: bytes, problem: str
) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    settings, warning = load_settings(path)
    assert settings == AppSettings()
    assert warning is not None and problem in warning and "default settings are used" in warning
    (aside,) = path.parent.glob("settings.json.damaged-*")
    assert aside.read_bytes() == content
    assert str(aside) in warning and str(path) in warning
    assert not path.exists()
    # The next save starts a fresh file and leaves the kept one alone.
    assert save_settings(AppSettings(font_size=30), path) is None
    assert load_settings(path) == (AppSettings(font_size=30), None)
    assert aside.read_bytes() == content


def test_two_corrupt_files_in_one_second_both_survive(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"first")
    assert load_settings(path)[1] is not None
    path.write_bytes(b"second")
    assert load_settings(path)[1] is not None
    kept = sorted(p.read_bytes() for p in path.parent.glob("settings.json.damaged-*"))
    assert kept == [b"first", b"second"]


def test_a_folder_in_place_of_the_file_is_moved_aside(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "inside.txt").write_text("keep me")
    settings, warning = load_settings(path)
    assert settings == AppSettings()
    assert warning is not None and "could not be read" in warning
    (aside,) = path.parent.glob("settings.json.damaged-*")
    assert (aside / "inside.txt").read_text() == "keep me"
    assert save_settings(AppSettings(language="en"), path) is None  # the name is free again


def test_a_corrupt_file_that_cannot_be_moved_is_left_untouched(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{corrupt")

    def refuse(_source: Path, _target: Path) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(damaged, "_move_file", refuse)  # looked up where move_aside is
    settings, warning = load_settings(path)
    assert settings == AppSettings()
    assert warning is not None and "left as it is" in warning and "not valid JSON" in warning
    assert path.read_bytes() == b"{corrupt"
    assert folder_names(path.parent) == ["settings.json"]


def test_an_unexpected_error_while_loading_still_starts_with_defaults(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(path, {"font_size": 12})

    def broken(_data: object) -> None:
        raise KeyError("a bug in this version")

    monkeypatch.setattr(settings_module, "settings_from_json", broken)
    settings, warning = load_settings(path)
    assert settings == AppSettings()
    assert warning is not None and "could not be loaded" in warning and "bug" in warning
    assert path.read_text(encoding="utf-8") == '{"font_size": 12}'  # the file is not touched


# --- one bad value -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("language", "fr"),
        ("language", "EN"),
        ("language", ""),
        ("language", 1),
        ("font_size", 7),
        ("font_size", 41),
        ("font_size", -12),
        ("font_size", 12.0),
        ("font_size", "12"),
        ("font_size", True),
        ("system_prompt", None),
        ("system_prompt", 5),
        ("system_prompt", ["be brief"]),
        ("sampling", "hot"),
        ("sampling", [0.3, 0.9]),
        ("sampling", None),
        ("recent_models", "/models/a.gguf"),
        ("recent_models", {"/models/a.gguf": 1}),
        ("recent_models", None),
        ("model_folder", "relative/models"),
        ("model_folder", ""),
        ("model_folder", "/models/\0bad"),
        ("model_folder", 3),
        ("geometry", "big"),
        ("geometry", "1140x680\n"),
        ("geometry", "0x680"),
        ("geometry", "1140x680+10"),
        ("geometry", "1140*680"),
        ("geometry", 1140),
        ("window_size", "1140x680+10+20"),  # a size only: the place is not the design's
        ("window_size", "0x680"),
        ("window_size", [1140, 680]),
        ("theme", "solarized"),
        ("theme", "system"),  # "follow the system" is stored as null
        ("theme", 1),
        ("chat_only", "yes"),
        ("chat_only", 1),
        ("chat_only", None),
        ("gpu_layers", -2),
        ("gpu_layers", 10_001),
        ("gpu_layers", "all"),
        ("gpu_layers", 2.0),
        ("gpu_layers", True),
        ("kept_mb", -1),
        ("kept_mb", 2_000_000),
        ("kept_mb", 1.5),
    ],
)
def test_one_invalid_value_falls_back_alone(
    path: Path, tmp_path: Path, key: str, value: object
) -> None:
    data = valid_file_data(tmp_path)
    data[key] = value
    write_json(path, data)
    settings, warning = load_settings(path)
    expected = replace(everything_changed(tmp_path), **{key: getattr(AppSettings(), key)})
    assert settings == expected  # this field is the default, every other one is kept
    assert warning is not None and warning.endswith(f"defaults are used: {key}.")
    assert str(path) in warning
    assert path.read_text(encoding="utf-8") == json.dumps(data)  # not moved, not rewritten


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("language", None),
        ("language", "en"),
        ("font_size", 8),
        ("font_size", 40),
        ("font_size", None),
        ("system_prompt", ""),
        ("recent_models", []),
        ("model_folder", None),
        ("geometry", None),
        ("geometry", "1140x680"),
        ("geometry", "800x600+-8+-8"),
        ("geometry", "800x600-0-0"),
        ("geometry", "800x600+-1920+0"),
        ("window_size", None),
        ("window_size", "570x340"),
        ("theme", None),
        ("theme", "light"),
        ("chat_only", False),
    ],
)
def test_edge_values_are_valid(path: Path, tmp_path: Path, key: str, value: object) -> None:
    data = valid_file_data(tmp_path)
    data[key] = value
    write_json(path, data)
    settings, warning = load_settings(path)
    assert warning is None
    assert getattr(settings, key) == value


def test_several_invalid_values_are_all_named(path: Path, tmp_path: Path) -> None:
    data = valid_file_data(tmp_path)
    data.update(language="klingon", geometry="huge")
    write_json(path, data)
    settings, warning = load_settings(path)
    assert warning is not None and warning.endswith("defaults are used: language, geometry.")
    assert settings.font_size == 17 and settings.language is None and settings.geometry is None


def test_sampling_values_fall_back_one_by_one(path: Path) -> None:
    # NaN is not standard JSON, but Python's parser accepts it: a hand edit could produce it.
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"sampling": {"temperature": "hot", "top_p": NaN, "top_k": 40.5, '
        '"repeat_penalty": 2, "max_tokens": true, "seed": 7, "min_p": 0.05}}'
    )
    settings, warning = load_settings(path)
    assert settings.sampling == Sampling(repeat_penalty=2.0, seed=7)
    assert isinstance(settings.sampling.repeat_penalty, float)  # an int for a float is fine
    assert warning is not None
    named = warning.split("defaults are used: ")[1].rstrip(".").split(", ")
    assert sorted(named) == [
        "sampling.max_tokens",
        "sampling.temperature",
        "sampling.top_k",
        "sampling.top_p",
    ]  # min_p is unknown (newer), not invalid


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("temperature", 99),
        ("temperature", -0.5),
        ("top_p", 0.0),
        ("top_p", 1.5),
        ("max_tokens", 10**9),
        ("max_tokens", -1),
        ("seed", -3),
        ("seed", 2**32),
    ],
)
def test_sampling_values_out_of_range_fall_back_and_are_named(
    path: Path, name: str, value: object
) -> None:
    """The same limits as the settings dialog (tkchat/generate/backend.py)."""
    write_json(path, {"sampling": {name: value, "top_k": 12}})
    settings, warning = load_settings(path)
    assert getattr(settings.sampling, name) == getattr(Sampling(), name)
    assert settings.sampling.top_k == 12  # the rest is kept
    assert warning is not None and warning.endswith(f"defaults are used: sampling.{name}.")


def test_bad_recent_models_are_dropped_and_good_ones_kept(path: Path, tmp_path: Path) -> None:
    good = [str(tmp_path / "a.gguf"), str(tmp_path / "b.gguf")]
    write_json(path, {"recent_models": [good[0], 3, "relative.gguf", "", None, good[1]]})
    settings, warning = load_settings(path)
    assert settings.recent_models == good
    assert warning is not None and warning.endswith("defaults are used: recent_models.")


def test_recent_models_are_tidied_silently(path: Path, tmp_path: Path) -> None:
    paths = [str(tmp_path / f"m{i}.gguf") for i in range(12)]
    write_json(path, {"recent_models": [paths[0], paths[1], paths[0], *paths[2:]]})
    settings, warning = load_settings(path)
    assert warning is None
    assert settings.recent_models == paths[:MAX_RECENT_MODELS]  # first occurrence, capped


def test_unknown_keys_are_ignored_and_kept_for_the_newer_version(path: Path) -> None:
    newer = {"font_size": 14, "accent": "teal", "plugins": {"spell": [1, 2]}}
    write_json(path, newer)
    settings, warning = load_settings(path)
    assert (settings, warning) == (AppSettings(font_size=14), None)
    assert save_settings(replace(settings, font_size=15), path) is None
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk["accent"] == "teal" and on_disk["plugins"] == {"spell": [1, 2]}
    assert on_disk["font_size"] == 15


# --- saving ------------------------------------------------------------------------------------


def test_save_creates_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c" / "settings.json"
    assert save_settings(AppSettings(language="en"), target) is None
    assert load_settings(target) == (AppSettings(language="en"), None)


def test_save_leaves_only_the_settings_file(path: Path, tmp_path: Path) -> None:
    for size in (10, 11, 12):  # replacing an existing file, not only creating one
        assert save_settings(AppSettings(font_size=size), path) is None
    assert folder_names(path.parent) == ["settings.json"]
    assert load_settings(path)[0].font_size == 12


@pytest.fixture
def old_file(path: Path, tmp_path: Path) -> Iterator[bytes]:
    """A saved settings file; after the test, the folder holds it unchanged and nothing else."""
    assert save_settings(everything_changed(tmp_path), path) is None
    before = path.read_bytes()
    yield before
    assert path.read_bytes() == before
    assert folder_names(path.parent) == ["settings.json"]  # the temporary file was removed


def full_disk(*_args: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_full_disk_leaves_the_old_file_whole(
    path: Path, old_file: bytes, failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, failing, full_disk)
    warning = save_settings(AppSettings(font_size=30), path)
    assert warning is not None
    assert "is full" in warning and "saved earlier are intact" in warning
    assert str(path.parent) in warning


def test_an_unserialisable_value_is_a_warning_not_a_crash(path: Path, old_file: bytes) -> None:
    warning = save_settings(AppSettings(sampling=Sampling(temperature=float("nan"))), path)
    assert warning is not None and "could not be saved" in warning


def test_a_folder_where_the_file_should_be_is_not_replaced(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "inside.txt").write_text("keep me")
    warning = save_settings(AppSettings(font_size=12), path)
    assert warning is not None and "may not write" in warning
    assert (path / "inside.txt").read_text() == "keep me"
    assert folder_names(path.parent) == ["settings.json"]  # no temporary file left behind


def test_a_folder_that_cannot_be_created_is_a_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the folder should be")
    warning = save_settings(AppSettings(font_size=12), blocker / "settings.json")
    assert warning is not None and "may not write" in warning and str(blocker) in warning
    assert blocker.read_text() == "a file where the folder should be"


def test_saves_from_many_threads_never_tear_the_file(path: Path) -> None:
    warnings: list[str | None] = []
    lock = threading.Lock()

    def saver(size: int) -> None:
        for _ in range(15):
            result = save_settings(AppSettings(font_size=size, system_prompt="x" * 5000), path)
            with lock:
                warnings.append(result)

    threads = [threading.Thread(target=saver, args=(10 + i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert warnings == [None] * 8 * 15
    settings, warning = load_settings(path)
    assert warning is None and settings.font_size in range(10, 18)
    assert folder_names(path.parent) == ["settings.json"]


# --- real permissions, as an unprivileged process -------------------------------------------------

CHILD = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from tkchat.store.settings import AppSettings, load_settings, save_settings

    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # nobody: now permissions apply
    operation, path = sys.argv[1], Path(sys.argv[2])
    if operation == "save":
        print(json.dumps({"warning": save_settings(AppSettings(font_size=30), path)}))
    else:
        settings, warning = load_settings(path)
        print(json.dumps({"warning": warning, "font_size": settings.font_size}))
    """
)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder an unprivileged child can reach (pytest's tmp_path is private to its owner)."""
    base = Path(tempfile.mkdtemp(prefix="tkchat-settings-"))
    base.chmod(0o755)
    folder = base / "data"
    folder.mkdir()
    yield folder
    for item in (folder, *folder.iterdir()):
        item.chmod(0o755 if item.is_dir() else 0o644)
    shutil.rmtree(base)


def run_unprivileged(operation: str, path: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, operation, str(path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr  # neither function may raise
    return json.loads(result.stdout)


needs_permissions = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")


@needs_permissions
def test_a_read_only_folder_is_a_warning_and_keeps_the_old_file(shared_folder: Path) -> None:
    path = shared_folder / "settings.json"
    assert save_settings(AppSettings(font_size=14), path) is None
    path.chmod(0o644)
    before = path.read_bytes()
    shared_folder.chmod(0o555)
    report = run_unprivileged("save", path)
    assert report["warning"] is not None and "may not write" in report["warning"]
    assert "saved earlier are intact" in report["warning"]
    assert path.read_bytes() == before
    assert folder_names(shared_folder) == ["settings.json"]
    assert run_unprivileged("load", path) == {"warning": None, "font_size": 14}


@needs_permissions
def test_an_unreadable_file_is_moved_aside(shared_folder: Path) -> None:
    path = shared_folder / "settings.json"
    path.write_bytes(b'{"font_size": 14}')
    path.chmod(0o000)
    shared_folder.chmod(0o777)  # the child may rename in the folder, but not read the file
    report = run_unprivileged("load", path)
    assert report["font_size"] is None
    assert report["warning"] is not None and "could not be read" in report["warning"]
    (aside,) = shared_folder.glob("settings.json.damaged-*")
    aside.chmod(0o644)
    assert aside.read_bytes() == b'{"font_size": 14}'
    assert not path.exists()


# --- recent models -----------------------------------------------------------------------------


def test_remember_model_puts_the_newest_first_without_changing_the_original(tmp_path: Path) -> None:
    original = AppSettings(font_size=12, recent_models=[str(tmp_path / "old.gguf")])
    updated = remember_model(original, tmp_path / "new.gguf")
    assert updated.recent_models == [
        str((tmp_path / "new.gguf").resolve()),
        str(tmp_path / "old.gguf"),
    ]
    assert updated.font_size == 12
    assert original.recent_models == [str(tmp_path / "old.gguf")]  # a copy, not a mutation


def test_remember_model_moves_a_known_file_to_the_front(tmp_path: Path) -> None:
    a, b, c = (str((tmp_path / f"{n}.gguf").resolve()) for n in "abc")
    settings = AppSettings(recent_models=[a, b, c])
    assert remember_model(settings, c).recent_models == [c, a, b]
    assert remember_model(settings, a).recent_models == [a, b, c]


@needs_symlinks
def test_remember_model_dedupes_by_resolved_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "models" / "real.gguf"
    real.parent.mkdir()
    real.write_bytes(b"GGUF")
    link = tmp_path / "link.gguf"
    link.symlink_to(real)
    monkeypatch.chdir(real.parent)
    settings = remember_model(AppSettings(), real)
    settings = remember_model(settings, link)  # the same file through a symlink
    settings = remember_model(settings, "real.gguf")  # and relative to the working folder
    settings = remember_model(settings, tmp_path / "models" / ".." / "models" / "real.gguf")
    assert settings.recent_models == [str(real.resolve())]


@needs_symlinks
def test_remember_model_recognises_an_older_entry_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.gguf"
    real.write_bytes(b"GGUF")
    link = tmp_path / "link.gguf"
    link.symlink_to(real)
    other = str(tmp_path / "other.gguf")
    # A hand-edited file (or an older tkchat) stored the link, not the file it points to.
    settings = AppSettings(recent_models=[str(link), other])
    assert remember_model(settings, real).recent_models == [str(real.resolve()), other]


def test_remember_model_keeps_at_most_eight(tmp_path: Path) -> None:
    settings = AppSettings()
    for i in range(MAX_RECENT_MODELS + 3):
        settings = remember_model(settings, tmp_path / f"m{i}.gguf")
    expected = [
        str((tmp_path / f"m{i}.gguf").resolve()) for i in reversed(range(3, MAX_RECENT_MODELS + 3))
    ]
    assert settings.recent_models == expected
    assert len(settings.recent_models) == MAX_RECENT_MODELS == 8


def test_remembered_models_survive_a_restart(path: Path, tmp_path: Path) -> None:
    settings = remember_model(
        remember_model(AppSettings(), tmp_path / "a.gguf"), tmp_path / "b.gguf"
    )
    assert save_settings(settings, path) is None
    loaded, warning = load_settings(path)
    assert warning is None and loaded.recent_models == settings.recent_models
