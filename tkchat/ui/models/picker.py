"""The model picker: a dialog that lists the GGUF models on this computer and lets the user
choose one, open any file, or point it at another folder.

Every method runs on the main thread, except the search itself: :func:`find_models` walks
folders on a daemon thread, which hands what it finds back through a ``queue.Queue`` as it
goes (and its whole result at the end) that the dialog polls with ``after`` (the thread never
touches Tk). Closing the dialog cancels the search and every pending ``after``, so a slow
disk cannot call into a destroyed window.

The list fills as the search finds models, and a row never moves under the user: see
:mod:`tkchat.ui.models.model_rows`. A file that cannot load is marked ⚠ as soon as the
search finds it out (:mod:`tkchat.models.gguf_check`), and its reason shows when it is
selected.

Like the sidebar, the dialog does not know the app: it reports the user's choice through the
callbacks it was built with (``on_choose``, ``on_folder``) and gets its strings through a
translator, so it can be built and tested on its own.
"""

from __future__ import annotations

import os
import queue
import threading
import tkinter as tk
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from tkinter import filedialog, ttk
from typing import Any

from tkchat.generate.backend import ModelLoadError
from tkchat.generate.model_file import check_gguf
from tkchat.models.finder import FoundModel, describe_size, find_models, model_places
from tkchat.models.gguf_check import Problem
from tkchat.threads import own_thread
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp, dp_pad, window_size
from tkchat.ui.look.theme import ERROR_STYLE
from tkchat.ui.models.model_rows import (
    COLUMN_WIDTHS,
    COLUMNS,
    CURRENT_TAG,
    ModelRows,
    same_file,
)
from tkchat.ui.scheduler import AfterScheduler

POLL_MS = 50  # how often the dialog looks for the search's result
# Sizes in pixels of the 96-dpi design (tkchat/ui/look/scaling.py scales them).
DIALOG_SIZE = (900, 440)


Finder = Callable[..., list[FoundModel]]
# What the search thread puts on the queue: (scan number, models or None, error text or None,
# whether the search is over). Before the end, the models are those found or changed since
# the last report; at the end, all of them in their final order.
ScanResult = tuple[int, list[FoundModel] | None, str | None, bool]


def _run_scan(
    finder: Finder,
    number: int,
    folder: str | None,
    recent: list[str],
    cancel: threading.Event,
    results: queue.Queue[ScanResult],
) -> None:
    """The search thread. Touches no Tk object and holds no reference to the dialog (a Tk
    object freed on this thread would abort the process): it only fills ``results``."""

    def progress(batch: list[FoundModel]) -> None:
        results.put((number, list(batch), None, False))

    try:
        found = finder(folder=folder, recent=recent, cancel=cancel, progress=progress)
    except Exception as exc:  # reported in the dialog, not lost in a dead thread
        results.put((number, None, f"{type(exc).__name__}: {exc}", True))
        return
    results.put((number, list(found), None, True))


