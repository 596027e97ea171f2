"""Cut a markdown answer into blocks small enough to render in one main-thread callback.

The reason is tkhtmlview's cost model. It lays HTML into a Tk Text widget on the Tk main
thread and gives every formatting run (a bullet, a bold word, a code span) a Tk tag with a
font of its own, about 0.3 ms each, while plain text is nearly free. One finished
11,000-character answer costs about 50 ms in a single call when it is mostly prose and
code, and about 500 ms when it is a long bullet list full of bold words. So the window
renders one block per ``after()`` callback, and this module guarantees a block is at most
``max_chars`` long wherever the content allows it (the figures per block size are printed
by ``tests/test_safe_markdown.py::test_print_render_timings``).

:func:`~tkchat.render.scan.scan` finds the top-level blocks; this module cuts the ones that
are too long along their own structure (code by lines, lists between items, quotes by
their content), and hands prose to :func:`~tkchat.render.prose.split_prose`.

Pure functions, no shared state: any thread may call them. The window calls
:func:`block_pieces` on the Tk main thread, one block at a time, as
:class:`~tkchat.render.stream.BlockStream` finds each block complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from tkchat.render.prose import split_prose
from tkchat.render.scan import BlockKind, RawBlock, scan
from tkchat.render.syntax import (
    ATX_RE,
    HR_RE,
    LIST_RE,
    QUOTE_RE,
    dedent,
    fence_closes,
    fence_language,
    fence_open,
    fenced_code,
    indent_width,
    split_lines,
    trim_blank_edges,
)

# What starts every piece of a paragraph but its first. Rendered on its own, a piece is a new
# document, and its first characters could open what the paragraph's middle never did: a
# fence ("```"), a heading ("#"), a list ("1."), a quote, a rule, a link definition (which
# would vanish). A zero-width space before them keeps them text; it is an entity, so no rule
# sees it as anything, and the renderer takes it out of the HTML again (to_html.py).
CUT_MARK = "&#8203;"

DEFAULT_MAX_CHARS = 600
"""Default block size. Measured with tkhtmlview on Xvfb: a 600-character block costs about
1 ms as prose, at most ~10 ms in a typical answer, and up to ~45 ms as a dense bullet list
(short items with bold words); 300-400 keeps even that case near 20 ms."""

# Splitting a quote or an over-long list item recurses into its content; past this depth
# (only hostile input nests that deep) the content is split as prose instead.
_MAX_NESTING = 16


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


def _split_fence(lines: list[str], max_chars: int) -> list[str]:
    """Split fenced code by whole lines; every piece re-opens with the same opener (same
    info string) and is closed, so each piece is a valid fenced block on its own."""
    whole = "\n".join(lines)
    if len(whole) <= max_chars:
        return [whole]
    opener, body, closer = lines[0], lines[1:-1], lines[-1]
    budget = max_chars - len(opener) - len(closer) - 2
    return ["\n".join([opener, *group, closer]) for group in _pack(body, budget)]


def _split_heading(line: str, max_chars: int) -> list[str]:
    """An over-long heading becomes several headings of the same level."""
    text = line.strip()
    if len(text) <= max_chars:
        return [text]
    m = ATX_RE.match(text)
    assert m is not None
    prefix = m.group("marks") + " "
    return [prefix + p for p in split_prose(text[m.end() :], max_chars - len(prefix))]


def _quote(block: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in block.split("\n"))


def _split_quote(lines: list[str], max_chars: int, depth: int) -> list[str]:
    """Split a blockquote's content like a document, then quote every piece again."""
    whole = "\n".join(lines)
    if len(whole) <= max_chars:
        return [whole]
    if depth >= _MAX_NESTING:
        return split_prose(whole, max_chars)
    inner = "\n".join(line[m.end() :] if (m := QUOTE_RE.match(line)) else line for line in lines)
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
    whole = "\n".join(trim_blank_edges(lines))
    if len(whole) <= max_chars:
        return [whole]
    base = indent_width(lines[0])
    items: list[list[str]] = []
    in_fence: str | None = None
    for line in lines:
        if in_fence is not None:
            items[-1].append(line)
            if fence_closes(line.lstrip(" \t"), in_fence):
                in_fence = None
            continue
        is_item = (
            LIST_RE.match(line) is not None
            and not HR_RE.match(line)
            and indent_width(line) < base + 2
        )
        if is_item or not items:
            items.append([line])
            continue
        items[-1].append(line)
        fm = fence_open(line.lstrip(" \t"))
        if fm:
            in_fence = fm.group("fence")

    out: list[str] = []
    current: list[str] = []  # the item texts packed into the next piece
    size = 0
    for item in items:
        text = "\n".join(item)  # keeps its trailing blank lines: a loose list stays loose
        visible = "\n".join(trim_blank_edges(item))
        if len(visible) > max_chars:
            if current:
                out.append("\n".join(current).rstrip())
                current, size = [], 0
            out.extend(_split_item(trim_blank_edges(item), max_chars, depth))
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
        return split_prose("\n".join(item), max_chars)
    first = item[0]
    m = LIST_RE.match(first)
    assert m is not None
    prefix = first[: m.end()]
    if not prefix.endswith((" ", "\t")):
        prefix += " "
    width = len(prefix.expandtabs(4))  # the item's content column
    content = "\n".join([first[m.end() :], *(dedent(line, width) for line in item[1:])])
    subs = _split_blocks(content, max(1, max_chars - len(prefix)), depth + 1)
    if subs and next(scan(subs[0].split("\n"))).kind == "para":
        return [prefix + subs[0], *subs[1:]]
    return [prefix.rstrip(), *subs]


