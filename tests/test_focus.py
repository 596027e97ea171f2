"""Typing goes to the message box: after any button, menu, dialog, chat switch, Ctrl+N or
language switch — with real X clicks and keys (xdotool), as a user types.

Reported: click 中文, press Ctrl+N, type "abc def" — nothing reached the box, and the space
pressed the language button again; click Send, type the next question — all of it lost.
"""

from __future__ import annotations

import shutil
import subprocess
import tkinter as tk

import pytest

from tests.conftest import pump_for, pump_until
from tkchat.generate.scripted import ScriptedBackend

pytestmark = pytest.mark.gui

if shutil.which("xdotool") is None:
    pytest.skip("xdotool is not installed", allow_module_level=True)


def xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=True, timeout=20)


def click_at(x: int, y: int, button: str = "1") -> None:
    """A real click at (x, y) on the screen. One xdotool call moves and clicks, so the X
    server takes the two in order; ``mousemove --sync`` would wait for a motion, and when the
    pointer is already there none comes (it waited 15 s for a second click on one button)."""
    xdotool("mousemove", str(x), str(y), "click", button)


def click(root: tk.Misc, widget: tk.Misc) -> None:
    """A real click in the middle of ``widget``."""
    root.update()
    x = widget.winfo_rootx() + widget.winfo_width() // 2
    y = widget.winfo_rooty() + widget.winfo_height() // 2
    click_at(x, y)
    pump_for(root, 0.15)


def type_text(root: tk.Misc, text: str) -> None:
    xdotool("type", "--delay", "8", text)
    pump_for(root, 0.2)


def typed(app) -> str:
    return str(app.input.get("1.0", "end-1c"))


@pytest.fixture
def window(root: tk.Tk, make_app):
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    root.geometry("1140x680+0+0")
    root.focus_force()
    pump_for(root, 0.3)
    return app


def test_language_button_then_ctrl_n_then_typing(root: tk.Tk, window) -> None:
    app = window
    click(root, app.language_button)
    assert app.t.lang == "zh"
    xdotool("key", "ctrl+n")
    pump_for(root, 0.2)
    type_text(root, "abc def")
    assert typed(app) == "abc def"
    assert app.t.lang == "zh"  # the space did not press the language button again


def test_send_button_then_the_next_question(root: tk.Tk, window) -> None:
    app = window
    app.input.focus_set()
    type_text(root, "first question")
    click(root, app.send_button)
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and bool(app.flow.answering.finished),
        what="the answer",
    )
    type_text(root, "and the second question, forty letters")
    assert typed(app) == "and the second question, forty letters"


def test_every_button_gives_the_typing_back_to_the_box(root: tk.Tk, window) -> None:
    app = window
    app.flow.send("a question")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    buttons = [
        app.regenerate_button,
        app.teaching.lessons_button,  # opens the lesson panel
        app.teaching.lessons_button,  # and closes it
        app.language_button,
        app.language_button,
        app.conversations.sidebar.new_button,
    ]
    for button in buttons:
        click(root, button)
        pump_until(root, lambda: app.flow.answering.answer is None, what="an answer to end")
        app.input.delete("1.0", "end")
        type_text(root, "x y")
        assert typed(app) == "x y", f"after {button}"


def test_a_chat_picked_with_the_mouse_then_typing(root: tk.Tk, window) -> None:
    app = window
    app.flow.send("the first chat")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    app.flow.new_chat()
    app.flow.send("the second chat")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    sidebar = app.conversations.sidebar
    first = sidebar.row_ids()[-1]
    root.update()
    x, y, width, height = sidebar.tree.bbox(str(first))
    click_at(
        sidebar.tree.winfo_rootx() + x + width // 2, sidebar.tree.winfo_rooty() + y + height // 2
    )
    pump_until(
        root, lambda: not app.flow.showing_conversation and app.transcript.entries, what="it"
    )
    pump_for(root, 0.2)
    type_text(root, "more")
    assert typed(app) == "more"


def test_the_mode_menu_then_typing(root: tk.Tk, window) -> None:
    app = window
    box = app.teaching.mode_box
    box.set("blocking")
    box.event_generate("<<ComboboxSelected>>")  # as picking an item does
    pump_for(root, 0.2)
    type_text(root, "q r")
    assert typed(app) == "q r" and app.teaching.mode == "blocking"


