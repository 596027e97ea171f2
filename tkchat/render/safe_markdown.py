"""Model markdown to safe HTML, one top-level block at a time.

Why blocks: tkhtmlview lays HTML into a Tk Text widget on the Tk main thread, and it turns
every formatting run (a bullet, a bold word, a code span) into a Tk tag with a font of its
own, about 0.3 ms each, while plain text is almost free. A finished 11,000-character answer
therefore costs 50 ms in one call when it is mostly prose and code, and around 500 ms when it
is a long bullet list with bold words. :func:`split_blocks` cuts an answer into top-level
markdown blocks of at most ``max_chars`` characters, and the UI renders one block per
``after()`` callback, so no callback runs much longer than one block costs (the figures per
block size are printed by ``tests/test_safe_markdown.py::test_print_render_timings``).

Why sanitize: the text comes from a model, so it is untrusted input. tkhtmlview fetches
``<img src="http...">`` with a blocking ``requests.get`` on the main thread, opens any local
file named by an ``img src``, and makes ``<a href>`` open a web browser on click. So nothing
the model writes may reach tkhtmlview as markup: Python-Markdown runs without its raw-HTML
preprocessor and inline pattern (so raw HTML comes out escaped, as visible text), markdown
images become their alt text, and a final allow-list pass (:func:`sanitize_html`) keeps only
attribute-less formatting tags. Links therefore show as plain text and are never clickable:
the app stays offline.

Everything here is a pure function of its arguments: no Tk, no shared mutable state apart
from the thread-safe memo cache of :func:`block_to_html`, so any thread may call it.
"""

from __future__ import annotations

import functools
import html
import re
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from typing import Literal, NamedTuple
from xml.etree.ElementTree import Element

import markdown
from markdown.treeprocessors import Treeprocessor

__all__ = [
    "ALLOWED_TAGS",
    "DEFAULT_MAX_CHARS",
    "block_to_html",
    "markdown_to_safe_html",
    "sanitize_html",
    "split_blocks",
]

DEFAULT_MAX_CHARS = 600
"""Default block size. Measured with tkhtmlview on Xvfb: a 600-character block costs about
1 ms as prose, at most ~10 ms in a typical answer, and up to ~45 ms as a dense bullet list
(short items with bold words); 300-400 keeps even that case near 20 ms."""

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "span",
    }
)  # fmt: skip
"""The only tags :func:`sanitize_html` lets through, always without attributes."""

_VOID_TAGS = frozenset({"br", "hr"})
_DROP_CONTENT_TAGS = frozenset({"script", "style"})

# ---------------------------------------------------------------------------------------------
# Line classification. The patterns follow CommonMark closely enough for splitting; rendering
# is left to Python-Markdown, which sees each block on its own.

_FENCE_OPEN_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_ATX_RE = re.compile(r"^ {0,3}(?P<marks>#{1,6})(?:[ \t]+|$)")
_HR_RE = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT_RE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_LIST_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[*+-]|\d{1,9}[.)])(?:[ \t]+|$)")
_QUOTE_RE = re.compile(r"^ {0,3}> ?")
_INDENTED_CODE_RE = re.compile(r"^(?: {4}|\t)")
_LANG_CHARS_RE = re.compile(r"[^\w#.+-]")

