"""F1: every key the window understands, on one sheet, in the window's language.

Built from the same tables the menu bar and the key bindings use (``tkchat/ui/window/menubar.py``),
so the sheet cannot list a shortcut that does not exist. Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp
from tkchat.ui.window.menubar import MENUS

# Keys of the message box and the lists, which have no menu item.
EDITING_KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "keys.send"),
    ("Shift+Enter", "keys.newline"),
    ("Esc", "keys.stop_or_cancel"),
    ("F2", "keys.rename"),
    ("Delete", "keys.delete_chat"),
)


def shortcut_rows() -> list[tuple[str, str]]:
    """(keys, label key) for every shortcut: the menus' own, then the editing keys — each key
    once. A key that is both (Esc: the Stop item, and cancelling an edit) keeps the menu's
    place with the editing key's fuller description."""
    editing = dict(EDITING_KEYS)
    rows = [
        (accelerator, editing.pop(accelerator, label))
        for _menu, items in MENUS
        for item in items
        if item is not None
        for label, _name, accelerator in (item,)
        if accelerator
    ]
    return rows + list(editing.items())


class ShortcutSheet(tk.Toplevel):
    """A small window listing the shortcuts; Esc or F1 closes it."""

    def __init__(self, master: tk.Misc, translate: Translator) -> None:
        super().__init__(master)
        self.title(translate("keys.title"))
        self.transient(master.winfo_toplevel())
        frame = ttk.Frame(self, padding=dp(self, 14))
        frame.pack(fill="both", expand=True)
        self.rows: list[tuple[str, str]] = []
        for row, (keys, label_key) in enumerate(shortcut_rows()):
            label = translate(label_key)
            ttk.Label(frame, text=keys, font="TkFixedFont").grid(
                row=row, column=0, sticky="w", padx=(0, dp(self, 16)), pady=dp(self, 1)
            )
            ttk.Label(frame, text=label).grid(row=row, column=1, sticky="w", pady=dp(self, 1))
            self.rows.append((keys, label))
        close = ttk.Button(frame, text=translate("banner.dismiss"), command=self.destroy)
        close.grid(row=len(self.rows), column=0, columnspan=2, pady=(dp(self, 12), 0))
        for sequence in ("<Escape>", "<F1>"):
            self.bind(sequence, lambda _e: self.destroy())
        close.focus_set()
