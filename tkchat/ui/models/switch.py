"""Which backend the window talks to: the model picker, a lesson's demo backend, switching.

The picker (``tkchat/ui/models/picker.py``) finds GGUF files on a thread; switching asks the
controller to load the new model on its loader thread, so the main thread only swaps an
object and waits for ``ModelReady`` like at start-up. The model in use stays loaded until
the new one has loaded (Send waits meanwhile, and the status line says so); if the new one
fails, the old one answers on and the banner says why. Only a model that loaded is kept in
the recent models; one that fails is forgotten there. A lesson's demo switches between the
model and the scripted backend; both stay loaded, so flipping back and forth in a class
costs nothing.

Main thread only.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tkchat.events import ModelFailed
from tkchat.generate.backend import Backend
from tkchat.generate.factory import LlamaOptions, ScriptedOptions, make_backend
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.store.settings import forget_model, remember_model
from tkchat.ui.base.services import Services
from tkchat.ui.models.picker import ModelPicker

DEMO_ANSWER_CHARS = 4_000  # long enough for a freeze to be seen and felt, the same every time


class ModelSwitch:
    """The window's backends by kind ("llama", "scripted"), and the Model menu's commands.

    ``demo_llama``, ``demo_scripted``: the backends a lesson asks for, made the first time;
    ``on_unloading()`` is called before the current backend is replaced (the window stops
    the answer and waits for ``ModelReady``)."""

    def __init__(
        self,
        services: Services,
        *,
        demo_llama: LlamaOptions,
        demo_scripted: ScriptedOptions,
        on_unloading: Callable[[], None],
        on_dialog_closed: Callable[[], None] = lambda: None,
    ) -> None:
        self.root = services.root
        self.t = services.translate
        self.status = services.status
        self.controller = controller = services.controller
        self.remembered = services.remembered
        self.demo_llama = demo_llama
        self.demo_scripted = demo_scripted
        self.on_unloading = on_unloading
        self.on_dialog_closed = on_dialog_closed
        self.backends: dict[str, Backend] = {kind_of(controller.backend): controller.backend}
        self.picker: ModelPicker | None = None
        # The model file loading now, and whether it joins the recent models once it has
        # loaded (a choice in the window does; the one the command line named is only
        # forgotten there, should it fail).
        self.pending: tuple[Backend, str, bool] | None = None
        # files that failed to load in this session, and why: the picker marks them
        self.failed_files: dict[str, str] = {}
        # The model being loaded again (Settings' "Reload now") and what puts the settings
        # back should it fail.
        self.reloading: tuple[Backend, Callable[[], None]] | None = None
        first = controller.backend
        if isinstance(first, LlamaBackend) and first.model:
            self.pending = (first, first.model, False)

    def choose(self) -> None:
        """Open the picker (Ctrl+M): bundled, recent, and GGUF files on this computer."""
        if self.picker is not None and self.picker.winfo_exists():
            self.picker.lift()
            return
        self._sync()
        backend = self.backends.get("llama")
        settings = self.remembered.current
        self.picker = ModelPicker(
            self.root,
            translate=self.t,
            current=backend.model if isinstance(backend, LlamaBackend) else None,
            recent=settings.recent_models,
            folder=settings.model_folder,
            on_choose=self.load,
            on_folder=lambda folder: self.remembered.change(model_folder=folder),
        )
        self.picker.mark_failed(self.failed_files)
        self.picker.bind("<Destroy>", lambda _e: self.on_dialog_closed(), add="+")

    def load(self, path: str | None, label: str | None = None) -> None:
        """Switch to the GGUF at ``path`` (None: the bundled model), shown as ``label`` (an
        Ollama model's name; None: the file's). The new model loads on the loader thread
        while the one in use stays loaded; the window stays responsive and says when the
        new model is ready, or why it failed (and that the old one is still in use). A model
        still loading is given up (the controller cancels its load): the latest choice wins."""
        self._sync()
        chosen = path if path is not None else bundled_model_path()
        backend = self._replace(path, label, "app.switching")
        self.pending = (backend, str(chosen), True) if chosen is not None else None

    def reload(self, undo: Callable[[], None]) -> bool:
        """Load the local model in use again, so that the context and GPU offload chosen in
        Settings apply now (llama.cpp sets both at load). As with the picker, the loaded copy
        stays in use until the new one has loaded, and again should that fail (a context too
        large for the memory, a file gone since): then ``undo()`` puts the settings back, so
        the next start does not fail the same way. The answer streaming, if any, is stopped
        first (``on_unloading``). Whether a reload began: not for the scripted backend, a
        server, or a model still loading (the values apply when it has)."""
        self._sync()
        current = self.controller.backend
        if not isinstance(current, LlamaBackend) or not self.controller.loaded:
            return False
        # the recent models and the picker's failed files are about files: not touched
        self.pending = None
        self.reloading = (self._replace(current.model, current.label, "app.reloading"), undo)
        return True

    def _replace(self, path: str | None, label: str | None, saying: str) -> Backend:
        """Make the local model at ``path`` (None: the bundled one) with the settings' context
        and GPU offload, and have the controller load it in place of the one in use, kept
        until it has loaded. ``saying``: the status line's key while a model stays in use."""
        old = self.backends.get("llama")
        backend = self.backends["llama"] = make_backend(
            LlamaOptions(
                path,
                context_for=self._chosen_context,
                gpu_layers=self.remembered.current.gpu_layers,
                label=label,
            )
        )
        self.reloading = None  # (a choice made meanwhile wins, and its failure undoes nothing)
        current = self.controller.backend
        if old is not None and old is not current:
            old.close()  # idle (a lesson's scripted demo is the current backend): cheap
        standing = current.name if self.controller.loaded else None
        self.on_unloading()
        if standing is None:
            self.status.say("app.loading", name=backend.name)
        else:
            self.status.say(saying, name=backend.name, old=standing)
        self.controller.switch_backend(backend, replace=True)
        return backend

    def loaded(self) -> None:
        """The controller's backend has loaded: a model chosen in the window is now the
        most recent one (the next start opens it)."""
        pending, self.pending = self.pending, None
        if self.reloading is not None and self.reloading[0] is self.controller.backend:
            self.reloading = None
        if pending is not None and pending[0] is self.controller.backend and pending[2]:
            recent = remember_model(self.remembered.current, pending[1]).recent_models
            self.remembered.change(recent_models=recent)

    def failed(self, event: ModelFailed) -> None:
        """A load failed: that file is no longer offered as a recent model (nothing lists a
        file that does not load as one that works). The model kept, if any, is in use."""
        reloading = self.reloading
        if reloading is not None and not event.cancelled and event.name == reloading[0].name:
            self.reloading = None
            reloading[1]()
        pending = self.pending
        if pending is not None and not event.cancelled and event.name == pending[0].name:
            self.pending = None
            self.failed_files[os.path.abspath(pending[1])] = event.message
            current = self.remembered.current
            kept = forget_model(current, pending[1]).recent_models
            if kept != current.recent_models:
                self.remembered.change(recent_models=kept)
        self._sync()

    def _sync(self) -> None:
        """The backend in use is the one of its kind (after a failed switch the controller
        went back to the one it kept)."""
        if self.controller.loaded:
            current = self.controller.backend
            self.backends[kind_of(current)] = current

    def _chosen_context(self, name: str) -> int | None:
        """Loader thread: the context chosen in Settings for the model file ``name`` (a read
        of the settings object the main thread replaces whole, never changes in place)."""
        return self.remembered.current.model_contexts.get(name)

    def use(
        self,
        kind: str,
        *,
        rate: float | None = None,
        tokens: int | None = None,
        language: str = "en",
    ) -> bool:
        """Switch to the "llama" or "scripted" backend (made once, then kept loaded). For the
        scripted one: its token rate, its answer's length in tokens (None: the whole demo
        answer once) and the answer's language. True if it was not the one in use: its
        ModelReady (or ModelFailed) follows."""
        self._sync()
        backend = self.backends.get(kind)
        if backend is None:
            demo = self.demo_scripted if kind == "scripted" else self.demo_llama
            backend = self.backends[kind] = make_backend(demo)
        if isinstance(backend, ScriptedBackend):
            backend.text = long_answer(DEMO_ANSWER_CHARS, language)
            backend.tokens = tokens
            if rate is not None:
                backend.rate = rate
        if backend is self.controller.backend:
            return False
        self._unloading(backend)
        self.controller.switch_backend(backend)
        return True

    def _unloading(self, backend: Backend) -> None:
        self.on_unloading()
        self.status.say("app.loading", name=backend.name)

    def close_idle(self) -> None:
        """At exit: free the backends that are loaded but not in use (the controller frees
        its own)."""
        for backend in self.backends.values():
            if backend is not self.controller.backend:
                backend.close()


def kind_of(backend: Backend) -> str:
    return "scripted" if isinstance(backend, ScriptedBackend) else "llama"
