"""Tests for tkchat.render.safe_markdown: block splitting, escaping, the allow-list, and a
hostile answer pushed through tkhtmlview's real parser into a real Tk Text widget while a
local HTTP server counts the requests it would cause."""

from __future__ import annotations

import random
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import hostile_answer, png_bytes
from tkchat.render.safe_markdown import (
    ALLOWED_TAGS,
    DEFAULT_MAX_CHARS,
    block_pieces,
    block_to_html,
    fenced_code,
    markdown_to_safe_html,
    sanitize_html,
    split_blocks,
)
from tkchat.render.scan import scan
from tkchat.render.syntax import split_lines

# ---------------------------------------------------------------------------------------------
# Helpers


def _norm(text: str) -> str:
    """Collapse all whitespace: the splitter may only move whitespace around."""
    return " ".join(text.split())


_FENCE_LINE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*$", re.MULTILINE)
_MARKER_RE = re.compile(r"^(?:[#>*+-]+|\d+[.)])$")


def _without_fence_lines(text: str) -> str:
    return _FENCE_LINE_RE.sub("", text)


def _is_unbreakable(block: str, max_chars: int) -> bool:
    """The documented exception to the size limit: a block holding one unbreakable unit,
    i.e. a fenced block with a single code line, or one word plus its block markers."""
    lines = block.split("\n")
    if _FENCE_LINE_RE.fullmatch(lines[0]):
        return len(lines) == 3 and len(lines[1]) > max_chars - len(lines[0]) - len(lines[2]) - 2
    tokens = block.split()
    longest = max(tokens, key=len)
    others = list(tokens)
    others.remove(longest)
    return all(_MARKER_RE.match(t) for t in others)


def _assert_sizes(blocks: list[str], max_chars: int) -> None:
    for block in blocks:
        assert len(block) <= max_chars or _is_unbreakable(block, max_chars), (
            f"block of {len(block)} > {max_chars} chars is breakable: {block[:120]!r}"
        )


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _html_text(html_text: str) -> str:
    parser = _TextOf()
    parser.feed(html_text)
    parser.close()
    return " ".join(parser.parts)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text))


def _markup_free(markdown_text: str) -> str:
    """The words a reader should see: without fence lines (their info strings are not
    rendered) and without link targets (links are shown as their text only)."""
    text = _without_fence_lines(markdown_text)
    return re.sub(r"\]\([^)]*\)", "]", text)


_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)([^>]*)>")


def _assert_only_allowed_markup(html_text: str) -> None:
    for closing, name, rest in _TAG_RE.findall(html_text):
        assert name in ALLOWED_TAGS, f"tag <{closing}{name}> is not allowed"
        assert rest == "", f"tag <{name}> kept attributes: {rest!r}"


# A realistic long answer: headings, prose with inline markup, ordered/nested/bullet lists,
# quotes, several code blocks (one far longer than a block), a long list, a long paragraph.
_VOCAB_TEXT = (
    "the model streams tokens while window stays responsive because every callback returns "
    "quickly and renderer works block by block so nothing freezes queue worker thread event "
    "loop latency budget measure frame widget text layout parser markdown answer user"
)
_VOCAB = _VOCAB_TEXT.split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_VOCAB) for _ in range(rng.randint(6, 16))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice(".!?.")


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _code(rng: random.Random, lang: str, lines: int, fence: str = "```") -> str:
    body = [
        f"    result_{i} = compute({i}, {rng.choice(_VOCAB)!r})  # step {i} of {lines}"
        for i in range(lines)
    ]
    return "\n".join([f"{fence}{lang}", "def run():", *body, "    return result_0", fence])


