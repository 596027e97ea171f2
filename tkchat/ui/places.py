"""Where the chat window's parts add themselves to it: made by the window's layout
(:mod:`tkchat.ui.window.layout`), handed to the parts that add a pane, a button or a banner.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from dataclasses import dataclass
from tkinter import ttk

from tkchat.ui.health import HealthBar
from tkchat.ui.look.fit import FlowRow


@dataclass(frozen=True)
class Places:
    """Where the parts add to the window (:mod:`tkchat.ui.window.layout` makes them):
    ``panes`` (the sidebar joins the chat at the left, the lesson panel at the right),
    ``top_bar`` (buttons), ``health`` (the health bar) and ``banner_anchor`` (banners are
    packed after it)."""

    panes: ttk.Panedwindow
    top_bar: FlowRow
    health: HealthBar
    banner_anchor: tk.Misc
