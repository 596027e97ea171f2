"""Read-only Text widgets that the program itself can still write to."""

from __future__ import annotations

import tkinter as tk
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def writable(text: tk.Text) -> Iterator[tk.Text]:
    """Lift ``state="disabled"`` for the program's own edits; Tk silently ignores inserts
    into a disabled widget, which is what keeps the user from typing into the transcript."""
    was_disabled = str(text.cget("state")) == "disabled"
    text.configure(state="normal")
    try:
        yield text
    finally:
        text.configure(state="disabled" if was_disabled else "normal")
