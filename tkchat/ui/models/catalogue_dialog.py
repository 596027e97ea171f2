"""The catalogue dialog (Model > Get a model…): the curated models, what each needs, whether it
fits this machine, where to download from, and the progress of a download.

Main thread only. The dialog does not download: it shows what
:class:`tkchat.ui.models.download.ModelCatalogue` tells it and reports the user's clicks
through the callbacks it was built with, so it can be built and tested on its own, and a
download goes on when the dialog is closed.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Sequence
from pathlib import Path
from tkinter import ttk

from tkchat.models.catalogue import (
    ENDPOINTS,
    CatalogueEntry,
    fits,
    memory_needed,
)
from tkchat.models.finder import describe_size
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp, window_size
from tkchat.ui.look.theme import ERROR_STYLE, HINT_STYLE, follow_theme

TOO_BIG_TAG = "too_big"  # greyed: a model this computer has not the memory for
DIALOG_SIZE = (1020, 470)  # pixels at 96 dpi (tkchat/ui/look/scaling.py)

# What the dialog knows of an entry on this computer: its finished file, if any, and the
# bytes of an unfinished download.
LocalState = tuple[Path | None, int]


class CatalogueDialog(tk.Toplevel):
    """``on_download(entry, endpoint_text)``: Download and use; ``on_use(entry, path)``: use a
    model already downloaded; ``on_cancel()``: Cancel download. Close (Esc, the window's close
    button) only closes the dialog."""

    def __init__(
        self,
        master: tk.Misc,
        *,
        translate: Translator,
        entries: Sequence[CatalogueEntry],
        local_state: Callable[[CatalogueEntry], LocalState],
        memory: int | None,
        endpoint: str,
        on_download: Callable[[CatalogueEntry, str], None],
        on_use: Callable[[CatalogueEntry, Path], None],
        on_cancel: Callable[[], None],
    ) -> None:
        super().__init__(master)
        self.t = translate
        self.entries = list(entries)
        self.local_state = local_state
        self.memory = memory
        self.on_download = on_download
        self.on_use = on_use
        self.on_cancel = on_cancel
        self.downloading: str | None = None  # the entry's name while a download runs
        self._states: dict[str, LocalState] = {}
        self._message: tuple[Callable[[], str], bool] = (lambda: "", False)  # (maker, error)
        self._destroyed = False

        top = master.winfo_toplevel()
        self.transient(top)
        self.geometry(window_size(self, *DIALOG_SIZE))
        if top.winfo_viewable():
            self.geometry(f"+{top.winfo_rootx() + 40}+{top.winfo_rooty() + 40}")
        self.protocol("WM_DELETE_WINDOW", self.destroy)
        self._build(endpoint)
        translate.on_change(self._on_language_changed)
        self.refresh()
        self._relabel()
        if self.entries:
            self.select(self._first_fitting())
        self.tree.focus_set()

    # -- public --------------------------------------------------------------------------------

    def selected(self) -> CatalogueEntry | None:
        selection = self.tree.selection()
        return self._entry(selection[0]) if selection else None

    def select(self, name: str) -> None:
        """Highlight ``name``'s row; the buttons and details follow at once (the Treeview's
        own select event only comes with the next turn of the event loop)."""
        self.tree.selection_set(name)
        self.tree.focus(name)
        self.tree.see(name)
        self._selection_changed()

    def endpoint_text(self) -> str:
        return str(self.endpoint.get())

    def refresh(self) -> None:
        """Read each entry's state on this computer again (a few ``stat`` calls)."""
        self._states = {entry.name: self.local_state(entry) for entry in self.entries}
        for entry in self.entries:
            values = self._row(entry)
            tags = () if fits(entry, self.memory) else (TOO_BIG_TAG,)
            if self.tree.exists(entry.name):
                self.tree.item(entry.name, text=entry.title, values=values, tags=tags)
            else:
                self.tree.insert(
                    "", "end", iid=entry.name, text=entry.title, values=values, tags=tags
                )
        self._update_buttons()

    def show_progress(self, text: str, percent: float | None) -> None:
        if percent is None:
            self.bar.configure(mode="indeterminate")
        else:
            self.bar.configure(mode="determinate", value=percent)
        self.progress_label.configure(text=text)

    def show_message(self, make: Callable[[], str], *, error: bool = False) -> None:
        """Show what ``make()`` returns (called again after a language switch)."""
        self._message = (make, error)
        self.message.configure(text=make(), style=ERROR_STYLE if error else "TLabel")

    def set_downloading(self, name: str | None) -> None:
        """A download of ``name`` runs (None: none does): Cancel is offered, Download not."""
        self.downloading = name
        if name is None:
            self.bar.configure(mode="determinate", value=0)
        self.refresh()

    def destroy(self) -> None:
        self._destroyed = True
        super().destroy()

    @property
    def closed(self) -> bool:
        return self._destroyed

    # -- building ------------------------------------------------------------------------------

    def _build(self, endpoint: str) -> None:
        body = ttk.Frame(self, padding=dp(self, 10))
        body.pack(fill="both", expand=True)
        body.columnconfigure(0, weight=1)
        body.rowconfigure(0, weight=1)

        columns = ("size", "memory", "languages", "licence", "state")
        self.tree = ttk.Treeview(body, columns=columns, show="tree headings", selectmode="browse")
        self.tree.column("#0", width=dp(self, 270), minwidth=dp(self, 140), stretch=False)
        for column, width in zip(columns, (75, 75, 130, 230, 200), strict=True):
            self.tree.column(
                column, width=dp(self, width), minwidth=dp(self, 60), stretch=column == "state"
            )
        follow_theme(self.tree, lambda p: self.tree.tag_configure(TOO_BIG_TAG, foreground=p.muted))
        self.tree.grid(row=0, column=0, sticky="nsew")
        scroll = ttk.Scrollbar(body, orient="vertical", command=self.tree.yview)
        self.tree.configure(yscrollcommand=scroll.set)
        scroll.grid(row=0, column=1, sticky="ns")

        self.details = ttk.Label(body, anchor="w", justify="left")
        self.details.grid(row=1, column=0, columnspan=2, sticky="ew", pady=(8, 4))

        where = ttk.Frame(body)
        where.grid(row=2, column=0, columnspan=2, sticky="ew", pady=(4, 0))
        where.columnconfigure(1, weight=1)
        self.endpoint_label = ttk.Label(where)
        self.endpoint_label.grid(row=0, column=0, padx=(0, 6))
        self.endpoint = ttk.Combobox(where, values=ENDPOINTS)
        self.endpoint.set(endpoint)
        self.endpoint.grid(row=0, column=1, sticky="ew")
        self.hint = ttk.Label(where, style=HINT_STYLE, anchor="w")
        self.hint.grid(row=1, column=1, sticky="ew")

        self.bar = ttk.Progressbar(body, mode="determinate", maximum=100)
        self.bar.grid(row=3, column=0, columnspan=2, sticky="ew", pady=(10, 2))
        self.progress_label = ttk.Label(body, anchor="w")
        self.progress_label.grid(row=4, column=0, columnspan=2, sticky="ew")
        self.message = ttk.Label(body, anchor="w", justify="left")
        self.message.grid(row=5, column=0, columnspan=2, sticky="ew", pady=(4, 8))
        body.bind(
            "<Configure>",
            lambda e: self.message.configure(wraplength=max(e.width - 24, 200)),
        )

        buttons = ttk.Frame(body)
        buttons.grid(row=6, column=0, columnspan=2, sticky="ew")
        buttons.columnconfigure(0, weight=1)
        self.memory_label = ttk.Label(buttons, style=HINT_STYLE)
        self.memory_label.grid(row=0, column=0, sticky="w")
        self.main_button = ttk.Button(buttons, command=self._main_action, default="active")
        self.cancel_button = ttk.Button(buttons, command=self.on_cancel)
        self.close_button = ttk.Button(buttons, command=self.destroy)
        self.t.bind(self.cancel_button, "catalogue.cancel")
        self.t.bind(self.close_button, "catalogue.close")
        self.main_button.grid(row=0, column=1, padx=(0, 6))
        self.cancel_button.grid(row=0, column=2, padx=(0, 6))
        self.close_button.grid(row=0, column=3)

        self.tree.bind("<<TreeviewSelect>>", lambda _e: self._selection_changed())
        self.tree.bind("<Double-Button-1>", lambda _e: self._main_action())
        self.bind("<Return>", lambda _e: self._main_action())
        self.bind("<Escape>", lambda _e: self.destroy())

    # -- actions -------------------------------------------------------------------------------

    def _main_action(self) -> None:
        entry = self.selected()
        if entry is None or self.downloading is not None:
            return
        path, _partial = self._states.get(entry.name, (None, 0))
        if path is not None:
            self.on_use(entry, path)
        else:
            self.on_download(entry, self.endpoint_text())

    def _selection_changed(self) -> None:
        self._update_buttons()
        self._show_details()

    def _update_buttons(self) -> None:
        entry = self.selected()
        path = self._states.get(entry.name, (None, 0))[0] if entry else None
        self.main_button.configure(
            text=self.t("catalogue.use" if path is not None else "catalogue.download")
        )
        running = self.downloading is not None
        self.main_button.state(["disabled"] if running or entry is None else ["!disabled"])
        self.cancel_button.state(["!disabled"] if running else ["disabled"])
        self.endpoint.state(["disabled"] if running else ["!disabled"])

    # -- texts ---------------------------------------------------------------------------------

    def _entry(self, name: str) -> CatalogueEntry | None:
        return next((entry for entry in self.entries if entry.name == name), None)

    def _first_fitting(self) -> str:
        for entry in self.entries:
            if fits(entry, self.memory):
                return entry.name
        return self.entries[0].name

    def _row(self, entry: CatalogueEntry) -> tuple[str, ...]:
        unknown = self.t("catalogue.unknown")
        needed = memory_needed(entry)
        languages = ", ".join(
            self.t(f"catalogue.lang.{lang}") if lang in ("en", "zh") else lang
            for lang in entry.languages
        )
        return (
            describe_size(entry.size) if entry.size else unknown,
            describe_size(needed) if needed else unknown,
            languages,
            entry.licence,
            self._state(entry),
        )

    def _state(self, entry: CatalogueEntry) -> str:
        path, partial = self._states.get(entry.name, (None, 0))
        if path is not None:
            return self.t("catalogue.state.downloaded")
        if partial and entry.size:
            return self.t(
                "catalogue.state.partial",
                done=describe_size(partial),
                size=describe_size(entry.size),
            )
        if not fits(entry, self.memory) and self.memory is not None:
            return self.t("catalogue.state.too_big", free=describe_size(self.memory))
        return self.t("catalogue.state.fits") if memory_needed(entry) else ""

    def _show_details(self) -> None:
        entry = self.selected()
        if entry is None:
            self.details.configure(text="")
            return
        checksum = "catalogue.checksum.known" if entry.sha256 else "catalogue.checksum.hub"
        self.details.configure(
            text=self.t(
                "catalogue.details",
                about=entry.describe(self.t.lang),
                repo=entry.repo,
                file=entry.file,
                licence=entry.licence,
            )
            + "\n"
            + self.t(checksum)
        )

    def _relabel(self) -> None:
        self.title(self.t("catalogue.title"))
        for column in ("name", "size", "memory", "languages", "licence", "state"):
            self.tree.heading(
                "#0" if column == "name" else column,
                text=self.t(f"catalogue.column.{column}"),
                anchor="w",
            )
        self.endpoint_label.configure(text=self.t("catalogue.endpoint"))
        self.hint.configure(text=self.t("catalogue.endpoint_hint"))
        self.memory_label.configure(
            text=self.t("catalogue.memory_free", free=describe_size(self.memory))
            if self.memory
            else ""
        )
        self.refresh()
        self._show_details()
        make, error = self._message
        self.show_message(make, error=error)

    def _on_language_changed(self, _lang: str) -> None:
        if not self._destroyed:
            self._relabel()
