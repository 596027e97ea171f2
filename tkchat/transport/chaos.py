"""The chaos transport: what a real network may do to events, on demand, from a seed.

In-process nothing ever arrives out of order, so the consumer's reorder buffer (lesson 13)
never has work to show. :class:`ChaosSink` sits between a sender and its sink and does, to
one generation's events, exactly what a longer path could do:

- **shuffle**: events are passed on in blocks of ``shuffle`` (1 = off), each block in a
  random order, so no event moves more than a few places;
- **duplicate**: with probability ``duplicate`` an event is delivered twice, the copy at
  once or a few events later (a retry that replays it);
- **delay**: with probability ``delay`` an event is held back and passed on after a few
  later events (2 to 5): a packet that took a slower route;
- **drop**: the chunk numbered ``drop_seq`` is never delivered (a loss nobody retried).

What it never breaks is what the *sender* guarantees: numbering (``gen`` and ``seq`` are the
sender's, untouched), whole characters (it moves events, never splits text), and one final
event sent per generation (it may be delivered twice, like any event, but is never dropped:
a consumer could only notice a lost ending by silence, and silence is also what a slow model
looks like — over HTTP the remote backend's idle timeout covers a silent server).

Three decisions, and why:

- **No merging.** A sink of chaos sets ``coalesce = False``, so the sender sends every token
  as its own event (as the broken demos do); merged into one growing chunk per tick there
  would be nothing to shuffle. An open chunk handed in anyway is closed on arrival.
- **Delays are counted in events, not milliseconds.** A held event goes out during a later
  ``put``, on the worker's thread. A timer thread would make the delivered order depend on
  thread scheduling (the same seed would no longer give the same order), and sleeping on the
  worker would hold up Stop, which is checked between tokens. ``put`` never sleeps and never
  blocks; at the lesson's rates a few events are a few tens of milliseconds.
- **Nothing outlives the generation.** When the final event is put, everything still held is
  passed on with it (shuffled together: the ending may overtake its last words, and the
  reorder buffer must put it back). Stop ends a generation with a final event too.

:class:`Chaos` is the switch the window holds: it wraps the channel for every generation
from now on (``GenerationController.sink_wrapper``), seeds each generation's sink from its
own seed and the generation's number, and adds up the counts for the live figures.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from tkchat.events import Chunk, Done, Error, GenerationEvent
from tkchat.transport.channel import EventSink, Queued, delivered

DELAY_EVENTS = (2, 5)  # a delayed event goes out after this many later events (inclusive)


@dataclass(frozen=True, slots=True)
class ChaosCounts:
    """What the chaos transport did so far (the window's live figures)."""

    shuffled: int = 0  # events passed on at another place in their block than they came
    duplicated: int = 0  # extra copies passed on
    delayed: int = 0  # events held back for a few later events
    dropped: int = 0  # events never passed on


class ChaosTally:
    """Counts shared by the sinks of one :class:`Chaos`. Worker threads add (a stopped
    generation's worker may still be putting its final event while the next one starts, hence
    the lock); any thread reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = ChaosCounts()

    def add(
        self, *, shuffled: int = 0, duplicated: int = 0, delayed: int = 0, dropped: int = 0
    ) -> None:
        with self._lock:
            c = self._counts
            self._counts = ChaosCounts(
                c.shuffled + shuffled,
                c.duplicated + duplicated,
                c.delayed + delayed,
                c.dropped + dropped,
            )

    def counts(self) -> ChaosCounts:
        return self._counts  # a frozen value, replaced whole: always consistent


class ChaosSink:
    """Shuffles, duplicates, delays and drops one generation's events on their way to
    ``inner``. Used by one sender, on its worker thread (``put``)."""

    coalesce = False  # every token its own event: see the module's notes

    def __init__(
        self,
        inner: EventSink,
        *,
        seed: int,
        shuffle: int = 4,
        duplicate: float = 0.1,
        delay: float = 0.05,
        drop_seq: int | None = None,
        tally: ChaosTally | None = None,
    ) -> None:
        _check(shuffle, duplicate, delay)
        if drop_seq is not None and drop_seq < 1:
            raise ValueError(f"drop_seq counts from 1, got {drop_seq}")
        self.inner = inner
        self.shuffle = shuffle
        self.duplicate = duplicate
        self.delay = delay
        self.drop_seq = drop_seq
        self.tally = tally if tally is not None else ChaosTally()
        self._rng = random.Random(seed)
        self._block: list[GenerationEvent] = []  # waiting to be passed on, in a random order
        self._held: list[tuple[int, GenerationEvent]] = []  # (later events to wait, event)
        self.finished = False  # the final event went through: pass anything else on as is

    def put(self, item: Queued) -> None:
        """Worker thread. Never sleeps, never blocks (``inner.put`` does not)."""
        event = delivered(item)  # an open chunk is closed here: it cannot grow while held
        if self.finished or not isinstance(event, (Chunk, Done, Error)):
            self.inner.put(event)
            return
        due = self._due()  # held events that have now waited long enough: after this one
        final = isinstance(event, (Done, Error))
        rng = self._rng
        if not final and event.seq == self.drop_seq:
            self.tally.add(dropped=1)
        else:
            if not final and rng.random() < self.delay:
                self._held.append((rng.randint(*DELAY_EVENTS), event))
                self.tally.add(delayed=1)
            else:
                self._block.append(event)
            if rng.random() < self.duplicate:
                wait = rng.randint(0, DELAY_EVENTS[1])  # the replay comes at once, or later
                if wait:
                    self._held.append((wait, event))
                else:
                    self._block.append(event)
                self.tally.add(duplicated=1)
        self._block.extend(due)
        if final:
            self.finished = True
            self._block.extend(held for _, held in self._held)
            self._held.clear()
            self._pass_on()
        elif len(self._block) >= self.shuffle:
            self._pass_on()

    def _due(self) -> list[GenerationEvent]:
        """One more event came: the held events whose wait is over (they join the block)."""
        due: list[GenerationEvent] = []
        still: list[tuple[int, GenerationEvent]] = []
        for wait, event in self._held:
            if wait <= 1:
                due.append(event)
            else:
                still.append((wait - 1, event))
        self._held = still
        return due

    def _pass_on(self) -> None:
        """The current block, in a random order, to the real sink."""
        order = list(range(len(self._block)))
        if self.shuffle > 1:
            self._rng.shuffle(order)
            moved = sum(1 for place, index in enumerate(order) if place != index)
            if moved:
                self.tally.add(shuffled=moved)
        block, self._block = self._block, []
        for index in order:
            self.inner.put(block[index])


class Chaos:
    """Chaos for every generation from now on: a ``sink_wrapper`` for
    :class:`~tkchat.generate.controller.GenerationController`.

    Each generation gets its own :class:`ChaosSink`, seeded from ``seed`` and the number of
    sinks made before it, so the same seed and the same questions give the same deliveries.
    Counts add up across generations (:meth:`counts`). Main thread: construct, ``drop_next``,
    call (the controller does, when it starts a generation); any thread: ``counts``.
    """

    def __init__(
        self, seed: int, *, shuffle: int = 4, duplicate: float = 0.1, delay: float = 0.05
    ) -> None:
        _check(shuffle, duplicate, delay)
        self.seed = seed
        self.shuffle = shuffle
        self.duplicate = duplicate
        self.delay = delay
        self.tally = ChaosTally()
        self.made = 0
        self._drop_next: int | None = None

    def drop_next(self, seq: int) -> None:
        """The next generation loses its chunk ``seq`` (once: the one after is whole again).
        A ``seq`` past the last chunk drops nothing: a final event is never dropped."""
        if seq < 1:
            raise ValueError(f"seq counts from 1, got {seq}")
        self._drop_next = seq

    def __call__(self, inner: EventSink) -> ChaosSink:
        """A sink of chaos in front of ``inner``, for one generation."""
        self.made += 1
        drop, self._drop_next = self._drop_next, None
        return ChaosSink(
            inner,
            seed=self.seed * 1_000_003 + self.made,
            shuffle=self.shuffle,
            duplicate=self.duplicate,
            delay=self.delay,
            drop_seq=drop,
            tally=self.tally,
        )

    def counts(self) -> ChaosCounts:
        return self.tally.counts()


def _check(shuffle: int, duplicate: float, delay: float) -> None:
    if shuffle < 1:
        raise ValueError(f"shuffle is a block size (1 = off), got {shuffle}")
    for name, value in (("duplicate", duplicate), ("delay", delay)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} is a probability, got {value}")
