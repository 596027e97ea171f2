"""Sizes that follow the screen's density: a padding of 8 is 8 pixels on a 96-dpi screen and
16 on a 192-dpi one.

Tk already scales every size given in points (the fonts, "8p"), through ``tk scaling``
(pixels per point, read from the X server's DPI at start, or set by the user). Sizes given as
plain numbers are pixels, and stay small on a HiDPI laptop: a 900-pixel window is half as
wide as intended, a 14-pixel scrollbar hard to hit. :func:`dp` turns the numbers this window
was designed with (at 96 dpi) into pixels for the screen it is on.

Main thread only (it asks Tk).
"""

from __future__ import annotations

import tkinter as tk
from typing import overload

REFERENCE_SCALING = 96 / 72  # pixels per point at 96 dpi, where the window's sizes were chosen


def density(widget: tk.Misc) -> float:
    """How many pixels this screen uses for one pixel of a 96-dpi design (1.0, or 2.0 at 192
    dpi). Never below 1: a low-DPI screen gets the design's own sizes, not smaller ones.
    Rounded to hundredths: Tk keeps its scaling as whole millimetres of the screen, so 192
    dpi reads back as 2.0039 of the design, and a size remembered as 2280 pixels came back
    as 1138 design pixels instead of 1140."""
    return max(1.0, round(float(widget.tk.call("tk", "scaling")) / REFERENCE_SCALING, 2))


def dp(widget: tk.Misc, pixels: float) -> int:
    """``pixels`` of the 96-dpi design, in this screen's pixels (0 stays 0, else at least 1)."""
    if pixels == 0:
        return 0
    return max(1, round(pixels * density(widget)))


@overload
def dp_pad(widget: tk.Misc, first: float, second: float, /) -> tuple[int, int]: ...


@overload
def dp_pad(
    widget: tk.Misc, first: float, second: float, third: float, fourth: float, /
) -> tuple[int, int, int, int]: ...


def dp_pad(widget: tk.Misc, *pixels: float) -> tuple[int, ...]:
    """Two or four sizes at once, for ``padx=(left, right)`` and ``padding=``."""
    return tuple(dp(widget, value) for value in pixels)


def window_size(widget: tk.Misc, width: float, height: float, fill: float = 0.92) -> str:
    """A ``WIDTHxHEIGHT`` geometry for a window designed at ``width`` × ``height``: scaled to
    the screen's density, and never more than ``fill`` of the screen (a 192-dpi laptop with a
    small screen still sees the whole window)."""
    screen_w, screen_h = widget.winfo_screenwidth(), widget.winfo_screenheight()
    scaled_w = min(dp(widget, width), int(screen_w * fill))
    scaled_h = min(dp(widget, height), int(screen_h * fill))
    return f"{scaled_w}x{scaled_h}"


def design_size(widget: tk.Misc, geometry: str) -> str | None:
    """The size part of a ``WIDTHxHEIGHT+X+Y`` geometry in pixels of the 96-dpi design: what
    the window remembers, so that it reopens as large on a screen of another density (a
    window 2280 pixels wide at 192 dpi is 1140 design pixels, and 1140 pixels at 96 dpi).
    None for a geometry that does not parse."""
    size = _size(geometry)
    if size is None:
        return None
    scale = density(widget)
    return f"{max(1, round(size[0] / scale))}x{max(1, round(size[1] / scale))}"


def remembered_size(
    widget: tk.Misc, design: str | None, pixels: str | None = None, fill: float = 0.97
) -> str | None:
    """The window's size as it was left, for this screen: ``design`` (from
    :func:`design_size`) scaled to this screen's density, or else ``pixels`` (a geometry
    remembered by an older tkchat, whose density is not known) as it is; either made to
    fit this screen, since a window saved on a larger screen (or beside an open lesson
    panel) must not start with its right side off a 1280×720 one. None when neither parses."""
    size = _size(design or "")
    if size is not None:
        return window_size(widget, *size, fill=fill)
    size = _size(pixels or "")
    if size is None:
        return None
    screen_w, screen_h = widget.winfo_screenwidth(), widget.winfo_screenheight()
    return f"{min(size[0], int(screen_w * fill))}x{min(size[1], int(screen_h * fill))}"


def _size(geometry: str) -> tuple[int, int] | None:
    try:
        width, height = (int(v) for v in geometry.split("+")[0].split("-")[0].split("x"))
    except ValueError:
        return None
    return (width, height) if width > 0 and height > 0 else None
