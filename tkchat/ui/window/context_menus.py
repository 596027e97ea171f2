"""Right-click menus for text: the transcript (copy, select all) and the message box (cut,
copy, paste, select all), as every desktop app has them.

The entries send Tk's own virtual events (``<<Copy>>`` …), so they do exactly what the keys
do. The menu opens on the right button (the middle one on macOS, where it is the right
button in Tk), Shift+F10 and the Menu key. Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.ui.base.translator import Translator

OPEN_SEQUENCES = ("<Button-3>", "<Button-2>")  # Button-2 is the right button on macOS
KEY_SEQUENCES = ("<Shift-F10>", "<KeyPress-Menu>", "<KeyPress-App>")


def attach_text_menu(widget: tk.Text, translate: Translator, *, editable: bool) -> tk.Menu:
    """Give ``widget`` its right-click menu; returns it (for tests)."""
    menu = tk.Menu(widget, tearoff=False)
    entries = [("menu.cut", "<<Cut>>"), ("menu.copy", "<<Copy>>"), ("menu.paste", "<<Paste>>")]
    if not editable:  # a read-only transcript: nothing to cut or paste
        entries = [("menu.copy", "<<Copy>>")]
    entries.append(("menu.select_all", "<<SelectAll>>"))
    for _key, event in entries:
        menu.add_command(command=_sender(widget, event))
    translate.on_change(lambda _lang: _label(menu, entries, translate))
    _label(menu, entries, translate)

    def popup(event: tk.Event) -> str:
        if editable:
            widget.focus_set()
        menu.tk_popup(event.x_root, event.y_root)
        menu.grab_release()
        return "break"

    def popup_at_cursor(_event: tk.Event) -> str:
        x, y = widget.winfo_rootx() + 20, widget.winfo_rooty() + 20
        bbox = widget.bbox("insert")
        if bbox is not None:
            x, y = widget.winfo_rootx() + bbox[0], widget.winfo_rooty() + bbox[1] + bbox[3]
        menu.tk_popup(x, y)
        menu.grab_release()
        return "break"

    for sequence in OPEN_SEQUENCES:
        widget.bind(sequence, popup, add="+")
    for sequence in KEY_SEQUENCES:
        try:
            widget.bind(sequence, popup_at_cursor, add="+")
        except tk.TclError:  # a keysym this platform does not know
            continue
    return menu


def _sender(widget: tk.Text, event: str) -> Callable[[], None]:
    return lambda: _send(widget, event)


def _send(widget: tk.Text, event: str) -> None:
    if event == "<<SelectAll>>":  # the Text class binding puts the cursor at the start
        widget.tag_add("sel", "1.0", "end-1c")
        return
    widget.event_generate(event)


def _label(menu: tk.Menu, entries: list[tuple[str, str]], translate: Translator) -> None:
    for index, (key, _event) in enumerate(entries):
        menu.entryconfigure(index, label=translate(key))
