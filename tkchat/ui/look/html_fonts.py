"""tkhtmlview's fonts, shared: one Tk font per distinct style instead of one per run.

tkhtmlview creates a new Tk font for every formatting run it lays out, and font creation
was most of its cost. The window's markdown painter (:mod:`tkchat.ui.transcript.markdown_view`)
installs :class:`_SharedFontFactory` in tkhtmlview's parser; the benchmark's baseline and
the per-chunk-render demo put the stock fonts back for a while (:func:`stock_tkhtmlview`)
to show what an app that just calls ``set_html`` gets. Main thread only.
"""

from __future__ import annotations

import tkinter.font as tkfont
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tkchat.ui.look.lasting_font import lasting_font


class _SharedFontFactory:
    """Stands in for ``tkinter.font`` inside tkhtmlview's parser: equal font options give
    the same ``Font``. tkhtmlview creates a new Tk font for every formatting run, and font
    creation was most of its cost: sharing them cut the slowest block from 5.1 to 1.6 ms."""

    families = staticmethod(tkfont.families)

    def __init__(self) -> None:
        self._fonts: dict[tuple[tuple[str, object], ...], tkfont.Font] = {}

    def Font(self, **options: object) -> tkfont.Font:  # noqa: N802 - mirrors tkinter.font.Font
        key = tuple(sorted(options.items()))
        font = self._fonts.get(key)
        if font is None:
            font = self._fonts[key] = lasting_font(None, **options)
        return font


@contextmanager
def stock_tkhtmlview() -> Iterator[None]:
    """Temporarily give tkhtmlview its own fonts back: the benchmark's baseline measures
    what an app that just calls ``set_html`` would get."""
    from tkhtmlview import html_parser

    shared = html_parser.font
    html_parser.font = tkfont
    try:
        yield
    finally:
        html_parser.font = shared


def share_fonts(html_parser: Any) -> None:
    """Main thread. Install the shared font factory in tkhtmlview's parser module (once)."""
    if not isinstance(html_parser.font, _SharedFontFactory):
        html_parser.font = _SharedFontFactory()


__all__ = ["share_fonts", "stock_tkhtmlview"]