def _long_answer(seed: int = 7, target: int = 11_000) -> str:
    rng = random.Random(seed)
    parts: list[str] = ["# Rendering long answers", _paragraph(rng, 4)]
    section = 0
    while len("\n\n".join(parts)) < target:
        section += 1
        parts.append(f"## Part {section}: {rng.choice(_VOCAB)} {rng.choice(_VOCAB)}")
        parts.append(
            f"{_sentence(rng)} Use `queue.get_nowait()` and **keep callbacks short** as "
            f"[the guide](https://example.com/guide/{section}) says. {_paragraph(rng, 2)}"
        )
        parts.append(
            "1. "
            + _sentence(rng)
            + "\n2. "
            + _sentence(rng)
            + "\n   - "
            + _sentence(rng)
            + "\n   - "
            + _sentence(rng)
            + "\n3. "
            + _sentence(rng)
        )
        parts.append(_code(rng, "python", rng.randint(4, 12)))
        parts.append("> " + _sentence(rng) + "\n> " + _sentence(rng))
        if section == 1:
            parts.append(_code(rng, "python", 40))  # ~2,700 chars: split by lines
            parts.append(_paragraph(rng, 20))  # ~1,800 chars: split at sentence ends
            parts.append("\n".join(f"- {_sentence(rng)}" for _ in range(20)))  # long list
        if section == 2:
            parts.append(_code(rng, "bash", 6, fence="~~~"))
    return "\n\n".join(parts)


def _prose_document(rng: random.Random) -> str:
    """A random document without fences, long quotes or long headings, for the whitespace
    invariant (those three add markers when split)."""
    parts: list[str] = []
    for _ in range(rng.randint(3, 12)):
        kind = rng.choice(["para", "para", "list", "olist", "heading", "quote", "hr", "table"])
        if kind == "para":
            text = _paragraph(rng, rng.randint(1, 14))
            if rng.random() < 0.3:  # soft line breaks inside the paragraph
                words = text.split(" ")
                text = " ".join(w + ("\n" if rng.random() < 0.1 else "") for w in words)
                text = text.replace("\n ", "\n")
            parts.append(text)
        elif kind in ("list", "olist"):
            items = []
            for i in range(rng.randint(1, 12)):
                marker = f"{i + 1}." if kind == "olist" else "-"
                item = f"{marker} {_paragraph(rng, rng.randint(1, 3))}"
                if rng.random() < 0.2:
                    item += f"\n   - {_sentence(rng)}"
                items.append(item)
            parts.append(("\n\n" if rng.random() < 0.3 else "\n").join(items))
        elif kind == "heading":
            parts.append("#" * rng.randint(1, 6) + " " + " ".join(rng.sample(_VOCAB, 3)))
        elif kind == "quote":
            parts.append("> " + " ".join(rng.sample(_VOCAB, 4)))
        elif kind == "hr":
            parts.append("---")
        else:
            parts.append("| a | b |\n|---|---|\n| " + " | ".join(rng.sample(_VOCAB, 2)) + " |")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# split_blocks: structure


def test_blocks_in_order_by_kind() -> None:
    doc = (
        "# Title\n\nFirst paragraph\nwraps here.\n\n- a\n- b\n\n  still b\n- c\n\n"
        "> quoted\nlazy line\n\n```py\nx = 1\n\n# not a heading\n```\n\n---\n\n"
        "Setext\n======\n\n    indented code\n\n    more code\n\nLast."
    )
    assert split_blocks(doc) == [
        "# Title",
        "First paragraph\nwraps here.",
        "- a\n- b\n\n  still b\n- c",
        "> quoted\nlazy line",
        "```py\nx = 1\n\n# not a heading\n```",
        "---",
        "Setext\n======",
        "    indented code\n\n    more code",
        "Last.",
    ]


def test_list_after_paragraph_without_blank_line_is_its_own_block() -> None:
    # Python-Markdown would glue "1. a 2. b" into the paragraph; as separate blocks the list
    # renders as a list, which is what a model writing "Steps:\n1. ..." means.
    blocks = split_blocks("Steps:\n1. first\n2. second\nlazy continuation\n\nAfter.")
    assert blocks == ["Steps:", "1. first\n2. second\nlazy continuation", "After."]
    assert "<ol>" in block_to_html(blocks[1])


