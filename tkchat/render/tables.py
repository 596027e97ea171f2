"""Pipe tables (``| a | b |`` under ``|---|---|``): their cells, for a view that draws them as
aligned columns.

The HTML path does not know tables (Python-Markdown runs without its ``tables`` extension,
and tkhtmlview would put every column 40 pixels apart): a table is a paragraph of text there,
its rows one per line. A view that draws tables asks :func:`pipe_table` whether a piece of
markdown is one, and gets its rows of cells, the header row first, the rule row left out,
each cell's inline marks (``code``, ``**bold**``) taken off.

Pure functions, no shared state: any thread may call them.
"""

from __future__ import annotations

import re

_RULE_CELL_RE = re.compile(r"^:?-+:?$")
_INLINE_MARKS_RE = re.compile(r"`([^`]*)`|\*\*(.+?)\*\*")


def pipe_table(markdown: str) -> list[list[str]] | None:
    """The rows of cells of ``markdown`` if all of it is one pipe table (a header row, a rule
    row, then any rows), else None."""
    lines = [line.strip() for line in markdown.strip().split("\n")]
    if len(lines) < 2 or not all(line.startswith("|") for line in lines):
        return None
    rows = [_cells(line) for line in lines]
    if not rows[1] or not all(_RULE_CELL_RE.match(cell) for cell in rows[1]):
        return None
    return [rows[0], *rows[2:]]


def _cells(line: str) -> list[str]:
    inner = line[1:-1] if line.endswith("|") and len(line) > 1 else line[1:]
    return [_plain(cell.strip()) for cell in inner.split("|")]


def _plain(cell: str) -> str:
    """A cell's text without its inline marks: a table's columns are aligned by measuring
    the text, and one font measures it."""
    return _INLINE_MARKS_RE.sub(lambda m: m.group(1) or m.group(2) or "", cell)
