"""Which answers are painted as rich text: those near the reader's view, and no others.

What rich text costs Tk grows with how much of it the widget holds, wherever it is: every
insert and delete walks the B-tree's per-node record of where each tag starts and ends, and
rendered markdown toggles a few dozen tags every few words. Painting one block where an
answer streams costs about twice as much under a million characters of rich text as in an
empty widget, and the same under 3.4 million characters of plain text (tests/tools/
tk_costs.py; the kept run is docs/runs/tk-costs.json). Plain text far away costs nothing;
rich text far away slows down every frame.

So the transcript keeps rich text near the view only:

- an answer that ends within :data:`ZONE_CHARS` characters of what is on screen is painted
  (the nearest first; the painter slices the work as it always does);
- an answer that moved further than :data:`KEEP_CHARS` away is put back to its plain text
  (its markdown source, as it was before it was painted) — a few per callback — and painted
  again if the reader comes back to it; an answer not yet painted that moved away is never
  started;
- while a saved conversation is put on screen (:meth:`hold`), nothing is painted, and when it
  is all there, what is near the view is.

An answer still streaming is always painted as it grows, wherever the reader is. The view
never moves: the answers changed are far from it, and each change keeps the reader's line
(:class:`~tkchat.ui.transcript.view_keeper.ViewKeeper`). Copy, search and export are
unaffected: the words are all in the widget (plain far away), and every message keeps its own
text. (A long saved chat's start is not in the widget at all: :mod:`tkchat.ui.chats.opening`.)

Main thread only.
"""

from __future__ import annotations

import itertools
import time
import tkinter as tk
from typing import Protocol

from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.markdown_view import MarkdownPainter
from tkchat.ui.transcript.message_views import AnswerView, UserView

ZONE_CHARS = 24_000  # painted within this many characters of the view (a few screens)
KEEP_CHARS = 80_000  # put back to plain text beyond this (well apart: no back and forth)
UPDATE_MS = 40  # after the view moved: look again this soon (a scroll moves it many times)
UNPAINT_BUDGET_MS = 3.0  # time for putting answers back to plain text, per callback
HEADER_CHARS = 40  # a message's header line, counted in the distances


class PaintedTranscript(Protocol):
    """What the zone needs of the transcript."""

    text: tk.Text
    entries: list[UserView | AnswerView]
    painter: MarkdownPainter

    def entry_number(self, index: str) -> int | None: ...

    def paint(self, view: AnswerView) -> None: ...

    def unpaint(self, view: AnswerView) -> None: ...


class PaintZone:
    """Main thread only."""

    def __init__(self, transcript: PaintedTranscript, scheduler: AfterScheduler) -> None:
        self.transcript = transcript
        self.scheduler = scheduler
        self.holding = False
        self._looked: tuple[int, int, int] | None = None  # what the last look saw
        transcript.painter.also_busy = self.pending

    def pending(self) -> bool:
        """May painting near the view still be handed to the painter? (While a chat is put
        on screen; or a look is due and some answer is not painted.)"""
        if self.holding:
            return True
        return self.scheduler.pending("paint-zone") and any(
            isinstance(entry, AnswerView) and self._wants_paint(entry)
            for entry in self.transcript.entries
        )

    def moved(self, *, changed: bool = False) -> None:
        """The view moved (``changed``: or messages came or went): look again soon (once,
        however many times this is called meanwhile)."""
        if changed:
            self._looked = None
        if not self.holding and not self.scheduler.pending("paint-zone"):
            self.scheduler.once("paint-zone", UPDATE_MS, self.update)

    def hold(self) -> None:
        """A saved conversation is being put on screen: paint nothing until :meth:`release`."""
        self.holding = True
        self.scheduler.cancel("paint-zone")

    def release(self) -> None:
        """It is all on screen: paint what is near the view, now."""
        self.holding = False
        self._looked = None
        self.update()

    def forget(self) -> None:
        """The transcript was cleared (whatever was being put on screen is gone with it)."""
        self.holding = False
        self._looked = None
        self.scheduler.cancel("paint-zone")

    # -- one look ------------------------------------------------------------------------------

    def update(self) -> None:
        """Paint the answers near the view, nearest first; put far ones back to plain."""
        if self.holding or not self.transcript.entries:
            return
        entries = self.transcript.entries
        text = self.transcript.text
        first = self.transcript.entry_number(text.index("@0,0")) or 0
        last = self.transcript.entry_number(text.index(f"@0,{text.winfo_height()}"))
        looked = (first, len(entries) - 1 if last is None else last, len(entries))
        if looked == self._looked:
            return  # the same messages on screen as last time: nothing new to do
        self._looked = looked
        distances = _distances(entries, looked[0], looked[1])
        answers = [
            (distance, entry)
            for distance, entry in zip(distances, entries, strict=True)
            if isinstance(entry, AnswerView)
        ]
        painter = self.transcript.painter
        for distance, view in sorted(answers, key=lambda pair: pair[0]):
            if distance <= ZONE_CHARS and self._wants_paint(view):
                self._paint(view)
            elif distance > ZONE_CHARS:
                self._not_started(view)
        rank = {id(view.job): distance for distance, view in answers if view.job is not None}
        painter.prioritise(lambda job: rank.get(id(job), 0.0))
        self._unpaint_far(answers)

    def _not_started(self, view: AnswerView) -> None:
        """An answer that moved away before its painting began stays plain."""
        job, painter = view.job, self.transcript.painter
        if job is not None and view.status != "streaming" and painter.untouched(job):
            painter.drop(job)
            view.job = None

    def _wants_paint(self, view: AnswerView) -> bool:
        return (
            view.job is None
            and not view.rendered
            and view.paintable
            and view.status != "streaming"
            and view.length > 0
            and not view.text.isspace()  # (stops at the first word: no copy of the text)
        )

    def _paint(self, view: AnswerView) -> None:
        try:
            self.transcript.paint(view)
        except tk.TclError:  # its marks are gone (removed behind the transcript's back)
            view.paintable = False  # never tried again

    def _unpaint_far(self, answers: list[tuple[float, AnswerView]]) -> None:
        started = time.perf_counter()
        far = [view for distance, view in answers if distance > KEEP_CHARS and view.rendered]
        for view in far:
            if (time.perf_counter() - started) * 1000 > UNPAINT_BUDGET_MS:
                self.moved(changed=True)  # the rest in a later callback
                return
            if view.job is None and view.status != "streaming":
                self.transcript.unpaint(view)


def _distances(entries: list[UserView | AnswerView], first: int, last: int) -> list[float]:
    """Each message's distance, in characters, from messages ``first`` to ``last`` (those on
    screen, whose distance is 0)."""
    sizes = [_length(entry) + HEADER_CHARS for entry in entries]
    ends = list(itertools.accumulate(sizes))  # where each message ends, in characters
    view_start = ends[first] - sizes[first]
    view_end = ends[last]
    out: list[float] = []
    for number, end in enumerate(ends):
        start = end - sizes[number]
        if end <= view_start:
            out.append(view_start - end)
        elif start >= view_end:
            out.append(start - view_end)
        else:
            out.append(0.0)
    return out


def _length(entry: UserView | AnswerView) -> int:
    return entry.length if isinstance(entry, AnswerView) else len(entry.text)


__all__ = ["KEEP_CHARS", "ZONE_CHARS", "PaintZone"]
