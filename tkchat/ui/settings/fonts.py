"""The text size setting (Ctrl+plus, Ctrl+minus, Ctrl+0): readable on a HiDPI laptop.

One number, the transcript's body size in points, drives everything: the transcript (body,
headers, links, rendered markdown) gets it directly, and Tk's named fonts (buttons, labels,
the input box, menus, lists) are scaled by the same factor from the sizes they had at start.
Reconfiguring a named font updates every widget that uses it, so no widget is rebuilt.

Sizes are kept in points, which Tk scales with the screen's density (``tk scaling``): a Tk
whose named fonts are in pixels (negative sizes, as some builds have on X11) would keep them
small on a 192-dpi screen, so such a size is converted to points as at 96 dpi (12 px is
9 pt) and set in points from then on.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable

from tkchat.store.settings import FONT_SIZE_MAX, FONT_SIZE_MIN
from tkchat.ui.look.theme import fit_list_rows
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE

NAMED_FONTS = (
    "TkDefaultFont",
    "TkTextFont",
    "TkFixedFont",
    "TkMenuFont",
    "TkHeadingFont",
    "TkCaptionFont",
    "TkSmallCaptionFont",
    "TkIconFont",
    "TkTooltipFont",
)


def clamp_size(size: int) -> int:
    return max(FONT_SIZE_MIN, min(FONT_SIZE_MAX, size))


class FontSizer:
    """Remembers the named fonts' start sizes and scales them with the body size. Widgets
    with fonts of their own (the transcript, the sidebar) follow through :meth:`on_change`."""

    def __init__(self, root: tk.Misc) -> None:
        self.root = root
        self.size = BODY_FONT_SIZE
        self._listeners: list[Callable[[int], object]] = []
        self._start: dict[str, float] = {}  # points
        for name in NAMED_FONTS:
            try:
                size = int(tkfont.nametofont(name, root=root).cget("size"))
            except tk.TclError:  # a platform without that named font
                continue
            self._start[name] = size if size > 0 else abs(size) * 72 / 96

    def on_change(self, listener: Callable[[int], object]) -> None:
        """Call ``listener(size)`` after every change of the size."""
        self._listeners.append(listener)

    def apply(self, size: int) -> int:
        """Scale the named fonts to body size ``size`` (clamped), tell the listeners; return
        the size used."""
        self.size = clamp_size(size)
        factor = self.size / BODY_FONT_SIZE
        for name, start in self._start.items():
            tkfont.nametofont(name, root=self.root).configure(size=round(start * factor) or 1)
        fit_list_rows(self.root)  # a list's rows do not grow with their font by themselves
        for listener in self._listeners:
            listener(self.size)
        return self.size
