"""Model markdown to safe HTML, one top-level block at a time: the public face of the package.

Callers import from here; the work is done by small modules, one concern each:

- :mod:`tkchat.render.syntax` — line-level markdown: block openers, code fences.
- :mod:`tkchat.render.scan` — grouping lines into top-level blocks.
- :mod:`tkchat.render.code_runs` — Python written without fences, which ``scan`` calls
  fenced code (the rules, kept line for line by the page's ``markdown.js``).
- :mod:`tkchat.render.prose` — cutting long prose at sentence ends and spaces.
- :mod:`tkchat.render.blocks` — blocks small enough for one main-thread callback
  (:func:`split_blocks`, :func:`block_pieces`); why the size matters is there.
- :mod:`tkchat.render.stream` — the blocks of an answer still streaming, each as soon as
  it is complete (:class:`BlockStream`).
- :mod:`tkchat.render.highlight` — Pygments' colours for code, lexers loaded off the main
  thread (:func:`highlight`, :func:`lexer_ready`).
- :mod:`tkchat.render.to_html` — Python-Markdown with raw HTML and images disabled
  (:func:`block_to_html` and the whole-document variants).
- :mod:`tkchat.render.sanitize` — the attribute-free allow-list every output goes through.

Two rules hold throughout: model text is untrusted, so nothing it writes reaches tkhtmlview
as markup (links are plain text, images their alt text: the app stays offline); and every
function is pure, with no Tk and no shared mutable state apart from the thread-safe memo
cache of :func:`block_to_html` and the lexer table of ``highlight``, so any thread may call
them (a :class:`BlockStream` belongs to one answer, and so to one thread at a time).
"""

from __future__ import annotations

from tkchat.render.blocks import DEFAULT_MAX_CHARS, Piece, block_pieces, split_blocks
from tkchat.render.highlight import Look, highlight, lexer_ready, restyle
from tkchat.render.sanitize import ALLOWED_TAGS, sanitize_html
from tkchat.render.stream import BlockStream, StreamBlock
from tkchat.render.syntax import fenced_code
from tkchat.render.to_html import (
    block_to_html,
    convert_whole_document,
    markdown_to_safe_html,
    stays_plain,
)

__all__ = [
    "ALLOWED_TAGS",
    "DEFAULT_MAX_CHARS",
    "BlockStream",
    "Look",
    "Piece",
    "StreamBlock",
    "block_pieces",
    "block_to_html",
    "convert_whole_document",
    "fenced_code",
    "highlight",
    "lexer_ready",
    "markdown_to_safe_html",
    "restyle",
    "sanitize_html",
    "split_blocks",
    "stays_plain",
]
