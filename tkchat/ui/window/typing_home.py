"""Where the next key goes: back to the message box after any button, menu item, shortcut,
dialog, Ctrl+N or language switch; a letter typed in the list of chats goes there too.

A ttk button keeps the keyboard focus after a click. Without this the question typed next
went nowhere and a space pressed the button again (reported: click 中文, press Ctrl+N, type
"abc def" — nothing reached the box, and the language flipped back). So the window runs its
commands through :meth:`TypingHome.then`, and asks for :meth:`TypingHome.soon` where Tk moves
the focus only later (a dialog closed). The focus is left alone where the user types on
purpose: the box itself, an entry (search, rename) or another window (a dialog).

The list of chats keeps the focus after a click, so that F2 renames the chat clicked and
Delete deletes it (the focus used to move to the box: "click a chat, F2, type a name, Enter"
sent the name to the model); a letter typed there still goes to the box
(:meth:`TypingHome.letters_to_box`).

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from tkinter import ttk

from tkchat.ui.base.message_box import MessageBox
from tkchat.ui.scheduler import AfterScheduler

_COMMAND_MODIFIERS = 0x4 | 0x8  # Control, and Alt (Mod1 on X11): a shortcut, not a letter


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

    def letters_to_box(self, widget: tk.Misc) -> None:
        """A letter typed in ``widget`` (the list of chats) goes to the box, which takes the
        focus; the keys of the list itself (arrows, Enter, F2, Delete) stay the list's, and
        so do the window's shortcuts (Ctrl, Alt)."""
        widget.bind("<KeyPress>", self._letter, add="+")

    def _letter(self, event: tk.Event) -> str | None:
        char = event.char
        if not char or not char.isprintable() or int(event.state) & _COMMAND_MODIFIERS:
            return None
        box = self.box()
        box.focus_set()
        box.insert("insert", char)
        box.see("insert")
        return "break"

    def soon(self) -> None:
        """:meth:`now`, once Tk has moved the focus (after a click, a closed dialog)."""
        self.scheduler.when_idle("typing-home", self.now)

    def into_box(self) -> None:
        """Ctrl+L: the cursor in the box, after what is typed there (even from an entry)."""
        self.box().focus_end()
