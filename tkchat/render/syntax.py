"""Markdown at the level of single lines: what kind of block a line opens, and code fences.

Both halves of the render path need this. :mod:`tkchat.render.blocks` uses it to cut an
answer into top-level blocks, and :mod:`tkchat.render.to_html` uses the fence helpers to
rewrite fences into the one form Python-Markdown understands. With one definition of an
opening and a closing fence, a block the splitter calls fenced code is fenced code to the
renderer too. The patterns follow CommonMark closely enough for splitting; the rendering
itself is Python-Markdown's job, one block at a time.

Pure functions over strings and lists of lines, no shared state: any thread may call them.
"""

from __future__ import annotations

import re

FENCE_OPEN_RE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
ATX_RE = re.compile(r"^ {0,3}(?P<marks>#{1,6})(?:[ \t]+|$)")
HR_RE = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
SETEXT_RE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
LIST_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[*+-]|\d{1,9}[.)])(?:[ \t]+|$)")
QUOTE_RE = re.compile(r"^ {0,3}> ?")
INDENTED_CODE_RE = re.compile(r"^(?: {4}|\t)")
_LANG_CHARS_RE = re.compile(r"[^\w#.+-]")
MAX_LANGUAGE_CHARS = 32  # a language name longer than this is not one


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, whatever line ends it uses (``\\r\\n``, ``\\r`` or ``\\n``)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def is_blank(line: str) -> bool:
    return not line.strip()


def trim_blank_edges(lines: list[str]) -> list[str]:
    """``lines`` without the blank lines at either end."""
    start, end = 0, len(lines)
    while start < end and is_blank(lines[start]):
        start += 1
    while end > start and is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def indent_width(line: str) -> int:
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


def dedent(line: str, width: int) -> str:
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


def fence_open(line: str) -> re.Match[str] | None:
    """Match an opening code fence; a backtick fence's info string may not hold backticks."""
    m = FENCE_OPEN_RE.match(line)
    if m and m.group("fence")[0] == "`" and "`" in m.group("info"):
        return None
    return m


def fence_language(line: str) -> str:
    """The language an opening fence names (```` ```python title=x ```` gives ``python``),
    reduced to the characters a language name uses; "" when it names none."""
    m = fence_open(line)
    words = m.group("info").split() if m else []
    return _LANG_CHARS_RE.sub("", words[0])[:MAX_LANGUAGE_CHARS] if words else ""


def fence_closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes ``fence``: same character, at least as long, nothing after."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return False
    body = body.rstrip(" \t")
    return len(body) >= len(fence) and body == fence[0] * len(body)


def fence_end(
    lines: list[str], start: int, fence: str, *, indented: bool = False
) -> tuple[int, bool]:
    """Index just past the closing fence and True, or ``(len(lines), False)`` when the fence
    is never closed (it then runs to the end of the text)."""
    for j in range(start + 1, len(lines)):
        line = lines[j].lstrip(" \t") if indented else lines[j]
        if fence_closes(line, fence):
            return j + 1, True
    return len(lines), False


def fenced_code(block: str) -> str | None:
    """The code inside a fenced code block (one block of
    :func:`~tkchat.render.blocks.split_blocks`), without the fences and with the fence's
    indentation removed; None if ``block`` is not fenced code. This is what "Copy code"
    copies."""
    lines = split_lines(block)
    opening = fence_open(lines[0])
    if opening is None:
        return None
    end, closed = fence_end(lines, 0, opening.group("fence"))
    body = lines[1 : end - 1] if closed else lines[1:]
    indent = len(opening.group("indent"))
    return "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in body)


def is_list_start(line: str, *, interrupting: bool = False) -> bool:
    """A list item line at top level (indent <= 3). When it would interrupt a paragraph it
    must have content after the marker, so a lone ``-`` or ``1.`` stays paragraph text."""
    if HR_RE.match(line):
        return False
    m = LIST_RE.match(line)
    if not m or indent_width(line) > 3:
        return False
    return not interrupting or bool(line[m.end() :].strip())


def interrupts(line: str) -> bool:
    """Whether a line starts a new block even without a blank line before it."""
    return bool(
        fence_open(line)
        or ATX_RE.match(line)
        or HR_RE.match(line)
        or QUOTE_RE.match(line)
        or is_list_start(line, interrupting=True)
    )
