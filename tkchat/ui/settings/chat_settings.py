"""The settings dialog in the window (Ctrl+,): what it is opened with, and where its answers go.

The dialog (:mod:`tkchat.ui.settings.dialog`) reads and stores nothing itself. This hands it
the current values and puts the edited ones back: the conversation's system prompt and
sampling (into the session, into its saved copy, and as the defaults of new chats), the
window's text size, the context length for the local model in use — remembered by the
model's file name — and the GPU offload of local models, both used from the next load,
because llama.cpp sizes its cache and places its layers when it loads; the dialog's "Save
and reload the model" loads the model in use again at once (:meth:`ModelSwitch.reload`), and
puts the two back should that load fail. After a change the
context meter and the draft's count are measured again: the same conversation may now take
more room, or less.

Main thread only (the counts themselves run on the controller's thread).
"""

from __future__ import annotations

from collections.abc import Callable

from tkchat.conversation import Sampling
from tkchat.generate.llama_backend import LlamaBackend, auto_n_ctx
from tkchat.ui.base.services import Services
from tkchat.ui.chats.history import History
from tkchat.ui.settings.dialog import ChatSettingsDialog, ModelContext, gpu_text
from tkchat.ui.settings.text_size import TextSize
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE


class ChatSettings:
    """Opens the settings dialog over the window and applies what it returns.

    Of the window's services: ``session`` is the conversation being set, ``remembered`` the
    defaults of new chats, the text size and the contexts chosen per model. ``archive`` is
    the conversation's saved copy (None: the window keeps no history); ``text_size`` sets the
    size. ``model_ready()`` says whether a model has loaded (a local one offers its context
    length); ``measure_context()`` measures the context meter and the draft's count again
    after a change. ``on_closed()`` runs when the dialog goes (the window gives the typing
    back to the message box). ``reload_model(undo)`` loads the model in use again with the
    settings' context and GPU offload, ``undo()`` should that fail; it says whether it
    began (:meth:`tkchat.ui.models.switch.ModelSwitch.reload`)."""

    def __init__(
        self,
        services: Services,
        archive: History | None,
        text_size: TextSize,
        *,
        model_ready: Callable[[], bool],
        measure_context: Callable[[], None],
        on_closed: Callable[[], object],
        reload_model: Callable[[Callable[[], None]], bool],
    ) -> None:
        self.root = services.root
        self.t = services.translate
        self.status = services.status
        self.controller = services.controller
        self.session = services.session
        self.remembered = services.remembered
        self.archive = archive
        self.text_size = text_size
        self.model_ready = model_ready
        self.measure_context = measure_context
        self.on_closed = on_closed
        self.reload_model = reload_model
        self.dialog: ChatSettingsDialog | None = None

    def open(self) -> None:
        """The conversation's system prompt and sampling, and the text size (Ctrl+,); the
        open dialog is raised instead of a second one."""
        if self.dialog is not None and self.dialog.winfo_exists():
            self.dialog.lift()
            return
        self.dialog = ChatSettingsDialog(
            self.root,
            translate=self.t,
            system_prompt=self.session.system_prompt,
            sampling=self.session.sampling,
            font_size=self.remembered.current.font_size,
            default_font_size=BODY_FONT_SIZE,
            on_apply=self.apply,
            model_context=self.model_context(),
            on_model=self.choose_model,
        )
        self.dialog.bind("<Destroy>", lambda _e: self.on_closed(), add="+")

    def apply(self, system_prompt: str, sampling: Sampling, font_size: int | None) -> None:
        """From the next answer on: this conversation's prompt and sampling (saved with it),
        also the defaults of new conversations; the text size for the whole window."""
        self.session.configure(system_prompt, sampling)
        if self.archive is not None:
            self.archive.save_settings(system_prompt, sampling)
        size = self.text_size.set(font_size or BODY_FONT_SIZE, save=False)
        self.remembered.change(  # one write for all three
            system_prompt=system_prompt,
            sampling=sampling,
            font_size=None if size == BODY_FONT_SIZE else size,
        )
        self.status.say("app.settings_saved")
        self.measure_context()

    def model_context(self) -> ModelContext | None:
        """The dialog's context row: for a local model that has loaded, else none (a server
        fits its own context; the scripted backend has none to choose)."""
        backend = self.controller.backend
        if not self.model_ready() or not isinstance(backend, LlamaBackend):
            return None
        chosen = self.remembered.current.model_contexts.get(backend.file_name or backend.name)
        offload = backend.offload
        return ModelContext(
            backend.name,
            chosen,
            auto_n_ctx(backend.n_ctx_train),
            gpu_layers=self.remembered.current.gpu_layers,
            gpu_supported=offload is not None and offload.supported,
            kept_mb=self.remembered.current.kept_mb,
        )

    def choose_model(
        self, n_ctx: int | None, gpu_layers: int | None, kept_mb: int, reload: bool
    ) -> None:
        """What the model rows say, from the next load: the context for the model in use,
        and the GPU offload of every local model; at once, the memory for kept chats; with
        ``reload`` ("Save and reload the model"), from now: the model loads again, the one
        loaded answering nothing meanwhile (Send waits, as at start-up) and staying in use
        should the new load fail."""
        model = self.dialog.model_context if self.dialog is not None else None
        before = self.remembered.current
        if model is not None and kept_mb != model.kept_mb:
            self.remembered.change(kept_mb=kept_mb)
            self.controller.kept_states.limit = kept_mb * 1_000_000  # any thread may set it
            self.status.say("app.kept_chosen", mb=f"{kept_mb:,}")
            if not reload and (n_ctx, gpu_layers) == (model.chosen, model.gpu_layers):
                return
        if model is not None and gpu_layers != model.gpu_layers:
            self.remembered.change(gpu_layers=gpu_layers)
            shown = self.t("app.context_auto") if gpu_layers is None else gpu_text(gpu_layers)
            self.status.say("app.gpu_chosen", layers=shown)
        if model is None or n_ctx != model.chosen:
            self.choose_context(n_ctx)
        if reload:

            def undo() -> None:
                """The reload failed: the settings as they were, which the model in use
                loaded with (the next start would fail as the reload did)."""
                self.remembered.change(
                    model_contexts=before.model_contexts, gpu_layers=before.gpu_layers
                )

            self.reload_model(undo)

    def choose_context(self, n_ctx: int | None) -> None:
        """The context for the model in use (None: automatic), remembered by its file name;
        llama.cpp sizes its cache at load, so it applies the next time the model loads."""
        backend = self.controller.backend
        name = backend.name
        # by the file's name, as the model is loaded (not by a label it is shown with)
        key = backend.file_name if isinstance(backend, LlamaBackend) and backend.file_name else name
        contexts = dict(self.remembered.current.model_contexts)
        if n_ctx is None:
            contexts.pop(key, None)
        else:
            contexts[key] = n_ctx
        self.remembered.change(model_contexts=contexts)
        shown = self.t("app.context_auto") if n_ctx is None else f"{n_ctx:,}"
        self.status.say("app.context_chosen", model=name, n_ctx=shown)
