"""A banner that stays: for news the user must not miss, such as "conversations will not be
saved". The status line is replaced by the next status within seconds ("Ready", "Generating",
"Done"); a storage failure lasts the whole session, so its warning does too, until the user
dismisses it.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import palette_of, recolour, set_role

# What a banner says with its colour (tkchat/ui/look/palette.py has each for light and dark):
WARNING = "notice"  # amber: saving failed, settings were damaged
ERROR = "alert"  # red: a model that failed to load; the window cannot answer until another


class NoticeBanner(tk.Frame):
    """Hidden until :meth:`show`; packs itself right after ``anchor``. ``kind`` is
    :data:`WARNING` or :data:`ERROR`."""

    def __init__(
        self, master: tk.Misc, anchor: tk.Misc, translate: Translator, kind: str = WARNING
    ) -> None:
        super().__init__(master)
        self.after_widget = anchor  # (not "anchor": that is a Tk method of every widget)
        self.label = tk.Label(
            self,
            anchor="w",
            justify="left",
            padx=dp(self, 8),
            pady=dp(self, 3),
            font="TkDefaultFont",
        )
        self.dismiss_button = ttk.Button(self, command=self.hide, width=10)
        translate.bind(self.dismiss_button, "banner.dismiss")
        self.dismiss_button.pack(side="right", padx=dp(self, 6), pady=dp(self, 2))
        # its colours come from the theme, light or dark
        set_role(self, kind)
        set_role(self.label, kind)
        recolour(self, palette_of(self))
        self.label.pack(side="left", fill="x", expand=True)
        self.label.bind(
            "<Configure>", lambda e: self.label.configure(wraplength=max(200, e.width - 20))
        )

    def show(self, text: str) -> None:
        self.label.configure(text="⚠" + NO_BREAK + text)
        if not self.shown:
            self.pack(side="top", fill="x", after=self.after_widget)

    def hide(self) -> None:
        self.pack_forget()

    @property
    def shown(self) -> bool:
        return bool(self.winfo_manager())

    @property
    def text(self) -> str:
        return str(self.label.cget("text"))
