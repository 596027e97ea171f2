"""What each stage of the pipeline is doing now, read from counters the stages already keep.

The pipeline view draws four places an answer passes through (the article's stages) and one
that only the broken modes use:

- the **worker**: the tokens it made so far and the latest one (``worker.tokens``, the
  sender's ``last``: an int and a reference, stored on the worker thread, read here);
- the **queue**: its depth (``qsize``), the pieces merged into the chunk still waiting, and
  all the pieces the sender merged this answer (``pieces - chunks``);
- the **16 ms tick**: what the last tick drained, how many inserts it made and how long it
  held the loop (the pump tells :class:`StageFeed` when each tick begins and ends);
- the **main thread outside a tick**: inserts made in a handler that never returned to the
  loop (``blocking`` makes the tokens there; ``main-thread-reader`` reads them there);
- **Tk**: the inserts, the answer's length, what the last markdown render read (the
  ``per-chunk-render`` demo keeps its renders' sizes) and the redraws forced.

Main thread only: nothing here calls Tk, and nothing here runs on a worker; the figures a
worker writes are single attributes, read as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from tkchat.generate.controller import GenerationController, Running
from tkchat.ui.transcript.transcript import AnswerView, Transcript


@dataclass(frozen=True, slots=True)
class Lanes:
    """One moment of the pipeline, lane by lane (a snapshot: the view draws it, the history
    keeps it). Counts are of the answer shown last."""

    frame: int = 0  # ticks that drained something since the view opened, and steps
    mode: str = ""
    # the worker
    worker: bool = False  # a worker thread makes this answer's tokens
    tokens: int = 0
    token: str = ""  # the latest token's text
    # the queue
    queued: int = 0  # events waiting
    waiting_pieces: int = 0  # pieces merged into the chunk still waiting
    merged: int = 0  # pieces that travelled inside another's chunk, this answer
    # the 16 ms tick
    ticks: int = 0  # ticks that drained something, this answer
    drained: int = 0  # events the last of them drained
    tick_inserts: int = 0  # inserts it made
    tick_ms: float = 0.0  # how long it held the loop
    # the main thread outside a tick
    outside_inserts: int = 0
    # in how many of the gaps between two ticks those inserts were made: one, a handler
    # that never returned (blocking); many, a timer of its own that did (an asyncio step)
    outside_spells: int = 0
    # Tk
    inserts: int = 0
    chars: int = 0  # the answer's length on screen
    last_insert: int = 0  # characters of the last insert
    rendered: int = 0  # characters the last whole-answer render read (0: none made)
    renders: int = 0  # whole-answer renders, this answer
    redraws: int = 0  # redraws forced (update_idletasks), this answer


@dataclass(frozen=True)
class StageSources:
    """Where the figures are: the controller (worker, channel), the transcript (answers,
    inserts), the pipeline answering now, and the count of forced redraws."""

    controller: GenerationController
    transcript: Transcript
    pipeline: Callable[[], object]
    redraws: Callable[[], int]


class StageFeed:
    """Counts per tick (the pump's :class:`~tkchat.ui.pump.TickWatch`) and reads the rest
    when asked (:meth:`lanes`). ``on_tick()`` runs after every tick that drained something.
    Main thread only."""

    def __init__(self, sources: StageSources) -> None:
        self.sources = sources
        self.on_tick: Callable[[], None] = lambda: None
        self.frame = 0
        self._answer: AnswerView | None = None
        self._at_begin = 0  # the answer's inserts when the running tick began
        self._redraws_at_start = self._redraws_seen = sources.redraws()
        self._ticks = self._drained = self._tick_inserts = self._in_ticks = 0
        self._tick_ms = 0.0
        self._spells = self._outside_seen = 0
        self._shown_inserts = 0  # the answer's inserts at the last moment told

    # -- the pump's watch ------------------------------------------------------------------

    def began(self) -> None:
        self._follow()
        self._at_begin = self._inserts()
        outside = self._outside(self._at_begin)
        if outside > self._outside_seen:  # inserts were made since the last tick
            self._spells += 1
            self._outside_seen = outside

    def ended(self, events: int, ms: float) -> None:
        self._follow()
        if not events:
            # A tick with nothing to drain; but text may have come on screen since the last
            # moment by another way (an asyncio loop Tk steps inserts from a timer of its
            # own): that is a moment too, or the view would stand still through its answer.
            if self._inserts() != self._shown_inserts:
                self.frame += 1
                self._moment()
            return
        made = max(0, self._inserts() - self._at_begin)
        self._ticks += 1
        self._drained, self._tick_inserts, self._tick_ms = events, made, ms
        self._in_ticks += made
        self.frame += 1
        self._moment()

    def _moment(self) -> None:
        self._shown_inserts = self._inserts()
        self.on_tick()

    # -- reading ---------------------------------------------------------------------------

    def lanes(self) -> Lanes:
        """The pipeline now."""
        self._follow()
        answer, running = self._answer, self._worker()
        worker = None if self._on_main_thread(running) else running
        sender = worker.sender if worker is not None else None
        inserts = self._inserts()
        arrivals = answer.arrivals if answer is not None else []
        last_insert = 0
        if arrivals:
            last_insert = arrivals[-1][1] - (arrivals[-2][1] if len(arrivals) > 1 else 0)
        renders = self._renders()
        return Lanes(
            frame=self.frame,
            mode=str(getattr(self.sources.pipeline(), "name", "")),
            worker=worker is not None,
            tokens=running.tokens if running is not None else self._outside(inserts),
            token=sender.last if sender is not None else self._latest(running),
            queued=self.sources.controller.channel.qsize(),
            waiting_pieces=sender.waiting_pieces if sender is not None else 0,
            merged=sender.pieces - sender.chunks if sender is not None else 0,
            ticks=self._ticks,
            drained=self._drained,
            tick_inserts=self._tick_inserts,
            tick_ms=self._tick_ms,
            outside_inserts=self._outside(inserts),
            outside_spells=self._spells + (self._outside(inserts) > self._outside_seen),
            inserts=inserts,
            chars=answer.length if answer is not None else 0,
            last_insert=last_insert,
            rendered=renders[-1][0] if renders else 0,
            renders=len(renders),
            redraws=self.sources.redraws() - self._redraws_at_start,
        )

    def step(self) -> None:
        """A step that was not a tick (a token let through): a frame of its own."""
        self.frame += 1

    # -- inside ----------------------------------------------------------------------------

    def _follow(self) -> None:
        """A new answer: its counts start from nothing."""
        answers = self.sources.transcript.answers
        answer = answers[-1] if answers else None
        redraws = self.sources.redraws()
        if answer is not self._answer:
            self._answer = answer
            self._ticks = self._drained = self._tick_inserts = self._in_ticks = 0
            self._tick_ms = 0.0
            self._spells = self._outside_seen = 0
            # From the count seen before it began: a blocking answer is over before anyone
            # here sees it (its handler ran in the click), its redraws all counted since.
            self._redraws_at_start = self._redraws_seen
            self._at_begin = self._inserts()
        self._redraws_seen = redraws

    def _inserts(self) -> int:
        """The answer's inserts so far (each one an arrival)."""
        return len(self._answer.arrivals) if self._answer is not None else 0

    def _outside(self, inserts: int) -> int:
        return max(0, inserts - self._in_ticks)

    @staticmethod
    def _on_main_thread(running: Running | None) -> bool:
        """Whether ``running`` computes its tokens on the main thread: an asyncio task whose
        source computes on the loop (``computes_on_loop``: ``asyncio-blocking-call``), run
        by the loop Tk steps. Its tokens are the main thread's work, not a worker's."""
        on_loop = bool(getattr(running, "computes_on_loop", False))
        return on_loop and getattr(running, "thread", None) == threading.main_thread().ident

    @staticmethod
    def _latest(worker: Running | None) -> str:
        """The latest text of a generation whose events skip the channel (``asyncio-tk``:
        its task keeps it as ``last_text``); "" for none."""
        latest = getattr(worker, "last_text", "")
        return latest if isinstance(latest, str) else ""

    def _worker(self) -> Running | None:
        """The worker making this answer — or the asyncio task whose source it feeds —
        started after the answer began (a blocking handler starts none, and the last
        answer's worker is not this one's)."""
        worker, answer = self.sources.controller.running, self._answer
        if worker is None or answer is None or worker.started_at is None:
            return None
        return worker if worker.started_at >= answer.started_at else None

    def _renders(self) -> list[tuple[int, float]]:
        """The whole-answer renders of this answer (``per-chunk-render`` keeps their sizes);
        the other pipelines render none."""
        costs = getattr(self.sources.pipeline(), "render_costs", None)
        if not isinstance(costs, list) or self._answer is None:
            return []
        return costs[-len(self._answer.arrivals) :] if self._answer.arrivals else []
