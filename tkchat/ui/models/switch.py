"""Which backend the window talks to: the model picker, a lesson's demo backend, switching.

The picker (``tkchat/ui/models/picker.py``) finds GGUF files on a thread; switching asks the
controller to free the old model and load the new one on its loader thread, so the main
thread only swaps an object and waits for ``ModelReady`` like at start-up. A lesson's demo
switches between the model and the scripted backend; both stay loaded, so flipping back and
forth in a class costs nothing.

Main thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from tkchat.generate.backend import Backend
from tkchat.generate.factory import make_backend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.store.settings import remember_model
from tkchat.ui.models.picker import ModelPicker
from tkchat.ui.services import Services

DEMO_ANSWER_CHARS = 4_000  # long enough for a freeze to be seen and felt, the same every time


class ModelSwitch:
    """The window's backends by kind ("llama", "scripted"), and the Model menu's commands.

    ``make(kind)`` builds a backend a lesson asks for (None: the usual ones,
    :func:`~tkchat.generate.factory.make_backend`); ``on_unloading()`` is called before the
    current backend is replaced (the window stops the answer and waits for ``ModelReady``)."""

    def __init__(
        self,
        services: Services,
        *,
        make: Callable[[str], Backend] | None = None,
        on_unloading: Callable[[], None],
        on_dialog_closed: Callable[[], None] = lambda: None,
    ) -> None:
        self.root = services.root
        self.t = services.translate
        self.status = services.status
        self.controller = controller = services.controller
        self.remembered = services.remembered
        self.make = make or make_backend
        self.on_unloading = on_unloading
        self.on_dialog_closed = on_dialog_closed
        self.backends: dict[str, Backend] = {kind_of(controller.backend): controller.backend}
        self.picker: ModelPicker | None = None

    def choose(self) -> None:
        """Open the picker (Ctrl+M): bundled, recent, and GGUF files on this computer."""
        if self.picker is not None and self.picker.winfo_exists():
            self.picker.lift()
            return
        backend = self.backends.get("llama")
        settings = self.remembered.current
        self.picker = ModelPicker(
            self.root,
            translate=self.t,
            current=backend.model if backend is not None else None,
            recent=settings.recent_models,
            folder=settings.model_folder,
            on_choose=self.load,
            on_folder=lambda folder: self.remembered.change(model_folder=folder),
        )
        self.picker.bind("<Destroy>", lambda _e: self.on_dialog_closed(), add="+")

    def load(self, path: str | None) -> None:
        """Switch to the GGUF at ``path`` (None: the bundled model). The old model is freed
        and the new one loaded on the loader thread; the window stays responsive and says
        so when the new model is ready (or why it failed). A model still loading is given up
        (the controller cancels its load): the latest choice wins."""
        chosen = path if path is not None else bundled_model_path()
        if chosen is not None:  # the bundled one too: next start opens what was chosen last
            recent = remember_model(self.remembered.current, chosen).recent_models
            self.remembered.change(recent_models=recent)
        old = self.backends.get("llama")
        backend = self.backends["llama"] = make_backend(
            "llama", model=path, context_for=self._chosen_context
        )
        current = self.controller.backend
        self._unloading(backend)
        if old is not None and old is not current:
            old.close()  # idle (a lesson's scripted demo is the current backend): cheap
        self.controller.switch_backend(backend, unload_old=old is current)

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
    ) -> None:
        """Switch to the "llama" or "scripted" backend (made once, then kept loaded). For the
        scripted one: its token rate, its answer's length in tokens (None: the whole demo
        answer once) and the answer's language."""
        backend = self.backends.get(kind)
        if backend is None:
            backend = self.backends[kind] = self.make(kind)
        if isinstance(backend, ScriptedBackend):
            backend.text = long_answer(DEMO_ANSWER_CHARS, language)
            backend.tokens = tokens
            if rate is not None:
                backend.rate = rate
        if backend is self.controller.backend:
            return
        self._unloading(backend)
        self.controller.switch_backend(backend)

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
