"""A recorded run of the window, as a file: ``tkchat record FILE`` writes it, ``tkchat replay
FILE`` plays it back, ``tkchat bench --report DIR --recording FILE`` plots it.

The point is a classroom whose own machine cannot show the lesson (a slow projector laptop, no
model, no network): it replays a run measured elsewhere, token for token at the recorded pace,
through the same broken or fixed consumer, and the lesson panel's lag timeline draws the lag
that was measured there beside the lag measured here.

The format is JSON Lines, UTF-8, one object per line. Line 1 is the header::

    {"format": "tkchat-recording", "version": 1, "mode": "blocking", "backend": "llama",
     "model": null, "rate": null, "prompt": "Why ...?", "started_at": "2026-11-30T23:59:00Z",
     "machine": {"platform": "Linux-6.1-x86_64", "cpus": 2, "python": "3.11.2",
                 "llama_cpp": "0.3.36", "tkchat": "0.1.0"}}

Every later line is one thing that happened, ``t`` seconds after the answer began (the
moment the model was asked), in time order:

    {"kind": "token", "t": 0.012, "text": " Hello"}        a token, as the model produced it
    {"kind": "screen", "t": 0.020, "chars": 6}             text reached the screen (chars so far)
    {"kind": "lag", "t": 0.025, "ms": 0.4}                 the lag probe fired, this late
    {"kind": "input", "t": 0.31, "what": "click", "handled_ms": 2.1}   a click, key or scroll
    {"kind": "done", "t": 1.9, "reason": "stop"}           the end: "done" or "error", once, last

The end line's ``t`` is when the recording stopped: a few hundred milliseconds after the
answer ended, so that the probe's firing just after a freeze (which comes only once the freeze
is over) is in the file. A window closed mid-answer ends its recording with ``"cancelled"``.

A token's ``text`` is the characters its bytes completed (empty when a token carried only part
of a character: the next one completes it). An input's ``handled_ms`` is how long after the X
server stamped it the window ran its handler, measured against the quickest input of the run
(the two clocks share no origin, so the quickest counts as 0).

:func:`load_recording` checks every line — JSON, types, ranges, times that never go back, one
end and nothing after it, sizes — and raises :class:`RecordingError`, whose one sentence (in
English or Chinese) says what is wrong and where. Tk-free and thread-free: plain data.
"""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from tkchat.i18n import STRINGS
from tkchat.stats import LagSample

FORMAT = "tkchat-recording"
VERSION = 1
# Budgets: a recording is a few hundred kilobytes; these are far above any real one and
# keep a wrong file (a model, a video) from being read into memory.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
MAX_TEXT_CHARS = 4096  # one token's text; the sender's chunks are smaller still
MAX_DURATION_S = 24 * 3600.0
MAX_HEADER_TEXT = 8192  # the prompt, the model path, the machine's strings
INPUT_KINDS = ("click", "key", "scroll")
END_KINDS = ("done", "error")


class RecordingError(Exception):
    """A recording that cannot be used. ``sentence(lang)`` says why in one sentence;
    ``str()`` is the English one."""

    def __init__(self, key: str, **fields: object) -> None:
        self.key = key
        self.fields = fields
        super().__init__(self.sentence("en"))

    def sentence(self, lang: str) -> str:
        return STRINGS[lang][f"recording.{self.key}"].format(**self.fields)


@dataclass(frozen=True)
class Token:
    t: float
    text: str


@dataclass(frozen=True)
class Screen:
    t: float
    chars: int


@dataclass(frozen=True)
class Lag:
    t: float
    ms: float


@dataclass(frozen=True)
class Input:
    t: float
    what: str  # one of INPUT_KINDS
    handled_ms: float


@dataclass(frozen=True)
class End:
    t: float
    kind: str  # "done" or "error"
    reason: str  # done: stop, length, cancelled; error: the message


def machine_facts() -> dict[str, Any]:
    """What the recording machine was, so a replay can say where its figures come from."""

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count() or 1,
        "python": platform.python_version(),
        "llama_cpp": version("llama-cpp-python"),
        "tkchat": version("tkchat"),
    }