def test_heading_and_fence_interrupt_a_paragraph() -> None:
    assert split_blocks("text\n# Head\nmore\n```\ncode\n```") == [
        "text",
        "# Head",
        "more",
        "```\ncode\n```",
    ]


def test_unclosed_fence_runs_to_the_end_and_is_closed() -> None:
    doc = "Intro.\n\n```python\ndef f():\n\n# comment, not a heading\n- not a list\n\n"
    assert split_blocks(doc) == [
        "Intro.",
        "```python\ndef f():\n\n# comment, not a heading\n- not a list\n```",
    ]
    assert "<pre><code>def f():" in block_to_html(split_blocks(doc)[1])


def test_fence_variants() -> None:
    # A tilde fence is not closed by backticks, a closer may be longer than its opener,
    # and ``` with backticks in its info string is inline code, not a fence.
    assert split_blocks("~~~\na\n```\nb\n~~~~\n\nafter") == ["~~~\na\n```\nb\n~~~~", "after"]
    assert split_blocks("````\n```\ninner\n```\n````") == ["````\n```\ninner\n```\n````"]
    assert split_blocks("```not `a` fence```\ntext") == ["```not `a` fence```\ntext"]


def test_crlf_and_blank_input() -> None:
    assert split_blocks("a\r\nb\r\n\r\nc\rd") == ["a\nb", "c\nd"]
    assert split_blocks("") == []
    assert split_blocks(" \n\t\n") == []
    assert markdown_to_safe_html("") == ""


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError):
        split_blocks("text", 0)


# ---------------------------------------------------------------------------------------------
# split_blocks: splitting long blocks


def test_long_fence_is_split_by_whole_lines_keeping_its_info_string() -> None:
    lines = [f"print({i}, {'x' * (i % 37)!r})" for i in range(80)]
    doc = "```python title=demo.py\n" + "\n".join(lines) + "\n```"
    blocks = split_blocks(doc, 300)
    assert len(blocks) > 5
    body: list[str] = []
    for block in blocks:
        assert len(block) <= 300
        piece = block.split("\n")
        assert piece[0] == "```python title=demo.py"
        assert piece[-1] == "```"
        body.extend(piece[1:-1])
        assert block_to_html(block).startswith("<pre><code>print(")
    assert body == lines


def test_long_tilde_fence_pieces_keep_their_fence() -> None:
    doc = "~~~~ js\n" + "\n".join(f"let v{i} = {i};" for i in range(100)) + "\n~~~~"
    for block in split_blocks(doc, 200):
        assert block.startswith("~~~~ js\n") and block.endswith("\n~~~~")
        assert len(block) <= 200


def test_a_single_code_line_longer_than_the_limit_is_the_only_exception() -> None:
    long_line = "x = '" + "a" * 700 + "'"
    doc = f"```py\nshort = 1\n{long_line}\nshort = 2\n```"
    blocks = split_blocks(doc, 100)
    assert blocks == ["```py\nshort = 1\n```", f"```py\n{long_line}\n```", "```py\nshort = 2\n```"]
    _assert_sizes(blocks, 100)


def test_long_paragraph_splits_at_sentence_ends() -> None:
    rng = random.Random(3)
    para = _paragraph(rng, 40)
    blocks = split_blocks(para, 400)
    assert len(blocks) > 3
    assert all(len(b) <= 400 for b in blocks)
    assert _norm("\n\n".join(blocks)) == _norm(para)
    # Every cut but the last falls after a sentence end when one is in the second half.
    assert sum(b[-1] in ".!?" for b in blocks[:-1]) >= len(blocks[:-1]) - 1


def test_long_word_gets_a_block_of_its_own() -> None:
    url = "https://example.com/" + "p" * 900
    doc = f"See {url} for details and more words after it."
    blocks = split_blocks(doc, 100)
    assert blocks == ["See", url, "for details and more words after it."]
    _assert_sizes(blocks, 100)


