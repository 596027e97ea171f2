"""Stop strings on the generation side (tkchat/generate/stop.py): found however the text is
cut into pieces, never sent, and the same for every backend — in-process, through
``tkchat serve``'s ``/chat``, and through a remote backend that forwards them."""

from __future__ import annotations

import itertools

import pytest

from tests.conftest import run_to_end
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.remote import openai_protocol, tkchat_protocol
from tkchat.generate.scripted import SCRIPT, ScriptedBackend
from tkchat.generate.stop import StopScanner
from tkchat.transport.channel import EventChannel

TEXT = "The cat sat on the mat. 中文 and 😀 emoji. The end."


def scan(pieces: list[str], stops: list[str]) -> tuple[list[str], bool]:
    """What a scanner lets out for each piece, and whether it found a stop string; at the end
    (no stop string) the held tail is flushed as the worker does."""
    scanner = StopScanner(stops)
    out = []
    for piece in pieces:
        text, hit = scanner.feed(piece)
        out.append(text)
        if hit:
            return out, True
    out.append(scanner.flush())
    return out, False


def splits(text: str, cuts: int) -> list[list[str]]:
    """Every way to cut ``text`` into ``cuts + 1`` pieces (empty ones included)."""
    return [
        [text[a:b] for a, b in itertools.pairwise((0, *points, len(text)))]
        for points in itertools.combinations_with_replacement(range(len(text) + 1), cuts)
    ]


@pytest.mark.parametrize("stop", ["mat", "cat sat", "中文 and", "😀", ". The end.", "t"])
def test_a_stop_string_is_found_however_the_text_is_cut(stop: str) -> None:
    expected = TEXT[: TEXT.index(stop)]
    for pieces in splits(TEXT, 2):
        out, hit = scan(pieces, [stop, "never there"])
        assert hit and "".join(out) == expected, pieces
        assert all(stop not in piece for piece in out)


def test_without_a_stop_string_everything_comes_out_and_the_tail_is_flushed() -> None:
    for pieces in splits(TEXT, 2):
        out, hit = scan(pieces, ["The enD", "xyz"])
        assert not hit and "".join(out) == TEXT


def test_the_earliest_of_several_stop_strings_wins() -> None:
    out, hit = scan([TEXT], ["end", "sat", "cat"])
    assert hit and "".join(out) == "The "


def test_only_what_could_begin_a_stop_string_is_held_back() -> None:
    """The tail held back is at most the longest stop string minus one, and only when it
    could be the start of one: ordinary text goes out at once."""
    scanner = StopScanner(["\n\nUser:", "###"])
    assert scanner.feed("Hello there") == ("Hello there", False)
    assert scanner.feed(" friend\n") == (" friend", False) and scanner.held == "\n"
    assert scanner.feed("\nUse") == ("", False) and scanner.held == "\n\nUse"
    assert scanner.feed("ful") == ("\n\nUseful", False) and scanner.held == ""
    assert scanner.feed("##") == ("", False) and len(scanner.held) <= len("\n\nUser:") - 1
    assert scanner.feed("#") == ("", True)


def test_no_stop_strings_cost_nothing() -> None:
    scanner = StopScanner(["", ""])
    assert scanner.feed("abc") == ("abc", False) and scanner.held == ""


def generate(backend: ScriptedBackend, stop: tuple[str, ...]) -> list[object]:
    controller = GenerationController(backend, EventChannel())
    request = GenerationRequest((Message("user", "hi"),), Sampling(max_tokens=4096), stop=stop)
    return list(run_to_end(controller.channel, controller.start(request)))


@pytest.mark.parametrize("split_utf8", [False, True])
def test_the_worker_ends_the_answer_at_a_stop_string_and_closes_the_stream(
    split_utf8: bool,
) -> None:
    """Every multi-byte character cut across two tokens too: the stop string is matched on
    whole characters."""
    backend = ScriptedBackend(rate=0, split_utf8=split_utf8)
    events = generate(backend, ("主线程", "zzz: not in the script"))
    *chunks, final = events
    text = "".join(c.text for c in chunks if isinstance(c, Chunk))
    assert text == SCRIPT[: SCRIPT.index("主线程")]
    assert isinstance(final, Done) and final.reason == "stop"
    assert final.stats.tokens < len(list(backend.pieces(None)))  # the model stopped there


def test_a_stop_string_that_never_comes_changes_nothing() -> None:
    *chunks, final = generate(ScriptedBackend(rate=0, split_utf8=True), ("zzz: not in the script",))
    assert "".join(c.text for c in chunks if isinstance(c, Chunk)) == SCRIPT
    assert isinstance(final, Done) and final.reason == "stop"


def test_remote_backends_forward_the_stop_strings() -> None:
    request = GenerationRequest((Message("user", "hi"),), Sampling(), stop=("a", "b"))
    assert openai_protocol.request_body(request, "m")["stop"] == ["a", "b"]
    assert tkchat_protocol.request_body(request)["stop"] == ["a", "b"]
    plain = GenerationRequest((Message("user", "hi"),), Sampling())
    assert "stop" not in openai_protocol.request_body(plain, "m")  # strict servers: nothing new
