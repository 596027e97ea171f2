"""Chinese that wraps in the transcript as it does in print, while an answer streams.

Tk 8.6's word wrap breaks a line only at an ASCII space (or tab): a Chinese paragraph is one
long "word", moved whole to the next line when it does not fit on the rest of one (the line
before it left short) and then cut at any character, "，" or "。" first on a line included.
A zero-width space (U+200B) does not help: Tk measures it 0 pixels wide, keeps it in the text
and never breaks there (tested, as were a thin space and the control characters, drawn as
boxes). Tk does break where text is elided: a space in :data:`~tkchat.ui.look.fit.BREAK_TAG`,
configured ``elide=True`` by the transcript, is a break no reader sees, and one that
``get -displaychars``, the X selection and the Text widget's search all leave out. Where the
breaks go is the lesson panel's rule, :func:`~tkchat.ui.look.fit.break_points` (no line
starts with a closing mark or ends with an opening one).

A break costs Tk more than its character: it is a few more segments in its logical line,
and Tk walks a line's segments from its start for each piece of it that it lays out, so the
cost grows with the square of a line's breaks. Measured by hand (Xvfb, Noto Sans CJK 12 pt,
paragraphs streamed two characters a tick, a tick's insert and redisplay, 95th percentile):
with a break between every two characters, 3 ms a tick in 150-character paragraphs, 17-28
ms in 300-character ones, 140 ms in 1,000-character ones (without breaks: under 1 ms). So the
transcript breaks at most every :data:`BREAK_SPACING` characters (a line ends at most one
character short) and at most :data:`MAX_BREAKS_PER_LINE` times in a logical line, its first
hundred characters or so: 1.5-3.3 ms at 150-300 characters, 5 ms at 1,000. Past that Tk cuts
the line's rest at any character, as before, and the line with the last break may end short.

Pure text, linear in the text given (a streamed tick's, never the whole answer's): any
thread (the transcript calls it on the main thread).
"""

from __future__ import annotations

from dataclasses import dataclass

from tkchat.ui.look.fit import BREAK_TAG, break_points

BREAK_SPACING = 2  # characters between two breaks, at least
MAX_BREAKS_PER_LINE = 50  # per logical line: Tk's cost grows with their square
BREAK = " "  # elided by BREAK_TAG: Tk breaks there, and nobody sees or copies it

Run = tuple[str, tuple[str, ...]]  # (text, tags), as the Text widget's insert takes them


@dataclass(frozen=True, slots=True)
class BreakState:
    """Where the text shown so far ends: its last character, the breaks in its logical line,
    and the characters since the last break (or since that line's start)."""

    last: str = ""
    breaks: int = 0
    since: int = 0


def with_breaks(
    text: str, tags: tuple[str, ...], state: BreakState | None = None
) -> tuple[list[Run], BreakState]:
    """``text`` (shown after ``state``; none: at the start of a line) as runs to insert, with
    a :data:`BREAK` run in ``tags`` + :data:`BREAK_TAG` where Chinese may break, and the state
    after it. Without the break runs, the runs are ``text`` itself."""
    state = state or BreakState()
    runs: list[Run] = []
    start = 0
    breaks, previous = state.breaks, -state.since  # ``previous``: the last break's offset
    line_end = text.find("\n")
    for at in break_points(text, state.last):
        while 0 <= line_end < at:  # a new logical line: its own count
            breaks, previous = 0, line_end + 1
            line_end = text.find("\n", previous)
        if breaks < MAX_BREAKS_PER_LINE and at - previous >= BREAK_SPACING:
            if at > start:
                runs.append((text[start:at], tags))
            runs.append((BREAK, (*tags, BREAK_TAG)))
            start, previous, breaks = at, at, breaks + 1
    if start < len(text) or not runs:
        runs.append((text[start:], tags))
    last_line = text.rfind("\n")
    if last_line != -1 and last_line >= previous:  # (after the last break: a fresh count)
        breaks, previous = 0, last_line + 1
    return runs, BreakState(text[-1:] or state.last, breaks, len(text) - previous)


def runs_with_breaks(runs: list[Run]) -> list[Run]:
    """Rendered runs from the start of a line, with breaks as :func:`with_breaks` puts them
    in their text as one (a break may fall between two runs: bold Chinese, then plain)."""
    state = BreakState()
    out: list[Run] = []
    for text, tags in runs:
        more, state = with_breaks(text, tags, state)
        out += more
    return out


def insert_args(runs: list[Run]) -> list[object]:
    """The runs as the arguments of one Text insert: text, tags, text, tags…"""
    return [item for run in runs for item in run]
