"""The conversation sidebar on a real Tk window: list, selection, rename, delete and undo,
debounced search, a thousand rows, the language switch and a clean destroy."""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date, datetime, timedelta
from datetime import time as dtime
from typing import Any

import pytest

from tests.conftest import pump_until
from tests.x_input import keyboard_focus
from tkchat.i18n import STRINGS
from tkchat.i18n.sidebar import STRINGS as SIDEBAR_STRINGS
from tkchat.store.db import Conversation
from tkchat.ui.base.translator import Translator
from tkchat.ui.chats import sidebar as sidebar_module
from tkchat.ui.chats.sidebar import ConversationSidebar, format_when

pytestmark = pytest.mark.gui

CJK = re.compile(r"[\u4e00-\u9fff]")


class Calls:
    """Records every callback the sidebar makes, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def of(self, name: str) -> list[Any]:
        return [args for kind, args in self.log if kind == name]

    def callbacks(self) -> dict[str, Callable[..., None]]:
        def record(name: str) -> Callable[..., None]:
            return lambda *args: self.log.append((name, args))

        return {
            f"on_{name}": record(name)
            for name in ("new", "select", "rename", "delete", "undo_delete", "search")
        }


def conv(cid: int, title: str, updated_at: float | None = None) -> Conversation:
    stamp = datetime.now().timestamp() - cid * 60 if updated_at is None else updated_at
    return Conversation(id=cid, title=title, created_at=stamp, updated_at=stamp)


CONVERSATIONS = [conv(3, "Tk event loop"), conv(2, "Queues and threads"), conv(1, "Markdown")]


@pytest.fixture
def parts(root: tk.Tk) -> Iterator[tuple[ConversationSidebar, Calls, Translator]]:
    calls = Calls()
    translate = Translator("en")
    root.geometry("340x600")
    bar = ConversationSidebar(root, translate=translate, **calls.callbacks())
    bar.pack(fill="both", expand=True)
    bar.set_conversations(CONVERSATIONS, current_id=2)
    root.update()
    yield bar, calls, translate
    if bar.winfo_exists():
        bar.destroy()


def texts(bar: ConversationSidebar) -> list[str]:
    """Each row's text as shown (cut with "…" where the list is too narrow for it)."""
    return [str(bar.tree.item(iid, "text")) for iid in bar.tree.get_children()]


def rows(bar: ConversationSidebar) -> list[int]:
    """The conversations' ids on screen, top to bottom ("No chats match" is no row of one)."""
    return [int(iid) for iid in bar.tree.get_children() if iid.isdigit()]


def undo_shown(bar: ConversationSidebar) -> bool:
    return bool(bar.undo_bar.winfo_ismapped())


def timers(root: tk.Misc) -> set[str]:
    """Tk's ids of the ``after`` timers (and idle callbacks) not yet run."""
    return set(root.tk.splitlist(root.tk.call("after", "info")))


