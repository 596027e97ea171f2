"""Where the watchdog window (:mod:`tkchat.lab.watchdog`) goes on the screen: clear of what the
class must see in the chat window during a freeze (the lesson, the chat's text streaming, the
health bar, the Send row). The chat window says where it is and which part of it may be covered
(``--room``: the lesson's lag timeline, which a frozen loop cannot redraw); this module picks
the place, Tk-free but for the title bar's height.

Main thread of the watchdog.
"""

from __future__ import annotations

import re
import tkinter as tk

SIZE = (720, 400)  # pixels of the 96-dpi design; twice as many at 192 dpi, as its text
# On a small screen (a 1280×720 projector) at most this share of it each way.
SCREEN_SHARE = 0.45
# A room smaller than this share of that size each way is not used: the text would be too
# small to read (the window opens in the screen's corner instead).
SMALLEST_SHARE = 0.5
Rect = tuple[int, int, int, int]  # width, height, x, y: a Tk geometry's four numbers


def parse_geometry(text: str | None) -> Rect | None:
    """``"WxH+X+Y"`` (Tk's geometry, as ``--room`` and ``--window`` give it) as a Rect."""
    found = re.fullmatch(r"(\d+)x(\d+)\+(-?\d+)\+(-?\d+)", (text or "").strip())
    if found is None:
        return None
    width, height, x, y = (int(part) for part in found.groups())
    return width, height, x, y


def geometry_of(rect: Rect) -> str:
    return "{}x{}+{}+{}".format(*rect)


def placement(
    screen_w: int,
    screen_h: int,
    scale: float = 1.0,
    *,
    room: Rect | None = None,
    window: Rect | None = None,
) -> Rect:
    """The watchdog's (width, height, x, y) on a screen of ``screen_w`` × ``screen_h`` pixels
    whose density is ``scale`` times 96 dpi: :data:`SIZE` scaled to the density (its text is
    sized in points: kept at 720×400 pixels it cut its sentences in half at 192 dpi), at
    most :data:`SCREEN_SHARE` of the screen each way. Where: in a corner of the screen the
    chat ``window`` leaves free; else over ``room``, the part of the window the class needs
    nothing of during a freeze (the window says which), as large as it holds. In the
    screen's bottom right it covered the lesson's lower half on a 1280×720 projector; with
    neither given (or a room too small to read in), that is still where it goes."""
    margin = round(16 * scale)
    width = min(round(SIZE[0] * scale), int(screen_w * SCREEN_SHARE))
    height = min(round(SIZE[1] * scale), int(screen_h * SCREEN_SHARE))
    corner = (width, height, screen_w - width - margin, screen_h - height - margin)
    if window is not None:
        for x in (screen_w - width - margin, margin):
            for y in (screen_h - height - margin, margin):
                if not overlap((width, height, x, y), window):
                    return width, height, x, y
    if room is not None:
        room_w, room_h, room_x, room_y = room
        if room_w >= width * SMALLEST_SHARE and room_h >= height * SMALLEST_SHARE:
            width, height = min(width, room_w), min(height, room_h)
            return width, height, room_x + (room_w - width) // 2, room_y
    return corner


def other_side(rect: Rect, screen_w: int) -> Rect:
    """The same place mirrored left to right: where M moves the watchdog."""
    width, height, x, y = rect
    return width, height, screen_w - x - width, y


def overlap(a: Rect, b: Rect) -> bool:
    """Do the two rectangles share any pixel?"""
    aw, ah, ax, ay = a
    bw, bh, bx, by = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


def inside_frame(root: tk.Misc, rect: Rect) -> Rect:
    """``rect`` less the window manager's title bar, once the window is mapped: Tk puts the
    frame's corner at x, y, and the title bar would push the window's bottom past ``rect``
    (over the chat window's Send row)."""
    bar = root.winfo_rooty() - root.winfo_y()
    width, height, x, y = rect
    return (width, height - bar, x, y) if 0 < bar < height // 2 else rect
