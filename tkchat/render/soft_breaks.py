"""Display-only line breaks, so that Tk lays out a long line in bounded time.

Tk's Text widget lays out a *logical* line (up to its ``\\n``) as a whole: every insert at the
end of a line re-lays out all of it, so streaming one line without a break costs time that
grows with the line. Measured in the transcript: 110 KB in one line stalled 198 ms, 2.2 MB
froze the window 46 s, while the same 2.2 MB with line breaks stayed under 546 ms. Spaces and
zero-width spaces do not help (they are break opportunities *within* the logical line); only
a real line end does.

So what is *displayed* gets a line end after at most ``limit`` characters of a line: at a
space in the last ``zone`` characters before the limit if there is one (the break then falls
between two words, where the reader sees no difference once the line wraps), else exactly at
the limit. Only the widget gets them: the answer's text as it arrived (copy, export, history,
the store) is kept apart and never contains one.

Pure functions, any thread (the transcript calls them on the main thread). Linear in the text.
"""

from __future__ import annotations

import re
from typing import TypeVar

from tkchat.limits import DISPLAY_LINE_CHARS

T = TypeVar("T")

SOFT_ZONE = 200  # how far back from the limit a space is looked for


def soft_break(text: str, column: int, limit: int = DISPLAY_LINE_CHARS) -> tuple[str, int]:
    """``text`` as it is to be displayed after ``column`` characters of the current line, and
    the column after it. The result differs from ``text`` only by added ``"\\n"``; the
    decisions are made left to right, so text streamed in chunks breaks where the same text
    in one piece would."""
    if "\n" not in text and column + len(text) < limit - SOFT_ZONE:
        return text, column + len(text)  # the usual case: a short chunk of a short line
    out: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if number:
            out.append("\n")
            column = 0
        start = 0
        while True:
            hard = start + max(0, limit - column)
            space = line.find(" ", start + max(0, limit - SOFT_ZONE - column), hard)
            if space != -1:
                cut_at = space + 1  # after the space: the next line starts with a word
            elif hard < len(line):
                cut_at = max(hard, start + 1) if column == 0 else hard
            else:
                break
            out += (line[start:cut_at], "\n")
            start, column = cut_at, 0
        out.append(line[start:])
        column += len(line) - start
    return "".join(out), column


def soft_break_runs(
    runs: list[tuple[str, T]], limit: int = DISPLAY_LINE_CHARS
) -> list[tuple[str, T]]:
    """Rendered runs (text, its tags) as displayed from the start of a line: the same runs,
    with line ends added where :func:`soft_break` adds them to their text as one. The
    markdown was read from the text as it arrived; only what is shown of it is cut."""
    column, out = 0, []
    for text, tags in runs:
        shown, column = soft_break(text, column, limit)
        out.append((shown, tags))
    return out


def unbreak(shown: str, original: str, limit: int = DISPLAY_LINE_CHARS) -> str:
    """The part of ``original`` (a message as it arrived) that ``shown`` (a piece of it as
    displayed, such as a code block's text) displays, soft breaks removed; ``shown`` itself
    when it holds no line long enough to have been broken, or when it is not found. For the
    "Copy code" link: what is copied is what arrived, whatever the screen shows."""
    lines = shown.split("\n")
    if all(len(line) <= limit - SOFT_ZONE for line in lines[:-1]):
        return shown  # no line reached the soft zone: nothing was added
    # Between two displayed lines, the original had its own line end, or none (a soft one).
    found = re.search("\n?".join(map(re.escape, lines)), original)
    return found.group() if found else shown
