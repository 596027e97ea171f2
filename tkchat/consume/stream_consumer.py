"""One tick of consumption: drained events in, one text append (and maybe an end) out."""

from __future__ import annotations

from dataclasses import dataclass

from tkchat.consume.reorder import ReorderBuffer
from tkchat.events import (
    AppEvent,
    Chunk,
    FinalEvent,
    LoadEvent,
    ModelFailed,
    ModelLoading,
    ModelReady,
    Progress,
)


@dataclass(frozen=True, slots=True)
class TickResult:
    chunks: tuple[str, ...]  # new text of the current generation, chunk by chunk, in order
    final: FinalEvent | None  # the generation's done/error, if it arrived (after the text)
    app_events: tuple[LoadEvent, ...]  # model loading news, in order
    stale: int  # events of other generations, dropped
    # how far the prompt has been read: the latest progress of this tick, if any came
    progress: Progress | None = None

    @property
    def text(self) -> str:
        """All new text, to append with one insert (what the fixed pipeline does)."""
        return "".join(self.chunks)


class StreamConsumer:
    """Follows the current generation; everything else is stale and dropped.

    Consumer thread only (Tk's main thread in the app).
    """

    def __init__(self) -> None:
        self.gen: int | None = None
        self._reorder = ReorderBuffer()
        self.finished = True

    def follow(self, gen: int) -> None:
        """From now on only ``gen`` counts: a stopped answer can never leak into this one."""
        self.gen = gen
        self._reorder = ReorderBuffer()
        self.finished = False

    def accept(self, events: list[AppEvent]) -> TickResult:
        parts: list[str] = []
        final: FinalEvent | None = None
        app_events: list[LoadEvent] = []
        progress: Progress | None = None
        stale = 0
        for event in events:
            if isinstance(event, (ModelLoading, ModelReady, ModelFailed)):
                app_events.append(event)
                continue
            if event.gen != self.gen or self.finished:
                stale += 1
                continue
            for ready in self._reorder.push(event):
                if isinstance(ready, Chunk):
                    parts.append(ready.text)
                elif isinstance(ready, Progress):
                    progress = ready  # only the latest matters to a progress bar
                else:
                    final = ready
                    self.finished = True
                    break
        return TickResult(tuple(parts), final, tuple(app_events), stale, progress)

    @property
    def waiting(self) -> int:
        return self._reorder.waiting
