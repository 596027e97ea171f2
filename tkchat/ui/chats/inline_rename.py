"""Renaming a chat in place: an entry over its row in the list of chats (F2, a double-click,
the list's menu). Enter keeps the new title, Esc or a click elsewhere abandons it; then the
keys go back to where they were.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

from tkchat.ui.look.scaling import dp
from tkchat.ui.scheduler import AfterScheduler


class InlineRename:
    """The entry over ``tree``'s row being renamed. ``title_of(id)`` gives a chat's title;
    ``on_renamed(id, title)`` is called when the user confirms one (the title's spaces
    collapsed; it may be empty or unchanged: the caller decides). ``timers`` has the
    "place-editor" timer: the entry follows its row after the list is refreshed."""

    def __init__(
        self,
        tree: ttk.Treeview,
        timers: AfterScheduler,
        *,
        title_of: Callable[[int], str],
        on_renamed: Callable[[int, str], None],
    ) -> None:
        self.tree = tree
        self.timers = timers
        self.title_of = title_of
        self.on_renamed = on_renamed
        self.editing: int | None = None  # the id whose title the entry edits
        # Where the keyboard focus was when a rename started: it goes back there after.
        self._focus_before: tk.Misc | None = None
        self.entry = ttk.Entry(tree)
        self.entry.bind("<Return>", self.commit)
        self.entry.bind("<KP_Enter>", self.commit)
        self.entry.bind("<Escape>", self.cancel)
        # Clicking elsewhere abandons the edit: a rename happens only when the user confirms.
        self.entry.bind("<FocusOut>", self.cancel)
        tree.bind("<Double-Button-1>", self._on_double_click)
        tree.bind("<Configure>", lambda _e: self.place(), add="+")

    def _on_double_click(self, event: tk.Event) -> str | None:
        iid = self.tree.identify_row(event.y)
        if iid.isdigit():
            self.start(int(iid))
            return "break"
        return None

    def start(self, cid: int | None) -> None:
        """Rename chat ``cid`` (nothing for None, or a chat not in the list)."""
        if cid is None or not self.tree.exists(str(cid)):
            return
        self.editing = cid
        self.tree.see(str(cid))
        self.entry.delete(0, "end")
        self.entry.insert(0, self.title_of(cid))
        self.entry.select_range(0, "end")
        self.entry.icursor("end")
        self.tree.update_idletasks()  # see() scrolls lazily: the row's bbox is right only after
        self.place()
        self._focus_before = self.tree.focus_get()
        self.entry.focus_set()

    def rows_changed(self) -> None:
        """The list was filled again: the row being renamed is gone (the edit with it), or
        may have moved."""
        if self.editing is not None and not self.tree.exists(str(self.editing)):
            self.close(refocus=False)
        elif self.editing is not None and not self.timers.pending("place-editor"):
            self.timers.when_idle("place-editor", self.place)

    def place(self) -> None:
        """Over its row; hidden (still editing) while the row is scrolled out of view."""
        if self.editing is None or self.timers.closed:
            return
        box = self.tree.bbox(str(self.editing), "#0")
        if not box:
            self.entry.place_forget()
            return
        x, y, width, _height = box
        line = tkfont.nametofont("TkDefaultFont", root=self.tree).metrics("linespace")
        self.entry.place(
            x=x, y=y, width=max(width, dp(self.tree, 80)), height=line + dp(self.tree, 8)
        )

    def commit(self, _event: tk.Event | None = None) -> str:
        cid = self.editing
        title = " ".join(self.entry.get().split())
        self.close(refocus=True)
        if cid is not None:
            self.on_renamed(cid, title)
        return "break"

    def cancel(self, event: tk.Event | None = None) -> str:
        if self.editing is not None:
            # Esc also moves the focus, so the FocusOut that follows finds nothing to do.
            self.close(refocus=event is None or event.type != tk.EventType.FocusOut)
        return "break"

    def close(self, *, refocus: bool) -> None:
        """Hide the entry; ``refocus``: give the keyboard back to where it was when the
        rename started — the list after F2 or a double-click, the message box after the
        list menu's Rename (left in the list, the next question typed was lost)."""
        self.editing = None
        self.entry.place_forget()
        before, self._focus_before = self._focus_before, None
        if not refocus:
            return
        if (
            before is not None
            and before is not self.entry
            and not isinstance(before, tk.Menu)
            and before.winfo_exists()
        ):
            before.focus_set()
        else:
            self.tree.focus_set()