# Paragraph splitting: breakable whitespace excludes the no-break spaces, sentence ends are
# Latin and CJK full stops (optionally followed by closing quotes or brackets).
_BREAKABLE_WS_RE = re.compile(r"[^\S\u00a0\u2007\u202f]+")
_CLOSERS = ")\\]\"'\u201d\u2019\u00bb\u300d\u300f\uff09\u300b"
_SENTENCE_END_RE = re.compile(rf"[.!?\u2026\u3002\uff01\uff1f][{_CLOSERS}]*$")
_CJK_END_RE = re.compile(rf"[\u3002\uff01\uff1f][{_CLOSERS}]*")
# Inline spans a cut should avoid: code spans, links/images, emphasis. Cutting inside one
# would leave its opening delimiter unmatched in one block, shown as a literal character.
# Every repetition is bounded, so hostile input (10,000 asterisks) stays linear.
_PROTECTED_RE = re.compile(
    r"(`{1,16})(?!`).{1,300}?(?<!`)\1(?!`)"
    r"|!?\[[^\]\n]{0,300}\]\([^)\s]{0,500}(?:\s+\"[^\"\n]{0,200}\")?\)"
    r"|(\*{1,3}|_{1,3})(?=\S)[^\n]{1,300}?(?<=\S)\2",
    re.DOTALL,
)
# Splitting a quote or an over-long list item recurses into its content; past this depth
# (only hostile input nests that deep) the content is split as prose instead.
_MAX_NESTING = 16

BlockKind = Literal["fence", "heading", "hr", "quote", "list", "code", "para"]


class _RawBlock(NamedTuple):
    kind: BlockKind
    lines: list[str]


def _is_blank(line: str) -> bool:
    return not line.strip()


def _indent_width(line: str) -> int:
    """Leading indentation in columns, tabs advancing to the next multiple of 4."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col = (col // 4 + 1) * 4
        else:
            break
    return col


def _dedent(line: str, width: int) -> str:
    """Remove up to ``width`` columns of leading spaces/tabs (never any other character)."""
    col = 0
    i = 0
    while i < len(line) and col < width:
        if line[i] == " ":
            col += 1
        elif line[i] == "\t":
            col = (col // 4 + 1) * 4
        else:
            break
        i += 1
    return line[i:]


def _fence_open(line: str) -> re.Match[str] | None:
    """Match an opening code fence; a backtick fence's info string may not hold backticks."""
    m = _FENCE_OPEN_RE.match(line)
    if m and m.group("fence")[0] == "`" and "`" in m.group("info"):
        return None
    return m


def _fence_closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes ``fence``: same character, at least as long, nothing after."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return False
    body = body.rstrip(" \t")
    return len(body) >= len(fence) and body == fence[0] * len(body)


def fenced_code(block: str) -> str | None:
    """The code inside a fenced code block (one block of :func:`split_blocks`), without the
    fences and with the fence's indentation removed; None if ``block`` is not fenced code.
    This is what "Copy code" copies."""
    lines = block.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    opening = _fence_open(lines[0])
    if opening is None:
        return None
    end, closed = _fence_end(lines, 0, opening.group("fence"))
    body = lines[1 : end - 1] if closed else lines[1:]
    indent = len(opening.group("indent"))
    return "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in body)


def _fence_end(
    lines: list[str], start: int, fence: str, *, indented: bool = False
) -> tuple[int, bool]:
    """Index just past the closing fence and True, or ``(len(lines), False)`` when the fence
    is never closed (it then runs to the end of the text)."""
    for j in range(start + 1, len(lines)):
        line = lines[j].lstrip(" \t") if indented else lines[j]
        if _fence_closes(line, fence):
            return j + 1, True
    return len(lines), False


def _is_list_start(line: str, *, interrupting: bool = False) -> bool:
    """A list item line at top level (indent <= 3). When it would interrupt a paragraph it
    must have content after the marker, so a lone ``-`` or ``1.`` stays paragraph text."""
    if _HR_RE.match(line):
        return False
    m = _LIST_RE.match(line)
    if not m or _indent_width(line) > 3:
        return False
    return not interrupting or bool(line[m.end() :].strip())


def _interrupts(line: str) -> bool:
    """Whether a line starts a new block even without a blank line before it."""
    return bool(
        _fence_open(line)
        or _ATX_RE.match(line)
        or _HR_RE.match(line)
        or _QUOTE_RE.match(line)
        or _is_list_start(line, interrupting=True)
    )


def _next_nonblank(lines: list[str], start: int) -> int:
    j = start
    while j < len(lines) and _is_blank(lines[j]):
        j += 1
    return j


