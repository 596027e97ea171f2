"""The blocks of a markdown answer that is still arriving, each one as soon as it is complete.

A block is complete when nothing that can still arrive would change it:

- a heading, a rule, a closed code fence: as soon as their last line is;
- a paragraph or a quote: at the first blank line after it;
- a list or indented code: when the line after the blank lines has begun and cannot go on
  with it (a list goes on with an indented line or another item, indented code with an
  indented line), or when the next block has started;
- unfenced code (:mod:`~tkchat.render.code_runs`): when the next block has started. Whether
  a line starts or goes on with such code can depend on the line or two after it; until
  they have arrived, the scan hands out nothing from that line on, so no block is painted
  as prose that turns out to be code;
- the last block: when the answer ends.

Line by line, a line is judged only once it is complete, since its start can still change
its meaning ("  " may become the indentation of a list's next paragraph); the one exception
is the open line after a list or indented code, judged by its indentation and its first
character as soon as it has one that is not a space.

Each block comes with the number of lines it covers, counting the blank lines after it, so
the window can replace exactly those lines of plain text with the rendered block by counting
*lines* from a mark: line counts are the same in Python and in Tk, where character counts are
not (Tk 8.6 counts a character above U+FFFF as two).

The stream reads the answer *as it arrived*, not as it is displayed: a line longer than
``display_limit`` is shown with line ends added (:mod:`~tkchat.render.soft_breaks`), and
those must never change what the markdown means. Cut at 1,000 characters, a line of 1,500
backticks became a line of only backticks — a code fence its source did not open — and the
rest of the answer was swallowed (a 20,001-character payload showed 1,054). So blocks are
found in the source lines, and only the count handed out (``StreamBlock.lines``) is of
displayed lines, each source line counted as the lines it is displayed as.

The open last block is scanned again when lines arrive, which would be quadratic for one
enormous block (a 5,000-line poem); so once it is long it is scanned again only when a line
arrives that could end it (a blank line, the line after one, a line that starts another
kind of block, the end of indented code or of a setext heading), or when it has grown by an
eighth. The total work stays linear in the answer's length.

Pure Python, no Tk. One stream belongs to one answer and is used by one thread at a time (the
window's main thread).
"""

from __future__ import annotations

from dataclasses import dataclass

from tkchat.limits import DISPLAY_LINE_CHARS
from tkchat.render.code_runs import may_change_run, may_end_run
from tkchat.render.scan import RawBlock, scan_spans
from tkchat.render.soft_breaks import SOFT_ZONE, soft_break
from tkchat.render.syntax import (
    SETEXT_RE,
    fence_closes,
    fence_open,
    indent_width,
    interrupts,
    is_blank,
)

_LIST_MARKER_STARTS = frozenset("*+-0123456789")  # what a list item's line can begin with

RESCAN_ALWAYS_BELOW = 256  # lines: an open block shorter than this is scanned at every line


@dataclass(frozen=True)
class StreamBlock:
    """A complete top-level block of a streaming answer."""

    raw: RawBlock
    # Displayed lines of the text it covers, with the blank lines before it; None for the
    # answer's last block, which runs to the end. (The blank lines after a block go with the
    # next one, so while that one streams they still separate it from the rendered block.)
    lines: int | None
    # The answer's last block, ended in the middle of its last line: the answer was cut (its
    # length limit, Stop, an error) before that line was finished.
    cut: bool = False

    @property
    def open_heading(self) -> bool:
        """A heading the answer was cut in the middle of ("### Part 3: wh"). The window
        leaves it as it streamed, plain: painted, a cut answer ended in a big heading."""
        return self.cut and self.raw.kind == "heading"


