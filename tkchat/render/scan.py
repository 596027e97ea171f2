"""Group the lines of a markdown answer into its top-level blocks, without cutting any.

This is the first pass of :mod:`tkchat.render.blocks`: it only decides where each paragraph,
heading, rule, list, blockquote or code block begins and ends. Cutting a block that is too
long for one main-thread callback is the second pass, in ``blocks``. :func:`scan` is a
generator so the painter pays only for the blocks it takes within its time budget.

Pure functions, no shared state: any thread may call them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, NamedTuple

from tkchat.render.syntax import (
    ATX_RE,
    HR_RE,
    INDENTED_CODE_RE,
    QUOTE_RE,
    SETEXT_RE,
    fence_end,
    fence_open,
    indent_width,
    interrupts,
    is_blank,
    is_list_start,
    trim_blank_edges,
)

BlockKind = Literal["fence", "heading", "hr", "quote", "list", "code", "para"]


class RawBlock(NamedTuple):
    """One top-level block as :func:`scan` found it: its kind and its lines, unchanged
    (except that an unclosed fence gets its closing line)."""

    kind: BlockKind
    lines: list[str]


def _next_nonblank(lines: list[str], start: int) -> int:
    j = start
    while j < len(lines) and is_blank(lines[j]):
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
        if is_blank(line):
            k = _next_nonblank(lines, j)
            if k < n and (indent_width(lines[k]) >= 2 or is_list_start(lines[k])):
                j = k
                continue
            return j
        if indent_width(line) >= 1:
            fm = fence_open(line.lstrip(" \t"))
            if fm:
                j, _ = fence_end(lines, j, fm.group("fence"), indented=True)
                continue
        elif not is_list_start(line) and interrupts(line):
            return j
        j += 1
    return j


def scan(lines: list[str]) -> Iterator[RawBlock]:
    """Group lines into top-level blocks, in order, without splitting any of them (lazily:
    the painter takes blocks as its time budget allows)."""
    for _start, _end, raw in scan_spans(lines):
        yield raw


def scan_spans(lines: list[str], start: int = 0) -> Iterator[tuple[int, int, RawBlock]]:  # noqa: C901 - a debt (tests/test_architecture.py)
    """:func:`scan` from line ``start`` on, each block with the indices of its first line and
    of the line after it (blank lines between blocks belong to neither)."""
    n = len(lines)
    i = start
    while i < n:
        line = lines[i]
        if is_blank(line):
            i += 1
            continue
        fm = fence_open(line)
        if fm:
            j, closed = fence_end(lines, i, fm.group("fence"))
            block = lines[i:j]
            if not closed:
                block = block[:1] + trim_blank_edges(block[1:])
                block.append(fm.group("indent") + fm.group("fence"))  # close it: valid markdown
            yield i, j, RawBlock("fence", block)
            i = j
            continue
        if ATX_RE.match(line):
            yield i, i + 1, RawBlock("heading", [line])
            i += 1
            continue
        if HR_RE.match(line):
            yield i, i + 1, RawBlock("hr", [line])
            i += 1
            continue
        if QUOTE_RE.match(line):
            j = i + 1
            while j < n and not is_blank(lines[j]):
                if not QUOTE_RE.match(lines[j]) and interrupts(lines[j]):
                    break
                j += 1
            yield i, j, RawBlock("quote", lines[i:j])
            i = j
            continue
        if is_list_start(line):
            j = _list_end(lines, i)
            yield i, j, RawBlock("list", lines[i:j])
            i = j
            continue
        if INDENTED_CODE_RE.match(line):
            j = i + 1
            while j < n:
                if is_blank(lines[j]):
                    k = _next_nonblank(lines, j)
                    if k < n and INDENTED_CODE_RE.match(lines[k]):
                        j = k
                        continue
                    break
                if not INDENTED_CODE_RE.match(lines[j]):
                    break
                j += 1
            yield i, j, RawBlock("code", lines[i:j])
            i = j
            continue
        j = i + 1
        while j < n and not is_blank(lines[j]):
            if SETEXT_RE.match(lines[j]):
                j += 1  # a setext underline belongs to its heading text
                break
            if interrupts(lines[j]):
                break
            j += 1
        yield i, j, RawBlock("para", lines[i:j])
        i = j
