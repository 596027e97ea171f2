"""The recording format (tkchat/lab/recording/file.py) and the two backends of record and replay
(tkchat/lab/recording/backends.py), without a window: a recording survives the file whole, every
kind of bad file gets its one sentence (and ``tkchat replay`` exit code 2, no traceback), a
recorded stream replays to the same text and end."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import run_to_end
from tkchat.cli import main
from tkchat.conversation import Message
from tkchat.events import Chunk, Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.i18n import STRINGS
from tkchat.lab.recording.backends import RecordingBackend, ReplayBackend
from tkchat.lab.recording.file import (
    MAX_LINE_BYTES,
    End,
    Input,
    Lag,
    Recording,
    RecordingError,
    Screen,
    Token,
    load_recording,
    worst_per_slice,
)
from tkchat.transport.channel import EventChannel

ASK = GenerationRequest((Message("user", "why?"),))


def sample() -> Recording:
    return Recording(
        mode="blocking",
        backend="scripted",
        prompt="为什么？ 🚀",
        rate=50.0,
        tokens=[Token(0.01, "Hello"), Token(0.03, ""), Token(0.05, " 世界😀")],
        screen=[Screen(0.02, 5), Screen(0.06, 9)],
        lags=[Lag(0.0, 0.3), Lag(0.04, 812.5)],
        inputs=[Input(0.045, "click", 2.5), Input(0.05, "key", 0.0)],
        end=End(0.07, "done", "stop"),
    )


def test_a_recording_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    original = sample()
    original.save(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "tkchat-recording" and header["version"] == 1
    assert set(header["machine"]) >= {"platform", "cpus", "python", "llama_cpp", "tkchat"}
    assert [json.loads(line)["kind"] for line in lines[1:]] == [
        "lag",
        "token",
        "screen",
        "token",
        "lag",
        "input",
        "token",
        "input",
        "screen",
        "done",
    ]
    loaded = load_recording(path)
    assert loaded == original
    assert loaded.text == "Hello 世界😀" and loaded.duration_s == 0.07
    assert [s.at for s in loaded.lag_samples(100.0, speed=2.0)] == [100.0, 100.02]
    assert list(tmp_path.iterdir()) == [path]  # the temporary file was renamed, not left


def write_lines(path: Path, *lines: object) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


HEADER = sample().header()
TOKEN = {"kind": "token", "t": 0.5, "text": "hi"}
DONE = {"kind": "done", "t": 1.0, "reason": "stop"}

BAD_FILES: dict[str, tuple[str, list[object] | bytes]] = {
    "not JSON": ("not_json", b"this is not json\n"),
    "a JSON line that is not": ("not_json", (json.dumps(HEADER) + "\n{oops\n").encode()),
    "not UTF-8": ("not_json", b"\xff\xfe\x00garbage\n"),
    "empty": ("empty", b""),
    "missing header": ("no_header", [TOKEN, DONE]),
    "wrong version": ("version", [{**HEADER, "version": 2}, TOKEN, DONE]),
    "times going backwards": (
        "backwards",
        [HEADER, {**TOKEN, "t": 0.8}, {**TOKEN, "t": 0.2}, DONE],
    ),
    "a huge line": (
        "line_too_long",
        (json.dumps(HEADER) + "\n" + "x" * (MAX_LINE_BYTES + 10) + "\n").encode(),
    ),
    "no end": ("no_end", [HEADER, TOKEN]),
    "a line after the end": ("after_end", [HEADER, TOKEN, DONE, TOKEN]),
    "an unknown kind": ("unknown_kind", [HEADER, {"kind": "video", "t": 0.1}, DONE]),
    "a negative time": ("bad_field", [HEADER, {**TOKEN, "t": -1}, DONE]),
    "a text that is a number": ("bad_field", [HEADER, {**TOKEN, "text": 7}, DONE]),
    "an input of no known kind": (
        "bad_field",
        [HEADER, {"kind": "input", "t": 0.1, "what": "dance", "handled_ms": 1}, DONE],
    ),
}


def bad_file(tmp_path: Path, content: list[object] | bytes) -> Path:
    path = tmp_path / "bad.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
        return path
    return write_lines(path, *content)


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_every_bad_file_gets_its_one_sentence(tmp_path: Path, case: str) -> None:
    key, content = BAD_FILES[case]
    path = bad_file(tmp_path, content)
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    assert caught.value.key == key
    for lang in ("en", "zh"):
        sentence = caught.value.sentence(lang)
        assert str(path) in sentence and "\n" not in sentence and "{" not in sentence


@pytest.mark.parametrize("case", ["not JSON", "wrong version", "times going backwards"])
@pytest.mark.parametrize("command", [["replay"], ["bench", "--report", "out", "--recording"]])
def test_the_command_line_says_the_sentence_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: list[str]
) -> None:
    key, content = BAD_FILES[case]
    path = bad_file(tmp_path, content)
    zh = command == ["replay"]  # replay has --lang; the sentence is then in Chinese
    assert main([*command, str(path), *(["--lang", "zh"] if zh else [])]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert str(path) in err
    english = STRINGS["en"][f"recording.{key}"].split("{")[0]
    if zh:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in err)
    elif english:
        assert english in err


def test_a_missing_file_is_one_sentence_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "/nonexistent/run.jsonl", "--lang", "en"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tkchat replay: The recording /nonexistent/run.jsonl cannot be read")


def test_the_recording_backend_keeps_each_token_and_the_characters_it_completed() -> None:
    inner = ScriptedBackend(rate=0, split_utf8=True)
    recorder = RecordingBackend(inner)
    controller = GenerationController(recorder, EventChannel())
    events = run_to_end(controller.channel, controller.start(ASK))
    shown = "".join(e.text for e in events if isinstance(e, Chunk))
    assert shown == SCRIPT
    assert "".join(text for _t, text in recorder.tokens) == SCRIPT
    assert any(text == "" for _t, text in recorder.tokens)  # half a character: nothing yet
    times = [t for t, _text in recorder.tokens]
    assert times == sorted(times) and times[0] >= 0
    assert recorder.request is not None and recorder.request.messages[-1].content == "why?"


def test_a_replay_gives_the_same_tokens_and_the_same_end() -> None:
    tokens = [(0.0, "one"), (0.001, ""), (0.002, " two 😀")]
    controller = GenerationController(ReplayBackend(tokens, reason="length"), EventChannel())
    events = run_to_end(controller.channel, controller.start(ASK))
    assert "".join(e.text for e in events if isinstance(e, Chunk)) == "one two 😀"
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "length" and final.stats.tokens == 3

    failing = ReplayBackend(tokens, error="the model server went away")
    controller = GenerationController(failing, EventChannel())
    final_event = run_to_end(controller.channel, controller.start(ASK))[-1]
    assert isinstance(final_event, Error) and final_event.message == "the model server went away"


def test_stop_ends_a_replay_at_once() -> None:
    backend = ReplayBackend([(0.0, "a"), (60.0, "never")])
    cancel = threading.Event()
    stream = backend.stream(ASK, cancel)
    assert next(stream) == b"a"
    cancel.set()
    with pytest.raises(StopIteration) as end:
        next(stream)
    assert end.value.value == "cancelled"


class ReplayClock:
    """The replay's clock, moved only by its waits (each kept); ``late`` s more each time,
    as a worker a busy machine kept off its core."""

    def __init__(self, late: float = 0.0) -> None:
        self.now = 100.0
        self.late = late
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, cancel: threading.Event, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds + self.late
        return cancel.is_set()


def test_a_replay_waits_for_each_token_until_its_recorded_time_scaled_by_its_speed() -> None:
    tokens = [(0.0, "a"), (0.25, "b"), (0.25, "c"), (1.0, "d")]
    clock = ReplayClock()
    backend = ReplayBackend(tokens, speed=2.0, clock=clock, wait=clock.wait)
    assert list(backend.stream(ASK, threading.Event())) == [b"a", b"b", b"c", b"d"]
    assert clock.waits == pytest.approx([0.125, 0.375])  # to 0.125 s, then to 0.5 s
    assert backend.started == 100.0
    # kept late by the machine, it catches up (no wait while behind) rather than drift
    behind = ReplayClock(late=0.3)
    steady = ReplayBackend(tokens, clock=behind, wait=behind.wait)
    assert list(steady.stream(ASK, threading.Event())) == [b"a", b"b", b"c", b"d"]
    assert behind.waits == pytest.approx([0.25, 1.0 - 0.55])


def test_replay_keeps_the_recorded_mode_unless_told_and_the_window_keeps_its_default() -> None:
    from tkchat.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["replay", "run.jsonl"]).mode is None  # the recording's
    assert parser.parse_args(["replay", "run.jsonl", "--mode", "fixed"]).mode == "fixed"
    assert parser.parse_args([]).mode == "fixed"
    assert parser.parse_args(["record", "run.jsonl"]).mode == "fixed"


def test_a_recording_never_chooses_code_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording's header naming a student's file (``helper.py:Pipeline``) replays through
    the fixed pipeline unless the user names the file: the file is never imported."""
    from tkchat.lab.commands.replay import replay_mode

    monkeypatch.chdir(tmp_path)
    ran = tmp_path / "ran"
    (tmp_path / "helper.py").write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    mode, note = replay_mode(None, "helper.py:Pipeline")
    assert mode == "fixed" and note is not None and "--mode helper.py:Pipeline" in note
    assert replay_mode(None, "no-coalesce") == ("no-coalesce", None)  # built in: kept
    assert replay_mode("helper.py:Pipeline", "fixed") == ("helper.py:Pipeline", None)
    # and the command, as a user runs it, with no window to open: it says so and stops there
    path = tmp_path / "run.jsonl"
    replace(sample(), mode="helper.py:Pipeline").save(path)
    monkeypatch.setattr("tkchat.lab.commands.replay.open_root", lambda name: None)
    assert main(["replay", str(path)]) == 2 and not ran.exists()


