"""Getting a better model from inside the window: the catalogue dialog, the download behind it,
and one quiet suggestion on the first run.

Main thread only. The download runs in a child process (:class:`DownloadJob`); this part
polls it every 100 ms through the window's ``AfterScheduler`` (the poll only drains a queue
and updates a few labels, so the window's lag does not move), shows the progress in the dialog
and, when the dialog is closed, in the status line. When the file is downloaded and checked it
is handed to ``load_model`` (the model switch, which loads it on the loader thread).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tkchat.generate.backend import Backend
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import ENV_VAR, bundled_model_path
from tkchat.models.catalogue import (
    CatalogueEntry,
    CatalogueError,
    cache_dir,
    chosen_endpoint,
    downloaded_path,
    load_catalogue,
    memory_available,
    normalize_endpoint,
    partial_size,
)
from tkchat.models.download_job import STALL_S, DownloadJob, Failed, Finished
from tkchat.models.download_text import describe_failure, describe_progress, percent
from tkchat.ui.base.services import Services
from tkchat.ui.models.catalogue_dialog import CatalogueDialog, LocalState

POLL_MS = 100


class ModelCatalogue:
    """Model > Get a model… (see the module docstring). ``catalogue_file``, ``cache``,
    ``memory`` and ``stall_s`` default to the real ones (tests pass their own)."""

    def __init__(
        self,
        services: Services,
        load_model: Callable[[str], None],
        *,
        catalogue_file: Path | None = None,
        cache: Path | None = None,
        memory: Callable[[], int | None] = memory_available,
        stall_s: float = STALL_S,
    ) -> None:
        self.root = services.root
        self.t = services.translate
        self.status = services.status
        self.scheduler = services.scheduler
        self.remembered = services.remembered
        self.load_model = load_model
        self.catalogue_file = catalogue_file
        self.cache = cache
        self.memory = memory
        self.stall_s = stall_s
        self.dialog: CatalogueDialog | None = None
        self.job: DownloadJob | None = None
        self.results: list[Finished | Failed] = []  # every download's result, in order

    # -- the dialog ----------------------------------------------------------------------------

    def open(self) -> None:
        """Model > Get a model…: the dialog (brought forward if it is open)."""
        if self.dialog is not None and not self.dialog.closed:
            self.dialog.lift()
            return
        try:
            entries = load_catalogue(self.catalogue_file)
        except CatalogueError as exc:
            message = str(exc)
            self.status.show(lambda: message)
            return
        self.dialog = CatalogueDialog(
            self.root,
            translate=self.t,
            entries=entries,
            local_state=self._local_state,
            memory=self.memory(),
            endpoint=chosen_endpoint(self.remembered.current.hf_endpoint),
            on_download=self.download,
            on_use=lambda _entry, path: self._use(str(path)),
            on_cancel=self.cancel,
        )
        if self.job is not None and self.job.running:
            self.dialog.select(self.job.entry.name)
            self.dialog.set_downloading(self.job.entry.name)
            self._show_progress()

    def _local_state(self, entry: CatalogueEntry) -> LocalState:
        cache = self._cache()
        return downloaded_path(entry, cache), partial_size(entry, cache)

    def _cache(self) -> Path:
        return self.cache if self.cache is not None else cache_dir()

    # -- downloading ---------------------------------------------------------------------------

    def download(self, entry: CatalogueEntry, endpoint_text: str) -> None:
        """Start downloading ``entry`` from the hub the user named (remembered for next
        time). One download at a time."""
        if self.job is not None and self.job.running:
            return
        endpoint = normalize_endpoint(endpoint_text)
        if endpoint is None:
            self._say_failure(Failed("bad_endpoint", {"endpoint": endpoint_text.strip()}))
            return
        if endpoint != chosen_endpoint(self.remembered.current.hf_endpoint):
            self.remembered.change(hf_endpoint=endpoint)
        self.job = DownloadJob(entry, endpoint=endpoint, cache=self._cache(), stall_s=self.stall_s)
        self.job.start()
        if self.dialog is not None and not self.dialog.closed:
            self.dialog.set_downloading(entry.name)
            self.dialog.show_message(lambda: "")
        self._show_progress()
        self.scheduler.once("catalogue-poll", POLL_MS, self._poll)

    def cancel(self) -> None:
        """Cancel download: the child is ended at once; what it fetched is kept."""
        job = self.job
        if job is not None and job.running:
            job.cancel()
            self.scheduler.cancel("catalogue-poll")
            if job.result is not None:
                self._ended(job, job.result)

    def close(self) -> None:
        """The window is closing: end the download (the next one continues it)."""
        if self.job is not None and self.job.running:
            self.job.cancel()

    def _poll(self) -> None:
        job = self.job
        if job is None:
            return
        result = job.poll()
        if result is None:
            self._show_progress()
            self.scheduler.once("catalogue-poll", POLL_MS, self._poll)
            return
        self._ended(job, result)

    def _ended(self, job: DownloadJob, result: Finished | Failed) -> None:
        """Say how the download ended; a finished one is handed to ``load_model``."""
        self.results.append(result)
        dialog = self.dialog if self.dialog is not None and not self.dialog.closed else None
        if dialog is not None:
            dialog.set_downloading(None)
            dialog.show_progress("", 0.0)
        if isinstance(result, Failed):
            self._say_failure(result)
            return
        title = job.entry.title
        key = "catalogue.already" if result.already else "catalogue.done"
        if dialog is not None:
            dialog.show_message(lambda: self.t(key, title=title))
        self._use(result.path)

    def _use(self, path: str) -> None:
        if self.dialog is not None and not self.dialog.closed:
            self.dialog.destroy()
        self.load_model(path)

    def _show_progress(self) -> None:
        job = self.job
        if job is None:
            return
        share = percent(job.progress)
        if self.dialog is not None and not self.dialog.closed:
            self.dialog.show_progress(
                describe_progress(
                    self.t.lang, job.progress, endpoint=job.endpoint, file=job.entry.file
                ),
                share,
            )
        else:
            shown = f"{share:.0f} %" if share is not None else "…"
            self.status.say("catalogue.status.downloading", title=job.entry.title, percent=shown)

    def _say_failure(self, failed: Failed) -> None:
        job = self.job
        defaults: dict[str, object] = {}
        if job is not None:
            defaults = {"endpoint": job.endpoint, "repo": job.entry.repo, "file": job.entry.file}

        def make() -> str:
            return describe_failure(self.t.lang, failed, **defaults)

        if self.dialog is not None and not self.dialog.closed:
            self.dialog.show_message(make, error=failed.kind != "cancelled")
        self.status.show(make)

    # -- the first-run suggestion ---------------------------------------------------------------

    def suggest(self, name: str, backend: Backend) -> None:
        """Once ever, when the bundled model is the one in use and no catalogue model is on this
        computer: one line in the status bar (which the next message replaces)."""
        if self.remembered.current.model_hint_shown:
            return
        bundled = isinstance(backend, LlamaBackend) and backend.model is None
        bundled = bundled and not os.environ.get(ENV_VAR)
        given = bundled_model_path()
        used_others = [
            path
            for path in self.remembered.current.recent_models
            if given is None or os.path.abspath(path) != os.path.abspath(given)
        ]
        if not bundled or used_others:
            return
        try:
            entries = load_catalogue(self.catalogue_file)
        except CatalogueError:
            return
        cache = self._cache()
        if any(downloaded_path(entry, cache) is not None for entry in entries):
            return
        self.remembered.change(model_hint_shown=True)
        self.status.say("catalogue.hint", name=name)
