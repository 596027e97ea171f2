"""Typing goes to the message box: after any button, menu, dialog, chat switch, Ctrl+N or
language switch — with real X clicks and keys (xdotool), as a user types.

Reported: click 中文, press Ctrl+N, type "abc def" — nothing reached the box, and the space
pressed the language button again; click Send, type the next question — all of it lost.
"""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import pump_until
from tests.x_input import click, click_at, focus_window, needs_xdotool, press, type_text
from tkchat.generate.scripted import ScriptedBackend

pytestmark = [pytest.mark.gui, needs_xdotool]


def typed(app) -> str:
    return str(app.input.get("1.0", "end-1c"))


def rows(sidebar) -> list[int]:
    """The chats' ids in the list, top to bottom."""
    return [int(iid) for iid in sidebar.tree.get_children()]


def row_title(sidebar, cid: int) -> str:
    return str(sidebar.tree.item(str(cid), "text"))


def click_row(root: tk.Misc, sidebar, cid: int, button: str = "1") -> None:
    """A real click on the middle of a chat's row."""
    root.update()
    x, y, width, height = sidebar.tree.bbox(str(cid))
    tree = sidebar.tree
    click_at(
        root, tree.winfo_rootx() + x + width // 2, tree.winfo_rooty() + y + height // 2, button
    )


@pytest.fixture
def window(root: tk.Tk, make_app):
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    focus_window(root)
    return app


def answered(root: tk.Tk, app, question: str) -> None:
    app.flow.send(question)
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")


def test_language_button_then_ctrl_n_then_typing(root: tk.Tk, window) -> None:
    app = window
    click(root, app.language_button)
    assert app.t.lang == "zh"
    press(root, "ctrl+n")
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
    answered(root, app, "a question")
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
    answered(root, app, "the first chat")
    app.flow.new_chat()
    answered(root, app, "the second chat")
    sidebar = app.conversations.sidebar
    click_row(root, sidebar, rows(sidebar)[-1])
    pump_until(
        root, lambda: not app.flow.showing_conversation and app.transcript.entries, what="it"
    )
    type_text(root, "more")
    assert typed(app) == "more"


def test_the_mode_menu_then_typing(root: tk.Tk, window) -> None:
    app = window
    box = app.teaching.mode_box
    box.set("blocking")
    box.event_generate("<<ComboboxSelected>>")  # as picking an item does
    root.update()
    type_text(root, "q r")
    assert typed(app) == "q r" and app.teaching.mode == "blocking"


def test_a_dialog_closed_then_typing(root: tk.Tk, window) -> None:
    app = window
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    pump_until(root, dialog.winfo_ismapped, what="the dialog")
    dialog.cancel()
    root.update()
    type_text(root, "after the dialog")
    assert typed(app) == "after the dialog"


def test_a_rename_from_the_right_click_menu_then_typing(root: tk.Tk, window) -> None:
    """Seen by hand: right-click a chat, Rename, type the title, Enter — then the next
    question typed went nowhere: the keyboard focus had been left in the list."""
    app = window
    answered(root, app, "a chat to rename")
    app.input.focus_set()
    root.update()
    sidebar = app.conversations.sidebar
    cid = rows(sidebar)[0]
    click_row(root, sidebar, cid, "3")
    pump_until(root, lambda: sidebar.menu.winfo_ismapped(), what="the menu")
    menu = sidebar.menu
    entry_y = menu.winfo_rooty() + int(menu.yposition(0)) + 6
    click_at(root, menu.winfo_rootx() + 30, entry_y)
    pump_until(root, lambda: sidebar.editor.winfo_ismapped(), what="the inline editor")
    type_text(root, "Renamed")
    press(root, "Return")
    assert row_title(sidebar, cid) == "Renamed"
    type_text(root, "next question")
    assert typed(app) == "next question"


def two_chats(root: tk.Tk, app):
    answered(root, app, "the first chat")
    app.flow.new_chat()
    answered(root, app, "the second chat")
    sidebar = app.conversations.sidebar
    pump_until(root, lambda: len(rows(sidebar)) == 2, what="both chats in the list")
    return sidebar


def test_click_a_chat_then_f2_renames_it_and_nothing_is_sent(root: tk.Tk, window) -> None:
    """Reported (issue 22): "click a chat, F2, type a name, Enter" sent the name to the
    model as a question — the click had moved the focus to the message box."""
    app = window
    sidebar = two_chats(root, app)
    first = rows(sidebar)[-1]
    click_row(root, sidebar, first)
    pump_until(root, lambda: not app.flow.showing_conversation, what="the chat on screen")
    answers = len(app.flow.answering.finished)
    press(root, "F2")
    pump_until(root, lambda: sidebar.editor.winfo_ismapped(), what="the inline editor")
    type_text(root, "Renamed by F2")  # over the old title, which the editor selected
    press(root, "Return")
    assert row_title(sidebar, first) == "Renamed by F2"
    assert (
        len(app.flow.answering.finished) == answers and app.flow.answering.answer is None
    )  # nothing was asked
    assert typed(app) == ""
    type_text(root, "a question")  # a letter typed in the list goes to the box
    assert typed(app) == "a question"


def test_click_a_chat_then_delete_deletes_it_and_letters_go_to_the_box(root: tk.Tk, window) -> None:
    app = window
    sidebar = two_chats(root, app)
    first, second = rows(sidebar)[-1], rows(sidebar)[0]
    click_row(root, sidebar, first)
    pump_until(root, lambda: not app.flow.showing_conversation, what="the chat on screen")
    assert root.focus_get() is sidebar.tree  # the click left the keys with the list
    press(root, "Delete")
    assert rows(sidebar) == [second] and sidebar.undo_bar.winfo_ismapped()
    assert typed(app) == ""
    type_text(root, "next")
    assert typed(app) == "next" and root.focus_get() is app.input
