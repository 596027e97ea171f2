"""What a click on a band of the lag timeline opens: who held the loop then, with its stacks.

A small window of plain text (:func:`tkchat.trace.culprit.stacks_text`): the band's sentence,
what Tk called, where the time went by kind, and the heaviest stacks, innermost frame first,
one ``file:line:function`` a line — the place in the code to open next. Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

from tkchat.trace.culprit import Culprit, stacks_text
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import palette_of


class StacksWindow(tk.Toplevel):
    def __init__(self, master: tk.Misc, culprit: Culprit | None, translate: Translator) -> None:
        super().__init__(master)
        self.title(translate("culprit.stacks.title"))
        palette = palette_of(master)
        text = culprit and stacks_text(culprit, translate.lang)
        self.text = tk.Text(
            self,
            wrap="none",
            width=96,
            height=min(36, 4 + (text or "").count("\n")),
            font="TkFixedFont",
            borderwidth=0,
            padx=dp(self, 10),
            pady=dp(self, 8),
            background=palette.surface,
            foreground=palette.foreground,
            highlightthickness=0,
        )
        self.text.insert("1.0", text or translate("culprit.stacks.unsampled"))
        self.text.configure(state="disabled")  # read, select and copy; not typed into
        close = ttk.Button(self, text=translate("culprit.stacks.close"), command=self.destroy)
        close.pack(side="bottom", anchor="e", padx=dp(self, 8), pady=dp(self, 6))
        self.text.pack(side="top", fill="both", expand=True)
        self.bind("<Escape>", lambda _e: self.destroy())
        close.focus_set()

    def shown(self) -> str:
        """The text it shows (for tests)."""
        return self.text.get("1.0", "end-1c")
