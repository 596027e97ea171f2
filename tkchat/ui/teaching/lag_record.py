"""What the lag timeline has seen, kept for two minutes: the worst lag per pixel column, the
frozen intervals, the moments text arrived.

A recorded run's lag (``tkchat replay``), drawn beside it, is folded into columns the same way
(:class:`RecordedColumns`), once.

The probe keeps 30 seconds of samples and the transcript's arrivals are read for the last 20
(:func:`answer_arrivals`); the timeline draws 20. A class that paused the timeline to discuss a
freeze wants to scroll back to the one before it, and the samples go on arriving meanwhile
(the pause freezes the drawing, not the window): so the timeline folds what is new into this
record at every refresh, drawn or not, and draws whichever 20 seconds are asked for from it.
Bounded: what is older than :data:`HISTORY_S` is forgotten, a column or a freeze at a time.

Nothing here touches Tk, but only the timeline uses it: main thread only.
"""

from __future__ import annotations

import bisect
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tkchat.stats import KeptLag, LagSample
from tkchat.ui.lag_probe import LONG_TASK_MS
from tkchat.ui.transcript.transcript import AnswerView

Arrival = tuple[float, int]  # (perf_counter when text reached the screen, characters so far)
Column = list[float]  # [column number (its time / the column's seconds), the worst lag in ms]

SPAN_S = 20.0  # the seconds the timeline shows at once
HISTORY_S = 120.0  # how far back a paused timeline scrolls


@dataclass(frozen=True, slots=True)
class Freeze:
    """An interval the main loop was stuck: from when the probe was due to when it ran."""

    start: float
    end: float

    @property
    def length_s(self) -> float:
        return self.end - self.start


def answer_arrivals(
    answers: Sequence[AnswerView],
    span_s: float = SPAN_S,
    clock: Callable[[], float] = time.perf_counter,
) -> Callable[[], list[Arrival]]:
    """The ``arrivals`` callable for a transcript's answers (the transcript's own list: it is
    cleared in place): the text arrivals of the last ``span_s`` seconds, oldest first. Each
    answer's list is searched, not copied, so a long answer costs nothing more."""

    def read() -> list[Arrival]:
        since = clock() - span_s
        found: list[list[Arrival]] = []
        for view in reversed(answers):
            arrivals = view.arrivals
            if arrivals and arrivals[-1][0] >= since:
                found.append(arrivals[bisect.bisect_left(arrivals, (since, -1)) :])
            if view.started_at < since:
                break
        return [arrival for part in reversed(found) for arrival in part]

    return read


def _fold(columns: deque[Column] | list[Column], column: int, lag_ms: float) -> None:
    """A lag into its column: the worst of the column's (columns come in time order)."""
    if columns and columns[-1][0] == column:
        columns[-1][1] = max(columns[-1][1], lag_ms)
    else:
        columns.append([column, lag_ms])


