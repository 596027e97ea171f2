"""Writing GGUF files for tests: a small one from scratch, or a copy of a real model with
some metadata changed (a chat template that loops, say).

The builder records where each count and length went, so a fuzz test can put an absurd
number in every one of them. Layout as in ``tkchat/generate/model_file.py``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from tkchat.generate.model_file import GGUF_MAGIC, read_header

STRING, ARRAY, UINT32, UINT64 = 8, 9, 4, 10


@dataclass
class GGUFBuilder:
    """Appends a GGUF header piece by piece; ``fields`` holds (offset, size, what) of every
    count and length written."""

    out: bytearray = field(default_factory=bytearray)
    fields: list[tuple[int, int, str]] = field(default_factory=list)

    def raw(self, fmt: str, value: object, what: str | None = None) -> None:
        if what is not None:
            self.fields.append((len(self.out), struct.calcsize(fmt), what))
        self.out += struct.pack(fmt, value)

    def string(self, text: str, what: str) -> None:
        data = text.encode("utf-8")
        self.raw("<Q", len(data), f"the length of {what}")
        self.out += data

    def key(self, name: str, kind: int) -> None:
        self.string(name, f"key {name}")
        self.raw("<I", kind, f"the type of {name}")


def tiny_gguf(template: str = "{{ messages }}") -> GGUFBuilder:
    """A header llama.cpp would not load (no real tensors), but that is valid to the byte:
    an architecture, a context length, a chat template, a string array, an integer array,
    one tensor, and its data."""
    b = GGUFBuilder()
    b.out += GGUF_MAGIC
    b.raw("<I", 3)
    b.raw("<Q", 1, "the tensor count")
    b.raw("<Q", 5, "the key count")
    b.key("general.architecture", STRING)
    b.string("llama", "the architecture")
    b.key("llama.context_length", UINT32)
    b.raw("<I", 2048)
    b.key("tokenizer.chat_template", STRING)
    b.string(template, "the template")
    b.key("tokenizer.ggml.tokens", ARRAY)
    b.raw("<I", STRING, "the item type of the tokens")
    b.raw("<Q", 3, "the token count")
    for token in ("<s>", "hello", "world"):
        b.string(token, f"token {token}")
    b.key("tokenizer.ggml.scores", ARRAY)
    b.raw("<I", 6, "the item type of the scores")
    b.raw("<Q", 3, "the score count")
    b.out += struct.pack("<3f", 0.0, -1.0, -2.0)
    b.string("token_embd.weight", "the tensor's name")
    b.raw("<I", 2, "the tensor's dimension count")
    b.raw("<Q", 4, "a dimension")
    b.raw("<Q", 3, "a dimension")
    b.raw("<I", 0, "the tensor's type")
    b.raw("<Q", 0, "the tensor's offset")
    b.out += b"\0" * (-len(b.out) % 32)  # to the default alignment
    b.out += b"\0" * (4 * 3 * 4)  # the tensor's data (f32)
    return b


def with_chat_template(source: Path, target: Path, template: str) -> Path:
    """A copy of the GGUF ``source`` whose ``tokenizer.chat_template`` is ``template``;
    everything else (the tensors, their offsets from the data section) stays as it was."""
    data = source.read_bytes()
    at = 4 + 4 + 8
    (keys,) = struct.unpack_from("<Q", data, at)
    at += 8
    out = bytearray(data[:at])
    for _ in range(keys):
        start = at
        (length,) = struct.unpack_from("<Q", data, at)
        name = data[at + 8 : at + 8 + length].decode()
        at += 8 + length
        (kind,) = struct.unpack_from("<I", data, at)
        at += 4
        at = _skip(data, at, kind)
        if name == "tokenizer.chat_template":
            encoded = template.encode("utf-8")
            out += data[start : start + 8 + length + 4]
            out += struct.pack("<Q", len(encoded)) + encoded
        else:
            out += data[start:at]
    (tensors,) = struct.unpack_from("<Q", data, 8)
    infos_start = at
    for _ in range(tensors):
        (length,) = struct.unpack_from("<Q", data, at)
        at += 8 + length
        (dims,) = struct.unpack_from("<I", data, at)
        at += 4 + 8 * dims + 4 + 8
    out += data[infos_start:at]
    alignment = read_header(source).integers.get("general.alignment", 32)
    old_data = -(-at // alignment) * alignment
    out += b"\0" * (-len(out) % alignment)
    out += data[old_data:]
    target.write_bytes(bytes(out))
    return target


_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip(data: bytes, at: int, kind: int) -> int:
    if kind == STRING:
        (length,) = struct.unpack_from("<Q", data, at)
        return at + 8 + length
    if kind == ARRAY:
        item, count = struct.unpack_from("<IQ", data, at)
        at += 12
        if item in _SIZES:
            return at + _SIZES[item] * count
        for _ in range(count):
            at = _skip(data, at, item)
        return at
    return at + _SIZES[kind]