def test_cuts_avoid_inline_code_and_links() -> None:
    doc = "word " * 30 + "`a code span with spaces` " + "word " * 30
    for block in split_blocks(doc, 160):
        assert block.count("`") % 2 == 0
    doc = "word " * 30 + "[a link with a long text](https://x.org) " + "word " * 30
    for block in split_blocks(doc, 160):
        assert block.count("[") == block.count("]")


def test_cuts_never_break_graphemes_or_surrogate_pairs() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one grapheme, several code points
    accented = "e\u0301te\u0301"  # combining acute accents
    astral = "\U0001d400\U0001d401\U0001f600"  # outside the BMP: surrogate pairs in UTF-16
    tokens = [family, accented, astral, "plain", "na\u00efve", "nbsp\u00a0joined"]
    rng = random.Random(11)
    text = " ".join(rng.choice(tokens) for _ in range(400))
    for max_chars in (12, 37, 100, 600):
        blocks = split_blocks(text, max_chars)
        assert _norm("\n\n".join(blocks)) == _norm(text)
        # No-break spaces are never cut points, so "nbsp\xa0joined" stays whole.
        assert all(t in tokens for b in blocks for t in b.split(" "))
        for block in blocks:
            block.encode("utf-16")  # raises on a lone surrogate
            assert not unicodedata.combining(block[0])
            assert block[0] != "\u200d" and block[-1] != "\u200d"
        _assert_sizes(blocks, max_chars)


def test_cjk_text_is_cut_after_full_stops() -> None:
    sentence = "\u8fd9\u662f\u4e00\u4e2a\u6d4b\u8bd5\u53e5\u5b50\u3002"  # 这是一个测试句子。
    text = sentence * 150
    blocks = split_blocks(text, 200)
    assert len(blocks) > 5
    assert all(len(b) <= 200 and b.endswith("\u3002") for b in blocks)
    assert "".join(blocks) == text


def test_long_list_is_split_between_items() -> None:
    rng = random.Random(5)
    items = [f"{i}. {_sentence(rng)}" for i in range(1, 41)]
    doc = "\n".join(items)
    blocks = split_blocks(doc, 250)
    assert len(blocks) > 3
    assert all(len(b) <= 250 for b in blocks)
    assert "\n".join(blocks).split("\n") == items  # between items, never inside one
    # each piece a list numbered on from the last: "<ol>" first, then "<ol start=...>"
    starts = [b.split(".", 1)[0] for b in blocks]
    assert starts[0] == "1" and "<ol>" in block_to_html(blocks[0])
    assert all(
        f'<ol start="{n}">' in block_to_html(b) for n, b in zip(starts[1:], blocks[1:], strict=True)
    )


def test_oversized_list_item_is_split_like_a_document() -> None:
    rng = random.Random(9)
    doc = (
        f"- {_paragraph(rng, 12)}\n\n  {_paragraph(rng, 3)}\n\n"
        "  ```py\n  x = 1\n  ```\n- short item"
    )
    blocks = split_blocks(doc, 300)
    _assert_sizes(blocks, 300)
    assert blocks[0].startswith("- ")
    assert "```py\nx = 1\n```" in blocks  # dedented: renders as code
    assert blocks[-1] == "- short item"
    assert _norm(_without_fence_lines("\n\n".join(blocks))) == _norm(_without_fence_lines(doc))


def test_long_blockquote_pieces_stay_quoted() -> None:
    rng = random.Random(13)
    quote = "\n".join(f"> {_sentence(rng)}" for _ in range(30))
    blocks = split_blocks(quote, 300)
    assert len(blocks) > 3
    for block in blocks:
        assert len(block) <= 300
        assert all(line.startswith(">") for line in block.split("\n"))
        assert block_to_html(block).startswith("<blockquote>")
    strip = re.compile(r"^> ?", re.MULTILINE)
    assert _norm(strip.sub("", "\n\n".join(blocks))) == _norm(strip.sub("", quote))