class ModelPicker(tk.Toplevel):
    """A dialog listing the GGUF models found on this computer.

    Main thread only (the search runs on its own thread, see the module docstring). The
    callbacks run on the main thread, from Tk event handlers, after the dialog has closed:
    ``on_choose(None, None)`` when the user picks the bundled model, ``on_choose(path, label)``
    (an absolute path, links not resolved, so a Hugging Face snapshot keeps its readable name;
    the name its app gives it, such as an Ollama model's, or None) for any other GGUF file;
    ``on_folder(path)`` when the user chose a folder to search (the dialog then searches
    again and stays open). Cancel, Esc and the window's close button close the dialog
    without calling anything.

    ``current`` is the model in use (None: the bundled model), ``recent`` the recently used
    files (newest first) and ``folder`` the user's models folder, if any. ``finder`` is called
    on the search thread as ``finder(folder=…, recent=…, cancel=event, progress=report)``
    (``report(models)``: what it found so far, see :func:`find_models`). The file choosers
    are the attributes :attr:`ask_file` and :attr:`ask_folder` (tests replace them).
    """

    def __init__(
        self,
        master: tk.Misc,
        *,
        translate: Translator,
        current: str | None,
        recent: Sequence[str],
        folder: str | None,
        on_choose: Callable[[str | None, str | None], None],
        on_folder: Callable[[str], None],
        finder: Finder = find_models,
    ) -> None:
        super().__init__(master)
        self.translate = translate
        self.failed: dict[str, str] = {}  # :meth:`mark_failed`
        self.current = current
        self.recent = list(recent)
        self.folder = folder
        self.on_choose = on_choose
        self.on_folder = on_folder
        self.finder = finder
        self.ask_file: Callable[..., Any] = filedialog.askopenfilename
        self.ask_folder: Callable[..., Any] = filedialog.askdirectory

        self._results: queue.Queue[ScanResult] = queue.Queue()
        self._scan_number = 0
        self._scan_cancel: threading.Event | None = None
        self._scan_thread: threading.Thread | None = None
        self.timers = AfterScheduler(self)
        self._polling = False  # one poll chain at a time, however many rescans
        self._status: tuple[str, dict[str, object]] = ("picker.searching", {})
        self._error: str | None = None  # a file the user opened was not usable
        self._destroyed = False

        top = master.winfo_toplevel()
        self.transient(top)
        self.geometry(window_size(self, *DIALOG_SIZE))
        if top.winfo_viewable():
            self.geometry(f"+{top.winfo_rootx() + 40}+{top.winfo_rooty() + 40}")
        self.protocol("WM_DELETE_WINDOW", self.cancel)
        self._build()
        translate.on_change(self._on_language_changed)
        self._relabel()
        self.tree.focus_set()
        self.rescan()

    # -- public --------------------------------------------------------------------------------

    def rows(self) -> list[FoundModel]:
        """The models on screen, top to bottom."""
        return self.list.rows()

    def selected(self) -> FoundModel | None:
        """The highlighted model, or None."""
        return self.list.selected()

    def rescan(self) -> None:
        """Search again (the previous search, if any, is cancelled and its result ignored)."""
        if self._scan_cancel is not None:
            self._scan_cancel.set()
        self._scan_number += 1
        self._scan_cancel = threading.Event()
        recent = self.recent
        if self.current is not None and not any(same_file(self.current, r) for r in recent):
            recent = [self.current, *recent]  # the model in use is listed even if not recent
        self._error = None
        self.list.clear()  # (the user's pick is kept: selected again when found again)
        self._set_status("picker.searching")
        self._scan_thread = own_thread(
            _run_scan,
            name="tkchat-model-search",
            args=(
                self.finder,
                self._scan_number,
                self.folder,
                recent,
                self._scan_cancel,
                self._results,
            ),
        )
        self._scan_thread.start()
        if not self._polling:
            self._polling = True
            self.timers.once("poll", POLL_MS, self._poll)

    def choose_selected(self) -> None:
        """Use the highlighted model ("Use this model", double-click, Enter)."""
        model = self.selected()
        if model is None:
            return
        if model.source == "bundled":
            self._choose(None, None)
            return
        self._choose_path(model.path, model.label)

    def open_file(self) -> None:
        """Ask for any file ("Open file…") and use it if it is a GGUF model."""
        initial = self.folder if self.folder and os.path.isdir(self.folder) else None
        answer = self.ask_file(
            parent=self,
            title=self.translate("picker.open_title"),
            initialdir=initial,
            filetypes=[
                (self.translate("picker.filetype"), "*.gguf *.GGUF"),
                (self.translate("picker.all_files"), "*"),
            ],
        )
        if self._destroyed or not answer or not isinstance(answer, str):
            return  # cancelled (some Tk versions answer with an empty tuple)
        self._choose_path(Path(answer))

    def choose_folder(self) -> None:
        """Ask for a folder ("Choose folder…"), report it and search again."""
        initial = self.folder if self.folder and os.path.isdir(self.folder) else None
        answer = self.ask_folder(
            parent=self,
            title=self.translate("picker.folder_title"),
            initialdir=initial,
            mustexist=True,
        )
        if self._destroyed or not answer or not isinstance(answer, str):
            return
        self.folder = os.path.abspath(answer)
        self.on_folder(self.folder)
        if not self._destroyed:  # on_folder may have closed the dialog
            self.rescan()

    def cancel(self) -> None:
        """Close without choosing (Cancel, Esc, the window's close button)."""
        self.destroy()

    def destroy(self) -> None:
        """Stop the search, cancel every pending ``after``, then destroy the dialog."""
        if not self._destroyed:
            self._destroyed = True
            if self._scan_cancel is not None:
                self._scan_cancel.set()
            self.timers.close()
        super().destroy()

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> None:
        body = ttk.Frame(self, padding=dp(self, 10))
        body.pack(fill="both", expand=True)
        body.columnconfigure(0, weight=1)
        body.rowconfigure(0, weight=1)

        self.tree = ttk.Treeview(body, columns=COLUMNS, show="tree headings", selectmode="browse")
        for column, (width, least) in COLUMN_WIDTHS.items():
            self.tree.column(
                column,
                width=dp(self, width),
                minwidth=dp(self, least),
                stretch=column == "path",
                anchor="e" if column == "size" else "w",
            )
        # A cell too narrow for its text shows it cut with "…": after a resize of the
        # dialog, and after a column's edge was dragged.
        for sequence in ("<Configure>", "<ButtonRelease-1>"):
            self.tree.bind(
                sequence,
                lambda _e: self.timers.when_idle("fit-cells", self._fit_cells),
                add="+",
            )
        self.list = ModelRows(
            self.tree, current=self.current, reason=self._failed_reason, where=self._where_text
        )
        yscroll = ttk.Scrollbar(body, orient="vertical", command=self.tree.yview)
        xscroll = ttk.Scrollbar(body, orient="horizontal", command=self.tree.xview)
        self.tree.configure(yscrollcommand=yscroll.set, xscrollcommand=xscroll.set)
        self.tree.grid(row=0, column=0, sticky="nsew")
        yscroll.grid(row=0, column=1, sticky="ns")
        xscroll.grid(row=1, column=0, sticky="ew")

        self.status = ttk.Label(body, anchor="w", justify="left")
        self.status.grid(row=2, column=0, columnspan=2, sticky="ew", pady=dp_pad(self, 8, 8))
        body.bind(
            "<Configure>",
            lambda e: self.status.configure(wraplength=max(e.width - dp(self, 24), 200)),
        )

        buttons = ttk.Frame(body)
        buttons.grid(row=3, column=0, columnspan=2, sticky="ew")
        buttons.columnconfigure(2, weight=1)
        self.open_button = ttk.Button(buttons, command=self.open_file)
        self.folder_button = ttk.Button(buttons, command=self.choose_folder)
        self.use_button = ttk.Button(buttons, command=self.choose_selected, default="active")
        self.cancel_button = ttk.Button(buttons, command=self.cancel)
        for button, key in (
            (self.open_button, "picker.open"),
            (self.folder_button, "picker.folder"),
            (self.use_button, "picker.use"),
            (self.cancel_button, "picker.cancel"),
        ):
            self.translate.bind(button, key)
        gap = dp(self, 6)
        self.open_button.grid(row=0, column=0, padx=(0, gap))
        self.folder_button.grid(row=0, column=1)
        self.use_button.grid(row=0, column=3, padx=(0, gap))
        self.cancel_button.grid(row=0, column=4)
        self.use_button.state(["disabled"])

        self.tree.bind("<<TreeviewSelect>>", lambda _e: self._selected_changed())
        self.tree.bind("<Double-Button-1>", self._on_double_click)
        # On the dialog, so Enter and Esc work wherever the focus is inside it.
        self.bind("<Return>", self._on_return)
        self.bind("<KP_Enter>", self._on_return)
        self.bind("<Escape>", lambda _e: self.cancel())

    # -- the search ----------------------------------------------------------------------------

    def _poll(self) -> None:
        """Show what the current search found since the last look; look again soon unless
        the search is over."""
        if self._destroyed:
            return
        while True:
            try:
                number, models, error, over = self._results.get_nowait()
            except queue.Empty:
                break
            if number != self._scan_number:
                continue  # a search that was replaced by a newer one
            if not over:
                self.list.add(models or [])
                self._selected_changed()  # a mark may have come to the selected row
                continue
            self._scan_cancel = None
            self._scan_thread = None
            self._polling = False
            self._finish(models or [], error)
            return
        self.timers.once("poll", POLL_MS, self._poll)

    def _finish(self, models: Sequence[FoundModel], error: str | None) -> None:
        """The search is over: its last finds, the final order if nobody is looking
        (:meth:`ModelRows.settle`), and the count."""
        self.list.settle(models)
        self._update_use_button()
        count = len(self.list.order)
        if error is not None:
            self._set_status("picker.failed", error=error)
        elif count == 1:
            self._set_status("picker.found_one")
        elif count:
            self._set_status("picker.found", count=count)
        else:
            self._set_status("picker.none")
        self._selected_changed()

    def cell(self, iid: str, column: str) -> str:
        """A cell's whole text ("#0": the name); the cell shows what fits its width."""
        return self.list.cells[iid][column]

    def _fit_cells(self) -> None:
        if not self._destroyed:
            self.list.fit()

    # -- choosing ------------------------------------------------------------------------------

    def _choose_path(self, path: Path, label: str | None = None) -> None:
        """Use ``path`` if it is a GGUF file, else say why not and stay open. The check reads
        four bytes of a local file the user just picked: cheap enough for the main thread
        (a file cut short is found out by the load, on the loader thread)."""
        try:
            check_gguf(path)
        except ModelLoadError as exc:
            self._show_error(str(exc))
            return
        self._choose(os.path.abspath(path.expanduser()), label)

    def _choose(self, value: str | None, label: str | None) -> None:
        """Close the dialog, then report the choice."""
        self.destroy()
        self.on_choose(value, label)

    def _on_double_click(self, event: tk.Event[Any]) -> str | None:
        if self.tree.identify_region(event.x, event.y) not in ("tree", "cell"):
            return None  # a heading or a column separator: not a choice
        row = self.tree.identify_row(event.y)
        if not row:
            return None
        self.tree.selection_set(row)
        self.choose_selected()
        return "break"

    def _on_return(self, _event: tk.Event[Any]) -> str:
        self.choose_selected()
        return "break"

    def mark_failed(self, failed: Mapping[str, str]) -> None:
        """The files that failed to load in this session (absolute path -> the sentence
        that said why): marked ⚠ in the list, now or when it arrives, and the sentence shown
        when one is selected."""
        self.failed = dict(failed)
        self.list.relabel()
        self._selected_changed()

    def _selected_changed(self) -> None:
        """The selection moved: the Use button, and a failed file's reason (or the list's
        own status again). A row the user selected is their pick: it stays selected, by
        its model, whatever the search adds."""
        self._update_use_button()
        self.list.note_selection()
        model = self.selected()
        reason = self._failed_reason(model) if model is not None else None
        if reason is not None:
            self._show_error(reason)
        elif self._error is not None:
            self._error = None
            self._render_status()

    def _failed_reason(self, model: FoundModel) -> str | None:
        """Why ``model`` cannot load: its load failed in this session, or the search read
        its header (None: nothing known against it)."""
        failed = self.failed.get(os.path.abspath(model.path))
        if failed is not None or model.problem is None:
            return failed
        return self._problem_text(model.problem)

    def _problem_text(self, problem: Problem) -> str:
        needed = describe_size(problem.needed)
        if not problem.exact:
            needed = self.translate("picker.at_least", size=needed)
        return self.translate(
            f"picker.problem.{problem.kind}",
            size=describe_size(problem.size),
            needed=needed,
            version=problem.version,
        )

    def _update_use_button(self) -> None:
        self.use_button.state(["!disabled"] if self.selected() else ["disabled"])

    # -- texts ---------------------------------------------------------------------------------

    def _where_text(self, model: FoundModel) -> str:
        try:
            return self.translate(f"picker.source.{model.source}")
        except KeyError:
            return model.source

    def _places_text(self) -> str:
        places = [self.translate("picker.place.bundled"), self.translate("picker.place.recent")]
        places += [str(place) for _source, place in model_places(folder=self.folder)]
        return "\n".join(f"  • {place}" for place in places)

    def _set_status(self, key: str, **values: object) -> None:
        self._status = (key, values)
        self._error = None
        self._render_status()

    def _show_error(self, message: str) -> None:
        self._error = message
        self._render_status()

    def _render_status(self) -> None:
        if self._error is not None:
            self.status.configure(text=self._error, style=ERROR_STYLE)
            return
        key, values = self._status
        if key == "picker.none":
            values = {"places": self._places_text()}
        self.status.configure(
            text=self.translate(key, **values),
            style=ERROR_STYLE if key == "picker.failed" else "TLabel",
        )

    def _relabel(self) -> None:
        self.title(self.translate("picker.title"))
        for column in ("name", "size", "where", "path"):
            self.tree.heading(
                "#0" if column == "name" else column,
                text=self.translate(f"picker.column.{column}"),
                anchor="w",
            )
        self.list.relabel()
        self._render_status()
        self._selected_changed()  # a file's reason, in the new language

    def _on_language_changed(self, _lang: str) -> None:
        # The translator keeps its listeners for ever; a closed dialog ignores the call.
        if self._destroyed:
            return
        self._relabel()


__all__ = ["CURRENT_TAG", "ERROR_STYLE", "ModelPicker"]
