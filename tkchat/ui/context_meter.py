"""The context meter: how much of the model's context the conversation takes.

"1,234 / 4,096 tokens" beside the status line, amber above 75 %, red when earlier messages
are left out (the policy of :mod:`tkchat.generate.context`). The figures come from the
worker (``prompt_tokens`` and ``tokens``, plain ints it updates as it goes) or, for a
conversation just opened, from a count on a thread
(:meth:`~tkchat.generate.controller.GenerationController.measure_context`).

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk

from tkchat.i18n import Translator

WARN_AT = 0.75
NORMAL, WARN, FULL = "#555555", "#a15c00", "#b00020"


class ContextMeter(ttk.Label):
    """One label. ``show(used, n_ctx, dropped)``; ``clear()`` when nothing is known."""

    def __init__(self, master: tk.Misc, translate: Translator) -> None:
        super().__init__(master, anchor="e")
        self.t = translate
        self.used: int | None = None
        self.n_ctx: int | None = None
        self.dropped = 0
        translate.on_change(lambda _lang: self._draw())

    def show(self, used: int, n_ctx: int, dropped: int = 0) -> None:
        if (used, n_ctx, dropped) != (self.used, self.n_ctx, self.dropped):
            self.used, self.n_ctx, self.dropped = used, n_ctx, dropped
            self._draw()

    def clear(self, n_ctx: int | None = None) -> None:
        self.used, self.n_ctx, self.dropped = None, n_ctx, 0
        self._draw()

    @property
    def fraction(self) -> float | None:
        if self.used is None or not self.n_ctx:
            return None
        return self.used / self.n_ctx

    def _draw(self) -> None:
        if self.n_ctx is None:
            self.configure(text="")
            return
        used = "—" if self.used is None else f"{self.used:,}"
        text = self.t("context.meter", used=used, n_ctx=f"{self.n_ctx:,}")
        if self.dropped:
            text += self.t("context.meter.dropped", dropped=self.dropped)
        fraction = self.fraction or 0.0
        colour = FULL if self.dropped else WARN if fraction >= WARN_AT else NORMAL
        self.configure(text=text, foreground=colour)
