"""BlockStream: the blocks of a markdown answer handed out while it streams (no Tk)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from tkchat.generate.scripted import SCRIPT, long_answer
from tkchat.render import stream as stream_module
from tkchat.render.safe_markdown import BlockStream, StreamBlock
from tkchat.render.scan import scan
from tkchat.render.syntax import split_lines

DOCUMENTS = {
    "script": SCRIPT,
    "long": long_answer(6_000),
    "lists and quotes": (
        "Intro line one\nline two\n\n- a\n\n  more of a\n- b\nlazy\n\n1. one\n2. two\n\n"
        "> quoted\n> still\n\n    indented code\n\n    more code\n\nSetext\n---\n\n***\n\n"
        "```\nunclosed fence\n\nwith a blank line"
    ),
    "leading and trailing blanks": "\n\n\n# Title\n\npara\n\n\n",
    "crlf": "para one\r\nline two\r\n\r\n- item\r\n\r\ndone\r\n",
}


def stream_in_chunks(text: str, rng: random.Random) -> list[tuple[int, StreamBlock]]:
    """Feed ``text`` in random pieces, taking blocks whenever feed says one may be ready;
    each block comes with how many characters had arrived when it was handed out."""
    stream = BlockStream()
    out: list[tuple[int, StreamBlock]] = []
    position = 0
    while position < len(text):
        step = rng.choice((1, 1, 2, 3, 7, 40))
        chunk = text[position : position + step]
        position += len(chunk)
        if stream.feed(chunk):
            while (block := stream.next_block()) is not None:
                out.append((position, block))
    stream.end()
    while (block := stream.next_block()) is not None:
        out.append((position, block))
    assert stream.exhausted
    return out


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
@pytest.mark.parametrize("seed", range(5))
def test_streamed_blocks_are_the_blocks_of_the_whole_text(name: str, seed: int) -> None:
    text = DOCUMENTS[name]
    blocks = [block for _, block in stream_in_chunks(text, random.Random(seed))]
    expected = list(scan(split_lines(text.replace("\r", ""))))
    assert [block.raw for block in blocks if block.raw.lines] == expected
    # Their line counts cover the text exactly: the widget's plain lines, one by one.
    *counted, last = blocks
    assert last.lines is None and all(block.lines for block in counted)
    assert sum(block.lines or 0 for block in counted) <= text.count("\n")


def test_a_paragraph_is_complete_at_the_blank_line_after_it() -> None:
    stream = BlockStream()
    stream.feed("A paragraph\nof two lines.\n")
    assert stream.next_block() is None  # the next line may still belong to it
    stream.feed("\n")
    block = stream.next_block()
    assert block is not None and block.raw.kind == "para" and block.lines == 2


@pytest.mark.parametrize(
    ("following", "complete"),
    [
        ("  more of the item", False),  # indented: the item goes on
        ("- another item", False),  # another item of the same list
        ("12. numbered", False),
        ("A paragraph", True),  # unindented text ends it, as soon as it has begun
        (" x", True),  # one space is not enough to go on with the item
    ],
)
def test_a_list_waits_for_the_line_after_the_blank_one(following: str, complete: bool) -> None:
    stream = BlockStream()
    assert stream.feed("- an item\n\n")
    assert stream.next_block() is None
    stream.feed(" ")  # a space alone says nothing yet
    assert stream.next_block() is None
    stream.feed(following[1:] if following.startswith(" ") else following)
    found = stream.next_block()
    assert (found is not None and found.raw.kind == "list") is complete


def test_a_fence_is_complete_when_closed_and_a_heading_at_its_line_end() -> None:
    stream = BlockStream()
    stream.feed("# Title")
    assert stream.next_block() is None  # the line is not complete yet
    stream.feed("\n```py\nx = 1\n\ny = 2\n")
    heading = stream.next_block()
    assert heading is not None and heading.raw.kind == "heading" and heading.lines == 1
    assert stream.next_block() is None  # an open fence runs on, blank lines and all
    stream.feed("```\n")
    fence = stream.next_block()
    assert fence is not None and fence.raw.kind == "fence" and fence.lines == 5


def test_the_last_block_runs_to_the_end_and_trailing_blanks_go_with_it() -> None:
    stream = BlockStream()
    stream.feed("# Title\n\nlast words\n\n\n")
    assert stream.next_block() is not None  # the heading
    para = stream.next_block()
    assert para is not None and para.lines == 2  # its blank line, then its text
    stream.end()
    rest = stream.next_block()  # the blank lines left: an empty block that takes them
    assert rest is not None and rest.raw.lines == [] and rest.lines is None
    assert stream.next_block() is None and stream.exhausted


@pytest.mark.parametrize(
    ("text", "open_heading"),
    [
        ("para\n\n### Part 3: wh", True),  # cut in the middle of its heading
        ("para\n\n### 第12部分：主", True),
        ("para\n\n### Part 3: what the loop does\n", False),  # the heading's line ended
        ("### Part 3\n\nbody te", False),  # cut in a paragraph
        ("para\n\n### Part 3  ", True),
    ],
)
def test_an_answer_cut_in_its_last_heading_says_so(text: str, open_heading: bool) -> None:
    """An answer cut by its length limit (or Stop) in the middle of a heading's line: its
    last block says it is an open heading, which the window leaves plain (painted, the
    flood of lesson 11 in Chinese ended in a big, half-written heading)."""
    stream = BlockStream()
    stream.feed(text)
    stream.end()
    blocks = []
    while (block := stream.next_block()) is not None:
        blocks.append(block)
    assert [block.open_heading for block in blocks] == [False] * (len(blocks) - 1) + [open_heading]


def unfenced_code(index: int) -> str:
    """The lines of a long run of unfenced Python, a function every five: dedents and blank
    lines, which end indented code and paragraphs, go on with it."""
    return ("def f{0}(x):\n", "    y = x + {0}\n", "\n", "    return y\n", "\n")[index % 5].format(
        index // 5
    )


@pytest.mark.parametrize(
    "line",
    [lambda index: f"line {index} of a very long poem\n", unfenced_code],
    ids=["a poem", "unfenced code"],
)
def test_an_enormous_open_block_is_scanned_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, line: Callable[[int], str]
) -> None:
    """A 4,000-line paragraph (or run of unfenced code) fed line by line: rescanning it at
    every line would be quadratic; the lines scanned in all stay linear in its length."""
    scanned: list[int] = []
    real = stream_module.scan_spans

    def counting(lines: list[str], start: int = 0, *, final: bool = True):  # type: ignore[no-untyped-def]
        scanned.append(len(lines) - start)
        return real(lines, start, final=final)

    monkeypatch.setattr(stream_module, "scan_spans", counting)
    stream = BlockStream()
    lines = 4_000
    for index in range(lines):
        if stream.feed(line(index)):
            assert stream.next_block() is None
    assert len(scanned) < 400
    # 256 lines scanned at every line, then every time the block grew by an eighth
    assert sum(scanned) < 20 * lines
    stream.feed("\nThe end.\n\n")
    block = stream.next_block()
    text = "".join(line(index) for index in range(lines))
    assert block is not None and block.lines == text.rstrip("\n").count("\n") + 1


def test_feeding_after_the_end_is_refused() -> None:
    stream = BlockStream()
    stream.end()
    with pytest.raises(ValueError):
        stream.feed("more")
