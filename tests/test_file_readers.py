"""Every file tkchat reads says what is wrong with it in one sentence, and never throws at
the user: settings.json, a conversation export, a recording, the model catalogue. (The GGUF
header has its own fuzz in tests/test_model_file.py.)

A fuzz per reader, over a valid file of its kind: cut at every few bytes (an interrupted
write), and each of its values — every number, every string, every literal — replaced in
turn by something absurd (a number of 5,000 digits, 1e400, NaN, a megabyte of text, arrays
nested 5,000 deep). The reader must return, or raise its own error type with a sentence of
bounded length; the review found a RecursionError, a ValueError of Python's integer limit,
an OverflowError, and error sentences quoting a whole megabyte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_recording import sample as sample_recording
from tkchat.lab.recording.file import RecordingError, load_recording
from tkchat.models.catalogue import CatalogueError, load_catalogue
from tkchat.store.db import ConversationStore
from tkchat.store.errors import StoreError
from tkchat.store.export_format import parse_export
from tkchat.store.figures import AnswerFigures
from tkchat.store.settings import AppSettings, load_settings, save_settings

ABSURD = (
    "9" * 5_000,  # more digits than Python converts to an int
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-1",
    str(2**64),
    '"' + "x" * 1_000_000 + '"',
    "[" * 5_000 + "]" * 5_000,
    "null",
    "true",
    "{}",
    "[]",
)
VALUE = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null')
SENTENCE_MAX = 2_000  # a sentence for the window: never the file's megabyte quoted back


def variants(text: str) -> Iterator[bytes]:
    """``text`` cut at about 200 places, then with each value replaced by each absurdity."""
    raw = text.encode("utf-8")
    for length in range(0, len(raw), max(1, len(raw) // 200)):
        yield raw[:length]
    for match in VALUE.finditer(text):
        for absurd in ABSURD:
            yield (text[: match.start()] + absurd + text[match.end() :]).encode("utf-8")


def fuzz(tmp_path: Path, valid: str, read: Callable[[Path, bytes], str | None]) -> int:
    """Feed every variant to ``read`` (which returns the sentence it got, if any)."""
    path = tmp_path / "fuzzed"
    path.write_text(valid, encoding="utf-8")
    assert read(path, valid.encode("utf-8")) is None  # the file itself is fine
    count = 0
    for data in variants(valid):
        path.write_bytes(data)
        sentence = read(path, data)
        assert sentence is None or len(sentence) <= SENTENCE_MAX, sentence[:200]
        count += 1
    return count


def test_settings_json(tmp_path: Path) -> None:
    source = tmp_path / "settings.json"
    assert save_settings(AppSettings(), source) is None

    def read(path: Path, _data: bytes) -> str | None:
        _settings, warning = load_settings(path)  # never raises, by its contract
        return warning

    assert fuzz(tmp_path, source.read_text(encoding="utf-8"), read) > 200


def test_a_conversation_export(tmp_path: Path) -> None:
    with ConversationStore(None) as store:
        chat = store.create("a chat", settings={"temperature": 0.5, "seed": 3})
        store.add_message(chat.id, "user", "hi")
        answer = store.add_message(chat.id, "assistant", "hello")
        # An answer's model, figures and own system prompt are fuzzed too.
        store.set_figures(answer, AnswerFigures(3, 12.5, 0.25, "stop", "m", "Be brief."))
        store.add_message(chat.id, "assistant", "hello", "streaming")
        valid = json.dumps(store.export_json(chat.id))
        assert '"model": "m"' in valid and '"system_prompt": "Be brief."' in valid

    def read(_path: Path, data: bytes) -> str | None:
        try:
            parse_export(data)
        except StoreError as exc:
            assert exc.kind == "invalid"
            return str(exc)
        return None

    assert fuzz(tmp_path, valid, read) > 200


def test_a_recording(tmp_path: Path) -> None:
    source = tmp_path / "run.jsonl"
    sample_recording().save(source)

    def read(path: Path, _data: bytes) -> str | None:
        try:
            load_recording(path)
        except RecordingError as exc:
            return max((exc.sentence(lang) for lang in ("en", "zh")), key=len)
        return None

    assert fuzz(tmp_path, source.read_text(encoding="utf-8"), read) > 200


CATALOGUE = {
    "about": "a test catalogue",
    "models": [
        {
            "name": "tiny",
            "title": "A tiny model",
            "repo": "owner/tiny-GGUF",
            "file": "tiny.Q4_0.gguf",
            "revision": "main",
            "size": 98_000_000,
            "sha256": "0" * 64,
            "licence": "apache-2.0",
            "languages": ["en", "zh"],
            "architecture": {"layers": 30, "kv_heads": 3, "head_dim": 64, "vocab": 49152},
        }
    ],
}


def test_the_model_catalogue(tmp_path: Path) -> None:
    def read(path: Path, _data: bytes) -> str | None:
        try:
            load_catalogue(path)
        except CatalogueError as exc:
            return str(exc)
        return None

    assert fuzz(tmp_path, json.dumps(CATALOGUE, indent=2), read) > 200


@pytest.mark.parametrize("depth", [100, 5_000, 50_000])
def test_nesting_is_one_sentence_for_every_reader(tmp_path: Path, depth: int) -> None:
    deep = ("[" * depth + "]" * depth).encode()
    path = tmp_path / "deep"
    path.write_bytes(deep)
    assert load_settings(path)[1] is not None
    with pytest.raises(StoreError):
        parse_export(deep)
    with pytest.raises(RecordingError):
        load_recording(path)
    with pytest.raises(CatalogueError):
        load_catalogue(path)
