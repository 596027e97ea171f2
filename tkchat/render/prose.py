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

_Candidate = tuple[int, int, int]  # (cut: end of this piece, resume: start of next, rank)

_PREFERENCES: tuple[Callable[[_Candidate, int], bool], ...] = (
    lambda c, half: c[2] == 2 and c[0] >= half,  # a sentence end in the second half
    lambda c, half: c[2] >= 1 and c[0] >= half,  # a line break in the second half
    lambda c, half: True,  # the last breakable space that fits
)


def split_prose(text: str, limit: int) -> list[str]:  # noqa: C901 - a debt (tests/test_architecture.py)
    """Split prose into pieces of at most ``limit`` characters.

    Cuts happen only at breakable whitespace (which is dropped) or right after a CJK full
    stop, so a cut never falls inside a word, a surrogate pair or a combining sequence: all
    of those are free of whitespace. Preference: a sentence end in the second half of the
    window, then a line break there, then the last space that fits; cuts inside inline
    code, links or emphasis are avoided when any other cut fits. A word longer than
    ``limit`` becomes a piece of its own.
    """
    text = text.strip()
    limit = max(1, limit)
    if len(text) <= limit:
        return [text] if text else []

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
    cuts = [c[0] for c in candidates]

    spans = [m.span() for m in _PROTECTED_RE.finditer(text) if m.end() - m.start() <= limit // 2]
    span_starts = [s for s, _ in spans]

    def protected(pos: int) -> bool:
        k = bisect_left(span_starts, pos) - 1
        return k >= 0 and spans[k][1] > pos

    pieces: list[str] = []
    start = 0
    while len(text) - start > limit:
        lo = bisect_right(cuts, start)
        hi = bisect_right(cuts, start + limit)
        window = candidates[lo:hi]
        half = start + limit // 2
        unprotected = [c for c in window if not protected(c[0])]
        choice: _Candidate | None = None
        for prefer in _PREFERENCES:
            hits = [c for c in unprotected if prefer(c, half)]
            if hits:
                choice = hits[-1]
                break
        if choice is None and window:
            choice = window[-1]
        if choice is None:
            if hi >= len(candidates):
                break  # the rest is a single unbreakable word
            choice = candidates[hi]  # first cut after an over-long word
        cut, resume, _ = choice
        pieces.append(text[start:cut].rstrip())
        start = resume
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    return pieces
