"""Read-only Text widgets that the program itself can still write to.

Two ways, for two kinds of widget:

- :func:`read_only` for a widget the program writes to many times a second (the transcript
  while an answer streams). Its state stays ``normal``; what keeps the user from typing is
  its bindings: the ``Text`` class's bindings, less every one that edits, under a class of
  its own. Toggling ``state`` instead costs a whole relayout per write: Tk lays out every
  line on screen again after any ``configure`` of a Text (measured on a screenful of
  wrapped text, 2026-12-03: an insert followed by its redisplay 0.1 ms; with the two
  ``configure(state=...)`` around it, 4.8 ms).
- :func:`writable` around the program's edits of a widget kept ``state="disabled"`` (pages
  written once: a lesson, the stacks window). For a widget that is not disabled it does
  nothing.

Main thread only.
"""

from __future__ import annotations

import re
import tkinter as tk
from collections.abc import Iterator
from contextlib import contextmanager

READ_ONLY_CLASS = "TkchatReadOnlyText"

# What a Text class binding does that a read-only widget must not: delete, insert (typed
# keys, Return, Tab, Control-o), paste, cut, transpose, undo or redo. Moving the cursor,
# selecting, copying, scrolling and focus traversal stay.
_EDITS = re.compile(
    r"\bdelete\b|TextInsert|%W insert\b|tk_textCut|tk_textPaste|TextPasteSelection"
    r"|TextTranspose|edit (?:undo|redo)"
)


def read_only(text: tk.Text) -> None:
    """Make ``text`` read-only for the user while it stays ``state="normal"`` for the
    program: its ``Text`` bindtag is replaced by :data:`READ_ONLY_CLASS`, which has the
    ``Text`` class's bindings less those that edit (the window's own bindings, on the
    toplevel and ``all``, still see every key). The insertion cursor is not drawn, as in a
    disabled widget."""
    if not text.bind_class(READ_ONLY_CLASS):  # once per Tcl interpreter
        for sequence in text.bind_class("Text"):
            script = text.bind_class("Text", sequence)
            if not _EDITS.search(script):
                text.tk.call("bind", READ_ONLY_CLASS, sequence, script)
    text.bindtags(tuple(READ_ONLY_CLASS if tag == "Text" else tag for tag in text.bindtags()))
    text.configure(state="normal", insertontime=0)


@contextmanager
def writable(text: tk.Text) -> Iterator[tk.Text]:
    """Lift ``state="disabled"`` for the program's own edits; Tk silently ignores inserts
    into a disabled widget, which is what keeps the user from typing into it. A widget that
    is not disabled (:func:`read_only`'s) is left alone: no ``configure``, no relayout."""
    if str(text.cget("state")) != "disabled":
        yield text
        return
    text.configure(state="normal")
    try:
        yield text
    finally:
        text.configure(state="disabled")