def _list_end(lines: list[str], start: int) -> int:
    """Index just past a list: items, indented continuations (fenced code included, across
    blank lines), and lazy continuation lines; it ends at a blank line followed by an
    unindented non-item line, or at an unindented line that starts another kind of block."""
    j = start + 1
    n = len(lines)
    while j < n:
        line = lines[j]
        if _is_blank(line):
            k = _next_nonblank(lines, j)
            if k < n and (_indent_width(lines[k]) >= 2 or _is_list_start(lines[k])):
                j = k
                continue
            return j
        if _indent_width(line) >= 1:
            fm = _fence_open(line.lstrip(" \t"))
            if fm:
                j, _ = _fence_end(lines, j, fm.group("fence"), indented=True)
                continue
        elif not _is_list_start(line) and _interrupts(line):
            return j
        j += 1
    return j


def _scan(lines: list[str]) -> Iterator[_RawBlock]:
    """Group lines into top-level blocks, in order, without splitting any of them (lazily:
    the painter takes blocks as its time budget allows)."""
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        if _is_blank(line):
            i += 1
            continue
        fm = _fence_open(line)
        if fm:
            j, closed = _fence_end(lines, i, fm.group("fence"))
            block = lines[i:j]
            if not closed:
                block = block[:1] + _trim_blank_edges(block[1:])
                block.append(fm.group("indent") + fm.group("fence"))  # close it: valid markdown
            yield _RawBlock("fence", block)
            i = j
            continue
        if _ATX_RE.match(line):
            yield _RawBlock("heading", [line])
            i += 1
            continue
        if _HR_RE.match(line):
            yield _RawBlock("hr", [line])
            i += 1
            continue
        if _QUOTE_RE.match(line):
            j = i + 1
            while j < n and not _is_blank(lines[j]):
                if not _QUOTE_RE.match(lines[j]) and _interrupts(lines[j]):
                    break
                j += 1
            yield _RawBlock("quote", lines[i:j])
            i = j
            continue
        if _is_list_start(line):
            j = _list_end(lines, i)
            yield _RawBlock("list", lines[i:j])
            i = j
            continue
        if _INDENTED_CODE_RE.match(line):
            j = i + 1
            while j < n:
                if _is_blank(lines[j]):
                    k = _next_nonblank(lines, j)
                    if k < n and _INDENTED_CODE_RE.match(lines[k]):
                        j = k
                        continue
                    break
                if not _INDENTED_CODE_RE.match(lines[j]):
                    break
                j += 1
            yield _RawBlock("code", lines[i:j])
            i = j
            continue
        j = i + 1
        while j < n and not _is_blank(lines[j]):
            if _SETEXT_RE.match(lines[j]):
                j += 1  # a setext underline belongs to its heading text
                break
            if _interrupts(lines[j]):
                break
            j += 1
        yield _RawBlock("para", lines[i:j])
        i = j


# ---------------------------------------------------------------------------------------------
# Splitting over-long blocks.


def _pack(units: list[str], budget: int) -> list[list[str]]:
    """Greedily group units so each group's newline-join fits ``budget``; a unit longer than
    the budget forms a group of its own (it cannot be cut without changing content)."""
    groups: list[list[str]] = []
    current: list[str] = []
    size = 0
    for unit in units:
        cost = len(unit) + (1 if current else 0)
        if current and size + cost > budget:
            groups.append(current)
            current, size, cost = [], 0, len(unit)
        current.append(unit)
        size += cost
    if current:
        groups.append(current)
    return groups


