"""Model ▸ Choose model: the picker, and switching models without freezing the window.

The picker (``tkchat/ui/model_picker.py``) finds GGUF files on a thread; switching asks the
controller to free the old model and load the new one on its loader thread, so the main
thread only swaps an object and waits for ``ModelReady`` like at start-up.

Main thread only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tkchat.generate.factory import make_backend
from tkchat.generate.model_file import bundled_model_path
from tkchat.store.settings import remember_model
from tkchat.ui.model_picker import ModelPicker

if TYPE_CHECKING:
    from tkchat.ui.app import ChatApp


class ModelSwitch:
    """The window's model commands."""

    def __init__(self, app: ChatApp) -> None:
        self.app = app
        self.picker: ModelPicker | None = None

    def choose(self) -> None:
        """Open the picker (Ctrl+M): bundled, recent, and GGUF files on this computer."""
        if self.picker is not None and self.picker.winfo_exists():
            self.picker.lift()
            return
        app = self.app
        backend = app.backends.get("llama")
        current = getattr(backend, "model", None) if backend is not None else None
        self.picker = ModelPicker(
            app.root,
            translate=app.t,
            current=current,
            recent=app.settings.recent_models,
            folder=app.settings.model_folder,
            on_choose=self.load,
            on_folder=self._folder_chosen,
        )

    def _folder_chosen(self, folder: str) -> None:
        self.app.change_settings(model_folder=folder)

    def load(self, path: str | None) -> None:
        """Switch to the GGUF at ``path`` (None: the bundled model). The old model is freed
        and the new one loaded on the loader thread; the window stays responsive and says
        so when the new model is ready (or why it failed)."""
        app = self.app
        controller = app.controller
        if controller.loading:
            app._say("app.wait_loading")  # one switch at a time: the first must finish
            return
        chosen = path if path is not None else bundled_model_path()
        if chosen is not None:  # the bundled one too: next start opens what was chosen last
            app.change_settings(recent_models=remember_model(app.settings, chosen).recent_models)
        old = app.backends.get("llama")
        backend = app.backends["llama"] = make_backend("llama", model=path)
        app.stop()
        app.model_ready = False
        app.send_button.configure(state="disabled")
        app._say("app.loading", name=backend.name)
        current = controller.backend
        if old is not None and old is not current:
            old.close()  # idle (a lesson's scripted demo is the current backend): cheap
        controller.switch_backend(backend, unload_old=old is current)
