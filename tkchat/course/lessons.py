"""Lessons: markdown files with a small header, from the course's folder (the repository's
``lessons/``, installed as the package data ``tkchat.lessons``: :mod:`tkchat.installed`).

Tk-free, so the tests check every lesson without a window. A lesson file looks like::

    ---
    id: 04-blocking
    title: Generation on the UI thread
    mode: blocking
    ...
    code: tkchat/antipatterns/blocking.py::GenerateInClickHandler.start
    ---
    ## What you see
    ...
    {{code tkchat/antipatterns/blocking.py::GenerateInClickHandler.start}}

A ``{{code path::Dotted.name}}`` placeholder stands for the *current* source of that
definition: :func:`render_body` reads the file and cuts the definition out with ``ast``, so a
lesson can never quote code that no longer exists. A reference that does not resolve is an
error (:class:`LookupError`), and the tests resolve every one of them.

Everything here may run on any thread (it only reads files); the lesson panel calls it from
the Tk main thread, when a lesson is picked.
"""

from __future__ import annotations

import ast
import locale
import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tkchat import installed
from tkchat.course.claims import (
    Claim,
    ClaimError,
    figures_path,
    fill_figures,
    load_figures,
    parse_claims,
    quoted_figures,
)
from tkchat.course.kept_run import KeptRun, kept_run_of
from tkchat.course.prediction import Prediction, PredictionError, parse_prediction

N = TypeVar("N", int, float)

LANGUAGES: tuple[str, ...] = ("en", "zh")
WATCH_TARGETS: tuple[str, ...] = ("heartbeat", "lag", "rates", "transcript")
BACKENDS: tuple[str, ...] = ("scripted", "llama")
REQUIRED_KEYS: tuple[str, ...] = (
    "id",
    "title",
    "mode",
    "backend",
    "watch",
    "expect_mode",
    "expect_metric",
    "expect",
    "code",
)
# The demo, fully described: the scripted answer's length, the answer limit and seed, whether
# it starts a fresh chat (default yes), how long it should last, what it claims (checked on a
# real run by ``tkchat bench --lessons``, the CI's claims step), whether the watchdog
# window shows it from outside, whether the pipeline view shows it stage by stage, and the
# question the class answers before it (tkchat/course/prediction.py).
OPTIONAL_KEYS: tuple[str, ...] = (
    "rate",
    "prompt",
    "tokens",
    "max_tokens",
    "seed",
    "fresh",
    "seconds",
    "claims",
    "watchdog",
    "chaos",
    "stages",
    "predict",
)
HEADER_KEYS: tuple[str, ...] = REQUIRED_KEYS + OPTIONAL_KEYS

PLACEHOLDER_RE = re.compile(r"\{\{code\s+(?P<ref>[^{}\s]+)\s*\}\}")
_FENCE = "---"


class LessonFormatError(ValueError):
    """A lesson file is malformed (missing header, unknown key, wrong id …)."""


@dataclass(frozen=True, slots=True)
class Lesson:
    """One lesson in one language, exactly as its file says (the body is not yet rendered)."""

    id: str  # == the file stem, e.g. "04-blocking"; the same in every language
    language: str
    title: str
    mode: str  # the mode the demo button sets (a name from tkchat.modes.MODES)
    backend: str  # "scripted" or "llama"
    rate: float | None  # scripted tokens/s, if the demo sets one
    prompt: str | None  # what the demo sends, in the lesson's language
    watch: str  # what the panel points at: heartbeat, lag, rates or transcript
    expect_mode: str  # the mode whose live figure is compared ...
    expect_metric: str  # ... under this key of a ``tkchat bench`` run
    expect: str  # the expected figure, in words, with ``{{figure metric}}`` placeholders
    code: tuple[str, ...]  # ``path::Dotted.name`` references
    body: str  # markdown, with ``{{code …}}`` and ``{{figure …}}`` placeholders
    path: Path
    tokens: int | None = None  # scripted: the answer's length in tokens
    max_tokens: int | None = None  # the answer limit the demo's chat uses
    seed: int | None = None  # the sampling seed (the real model answers the same every time)
    fresh: bool = True  # start a new chat, so earlier demos do not lengthen the prompt
    seconds: float | None = None  # about how long the demo runs (Send to the answer's end)
    claims: tuple[Claim, ...] = ()  # what a run of the demo must show (tkchat bench --lessons)
    watchdog: bool = False  # open the watchdog window: the freeze, seen from outside
    stages: bool = False  # open the pipeline view (tkchat/ui/stages/): each stage's work
    chaos: int | None = None  # the chaos transport's seed (lesson 13): shuffled, duplicated
    predict: Prediction | None = None  # asked before the demo; ``expect`` waits for its end

    @property
    def number(self) -> int:
        """The lesson's place in the course (the ``NN`` of ``NN-slug``)."""
        return int(self.id.split("-", 1)[0])

    @property
    def slug(self) -> str:
        return self.id.split("-", 1)[1]

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The references quoted in the body, in order of appearance."""
        return tuple(m.group("ref") for m in PLACEHOLDER_RE.finditer(self.body))


# -- finding and parsing lesson files ----------------------------------------------------------


def repo_root() -> Path:
    """The folder a lesson's quoted path (``tkchat/ui/pump.py``) is relative to: the one that
    holds the ``tkchat`` package, in a clone or in ``site-packages``."""
    return installed.source_root()


def lessons_dir() -> Path:
    """The course's folder (``en/``, ``zh/``, the plans, the exercises, ``figures.json``),
    from a clone or a wheel alike; a clear :class:`FileNotFoundError` if it is missing."""
    return installed.course_root()


def plan_path(lang: str) -> Path:
    """The class plan in ``lang`` (``lessons/plan.en.md``): which lessons in which order, and
    the questions to ask before each demo."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown lesson language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    return lessons_dir() / f"plan.{lang}.md"