def test_long_heading_keeps_its_level() -> None:
    heading = "### " + " ".join(["heading"] * 60)
    blocks = split_blocks(heading, 100)
    assert len(blocks) > 1 and all(b.startswith("### ") and len(b) <= 100 for b in blocks)


@pytest.mark.parametrize(
    "doc",
    [
        "> " * 2000 + "deep",  # would recurse once per level
        "- " * 2000 + "deep",
        "\n".join("    " * i + "- deep" for i in range(300)),  # Python-Markdown recursion
        "*" * 5000 + "deep" + "*" * 5000,
        "`` " + "` a " * 5000 + "deep",
    ],
    ids=["quotes", "markers", "nested-list", "stars", "backticks"],
)
def test_hostile_structures_neither_crash_nor_lose_text(doc: str) -> None:
    blocks = split_blocks(doc, 600)
    _assert_sizes(blocks, 600)
    html_text = "\n".join(block_to_html(b) for b in blocks)
    assert "deep" in _html_text(html_text)
    _assert_only_allowed_markup(html_text)
    # Rendered whole, the nested list overflows Python-Markdown's recursion: plain text then.
    whole = markdown_to_safe_html(doc)
    assert "deep" in _html_text(whole)
    _assert_only_allowed_markup(whole)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("max_chars", [60, 200, DEFAULT_MAX_CHARS])
def test_random_documents_lose_nothing(seed: int, max_chars: int) -> None:
    doc = _prose_document(random.Random(seed * 1000 + max_chars))
    blocks = split_blocks(doc, max_chars)
    assert _norm("\n\n".join(blocks)) == _norm(doc)
    _assert_sizes(blocks, max_chars)
    assert all(b == b.strip("\n") and b.strip() for b in blocks)


def test_11k_answer_blocks_fit_and_html_covers_every_word() -> None:
    answer = _long_answer()
    assert 11_000 <= len(answer) <= 12_000
    assert answer.count("```python") >= 5  # several code blocks
    blocks = split_blocks(answer, 600)
    assert max(len(b) for b in blocks) <= 600
    assert len(blocks) > 20
    # Order and content: the words in sequence, fence lines aside, are unchanged.
    assert _norm(_without_fence_lines("\n\n".join(blocks))) == _norm(_without_fence_lines(answer))
    html_text = "\n".join(block_to_html(b) for b in blocks)
    _assert_only_allowed_markup(html_text)
    missing = _words(_markup_free(answer)) - _words(_html_text(html_text))
    assert not missing
    assert html_text.count("<pre>") > answer.count("```python")  # the long one was split


# ---------------------------------------------------------------------------------------------
# block_to_html / markdown_to_safe_html


def test_raw_html_comes_out_as_escaped_text() -> None:
    out = block_to_html("Hi <script>alert(1)</script> and <img src=x onerror=alert(1)> there")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "<script" not in out and "<img" not in out
    _assert_only_allowed_markup(out)


def test_raw_html_block_is_escaped_not_passed_through() -> None:
    out = block_to_html('<div style="color:red">\n<iframe src="http://x/"></iframe>\n</div>')
    assert out.startswith("<p>&lt;div style=")
    assert "&lt;iframe src=" in out and "<iframe" not in out and "<div" not in out


def test_markdown_image_becomes_its_alt_text() -> None:
    out = block_to_html('Look: ![a chart](http://x/y.png "title") and ![](/etc/passwd).')
    assert "<img" not in out and "http://x" not in out and "/etc/passwd" not in out
    assert "a chart" in out
    _assert_only_allowed_markup(out)
    ref = block_to_html("![logo][l]\n\n[l]: http://x/logo.png")
    assert "<img" not in ref and "logo" in ref and "http://x" not in ref


