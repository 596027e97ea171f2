"""What users of desktop chat apps expect: right-click menus on the text, a shortcut sheet
(F1), an Undo bar that stays long enough to reach. A real window on Xvfb."""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.ui.window.shortcut_sheet import shortcut_rows

pytestmark = pytest.mark.gui


def menu_labels(menu: tk.Menu) -> list[str]:
    return [str(menu.entrycget(i, "label")) for i in range(int(menu.index("end") or 0) + 1)]


def test_the_transcripts_menu_copies_the_selection_and_selects_all(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0, text="An answer to copy."))
    app.flow.send("a question")
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and not app.transcript.painter.busy,
        what="it",
    )
    text = app.transcript.text
    menu = app.transcript_menu
    assert menu_labels(menu) == ["Copy", "Select all"]  # read-only: no cut, no paste
    start = text.search("answer to", "1.0")
    text.tag_add("sel", start, f"{start} + 9c")
    menu.invoke(0)
    assert root.clipboard_get() == "answer to"
    menu.invoke(1)
    assert "a question" in text.get("sel.first", "sel.last")
    app.toggle_language()
    assert menu_labels(menu) == ["复制", "全选"]


def test_the_message_boxs_menu_cuts_copies_and_pastes(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    menu = app.input_menu
    assert menu_labels(menu) == ["Cut", "Copy", "Paste", "Select all"]
    app.input.insert("1.0", "hello world")
    menu.invoke(3)  # select all
    menu.invoke(0)  # cut
    assert app.input.get("1.0", "end-1c") == "" and root.clipboard_get() == "hello world"
    menu.invoke(2)  # paste
    menu.invoke(2)
    assert app.input.get("1.0", "end-1c") == "hello worldhello world"


def test_f1_lists_every_shortcut_in_the_windows_language(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), language="zh")
    app.show_shortcuts()
    sheet = app.shortcut_sheet
    assert sheet is not None
    keys = [keys for keys, _label in sheet.rows]
    assert {"Ctrl+N", "Ctrl+R", "Enter", "Shift+Enter", "Esc", "F1", "F11"} <= set(keys)
    assert len(sheet.rows) == len(shortcut_rows())
    assert ("Ctrl+N", "新对话") in sheet.rows
    # Each key once (Esc was listed twice: as the Stop menu item's key and as an editing
    # key), with the fuller of the two descriptions.
    assert len(keys) == len(set(keys))
    assert ("Esc", "停止回答（或取消编辑）") in sheet.rows
    app.show_shortcuts()  # a second F1 brings the same sheet forward
    assert app.shortcut_sheet is sheet
    sheet.destroy()
    root.update()


def test_the_undo_bar_stays_while_the_pointer_is_on_it(root: tk.Tk, make_app) -> None:
    from tkchat.ui.chats import sidebar as sidebar_module

    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    app.flow.send("a chat to delete")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    bar = app.conversations.sidebar
    bar._delete(int(bar.tree.get_children()[0]))
    root.update()
    assert bar.undo_bar.winfo_ismapped() and bar.timers.pending("undo")
    bar.undo_bar.event_generate("<Enter>")
    assert not bar.timers.pending("undo")  # the pointer is on it: it waits
    bar.undo_bar.event_generate("<Leave>")
    assert bar.timers.pending("undo") and sidebar_module.UNDO_TIMEOUT_MS >= 10_000


def test_the_lists_menu_exports_the_chat_under_the_pointer(root: tk.Tk, make_app, tmp_path) -> None:
    app = make_app(ScriptedBackend(rate=0, text="Exported answer."), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    app.flow.send("exported question")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    target = tmp_path / "chat.md"
    app.files.ask_save_path = lambda **_kw: str(target)
    bar = app.conversations.sidebar
    bar._menu_target = int(bar.tree.get_children()[0])
    assert menu_labels(bar.menu) == ["Rename", "Delete", "Export as Markdown…"]
    bar.menu.invoke(2)
    assert "exported question" in target.read_text() and "Exported answer." in target.read_text()
