"""The conversation sidebar: a "New chat" button, a search box, the list of saved chats and an
"Undo" bar after a delete.

Main thread only, like every widget, and without any database access of its own: the app does
the I/O off the main thread and hands the results in (:meth:`ConversationSidebar.set_conversations`,
:meth:`ConversationSidebar.show_search_results`); the sidebar reports what the user asked for
through the callbacks it was built with. So it can be built and tested without
``tkchat.ui.window.chat_window`` or a database.

The list is one ``ttk.Treeview`` (no widget per row), so a thousand conversations load in one
pass and scroll as smoothly as ten. Rows are keyed by the conversation id (the Treeview item id
is ``str(id)``), which is what keeps the selection and the scroll position in place when the
app refreshes the list.
"""

from __future__ import annotations

import contextlib
import re
import time
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from tkinter import ttk

from tkchat.store.db import Conversation
from tkchat.ui.base.translator import Translator
from tkchat.ui.chats.inline_rename import InlineRename
from tkchat.ui.look.fit import FittedLabel, ellipsize, ellipsize_around
from tkchat.ui.look.scaling import dp, dp_pad
from tkchat.ui.look.theme import FIELD_HINT_STYLE, follow_theme, list_row_height
from tkchat.ui.look.tree_rows import Row, sync_rows
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.tcl_var import TclVar

SEARCH_DEBOUNCE_MS = 250  # search once the user pauses, not on every keystroke
# How long the "Undo" bar stays after a delete; it stays while the pointer is on it, and
# for this long again after the pointer leaves (time enough to reach it).
UNDO_TIMEOUT_MS = 12000
SNIPPET_CHARS = 80  # a snippet is one line under the title: longer ones are cut
LIST_STYLE = "Sidebar.Treeview"
RESULTS_STYLE = "SidebarResults.Treeview"  # two lines per row: title, then the snippet
# Sizes in pixels of the 96-dpi design (tkchat/ui/look/scaling.py scales them).
TITLE_WIDTH, WHEN_WIDTH = 170, 84


def format_when(timestamp: float, now: float, translate: Callable[..., str]) -> str:
    """A short date for a list row: the time today, "yesterday", "3 days ago" within a week,
    else the date (ISO order, which reads the same in English and Chinese)."""
    then = datetime.fromtimestamp(timestamp)
    today = datetime.fromtimestamp(now).date()
    days = (today - then.date()).days
    if days <= 0:
        # A clock that went backwards (or a future timestamp) still counts as today.
        return (
            translate("sidebar.just_now") if 0 <= now - timestamp < 60 else then.strftime("%H:%M")
        )
    if days == 1:
        return translate("sidebar.yesterday")
    if days < 7:
        return translate("sidebar.days_ago", days=days)
    return then.strftime("%Y-%m-%d")