def test_links_lose_their_target() -> None:
    out = block_to_html(
        "[docs](https://example.com/d) [bad](javascript:alert(1)) "
        "<https://example.org/auto> <me@example.net>"
    )
    assert "href" not in out and "javascript" not in out
    assert "<a>docs</a>" in out and "<a>bad</a>" in out
    assert "https://example.org/auto" in out  # an autolink's text is its URL
    _assert_only_allowed_markup(out)


def test_fenced_code_is_escaped_and_normalized() -> None:
    assert block_to_html("```html\n<b>hi</b> & bye\n```") == (
        "<pre><code>&lt;b&gt;hi&lt;/b&gt; &amp; bye\n</code></pre>"
    )
    # Indented opener, info string with extras, longer closer: all rendered as code.
    out = block_to_html("  ```python title='x.py'\n  if a < b:\n      pass\n  `````")
    assert out == "<pre><code>if a &lt; b:\n    pass\n</code></pre>"
    assert block_to_html("~~~\nnever closed") == "<pre><code>never closed\n</code></pre>"


def test_inline_formatting_survives() -> None:
    out = block_to_html("# T\n\n**b** *i* `c` ~~s~~")
    assert "<h1>T</h1>" in out
    assert "<strong>b</strong>" in out and "<em>i</em>" in out and "<code>c</code>" in out


def test_loose_list_items_are_unwrapped() -> None:
    # tkhtmlview would put each <li><p>'s text two lines below its bullet.
    out = block_to_html("1. **Step**: do it.\n\n2. Next.\n\n    Second paragraph.")
    assert out == (
        "<ol>\n<li><strong>Step</strong>: do it.</li>\n<li>Next.<br>\nSecond paragraph.</li>\n</ol>"
    )


def test_block_to_html_is_memoized() -> None:
    block = "memo *test* block"
    block_to_html(block)
    hits = block_to_html.cache_info().hits
    assert block_to_html(block) == block_to_html(block)
    assert block_to_html.cache_info().hits == hits + 2
    assert block_to_html.cache_info().maxsize == 4096


def test_markdown_to_safe_html_matches_the_sliced_path() -> None:
    answer = _long_answer(seed=1, target=3_000)
    whole = markdown_to_safe_html(answer)
    unsplit = split_blocks(answer, 10**9)
    assert whole == "\n".join(block_to_html(b) for b in unsplit)
    _assert_only_allowed_markup(whole)


# ---------------------------------------------------------------------------------------------
# sanitize_html


def test_sanitizer_drops_attributes_and_unknown_tags() -> None:
    dirty = (
        '<p class="x" onclick="steal()">a <a href="http://evil/" style="color:red">link</a>'
        '<img src="http://evil/p.png" onerror="x()"><iframe src="//evil">inner</iframe>'
        "<svg><circle/></svg><u>under</u></p>"
    )
    assert sanitize_html(dirty) == "<p>a <a>link</a>innerunder</p>"


def test_sanitizer_drops_script_and_style_content() -> None:
    assert sanitize_html("<p>a<script>alert('<b>')</script>b<style>p{}</style>c</p>") == (
        "<p>abc</p>"
    )
    assert sanitize_html("x<script>never closed <p>y") == "x"


def test_an_ordered_list_keeps_its_start_number_and_nothing_else() -> None:
    assert sanitize_html('<ol start="8"><li>a</li></ol>') == '<ol start="8"><li>a</li></ol>'
    assert sanitize_html('<ol start="8" onclick="x"><li>a</li></ol>') == (
        '<ol start="8"><li>a</li></ol>'
    )
    for bad in ('"8px"', '"-1"', '"1e9"', '"１２"', '"12345678901"'):
        assert sanitize_html(f"<ol start={bad}><li>a</li></ol>") == "<ol><li>a</li></ol>", bad
    assert sanitize_html('<ul start="8"><li>a</li></ul>') == "<ul><li>a</li></ul>"


