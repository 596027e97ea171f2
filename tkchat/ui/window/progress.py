"""The progress bar: what the window is waiting for, before there is anything to show.

Two waits have no text to stream: the model reading a long prompt and a model loading. Both
get a bar in the status row, beside the status line, which disappears when the wait ends; it
sits in a row that is there anyway, so showing it moves nothing else in the window.

- Reading: the status line itself says it, while it lasts — "Reading your message … 1,234 /
  4,426 tokens · about 12 s left (Esc stops)" — and says again what it said before once the
  first text arrives (unless something else has been said meanwhile).
- Loading: the status line already says "Loading … …"; the bar adds "45 % loaded".

The figures come from events (``progress``, ``model_loading``) that the 16 ms tick already
drains: :meth:`ProgressLine.follow` reads each tick's result, and the widgets are touched at
most a few times a second, as often as such events come.

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable
from tkinter import ttk

from tkchat.consume.stream_consumer import TickResult
from tkchat.events import ModelFailed, ModelLoading, ModelReady, Progress
from tkchat.ui.base.status import StatusLine
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp

ETA_AFTER_S = 0.5  # an estimate needs some speed measured first


class ProgressLine(ttk.Frame):
    """A short label and a bar, hidden while there is nothing to wait for. Packed into the
    status row just before ``status``, so the bar keeps its room."""

    def __init__(self, master: tk.Misc, translate: Translator, *, status: StatusLine) -> None:
        super().__init__(master)
        self.t = translate
        self.status = status
        self.label = ttk.Label(self, anchor="e")
        self.bar = ttk.Progressbar(self, length=dp(master, 120), maximum=1.0, mode="determinate")
        self.label.pack(side="left", padx=(0, 6))
        self.bar.pack(side="left")
        self.kind: str | None = None  # "reading", "loading" or None (hidden)
        self._label: Callable[[], str] = lambda: ""
        self._said_before: Callable[[], str] | None = None  # the status line before reading
        self._saying: Callable[[], str] | None = None  # what reading put in the status line
        self._gen: int | None = None
        self._first: tuple[float, int] | None = None  # (when, done) of this prompt's first report
        translate.on_change(lambda _lang: self._relabel())

    @property
    def showing(self) -> bool:
        return self.kind is not None

    def follow(self, tick: TickResult) -> None:
        """One tick's news: load progress, prompt progress, or the wait being over (the first
        text or the end of the answer; a loaded or failed model)."""
        for event in tick.app_events:
            if isinstance(event, ModelLoading):
                self.loading(event.fraction)
            elif isinstance(event, (ModelReady, ModelFailed)):
                self.hide("loading")
        if tick.progress is not None:
            self.reading(tick.progress)
        if tick.chunks or tick.final is not None:
            self.hide("reading")

    def reading(self, progress: Progress, now: float | None = None) -> None:
        """The prompt is ``progress.done`` / ``progress.total`` read."""
        now = time.perf_counter() if now is None else now
        if progress.gen != self._gen or self._first is None:
            self._gen, self._first = progress.gen, (now, progress.done)
        done, total = progress.done, progress.total
        eta = self._eta(done, total, now)

        def say() -> str:
            text = self.t("progress.reading", done=f"{done:,}", total=f"{total:,}")
            if eta is not None:
                key = "progress.eta_min" if eta >= 90 else "progress.eta_s"
                text += self.t(key, seconds=max(1, round(eta)), minutes=round(eta / 60))
            return text + self.t("progress.reading.stop")

        if self._saying is None or self.status.current is not self._saying:
            self._said_before = self.status.current
        self._saying = say
        self.status.show(say)
        self._show("reading", lambda: "", done / total if total else 1.0)

    def loading(self, fraction: float) -> None:
        """A model is loading, ``fraction`` done (the status line names it already)."""
        percent = round(fraction * 100)
        self._show("loading", lambda: self.t("progress.loading", percent=percent), fraction)

    def hide(self, kind: str | None = None) -> None:
        """The wait is over (or was stopped); ``kind``: only if it is that wait."""
        if self.kind is None or kind not in (None, self.kind):
            return
        if self.kind == "reading" and self._saying is not None:
            if self.status.current is self._saying and self._said_before is not None:
                self.status.show(self._said_before)  # nobody has said anything since
            self._saying = self._said_before = None
        self.kind = None
        self._first = None
        self.pack_forget()

    def _relabel(self) -> None:
        self.label.configure(text=self._label())

    def _eta(self, done: int, total: int, now: float) -> float | None:
        """Seconds left at the speed measured since this prompt's first report."""
        assert self._first is not None
        began, first_done = self._first
        if now - began < ETA_AFTER_S or done <= first_done:
            return None
        speed = (done - first_done) / (now - began)
        return (total - done) / speed

    def _show(self, kind: str, label: Callable[[], str], fraction: float) -> None:
        self._label = label
        self.label.configure(text=label())
        self.bar.configure(value=min(1.0, max(0.0, fraction)))
        if self.kind is None:
            self.pack(side="right", padx=(8, 8), before=self.status)
        self.kind = kind
