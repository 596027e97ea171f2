"""Markdown to HTML with Python-Markdown, configured so model output cannot become markup.

The converter runs without its raw-HTML preprocessor and inline pattern, so any HTML the
model writes comes out escaped, as visible text. Markdown images become their alt text, so
tkhtmlview never fetches or opens anything; loose list items lose their inner ``<p>`` so a
bullet and its text stay on one line; a single line break stays a line break. The result
always goes through :func:`~tkchat.render.sanitize.sanitize_html` as well: the converter's
configuration is one defence, the allow-list is the other.

Thread: any. Every conversion builds its own ``Markdown`` instance (they carry state
between calls), and the memo cache of :func:`block_to_html` is thread-safe. The window
calls :func:`block_to_html` on the Tk main thread, one block per callback.
"""

from __future__ import annotations

import functools
import html
import re
import sys
from xml.etree.ElementTree import Element

import markdown
from markdown.treeprocessors import Treeprocessor

from tkchat.limits import (
    MAX_MARKDOWN_EMPHASIS,
    MAX_MARKDOWN_LINKS,
    MAX_MARKDOWN_NESTING,
    MAX_RENDERED_BLOCK_CHARS,
)
from tkchat.render.blocks import CUT_MARK, split_blocks
from tkchat.render.sanitize import sanitize_html
from tkchat.render.scan import RawBlock
from tkchat.render.syntax import dedent, fence_closes, fence_language, fence_open

ZERO_WIDTH_SPACE = "\u200b"  # what CUT_MARK renders as


class _ImagesAsAltText(Treeprocessor):
    """Turn every ``<img>`` into a ``<span>`` holding its alt text: no image is ever loaded
    (tkhtmlview would fetch it over the network or open it from disk), yet the words stay."""

    def run(self, root: Element) -> None:
        for el in root.iter("img"):
            alt, tail = el.get("alt", ""), el.tail
            el.clear()  # drops src/alt/title and the tail; restore what we keep
            el.tag, el.text, el.tail = "span", alt, tail


class _TightListItems(Treeprocessor):
    """Unwrap ``<p>`` inside ``<li>`` (what Python-Markdown emits for a "loose" list, one
    with blank lines between items, which models write all the time). tkhtmlview starts a
    paragraph on a new line after a blank one, so each bullet would stand alone on its own
    line with its text two lines below; unwrapped, the text follows the bullet and further
    paragraphs of the item are separated by a line break."""

    def run(self, root: Element) -> None:
        for li in root.iter("li"):
            if any(child.tag == "p" for child in li):
                self._unwrap_paragraphs(li)

    @staticmethod
    def _unwrap_paragraphs(li: Element) -> None:
        children = list(li)
        for child in children:
            li.remove(child)
        out: list[Element] = []
        text = li.text or ""

        def add_text(more: str | None) -> None:
            nonlocal text
            if not more:
                return
            if out:
                out[-1].tail = (out[-1].tail or "") + more
            else:
                text += more

        seen_paragraph = False
        for child in children:
            if child.tag != "p":
                out.append(child)
                continue
            if seen_paragraph:
                out.append(Element("br"))
            seen_paragraph = True
            add_text(child.text)
            out.extend(child)  # the paragraph's inline children keep their tails
            add_text(child.tail)
        li.text = text
        li.extend(out)


class _LineBreaksKept(Treeprocessor):
    """A single line break in a paragraph stays a line break: a poem stays a poem, an
    address an address, as chat users expect (markdown proper joins the lines). Inside list
    items lines are still joined: there a break is almost always the model wrapping a long
    item, and tkhtmlview would not indent the continuation under the bullet anyway. Runs
    after the inline patterns (priority 20), so it sees the final elements; code is left
    alone, and a hard break ("two spaces, newline") does not become two."""

    def run(self, root: Element) -> None:
        self._paragraphs(root)

    def _paragraphs(self, parent: Element) -> None:
        for child in parent:
            if child.tag == "p":
                self._break_lines(child)
            elif child.tag not in ("ul", "ol", "pre"):
                self._paragraphs(child)  # a blockquote's paragraphs

    def _break_lines(self, element: Element) -> None:
        children: list[Element] = []
        first, *rest = (element.text or "").split("\n")
        element.text = first
        children += [_br(part) for part in rest]
        for child in list(element):
            if child.tag != "code":
                self._break_lines(child)
            tail = child.tail or ""
            if child.tag == "br" and tail.startswith("\n"):
                tail = tail[1:]  # a hard break's own newline
            first, *rest = tail.split("\n")
            child.tail = first
            children += [child, *(_br(part) for part in rest)]
        element[:] = children


def _br(tail: str) -> Element:
    br = Element("br")
    br.tail = tail
    return br


