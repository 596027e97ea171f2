"""The settings dialog: one conversation's system prompt and sampling values, the
window's font size, and the context length of the model in use (by its file name).

Main thread only, like every widget. The dialog reads nothing and stores nothing itself: the
app hands in the current values and gets the edited ones back through ``on_apply`` when the
user saves, so it can be built and tested without ``tkchat.ui.window.chat_window`` or a database.

Nothing is applied until "Save": "Reset to defaults" only fills the fields, and "Cancel", Esc
and the window's close button drop every edit. A field that does not hold a valid value gets
a short red message beside it and nothing at all is applied, so a conversation never ends up
with half of an edit.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass, replace
from tkinter import ttk

from tkchat.conversation import (
    DEFAULT_SYSTEM_PROMPT,
    MAX_N_CTX,
    MAX_TOKENS_RANGE,
    MIN_N_CTX,
    SEED_MAX,
    TEMPERATURE_RANGE,
    TOP_P_RANGE,
    Sampling,
)
from tkchat.limits import DEFAULT_KEPT_MB, MAX_KEPT_MB
from tkchat.store.settings import FONT_SIZE_MAX, FONT_SIZE_MIN, MAX_GPU_LAYERS
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp, dp_pad
from tkchat.ui.look.theme import ERROR_STYLE, HINT_STYLE

FONT_SIZE_RANGE = (FONT_SIZE_MIN, FONT_SIZE_MAX)  # the settings file keeps the same range

FIELDS = ("temperature", "top_p", "max_tokens", "seed", "font_size")
CONTEXT = "context"  # the model's rows: only there when a local model is loaded
GPU = "gpu"
KEPT = "kept"  # the memory for kept chats (MB): a local model's row too
NOTE_STYLE = HINT_STYLE  # grey, and red for a problem: the theme's (tkchat/ui/look/theme.py)


# A field's problem, to be translated when shown: (string key, format values).
Problem = tuple[str, dict[str, object]]


def _number_text(value: float) -> str:
    """A number as the user would type it: ``0.3``, ``2``, ``0.05``."""
    return f"{value:g}"


def parse_number(text: str, low: float, high: float) -> float | Problem:
    """``text`` as a float within [low, high], or the problem with it. Pure; any thread."""
    problem: Problem = (
        "settings.error.number",
        {"low": _number_text(low), "high": _number_text(high)},
    )
    try:
        value = float(text.strip())
    except ValueError:
        return problem
    if not low <= value <= high:  # also false for nan
        return problem
    return value


def parse_integer(text: str, low: int, high: int) -> int | Problem:
    """``text`` as a whole number within [low, high], or the problem with it. Pure."""
    problem: Problem = ("settings.error.integer", {"low": low, "high": high})
    try:
        value = int(text.strip())
    except ValueError:
        return problem
    return value if low <= value <= high else problem


def parse_seed(text: str) -> int | None | Problem:
    """Blank means "a new random seed each time" (None), else a whole number from 0 to
    :data:`SEED_MAX`. Pure."""
    if not text.strip():
        return None
    value = parse_integer(text, 0, SEED_MAX)
    return ("settings.error.seed", {"high": SEED_MAX}) if isinstance(value, tuple) else value


def parse_context(text: str) -> int | None | Problem:
    """Blank means "automatic" (None: the model's trained context, capped), else a whole
    number of tokens from MIN_N_CTX to MAX_N_CTX. Pure."""
    if not text.strip():
        return None
    value = parse_integer(text, MIN_N_CTX, MAX_N_CTX)
    if isinstance(value, tuple):
        return ("settings.error.context", {"low": MIN_N_CTX, "high": f"{MAX_N_CTX:,}"})
    return value


def parse_gpu_layers(text: str) -> int | None | Problem:
    """Blank or "auto" means automatic (None), "all" every layer (-1), else a whole number of
    layers from 0 (the CPU only) to MAX_GPU_LAYERS. Pure."""
    word = text.strip().lower()
    if word in ("", "auto"):
        return None
    if word == "all":
        return -1
    value = parse_integer(word, 0, MAX_GPU_LAYERS)
    return ("settings.error.gpu", {}) if isinstance(value, tuple) else value


def gpu_text(layers: int | None) -> str:
    """The GPU field's text for a setting (the inverse of :func:`parse_gpu_layers`)."""
    return "" if layers is None else "all" if layers < 0 else str(layers)


NOTE_WRAP = 460  # pixels at 96 dpi: a note beside a field wraps here


@dataclass(frozen=True)
class ModelContext:
    """The local model's rows: which model file, the context chosen for it (None:
    automatic) and the context automatic gives it (its trained context, capped); the GPU
    offload chosen (None: automatic) and whether this llama-cpp-python can offload at all."""

    model: str
    chosen: int | None
    automatic: int
    gpu_layers: int | None = None
    gpu_supported: bool = False
    kept_mb: int = DEFAULT_KEPT_MB


class ChatSettingsDialog(tk.Toplevel):
    """The settings of one conversation, plus the window's font size.

    Main thread only: build it, drive it and let it call back from Tk's event loop.
    ``on_apply(system_prompt, sampling, font_size)`` is called on the main thread, once, when
    the user saves valid values; the dialog closes right after. ``sampling`` is the given
    one with the edited fields replaced (``top_k`` and ``repeat_penalty``, which the dialog
    does not show, are kept); ``font_size`` is None when it equals ``default_font_size`` (the
    window follows the default). With a ``model_context`` the window part has a row for the
    loaded model's context, GPU offload and memory for kept chats, and ``on_model(n_ctx,
    gpu_layers, kept_mb, reload)`` is called after ``on_apply`` when any was changed (None:
    automatic), or when the user chose "Save and reload the model" (``reload`` True: load
    the model again now, rather than at its next load). Cancel, Esc and the close button
    call nothing.

    The dialog is transient to ``master``'s window but does not grab the pointer or keyboard.
    ``translate`` gives the fixed strings (``tkchat/i18n/settings_dialog.py``) and tells the
    dialog when
    the language changes.
    """

    def __init__(
        self,
        master: tk.Misc,
        *,
        translate: Translator,
        system_prompt: str,
        sampling: Sampling,
        font_size: int | None,
        default_font_size: int,
        on_apply: Callable[[str, Sampling, int | None], None],
        model_context: ModelContext | None = None,
        on_model: Callable[[int | None, int | None, int, bool], None] = (
            lambda _c, _g, _k, _r: None
        ),
    ) -> None:
        super().__init__(master)
        self.translate = translate
        self.on_apply = on_apply
        self.model_context = model_context
        self.on_model = on_model
        self.sampling = sampling
        self.default_font_size = default_font_size
        self.closed = False
        self._problems: dict[str, Problem] = {}
        self.chosen_context: int | None = model_context.chosen if model_context else None
        self.chosen_gpu: int | None = model_context.gpu_layers if model_context else None
        self.chosen_kept = model_context.kept_mb if model_context else DEFAULT_KEPT_MB

        self.withdraw()  # shown once laid out and placed, so it does not jump
        self.transient(master.winfo_toplevel())
        self.title(translate("settings.title"))
        self.protocol("WM_DELETE_WINDOW", self.cancel)

        body = ttk.Frame(self, padding=dp(self, 12))
        body.pack(fill="both", expand=True)
        body.columnconfigure(0, weight=1)
        body.rowconfigure(0, weight=1)

        # -- this conversation -------------------------------------------------------------
        chat = ttk.LabelFrame(body, padding=dp_pad(self, 10, 6, 10, 10))
        translate.bind(chat, "settings.conversation")
        chat.grid(row=0, column=0, sticky="nsew")
        chat.columnconfigure(0, weight=1)
        chat.rowconfigure(1, weight=1)

        prompt_label = ttk.Label(chat, anchor="w")
        translate.bind(prompt_label, "settings.system_prompt")
        prompt_label.grid(row=0, column=0, columnspan=2, sticky="w")
        self.prompt = tk.Text(
            chat,
            wrap="word",
            width=60,
            height=6,
            undo=True,
            font="TkTextFont",
            padx=dp(self, 4),
            pady=dp(self, 4),
        )
        prompt_scroll = ttk.Scrollbar(chat, orient="vertical", command=self.prompt.yview)
        self.prompt.configure(yscrollcommand=prompt_scroll.set)
        self.prompt.grid(row=1, column=0, sticky="nsew", pady=dp_pad(self, 2, 8))
        prompt_scroll.grid(row=1, column=1, sticky="ns", pady=dp_pad(self, 2, 8))
        # In a dialog Tab moves on (a prompt rarely needs a tab character), and Ctrl+Enter
        # must save without first inserting a newline.
        self.prompt.bind("<Tab>", self._focus_next)
        self.prompt.bind("<Shift-Tab>", self._focus_prev)
        self.prompt.bind("<ISO_Left_Tab>", self._focus_prev)

        grid = ttk.Frame(chat)
        grid.grid(row=2, column=0, columnspan=2, sticky="ew")
        grid.columnconfigure(2, weight=1)
        self.labels: dict[str, ttk.Label] = {}
        self.notes: dict[str, ttk.Label] = {}
        self.temperature = self._field_row(grid, 0, "temperature", "settings.temperature")
        self.top_p = self._field_row(grid, 1, "top_p", "settings.top_p")
        self.max_tokens = self._field_row(grid, 2, "max_tokens", "settings.max_tokens")
        self.seed = self._field_row(grid, 3, "seed", "settings.seed")
        self.sampling_hint = ttk.Label(
            chat, style=NOTE_STYLE, anchor="w", justify="left", wraplength=440
        )
        translate.bind(self.sampling_hint, "settings.sampling_hint")
        self.sampling_hint.grid(row=3, column=0, columnspan=2, sticky="ew", pady=(dp(self, 6), 0))
        # The hint wraps to the dialog's width rather than widening it.
        chat.bind(
            "<Configure>",
            lambda e: self.sampling_hint.configure(wraplength=max(200, e.width - 24)),
            add="+",
        )

        self._build_window_part(body, model_context)

        # -- buttons ----------------------------------------------------------------------
        buttons = ttk.Frame(body)
        buttons.grid(row=2, column=0, sticky="ew", pady=(dp(self, 12), 0))
        buttons.columnconfigure(1, weight=1)
        self.reset_button = ttk.Button(buttons, command=self.reset)
        self.cancel_button = ttk.Button(buttons, command=self.cancel)
        self.save_button = ttk.Button(buttons, command=self.save, default="active")
        translate.bind(self.reset_button, "settings.reset")
        translate.bind(self.cancel_button, "settings.cancel")
        translate.bind(self.save_button, "settings.save")
        self.reset_button.grid(row=0, column=0, sticky="w")
        self.cancel_button.grid(row=0, column=2, padx=(0, dp(self, 6)))
        self.save_button.grid(row=0, column=3)

        for sequence in ("<Control-Return>", "<Control-KP_Enter>"):
            self.bind(sequence, self._on_save_key)
            self.prompt.bind(sequence, self._on_save_key)  # before Text inserts a newline
        self.bind("<Escape>", lambda _e: self.cancel())

        self._fill(system_prompt, sampling, default_font_size if font_size is None else font_size)
        translate.on_change(self._on_language_changed)
        self._show_notes()
        self._place_over(master)
        self.prompt.focus_set()

    # -- public --------------------------------------------------------------------------------

    def validate(self) -> tuple[str, Sampling, int | None] | None:
        """What Save would apply, or None when a field is invalid. Every field is checked:
        each invalid one shows its message beside it, the valid ones their usual hint."""
        temperature = parse_number(self.temperature.get(), *TEMPERATURE_RANGE)
        top_p = parse_number(self.top_p.get(), *TOP_P_RANGE)
        max_tokens = parse_integer(self.max_tokens.get(), *MAX_TOKENS_RANGE)
        seed = parse_seed(self.seed.get())
        font_size = parse_integer(self.font_size.get(), *FONT_SIZE_RANGE)
        parsed = dict(zip(FIELDS, (temperature, top_p, max_tokens, seed, font_size), strict=True))
        context = parse_context(self.context.get()) if self.context is not None else None
        gpu = parse_gpu_layers(self.gpu.get()) if self.gpu is not None else None
        kept = (
            parse_integer(self.kept.get(), 0, MAX_KEPT_MB)
            if self.kept is not None
            else self.chosen_kept
        )
        parsed[CONTEXT], parsed[GPU], parsed[KEPT] = context, gpu, kept
        self._problems = {name: value for name, value in parsed.items() if isinstance(value, tuple)}
        self._show_notes()
        if isinstance(context, tuple) or isinstance(gpu, tuple) or isinstance(kept, tuple):
            return None
        self.chosen_context, self.chosen_gpu, self.chosen_kept = context, gpu, kept
        if (
            isinstance(temperature, tuple)
            or isinstance(top_p, tuple)
            or isinstance(max_tokens, tuple)
            or isinstance(seed, tuple)
            or isinstance(font_size, tuple)
        ):
            return None
        sampling = replace(
            self.sampling, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed
        )
        prompt = self.prompt.get("1.0", "end-1c")
        return prompt, sampling, None if font_size == self.default_font_size else font_size

    def errors(self) -> dict[str, str]:
        """The message shown beside each invalid field, by field name (see :data:`FIELDS`),
        as of the last check (Save or :meth:`validate`)."""
        return {
            name: self.translate(key, **values) for name, (key, values) in self._problems.items()
        }

    def save(self, reload: bool = False) -> None:
        """Validate every field; if all are valid apply them and close, else show why.
        ``reload`` (the model's "Save and reload the model"): also load the model again now,
        so its context and GPU offload apply at once."""
        if self.closed:
            return
        result = self.validate()
        if result is None:
            self._focus_first_problem()
            return
        self.on_apply(*result)
        model = self.model_context
        chosen = (self.chosen_context, self.chosen_gpu, self.chosen_kept)
        if model is not None and (
            reload or chosen != (model.chosen, model.gpu_layers, model.kept_mb)
        ):
            self.on_model(*chosen, reload)
        self._close()

    def cancel(self) -> None:
        """Close without applying anything."""
        self._close()

    def reset(self) -> None:
        """Fill the fields with the defaults (the default prompt, :class:`Sampling`'s values
        and the default font size). Nothing is applied until Save."""
        self._fill(DEFAULT_SYSTEM_PROMPT, Sampling(), self.default_font_size)
        for automatic in (self.context, self.gpu):
            if automatic is not None:
                automatic.delete(0, "end")
        if self.kept is not None:
            self.kept.delete(0, "end")
            self.kept.insert(0, str(DEFAULT_KEPT_MB))
        self._problems = {}
        self._show_notes()

    def destroy(self) -> None:
        self.closed = True
        self.translate.forget(self)
        super().destroy()

    # -- building ------------------------------------------------------------------------------

    def _build_window_part(self, body: ttk.Frame, model: ModelContext | None) -> None:
        """The window's text size and, for a local model, its context and GPU offload: both
        apply when the model is next loaded (llama.cpp sizes its cache and places its layers
        at load, so changing them means loading again), or at once with "Save and reload the
        model" (not offered for the scripted backend or a server: nothing to load again); and
        the memory for kept chats, which applies at once."""
        window = ttk.LabelFrame(body, padding=dp_pad(self, 10, 6, 10, 10))
        self.translate.bind(window, "settings.window")
        window.grid(row=1, column=0, sticky="ew", pady=(dp(self, 10), 0))
        window.columnconfigure(2, weight=1)
        low, high = FONT_SIZE_RANGE
        self.font_size = ttk.Spinbox(
            window, from_=low, to=high, increment=1, width=8, format="%.0f"
        )
        self._field_row(window, 0, "font_size", "settings.font_size", entry=self.font_size)
        self.context: ttk.Entry | None = None
        self.gpu: ttk.Entry | None = None
        self.reload_button: ttk.Button | None = None
        self.kept: ttk.Entry | None = None
        if model is not None:
            self.context = self._field_row(window, 1, CONTEXT, "settings.context")
            self.context.insert(0, "" if model.chosen is None else str(model.chosen))
            self.gpu = self._field_row(window, 2, GPU, "settings.gpu")
            self.gpu.insert(0, gpu_text(model.gpu_layers))
            self.kept = self._field_row(window, 3, KEPT, "settings.kept")
            self.kept.insert(0, str(model.kept_mb))
            self.reload_button = ttk.Button(window, command=lambda: self.save(reload=True))
            self.translate.bind(self.reload_button, "settings.reload")
            self.reload_button.grid(row=4, column=0, columnspan=2, sticky="w", pady=dp(self, 4))
            reload_hint = self._note(window)
            self.translate.bind(reload_hint, "settings.reload_hint")
            reload_hint.grid(row=4, column=2, sticky="w", pady=dp(self, 4))

    def _field_row(
        self, parent: tk.Misc, row: int, name: str, key: str, entry: ttk.Entry | None = None
    ) -> ttk.Entry:
        label = ttk.Label(parent, anchor="w")
        self.translate.bind(label, key)
        if entry is None:
            entry = ttk.Entry(parent, width=10)
        note = self._note(parent)
        gap = dp(self, 2)
        label.grid(row=row, column=0, sticky="w", pady=gap)
        entry.grid(row=row, column=1, sticky="w", padx=dp_pad(self, 8, 8), pady=gap)
        note.grid(row=row, column=2, sticky="w", pady=gap)
        self.labels[name] = label
        self.notes[name] = note
        return entry

    def _note(self, parent: tk.Misc) -> ttk.Label:
        """A grey note beside a field, wrapped at :data:`NOTE_WRAP` (scaled): the longest
        (a CPU-only build's GPU hint) made the dialog wider than a 1280-pixel screen, and Save
        was off it."""
        return ttk.Label(
            parent, style=NOTE_STYLE, anchor="w", justify="left", wraplength=dp(self, NOTE_WRAP)
        )

    def _place_over(self, master: tk.Misc) -> None:
        """Show the dialog near the top-left of its owner's window, and on the screen."""
        self.update_idletasks()
        owner = master.winfo_toplevel()
        if owner.winfo_viewable():
            right = self.winfo_screenwidth() - self.winfo_reqwidth()
            bottom = self.winfo_screenheight() - self.winfo_reqheight()
            x = max(0, min(owner.winfo_rootx() + 40, right))
            y = max(0, min(owner.winfo_rooty() + 40, bottom))
            self.geometry(f"+{x}+{y}")
        self.deiconify()

    # -- fields --------------------------------------------------------------------------------

    def _fill(self, prompt: str, sampling: Sampling, font_size: int) -> None:
        self.prompt.delete("1.0", "end")
        self.prompt.insert("1.0", prompt)
        self.prompt.edit_reset()
        for entry, text in (
            (self.temperature, _number_text(sampling.temperature)),
            (self.top_p, _number_text(sampling.top_p)),
            (self.max_tokens, str(sampling.max_tokens)),
            (self.seed, "" if sampling.seed is None else str(sampling.seed)),
            (self.font_size, str(font_size)),
        ):
            entry.delete(0, "end")
            entry.insert(0, text)

    def _hint(self, name: str) -> str:
        if name == "seed":
            return self.translate("settings.seed_hint")
        if name == "font_size":
            return self.translate("settings.font_hint", size=self.default_font_size)
        if name == CONTEXT and self.model_context is not None:
            return self.translate(
                "settings.context_hint",
                automatic=f"{self.model_context.automatic:,}",
                model=self.model_context.model,
            )
        if name == GPU and self.model_context is not None:
            built = "with" if self.model_context.gpu_supported else "without"
            return self.translate(f"settings.gpu_hint.{built}")
        if name == KEPT:
            return self.translate("settings.kept_hint", default=DEFAULT_KEPT_MB)
        low, high = {
            "temperature": TEMPERATURE_RANGE,
            "top_p": TOP_P_RANGE,
            "max_tokens": MAX_TOKENS_RANGE,
        }[name]
        return self.translate("settings.range", low=_number_text(low), high=_number_text(high))

    def _show_notes(self) -> None:
        """Beside each field: its problem in red, else a grey hint (its range)."""
        errors = self.errors()
        for name, note in self.notes.items():
            if name in errors:
                note.configure(text=errors[name], style=ERROR_STYLE)
            else:
                note.configure(text=self._hint(name), style=NOTE_STYLE)

    def _entry(self, name: str) -> ttk.Entry:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "font_size": self.font_size,
            CONTEXT: self.context or self.font_size,
            GPU: self.gpu or self.font_size,
            KEPT: self.kept or self.font_size,
        }[name]

    def _focus_first_problem(self) -> None:
        for name in (*FIELDS, CONTEXT, GPU, KEPT):
            if name in self._problems:
                entry = self._entry(name)
                entry.focus_set()
                entry.select_range(0, "end")
                entry.icursor("end")
                return

    # -- events --------------------------------------------------------------------------------

    def _on_save_key(self, _event: tk.Event) -> str:
        self.save()
        return "break"

    def _focus_next(self, event: tk.Event) -> str:
        widget = event.widget.tk_focusNext()
        if widget is not None:
            widget.focus_set()
        return "break"

    def _focus_prev(self, event: tk.Event) -> str:
        widget = event.widget.tk_focusPrev()
        if widget is not None:
            widget.focus_set()
        return "break"

    def _close(self) -> None:
        # on_apply may already have closed the dialog (e.g. the app closed its window).
        if not self.closed and self.winfo_exists():
            self.destroy()
        self.closed = True

    def _on_language_changed(self, _lang: str) -> None:
        # (destroy() has the translator forget it: a call may still come while it closes)
        if self.closed or not self.winfo_exists():
            return
        self.title(self.translate("settings.title"))
        self._show_notes()
