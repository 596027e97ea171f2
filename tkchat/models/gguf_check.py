"""Whether a file the model picker lists can be a loadable GGUF model: checked during the
search, so a file that cannot load is marked (⚠) before the user chooses it.

Reported (issue 37): the picker listed a truncated file like any other until it was chosen
and failed to load. Two checks, both on the search's worker thread (never the Tk thread):

- :func:`header_problem`, while the folders are walked: the first 24 bytes of the header
  (ggml's gguf.h: magic ``GGUF``, u32 version, u64 tensor count, u64 key count). A version
  llama.cpp does not read, a file that ends inside those bytes, or counts that cannot fit
  the file (each key takes at least 13 bytes, each tensor's description 37) are found here,
  at the cost of one small read per file.
- :func:`extent_problem`, once the walk is done: the whole header is walked
  (:func:`~tkchat.generate.model_file.gguf_extent`) to learn where the last tensor's data
  ends, and a file shorter than that is a download that did not finish. This walk reads
  every metadata string's length (a tokenizer's vocabulary: ~0.1 s for the bundled model on
  a loaded machine, more for a large vocabulary), so it runs after the rows are on screen,
  and its answer is kept per file (path, size, modification time) for the next search.
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass

from tkchat.generate.model_file import GGUF_MAGIC, gguf_extent

HEAD_BYTES = 24  # magic, version, tensor count, key count
_MIN_KEY_BYTES = 8 + 1 + 4  # a key's length, one byte of it, its type
_MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8  # name length, a byte, dims, one dim, type, offset
VERSIONS = (2, 3)  # the GGUF versions llama.cpp reads


@dataclass(frozen=True)
class Problem:
    """Why a GGUF file cannot load: ``kind`` is "version" (``version`` is the file's),
    "header" (the header is cut or claims more than the file holds) or "cut" (the tensors'
    data ends before the header says it does: ``size`` bytes of ``needed``; ``exact`` is
    False when ``needed`` is only a lower bound)."""

    kind: str
    size: int = 0
    needed: int = 0
    exact: bool = True
    version: int = 0


def header_problem(path: str, size: int) -> Problem | None:
    """The cheap check (worker thread): None when the header's first part is sound or the
    file cannot be read (the load says why), else the :class:`Problem`."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    if not head.startswith(GGUF_MAGIC):
        return None  # not listed by the finder at all
    if len(head) < 8:
        return Problem("header", size)
    (version,) = struct.unpack_from("<I", head, 4)
    if version not in VERSIONS:
        return Problem("version", size, version=version)
    if len(head) < HEAD_BYTES:
        return Problem("header", size)
    tensors, keys = struct.unpack_from("<QQ", head, 8)
    if HEAD_BYTES + keys * _MIN_KEY_BYTES + tensors * _MIN_TENSOR_BYTES > size:
        return Problem("header", size)
    return None


_checked: dict[tuple[str, int, int], Problem | None] = {}
_checked_lock = threading.Lock()  # two searches may run at once (a rescan and a late one)


def extent_problem(path: str) -> Problem | None:
    """The whole-header check (worker thread): a :class:`Problem` when the file is shorter
    than its header says or ends inside it, None when it is whole or cannot be judged (a
    tensor type or header this does not read, a file without tensors: llama.cpp has the last
    word). Remembered per
    (path, size, modification time)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_size, info.st_mtime_ns)
    with _checked_lock:
        if key in _checked:
            return _checked[key]
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
            handle.seek(0)
            extent = gguf_extent(handle, info.st_size)
    except OSError:
        return None  # unreadable now: not remembered
    if len(head) == HEAD_BYTES and struct.unpack_from("<Q", head, 8)[0] == 0:
        extent = None  # no tensors: no data to be cut short (the padding after the header
        # may be missing at the very end of a file without harm)
    problem: Problem | None = None
    if extent is not None:
        needed, exact = extent
        if needed < 0:
            problem = Problem("header", info.st_size)
        elif info.st_size < needed:
            problem = Problem("cut", info.st_size, needed, exact)
    with _checked_lock:
        _checked[key] = problem
    return problem