def test_a_file_over_the_size_budget_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tkchat.lab.recording.file as recording

    path = tmp_path / "big.jsonl"
    sample().save(path)
    monkeypatch.setattr(recording, "MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    assert caught.value.key == "too_big"


def test_a_recording_of_a_million_lag_lines_hands_the_timeline_a_bounded_worst_case_set() -> None:
    """A crafted recording with far more lag lines than any timeline has columns: the replay
    hands the lesson panel at most MAX_DRAWN_LAGS samples (counted), thinned once before the
    window runs, and the worst freeze of every slice is still there (the recording's worst
    among them, at its own time)."""
    from tkchat.lab.recording.recorded_window import (
        MAX_DRAWN_LAGS,
        recorded_lag_source,
        replay_backend,
    )

    lags = [Lag(i * 0.001, 1.0 + (i % 7)) for i in range(1_000_000)]
    lags[654_321] = Lag(654.321, 2_400.0)
    recording = replace(sample(), lags=lags)
    backend = replay_backend(recording)
    source = recorded_lag_source(recording, backend, speed=2.0)
    assert source() == []  # no answer yet
    backend.started = 100.0
    drawn = source()
    assert len(drawn) <= MAX_DRAWN_LAGS
    worst = max(drawn, key=lambda s: s.lag_ms)
    assert worst.lag_ms == 2_400.0 and worst.at == pytest.approx(100.0 + 654.321 / 2)
    assert source() is drawn  # once per answer, not per redraw
    assert worst_per_slice(lags[:10], MAX_DRAWN_LAGS) == lags[:10]  # a small one: all of it
