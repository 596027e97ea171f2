"""A combobox whose drop-down list is as wide as its longest entry.

Tk draws a ``ttk.Combobox``'s list exactly as wide as the box. The lesson picker's box is as
narrow as its row leaves it, so in projector mode at 1280×720 the list showed each lesson's
title cut to eight characters ("03 · 事件循环只有一", issue 35) — the list a teacher picks
the next lesson from. Tk places the list with the style's ``-postoffset`` (x, y, width,
height added to the box's own); :func:`widen_list` sets it just before each post, so the
list fits its widest entry, and moves left rather than past the screen's right edge.

Main thread only.
"""

from __future__ import annotations

from tkinter import ttk

from tkchat.ui.look.scaling import dp

LIST_PAD = 28  # the list's scrollbar and its own padding (pixels of the 96-dpi design)


def widen_list(combo: ttk.Combobox, style: str) -> None:
    """From now on, ``combo``'s list opens as wide as its widest entry. ``style`` names the
    box's own style (``"Something.TCombobox"``, derived from TCombobox: its theme's look
    stays), which carries the offset."""
    combo.configure(style=style, postcommand=lambda: _fit_list(combo, style))


def _fit_list(combo: ttk.Combobox, style: str) -> None:
    popdown = str(combo.tk.eval(f"ttk::combobox::PopdownWindow {combo}"))
    font = combo.tk.call(f"{popdown}.f.l", "cget", "-font")
    values = [str(value) for value in combo.cget("values")]
    widest = max((int(combo.tk.call("font", "measure", font, v)) for v in values), default=0)
    box = combo.winfo_width()
    extra = max(0, widest + dp(combo, LIST_PAD) - box)
    right_room = combo.winfo_screenwidth() - (combo.winfo_rootx() + box)
    shift = min(0, right_room - extra)  # negative: the list starts left of the box
    ttk.Style(combo).configure(style, postoffset=(shift, 0, extra, 0))
