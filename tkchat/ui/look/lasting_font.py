"""A Tk font that the garbage collector cannot delete from a worker thread. Main thread only.

tkinter's ``Font`` deletes its Tk font in ``__del__``, on whichever thread the collector
happens to run: a closed window's fonts, collected on a model's worker, called Tk from that
thread — against the threading rule — and, with no main loop running (a test pumps with
``update()``), waited a second each for one: a window closed in one test made the next
test's stream take 23 s instead of 0.3. A :func:`lasting_font` is never deleted by its
object: it lives as long as its interpreter, as Tk's named fonts do (the same reasoning as
:mod:`tkchat.ui.tcl_var` for variables).
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from typing import Any


def lasting_font(root: tk.Misc | None = None, **options: Any) -> tkfont.Font:
    """A new Tk font with ``options`` (``family``, ``size``, ``weight``...) on ``root``'s
    interpreter (the default root's when None)."""
    font = tkfont.Font(root=root, **options)
    font.delete_font = False  # tkinter's own flag: its __del__ then leaves Tk alone
    return font