def _trim_blank_edges(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and _is_blank(lines[start]):
        start += 1
    while end > start and _is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def _split_fence(lines: list[str], max_chars: int) -> list[str]:
    """Split fenced code by whole lines; every piece re-opens with the same opener (same
    info string) and is closed, so each piece is a valid fenced block on its own."""
    whole = "\n".join(lines)
    if len(whole) <= max_chars:
        return [whole]
    opener, body, closer = lines[0], lines[1:-1], lines[-1]
    budget = max_chars - len(opener) - len(closer) - 2
    return ["\n".join([opener, *group, closer]) for group in _pack(body, budget)]


_Candidate = tuple[int, int, int]  # (cut: end of this piece, resume: start of next, rank)

_PREFERENCES: tuple[Callable[[_Candidate, int], bool], ...] = (
    lambda c, half: c[2] == 2 and c[0] >= half,  # a sentence end in the second half
    lambda c, half: c[2] >= 1 and c[0] >= half,  # a line break in the second half
    lambda c, half: True,  # the last breakable space that fits
)


def _split_text(text: str, limit: int) -> list[str]:
    """Split prose into pieces of at most ``limit`` characters.

    Cuts happen only at breakable whitespace (which is dropped) or right after a CJK full
    stop, so a cut never falls inside a word, a surrogate pair or a combining sequence: all
    of those are free of whitespace. Preference: a sentence end in the second half of the
    window, then a line break there, then the last space that fits; cuts inside inline
    code, links or emphasis are avoided when any other cut fits. A word longer than
    ``limit`` becomes a piece of its own.
    """
    text = text.strip()
    limit = max(1, limit)
    if len(text) <= limit:
        return [text] if text else []

    candidates: list[_Candidate] = []
    for m in _BREAKABLE_WS_RE.finditer(text):
        s, e = m.span()
        if s == 0 or e == len(text):
            continue
        rank = 1 if "\n" in m.group() else 0
        if _SENTENCE_END_RE.search(text, max(0, s - 8), s):
            rank = 2
        candidates.append((s, e, rank))
    for m in _CJK_END_RE.finditer(text):
        e = m.end()
        if 0 < e < len(text) and not text[e].isspace():
            candidates.append((e, e, 2))
    candidates.sort()
    cuts = [c[0] for c in candidates]

    spans = [m.span() for m in _PROTECTED_RE.finditer(text) if m.end() - m.start() <= limit // 2]
    span_starts = [s for s, _ in spans]

    def protected(pos: int) -> bool:
        k = bisect_left(span_starts, pos) - 1
        return k >= 0 and spans[k][1] > pos

    pieces: list[str] = []
    start = 0
    while len(text) - start > limit:
        lo = bisect_right(cuts, start)
        hi = bisect_right(cuts, start + limit)
        window = candidates[lo:hi]
        half = start + limit // 2
        unprotected = [c for c in window if not protected(c[0])]
        choice: _Candidate | None = None
        for prefer in _PREFERENCES:
            hits = [c for c in unprotected if prefer(c, half)]
            if hits:
                choice = hits[-1]
                break
        if choice is None and window:
            choice = window[-1]
        if choice is None:
            if hi >= len(candidates):
                break  # the rest is a single unbreakable word
            choice = candidates[hi]  # first cut after an over-long word
        cut, resume, _ = choice
        pieces.append(text[start:cut].rstrip())
        start = resume
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _split_heading(line: str, max_chars: int) -> list[str]:
    """An over-long heading becomes several headings of the same level."""
    text = line.strip()
    if len(text) <= max_chars:
        return [text]
    m = _ATX_RE.match(text)
    assert m is not None
    prefix = m.group("marks") + " "
    return [prefix + p for p in _split_text(text[m.end() :], max_chars - len(prefix))]


def _quote(block: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in block.split("\n"))


def _split_quote(lines: list[str], max_chars: int, depth: int) -> list[str]:
    """Split a blockquote's content like a document, then quote every piece again."""
    whole = "\n".join(lines)
    if len(whole) <= max_chars:
        return [whole]
    if depth >= _MAX_NESTING:
        return _split_text(whole, max_chars)
    inner = "\n".join(line[m.end() :] if (m := _QUOTE_RE.match(line)) else line for line in lines)
    out: list[str] = []

    def emit(text: str, budget: int) -> None:
        for sub in _split_blocks(text, max(1, budget), depth + 1):
            quoted = _quote(sub)
            if len(quoted) <= max_chars:
                out.append(quoted)
                continue
            # "> " on every line made it too long: split this piece again, tighter.
            smaller = budget - (len(quoted) - max_chars)
            parts = _split_blocks(sub, max(1, smaller), depth + 1)
            if len(parts) <= 1 or smaller < 1:
                out.append(quoted)  # unbreakable (a single word or code line)
            else:
                for part in parts:
                    emit(part, smaller)

    emit(inner, max_chars - 2)
    return out


def _split_list(lines: list[str], max_chars: int, depth: int) -> list[str]:
    """Split a list between its top-level items; an item too long on its own is split
    like a document (its first piece keeps the marker, the rest follow as plain blocks)."""
    whole = "\n".join(_trim_blank_edges(lines))
    if len(whole) <= max_chars:
        return [whole]
    base = _indent_width(lines[0])
    items: list[list[str]] = []
    in_fence: str | None = None
    for line in lines:
        if in_fence is not None:
            items[-1].append(line)
            if _fence_closes(line.lstrip(" \t"), in_fence):
                in_fence = None
            continue
        is_item = (
            _LIST_RE.match(line) is not None
            and not _HR_RE.match(line)
            and _indent_width(line) < base + 2
        )
        if is_item or not items:
            items.append([line])
            continue
        items[-1].append(line)
        fm = _fence_open(line.lstrip(" \t"))
        if fm:
            in_fence = fm.group("fence")

    out: list[str] = []
    current: list[str] = []  # the item texts packed into the next piece
    size = 0
    for item in items:
        text = "\n".join(item)  # keeps its trailing blank lines: a loose list stays loose
        visible = "\n".join(_trim_blank_edges(item))
        if len(visible) > max_chars:
            if current:
                out.append("\n".join(current).rstrip())
                current, size = [], 0
            out.extend(_split_item(_trim_blank_edges(item), max_chars, depth))
            continue
        cost = len(visible) + (1 if current else 0)
        if current and size + cost > max_chars:
            out.append("\n".join(current).rstrip())
            current, size = [], 0
        current.append(text)
        size = len("\n".join(current).rstrip())
    if current:
        out.append("\n".join(current).rstrip())
    return out


def _split_item(item: list[str], max_chars: int, depth: int) -> list[str]:
    if depth >= _MAX_NESTING:
        return _split_text("\n".join(item), max_chars)
    first = item[0]
    m = _LIST_RE.match(first)
    assert m is not None
    prefix = first[: m.end()]
    if not prefix.endswith((" ", "\t")):
        prefix += " "
    width = len(prefix.expandtabs(4))  # the item's content column
    content = "\n".join([first[m.end() :], *(_dedent(line, width) for line in item[1:])])
    subs = _split_blocks(content, max(1, max_chars - len(prefix)), depth + 1)
    if subs and next(_scan(subs[0].split("\n"))).kind == "para":
        return [prefix + subs[0], *subs[1:]]
    return [prefix.rstrip(), *subs]


def _split_raw(raw: _RawBlock, max_chars: int, depth: int) -> list[str]:
    kind, lines = raw
    if kind == "fence":
        return _split_fence(lines, max_chars)
    if kind == "heading":
        return _split_heading(lines[0], max_chars)
    if kind == "hr":
        return [lines[0].strip()]
    if kind == "quote":
        return _split_quote(lines, max_chars, depth)
    if kind == "list":
        return _split_list(lines, max_chars, depth)
    if kind == "code":
        groups = _pack(_trim_blank_edges(lines), max_chars)
        return ["\n".join(_trim_blank_edges(g)) for g in groups if _trim_blank_edges(g)]
    whole = "\n".join(lines).rstrip()
    if len(whole) <= max_chars:
        return [whole]
    return _split_text(whole, max_chars)


def split_blocks(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """Split a markdown document into its top-level blocks, in order.

    Blocks are paragraphs (tables and other lines are grouped with them), headings, rules,
    lists (a whole list is one block), blockquotes, indented code and fenced code (``` or
    ~~~; a fence that is never closed runs to the end of the text and is closed here).
    A block longer than ``max_chars`` is split further so each piece renders within one
    main-thread callback: fenced code by whole lines into several fenced blocks with the
    same info string, lists between items, blockquotes by their content (each piece quoted
    again), prose at sentence ends or spaces and never inside a word.

    Nothing visible is lost: for text without fences or split blockquotes/headings,
    ``"\\n\\n".join(blocks)`` equals ``text`` up to whitespace. No block exceeds
    ``max_chars`` unless it holds a single unbreakable unit longer than that: one code line
    (with its fences) or one word (with its block marker, such as ``-`` or ``>``).
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    return _split_blocks(text, max_chars, 0)


def iter_blocks_with_code(
    text: str, max_chars: int = DEFAULT_MAX_CHARS
) -> Iterator[tuple[str, str | None]]:
    """:func:`split_blocks`, lazily, each block paired with the code of the fenced code block
    it ends (None for every other block): a code block split into several pieces gets its
    whole code with its last piece, so one "Copy code" link copies all of it. Lazy because
    splitting the flood's 650,000-character answer at once took 18 ms in one callback."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for raw in _scan(lines):
        pieces = [b for b in _split_raw(raw, max_chars, 0) if b.strip()]
        for index, piece in enumerate(pieces):
            last_of_fence = raw.kind == "fence" and index == len(pieces) - 1
            yield piece, fenced_code("\n".join(raw.lines)) if last_of_fence else None


def _split_blocks(text: str, max_chars: int, depth: int) -> list[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[str] = []
    for raw in _scan(lines):
        blocks.extend(b for b in _split_raw(raw, max_chars, depth) if b.strip())
    return blocks


# ---------------------------------------------------------------------------------------------
# Rendering: Python-Markdown without raw HTML, then the allow-list.


class _ImagesAsAltText(Treeprocessor):
    """Turn every ``<img>`` into a ``<span>`` holding its alt text: no image is ever loaded
    (tkhtmlview would fetch it over the network or open it from disk), yet the words stay."""

    def run(self, root: Element) -> None:
        for el in root.iter("img"):
            alt, tail = el.get("alt", ""), el.tail
            el.clear()  # drops src/alt/title and the tail; restore what we keep
            el.tag, el.text, el.tail = "span", alt, tail


class _TightListItems(Treeprocessor):
    """Unwrap ``<p>`` inside ``<li>`` (what Python-Markdown emits for a "loose" list, one
    with blank lines between items, which models write all the time). tkhtmlview starts a
    paragraph on a new line after a blank one, so each bullet would stand alone on its own
    line with its text two lines below; unwrapped, the text follows the bullet and further
    paragraphs of the item are separated by a line break."""

    def run(self, root: Element) -> None:
        for li in root.iter("li"):
            if any(child.tag == "p" for child in li):
                self._unwrap_paragraphs(li)

    @staticmethod
    def _unwrap_paragraphs(li: Element) -> None:
        children = list(li)
        for child in children:
            li.remove(child)
        out: list[Element] = []
        text = li.text or ""

        def add_text(more: str | None) -> None:
            nonlocal text
            if not more:
                return
            if out:
                out[-1].tail = (out[-1].tail or "") + more
            else:
                text += more

        seen_paragraph = False
        for child in children:
            if child.tag != "p":
                out.append(child)
                continue
            if seen_paragraph:
                out.append(Element("br"))
            seen_paragraph = True
            add_text(child.text)
            out.extend(child)  # the paragraph's inline children keep their tails
            add_text(child.tail)
        li.text = text
        li.extend(out)


def _make_markdown() -> markdown.Markdown:
    """A fresh converter (about 0.1 ms): Markdown instances are stateful, so one per call
    keeps rendering thread-safe without a lock."""
    md = markdown.Markdown(extensions=["fenced_code", "sane_lists"], output_format="html")
    # Raw HTML must come out as text: drop the block-level stash of HTML and the inline
    # HTML pattern; the serializer then escapes '<' in ordinary text.
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(_ImagesAsAltText(md), "tkchat_images_as_alt", 15)
    md.treeprocessors.register(_TightListItems(md), "tkchat_tight_list_items", 14)
    return md


def _normalize_fences(text: str) -> str:
    """Rewrite fences into the one form Python-Markdown's fenced_code accepts.

    Its pattern wants the fence at column 0, an info string that is a bare language name,
    and a closing fence identical to the opening one; model output often has an indented
    fence, ``python title=x``, a longer closing fence or no closing fence at all.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        fm = _fence_open(lines[i])
        if not fm:
            out.append(lines[i])
            i += 1
            continue
        fence, indent = fm.group("fence"), len(fm.group("indent"))
        words = fm.group("info").split()
        lang = _LANG_CHARS_RE.sub("", words[0]) if words else ""
        out.append(fence + lang)
        j = i + 1
        while j < len(lines) and not _fence_closes(lines[j], fence):
            out.append(_dedent(lines[j], indent))
            j += 1
        out.append(fence)
        i = j + 1
    return "\n".join(out)


def _render(text: str) -> str:
    try:
        html_text = _make_markdown().convert(_normalize_fences(text))
    except Exception:  # e.g. RecursionError on a list nested 300 deep
        # Model output must never take the window down: show the block as plain text.
        return f"<p>{html.escape(text, quote=False)}</p>"
    return sanitize_html(html_text)


@functools.lru_cache(maxsize=4096)
def block_to_html(block: str) -> str:
    """Render one markdown block to safe HTML (memoized: re-renders after a resize, a theme
    change or a scroll back cost nothing, and the cache is thread-safe).

    Raw HTML in the block comes out escaped as visible text, markdown images become their
    alt text, links lose their target, and :func:`sanitize_html` makes the final call.
    """
    return _render(block)


def convert_whole_document(text: str) -> str:
    """One uncached conversion of the whole text, as a naive app does on every chunk (the
    ``per-chunk-render`` demo). Exactly as safe as the block path."""
    return _render(text)


def markdown_to_safe_html(text: str) -> str:
    """Render a whole document in one call (tests, and the deliberately blocking demo).

    It renders the same blocks as the sliced path (unbounded in size), so the two produce
    identical HTML and differ only in how long one main-thread call takes.
    """
    return "\n".join(_render(block) for block in split_blocks(text, sys.maxsize))


class _AllowListSanitizer(HTMLParser):
    """Rebuild HTML from allow-listed, attribute-free tags; everything else becomes text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._out: list[str] = []
        self._open: list[str] = []
        self._dropping: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping is not None:
            return
        if tag in _DROP_CONTENT_TAGS:
            self._dropping = tag
        elif tag in ALLOWED_TAGS:
            self._out.append(f"<{tag}>")
            if tag not in _VOID_TAGS:
                self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._dropping is not None:
            if tag == self._dropping:
                self._dropping = None
            return
        if tag in self._open:  # close it and anything left open inside it: always balanced
            while self._open:
                top = self._open.pop()
                self._out.append(f"</{top}>")
                if top == tag:
                    break

    def handle_data(self, data: str) -> None:
        if self._dropping is None:
            self._out.append(html.escape(data, quote=False))

    # Comments, doctypes, processing instructions and CDATA sections are dropped: the
    # default handlers of HTMLParser already ignore them.

    def result(self) -> str:
        self.close()
        self._out.extend(f"</{tag}>" for tag in reversed(self._open))
        self._open.clear()
        return "".join(self._out)


def sanitize_html(html_text: str) -> str:
    """Keep only :data:`ALLOWED_TAGS`, with no attributes at all; escape all text.

    Dropped tags keep their text content (escaped), except ``script`` and ``style`` whose
    content is dropped too. Without attributes nothing can load (no ``src``), link (no
    ``href``) or restyle (no ``style``), so whatever tkhtmlview does with the result, it
    never touches the network or the disk. The output is always balanced.
    """
    parser = _AllowListSanitizer()
    parser.feed(html_text)
    return parser.result()