def test_a_dialog_closed_then_typing(root: tk.Tk, window) -> None:
    app = window
    app.chat_settings.open()
    pump_for(root, 0.3)
    app.chat_settings.dialog.cancel()
    pump_for(root, 0.3)
    type_text(root, "after the dialog")
    assert typed(app) == "after the dialog"


def test_a_rename_from_the_right_click_menu_then_typing(root: tk.Tk, window) -> None:
    """Seen by hand: right-click a chat, Rename, type the title, Enter — then the next
    question typed went nowhere: the keyboard focus had been left in the list."""
    app = window
    app.flow.send("a chat to rename")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    app.input.focus_set()
    pump_for(root, 0.1)
    sidebar = app.conversations.sidebar
    cid = sidebar.row_ids()[0]
    root.update()
    x, y, width, height = sidebar.tree.bbox(str(cid))
    click_at(
        sidebar.tree.winfo_rootx() + x + width // 2,
        sidebar.tree.winfo_rooty() + y + height // 2,
        "3",
    )
    pump_until(root, lambda: sidebar.menu.winfo_ismapped(), what="the menu")
    menu = sidebar.menu
    entry_y = menu.winfo_rooty() + int(menu.yposition(0)) + 6
    click_at(menu.winfo_rootx() + 30, entry_y)
    pump_until(root, lambda: sidebar.editor.winfo_ismapped(), what="the inline editor")
    type_text(root, "Renamed")
    xdotool("key", "Return")
    pump_for(root, 0.3)
    assert sidebar.row_text(cid) == "Renamed"
    type_text(root, "next question")
    assert typed(app) == "next question"


def click_row(root: tk.Misc, sidebar, cid: int) -> None:
    """A real click on the middle of a chat's row."""
    root.update()
    x, y, width, height = sidebar.tree.bbox(str(cid))
    xdotool(
        "mousemove",
        "--sync",
        str(sidebar.tree.winfo_rootx() + x + width // 2),
        str(sidebar.tree.winfo_rooty() + y + height // 2),
    )
    xdotool("click", "1")
    pump_for(root, 0.2)


def two_chats(root: tk.Tk, app):
    app.flow.send("the first chat")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    app.flow.new_chat()
    app.flow.send("the second chat")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    sidebar = app.conversations.sidebar
    pump_until(root, lambda: len(sidebar.row_ids()) == 2, what="both chats in the list")
    return sidebar


def test_click_a_chat_then_f2_renames_it_and_nothing_is_sent(root: tk.Tk, window) -> None:
    """Reported (issue 22): "click a chat, F2, type a name, Enter" sent the name to the
    model as a question — the click had moved the focus to the message box."""
    app = window
    sidebar = two_chats(root, app)
    first = sidebar.row_ids()[-1]
    click_row(root, sidebar, first)
    pump_until(root, lambda: not app.flow.showing_conversation, what="the chat on screen")
    answers = len(app.flow.answering.finished)
    xdotool("key", "F2")
    pump_until(root, lambda: sidebar.editor.winfo_ismapped(), what="the inline editor")
    type_text(root, "Renamed by F2")  # over the old title, which the editor selected
    xdotool("key", "Return")
    pump_for(root, 0.3)
    assert sidebar.row_text(first) == "Renamed by F2"
    assert (
        len(app.flow.answering.finished) == answers and app.flow.answering.answer is None
    )  # nothing was asked
    assert typed(app) == ""
    type_text(root, "a question")  # a letter typed in the list goes to the box
    assert typed(app) == "a question"


def test_click_a_chat_then_delete_deletes_it_and_letters_go_to_the_box(root: tk.Tk, window) -> None:
    app = window
    sidebar = two_chats(root, app)
    first, second = sidebar.row_ids()[-1], sidebar.row_ids()[0]
    click_row(root, sidebar, first)
    pump_until(root, lambda: not app.flow.showing_conversation, what="the chat on screen")
    assert root.focus_get() is sidebar.tree  # the click left the keys with the list
    xdotool("key", "Delete")
    pump_for(root, 0.3)
    assert sidebar.row_ids() == [second] and sidebar.undo_visible()
    assert typed(app) == ""
    type_text(root, "next")
    assert typed(app) == "next" and root.focus_get() is app.input