def test_sanitizer_escapes_text_and_balances_tags() -> None:
    assert sanitize_html("<p>1 &lt; 2 &amp; 3 > 2 &copy; &#60;b&#62;") == (
        "<p>1 &lt; 2 &amp; 3 &gt; 2 \u00a9 &lt;b&gt;</p>"
    )
    assert sanitize_html("<ul><li><em>x</ul>tail</li>") == "<ul><li><em>x</em></li></ul>tail"
    assert sanitize_html("<br/><hr><p/>") == "<br><hr><p></p>"
    assert sanitize_html("<!-- c --><!DOCTYPE html><?pi?><![CDATA[x]]>ok") == "ok"


def test_sanitizer_output_is_a_fixed_point() -> None:
    html_text = markdown_to_safe_html(_long_answer(seed=2, target=4_000))
    assert sanitize_html(html_text) == html_text


# ---------------------------------------------------------------------------------------------
# GUI: the real tkhtmlview parser in a real Tk Text widget


@pytest.fixture
def tk_root(root: Any) -> Any:
    """The strict Tk root of conftest (fails on any callback error), sized for rendering."""
    root.geometry("900x700")
    return root


@pytest.mark.gui
def test_hostile_answer_makes_no_request_and_opens_no_file(
    tk_root: Any,
    counting_server: tuple[int, list[str]],
    io_spies: dict[str, list[str]],
    no_proxy: None,
    tmp_path: Path,
) -> None:
    from tkhtmlview import HTMLText

    port, hits = counting_server
    local_png = tmp_path / "local.png"
    local_png.write_bytes(png_bytes())
    answer = hostile_answer(port, local_png)

    whole = HTMLText(tk_root)
    whole.pack(fill="both", expand=True)
    whole.set_html(markdown_to_safe_html(answer))
    sliced = HTMLText(tk_root)
    sliced.pack(fill="both", expand=True)
    for block in split_blocks(answer):  # the app's path: one block per callback
        sliced.set_html(block_to_html(block))
        tk_root.update()
    tk_root.update()

    assert hits == []
    assert io_spies == {"get": [], "open": []}
    assert not whole.image_names() and not sliced.image_names()
    for tag in whole.tag_names():  # no tag opens a browser on click
        assert not whole.tk.splitlist(whole.tk.call(whole._w, "tag", "bind", tag))

    text = whole.get("1.0", "end")
    assert f'<img src="http://127.0.0.1:{port}/a.png">' in text
    assert "<script>alert(1)</script>" in text
    assert "<a href=javascript:alert(2)>click me</a>" in text
    assert f'<iframe src="http://127.0.0.1:{port}/frame"></iframe>' in text
    assert '<p onmouseover="alert(4)"' in text
    assert f'<img src="{local_png}">' in text
    assert "javascript:alert(3)" not in text  # a markdown link shows its text only
    assert "js" in text.split()


@pytest.mark.gui
def test_control_unsanitized_html_does_hit_the_server_and_the_disk(
    tk_root: Any,
    counting_server: tuple[int, list[str]],
    io_spies: dict[str, list[str]],
    no_proxy: None,
    tmp_path: Path,
) -> None:
    """Positive control: the harness above would notice a request or a file read, because
    tkhtmlview given the raw markup really does both."""
    from tkhtmlview import HTMLText

    port, hits = counting_server
    local_png = tmp_path / "local.png"
    local_png.write_bytes(png_bytes())
    widget = HTMLText(tk_root)
    widget.set_html(f'<img src="http://127.0.0.1:{port}/a.png"><img src="{local_png}">')
    assert hits == ["/a.png"]
    assert io_spies["get"] == [f"http://127.0.0.1:{port}/a.png"]
    assert str(local_png) in io_spies["open"]
    assert len(widget.image_names()) == 2


