"""Cut a run of prose into pieces of bounded length, at places where a reader would.

:mod:`tkchat.render.blocks` falls back on :func:`split_prose` whenever a paragraph (or a
heading, or content nested too deep to split by structure) is longer than one block may be.
The cut must not change what the reader sees, so it never falls inside a word, and it
avoids the inside of inline markup, where a cut would strand an opening delimiter in one
piece and show it as a literal character.

Pure functions, no shared state: any thread may call them.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable

# Breakable whitespace excludes the no-break spaces; sentence ends are Latin and CJK full
# stops, optionally followed by closing quotes or brackets.
_BREAKABLE_WS_RE = re.compile(r"[^\S\u00a0\u2007\u202f]+")
_CLOSERS = ")\\]\"'\u201d\u2019\u00bb\u300d\u300f\uff09\u300b"
_SENTENCE_END_RE = re.compile(rf"[.!?\u2026\u3002\uff01\uff1f][{_CLOSERS}]*$")
_CJK_END_RE = re.compile(rf"[\u3002\uff01\uff1f][{_CLOSERS}]*")
# Inline spans a cut should avoid: code spans, links/images, emphasis. Every repetition is
# bounded, so hostile input (10,000 asterisks) cannot make the search blow up.
_PROTECTED_RE = re.compile(
    r"(`{1,16})(?!`).{1,300}?(?<!`)\1(?!`)"
    r"|!?\[[^\]\n]{0,300}\]\([^)\s]{0,500}(?:\s+\"[^\"\n]{0,200}\")?\)"
    r"|(\*{1,3}|_{1,3})(?=\S)[^\n]{1,300}?(?<=\S)\2",
    re.DOTALL,
)

_BACKTICKS_RE = re.compile(r"`+")
_Candidate = tuple[int, int, int]  # (cut: end of this piece, resume: start of next, rank)

_PREFERENCES: tuple[Callable[[_Candidate, int], bool], ...] = (
    lambda c, half: c[2] == 2 and c[0] >= half,  # a sentence end in the second half
    lambda c, half: c[2] >= 1 and c[0] >= half,  # a line break in the second half
    lambda c, half: True,  # the last breakable space that fits
)


def split_prose(text: str, limit: int) -> list[str]:
    """Split prose into pieces of at most ``limit`` characters.

    Cuts happen only at breakable whitespace (which is dropped) or right after a CJK full
    stop, so a cut never falls inside a word, a surrogate pair or a combining sequence: all
    of those are free of whitespace. Preference: a sentence end in the second half of the
    window, then a line break there, then the last space that fits; cuts inside links or
    emphasis are avoided when any other cut fits, and a cut never falls inside a code span
    (of any length: the piece is then longer than ``limit``), since the piece after it would
    pair its backticks differently. A word longer than ``limit`` becomes a piece of its own.
    """
    text = text.strip()
    limit = max(1, limit)
    if len(text) <= limit:
        return [text] if text else []
    in_code = _inside(code_spans(text))
    candidates = [c for c in _candidates(text) if not in_code(c[0])]
    cuts = [c[0] for c in candidates]
    spans = [m.span() for m in _PROTECTED_RE.finditer(text) if m.end() - m.start() <= limit // 2]
    protected = _inside(spans)
    pieces: list[str] = []
    start = 0
    while len(text) - start > limit:
        lo = bisect_right(cuts, start)
        hi = bisect_right(cuts, start + limit)
        choice = _choose(candidates[lo:hi], start + limit // 2, protected)
        if choice is None:
            if hi >= len(candidates):
                break  # the rest is a single unbreakable word (or code span)
            choice = candidates[hi]  # first cut after an over-long word
        cut, resume, _ = choice
        pieces.append(text[start:cut].rstrip())
        start = resume
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def _candidates(text: str) -> list[_Candidate]:
    """Every place prose may be cut, ranked (2: a sentence end, 1: a line break, 0: a space)."""
    candidates: list[_Candidate] = []
    for m in _BREAKABLE_WS_RE.finditer(text):
        s, e = m.span()
        if s == 0 or e == len(text):
            continue
        rank = 1 if "\n" in m.group() else 0
        if _SENTENCE_END_RE.search(text, max(0, s - 8), s):
            rank = 2
        candidates.append((s, e, rank))
    for m in _CJK_END_RE.finditer(text):
        e = m.end()
        if 0 < e < len(text) and not text[e].isspace():
            candidates.append((e, e, 2))
    candidates.sort()
    return candidates


def _choose(
    window: list[_Candidate], half: int, protected: Callable[[int], bool]
) -> _Candidate | None:
    unprotected = [c for c in window if not protected(c[0])]
    for prefer in _PREFERENCES:
        hits = [c for c in unprotected if prefer(c, half)]
        if hits:
            return hits[-1]
    return window[-1] if window else None


def _inside(spans: list[tuple[int, int]]) -> Callable[[int], bool]:
    """Whether a position falls strictly inside one of ``spans`` (sorted, not overlapping)."""
    starts = [s for s, _ in spans]

    def test(pos: int) -> bool:
        k = bisect_left(starts, pos) - 1
        return k >= 0 and spans[k][1] > pos

    return test


def code_spans(text: str) -> list[tuple[int, int]]:
    """The code spans of ``text`` as CommonMark (and the page's renderer) read them: a run
    of n backticks opens a span that the next run of exactly n closes; a run with no such
    partner is literal. Linear: each length's runs are visited once, in order."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for index, (s, e) in enumerate(runs):
        by_length.setdefault(e - s, []).append(index)
    cursor = dict.fromkeys(by_length, 0)
    spans: list[tuple[int, int]] = []
    k = 0
    while k < len(runs):
        length = runs[k][1] - runs[k][0]
        same, at = by_length[length], cursor[length]
        while at < len(same) and same[at] <= k:
            at += 1
        cursor[length] = at
        if at == len(same):
            k += 1  # no closing run of this length: literal backticks
            continue
        close = same[at]
        spans.append((runs[k][0], runs[close][1]))
        k = close + 1
    return spans