def click(root: tk.Tk, bar: ConversationSidebar, cid: int, button: int = 1) -> None:
    bar.tree.see(str(cid))
    root.update()
    x, y, _w, h = bar.tree.bbox(str(cid), "#0")
    bar.tree.event_generate(f"<ButtonPress-{button}>", x=x + 10, y=y + h // 2)
    bar.tree.event_generate(f"<ButtonRelease-{button}>", x=x + 10, y=y + h // 2)
    root.update()


def press(root: tk.Tk, widget: tk.Misc, *keysyms: str) -> None:
    # Tk sends key events to the focus window: give the widget the focus first.
    keyboard_focus(root, widget)
    for keysym in keysyms:
        widget.event_generate(f"<KeyPress-{keysym}>")
        widget.event_generate(f"<KeyRelease-{keysym}>")
        root.update()


def test_list_shown_newest_first_with_the_current_one_highlighted(parts: Any) -> None:
    bar, calls, _ = parts
    assert rows(bar) == [3, 2, 1]
    assert texts(bar) == ["Tk event loop", "Queues and threads", "Markdown"]
    assert bar.tree.selection() == ("2",)
    assert all(bar.tree.set(iid, "when") for iid in bar.tree.get_children())
    assert calls.of("select") == []  # highlighting the current chat is not a user pick


def test_refresh_keeps_the_selection_by_id(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    # A new chat on top and a renamed one: the same conversation stays highlighted.
    bar.set_conversations(
        [
            conv(4, "New one"),
            conv(3, "Tk event loop"),
            conv(2, "Queues, renamed"),
            conv(1, "Markdown"),
        ],
        current_id=2,
    )
    root.update()
    assert rows(bar) == [4, 3, 2, 1]
    assert bar.tree.selection() == ("2",)
    assert bar.tree.item("2", "text") == "Queues, renamed"
    assert calls.of("select") == []


def test_click_and_arrow_keys_select(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    click(root, bar, 1)
    assert calls.of("select") == [(1,)]
    assert bar.tree.selection() == ("1",)
    press(root, bar.tree, "Up")
    assert calls.of("select") == [(1,), (2,)]
    press(root, bar.tree, "Up")
    assert calls.of("select")[-1] == (3,)
    # Enter on the row that is already current does not report it again.
    press(root, bar.tree, "Return")
    assert calls.of("select") == [(1,), (2,), (3,)]


def test_new_chat_button(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    bar.new_button.invoke()
    assert calls.of("new") == [()]


def test_rename_with_f2_typing_and_return(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    bar.tree.focus("3")
    press(root, bar.tree, "F2")
    assert bar.editor.winfo_ismapped()
    assert bar.editor.get() == "Tk event loop"
    # The whole title is selected, so typing replaces it.
    press(root, bar.editor, "R", "e", "n", "a", "m", "e", "d")
    assert bar.editor.get() == "Renamed"
    press(root, bar.editor, "Return")
    assert calls.of("rename") == [(3, "Renamed")]
    assert not bar.editor.winfo_ismapped()
    assert bar.tree.item("3", "text") == "Renamed"  # shown before the app refreshes


def test_rename_escape_cancels_and_unchanged_title_is_not_reported(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    bar.tree.focus("1")
    press(root, bar.tree, "F2")
    press(root, bar.editor, "x", "y", "Escape")
    assert not bar.editor.winfo_ismapped()
    assert bar.tree.item("1", "text") == "Markdown"
    press(root, bar.tree, "F2")
    press(root, bar.editor, "Return")  # unchanged
    press(root, bar.tree, "F2")
    press(root, bar.editor, "BackSpace", "Return")  # empty
    assert calls.of("rename") == []


def test_double_click_opens_the_inline_editor(root: tk.Tk, parts: Any) -> None:
    bar, _, _ = parts
    x, y, _w, h = bar.tree.bbox("1", "#0")
    for _ in range(2):
        bar.tree.event_generate("<ButtonPress-1>", x=x + 10, y=y + h // 2)
        bar.tree.event_generate("<ButtonRelease-1>", x=x + 10, y=y + h // 2)
    root.update()
    assert bar.editor.winfo_ismapped()
    assert bar.editor.get() == "Markdown"


def test_delete_key_then_undo(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    assert not undo_shown(bar)
    bar.tree.focus("3")
    press(root, bar.tree, "Delete")
    assert calls.of("delete") == [(3, 2)]  # (2: the chat listed after it, to open instead)
    assert rows(bar) == [2, 1]
    assert undo_shown(bar)
    assert bar.undo_label.cget("text") == "Deleted “Tk event loop”."
    assert bar.undo_button.cget("text") == "Undo"
    bar.undo_button.invoke()
    root.update()
    assert calls.of("undo_delete") == [(3,)]
    assert not undo_shown(bar)


def test_delete_names_the_chat_to_open_in_its_place(root: tk.Tk, parts: Any) -> None:
    """The row after the deleted one (before it, for the last row; none for the only one):
    the app opens it when the deleted chat was open."""
    bar, calls, _ = parts
    assert [bar.neighbour_of(cid) for cid in (3, 2, 1)] == [2, 1, 2]
    for cid in (2, 1, 3):
        bar.tree.focus(str(cid))
        press(root, bar.tree, "Delete")
    assert calls.of("delete") == [(2, 1), (1, 3), (3, None)]
    assert rows(bar) == [] and bar.neighbour_of(3) is None


def test_context_menu_delete_and_rename(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    click(root, bar, 1, button=3)
    assert calls.of("select") == []  # a right-click does not open the chat
    bar.menu.unpost()
    bar.menu.invoke(1)  # Delete
    root.update()
    assert calls.of("delete") == [(1, 2)]  # the last row: the one before it
    click(root, bar, 3, button=3)
    bar.menu.unpost()
    bar.menu.invoke(0)  # Rename
    root.update()
    assert bar.editor.winfo_ismapped()
    assert bar.editor.get() == "Tk event loop"


def test_undo_bar_hides_itself(root: tk.Tk, parts: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    bar, _, _ = parts
    monkeypatch.setattr(sidebar_module, "UNDO_TIMEOUT_MS", 30)
    bar.tree.focus("2")
    keyboard_focus(root, bar.tree)
    bar.tree.event_generate("<KeyPress-Delete>")  # handled now; the loop has not run since,
    assert bar.undo_bar.winfo_manager() and bar.timers.pending("undo")  # so its timer waits
    pump_until(root, lambda: not bar.undo_bar.winfo_manager(), timeout=5, what="it to hide")


def test_search_is_debounced_to_one_call_with_the_final_text(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    press(root, bar.search_entry, "q", "u", "e")
    assert calls.of("search") == []
    pump_until(root, lambda: bool(calls.of("search")), timeout=5, what="the search")
    assert calls.of("search") == [("que",)]
    assert not bar.timers.pending("search")  # and no second call is on its way
    bar.focus_search()
    press(root, bar.search_entry, "BackSpace")  # all selected by focus_search: now empty
    pump_until(root, lambda: len(calls.of("search")) == 2, timeout=5, what="the empty search")
    assert calls.of("search")[-1] == ("",)


def test_search_results_show_snippets_and_clearing_shows_all(root: tk.Tk, parts: Any) -> None:
    bar, calls, _ = parts
    bar.search_var.set("queue")
    bar.show_search_results([(CONVERSATIONS[1], "…a thread-safe\nqueue.Queue of events…")])
    root.update()
    assert rows(bar) == [2]
    title, snippet = texts(bar)[0].split("\n")  # the snippet cut around the word searched for
    assert title == "Queues and threads" and "queue.Queue" in snippet
    assert snippet.strip("…") in "a thread-safe queue.Queue of events"
    bar.show_search_results([])
    assert texts(bar) == ["No chats match “queue”."]
    bar.search_var.set("")
    pump_until(root, lambda: bool(calls.of("search")), timeout=5, what="the empty search")
    assert rows(bar) == [3, 2, 1]
    # Results that arrive after the box was cleared are stale: the full list stays.
    bar.show_search_results([(CONVERSATIONS[0], "late")])
    assert rows(bar) == [3, 2, 1]


def test_a_thousand_conversations(root: tk.Tk, parts: Any) -> None:
    bar, _, _ = parts
    many = [conv(i, f"Conversation {i}") for i in range(1000, 0, -1)]
    bar.set_conversations(many, current_id=500)
    root.update()
    assert len(bar.tree.get_children()) == 1000
    assert rows(bar)[0] == 1000
    assert bar.tree.selection() == ("500",)


def test_language_switch_relabels_everything(root: tk.Tk, parts: Any) -> None:
    bar, _, translate = parts
    yesterday = datetime.combine(date.today() - timedelta(days=1), dtime(12)).timestamp()
    bar.set_conversations([conv(7, "", yesterday), *CONVERSATIONS], current_id=None)
    bar.tree.focus("7")
    press(root, bar.tree, "Delete")
    assert bar.undo_label.cget("text") == "Deleted “Untitled chat”."
    bar.set_conversations([conv(8, "", yesterday), *CONVERSATIONS], current_id=None)
    assert bar.tree.set("8", "when") == "yesterday"

    translate.set_language("zh")
    root.update()
    for label in (
        bar.new_button.cget("text"),
        bar.search_hint.cget("text"),
        bar.undo_button.cget("text"),
        bar.undo_label.cget("text"),
        bar.menu.entrycget(0, "label"),
        bar.menu.entrycget(1, "label"),
        bar.tree.item("8", "text"),
        bar.tree.set("8", "when"),
    ):
        assert CJK.search(str(label)), label
    assert bar.tree.set("8", "when") == "昨天"


def test_strings_are_complete_in_both_languages() -> None:
    assert SIDEBAR_STRINGS["en"].keys() == SIDEBAR_STRINGS["zh"].keys()
    assert all(key.startswith("sidebar.") for key in SIDEBAR_STRINGS["en"])
    assert all(CJK.search(text) for text in SIDEBAR_STRINGS["zh"].values())


def test_dates() -> None:
    translate = Translator("en")
    now = datetime(2025, 3, 10, 15, 0).timestamp()
    assert format_when(now - 10, now, translate) == "just now"
    assert format_when(datetime(2025, 3, 10, 9, 5).timestamp(), now, translate) == "09:05"
    assert format_when(datetime(2025, 3, 9, 23, 0).timestamp(), now, translate) == "yesterday"
    assert format_when(datetime(2025, 3, 7).timestamp(), now, translate) == "3 days ago"
    assert format_when(datetime(2024, 12, 1).timestamp(), now, translate) == "2024-12-01"


def test_destroy_with_pending_timers(root: tk.Tk, parts: Any) -> None:
    bar, _, translate = parts
    bar.tree.focus("1")
    press(root, bar.tree, "Delete")  # the undo bar's timer
    bar.search_var.set("pending")  # the search debounce
    press(root, bar.tree, "F2")
    bar.set_conversations(CONVERSATIONS, current_id=2)  # moves the inline editor when idle
    assert all(bar.timers.pending(name) for name in ("search", "undo", "place-editor"))
    assert timers(root)
    bar.destroy()
    assert timers(root) == set()  # nothing of the sidebar's is left to fire
    root.update()
    translate.set_language("zh")  # a destroyed sidebar ignores the language change


def test_the_apps_string_table_holds_the_sidebar_strings(root: tk.Tk) -> None:
    for lang in ("en", "zh"):
        assert SIDEBAR_STRINGS[lang].items() <= STRINGS[lang].items()
    translator = Translator("en")
    bar = ConversationSidebar(root, translate=translator, **Calls().callbacks())
    bar.pack(fill="both", expand=True)
    bar.set_conversations(CONVERSATIONS, current_id=3)
    root.update()
    assert bar.new_button.cget("text") == "New chat"
    translator.set_language("zh")
    assert bar.new_button.cget("text") == "新对话"
    bar.destroy()


def test_long_titles_are_cut_with_an_ellipsis_in_the_list_and_the_undo_bar(
    root: tk.Tk, parts: Any
) -> None:
    bar, _, _ = parts
    long_title = "A conversation whose title is much longer than the sidebar is wide, by far"
    bar.set_conversations([conv(9, long_title), *CONVERSATIONS], current_id=None)
    root.update()
    font = tkfont.nametofont("TkDefaultFont", root=root)
    shown = bar.tree.item("9", "text")
    assert shown.endswith("…") and long_title.startswith(shown[:-1].rstrip())
    assert font.measure(shown) <= bar.tree.column("#0", "width")
    assert bar.tree.item("3", "text") == "Tk event loop"  # a title that fits stays whole
    bar.tree.focus("9")
    press(root, bar.tree, "Delete")
    root.update()
    label = bar.undo_label
    assert label.full == f"Deleted “{long_title}”."
    assert str(label.cget("text")).endswith("…")
    assert label.winfo_reqwidth() <= label.winfo_width() + 1
    # a wider window shows all of it once there is room
    root.geometry("1400x600")
    root.update()
    assert label.cget("text") == label.full
    bar.set_conversations([conv(9, long_title), *CONVERSATIONS], current_id=None)
    root.update()
    assert bar.tree.item("9", "text") == long_title


class TreeCalls:
    """Counts the sidebar tree's row changes (the real widget's methods, wrapped)."""

    NAMES = ("insert", "delete", "item", "move")

    def __init__(self, tree: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        for name in self.NAMES:
            method = getattr(tree, name)

            def counted(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                if len(args) > 1 or kwargs or _method.__name__ != "item":
                    self.count += 1  # (item(iid) alone only reads)
                return _method(*args, **kwargs)

            monkeypatch.setattr(tree, name, counted)


def shown_rows(bar: ConversationSidebar) -> list[tuple[str, str, tuple[str, ...]]]:
    """What the tree shows: each row's id, text and values, top to bottom."""
    return [
        (iid, bar.tree.item(iid, "text"), tuple(bar.tree.item(iid, "values")))
        for iid in bar.tree.get_children()
    ]


def test_a_question_sent_moves_one_row_of_three_hundred(
    root: tk.Tk, parts: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each question sent refreshes the list. Rebuilding its 300 rows took 110-270 ms
    between Send and the first word on a busy laptop; the chat asked in moves to the top
    and nothing else is touched."""
    bar, _calls, _translate = parts
    now = datetime.now().timestamp()
    many = [conv(cid, f"Chat number {cid}", now - cid * 86400) for cid in range(300, 0, -1)]
    many.sort(key=lambda c: -c.updated_at)
    bar.set_conversations(many, current_id=many[150].id)
    root.update()
    counted = TreeCalls(bar.tree, monkeypatch)
    asked = replace(many[150], updated_at=now)
    after = [asked] + [c for c in many if c.id != asked.id]
    bar.set_conversations(after, current_id=asked.id)
    assert counted.count <= 2, counted.count  # its move, and its date ("today")
    assert [iid for iid, _text, _when in shown_rows(bar)] == [str(c.id) for c in after]
    assert bar.selected_id() == asked.id


def test_a_refreshed_list_shows_what_a_new_sidebar_shows(root: tk.Tk, parts: Any) -> None:
    """Rows added, deleted, renamed and reordered at random, 40 times: the list on screen
    is the one a new sidebar shows for the same conversations."""
    import random

    bar, _calls, _translate = parts
    rng = random.Random(7)
    now = datetime.now().timestamp()
    pool = [conv(cid, f"Chat {cid}", now - cid * 3600) for cid in range(1, 60)]
    for _ in range(40):
        chosen = rng.sample(pool, rng.randint(0, 30))
        chosen = [replace(c, title=c.title + "!") if rng.random() < 0.2 else c for c in chosen]
        rng.shuffle(chosen)
        bar.set_conversations(chosen, current_id=None)
        fresh = ConversationSidebar(root, translate=Translator("en"), **Calls().callbacks())
        fresh.pack(fill="both", expand=True)
        fresh.tree.column("#0", width=bar.tree.column("#0", "width"))
        fresh.set_conversations(chosen, current_id=None)
        assert shown_rows(bar) == shown_rows(fresh)
        fresh.destroy()