@pytest.mark.gui
def test_tkhtmlview_shows_safe_markup_as_expected(tk_root: Any) -> None:
    """Documents what tkhtmlview does with each allowed construct (see the module docs)."""
    from tkhtmlview import HTMLText

    widget = HTMLText(tk_root)
    md = (
        "# Head\n\nPara with `code` and **bold**.\n\n> quoted\n\n- a\n    - nested\n- b\n\n"
        "3. three\n4. four\n\n---\n\n```\n  indented  code\n```\n\nline one  \nline two\n\n"
        "- loose\n\n- list\n\nend [link](https://example.com)"
    )
    widget.set_html(markdown_to_safe_html(md))
    text = widget.get("1.0", "end")
    assert "\t\u2022\tloose\n\t\u2022\tlist" in text  # bullet and text on one line
    assert "line two\n\n\t\u2022" in text  # <hr> draws nothing
    assert text.endswith("end link\n")  # a link is plain text
    assert "Head" in text and "Para with code and bold." in text
    assert "quoted" in text and "> quoted" not in text  # a blockquote is plain text
    assert "\t\u2022\ta\n\t\t\t\u2022\tnested\n\t\u2022\tb" in text  # nested lists indent
    assert "\t1.\tthree\n\t2.\tfour" in text  # the start number is not kept
    assert "  indented  code" in text  # <pre> keeps whitespace
    assert "line one\nline two" in text  # <br>


@pytest.mark.parametrize(
    ("block", "code"),
    [
        ("```python\nprint(1)\n  x = 2\n```", "print(1)\n  x = 2"),
        ("~~~\nplain\n~~~", "plain"),
        ("````\n```\nnested fence\n```\n````", "```\nnested fence\n```"),
        ("  ```\n  indented\n    more\n  ```", "indented\n  more"),
        ("```js\nnever closed", "never closed"),
        ("```\n```", ""),
    ],
)
def test_fenced_code_is_what_copy_code_copies(block: str, code: str) -> None:
    assert fenced_code(block) == code


@pytest.mark.parametrize("block", ["a paragraph", "    indented code", "- a list", "`inline`"])
def test_fenced_code_is_none_for_anything_else(block: str) -> None:
    assert fenced_code(block) is None


def test_block_pieces_give_a_fence_its_language_and_whole_code_on_its_first_piece() -> None:
    code = "\n".join(f"line_{i} = {i}  # a long enough line of code" for i in range(80))
    text = f"Intro.\n\n```python title=x\n{code}\n```\n\nMiddle.\n\n~~~\nshort\n~~~\n\nEnd."
    pieces = [piece for raw in scan(split_lines(text)) for piece in block_pieces(raw, 1000)]
    assert [piece.markdown for piece in pieces] == split_blocks(text, 1000)
    python = [piece for piece in pieces if piece.lang == "python"]
    assert len(python) > 1  # the long fence was split for rendering ...
    assert python[0].first and python[0].code == code  # ... and one link copies all of it
    assert all(not piece.first and piece.code is None for piece in python[1:])
    assert "\n".join(piece.code_text() for piece in python) == code  # shown whole, once
    (short,) = [piece for piece in pieces if piece.kind == "fence" and not piece.lang]
    assert short.code == "short" and short.code_text() == "short"
    assert [piece.kind for piece in pieces if piece.kind != "fence"] == ["para"] * 3


def test_indented_code_shows_its_code_without_the_indent() -> None:
    (raw,) = scan(split_lines("    x = 1\n\n      y = 2"))
    (piece,) = block_pieces(raw)
    assert piece.kind == "code" and piece.code is None and piece.lang == ""
    assert piece.code_text() == "x = 1\n\n  y = 2"


def test_a_single_line_break_stays_a_line_break() -> None:
    poem = "Roses are **red,\nviolets** are blue,\n\nsugar is sweet."
    html = markdown_to_safe_html(poem)
    assert html.count("<br>") == 1 and html.count("<p>") == 2  # inside the bold, too
    assert block_to_html("> one\n> two").count("<br>") == 1  # a quote's paragraph too
    assert block_to_html("hard  \nbreak").count("<br>") == 1  # not doubled
    assert "<br>" not in block_to_html("- a long item\n  wrapped by the model")  # joined
    assert "<br>" not in block_to_html("`code\nspan` and text")
