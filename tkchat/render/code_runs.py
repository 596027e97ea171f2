"""Python a model wrote without ``` fences, found so that it is shown as code.

Small models (the bundled SmolLM2-135M among them) often write code with no fence, or with
only the closing one. CommonMark reads such code as a paragraph: its indentation goes, and
``# Example usage:`` becomes a giant heading. The block scanner (:mod:`tkchat.render.scan`)
asks :func:`code_run_end` at every line where a top-level block, a paragraph line or a
list's unindented (lazy) line could begin a run, and calls what it finds fenced Python code;
the page's ``markdown.js`` (``codeRunEnd``) keeps the same rules, line for line, so the
window and the browser show the same code. Only what is *shown* changes: the answer's text
— what Copy, export and the store keep — stays as the model wrote it.

The rules:

1. A line **looks like Python** when, without its indentation and a trailing ``# comment``,
   it is one of: ``def name(...):`` / ``async def``, ``class Name:`` / ``class Name(...):``;
   ``if``/``elif``/``while ...:``, ``for names in ...:``, ``with ...(...):`` or ``with ... as
   ...:``, ``else:``, ``try:``, ``finally:``, ``except ...:``; ``import a.b [as c], ...``,
   ``from a.b import ...``; ``return``/``yield`` [value], ``raise``, ``pass``, ``break``,
   ``continue``, ``assert``/``del``/``global``/``nonlocal ...``; a decorator ``@name``; an
   assignment whose target is a name, an attribute, a subscript or a tuple of them (``x = 1``,
   ``a, b = b, a``, ``d["k"] += 1``); a bare call (``print(x)``, ``main()``,
   ``items.sort()``). Keywords are lowercase, as in Python, so a sentence ("If you...",
   "Return to...") never matches; no line ending in a full stop (one ".", not "...") and no
   line over 400 characters looks like Python.
2. A **run starts** at a line indented at most 3 columns that looks like Python when the
   next line that is not a comment looks like Python too or is indented deeper, or when the
   line right after it is a bare fence (```` ``` ```` or ``~~~`` alone: the model forgot the
   opening fence, so that one closes the run and is not shown). Up to 8 comment lines
   (``#`` ...) right above such a start belong to the run: ``# Add two numbers`` over
   ``def add(a, b):`` is a comment, not a heading.
3. A **run goes on** with every line that looks like Python, is a comment (``#`` ... —
   inside a run never a heading), is indented deeper than the run's first line, or holds
   only closing brackets (``}``, ``])``); across blank lines when the next line that is not
   blank looks like Python, is indented deeper, or is a comment followed directly by one of
   these. A bare fence right after it closes it (rule 2); anything else ends it, before the
   blank lines.
4. A run is only looked for outside fences, quotes, indented code and list items' indented
   lines (the scanner asks only at top-level lines): fenced code and indented code already
   show as code, and prose lines — a list, a numbered list, "if you want ... :" followed by
   prose, a ``# Title`` above prose or above a blank line — never start one.

Whether a run starts at a line can depend on the lines after it (rule 2 looks past the
comments and one line of code). While an answer streams, those may not have arrived:
:func:`code_run_end` then raises :class:`NeedMoreLines` (``final=False``), and the scanner
hands out nothing from that line on until they have — so a block is never painted as prose
and then found to be code. (Where a run *ends* needs no such wait: see :func:`_run_end`.)

Pure functions, no shared state: any thread may call them.
"""

from __future__ import annotations

import re

from tkchat.render.syntax import fence_open, indent_width, is_blank

LANGUAGE = "python"  # the fence a run is shown with (Pygments colours it)

_NAME = r"[A-Za-z_]\w*"
_MODULE = rf"[\w.]+(?:[ \t]+as[ \t]+{_NAME})?"  # a module imported, perhaps as a name
_TARGET = rf"{_NAME}(?:\.{_NAME})*(?:\[[^\]]*\])*"
_LOOKS_LIKE_PYTHON = re.compile(
    "|".join(
        (
            rf"(?:async[ \t]+)?def[ \t]+{_NAME}[ \t]*\(.*\)(?:[ \t]*->.+)?:",
            rf"class[ \t]+{_NAME}(?:[ \t]*\(.*\))?:",
            r"(?:if|elif|while)[ \t]+\S.*:",
            rf"for[ \t]+\(?{_NAME}(?:[ \t]*,[ \t]*{_NAME})*\)?[ \t]+in[ \t]+\S.*:",
            r"with[ \t]+(?:\S.*[ \t]+as[ \t]+\S.*|[\w.]+\(.*\)):",
            r"(?:else|try|finally):",
            r"except(?:[ \t]+\S.*)?:",
            rf"import[ \t]+{_MODULE}(?:[ \t]*,[ \t]*{_MODULE})*",
            r"from[ \t]+\.*[\w.]*[ \t]+import[ \t]+\S.*",
            r"(?:return|yield)(?:[ \t]+\S.*)?",
            r"raise(?:[ \t]+[\w.]+(?:\(.*\))?)?",
            r"pass|break|continue",
            r"(?:assert|del|global|nonlocal)[ \t]+\S.*",
            rf"@{_NAME}(?:\.{_NAME})*(?:\(.*\))?",
            rf"\(?{_TARGET}(?:[ \t]*,[ \t]*{_TARGET})*\)?[ \t]*"
            r"(?://|\*\*|>>|<<|[-+*/%&|^@])?=(?!=)[ \t]*\S.*",
            rf"{_TARGET}\(.*\)",
        )
    ),
    re.ASCII,  # as in markdown.js: \w is [A-Za-z0-9_] in both
)
# Longer lines never look like Python: a code line is short, and the patterns above may
# backtrack over a line (quadratic in its length at worst: bounded by this).
MAX_CODE_LINE_CHARS = 400
# At most this many comment lines above a run's first line of code belong to it: a scan
# asks at every line, and a thousand "#" lines must not be walked a thousand times.
MAX_COMMENTS_ABOVE = 8
_TRAILING_COMMENT = re.compile(r"[ \t]+#[^'\"]*$")
_CLOSING_BRACKETS = re.compile(r"[\]})]+[,;:]?")