def load_lessons(lang: str) -> list[Lesson]:
    """Every lesson in ``lang`` ("en" or "zh"), in course order."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown lesson language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    folder = lessons_dir() / lang
    if not folder.is_dir():
        raise FileNotFoundError(f"no lessons in {lang!r}: {folder} is missing")
    lessons = [parse_lesson(path, lang) for path in sorted(folder.glob("[0-9][0-9]-*.md"))]
    if not lessons:
        raise FileNotFoundError(f"no lesson files (NN-slug.md) in {folder}")
    return lessons


def parse_lesson(path: Path, lang: str) -> Lesson:
    """Read one lesson file; :class:`LessonFormatError` names the file and what is wrong."""
    text = path.read_text(encoding="utf-8")
    header, body = _split_header(text, path)
    missing = [key for key in REQUIRED_KEYS if not header.get(key)]
    if missing:
        raise LessonFormatError(f"{path}: header lacks {', '.join(missing)}")
    if header["id"] != path.stem:
        raise LessonFormatError(f"{path}: id {header['id']!r} differs from the file name")
    if header["watch"] not in WATCH_TARGETS:
        raise LessonFormatError(f"{path}: watch must be one of {', '.join(WATCH_TARGETS)}")
    if header["backend"] not in BACKENDS:
        raise LessonFormatError(f"{path}: backend must be one of {', '.join(BACKENDS)}")
    rate = _number(header, "rate", float, path)
    try:
        claims = parse_claims(header.get("claims", ""))
    except ClaimError as exc:
        raise LessonFormatError(f"{path}: {exc}") from None
    try:
        predict = parse_prediction(header.get("predict", ""))
    except PredictionError as exc:
        raise LessonFormatError(f"{path}: {exc}") from None
    code = tuple(ref.strip() for ref in header["code"].split(",") if ref.strip())
    return Lesson(
        id=header["id"],
        language=lang,
        title=header["title"],
        mode=header["mode"],
        backend=header["backend"],
        rate=rate,
        prompt=header.get("prompt") or None,
        watch=header["watch"],
        expect_mode=header["expect_mode"],
        expect_metric=header["expect_metric"],
        expect=header["expect"],
        code=code,
        body=body.strip("\n") + "\n",
        path=path,
        tokens=_number(header, "tokens", int, path),
        max_tokens=_number(header, "max_tokens", int, path),
        seed=_number(header, "seed", int, path),
        fresh=_yes(header, "fresh", True, path),
        seconds=_number(header, "seconds", float, path),
        claims=claims,
        watchdog=_yes(header, "watchdog", False, path),
        stages=_yes(header, "stages", False, path),
        chaos=_number(header, "chaos", int, path),
        predict=predict,
    )


def _number(header: dict[str, str], key: str, kind: type[N], path: Path) -> N | None:
    if not header.get(key):
        return None
    try:
        value = kind(header[key].replace(",", "").replace("_", ""))
    except ValueError:
        raise LessonFormatError(f"{path}: {key} must be a {kind.__name__}") from None
    if value <= 0:
        raise LessonFormatError(f"{path}: {key} must be positive")
    return value


def _yes(header: dict[str, str], key: str, default: bool, path: Path) -> bool:
    value = header.get(key, "").strip().lower()
    if not value:
        return default
    if value not in ("yes", "no"):
        raise LessonFormatError(f"{path}: {key} is yes or no")
    return value == "yes"


def _split_header(text: str, path: Path) -> tuple[dict[str, str], str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != _FENCE:
        raise LessonFormatError(f"{path}: a lesson starts with a '---' header block")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise LessonFormatError(f"{path}: the header block is never closed with '---'") from None
    header: dict[str, str] = {}
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon or key not in HEADER_KEYS:
            raise LessonFormatError(f"{path}:{number}: not a known 'key: value' line: {line!r}")
        if key in header:
            raise LessonFormatError(f"{path}:{number}: {key} given twice")
        header[key] = value.strip()
    return header, "\n".join(lines[end + 1 :])


# -- quoting live source -----------------------------------------------------------------------


def resolve_reference(ref: str) -> str:
    """The current source text of ``path::Dotted.name`` (a top-level function or class, a
    method, or a class attribute), dedented. ``LookupError`` if it cannot be found.

    In a ``.js`` file the name is a ``function`` (at any depth: the browser client wraps its
    code in one function), a ``class``, or ``Class.method``; the quote includes the comment
    right above it."""
    path_text, sep, dotted = ref.partition("::")
    if not sep or not path_text or not dotted:
        raise LookupError(f"{ref!r}: a code reference looks like 'tkchat/file.py::Class.method'")
    root = repo_root()
    path = (root / path_text).resolve()
    if not path.is_relative_to(root / "tkchat") or path.suffix not in (".py", ".js"):
        raise LookupError(f"{ref!r}: only tkchat's own Python and JavaScript files can be quoted")
    if not path.is_file():
        raise LookupError(f"{ref!r}: there is no file {path_text}")
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        return _resolve_js(source, dotted, ref)
    try:
        tree = _parse(source, path)
    except SyntaxError as exc:
        raise LookupError(f"{ref!r}: {path_text} does not parse: {exc}") from exc
    body: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    walked: list[str] = []
    for part in dotted.split("."):
        if walked and not isinstance(node, ast.ClassDef):
            raise LookupError(f"{ref!r}: {'.'.join(walked)} is not a class, it has no {part!r}")
        node = _find(body, part)
        if node is None:
            where = ".".join(walked) or path_text
            raise LookupError(f"{ref!r}: no definition named {part!r} in {where}")
        walked.append(part)
        if isinstance(node, ast.ClassDef):
            body = node.body
    assert node is not None
    return _source_of(source, node)


def _find(body: list[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            return node
    return None


def _source_of(source: str, node: ast.stmt) -> str:
    segment = ast.get_source_segment(source, node, padded=True)
    if segment is None:  # pragma: no cover - only for nodes without positions
        raise LookupError("the definition has no source position")
    decorators = getattr(node, "decorator_list", [])
    if decorators:
        lines = source.splitlines()
        first = min(d.lineno for d in decorators)
        segment = "\n".join(lines[first - 1 : node.lineno - 1]) + "\n" + segment
    return textwrap.dedent(segment).rstrip() + "\n"


# -- JavaScript: no parser in the standard library, so a careful scan for the braces ---------

_JS_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")


def _parse(source: str, path: Path) -> ast.Module:
    """``ast.parse``, once more if CPython's own check failed: the lesson panel reads code on
    a worker thread, and a garbage collection there can run a Tk object's ``__del__`` in the
    middle of the parse ("AST constructor recursion depth mismatch", a SystemError: seen once
    in the suite). The source is the same; the second parse is the answer."""
    try:
        return ast.parse(source, filename=str(path))
    except SystemError:
        return ast.parse(source, filename=str(path))


def _resolve_js(source: str, dotted: str, ref: str) -> str:
    """``function name``, ``class Name`` or ``Class.method`` in a JavaScript file: the
    declaration up to its matching brace, with the comment just above it, dedented."""
    parts = dotted.split(".")
    if len(parts) > 2:
        raise LookupError(f"{ref!r}: a JavaScript quote is a function, a class or Class.method")
    if len(parts) == 1:
        pattern = (
            rf"^[ \t]*(?:export\s+)?(?:async\s+)?(?:function\s*\*?\s*|class\s+)"
            rf"{re.escape(parts[0])}\b"
        )
        start, end = _js_unique(source, pattern, 0, len(source), ref, parts[0])
        return _js_quote(source, start, end)
    outer_start, outer_end = _js_unique(
        source,
        rf"^[ \t]*(?:export\s+)?class\s+{re.escape(parts[0])}\b",
        0,
        len(source),
        ref,
        parts[0],
    )
    body = source.index("{", outer_start) + 1
    pattern = rf"^[ \t]*(?:static\s+)?(?:async\s+)?\*?{re.escape(parts[1])}(?=\s*\()"
    start, end = _js_unique(source, pattern, body, outer_end, ref, dotted)
    return _js_quote(source, start, end)


def _js_unique(source: str, pattern: str, lo: int, hi: int, ref: str, name: str) -> tuple[int, int]:
    """(start of the declaring line, end of its block) for the one match of ``pattern``."""
    matches = list(re.compile(pattern, re.M).finditer(source, lo, hi))
    if not matches:
        raise LookupError(f"{ref!r}: no function or class named {name!r}")
    if len(matches) > 1:
        raise LookupError(f"{ref!r}: {name!r} is declared {len(matches)} times; name one")
    match = matches[0]
    return match.start(), _js_block_end(source, match.end(), ref)


def _js_block_end(source: str, at: int, ref: str) -> int:
    """The index just past the ``}`` that closes the first ``{`` at paren depth 0 after
    ``at``. Strings, template literals, comments and regex literals are skipped, so a brace
    inside them does not count."""
    depth, parens, i, n = 0, 0, at, len(source)
    previous = "("  # the last significant character: decides whether "/" starts a regex
    while i < n:
        ch = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
            continue
        if source.startswith("/*", i):
            close = source.find("*/", i + 2)
            i = n if close < 0 else close + 2
            continue
        if ch in "'\"`" or (ch == "/" and previous in _JS_REGEX_BEFORE):
            i = _js_skip_literal(source, i)
            previous = "a"
            continue
        if ch == "(":
            parens += 1
        elif ch == ")":
            parens -= 1
        elif ch == "{" and (parens == 0 or depth > 0):
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                return i + 1
        if not ch.isspace():
            previous = ch
        i += 1
    raise LookupError(f"{ref!r}: the block never closes")


def _js_skip_literal(source: str, i: int) -> int:
    """Past the string, template or regex literal that starts at ``i`` (escapes honoured;
    a regex's character class may hold a "/")."""
    quote, i, in_class = source[i], i + 1, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if quote == "/" and ch == "[":
            in_class = True
        elif quote == "/" and ch == "]":
            in_class = False
        elif ch == quote and not in_class:
            return i + 1
        elif ch == "\n" and quote in "'\"/":
            return i  # an unterminated literal: stop at the line's end
        i += 1
    return i


def _js_quote(source: str, start: int, end: int) -> str:
    lines = source[:start].splitlines()
    above: list[str] = []
    while lines and lines[-1].strip().startswith(("*", "/*", "//")):
        above.insert(0, lines.pop())
        if above[0].strip().startswith("/*"):
            break
    text = "\n".join([*above, source[start:end]])
    return textwrap.dedent(text).rstrip() + "\n"


def render_body(lesson: Lesson, *, strict: bool = True) -> str:
    """The lesson's markdown with every ``{{code …}}`` replaced by a fenced block of the live
    source. ``strict=False`` puts a visible note where a reference does not resolve, instead
    of raising :class:`LookupError` (the panel must never fail to show a lesson)."""

    def quote(match: re.Match[str]) -> str:
        ref = match.group("ref")
        try:
            code = resolve_reference(ref)
        except LookupError as exc:
            if strict:
                raise
            return f"> ⚠ {exc}"
        path, _, name = ref.partition("::")
        if path.endswith(".js"):
            return f"```javascript\n// {path} — {name}\n{code}```"
        return f"```python\n# {path} — {name}\n{code}```"

    body = fill_figures(PLACEHOLDER_RE.sub(quote, lesson.body), quoted(lesson), lesson.language)
    provenance = quoted_from(lesson)
    if provenance is None or not quoted_figures(lesson.expect + lesson.body):
        return body
    return f"{body.rstrip()}\n\n*{provenance.describe(lesson.language)}*\n"


def quoted(lesson: Lesson) -> dict[str, float | None]:
    """The figures measured for ``lesson``'s demo in its language by the last
    ``tkchat bench --lessons`` run (``lessons/figures.json``)."""
    figures = load_figures(figures_path(lessons_dir()))
    return figures.get(lesson.id, {}).get(lesson.language, {})


def quoted_from(lesson: Lesson) -> KeptRun | None:
    """Where and when the figures ``lesson`` quotes were measured (None: never)."""
    return kept_run_of(figures_path(lessons_dir()), lesson.id, lesson.language)


def expect_text(lesson: Lesson) -> str:
    """The lesson's expected figure in words, with its measured numbers filled in."""
    return fill_figures(lesson.expect, quoted(lesson), lesson.language)


# -- language ----------------------------------------------------------------------------------


def default_language() -> str:
    """``"zh"`` when the system locale is Chinese, else ``"en"``.

    The first of ``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that names a real locale
    decides, as for gettext; without any, ``locale.getlocale()`` (which on Windows gives names
    such as ``Chinese (Simplified)_China``)."""
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "").split(":")[0].strip()
        if value and value not in ("C", "POSIX") and not value.startswith("C."):
            return _language_of(value)
    try:
        current = locale.getlocale()[0] or ""
    except ValueError:
        current = ""
    return _language_of(current)


def _language_of(name: str) -> str:
    return "zh" if name.lower().startswith(("zh", "chinese")) else "en"