class LagRecord:
    """The timeline's memory. :meth:`take` folds what is new; the ``*_in`` methods read a span
    (from the newest end: the live span costs what it did before there was a record)."""

    def __init__(self, keep_s: float = HISTORY_S) -> None:
        self.keep_s = keep_s
        self.column_s = 0.0  # one pixel column of the timeline, in seconds (0: none yet)
        self.columns: deque[Column] = deque()
        self.freezes: deque[Freeze] = deque()
        self.arrivals: deque[Arrival] = deque()
        self._seen = -math.inf  # ``at`` of the newest sample taken
        self._arrived = -math.inf  # and of the newest arrival

    def take(
        self,
        samples: Sequence[KeptLag],
        arrivals: Sequence[Arrival],
        now: float,
        column_s: float,
    ) -> None:
        """Fold the samples and arrivals newer than the last call (read from the end, so only
        they are read); forget what is older than ``keep_s`` before ``now``."""
        if column_s != self.column_s:
            self._refold(samples, column_s)
        new: list[KeptLag] = []
        for sample in reversed(samples):
            if sample[0] <= self._seen:
                break
            new.append(sample)
        for at, lag_ms, _waited in reversed(new):
            _fold(self.columns, int(at / column_s), lag_ms)
            if lag_ms > LONG_TASK_MS:
                self.freezes.append(Freeze(at - lag_ms / 1000, at))
        if new:
            self._seen = new[0][0]
        self._take_arrivals(arrivals)
        since = now - self.keep_s
        while self.columns and (self.columns[0][0] + 1) * column_s < since:
            self.columns.popleft()
        while self.freezes and self.freezes[0].end < since:
            self.freezes.popleft()
        while self.arrivals and self.arrivals[0][0] < since:
            self.arrivals.popleft()

    def _take_arrivals(self, arrivals: Sequence[Arrival]) -> None:
        fresh: list[Arrival] = []
        for arrival in reversed(arrivals):
            if arrival[0] <= self._arrived:
                break
            fresh.append(arrival)
        if fresh:
            self.arrivals.extend(reversed(fresh))
            self._arrived = fresh[0][0]

    def _refold(self, samples: Sequence[KeptLag], column_s: float) -> None:
        """Another column width (the timeline was resized, its text size changed): what the
        probe still holds is read again at the new width; what is older than that is only in
        the old columns, each folded into the new column its start falls in."""
        old, self.column_s = self.column_s, column_s
        held_from = samples[0][0] if samples else math.inf
        columns: deque[Column] = deque()
        for column, worst in self.columns:
            if (column + 1) * old >= held_from:
                break
            _fold(columns, int(column * old / column_s), worst)
        self.columns = columns
        self.freezes = deque(f for f in self.freezes if f.end < held_from)
        self._seen = -math.inf if samples else self._seen

    def oldest(self) -> float | None:
        """The time of the oldest column kept (None: nothing yet)."""
        return self.columns[0][0] * self.column_s if self.columns else None

    def columns_in(self, start: float, end: float) -> list[Column]:
        """The columns from ``start`` to ``end`` (and the one just before: the line enters
        the plot from its left edge), oldest first."""
        first, last = start / self.column_s - 1, end / self.column_s
        found: list[Column] = []
        for column in reversed(self.columns):
            if column[0] < first:
                break
            if column[0] <= last:
                found.append(column)
        found.reverse()
        return found

    def freezes_in(self, start: float, end: float) -> list[Freeze]:
        """The freezes that overlap ``start`` to ``end`` (kept in the order they ended)."""
        found: list[Freeze] = []
        for freeze in reversed(self.freezes):
            if freeze.end < start:
                break
            if freeze.start <= end:
                found.append(freeze)
        return found

    def arrivals_in(self, start: float, end: float) -> list[float]:
        """When text arrived from ``start`` to ``end``."""
        found: list[float] = []
        for at, _chars in reversed(self.arrivals):
            if at < start:
                break
            if at <= end:
                found.append(at)
        return found


class RecordedColumns:
    """A recording's lag, the worst per pixel column. A recording does not change: it is
    folded once (again only for another recording or another column width), and each redraw
    takes its span by bisection."""

    def __init__(self) -> None:
        self._key: tuple[int, int, float, float] | None = None  # what was folded last
        self._columns: list[Column] = []

    def span(
        self, samples: Sequence[LagSample], column_s: float, start: float, end: float
    ) -> list[Column]:
        """The columns from ``start`` to ``end`` (and the one before), oldest first."""
        # (a list's id alone could be reused by the next answer's list, the same length)
        key = (id(samples), len(samples), samples[0].at if samples else 0.0, column_s)
        if self._key != key:
            columns: list[Column] = []
            for sample in samples:
                _fold(columns, int(sample.at / column_s), sample.lag_ms)
            self._key, self._columns = key, columns
        columns = self._columns
        first = bisect.bisect_left(columns, start / column_s - 1, key=lambda c: c[0])
        last = bisect.bisect_right(columns, end / column_s, key=lambda c: c[0])
        return columns[first:last]
