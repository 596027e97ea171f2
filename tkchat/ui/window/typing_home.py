"""Where the next key goes: back to the message box after any button, menu item, shortcut,
dialog, chat switch, Ctrl+N or language switch.

A ttk button, or the list of saved chats, keeps the keyboard focus after a click. Without this
the question typed next went nowhere and a space pressed the button again (reported: click
中文, press Ctrl+N, type "abc def" — nothing reached the box, and the language flipped back).
So the window runs its commands through :meth:`TypingHome.then`, and asks for
:meth:`TypingHome.soon` where Tk moves the focus only later (a dialog closed, a chat picked
with the mouse). The focus is left alone where the user types on purpose: the box itself, an
entry (search, rename) or another window (a dialog).

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from tkinter import ttk

from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.window.message_box import MessageBox


class TypingHome:
    """Gives the typing back to the message box of ``root``'s window.

    ``box()`` returns the box: a getter, because the buttons wrapped with :meth:`then` are
    built before it. Once ``scheduler`` is closed the window is going away, and nothing here
    touches it any more."""

    def __init__(
        self, root: tk.Tk, box: Callable[[], MessageBox], scheduler: AfterScheduler
    ) -> None:
        self.root = root
        self.box = box
        self.scheduler = scheduler

    def then(self, command: Callable[[], object]) -> Callable[[], object]:
        """``command``, then :meth:`now` (for buttons, menu items and shortcuts)."""

        def run() -> object:
            result = command()
            self.now()
            return result

        return run

    def now(self) -> None:
        """The next key typed goes to the box — unless the focus is where the user types on
        purpose. A button or a list that kept the focus after a click would otherwise take
        the keys: a space pressed it again."""
        if self.scheduler.closed:
            return
        try:
            focused = self.root.focus_get()
        except (KeyError, tk.TclError):  # a focused widget Tkinter does not know (a popdown)
            focused = None
        typing_elsewhere = focused is not None and (
            focused.winfo_toplevel() is not self.root
            or (
                isinstance(focused, (tk.Entry, ttk.Entry)) and not isinstance(focused, ttk.Combobox)
            )
        )
        box = self.box()
        if focused is not box and not typing_elsewhere:
            box.focus_set()

    def soon(self) -> None:
        """:meth:`now`, once Tk has moved the focus (after a click, a closed dialog)."""
        self.scheduler.when_idle("typing-home", self.now)

    def into_box(self) -> None:
        """Ctrl+L: the cursor in the box, after what is typed there (even from an entry)."""
        self.box().focus_end()
