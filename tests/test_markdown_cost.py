"""Markdown renders in bounded time per character, whatever the model writes (issue 15).

Python-Markdown backtracks over every ``[`` (and ``*``/``_``): ``"[" * 6000`` froze the
window 3.3 s, ``"[a](" * 4000`` 2.3 s, and a block of 1,000 ``[`` cost 1,500 times a block
of prose as long. :func:`~tkchat.render.to_html.too_costly` sends such blocks to plain text:
these tests check that decision and what it shows. How long a render of each adversarial
block takes, against prose of the same length in the same run, is the bench's to measure.
"""

from __future__ import annotations

import pytest

from tkchat.render.scan import BlockKind, RawBlock
from tkchat.render.to_html import convert_whole_document, stays_plain, too_costly

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
