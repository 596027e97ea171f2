"""Display-only line breaks, so that Tk lays out a long line in bounded time.

Tk's Text widget lays out a *logical* line (up to its ``\\n``) as a whole: every insert at the
end of a line re-lays out all of it, so streaming one line without a break costs time that
grows with the line. Measured in the transcript: 110 KB in one line stalled 198 ms, 2.2 MB
froze the window 46 s, while the same 2.2 MB with line breaks stayed under 546 ms. Spaces and
zero-width spaces do not help (they are break opportunities *within* the logical line); only
a real line end does.

So what is *displayed* gets a line end where a reader expects one, and never later than a
bound (``limit``, :data:`~tkchat.limits.DISPLAY_LINE_CHARS`):

- prose breaks between two sentences, at the first sentence's end (". ", "? ", "。") once the
  line is ``limit - SOFT_ZONE`` characters long: a line end there reads as the writer's own.
  (A line end every ``limit`` characters at any space, as before, cut a long pasted
  paragraph mid-sentence, three times in 3,000 characters.)
- a line without a sentence's end (a list of words, a long line of code) breaks at a space
  once it is ``2 * limit - SOFT_ZONE`` long, and at ``2 * limit`` at the latest;
- a run of ``limit`` characters without a space (a hash, a URL, a hostile server's megabyte
  of "abcabc…") is cut there, and so is a line with no space in its last ``SOFT_ZONE``
  characters before ``limit``, as they always were: the bound that keeps Tk fast.

Only the widget gets them: the text as it arrived (copy, export, history, the store) is kept
apart and never contains one. The decisions are made left to right and carried from one piece
of text to the next in a :class:`LineState`, so an answer streamed in chunks breaks where the
same text in one piece would.

Pure functions, any thread (the transcript calls them on the main thread). Linear in the text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TypeVar

from tkchat.limits import DISPLAY_LINE_CHARS

T = TypeVar("T")

SOFT_ZONE = 200  # how far before a bound a break is looked for
_TAIL = 3  # characters kept from one piece to the next: a sentence's end may span the two
# The end of a sentence: Latin punctuation (and a closing quote or bracket) then whitespace,
# the break after it; or a CJK full stop (and a closing mark) then any character that is
# not one more closing mark, the break before that character.
_CLOSERS = re.escape("\"'”’)]」』）》")
_SPACE = re.compile("[ \t]")
_STOPS = ".!?…。！？"  # what a sentence's end begins with (see _SENTENCE_END)
_SENTENCE_END = re.compile(
    rf"[.!?…][{_CLOSERS}]?[ \t]|[。！？][{_CLOSERS}]?(?=[^{_CLOSERS}。！？])"
)


@dataclass(frozen=True, slots=True)
class LineState:
    """Where the text shown so far ends: ``column`` characters since the last line end (a
    real or a soft one), ``run`` since the last space, and its last few characters."""

    column: int = 0
    run: int = 0
    tail: str = ""


def soft_break(
    text: str, state: LineState | int = 0, limit: int = DISPLAY_LINE_CHARS
) -> tuple[str, LineState]:
    """``text`` as it is to be displayed after ``state`` (a column, for a line that has no
    earlier piece), and the state after it. The result differs from ``text`` only by added
    ``"\\n"``."""
    if isinstance(state, int):
        state = LineState(state, state)
    if "\n" not in text and state.column + len(text) < limit - SOFT_ZONE:  # the usual case
        return text, _after(state, text)
    lines = text.split("\n")
    # No line near a bound (a saved message, a tick of prose): nothing to look for in any
    # of them. Each line is the usual case on its own: putting a long chat on screen
    # looked for breaks in each of its 300,000 lines, line by line.
    if state.column + len(lines[0]) < limit - SOFT_ZONE and (
        len(lines) == 1 or max(map(len, lines[1:])) < limit - SOFT_ZONE
    ):
        return text, _after(state if len(lines) == 1 else LineState(), lines[-1])
    out: list[str] = []
    for number, line in enumerate(lines):
        if number:
            out.append("\n")
            state = LineState()
        shown, state = _break_line(line, state, limit)
        out.append(shown)
    return "".join(out), state


def _break_line(line: str, state: LineState, limit: int) -> tuple[str, LineState]:
    """One logical line's piece (no ``"\\n"`` in it), broken as the rules say."""
    pieces: list[str] = []
    start = 0
    while True:
        cut_at = _next_break(line, start, state, limit)
        if cut_at is None:
            break
        pieces += (line[start:cut_at], "\n")
        start, state = cut_at, LineState()
    pieces.append(line[start:])
    return "".join(pieces), _after(state, line[start:])


