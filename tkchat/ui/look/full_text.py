"""The whole text of a one-line label cut with "…" (the status line, the Undo bar): a tip
under it, after the pointer rests on it a moment, or at once on a click.

Reported (issue 22): a long status message ("Could not load the model: …") was cut to the
window's width and there was no way to read the rest. The label still takes no more room
than its row gives it; the tip shows the text wrapped, in the window's colours, and goes when
the pointer leaves, on a second click, or when the text changes.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable

from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import palette_of, set_role
from tkchat.ui.scheduler import AfterScheduler

TIP_DELAY_MS = 400  # how long the pointer rests before the tip shows (a click: at once)
TIP_WIDTH = 520  # the tip's text wraps at this width (pixels of the 96-dpi design)


class FullTextTip:
    """A tip for ``label`` showing ``text()``; None or "" means nothing is hidden (the
    label shows it all), and then no tip appears. ``spot()``: where on the screen the tip's
    top left goes (a list's cell, under the pointer; None or no ``spot``: under the
    label). ``click``: a click shows or hides the tip (not in a list, where a click
    selects). Main thread only."""

    def __init__(
        self,
        label: tk.Misc,
        text: Callable[[], str | None],
        *,
        spot: Callable[[], tuple[int, int] | None] | None = None,
        click: bool = True,
    ) -> None:
        self.label = label
        self.text = text
        self.spot = spot
        self.timers = AfterScheduler(label)  # "tip": the pointer resting on the label
        self.tip: tk.Toplevel | None = None
        self.shown: tk.Label | None = None
        label.bind("<Enter>", lambda _e: self.restart(), add="+")
        label.bind("<Leave>", lambda _e: self.hide(), add="+")
        if click:
            label.bind("<Button-1>", lambda _e: self.toggle(), add="+")
        label.bind("<Destroy>", lambda _e: self.close(), add="+")

    def restart(self) -> None:
        """The pointer came to rest on something new (the label, another cell of a list):
        any tip goes, and one shows after the pointer rests a moment."""
        self.hide()
        if not self.timers.closed:
            self.timers.once("tip", TIP_DELAY_MS, self.show)

    def show(self) -> None:
        """Show the tip under the label (above it near the screen's bottom)."""
        text = self.text()
        if not text or self.timers.closed:
            return
        if self.tip is not None:
            self.refresh()
            return
        palette = palette_of(self.label)
        tip = self.tip = tk.Toplevel(self.label, background=palette.border)
        tip.withdraw()  # until it is in its place: mapped under the pointer, it would
        tip.wm_overrideredirect(True)  # take the pointer from the label, which hides it
        set_role(tip, "keep")  # its colours are set here, not by a theme switch
        self.shown = tk.Label(
            tip,
            text=text,
            justify="left",
            anchor="w",
            wraplength=dp(self.label, TIP_WIDTH),
            background=palette.field,
            foreground=palette.foreground,
            font=tkfont.nametofont("TkDefaultFont", root=self.label),
            padx=dp(self.label, 8),
            pady=dp(self.label, 5),
        )
        self.shown.pack(padx=1, pady=1)
        self.shown.bind("<Button-1>", lambda _e: self.hide())
        self._place(tip)

    def _place(self, tip: tk.Toplevel) -> None:
        """Under the label, within the screen. The size is the label's own request (a
        label knows it once configured) and its one-pixel frame: ``update_idletasks`` would
        lay out the whole window first, a long task while an answer streams (seen in the
        self-test: a pointer resting on the status line held the keys up 600 ms)."""
        assert self.shown is not None
        width, height = self.shown.winfo_reqwidth() + 2, self.shown.winfo_reqheight() + 2
        spot = self.spot() if self.spot is not None else None
        left, below = spot or (
            self.label.winfo_rootx(),
            self.label.winfo_rooty() + self.label.winfo_height(),
        )
        x = min(left, self.label.winfo_screenwidth() - width)
        y = below
        if y + height > self.label.winfo_screenheight():
            y = self.label.winfo_rooty() - height
        tip.geometry(f"{width}x{height}+{max(0, x)}+{max(0, y)}")
        tip.deiconify()

    def refresh(self) -> None:
        """The label's text changed: the tip follows it, or goes when nothing is cut."""
        if self.tip is None or self.shown is None:
            return
        text = self.text()
        if not text:
            self.hide()
        else:
            self.shown.configure(text=text)
            self._place(self.tip)

    def hide(self) -> None:
        self.timers.cancel("tip")
        tip, self.tip, self.shown = self.tip, None, None
        if tip is not None and tip.winfo_exists():
            tip.destroy()

    def toggle(self) -> None:
        if self.tip is None:
            self.show()
        else:
            self.hide()

    def close(self) -> None:
        """The label is going away."""
        self.hide()
        self.timers.close()
