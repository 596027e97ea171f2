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

from tkchat.render.code_runs import LANGUAGE, NeedMoreLines, code_run_end
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
    (except that an unclosed fence gets its closing line, and unfenced code its fences)."""

    kind: BlockKind
    lines: list[str]


def _next_nonblank(lines: list[str], start: int) -> int:
    j = start
    while j < len(lines) and is_blank(lines[j]):
        j += 1
    return j


def _list_end(lines: list[str], start: int, final: bool) -> int:
    """Index just past a list: items, indented continuations (fenced code included, across
    blank lines), and lazy continuation lines; it ends at a blank line followed by an
    unindented non-item line, or at an unindented line that starts another kind of block or
    a run of unfenced code (:mod:`~tkchat.render.code_runs`)."""
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
        elif not is_list_start(line) and (
            interrupts(line) or code_run_end(lines, j, final=final) is not None
        ):
            return j
        j += 1
    return j


def scan(lines: list[str]) -> Iterator[RawBlock]:
    """Group lines into top-level blocks, in order, without splitting any of them (lazily:
    the painter takes blocks as its time budget allows)."""
    for _start, _end, raw in scan_spans(lines):
        yield raw


def scan_spans(
    lines: list[str], start: int = 0, *, final: bool = True
) -> Iterator[tuple[int, int, RawBlock]]:
    """:func:`scan` from line ``start`` on, each block with the indices of its first line and
    of the line after it (blank lines between blocks belong to neither).

    ``final``: ``lines`` are the whole text. When more may still arrive (an answer that
    streams), the scan stops before the first block whose kind or end depends on lines not
    there yet (whether unfenced code starts or goes on: :mod:`~tkchat.render.code_runs`)."""
    try:
        yield from _spans(lines, start, final)
    except NeedMoreLines:
        return


def _spans(lines: list[str], start: int, final: bool) -> Iterator[tuple[int, int, RawBlock]]:
    i = start
    while i < len(lines):
        if is_blank(lines[i]):
            i += 1
            continue
        j, raw = _block(lines, i, final)
        yield i, j, raw
        i = j


def _block(lines: list[str], i: int, final: bool) -> tuple[int, RawBlock]:
    """The block that starts at the line ``lines[i]`` (not blank), and the index past it."""
    line = lines[i]
    fm = fence_open(line)
    if fm:
        j, closed = fence_end(lines, i, fm.group("fence"))
        block = lines[i:j]
        if not closed:
            block = block[:1] + trim_blank_edges(block[1:])
            block.append(fm.group("indent") + fm.group("fence"))  # close it: valid markdown
        return j, RawBlock("fence", block)
    run = code_run_end(lines, i, final=final)
    if run is not None:  # unfenced code: shown as the fenced code it is
        j, closed = run
        code = lines[i : j - 1] if closed else lines[i:j]
        return j, RawBlock("fence", [f"```{LANGUAGE}", *code, "```"])
    if ATX_RE.match(line):
        return i + 1, RawBlock("heading", [line])
    if HR_RE.match(line):
        return i + 1, RawBlock("hr", [line])
    if QUOTE_RE.match(line):
        j = i + 1
        while j < len(lines) and not is_blank(lines[j]):
            if not QUOTE_RE.match(lines[j]) and interrupts(lines[j]):
                break
            j += 1
        return j, RawBlock("quote", lines[i:j])
    if is_list_start(line):
        j = _list_end(lines, i, final)
        return j, RawBlock("list", lines[i:j])
    if INDENTED_CODE_RE.match(line):
        j = _indented_code_end(lines, i)
        return j, RawBlock("code", lines[i:j])
    j = _para_end(lines, i, final)
    return j, RawBlock("para", lines[i:j])


def _indented_code_end(lines: list[str], i: int) -> int:
    """Index just past indented code: indented lines, across blank lines."""
    j = i + 1
    while j < len(lines):
        if is_blank(lines[j]):
            k = _next_nonblank(lines, j)
            if k < len(lines) and INDENTED_CODE_RE.match(lines[k]):
                j = k
                continue
            break
        if not INDENTED_CODE_RE.match(lines[j]):
            break
        j += 1
    return j


def _para_end(lines: list[str], i: int, final: bool) -> int:
    """Index just past a paragraph: up to a blank line, a line that starts another block or
    a run of unfenced code; a setext underline belongs to its heading text."""
    j = i + 1
    while j < len(lines) and not is_blank(lines[j]):
        if SETEXT_RE.match(lines[j]):
            return j + 1
        if interrupts(lines[j]) or code_run_end(lines, j, final=final) is not None:
            break
        j += 1
    return j