def _next_break(line: str, start: int, state: LineState, limit: int) -> int | None:
    """Where the next soft break goes in ``line`` from ``start`` (which ``state`` describes),
    or None before the piece's end: a break is only made with a character after it, so a
    piece ending where a break falls leaves it to the next piece (or to a real line end)."""
    column, run = state.column, state.run
    latest = start + 2 * limit - column  # the latest any line may end
    candidates = [latest]
    run_cut = _run_cut(line, start, run, limit, latest)
    if run_cut is not None:
        candidates.append(run_cut)  # a run without a space: cut at the bound
    at_limit = start + limit - column
    if at_limit >= start and _run_at(line, start, run, at_limit) >= SOFT_ZONE:
        candidates.append(at_limit)  # no space in the last SOFT_ZONE: not prose, cut here
    # A sentence's end or a space can only win before the earliest break found so far: the
    # search stops there (a megabyte without a space was searched 2,000 characters a break,
    # twice: 20 ms for 600,000 characters; now the 200 before each cut).
    best = min(at for at in candidates if at > start or column > 0)
    for pattern, zone in ((_SPACE, 2 * limit - SOFT_ZONE), (_SENTENCE_END, limit - SOFT_ZONE)):
        low = start + zone - column
        if low > best:
            continue
        found_at = _first_end(pattern, line, start, state, (low, best))
        if found_at is not None:
            candidates.append(found_at)
            if found_at > start or column > 0:
                best = min(best, found_at)
    # (not at a line's very start: an empty display line)
    found = [at for at in candidates if at < len(line) and (at > start or column > 0)]
    return max(min(found), start) if found else None


def _run_at(line: str, start: int, run: int, at: int) -> int:
    """How long the run without a space is at ``at`` (``run`` long at ``start``)."""
    space = max(line.rfind(" ", start, at), line.rfind("\t", start, at))
    return run + at - start if space == -1 else at - space - 1


def _run_cut(line: str, start: int, run: int, limit: int, end: int) -> int | None:
    """Where a run without a space reaches ``limit`` characters, before ``end``: the run
    the piece starts in (``run`` characters long at ``start``), or a later one."""
    space = _find_space(line, start, min(end, start + limit - run))
    if space < 0:
        return start + limit - run
    later = _runs(limit).search(line, space, end)
    return None if later is None else later.end()


def _find_space(line: str, start: int, end: int) -> int:
    """The first space or tab in ``line[start:end]`` (-1: none): ``str.find``, not a regular
    expression, since a line without a space is searched a bound's length per break."""
    found = [at for at in (line.find(" ", start, end), line.find("\t", start, end)) if at >= 0]
    return min(found) if found else -1


@functools.lru_cache(maxsize=8)
def _runs(limit: int) -> re.Pattern[str]:
    # Tried only where a run begins (after a space): else every letter of every word is a
    # new start, and a long line of prose took 60 times as long.
    return re.compile(f"(?<![^ \t])[^ \t]{{{limit}}}")


def _first_end(
    pattern: re.Pattern[str], line: str, start: int, state: LineState, zone: tuple[int, int]
) -> int | None:
    """Where the first match of ``pattern`` (a sentence's end, a space) that ends in
    ``zone`` (from, to) puts its break. Only that far is searched: a megabyte in one line is
    looked at a window at a time, not to its end each time. The state's tail goes in front
    of the piece, so that a match split between two pieces (". ") is still seen."""
    earliest, latest = max(zone[0], start), zone[1]
    tail = state.tail if start == 0 else ""
    text = tail + line[start : latest + _TAIL]
    if pattern is _SENTENCE_END and not any(mark in text for mark in _STOPS):
        return None  # (the usual case in a run without a sentence's end: no regex at all)
    # A match is at most _TAIL characters long: none that starts earlier can end in the zone.
    for match in pattern.finditer(text, max(0, earliest - start + len(tail) - _TAIL)):
        at = start + match.end() - len(tail)
        if at >= earliest:
            return at
    return None


def _after(state: LineState, shown: str) -> LineState:
    """The state after ``shown`` (no ``"\\n"`` in it) follows ``state`` on its line."""
    space = max(shown.rfind(" "), shown.rfind("\t"))
    run = state.run + len(shown) if space == -1 else len(shown) - space - 1
    return LineState(state.column + len(shown), run, (state.tail + shown)[-_TAIL:])


def soft_break_runs(
    runs: list[tuple[str, T]], limit: int = DISPLAY_LINE_CHARS
) -> list[tuple[str, T]]:
    """Rendered runs (text, its tags) as displayed from the start of a line: the same runs,
    with line ends added where :func:`soft_break` adds them to their text as one. The
    markdown was read from the text as it arrived; only what is shown of it is cut."""
    state: LineState | int = 0
    out: list[tuple[str, T]] = []
    for text, tags in runs:
        shown, state = soft_break(text, state, limit)
        out.append((shown, tags))
    return out


def unbreak(shown: str, original: str, limit: int = DISPLAY_LINE_CHARS) -> str:
    """The part of ``original`` (a message as it arrived) that ``shown`` (a piece of it as
    displayed, such as a code block's text) displays, soft breaks removed; ``shown`` itself
    when it holds no line long enough to have been broken, or when it is not found. For the
    "Copy code" link: what is copied is what arrived, whatever the screen shows."""
    lines = shown.split("\n")
    if all(len(line) < limit - SOFT_ZONE for line in lines[:-1]):
        return shown  # no line reached the soft zone: nothing was added
    # Between two displayed lines, the original had its own line end, or none (a soft one).
    found = re.search("\n?".join(map(re.escape, lines)), original)
    return found.group() if found else shown
