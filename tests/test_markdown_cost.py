"""Markdown renders in bounded time per character, whatever the model writes (issue 15).

Python-Markdown backtracks over every ``[`` (and ``*``/``_``): ``"[" * 6000`` froze the
window 3.3 s, ``"[a](" * 4000`` 2.3 s, and a block of 1,000 ``[`` cost 1,500 times a block
of prose as long. :func:`~tkchat.render.to_html.too_costly` sends such blocks to plain text.

A fuzz test renders a fixed set of adversarial blocks and a fixed number of random ones
(seeded: the same cases in every CI run, a few seconds) and compares each block's cost per
character with the cost of ordinary prose of the same length, measured in the same run: a
ratio, so the machine's speed cancels out. The bound is wide: the worst seen is 20 to 70; the
unbounded cases were 100 to 7,400.
"""

from __future__ import annotations

import random
import time

import pytest

from tkchat.render.scan import BlockKind, RawBlock
from tkchat.render.to_html import convert_whole_document, stays_plain, too_costly

PROSE = "The sky is blue because air scatters short wavelengths more. "
MAX_RATIO = 200.0  # a block's cost per character over prose's, at most
ADVERSARIAL = [
    "[" * 6000,
    "[a](" * 4000,
    "![" * 1000,
    "[]((" * 500,
    "`[" * 1000,
    "aa[" * 700,
    "*_" * 1000,
    "*a" * 1000,
    "**a*" * 500,
    "_" * 2000,
    ">" * 200,
    "> " * 1000,
    "x" + "`" * 3000,
    "<" * 2000,
    "&#" * 1000,
    "(" * 2000,
    "\\" * 2000,
    "# " * 1000,
    "- " * 1000,
    "1. " * 700,
    "|" * 2000,
]
SPECIALS = "[]()!*_`<>&\\#-+.:|~=\"' \n"


def random_blocks(count: int, seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    blocks = []
    for _ in range(count):
        size = rng.choice([200, 1000, 2000])
        alphabet = "".join(rng.choice(SPECIALS) for _ in range(rng.randint(1, 6))) + "ab"
        if rng.random() < 0.5:  # a repeated unit, as a looping model writes
            unit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
            blocks.append((unit * (size // len(unit) + 1))[:size])
        else:
            blocks.append("".join(rng.choice(alphabet) for _ in range(size)))
    return blocks


def seconds(text: str) -> float:
    """The best of three uncached renders (noise on a shared machine only ever adds)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        convert_whole_document(text)
        best = min(best, time.perf_counter() - started)
    return best


def test_render_cost_per_character_stays_bounded() -> None:
    prose_cost: dict[int, float] = {}
    worst: list[tuple[float, str]] = []
    for block in ADVERSARIAL + random_blocks(60):
        size = len(block)
        if size not in prose_cost:
            prose_cost[size] = seconds((PROSE * (size // len(PROSE) + 1))[:size])
        ratio = seconds(block) / prose_cost[size]
        worst.append((ratio, block[:20]))
    worst.sort(reverse=True)
    assert worst[0][0] < MAX_RATIO, worst[:5]


COSTLY = ["[" * 6000, "[a](" * 4000, "*a" * 1000, ">" * 40 + " deep", "1. " * 700]


@pytest.mark.parametrize("block", COSTLY)
def test_a_costly_block_is_shown_as_plain_escaped_text(block: str) -> None:
    assert too_costly(block)
    html = convert_whole_document(block + "<b>")
    assert html == f"<p>{block.replace('>', '&gt;')}&lt;b&gt;</p>"


@pytest.mark.parametrize(
    "block",
    [
        "See [the docs](https://example.org) and [the FAQ](https://example.org/faq).",
        "Use *emphasis* and **strong** and `snake_case_names` sparingly.",
        "> a quote\n> > nested once",
    ],
)
def test_ordinary_markdown_is_still_rendered(block: str) -> None:
    assert not too_costly(block)
    assert "<p>" + block.replace(">", "&gt;") not in convert_whole_document(block)


def test_the_window_leaves_huge_or_costly_prose_plain_but_colours_code() -> None:
    def raw(kind: BlockKind, text: str) -> RawBlock:
        return RawBlock(kind, text.split("\n"))

    assert stays_plain(raw("para", "word " * 20_000))  # 100 KB: cutting it alone is slow
    assert stays_plain(raw("para", "[a](" * 4000))
    assert not stays_plain(raw("para", "A [link](https://example.org), *twice*."))
    code = "```python\n" + "x = [[1], [2]]\n" * 100 + "```"
    assert too_costly(code) and not stays_plain(raw("fence", code))  # Pygments colours it
