"""Under each answer, in small muted type, its figures as LM Studio shows them: tokens,
tokens/s, time to the first token, how it ended ("52 tokens · 128.4 tokens/s · 0.21 s to
first token · finished").

The figures come from the worker's own clock (:class:`~tkchat.events.GenerationStats`,
sent with ``done`` and ``error``; for an answer stopped by the user, what the worker had
counted when Stop was pressed: :func:`figures_of_stopped`), are saved with the answer
(:mod:`tkchat.store.figures`) and drawn again when the chat is reopened; each version of a
regenerated answer keeps its own.

The line is text in the transcript's one Text widget, tagged :data:`FIGURES_TAG`, at the start
of the answer's end notes (between its ``notes_mark`` and ``tail_mark``, where "[stopped]"
goes), so that showing another version, which replaces that stretch, replaces it too. A
language switch writes every line again.

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable, Sequence
from typing import Protocol

from tkchat.events import Done, Error
from tkchat.generate.controller import Running
from tkchat.store.figures import AnswerFigures, Ending
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme
from tkchat.ui.readonly import writable
from tkchat.ui.transcript.view_keeper import ViewKeeper

FIGURES_TAG = "figures"


class Headed(Protocol):
    """A message on screen: where its header line starts."""

    head_mark: str


class Figured(Headed, Protocol):
    """An answer on screen, as the line sees it
    (:class:`~tkchat.ui.transcript.transcript.AnswerView`)."""

    notes_mark: str
    tail_mark: str
    shown: int
    figures: dict[int, AnswerFigures]


def figures_of(final: Done | Error) -> AnswerFigures:
    """An answer's figures from its final event: the worker's count, speed and time to the
    first token, and how it ended."""
    stats = final.stats
    if isinstance(final, Error):
        ended = "error"
    else:
        ended = {"stop": "stop", "length": "length"}.get(final.reason, "stopped")
    ttft = None if stats.ttft_ms is None else stats.ttft_ms / 1000
    return AnswerFigures(stats.tokens, stats.tokens_per_s, ttft, ended)  # type: ignore[arg-type]


def figures_of_stopped(
    worker: Running, started_at: float, ended: Ending = "stopped"
) -> AnswerFigures:
    """A stopped answer's figures (or one a failing tick ended: ``ended="error"``), from
    what its worker had counted by then: its final event is dropped, since nothing of a
    stopped answer reaches the screen later. ``started_at``: when the answer began
    (``perf_counter``, the worker's own clock)."""
    first, tokens = worker.first_token_at, worker.tokens
    until = worker.cancelled_at or time.perf_counter()
    speed = (tokens - 1) / (until - first) if first is not None and tokens > 1 else None
    ttft = None if first is None else max(0.0, first - started_at)
    return AnswerFigures(tokens, speed if speed and speed > 0 else None, ttft, ended)


def figures_text(figures: AnswerFigures, translate: Callable[..., str]) -> str:
    """The line under an answer, in the window's language."""
    parts = [translate("figures.tokens", tokens=f"{figures.tokens:,}")]
    if figures.tokens_per_s is not None:
        parts.append(translate("figures.speed", speed=f"{figures.tokens_per_s:,.1f}"))
    if figures.ttft_s is not None:
        parts.append(translate("figures.first_token", seconds=f"{figures.ttft_s:.2f}"))
    parts.append(translate(f"figures.ended.{figures.ended}"))
    # A figure and its unit stay on one line when the window is narrow.
    return "  ·  ".join(part.replace(" ", NO_BREAK, 1) for part in parts)


class FiguresLines:
    """The figures line of every answer in ``text``; ``entries`` is the transcript's list
    of messages on screen, in order (the line of an answer in the middle of the chat must
    not slip into the next message). Main thread only."""

    def __init__(self, text: tk.Text, translate: Translator, entries: Sequence[Headed]) -> None:
        self.text = text
        self.t = translate
        self.entries = entries
        text.tag_configure(
            FIGURES_TAG,
            font=text.tag_cget("action", "font"),  # the links' smaller size, which follows
            lmargin1=text.tag_cget("answer", "lmargin1"),  # the text size; the answer's margin
            lmargin2=text.tag_cget("answer", "lmargin2"),
            spacing1=dp(text, 2),
        )
        follow_theme(text, lambda p: text.tag_configure(FIGURES_TAG, foreground=p.muted))
        translate.on_change(lambda _lang: self.relabel())

    def show(self, view: Figured, *, hold: bool = False, keep_view: bool = True) -> None:
        """Draw ``view``'s line for the version it shows (or none, if it has no figures),
        once its end notes are written. ``hold``: its header stays where it is on screen
        (a version flipped); otherwise a reader at the end stays at the end.
        ``keep_view=False``: the caller's keeper puts the view back (messages written in
        bulk): a second keeper here would take the one anchor mark from under it."""
        if not keep_view:
            self._draw(view)
            return
        keeper = ViewKeeper(self.text)
        if hold:
            keeper.hold(view.head_mark)
        else:
            keeper.changing()
        self._draw(view)
        keeper.restore()

    def relabel(self) -> None:
        """After a language switch: every answer's line, in the new language."""
        keeper = ViewKeeper(self.text)
        keeper.changing()
        for entry in list(self.entries):
            if isinstance(getattr(entry, "figures", None), dict) and entry.figures:  # type: ignore[attr-defined]
                self._draw(entry)  # type: ignore[arg-type]
        keeper.restore()

    def _draw(self, view: Figured) -> None:
        try:
            at = self.text.index(view.notes_mark)
            self.text.index(view.tail_mark)
        except tk.TclError:
            return  # not ended yet (or ended by a demo that writes no notes)
        with writable(self.text):
            old = self.text.tag_nextrange(FIGURES_TAG, view.notes_mark, view.tail_mark)
            if old:
                self.text.delete(*old)
            figures = view.figures.get(view.shown)
            if figures is not None:
                self._insert(view, at, figures_text(figures, self.t) + "\n")

    def _insert(self, view: Figured, at: str, line: str) -> None:
        """Insert at the start of the notes. Where they are empty, the notes' end and the
        next message's header are marks at the same place, with left gravity: the text
        goes after them, so they are put back after it."""
        following = self._next_head(view)
        moved = [mark for mark in (view.tail_mark, following) if mark is not None]
        moved = [mark for mark in moved if self.text.compare(mark, "==", at)]
        self.text.insert(at, line, (FIGURES_TAG,))
        for mark in moved:
            self.text.mark_set(mark, f"{at} + {len(line)} chars")

    def _next_head(self, view: Figured) -> str | None:
        for index, entry in enumerate(self.entries):
            if entry is view:
                later = self.entries[index + 1 : index + 2]
                return later[0].head_mark if later else None
        return None
