"""Markdown written with its paragraphs wrapped at a column (the lessons, the class plan), made
ready for a renderer that keeps a single line break as a line break.

The chat's renderer keeps an answer's line breaks (a poem stays a poem:
:mod:`tkchat.render.to_html`), so a lesson's paragraphs, wrapped at 100 columns in their
files, would show as ragged lines. :func:`join_wrapped_lines` joins the lines of each
paragraph, quote and list item into one, with a space — or without one next to Chinese
characters and full-width punctuation, where a space shows as a gap. Code, tables, headings
and the blank lines between blocks stay as they are.

Pure functions, no shared state: any thread may call them (the lesson panel calls it on the
worker that prepares a lesson).
"""

from __future__ import annotations

import unicodedata

from tkchat.render.scan import scan_spans
from tkchat.render.syntax import (
    QUOTE_RE,
    fence_closes,
    fence_open,
    is_blank,
    is_list_start,
    split_lines,
)


def join_wrapped_lines(text: str) -> str:
    """``text`` with every paragraph, quote and list item on one line (see the module)."""
    lines = split_lines(text)
    out: list[str] = []
    done = 0
    for start, end, raw in scan_spans(lines):
        out.extend(lines[done:start])  # the blank lines between blocks
        block = lines[start:end]
        if raw.kind == "para" and not _is_table(block):
            out.append(join_soft_lines([line.strip() for line in block]))
        elif raw.kind == "quote":
            out.extend(_joined_quote(block))
        elif raw.kind == "list":
            out.extend(_joined_items(block))
        else:
            out.extend(block)
        done = end
    out.extend(lines[done:])
    return "\n".join(out)


def join_soft_lines(parts: list[str]) -> str:
    """Join a paragraph's lines: with a space, except next to Chinese characters or
    full-width punctuation, where a space would show as a gap."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif not part:
            continue
        elif _is_wide(out[-1]) or _is_wide(part[0]):
            out += part
        else:
            out += " " + part
    return out


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def _is_table(block: list[str]) -> bool:
    return any(line.lstrip().startswith("|") for line in block)


def _joined_quote(block: list[str]) -> list[str]:
    """A quote of plain prose on one line; a quote holding anything else stays as it is."""
    inner = [line[m.end() :] if (m := QUOTE_RE.match(line)) else line for line in block]
    if any(is_blank(line) or is_list_start(line) or fence_open(line) for line in inner):
        return block
    return ["> " + join_soft_lines([line.strip() for line in inner])]


def _joined_items(block: list[str]) -> list[str]:
    """A list with each item's wrapped lines joined to the line before them; items, blank
    lines (a loose list) and fenced code inside an item stay as they are."""
    out: list[str] = []
    fence: str | None = None
    prose = False  # is the last line out prose a wrapped line may join?
    for line in block:
        if fence is not None:
            out.append(line)
            if fence_closes(line.lstrip(" \t"), fence):
                fence = None
            continue
        opened = fence_open(line.lstrip(" \t"))
        if opened:
            fence = opened.group("fence")
            out.append(line)
            prose = False
        elif prose and not is_blank(line) and not is_list_start(line):
            out[-1] = join_soft_lines([out[-1], line.strip()])
        else:
            out.append(line)
            prose = not is_blank(line)
    return out
