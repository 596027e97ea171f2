"""The context meter: how much of the model's context the conversation takes.

"1,234 / 4,096 tokens" beside the status line ("4,096 tokens" before anything is counted),
amber above 75 %, red when earlier messages are left out (the policy of
:mod:`tkchat.generate.context`). The figures come from the worker (``prompt_tokens`` and
``tokens``, plain ints it updates as it goes) or, for a conversation just opened, from a count
on a thread (:meth:`~tkchat.generate.controller.GenerationController.measure_context`).

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
import tkinter.font as tkfont
from tkinter import ttk

from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import ContextMeasure
from tkchat.ui.base.services import Services
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import ellipsize
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, palette_of
from tkchat.ui.transcript.transcript import Transcript

WARN_AT = 0.75
STATUS_ROOM = 160  # design pixels the meter leaves the status line beside it, when cut
FOLLOW_EVERY_S = 0.25  # the meter follows a streaming answer at most this often


class ContextMeter(ttk.Label):
    """One label. ``show(used, n_ctx, dropped)``; ``clear()`` when nothing is known. A row
    too narrow for the whole text (big text beside the lesson panel) shows it cut with "…";
    :attr:`full` is the whole text."""

    def __init__(self, master: tk.Misc, translate: Translator) -> None:
        super().__init__(master, anchor="e")
        self.t = translate
        self.full = ""
        master.bind("<Configure>", lambda _e: self._fit(), add="+")
        self.used: int | None = None
        self.n_ctx: int | None = None
        self.dropped = 0
        self.trained: int | None = None  # the model's trained context, when it says
        translate.on_change(lambda _lang: self._draw())
        follow_theme(self, lambda _palette: self._draw())

    def show(self, used: int, n_ctx: int, dropped: int = 0) -> None:
        if (used, n_ctx, dropped) != (self.used, self.n_ctx, self.dropped):
            self.used, self.n_ctx, self.dropped = used, n_ctx, dropped
            self._draw()

    def set_trained(self, trained: int | None) -> None:
        """The loaded model's trained context: shown beside the context it was given when
        that is less (a user who wonders why long chats lose their start sees the room)."""
        self.trained = trained
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
            self.full = ""
            self.configure(text="")
            return
        n_ctx = f"{self.n_ctx:,}"
        if self.used is None:  # nothing counted yet: the context's size, in fewer characters
            # ("— / " left the status line beside it too little room for a demo's keys at
            # 1280×720 in projector mode, once a scripted flood's context had six digits)
            text = self.t("context.meter.size", n_ctx=n_ctx)
        else:
            text = self.t("context.meter", used=f"{self.used:,}", n_ctx=n_ctx)
        if self.trained and self.trained > self.n_ctx:
            text += self.t("context.meter.trained", trained=f"{self.trained:,}")
        if self.dropped == 1:
            text += self.t("context.meter.dropped_one")
        elif self.dropped:
            text += self.t("context.meter.dropped", dropped=self.dropped)
        fraction = self.fraction or 0.0
        palette = palette_of(self)
        colour = (
            palette.error
            if self.dropped
            else palette.warn
            if fraction >= WARN_AT
            else palette.muted
        )
        self.full = text
        self.configure(foreground=colour)
        self._fit()

    def _fit(self) -> None:
        """The whole text if the row has room for it, else as much as fits, with "…"."""
        room = self.master.winfo_width() - dp(self, STATUS_ROOM)
        font = tkfont.nametofont(str(self.cget("font") or "TkDefaultFont"), root=self)
        self.configure(text=ellipsize(font, self.full, room) if room > 1 else self.full)


class ContextWatch:
    """Keeps the meter current and writes the policy's note into the transcript.

    Main thread only. ``follow`` while an answer streams, ``after`` when it ends, ``measure``
    when a conversation is opened (a thread counts; this polls), ``rewound`` when messages
    are taken back (edit, regenerate), ``reset`` for another conversation.
    """

    def __init__(self, meter: ContextMeter, transcript: Transcript, services: Services) -> None:
        self.meter = meter
        self.transcript = transcript
        self.controller = services.controller
        self.scheduler = services.scheduler
        self.t = services.translate
        self._measure: ContextMeasure | None = None
        self._followed_at = 0.0
        self._shown = 0  # left-out messages the transcript has already told about
        self._notes: list[tuple[int, int]] = []  # (messages before the note, left out)

    def reset(self, n_ctx: int | None) -> None:
        self.meter.clear(n_ctx)
        self._shown, self._notes = 0, []

    def follow(self) -> None:
        """While an answer streams: prompt plus answer so far, a few times a second."""
        now = time.perf_counter()
        worker = self.controller.running  # a worker, or an asyncio task (tkchat/aio/)
        if worker is None or not worker.prompt_tokens or now - self._followed_at < FOLLOW_EVERY_S:
            return
        self._followed_at = now
        self.meter.show(
            worker.prompt_tokens + worker.tokens,
            self.controller.backend.n_ctx,
            worker.context_dropped,
        )

    def after(self, final: Done | Error) -> None:
        """After an answer: the meter's final figure, and the policy's note if messages were
        left out for the first time (or more of them than before)."""
        stats = final.stats
        self._followed_at = 0.0
        if not stats.prompt_tokens:
            return
        n_ctx = self.controller.backend.n_ctx
        self.meter.show(stats.prompt_tokens + stats.tokens, n_ctx, stats.context_dropped)
        if stats.context_dropped > self._shown:
            self._shown = stats.context_dropped
            self._notes.append(
                (self.transcript.left_out + len(self.transcript.entries), stats.context_dropped)
            )
            self.transcript.add_note(
                self.t("context.dropped_note", n_ctx=f"{n_ctx:,}", dropped=stats.context_dropped)
            )

    def rewound(self, keep: int) -> None:
        """Only the first ``keep`` messages stay: notes after them went with the rest, so the
        next answer may need to say it again."""
        self._notes = [note for note in self._notes if note[0] <= keep]
        self._shown = self._notes[-1][1] if self._notes else 0

    def measure(self, request: GenerationRequest) -> None:
        """Count what the conversation on screen takes (a thread does it; we poll)."""
        if not any(m.role != "system" for m in request.messages):
            return
        self._measure = self.controller.measure_context(request)
        self.scheduler.once("context-measure", 20, self._measured)

    def _measured(self) -> None:
        measure = self._measure
        if measure is None:
            return
        if not measure.done.is_set():
            self.scheduler.once("context-measure", 20, self._measured)
            return
        self._measure = None
        if measure.result is not None and not self.controller.is_generating():
            fit = measure.result
            self.meter.show(fit.used, fit.n_ctx, fit.dropped)
