"""The message box: where the user types a question.

Enter sends, Shift+Enter starts a new line, Ctrl+A selects everything (Tk's Text reads it as
"start of line", Emacs style; in a chat box it means "all"). The box only reports a send
(``on_send``); what sending does is the window's.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.ui.look.scaling import dp


class MessageBox(tk.Text):
    def __init__(self, master: tk.Misc, on_send: Callable[[], object]) -> None:
        super().__init__(
            master,
            height=3,
            width=20,
            wrap="word",
            undo=True,
            # flat, with a one-pixel ring: the border colour, the accent while focused (the
            # colours come from the theme, tkchat/ui/look/theme.py)
            borderwidth=0,
            relief="flat",
            highlightthickness=dp(master, 1),
            padx=dp(master, 8),
            pady=dp(master, 6),
        )
        self.on_send = on_send
        self.bind("<Return>", self._on_return)
        self.bind("<KP_Enter>", self._on_return)
        self.bind("<Shift-Return>", self._on_shift_return)
        self.bind("<Control-a>", self._select_all)

    @property
    def draft(self) -> str:
        """What is typed now."""
        return self.get("1.0", "end-1c")

    def set_draft(self, text: str) -> None:
        """Replace what is typed (an edited question, a lesson's prompt)."""
        self.delete("1.0", "end")
        self.insert("1.0", text)

    def clear(self) -> None:
        self.delete("1.0", "end")

    def focus_end(self) -> None:
        """Type here next, after what is already typed."""
        self.focus_set()
        self.mark_set("insert", "end-1c")

    def _on_return(self, _event: tk.Event) -> str:
        self.on_send()
        return "break"  # Enter sends; the newline is not inserted

    def _on_shift_return(self, _event: tk.Event) -> str:
        self.insert("insert", "\n")
        return "break"

    def _select_all(self, _event: tk.Event) -> str:
        self.tag_add("sel", "1.0", "end-1c")
        self.mark_set("insert", "end-1c")
        return "break"