def _make_markdown() -> markdown.Markdown:
    """A fresh converter (about 0.1 ms): Markdown instances are stateful, so one per call
    keeps rendering thread-safe without a lock."""
    md = markdown.Markdown(extensions=["fenced_code", "sane_lists"], output_format="html")
    # Raw HTML must come out as text: drop the block-level stash of HTML and the inline
    # HTML pattern; the serializer then escapes '<' in ordinary text.
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(_ImagesAsAltText(md), "tkchat_images_as_alt", 15)
    md.treeprocessors.register(_LineBreaksKept(md), "tkchat_line_breaks_kept", 16)
    md.treeprocessors.register(_TightListItems(md), "tkchat_tight_list_items", 14)
    return md


def _normalize_fences(text: str) -> str:
    """Rewrite fences into the one form Python-Markdown's fenced_code accepts.

    Its pattern wants the fence at column 0, an info string that is a bare language name,
    and a closing fence identical to the opening one; model output often has an indented
    fence, ``python title=x``, a longer closing fence or no closing fence at all.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        fm = fence_open(lines[i])
        if not fm:
            out.append(lines[i])
            i += 1
            continue
        fence, indent = fm.group("fence"), len(fm.group("indent"))
        out.append(fence + fence_language(lines[i]))
        j = i + 1
        while j < len(lines) and not fence_closes(lines[j], fence):
            out.append(dedent(lines[j], indent))
            j += 1
        out.append(fence)
        i = j + 1
    return "\n".join(out)


# A line opening more than MAX_MARKDOWN_NESTING quotes or lists (``> > > ...``, ``1. 1. ...``).
_DEEP_NESTING = re.compile(
    rf"^[ \t]*(?:(?:>|(?:[-+*]|\d{{1,9}}[.)])[ \t])[ \t]*){{{MAX_MARKDOWN_NESTING + 1}}}",
    re.MULTILINE,
)


def too_costly(text: str) -> bool:
    """Whether Python-Markdown would take super-linear time on ``text``: its link and
    emphasis patterns backtrack over every ``[`` (``"[" * 1000`` took 356 ms, 2,000 1.4 s,
    6,000 froze the window 3.3 s) and every ``*``/``_``, and each ``>`` or list marker at
    the start of a line opens a quote or a list nested in the last. Counting costs a few
    passes over the text; a block over a budget of :mod:`tkchat.limits` is shown as plain
    text, which no one writing real markdown reaches (32 links in a block of at most a
    couple of thousand characters)."""
    return (
        text.count("[") > MAX_MARKDOWN_LINKS
        or text.count("*") + text.count("_") > MAX_MARKDOWN_EMPHASIS
        or _DEEP_NESTING.search(text) is not None
    )


def stays_plain(raw: RawBlock) -> bool:
    """Whether the window should leave a whole block as plain text instead of cutting it into
    pieces and rendering them: a block longer than ``MAX_RENDERED_BLOCK_CHARS`` (cutting one
    megabyte alone took 71 ms), or prose :func:`too_costly` for Python-Markdown (cutting
    ``"[a](" * 4000`` at protected spans took 68 ms). Code is coloured by Pygments, not
    Python-Markdown: its brackets cost nothing."""
    if sum(len(line) + 1 for line in raw.lines) > MAX_RENDERED_BLOCK_CHARS:
        return True
    return raw.kind not in ("fence", "code") and too_costly("\n".join(raw.lines))


def plain_html(text: str) -> str:
    """``text`` as one paragraph of escaped text: what a block shows when it cannot be
    rendered as markdown in bounded time (or at all)."""
    return f"<p>{html.escape(text, quote=False)}</p>"


def _render(text: str) -> str:
    if too_costly(text):
        return plain_html(text.replace(CUT_MARK, ""))
    try:
        html_text = _make_markdown().convert(_normalize_fences(text))
    except Exception:  # e.g. RecursionError on a list nested 300 deep
        # Model output must never take the window down: show the block as plain text.
        return plain_html(text.replace(CUT_MARK, ""))
    # The marks a cut put in are zero-width spaces now: out they go (blocks.CUT_MARK).
    return sanitize_html(html_text).replace(ZERO_WIDTH_SPACE, "", text.count(CUT_MARK))


@functools.lru_cache(maxsize=4096)
def block_to_html(block: str) -> str:
    """Render one markdown block to safe HTML (memoized: re-renders after a resize, a theme
    change or a scroll back cost nothing, and the cache is thread-safe).

    Raw HTML in the block comes out escaped as visible text, markdown images become their
    alt text, links lose their target, and :func:`sanitize_html` makes the final call.
    """
    return _render(block)


def convert_whole_document(text: str) -> str:
    """One uncached conversion of the whole text, as a naive app does on every chunk (the
    ``per-chunk-render`` demo). Exactly as safe as the block path."""
    return _render(text)


def markdown_to_safe_html(text: str) -> str:
    """Render a whole document in one call (tests, and the deliberately blocking demo).

    It renders the same blocks as the sliced path (unbounded in size), so the two produce
    identical HTML and differ only in how long one main-thread call takes.
    """
    return "\n".join(_render(block) for block in split_blocks(text, sys.maxsize))
