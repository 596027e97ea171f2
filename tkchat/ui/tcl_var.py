"""A Tcl variable by its name, for a widget option that wants one, without tkinter's
``Variable`` object.

tkinter's ``StringVar`` and ``BooleanVar`` unset their Tcl variable in ``__del__``, and the
garbage collector runs that on whichever thread it happens to run on: a worker's, when a
closed window's parts are collected there. A worker then calls Tk — against the threading
rule — and in a test, whose main thread pumps with ``update()`` and never enters
``mainloop``, it waits a second for a main loop before failing ("main thread is not in main
loop"): a test with a few dozen of them took 28 s instead of one. A :class:`TclVar` keeps only
the variable's name: collecting it does nothing, and the variable lives as long as its
interpreter. Main thread only, like every Tk call.
"""

from __future__ import annotations

import itertools
import tkinter as tk
from collections.abc import Callable
from typing import TypeVar

_NUMBERS = itertools.count(1)
W = TypeVar("W", bound=tk.Misc)


class TclVar:
    """A global Tcl variable (``textvariable=var.name``, ``variable=var.name``), read and
    written as a string; ``on_write`` calls back after each write (typing, pasting, ``set``)."""

    def __init__(self, widget: tk.Misc, value: object = "") -> None:
        self.widget = widget
        self.name = f"::tkchat_var{next(_NUMBERS)}"
        self.set(value)

    def get(self) -> str:
        return str(self.widget.tk.call("set", self.name))

    def get_bool(self) -> bool:
        return bool(self.widget.tk.getboolean(self.widget.tk.call("set", self.name)))

    def set(self, value: object) -> None:
        self.widget.tk.call("set", self.name, value)

    def attach(self, widget: W, option: str = "textvariable") -> W:
        """``widget``'s ``option`` (``-textvariable``, ``-variable``) is this variable;
        returns ``widget``."""
        widget.tk.call(str(widget), "configure", f"-{option}", self.name)
        return widget

    def attach_entry(self, menu: tk.Menu, index: int) -> None:
        """Menu entry ``index`` (a check button) shows this variable."""
        menu.tk.call(str(menu), "entryconfigure", index, "-variable", self.name)

    def on_write(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` after every write (the command is the widget's: it goes with
        the widget when it is destroyed)."""
        command = self.widget.register(lambda *_args: callback())
        self.widget.tk.call("trace", "add", "variable", self.name, "write", command)
