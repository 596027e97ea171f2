"""A ``ttk.Treeview``'s top-level rows brought to a wanted list with the fewest Tk calls.
Main thread.

Deleting every row and inserting them all again costs a few Tk calls per row, and a text
fitted to its column (font measurements) many more: a sidebar of 306 chats took 110-270 ms
on a busy 2-core laptop at every question sent, between Send and the answer's first word
(``tkchat bench --turn2``). Here a row already on screen with the same text and values
costs nothing, a row that moved costs one ``move``, and only a new or changed text is
fitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from tkinter import ttk


@dataclass(frozen=True)
class Row:
    """One top-level row: ``text`` is the whole text (the row shows it fitted to the
    column), ``values`` the other columns."""

    iid: str
    text: str
    values: tuple[str, ...] = ()


def sync_rows(
    tree: ttk.Treeview,
    wanted: Sequence[Row],
    shown: dict[str, Row],
    fit: Callable[[str], str],
) -> dict[str, Row]:
    """Make ``tree``'s top-level rows ``wanted``, in that order (an iid listed twice is
    shown once, where it is first listed). ``shown``: the rows as the last call left them
    (rows of the tree not in it are replaced). Returns what is shown now, for the next call.
    Every other top-level row (a placeholder) is deleted."""
    rows: dict[str, Row] = {}
    for row in wanted:
        rows.setdefault(row.iid, row)
    children = tree.get_children()
    gone = {iid for iid in children if iid not in rows or iid not in shown}
    if gone:
        tree.delete(*gone)
    order = [iid for iid in children if iid not in gone]  # the tree's order, kept in step
    present = set(order)
    for index, row in enumerate(rows.values()):
        before = shown[row.iid] if row.iid in present else None
        if before is None:
            tree.insert("", index, iid=row.iid, text=fit(row.text), values=row.values)
            order.insert(index, row.iid)
            continue
        if before.text != row.text:
            tree.item(row.iid, text=fit(row.text))
        if before.values != row.values:
            tree.item(row.iid, values=row.values)
        if order[index] != row.iid:
            tree.move(row.iid, "", index)
            order.remove(row.iid)
            order.insert(index, row.iid)
    return rows