class BlockStream:
    """Feed it the answer's text as it arrives; take complete blocks with :meth:`next_block`."""

    def __init__(self, display_limit: int = DISPLAY_LINE_CHARS) -> None:
        """``display_limit``: the longest line shown without an added line end (see the
        module docstring)."""
        self._display_limit = display_limit
        self._lines: list[str] = []  # the complete lines so far
        self._shown = [0]  # displayed lines of the first k complete lines, for each k
        self._partial: list[str] = []  # the pieces of the line still open
        self._start = 0  # the first line of the first block not handed out yet
        self._rescan_at = 0  # scan the open block again once it has this many lines
        self._open_run = False  # is the open block, as last scanned, unfenced code?
        self._begun = False  # does the open line have a character that is not a space?
        self.ended = False
        self._ended_mid_line = False  # did the answer end with no line end after its text?

    def feed(self, text: str) -> bool:
        """Add text; True if a block may have been completed by it: it completed a line, or
        gave the open line its first character that is not a space."""
        if self.ended:
            raise ValueError("the stream has ended")
        # Tk ends lines at "\n" only; so does this class, whatever else a model writes.
        text = text.replace("\r", "")
        if "\n" not in text:
            if not text:
                return False
            self._partial.append(text)
            if self._begun or not text.strip():
                return False
            self._begun = True
            self._rescan_at = 0  # the open line can now end a list or indented code
            return True
        first, *rest = text.split("\n")
        self._partial.append(first)
        tail = rest.pop()
        new = ["".join(self._partial), *rest]
        if len(self._lines) + len(new) - self._start < self._rescan_at:  # a long open block
            previous = self._lines[-1] if self._lines else ""
            for line in new:
                if _may_end_block(previous, line, open_run=self._open_run):
                    self._rescan_at = 0
                    break
                previous = line
        self._count_shown(new)
        self._lines.extend(new)
        self._partial = [tail] if tail else []
        self._begun = bool(tail.strip())
        return True

    def end(self) -> None:
        """The answer is complete: its last block is complete too."""
        if not self.ended:
            self.ended = True
            self._ended_mid_line = bool("".join(self._partial).strip())
            if self._partial:
                last = "".join(self._partial)
                self._count_shown([last])
                self._lines.append(last)
                self._partial = []

    @property
    def exhausted(self) -> bool:
        """Ended, and every block handed out."""
        return self.ended and self._start >= len(self._lines)

    def next_block(self) -> StreamBlock | None:
        """The next complete block, or None if there is none yet (or none left)."""
        open_lines = len(self._lines) - self._start
        if open_lines <= 0 or (not self.ended and open_lines < self._rescan_at):
            return None
        spans = scan_spans(self._lines, self._start, final=self.ended)
        first = next(spans, None)
        if first is None:  # only blank lines so far
            if not self.ended:
                return None
            # Blank lines after the last block: an empty block takes them away.
            self._start = len(self._lines)
            return StreamBlock(RawBlock("para", []), None)
        second = next(spans, None)
        if second is None and self.ended:
            self._start = len(self._lines)
            return StreamBlock(first[2], None, cut=self._ended_mid_line)
        if second is None and not self._complete_already(*first):
            self._rescan_at = (
                open_lines + 1 if open_lines < RESCAN_ALWAYS_BELOW else open_lines * 9 // 8
            )
            # (unfenced code: a fenced block whose first line opens no fence)
            self._open_run = first[2].kind == "fence" and fence_open(self._lines[first[0]]) is None
            return None
        block = StreamBlock(first[2], self._shown[first[1]] - self._shown[self._start])
        self._start = first[1]
        self._rescan_at = 0
        self._open_run = False
        return block

    def _count_shown(self, lines: list[str]) -> None:
        """Note how many lines each of ``lines`` is displayed as (one, unless it is long)."""
        limit, total = self._display_limit, self._shown[-1]
        for line in lines:
            if len(line) >= limit - SOFT_ZONE:
                total += soft_break(line, 0, limit)[0].count("\n")
            total += 1
            self._shown.append(total)

    def _complete_already(self, start: int, end: int, raw: RawBlock) -> bool:
        """Is the last block found complete although no block after it has started? (Only
        blank lines, if any, follow it: the scan found no other block.)"""
        if raw.kind in ("heading", "hr"):
            return True
        if raw.kind == "fence":
            opening = fence_open(self._lines[start])
            closer = self._lines[end - 1]
            return (
                end - start >= 2 and opening is not None and fence_closes(closer, opening["fence"])
            )
        if end >= len(self._lines):  # no blank line after it yet
            return False
        if raw.kind in ("para", "quote"):
            return True
        begun = "".join(self._partial)
        if not begun.strip():
            return False
        if raw.kind == "code":
            return indent_width(begun) < 4
        return indent_width(begun) < 2 and begun.lstrip()[0] not in _LIST_MARKER_STARTS


def _may_end_block(previous: str, line: str, *, open_run: bool) -> bool:
    """Could ``line``, after ``previous``, end the block they are in? (Cheap; True whenever
    the scan might end a block there, so a block is never handed out late.) ``open_run``:
    that block is unfenced code, which blank lines and dedents do not end."""
    if open_run:
        return may_end_run(previous, line)
    return (
        is_blank(line)
        or is_blank(previous)
        or interrupts(line)
        or (indent_width(line) < 4 <= indent_width(previous))
        or SETEXT_RE.match(previous) is not None
        or may_change_run(previous, line)
    )
