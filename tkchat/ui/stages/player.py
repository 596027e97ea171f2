"""Slow motion, pause, step and step back for the pipeline view.

- **Speed** 1, 1/10 or 1/50: the 16 ms tick comes every 16, 160 or 800 ms, and a scripted or
  replayed answer's tokens (a :class:`~tkchat.generate.scripted.Steppable` backend) are let
  through a :class:`StepGate` by a named Tk timer (``stage-play``), as many per slowed tick as
  would arrive in 16 ms, so every lane keeps its proportions.
- **Pause** holds the tick (:meth:`~tkchat.ui.pump.EventPump.hold`) and the gate: the
  drawing stands still; the window does not (its loop runs, keys and clicks work).
- **Step** one tick (the pump's tick, run once) or one token (the gate lets one through).
- **Step back**: every moment shown is kept (:data:`HISTORY` of them, one per tick or
  step); back and forward show any of them exactly as it was drawn.

A mode that makes or reads the tokens on the main thread (``blocking``,
``main-thread-reader``) must not wait for a release only that thread's timer can give: the
gate never holds the main thread, and holds a worker only for the modes whose answer the tick
reads (:data:`TICK_READERS`). For the others a slowed speed paces the tokens at the slowed
rate instead (the scripted backend's own way), and freezes the window for as long.

Main thread only, except :meth:`StepGate.enter` (the thread that iterates the model).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from tkchat.generate.scripted import Steppable, TokenGate
from tkchat.ui.pump import TICK_MS, EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.stages.feed import Lanes, StageFeed

SPEEDS = (1, 10, 50)  # full speed, 1/10, 1/50
HISTORY = 1200  # moments kept for step back (a minute of ticks at full speed)
FLOOD_RATE = 5000.0  # a scripted flood (rate 0) is slowed from this many tokens a second
DRAW_MS = 50  # playing at full speed: the lanes redrawn at most this often (20 a second)
LOOK_MS = 100  # while playing: a change with no tick (a blocking handler's) shows this soon
SETTLE_POLLS = 100  # a token stepped: frames to wait for the worker to have sent it
# The modes whose answers the 16 ms tick reads: only their worker waits at the gate.
TICK_READERS = frozenset({"fixed", "no-coalesce", "per-chunk-render"})
ALL = 1 << 40  # "let everything through"


class StepGate(TokenGate):
    """A :class:`TokenGate` that never holds the main thread, nor a worker whose answer the
    tick does not read (``holds()`` says, read on the worker: a string compared, no Tk).
    A token it does not hold waits ``period_s`` instead (the slowed rate; 0: none)."""

    def __init__(self, holds: Callable[[], bool]) -> None:
        super().__init__()
        self.holds = holds
        self.period_s = 0.0
        self.arrived = 0  # tokens asked for: the one before it has been dealt with

    def enter(self, cancel: threading.Event) -> bool:
        self.arrived += 1  # (only the thread iterating the model writes it)
        if threading.current_thread() is not threading.main_thread() and self.holds():
            return super().enter(cancel)
        if self.period_s and cancel.wait(self.period_s):
            return False
        with self._changed:
            self._allowed += 1
            self.passed += 1
            self._changed.notify_all()
        return not cancel.is_set()


class StagePlayer:
    """Drives the pump and the gate for the view; ``show(lanes, before)`` draws a moment.
    ``backend()`` is the backend answering now; ``pipeline_name()`` the mode of the answer
    (read by the gate on the worker)."""

    def __init__(
        self,
        scheduler: AfterScheduler,
        pump: EventPump,
        feed: StageFeed,
        backend: Callable[[], object],
        pipeline_name: Callable[[], str],
        show: Callable[[Lanes, Lanes | None], None],
    ) -> None:
        self.scheduler, self.pump, self.feed = scheduler, pump, feed
        self.backend, self.show = backend, show
        self.speed = 1
        self.paused = False
        self.history: deque[Lanes] = deque(maxlen=HISTORY)
        self.cursor: int | None = None  # the moment shown (None: the latest)
        self.on_screen: Lanes | None = None  # the moment drawn last, whichever way
        self.gate = StepGate(lambda: pipeline_name() in TICK_READERS)
        self._gated: Steppable | None = None  # the backend our gate is in, and its own
        self._own: tuple[TokenGate | None, float] = (None, 0.0)
        feed.on_tick = self.record
        pump.watch = feed
        self.history.append(feed.lanes())  # the moment it opened (shown by the view)
        self.scheduler.once("stage-look", LOOK_MS, self._look)

    # -- what is shown -----------------------------------------------------------------------

    def record(self) -> None:
        """Keep the moment now (if anything changed) and show it, unless an earlier one is
        being looked at. Playing at full speed, the drawing follows at most every
        :data:`DRAW_MS` (the ``stage-draw`` timer draws the latest when it fires): every
        moment is still kept for step back, but the main thread, which also runs the
        pipeline on show, redraws the lanes a third as often as it ticks."""
        lanes = self.feed.lanes()
        if self.history and self.history[-1] == lanes:
            return
        self.history.append(lanes)
        if self.cursor is not None:
            return
        if self.speed == 1 and not self.paused:
            if self.scheduler.pending("stage-draw"):
                return  # the timer draws the latest moment when it fires
            self.scheduler.once("stage-draw", DRAW_MS, self._draw_latest)
        self._draw_latest()

    def _draw_latest(self) -> None:
        """The latest moment, drawn (unless it already is, or an earlier one is looked at)."""
        if self.cursor is None and self.history and self.on_screen is not self.history[-1]:
            self._draw(len(self.history) - 1)

    def shown(self) -> Lanes:
        return self.history[-1 if self.cursor is None else self.cursor]

    def follow_backend(self) -> None:
        """Another backend answers now (a model chosen, a lesson's demo): the gate goes
        into it if the speed or a pause wants one."""
        if self._gated is not None and self._gated is not self.backend():
            self._apply()

    def _look(self) -> None:
        """While playing, a change no tick brought (a handler on the main thread) shows too;
        a backend changed since takes the gate."""
        self.follow_backend()
        if not self.paused:
            self.record()
        self.scheduler.once("stage-look", LOOK_MS, self._look)

    # -- the controls --------------------------------------------------------------------

    def set_speed(self, speed: int) -> None:
        if speed not in SPEEDS:
            raise ValueError(f"speed 1/{speed} is not one of {SPEEDS}")
        self.speed = speed
        self.pump.interval_ms = TICK_MS * speed
        self._apply()

    def toggle(self) -> None:
        if self.paused:
            self.play()
        else:
            self.pause()

    def pause(self) -> None:
        self.scheduler.cancel("stage-draw")
        self._draw_latest()  # the class sees the moment it paused at
        self.paused = True
        self.pump.hold(True)
        self._apply()

    def play(self) -> None:
        self.paused = False
        self.cursor = None
        self.pump.hold(False)
        self._apply()
        self._show_at(len(self.history) - 1)
        self.cursor = None

    def step_tick(self) -> None:
        """One tick of the pump, now (paused: the next one waits for the next press)."""
        self._paused_live()
        frame = self.feed.frame
        self.pump.tick_now()
        if self.feed.frame == frame:  # it drained nothing: a moment all the same
            self.feed.step()
            self.record()

    def step_token(self) -> bool:
        """Let one token through the gate; shown once the worker has sent it. False: this
        backend has no gate (only a scripted or replayed answer steps token by token)."""
        self._paused_live()
        if self._gated is None:
            return False
        wanted = self.gate.passed + 1
        self.gate.release(1)
        self._settle(wanted, SETTLE_POLLS)
        return True

    def back(self) -> None:
        """The moment before the one shown."""
        if not self.paused:
            self.pause()
        here = len(self.history) - 1 if self.cursor is None else self.cursor
        self._show_at(max(0, here - 1))

    def forward(self) -> None:
        """The moment after the one shown (at the latest: the latest, live again)."""
        if self.cursor is None:
            return
        self._show_at(self.cursor + 1)
        if self.cursor == len(self.history) - 1:
            self.cursor = None

    def close(self) -> None:
        """Everything as it was: the tick at full speed and running, the gate out."""
        for name in ("stage-look", "stage-play", "stage-settle", "stage-draw"):
            self.scheduler.cancel(name)
        self.pump.watch = None
        self.pump.interval_ms = TICK_MS
        self.pump.hold(False)
        self._ungate()

    # -- inside ----------------------------------------------------------------------------

    def _paused_live(self) -> None:
        if not self.paused:
            self.pause()
        if self.cursor is not None:
            self.cursor = None
            self._draw(len(self.history) - 1)

    def _show_at(self, index: int) -> None:
        if not self.history:
            return
        self.cursor = index = min(max(0, index), len(self.history) - 1)
        self._draw(index)

    def _draw(self, index: int) -> None:
        """The moment ``index`` of the history drawn, beside the one before it."""
        self.on_screen = self.history[index]
        self.show(self.on_screen, self.history[index - 1] if index else None)

    def _apply(self) -> None:
        """The gate and its timer for the speed and the pause."""
        self.scheduler.cancel("stage-play")
        backend = self.backend()
        if self.speed == 1 and not self.paused or not isinstance(backend, Steppable):
            self._ungate()
            return
        if self._gated is not backend:
            self._ungate()
            self._own = (backend.gate, backend.rate)
            self._gated, backend.gate = backend, self.gate
        rate = self._own[1] or FLOOD_RATE
        self.gate.period_s = self.speed / rate if self.speed > 1 else 0.0
        if not self.paused:
            self._play(max(1, round(rate * TICK_MS / 1000)))

    def _play(self, per_tick: int) -> None:
        """Slow motion: a tick's worth of tokens every slowed tick."""
        self.gate.release(per_tick)
        self.scheduler.once("stage-play", TICK_MS * self.speed, lambda: self._play(per_tick))

    def _ungate(self) -> None:
        backend, self._gated = self._gated, None
        self.gate.release(ALL)  # a worker waiting at it goes on
        self.gate = StepGate(self.gate.holds)
        if backend is not None:
            backend.gate = self._own[0]

    def _settle(self, wanted: int, polls: int) -> None:
        """A frame later, and until the worker has sent the token let through: it is back at
        the gate for the next one, or it ended (at most ``polls`` frames)."""

        def look() -> None:
            worker = self.feed.sources.controller.current
            ended = worker is None or not worker.is_alive()
            if self.gate.arrived > wanted or ended or polls <= 1:
                self.feed.step()
                self.record()
            else:
                self._settle(wanted, polls - 1)

        self.scheduler.once("stage-settle", TICK_MS, look)