class NeedMoreLines(Exception):
    """Whether a run starts or goes on here depends on lines that have not arrived yet."""


def looks_like_python(line: str) -> bool:
    """Rule 1: ``line`` (indentation and all) on its own looks like a line of Python."""
    text = line.strip(" \t")
    if (
        not text
        or len(text) > MAX_CODE_LINE_CHARS
        or (text.endswith(".") and not text.endswith("..."))
    ):
        return False
    if _LOOKS_LIKE_PYTHON.fullmatch(text):
        return True
    bare = _TRAILING_COMMENT.sub("", text)
    return bare != text and _LOOKS_LIKE_PYTHON.fullmatch(bare) is not None


def is_comment(line: str) -> bool:
    """A ``#`` line: a Python comment inside a run (CommonMark would make some headings)."""
    return line.lstrip(" \t").startswith("#")


def _code_line(line: str) -> bool:
    """Rule 3's lines that go on with a run whatever their indentation."""
    return looks_like_python(line) or _CLOSING_BRACKETS.fullmatch(line.strip(" \t")) is not None


def _bare_fence(line: str) -> bool:
    found = fence_open(line)
    return found is not None and not found.group("info").strip(" \t")


def _line(lines: list[str], k: int, final: bool) -> str | None:
    """Line ``k``, or None past the end of a finished text; past the end of one still
    arriving, the decision has to wait."""
    if k < len(lines):
        return lines[k]
    if final:
        return None
    raise NeedMoreLines


def code_run_end(lines: list[str], i: int, *, final: bool = True) -> tuple[int, bool] | None:
    """If a run of unfenced Python starts at ``lines[i]`` (rule 2): the index just past it
    and whether its last line is a bare fence that closes it (rule 2's forgotten opener);
    None if no run starts there.

    ``final``: the text is complete. If it is still arriving and the answer depends on lines
    not yet there, :class:`NeedMoreLines` is raised."""
    first = i
    while is_comment(lines[i]) and indent_width(lines[i]) <= 3:  # comments above the code
        i += 1
        if i - first > MAX_COMMENTS_ABOVE or _line(lines, i, final) is None:
            return None
    line = lines[i]
    if indent_width(line) > 3 or not looks_like_python(line):
        return None
    k = i + 1
    while (after := _line(lines, k, final)) is not None and is_comment(after):
        k += 1  # comments between its first two lines of code
    if after is None or is_blank(after):
        return None
    if k == i + 1 and _bare_fence(after):
        return k + 1, True
    if not (looks_like_python(after) or indent_width(after) > indent_width(line)):
        return None
    return _run_end(lines, k + 1, indent_width(line))


def _run_end(lines: list[str], j: int, base: int) -> tuple[int, bool]:
    """Rule 3: follow a run from ``lines[j]`` (the lines before it are in the run).

    The lines not there yet need no waiting here: a run that reaches the last line is the
    open last block (it goes on with what arrives), and one that a comment after a blank line
    may go on with ends before it only for now: the comment starts no block until the line
    after it has arrived (:func:`code_run_end`), so nothing is handed out meanwhile."""
    while True:
        line = _line(lines, j, True)
        if line is None:
            return j, False
        if is_blank(line):
            k = j
            while (ahead := _line(lines, k, True)) is not None and is_blank(ahead):
                k += 1
            if ahead is None or not _goes_on_after_blank(lines, k, base):
                return j, False
            j = k
            continue
        if _bare_fence(line):
            return j + 1, True
        if fence_open(line) is not None:
            return j, False
        if not (_code_line(line) or is_comment(line) or indent_width(line) > base):
            return j, False
        j += 1


def _goes_on_after_blank(lines: list[str], k: int, base: int) -> bool:
    """Rule 3, across blank lines: does ``lines[k]`` (not blank) go on with the run?"""
    line = lines[k]
    if fence_open(line) is not None:
        return False
    if _code_line(line) or indent_width(line) > base:
        return True
    if not is_comment(line):
        return False
    after = _line(lines, k + 1, True)
    return (
        after is not None
        and not is_blank(after)
        and fence_open(after) is None
        and (_code_line(after) or indent_width(after) > base)
    )


def may_change_run(previous: str, line: str) -> bool:
    """Could ``line``, after ``previous``, start or end a run? (Cheap, for the stream's
    throttled rescan of a long open block: a prose line after code ends a run, a code line
    after prose may start one; within a run, only indentation changes.)"""
    if indent_width(line) > 3 or is_blank(line) or is_blank(previous):
        return False
    return _code_line(previous) != _code_line(line) and indent_width(previous) <= 3


def may_end_run(previous: str, line: str) -> bool:
    """Could ``line``, after ``previous``, end an open run? (Cheap and cautious, for the same
    rescan: blank lines and dedents go on with a run; prose, a fence, a comment after a blank
    line — which goes on only if code follows it — may end it.)"""
    if is_blank(line):
        return False
    if fence_open(line) is not None:
        return True
    if indent_width(line) > 3 or _code_line(line):
        return False
    return not is_comment(line) or is_blank(previous)