def _one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    """Collapse whitespace (a snippet may span lines) and cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class ConversationSidebar(ttk.Frame):
    """The list of conversations beside the chat.

    Main thread only. The callbacks are called on the main thread, from Tk event handlers:
    ``on_new()`` for the "New chat" button; ``on_select(id)`` when the user picks a conversation
    other than the current one (click, arrow keys, Enter); ``on_rename(id, title)`` after an
    inline rename that changed the title; ``on_delete(id, after)`` for the Delete key or menu
    item (``after``: the chat listed after it, or before it for the last one, None for the
    only one: :meth:`neighbour_of`), ``on_undo_delete(id)`` for the "Undo" bar's button;
    ``on_search(text)`` 250 ms after the search text stopped changing (``""`` means "show all
    again"). ``translate`` gives the fixed strings (``tkchat/i18n/sidebar.py``) and tells the
    sidebar when the language changes.
    """

    _rows_query = ""  # the search words the rows' snippets were fitted around

    def __init__(
        self,
        master: tk.Misc,
        *,
        translate: Translator,
        on_new: Callable[[], None],
        on_select: Callable[[int], None],
        on_rename: Callable[[int, str], None],
        on_delete: Callable[[int, int | None], None],
        on_undo_delete: Callable[[int], None],
        on_search: Callable[[str], None],
        on_export: Callable[[int], object] | None = None,
    ) -> None:
        super().__init__(master, padding=dp_pad(master, 6, 6))
        self.translate = translate
        self.on_new = on_new
        self.on_select = on_select
        self.on_rename = on_rename
        self.on_delete = on_delete
        self.on_undo_delete = on_undo_delete
        self.on_search = on_search

        self._conversations: dict[int, Conversation] = {}
        self._order: list[int] = []  # ids of the rows on screen, top to bottom
        self._results: list[tuple[Conversation, str]] | None = None  # None: the list is shown
        self._current_id: int | None = None
        self._rows: dict[str, Row] = {}  # the rows on screen: whole texts (the row shows what fits)
        # "search" (debounce), "undo" (the bar's timeout), "place-editor" (the inline rename
        # entry follows its row after a refresh)
        self.timers = AfterScheduler(self)
        self._undo_id: int | None = None
        self._undo_title = ""
        self._menu_target: int | None = None
        self._destroyed = False

        self.columnconfigure(0, weight=1)
        self.rowconfigure(2, weight=1)
        self._configure_styles()

        self.new_button = ttk.Button(self, command=self.on_new)
        translate.bind(self.new_button, "sidebar.new")
        self.new_button.grid(row=0, column=0, columnspan=2, sticky="ew")

        self.search_var = TclVar(self)  # not a tk.StringVar: tkchat/ui/tcl_var.py says why
        self.search_entry = self.search_var.attach(ttk.Entry(self))
        self.search_entry.grid(row=1, column=0, columnspan=2, sticky="ew", pady=dp_pad(self, 6, 6))
        # ttk.Entry has no placeholder: a grey label sits inside the empty entry instead, so
        # the entry's text is always exactly what the user typed.
        self.search_hint = ttk.Label(self.search_entry, style=FIELD_HINT_STYLE, cursor="xterm")
        translate.bind(self.search_hint, "sidebar.search_hint")
        self.search_hint.bind("<Button-1>", lambda _e: self.search_entry.focus_set())
        # A variable trace sees typing, pasting, cutting and clearing alike (key events don't).
        self.search_var.on_write(self._on_search_changed)
        self.search_entry.bind("<FocusIn>", lambda _e: self._update_hint(), add="+")
        self.search_entry.bind("<FocusOut>", lambda _e: self._update_hint(), add="+")
        self.search_entry.bind("<Escape>", self._on_search_escape)
        self.search_entry.bind("<Down>", self._on_search_down)
        self.search_entry.bind("<Return>", self._on_search_down)

        self.tree = ttk.Treeview(
            self, columns=("when",), show="tree", selectmode="browse", style=LIST_STYLE
        )
        self.tree.column("#0", stretch=True, width=dp(self, TITLE_WIDTH), minwidth=dp(self, 80))
        self.tree.column(
            "when", stretch=False, width=dp(self, WHEN_WIDTH), minwidth=dp(self, 60), anchor="e"
        )
        follow_theme(self.tree, lambda p: self.tree.tag_configure("empty", foreground=p.muted))
        self.tree.bind("<<ThemeChanged>>", lambda _e: self._configure_styles(), add="+")
        self.scrollbar = ttk.Scrollbar(self, orient="vertical", command=self.tree.yview)
        self.tree.configure(yscrollcommand=self._on_scrolled)
        self.tree.grid(row=2, column=0, sticky="nsew")
        self.scrollbar.grid(row=2, column=1, sticky="ns")

        self.tree.bind("<<TreeviewSelect>>", self._on_tree_select)
        self.tree.bind("<Return>", self._on_tree_return)
        self.tree.bind("<KP_Enter>", self._on_tree_return)
        self.rename = InlineRename(
            self.tree, self.timers, title_of=self._title_of, on_renamed=self._renamed
        )
        self.editor = self.rename.entry
        self.tree.bind("<F2>", lambda _e: self.rename.start(self._focused_id()))
        self.tree.bind("<Delete>", lambda _e: self._delete(self._focused_id()))
        for sequence in ("<Button-3>", "<Button-2>"):  # Button-2 is the right button on macOS
            self.tree.bind(sequence, self._on_context_click)
        for sequence in ("<Shift-F10>", "<KeyPress-Menu>", "<KeyPress-App>"):
            # The context-menu key is Menu on X11 and App on Windows; each Tk knows only one.
            with contextlib.suppress(tk.TclError):
                self.tree.bind(sequence, self._on_context_key)
        # A narrower list cuts titles again (with "…"), once the resizing has settled.
        self.tree.bind(
            "<Configure>", lambda _e: self.timers.when_idle("fit-rows", self._fit_rows), add="+"
        )

        self.menu = tk.Menu(self, tearoff=False)
        self.menu.add_command(command=lambda: self.rename.start(self._menu_target))
        self.menu.add_command(command=lambda: self._delete(self._menu_target))
        if on_export is not None:
            self.menu.add_command(command=lambda: self._export(on_export))

        self.undo_bar = ttk.Frame(self, padding=dp_pad(self, 0, 6, 0, 0))
        self.undo_bar.columnconfigure(0, weight=1)
        self.undo_label = FittedLabel(self.undo_bar, anchor="w")
        self.undo_button = ttk.Button(self.undo_bar, command=self._undo)
        translate.bind(self.undo_button, "sidebar.undo")
        self.undo_label.grid(row=0, column=0, sticky="ew", padx=(0, dp(self, 6)))
        self.undo_button.grid(row=0, column=1)
        self.undo_bar.grid(row=3, column=0, columnspan=2, sticky="ew")
        # While the pointer is on the bar, it does not go away under it.
        self.undo_bar.bind("<Enter>", lambda _e: self.timers.cancel("undo"), add="+")
        self.undo_bar.bind("<Leave>", lambda _e: self._keep_undo(), add="+")
        self.undo_bar.grid_remove()  # shown only after a delete

        translate.on_change(self._on_language_changed)
        self._relabel()
        self._update_hint()

    # -- public --------------------------------------------------------------------------------

    def set_conversations(
        self, conversations: Sequence[Conversation], current_id: int | None
    ) -> None:
        """Show ``conversations`` (in the order given: newest first) and highlight
        ``current_id`` (None: no conversation is current). The selection, the keyboard focus
        and the scroll position stay where they were when those rows still exist.

        While the search box holds text the list is stored but the search results stay on
        screen: the app is expected to run the search again after a change."""
        self._conversations = {c.id: c for c in conversations}
        self._current_id = current_id
        if self._results is not None and self.search_var.get().strip():
            # Deleted chats leave the results, renamed ones show their new title.
            self._results = [
                (self._conversations[c.id], s)
                for c, s in self._results
                if c.id in self._conversations
            ]
            self._show_rows(self._results)
            return
        self._results = None
        self._show_rows([(c, None) for c in conversations])

    def show_search_results(self, results: Sequence[tuple[Conversation, str]]) -> None:
        """The chats that matched the search, each with its snippet (one line, the app's)."""
        if not self.search_var.get().strip():
            # The box was cleared before these results arrived: the full list wins.
            return
        self._results = list(results)
        self._show_rows(self._results)

    def search_query(self) -> str | None:
        """The search whose results the list shows (None: the whole list is shown)."""
        return self.search_var.get().strip() or None

    def focus_search(self) -> None:
        """Put the keyboard focus in the search box, its text selected (for Ctrl+F)."""
        self.search_entry.focus_set()
        self.search_entry.select_range(0, "end")
        self.search_entry.icursor("end")

    def selected_id(self) -> int | None:
        """The highlighted conversation's id, or None."""
        selection = self.tree.selection()
        return int(selection[0]) if selection and selection[0].isdigit() else None

    def destroy(self) -> None:
        """Cancel every pending timer, then destroy the widget."""
        self._destroyed = True
        self.timers.close()
        super().destroy()

    # -- rows ----------------------------------------------------------------------------------

    def fonts_changed(self) -> None:
        """The text size changed (the named fonts were rescaled): row heights follow."""
        self._configure_styles()

    def _configure_styles(self) -> None:
        """Row heights for the font as it is now. Also run on every ``<<ThemeChanged>>``: a
        style's settings belong to the theme in use when they were made, so the ones made
        before the window's theme was put in use at start were gone, and at 192 dpi the
        rows overlapped. Only a height that differs is set again, since setting a style
        sends ``<<ThemeChanged>>`` once more."""
        style = ttk.Style(self)
        # Results show two lines per row; the style (not the rows) sets the height.
        for name, lines in ((LIST_STYLE, 1), (RESULTS_STYLE, 2)):
            height = list_row_height(self, lines)
            if str(style.lookup(name, "rowheight")) != str(height):
                style.configure(name, rowheight=height)
        self.timers.when_idle("fit-rows", self._fit_rows)  # the same width holds less text

    def _show_rows(self, rows: Sequence[tuple[Conversation, str | None]]) -> None:
        """Show these rows; keep the selection, the focus and the scroll offset by id. Only
        what changed is touched (:func:`sync_rows`): a question sent moves one row."""
        focus = self.tree.focus()
        top = self.tree.yview()[0]
        searching = self._results is not None
        style = RESULTS_STYLE if searching else LIST_STYLE
        if str(self.tree.cget("style")) != style:
            self.tree.configure(style=style)
        now = time.time()
        wanted = [
            Row(
                str(conversation.id),
                self._row_text(conversation, snippet),
                (format_when(conversation.updated_at, now, self.translate),),
            )
            for conversation, snippet in rows
        ]
        # A snippet is fitted around the words searched for: new words, every row anew.
        query = self.search_var.get().strip() if searching else ""
        shown = self._rows if query == self._rows_query else {}
        self._rows = sync_rows(self.tree, wanted, shown, self._fitter())
        self._rows_query = query
        self._order = [int(iid) for iid in self._rows]
        if searching and not self._order:
            self.tree.insert(
                "",
                "end",
                iid="empty",
                tags=("empty",),
                text=self.translate("sidebar.no_results", query=self.search_var.get().strip()),
                values=("",),
            )
        current = str(self._current_id) if self._current_id is not None else None
        if current is not None and self.tree.exists(current):
            # The <<TreeviewSelect>> this queues is ignored: the row is already the current one.
            self.tree.selection_set(current)
        else:
            self.tree.selection_set(())
        if focus and self.tree.exists(focus):
            self.tree.focus(focus)
        elif current is not None and self.tree.exists(current):
            self.tree.focus(current)
        self.tree.yview_moveto(top)
        self.rename.rows_changed()

    def _fitter(self) -> Callable[[str], str]:
        """A row's text as it fits the title column now: the title cut with "…", the
        snippet (search results) cut around the word searched for, which stays in view.
        (The width, font and query are looked up once for all the rows.)"""
        width = self.tree.column("#0", "width") - self._title_margin()
        font = tkfont.nametofont("TkDefaultFont", root=self)
        query = self.search_var.get().strip()

        def fitted(text: str) -> str:
            title, newline, snippet = text.partition("\n")
            title = ellipsize(font, title, width)
            if not newline:
                return title
            found = re.search(re.escape(query), snippet, re.IGNORECASE) if query else None
            start, end = (found.start(), found.end()) if found else (0, 0)
            return title + "\n" + ellipsize_around(font, snippet, start, end, width)

        return fitted

    def _title_margin(self) -> int:
        """The room left of a row's text (the tree's indent) and a little after it."""
        indent = ttk.Style(self).lookup("Treeview", "indent")
        return int(float(indent or 20)) + dp(self, 8)

    def _fit_rows(self) -> None:
        # The title column takes the width the date leaves (a Treeview does not shrink its
        # columns with itself, and would cut the date off at its right edge instead).
        width = self.tree.winfo_width()
        if width > 1:
            title = width - self.tree.column("when", "width") - dp(self, 2)
            self.tree.column("#0", width=max(title, int(self.tree.column("#0", "minwidth"))))
        fitted = self._fitter()
        for iid, row in self._rows.items():
            if self.tree.exists(iid):
                self.tree.item(iid, text=fitted(row.text))

    def _row_text(self, conversation: Conversation, snippet: str | None) -> str:
        title = _one_line(conversation.title, 200) or self.translate("sidebar.untitled")
        return title if snippet is None else f"{title}\n{_one_line(snippet, 400)}"

    def _refresh_texts(self) -> None:
        """Show every row's text and date again (after a language change, a rename)."""
        snippets = dict((c.id, s) for c, s in self._results) if self._results is not None else {}
        by_id = {c.id: c for c, _ in self._results} if self._results is not None else {}
        rows = [
            (conversation, snippets.get(cid))
            for cid in self._order
            if (conversation := by_id.get(cid) or self._conversations.get(cid)) is not None
        ]
        self._show_rows(rows)  # ("no results" is shown again, in the language of now)

    def _title_of(self, cid: int) -> str:
        conversation = self._conversations.get(cid)
        if conversation is None and self._results is not None:
            conversation = next((c for c, _ in self._results if c.id == cid), None)
        return conversation.title if conversation is not None else ""

    def _focused_id(self) -> int | None:
        iid = self.tree.focus() or next(iter(self.tree.selection()), "")
        return int(iid) if iid.isdigit() else None

    # -- selecting -----------------------------------------------------------------------------

    def _on_tree_select(self, _event: tk.Event) -> None:
        cid = self.selected_id()
        # Programmatic highlights (set_conversations) select the current row: not a user pick.
        if cid is None or cid == self._current_id:
            return
        self._current_id = cid  # don't report the same pick twice while the app loads it
        self.on_select(cid)

    def _on_tree_return(self, _event: tk.Event) -> str:
        cid = self._focused_id()
        if cid is not None:
            self.tree.selection_set(str(cid))
            if cid != self._current_id:
                self._current_id = cid
                self.on_select(cid)
        return "break"

    # -- search --------------------------------------------------------------------------------

    def _on_search_changed(self, *_args: object) -> None:
        self._update_hint()
        self.timers.once("search", SEARCH_DEBOUNCE_MS, self._fire_search)

    def _fire_search(self) -> None:
        query = self.search_var.get().strip()
        if not query and self._results is not None:
            # Back to the full list at once; the app's refresh will follow.
            self._results = None
            self._show_rows([(self._conversations[cid], None) for cid in self._conversations])
        self.on_search(query)

    def _on_search_escape(self, _event: tk.Event) -> str | None:
        if self.search_var.get():
            self.search_var.set("")
            return "break"
        return None  # an empty box lets Esc reach the app (e.g. to stop an answer)

    def _on_search_down(self, _event: tk.Event) -> str:
        first = self.tree.selection() or self.tree.get_children()[:1]
        if first:
            self.tree.focus(first[0])
            self.tree.see(first[0])
        self.tree.focus_set()
        return "break"

    def _update_hint(self) -> None:
        if self.search_var.get() or self.focus_get() is self.search_entry:
            self.search_hint.place_forget()
        else:
            self.search_hint.place(x=4, rely=0.5, anchor="w")

    # -- rename --------------------------------------------------------------------------------

    def _renamed(self, cid: int, new_title: str) -> None:
        """The inline rename was confirmed (:class:`InlineRename`)."""
        if new_title and new_title != self._title_of(cid):
            # Show the new title now; the app's next refresh will confirm it.
            if cid in self._conversations:
                self._conversations[cid] = replace(self._conversations[cid], title=new_title)
            if self._results is not None:
                self._results = [
                    (replace(c, title=new_title) if c.id == cid else c, s) for c, s in self._results
                ]
            self._refresh_texts()
            self.on_rename(cid, new_title)

    # -- delete and undo -----------------------------------------------------------------------

    def neighbour_of(self, cid: int) -> int | None:
        """The chat listed after ``cid`` (before it, for the last one), None when it is the
        only one, or not listed: what opens in its place if the open chat is deleted."""
        iid = str(cid)
        if not self.tree.exists(iid):
            return None
        for other in (self.tree.next(iid), self.tree.prev(iid)):
            if other.isdigit():
                return int(other)
        return None

    def _delete(self, cid: int | None) -> None:
        if cid is None or not self.tree.exists(str(cid)):
            return
        title = self._title_of(cid) or self.translate("sidebar.untitled")
        after = self.neighbour_of(cid)
        # The row goes at once (the app's refresh confirms it); keyboard focus moves to a
        # neighbour without selecting it, so deleting does not also open another chat.
        neighbour = self.tree.next(str(cid)) or self.tree.prev(str(cid))
        self.tree.delete(str(cid))
        self._order = [i for i in self._order if i != cid]
        if neighbour:
            self.tree.focus(neighbour)
        self.on_delete(cid, after)
        self._show_undo(cid, title)

    def _show_undo(self, cid: int, title: str) -> None:
        # Only the latest delete can be undone from the bar; a new one restarts the timer.
        self._undo_id = cid
        self._undo_title = title
        self._label_undo()
        self.undo_bar.grid()
        self.timers.once("undo", UNDO_TIMEOUT_MS, self._hide_undo)

    def _keep_undo(self) -> None:
        if self._undo_id is not None:
            self.timers.once("undo", UNDO_TIMEOUT_MS, self._hide_undo)

    def _export(self, on_export: Callable[[int], object]) -> None:
        if self._menu_target is not None:
            on_export(self._menu_target)

    def _label_undo(self) -> None:
        # The whole title: the label cuts it to its width, with "…".
        self.undo_label.set_full(
            self.translate("sidebar.deleted", title=_one_line(self._undo_title, 200))
        )

    def _hide_undo(self) -> None:
        self.timers.cancel("undo")
        self._undo_id = None
        self.undo_bar.grid_remove()

    def _undo(self) -> None:
        cid = self._undo_id
        self._hide_undo()
        if cid is not None:
            self.on_undo_delete(cid)

    # -- context menu --------------------------------------------------------------------------

    def _on_context_click(self, event: tk.Event) -> str | None:
        iid = self.tree.identify_row(event.y)
        if not iid.isdigit():
            return None
        # Focus, not selection: opening the menu should not also open the chat.
        self.tree.focus(iid)
        self._popup(int(iid), event.x_root, event.y_root)
        return "break"

    def _on_context_key(self, _event: tk.Event) -> str:
        cid = self._focused_id()
        if cid is not None:
            self.tree.see(str(cid))
            box = self.tree.bbox(str(cid), "#0")
            x, y = (box[0] + 20, box[1] + box[3]) if box else (0, 0)
            self._popup(cid, self.tree.winfo_rootx() + x, self.tree.winfo_rooty() + y)
        return "break"

    def _popup(self, cid: int, x: int, y: int) -> None:
        self._menu_target = cid
        try:
            self.menu.tk_popup(x, y)
        finally:
            self.menu.grab_release()

    # -- language ------------------------------------------------------------------------------

    def _fit_date_column(self) -> None:
        """Make the date column as wide as its widest possible text in this language."""
        font = tkfont.nametofont("TkDefaultFont", root=self)
        samples = (
            "2000-12-30",
            "00:00",
            self.translate("sidebar.just_now"),
            self.translate("sidebar.yesterday"),
            self.translate("sidebar.days_ago", days=6),
        )
        width = max(font.measure(text) for text in samples) + dp(self, 12)
        self.tree.column("when", width=width, minwidth=width)

    def _relabel(self) -> None:
        self._fit_date_column()
        self.menu.entryconfigure(0, label=self.translate("sidebar.rename"))
        self.menu.entryconfigure(1, label=self.translate("sidebar.delete"))
        if self.menu.index("end") == 2:
            self.menu.entryconfigure(2, label=self.translate("sidebar.export"))
        if self._undo_id is not None:
            self._label_undo()
        self._refresh_texts()

    def _on_language_changed(self, _lang: str) -> None:
        # The translator keeps its listeners for ever; a destroyed sidebar ignores the call.
        if self._destroyed or not self.winfo_exists():
            return
        self._relabel()

    def _on_scrolled(self, first: float | str, last: float | str) -> None:
        self.scrollbar.set(first, last)
        self.rename.place()  # the inline entry follows its row