def _split_raw(raw: RawBlock, max_chars: int, depth: int) -> list[str]:
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
        groups = _pack(trim_blank_edges(lines), max_chars)
        return ["\n".join(trim_blank_edges(g)) for g in groups if trim_blank_edges(g)]
    whole = "\n".join(lines).rstrip()
    if len(whole) <= max_chars:
        return [whole]
    first, *rest = split_prose(whole, max_chars)
    return [first, *(CUT_MARK + piece for piece in rest)]


def _split_blocks(text: str, max_chars: int, depth: int) -> list[str]:
    blocks: list[str] = []
    for raw in scan(split_lines(text)):
        blocks.extend(b for b in _split_raw(raw, max_chars, depth) if b.strip())
    return blocks


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
    ``"\\n\\n".join(blocks)`` equals ``text`` up to whitespace. (The window's pieces,
    :func:`block_pieces`, also start each piece of a paragraph after its first with
    :data:`CUT_MARK`; these blocks do not.) No block exceeds
    ``max_chars`` unless it holds a single unbreakable unit longer than that: one code line
    (with its fences) or one word (with its block marker, such as ``-`` or ``>``).
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    return [block.replace(CUT_MARK, "") for block in _split_blocks(text, max_chars, 0)]


@dataclass(frozen=True)
class Piece:
    """One piece of a top-level block, small enough to render in one main-thread callback,
    with what the window needs to draw it: the kind of block it came from (a quote's pieces
    are drawn as a quote, code is highlighted), and for fenced code its language and, on the
    first piece only, the whole code that the block's one "Copy code" link copies."""

    kind: BlockKind
    markdown: str  # valid markdown on its own (a piece of fenced code is fenced again)
    first: bool = True  # the first piece of its block
    lang: str = ""  # fenced code: the language its opening fence names
    code: str | None = None  # fenced code, first piece: all of the block's code

    def code_text(self) -> str:
        """The code this piece shows (fenced or indented code; "" for other kinds)."""
        if self.kind == "fence":
            return fenced_code(self.markdown) or ""
        if self.kind == "code":
            return "\n".join(dedent(line, 4) for line in self.markdown.split("\n"))
        return ""


def block_pieces(raw: RawBlock, max_chars: int = DEFAULT_MAX_CHARS) -> list[Piece]:
    """The pieces of one top-level block (:func:`split_blocks`' cut, for that block alone)."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    texts = [b for b in _split_raw(raw, max_chars, 0) if b.strip()]
    if raw.kind != "fence":
        return [Piece(raw.kind, text, index == 0) for index, text in enumerate(texts)]
    lang = fence_language(raw.lines[0])
    code = fenced_code("\n".join(raw.lines))
    return [
        Piece("fence", text, index == 0, lang, code if index == 0 else None)
        for index, text in enumerate(texts)
    ]
