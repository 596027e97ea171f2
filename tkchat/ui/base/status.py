"""The status line: one sentence about what the window is doing, in the window's language.

Every part of the window that has something to tell the user gets :meth:`StatusLine.say`
(or the whole line) and nothing else of the app: "Exported to …", "Loading …", "Stopped.".
A message is kept as a way to make it, not as text, so a language switch says it again in
the other language.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import FittedLabel


class StatusLine(FittedLabel):
    """One line of status text, cut with "…" when the window is too narrow for it (it never
    pushes its neighbours away); the whole of it is then in a tip, when the pointer rests on
    the line or on a click (:class:`~tkchat.ui.look.full_text.FullTextTip`). (Not a
    ``StringVar``: a Tk variable collected by the garbage collector on a worker thread raises
    "main thread is not in main loop".)"""

    def __init__(self, master: tk.Misc, translate: Translator) -> None:
        super().__init__(master, text="", anchor="w")
        self.t = translate
        self._make: Callable[[], str] = lambda: ""
        translate.on_change(lambda _lang: self.show(self._make))

    def say(self, key: str, **values: object) -> None:
        """Show one translated message (``tkchat/i18n/window.py``)."""
        self.show(lambda: self.t(key, **values))

    def show(self, make: Callable[[], str]) -> None:
        """Show what ``make()`` returns; it is called again after a language switch."""
        self._make = make
        self.set_full(make())

    def get(self) -> str:
        """The whole message (what is shown may be cut to the window's width)."""
        return self.full

    @property
    def current(self) -> Callable[[], str]:
        """How the message shown now is made: a part that takes the line for a while (the
        progress of a long prompt) gives it back with this, unless someone spoke since."""
        return self._make
