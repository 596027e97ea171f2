"""The model picker's list: one row per model file, rows that keep their place while a search
adds to them, a selection that follows the model, and cells cut with "…" whose whole text
shows in a tip.

Reported (issue 37): rows reordered under the pointer while the picker filled, and a wrong
model was picked once. Here a row is a model (:attr:`FoundModel.ident`: the file, however it
was reached), never a position. A model found during the search goes below the rows shown;
one shown already gets its new name or mark in its own row. The final order (bundled,
recent, then by name) is applied once, when the search ends, and only if the user has
neither selected a row nor has the pointer over the list (:meth:`ModelRows.settle`): sorting
a list nobody is looking at costs nothing; moving the row under a hand about to click picks
the wrong model. The user's pick stays selected, by its model, whatever is added, and is
selected again when a new search (another folder) finds it again.

Main thread only.
"""

from __future__ import annotations

import os
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable, Sequence
from pathlib import Path
from tkinter import ttk
from typing import Any

from tkchat.models.finder import FoundModel, describe_size
from tkchat.ui.look.fit import ellipsize
from tkchat.ui.look.full_text import FullTextTip
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.scaling import dp

COLUMNS = ("size", "where", "path")
# Sizes in pixels of the 96-dpi design (tkchat/ui/look/scaling.py scales them).
COLUMN_WIDTHS = {"#0": (330, 120), "size": (80, 60), "where": (140, 90), "path": (300, 120)}
CELL_MARGIN = 12  # a cell's padding on both sides, which its text must leave free
CURRENT_MARK = "✓ "
CURRENT_TAG = "current"
FAILED_MARK = "⚠ "  # a file that cannot load (failed in this session, or its header says)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Main thread. Whether two paths name the same file (links resolved; no I/O beyond
    resolving links)."""
    try:
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))
    except (OSError, ValueError):
        return False


class ModelRows:
    """The rows of ``tree`` (a Treeview with :data:`COLUMNS`). ``current``: the model in use
    (None: the bundled model); ``reason(model)``: why it cannot load, or None (a ⚠ in its
    name); ``where(model)``: its "Found in" text. Main thread only."""

    def __init__(
        self,
        tree: ttk.Treeview,
        *,
        current: str | None,
        reason: Callable[[FoundModel], str | None],
        where: Callable[[FoundModel], str],
    ) -> None:
        self.tree = tree
        self.current = current
        self.reason = reason
        self.where = where
        self.models: dict[str, FoundModel] = {}  # Treeview item id -> model
        self.order: list[str] = []  # item ids, top to bottom
        self.cells: dict[str, dict[str, str]] = {}  # item id -> column -> its whole text
        self.iids: dict[str, str] = {}  # a model's FoundModel.ident -> its item id
        self.current_iid: str | None = None  # the row of the model in use
        self.auto: str | None = None  # the row selected by the dialog itself, not the user
        self.picked: str | None = None  # the ident of the model the user selected
        self.pointer_in = False  # the pointer is over the list
        self.tip_cell: tuple[str, str] | None = None  # the cell under the pointer
        # A lasting font: a copy() is deleted by the collector on whatever thread it runs,
        # and a Tk call from a worker thread crashed the process (a test's window, after a
        # closed picker's rows were collected on a loader thread).
        plain = tkfont.nametofont("TkDefaultFont", root=tree).actual()
        bold = lasting_font(tree, **{**plain, "weight": "bold"})
        self.bold = bold  # a Font object must stay referenced while the tag uses it
        self.plain = tkfont.nametofont("TkDefaultFont", root=tree)
        tree.tag_configure(CURRENT_TAG, font=bold)
        # A cell cut with "…" shows its whole text in a tip under it, once the pointer
        # rests there (no click: a click selects the row).
        self.tip = FullTextTip(tree, self.cut_cell, spot=self.tip_spot, click=False)
        tree.bind("<Motion>", self.pointer_moved, add="+")
        tree.bind("<Enter>", lambda _e: setattr(self, "pointer_in", True), add="+")
        tree.bind("<Leave>", lambda _e: self.pointer_left(), add="+")

    # -- the rows ------------------------------------------------------------------------------

    def rows(self) -> list[FoundModel]:
        return [self.models[iid] for iid in self.order]

    def selected(self) -> FoundModel | None:
        selection = self.tree.selection()
        return self.models.get(selection[0]) if selection else None

    def clear(self) -> None:
        """No rows (a new search begins); the user's pick is kept, to select again."""
        self.tree.delete(*self.tree.get_children())
        self.models, self.order, self.cells, self.iids = {}, [], {}, {}
        self.current_iid = self.auto = None

    def add(self, models: Sequence[FoundModel]) -> None:
        """New models go below the rows shown (never above: no row moves); a model shown
        already gets its new name or mark in its own row. Then the selection
        (:meth:`select_default`)."""
        for model in models:
            iid = self.iids.get(model.ident)
            if iid is None:
                iid = self.iids[model.ident] = f"m{len(self.iids)}"
                is_current = (
                    model.source == "bundled"
                    if self.current is None
                    else same_file(self.current, model.path)
                )
                if is_current and self.current_iid is None:
                    self.current_iid = iid
                self.tree.insert("", "end", iid=iid, tags=(CURRENT_TAG,) if is_current else ())
                self.order.append(iid)
            self.models[iid] = model
            self.cells[iid] = {
                "#0": self.name_text(iid),
                "size": describe_size(model.size),
                "where": self.where(model),
                "path": str(model.path),
            }
        self.fit()
        self.select_default()

    def select_default(self) -> None:
        """The user's pick, as soon as it is listed (again, after a new search); else, while
        the user has picked nothing, the model in use, or the first row."""
        chosen = self.iids.get(self.picked) if self.picked is not None else None
        selection = self.tree.selection()
        if chosen is None:
            if selection and selection[0] != self.auto:
                return  # the user's (their pick is noted when Tk reports it)
            chosen = self.current_iid or (self.order[0] if self.order else None)
            self.auto = chosen
        if chosen is not None and selection != (chosen,):
            self.tree.selection_set(chosen)
            self.tree.focus(chosen)
            self.tree.see(chosen)

    def note_selection(self) -> None:
        """Tk reports a new selection: a row the user selected is their pick."""
        selection = self.tree.selection()
        if selection and selection[0] != self.auto and selection[0] in self.models:
            self.picked = self.models[selection[0]].ident

    def settle(self, models: Sequence[FoundModel]) -> None:
        """The search is over, ``models`` in their final order: the rows take it, unless the
        user has picked a row or has the pointer over the list (the module docstring)."""
        self.add(models)
        if self.picked is not None or self.pointer_in:
            return
        order = [self.iids[model.ident] for model in models]
        listed = set(order)
        order += [iid for iid in self.order if iid not in listed]
        for index, iid in enumerate(order):
            self.tree.move(iid, "", index)  # the item moves, its selection with it
        self.order = order
        self.select_default()  # the model in use stays selected; else the new first row
        selection = self.tree.selection()
        if selection:
            self.tree.see(selection[0])

    def name_text(self, iid: str) -> str:
        model = self.models[iid]
        mark = FAILED_MARK if self.reason(model) is not None else ""
        return (CURRENT_MARK if iid == self.current_iid else "") + mark + model.name

    def relabel(self) -> None:
        """Names (their marks) and "Found in" texts again, fitted."""
        for iid, model in self.models.items():
            self.cells[iid]["#0"] = self.name_text(iid)
            self.cells[iid]["where"] = self.where(model)
        self.fit()

    # -- fitting the cells ---------------------------------------------------------------------

    def fit(self) -> None:
        """Every cell's text as it fits its column, cut with "…" where it does not."""
        tree = self.tree
        indent = int(float(ttk.Style(tree).lookup("Treeview", "indent") or 20))
        margin = dp(tree, CELL_MARGIN)
        # "Where" holds a few short words: as wide as the widest (in its row's font: the
        # model in use is bold) and its heading, within reason. Reported (issue 37): measured
        # in the plain font, the bold row's "Bundled with tkchat" was cut with no "…".
        heading = tkfont.nametofont("TkHeadingFont", root=tree)
        where = max(
            [self.font(iid).measure(cells["where"]) for iid, cells in self.cells.items()]
            + [heading.measure(tree.heading("where", "text"))]
        )
        least, most = dp(tree, COLUMN_WIDTHS["where"][0]), dp(tree, 2 * COLUMN_WIDTHS["where"][0])
        width = min(most, max(least, where + margin))
        if width != tree.column("where", "width"):
            tree.column("where", width=width)
            # The stretching column ("path") takes what "where" left it only when the list
            # is laid out: read its width before that, and its cells are fitted to the old
            # one (and Tk cuts them again, without a "…").
            tree.update_idletasks()
        for iid, cells in self.cells.items():
            font = self.font(iid)
            width = tree.column("#0", "width") - indent - margin
            tree.item(iid, text=ellipsize(font, cells["#0"], width))
            for column in COLUMNS:
                width = tree.column(column, "width") - margin
                tree.set(iid, column, ellipsize(font, cells[column], width))
        self.tip.refresh()

    def font(self, iid: str) -> tkfont.Font:
        """The font a row is drawn in: the model in use is bold (:data:`CURRENT_TAG`)."""
        return self.bold if iid == self.current_iid else self.plain

    # -- the tip of a cut cell -----------------------------------------------------------------

    def cut_cell(self) -> str | None:
        """The whole text of the cell under the pointer, if it shows less (its tip's text);
        None where nothing is cut."""
        if self.tip_cell is None or self.tip_cell[0] not in self.cells:
            return None
        iid, column = self.tip_cell
        whole = self.cells[iid][column]
        shown = self.tree.item(iid, "text") if column == "#0" else self.tree.set(iid, column)
        return whole if str(shown) != whole else None

    def pointer_moved(self, event: tk.Event[Any]) -> None:
        """The tip follows the cell under the pointer: a new cell, a new wait for its tip."""
        names = {"#0": "#0", **{f"#{n}": column for n, column in enumerate(COLUMNS, 1)}}
        row = self.tree.identify_row(event.y)
        column = names.get(self.tree.identify_column(event.x))
        cell = (row, column) if row and column else None
        if cell != self.tip_cell:
            self.tip_cell = cell
            self.tip.restart()

    def pointer_left(self) -> None:
        self.pointer_in = False
        self.tip_cell = None

    def tip_spot(self) -> tuple[int, int] | None:
        """Where the tip goes, on the screen: under the cell it shows."""
        if self.tip_cell is None or not self.tree.exists(self.tip_cell[0]):
            return None
        box = self.tree.bbox(*self.tip_cell)
        if not box:
            return None
        x, y, _width, height = (int(value) for value in box)
        return self.tree.winfo_rootx() + x, self.tree.winfo_rooty() + y + height