@dataclass
class Recording:
    """One recorded answer. ``header`` holds the run's facts (see the module docstring);
    the lists hold the lines of each kind, in time order."""

    mode: str
    backend: str
    prompt: str
    model: str | None = None
    rate: float | None = None
    machine: dict[str, Any] = field(default_factory=machine_facts)
    started_at: str = field(
        default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    tokens: list[Token] = field(default_factory=list)
    screen: list[Screen] = field(default_factory=list)
    lags: list[Lag] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    end: End | None = None

    @property
    def duration_s(self) -> float:
        return self.end.t if self.end is not None else 0.0

    @property
    def text(self) -> str:
        return "".join(token.text for token in self.tokens)

    def lag_samples(
        self, origin: float, speed: float = 1.0, lags: Sequence[Lag] | None = None
    ) -> list[LagSample]:
        """The recorded lag as probe samples, with the answer's start at ``origin`` (a
        ``perf_counter`` value: where the replay's answer began), played ``speed`` times as
        fast as recorded. ``lags``: these instead of all of them (:func:`worst_per_slice`)."""
        chosen = self.lags if lags is None else lags
        return [LagSample(origin + lag.t / speed, lag.ms) for lag in chosen]

    # -- writing -------------------------------------------------------------------------------

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "mode": self.mode,
            "backend": self.backend,
            "model": self.model,
            "rate": self.rate,
            "prompt": self.prompt,
            "started_at": self.started_at,
            "machine": self.machine,
        }

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every line after the header, in time order (the end last)."""
        items: list[tuple[float, int, dict[str, Any]]] = []
        for token in self.tokens:
            items.append((token.t, 0, {"kind": "token", "t": token.t, "text": token.text}))
        for shown in self.screen:
            items.append((shown.t, 1, {"kind": "screen", "t": shown.t, "chars": shown.chars}))
        for lag in self.lags:
            items.append((lag.t, 2, {"kind": "lag", "t": lag.t, "ms": lag.ms}))
        for put in self.inputs:
            line = {"kind": "input", "t": put.t, "what": put.what, "handled_ms": put.handled_ms}
            items.append((put.t, 3, line))
        end_t = max((t for t, _order, _line in items), default=0.0)
        items.sort(key=lambda item: (item[0], item[1]))  # stable: each kind keeps its order
        for _t, _order, line in items:
            yield line
        end = self.end or End(end_t, "done", "cancelled")
        yield {"kind": end.kind, "t": max(end.t, end_t), "reason": end.reason}

    def save(self, path: Path) -> None:
        """Write the file whole or not at all: into a temporary file beside it, then renamed
        over ``path`` (a crash mid-write leaves the old file, never half a new one)."""
        path = Path(path)
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                for line in (self.header(), *self.lines()):
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def worst_per_slice(lags: Sequence[Lag], limit: int) -> list[Lag]:
    """At most ``limit`` lags: the recording's time cut into ``limit`` equal slices, the worst
    of each kept (at its own time). What a timeline draws is the worst per pixel column, so a
    drawing from these is the same as from all of them; a crafted file of 1.7 M lag lines
    otherwise cost the window 2.4 s, on the main thread, when the answer began."""
    if len(lags) <= limit:
        return list(lags)
    first, last = lags[0].t, lags[-1].t
    width = (last - first) / limit or 1.0
    kept: dict[int, Lag] = {}
    for lag in lags:
        slot = min(int((lag.t - first) / width), limit - 1)
        held = kept.get(slot)
        if held is None or lag.ms > held.ms:
            kept[slot] = lag
    return [kept[slot] for slot in sorted(kept)]


# -- reading -----------------------------------------------------------------------------------


def load_recording(path: Path) -> Recording:
    """Read and check a recording; raise :class:`RecordingError` for anything wrong with it
    (the first problem found, with its line number)."""
    path = Path(path)
    shown = str(path)
    try:
        size = path.stat().st_size
        handle = path.open("rb")
    except OSError as exc:
        raise RecordingError("unreadable", path=shown, reason=exc.strerror or exc) from None
    if size > MAX_FILE_BYTES:
        handle.close()
        raise RecordingError("too_big", path=shown, limit=f"{MAX_FILE_BYTES // 2**20} MB")
    with handle:
        return _Reader(shown).read(_lines(handle, shown))


def _lines(handle: Any, shown: str) -> Iterator[tuple[int, Any]]:
    """Each line's number and JSON value; a line longer than the budget is refused before it
    is read whole."""
    number = 0
    while True:
        raw: bytes = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise RecordingError("line_too_long", path=shown, line=number, limit=MAX_LINE_BYTES)
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # (nested thousands deep)
            raise RecordingError("not_json", path=shown, line=number) from None
        yield number, value


class _Reader:
    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.line = 0

    def fail(self, key: str, **fields: object) -> RecordingError:
        return RecordingError(key, path=self.shown, line=self.line, **fields)

    def read(self, lines: Iterator[tuple[int, Any]]) -> Recording:  # noqa: C901 - a debt (tests/test_architecture.py)
        first = next(lines, None)
        if first is None:
            raise RecordingError("empty", path=self.shown)
        self.line, header = first
        recording = self._header(header)
        last_t = 0.0
        for self.line, value in lines:
            if recording.end is not None:
                raise self.fail("after_end")
            if not isinstance(value, dict):
                raise self.fail("bad_field", name="the line", expected="a JSON object")
            kind = value.get("kind")
            t = self._number(value, "t", 0.0, MAX_DURATION_S)
            if t < last_t:
                raise self.fail("backwards", t=f"{t:g}", previous=f"{last_t:g}")
            last_t = t
            if kind == "token":
                text = self._text(value, "text", MAX_TEXT_CHARS)
                recording.tokens.append(Token(t, text))
            elif kind == "screen":
                chars = self._number(value, "chars", 0, 1e9)
                if not isinstance(chars, int):
                    raise self.fail("bad_field", name="chars", expected="a whole number")
                recording.screen.append(Screen(t, chars))
            elif kind == "lag":
                recording.lags.append(Lag(t, self._number(value, "ms", 0.0, MAX_DURATION_S * 1e3)))
            elif kind == "input":
                what = value.get("what")
                if what not in INPUT_KINDS:
                    raise self.fail("bad_field", name="what", expected=" / ".join(INPUT_KINDS))
                handled = self._number(value, "handled_ms", 0.0, MAX_DURATION_S * 1e3)
                recording.inputs.append(Input(t, what, handled))
            elif kind in END_KINDS:
                reason = self._text(value, "reason", MAX_HEADER_TEXT)
                recording.end = End(t, str(kind), reason)
            else:
                raise self.fail("unknown_kind", kind=json.dumps(kind, ensure_ascii=False)[:40])
        if recording.end is None:
            raise RecordingError("no_end", path=self.shown)
        return recording

    def _header(self, value: Any) -> Recording:
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            raise RecordingError("no_header", path=self.shown)
        version = value.get("version")
        if version != VERSION:
            raise RecordingError(
                "version", path=self.shown, version=json.dumps(version)[:20], supported=VERSION
            )
        machine = value.get("machine")
        if not isinstance(machine, dict) or len(json.dumps(machine)) > MAX_HEADER_TEXT:
            raise self.fail("bad_field", name="machine", expected="a small JSON object")
        model = value.get("model")
        if model is not None:
            model = self._text(value, "model", MAX_HEADER_TEXT)
        rate = value.get("rate")
        if rate is not None:
            rate = self._number(value, "rate", 0.0, 1e9)
        return Recording(
            mode=self._text(value, "mode", MAX_HEADER_TEXT),
            backend=self._text(value, "backend", MAX_HEADER_TEXT),
            prompt=self._text(value, "prompt", MAX_HEADER_TEXT),
            model=model,
            rate=rate,
            machine=machine,
            started_at=self._text(value, "started_at", 64),
        )

    def _text(self, value: Mapping[str, Any], name: str, limit: int) -> str:
        text = value.get(name)
        if not isinstance(text, str) or len(text) > limit:
            raise self.fail("bad_field", name=name, expected=f"a text of at most {limit} chars")
        return text

    def _number(self, value: Mapping[str, Any], name: str, low: float, high: float) -> Any:
        number = value.get(name)
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or not math.isfinite(number)
            or not low <= number <= high
        ):
            raise self.fail("bad_field", name=name, expected=f"a number from {low:g} to {high:g}")
        return number
