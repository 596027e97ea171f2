"""The window's witness of its own event loop: the sampler, and where what it saw is shown.

:class:`LoopWitness` runs :class:`tkchat.trace.sampler.LoopSampler` on the window's main
thread while the teaching controls are shown (the chat-only view turns it off unless
``TKCHAT_SAMPLER=1``; ``TKCHAT_SAMPLER=0`` turns it off everywhere). With it:

- the lag timeline labels each long band with its culprit, and a click on a band opens its
  stacks (:mod:`tkchat.ui.teaching.stacks_window`);
- while a freeze lasts, the sampler thread — the one part of the frozen process that still
  runs — tells the watchdog who holds the loop (``HeartbeatSender.say``), every 100 ms;
- the lesson panel's *Save trace…* writes the last 30 seconds as a Chrome trace.

It is wired to the window by :func:`witness_the_loop`, in one line, and knows the window only
by the few parts it reads (:class:`WitnessedWindow`). Main thread, except :meth:`_live`,
which runs on the sampler thread and touches no widget.
"""

from __future__ import annotations

import dataclasses
import os
import time
import tkinter as tk
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tkchat.generate.controller import GenerationController
from tkchat.i18n import STRINGS
from tkchat.modes import split_outside_mode
from tkchat.trace.chrome import TraceRun, write_trace
from tkchat.trace.culprit import Culprit, culprit_of, labels, long_task_culprits
from tkchat.trace.ledger import CallbackLedger
from tkchat.trace.sampler import KEEP_S, LoopSampler
from tkchat.ui.base.translator import Translator
from tkchat.ui.lag_probe import LagProbe, LagSample
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.lag_record import Freeze, answer_arrivals
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.transcript.transcript import Transcript

if TYPE_CHECKING:
    from tkchat.ui.teaching.controls import TeachingControls
    from tkchat.ui.teaching.watchdog_link import WatchdogHandle

ENV = "TKCHAT_SAMPLER"  # "1": also in the chat-only view; "0": never
CHECK_MS = 1000  # how often the witness looks whether the sampler should run
FROZEN_AFTER_S = 0.25  # as the watchdog: silence this long is a freeze
LIVE_EVERY_S = 0.1  # how often the watchdog hears who holds the loop during one
SETTLED_S = 1.0  # a freeze over this long: its samples are all in, "nobody" is final
KEEP_CALLBACKS = 20_000  # the scheduler's callbacks kept for a trace (30 s of a busy window)
KEEP_TOKENS = 20_000  # the worker's token times kept for a trace


class _Demos(Protocol):
    watchdog: WatchdogHandle | None  # the watchdog process, once a lesson's demo opened it


class WitnessedWindow(Protocol):
    """What the witness reads of the chat window."""

    root: tk.Tk
    scheduler: AfterScheduler
    probe: LagProbe
    t: Translator
    teaching: TeachingControls
    controller: GenerationController
    transcript: Transcript
    demos: _Demos


class LoopWitness:
    def __init__(self, window: WitnessedWindow, environ: dict[str, str] | None = None) -> None:
        self.window = window
        self.environ = dict(os.environ) if environ is None else environ
        self.ledger = CallbackLedger()
        self.sampler = LoopSampler(ledger=self.ledger)
        self.sampler.watchers.append(self._live)
        self.sampler.overdue = window.probe.overdue_since
        controller = window.controller
        self.sampler.counters = {
            "queue depth (events)": controller.channel.qsize,
            "chunks coalesced (pieces merged)": lambda: _merged(controller),
        }
        self._culprits: dict[Freeze, Culprit | None] = {}
        self._frozen_since: float | None = None  # the freeze the watchdog is being told of
        self._told_at = 0.0
        self.told = 0  # culprit lines sent to the watchdog (for tests)
        self.forced: bool | None = None

    # -- running -------------------------------------------------------------------------------

    def wanted(self) -> bool:
        """Teaching controls shown (or ``TKCHAT_SAMPLER=1``), and not ``TKCHAT_SAMPLER=0``;
        :meth:`force` overrides both."""
        if self.forced is not None:
            return self.forced
        choice = self.environ.get(ENV, "")
        if choice == "0":
            return False
        return choice == "1" or not self.window.teaching.chat_only

    def force(self, on: bool | None) -> None:
        """Sample (True) or not (False) whatever the view, at once; None: as :meth:`wanted`
        says. The bench measures the sampler's cost this way."""
        self.forced = on
        if on is False:
            self.sampler.stop()
        self._check()

    def start(self) -> None:
        """Wire the scheduler and the timeline, then check every second whether to sample."""
        window = self.window
        window.scheduler.ledger = self.ledger
        self.ledger.keep(KEEP_CALLBACKS)
        window.controller.keep_token_times = KEEP_TOKENS
        hooks = window.teaching.lessons
        made = hooks.timeline
        if made is not None:
            window.teaching.lessons = dataclasses.replace(
                hooks, timeline=lambda master: self.label(made(master))
            )
        self._check()

    def _check(self) -> None:
        self.sampler.bury()  # frames the sampler thread must not free itself (main thread)
        scheduler = self.window.scheduler
        if self.wanted() and not scheduler.closed:
            self._follow_outside_mode()
            self.sampler.start()
        else:
            self.sampler.stop(timeout=0)
        scheduler.once("loop-witness", CHECK_MS, self._check)

    def _follow_outside_mode(self) -> None:
        """A pipeline file of one's own is "the pipeline" the culprit is looked for in."""
        outside = split_outside_mode(self.window.teaching.mode)
        if outside is not None:
            self.sampler.book.add_pipeline_file(outside[0])

    def close(self) -> None:
        self.sampler.stop()

    # -- the lag timeline ----------------------------------------------------------------------

    def label(self, timeline: LagTimeline) -> LagTimeline:
        """The timeline names each long band's culprit, shows its stacks on a click, and its
        panel can save the trace."""
        timeline.culprits = self.culprit_of
        timeline.on_pick = self.show_stacks
        timeline.save_trace = self.save_trace_dialog
        return timeline

    def culprit_of(self, freeze: Freeze) -> Culprit | None:
        """Who held the loop during ``freeze`` (worked out once; None if not sampled)."""
        if freeze not in self._culprits:
            if len(self._culprits) > 256:  # old bands scrolled out long ago
                self._culprits.clear()
            samples = self.sampler.between(freeze.start, freeze.end)
            found = culprit_of(samples, freeze.start, freeze.end)
            # Not remembered as "nobody" while it may still be sampled: the sampler not
            # running yet, or the freeze just over and its samples not handed over yet (a
            # band drawn the moment a blocking handler returned was never named).
            settled = time.perf_counter() - freeze.end > SETTLED_S
            if found is None and not (self.sampler.running and settled):
                return None
            self._culprits[freeze] = found
        return self._culprits[freeze]

    def show_stacks(self, freeze: Freeze) -> None:
        from tkchat.ui.teaching.stacks_window import StacksWindow

        StacksWindow(self.window.root, self.culprit_of(freeze), self.window.t)

    # -- the watchdog, during a freeze (sampler thread) --------------------------------------------

    def _live(self, sampler: LoopSampler, now: float) -> None:
        """Sampler thread: while the loop is stuck, tell the watchdog who holds it; once it
        is free again, tell it who held it, over the whole freeze. No widget is touched."""
        if self.window.scheduler.closed:
            sampler.request_stop()
            return
        since = self.window.probe.overdue_since()
        if since is not None and now - since >= FROZEN_AFTER_S:
            self._frozen_since = since
            if now - self._told_at >= LIVE_EVERY_S:
                self._tell(sampler, since, now)
        elif self._frozen_since is not None:
            start, self._frozen_since = self._frozen_since, None
            self._tell(sampler, start, now)

    def _tell(self, sampler: LoopSampler, start: float, end: float) -> None:
        handle = self.window.demos.watchdog
        if handle is None:
            return
        culprit = culprit_of(sampler.between(start, end), start, end)
        if culprit is None:
            return
        lang = self.window.t.lang
        strings = STRINGS[lang]
        said: dict[str, object] = {  # longest first: the watchdog shows the first that fits
            "now": [strings["culprit.frozen_now"].format(label=x) for x in labels(culprit, lang)],
            "after": [
                strings["culprit.last_freeze"].format(label=x) for x in labels(culprit, lang)
            ],
            "function": culprit.held_by,
            "kind": culprit.kind,
        }
        if handle.sender.say("culprit", said):
            self.told += 1
        self._told_at = end

    # -- a trace of the last seconds -----------------------------------------------------------

    def trace_run(self) -> TraceRun | None:
        """What the window saw in the last :data:`KEEP_S` seconds, as one trace run."""
        samples = self.sampler.recent()
        if not samples:
            return None
        window = self.window
        start = samples[0].at - samples[0].span
        lags = [LagSample(*lag) for lag in window.probe.history if lag[0] >= start]
        worker = window.controller.running  # a worker, or an asyncio mode's task
        sender = worker.sender if worker is not None else None
        times = list(sender.times or ()) if sender is not None else []
        prompt = None
        if worker is not None and worker.started_at is not None and worker.first_token_at:
            prompt = (worker.started_at, worker.first_token_at)
        arrivals = answer_arrivals(window.transcript.answers, KEEP_S)()
        return TraceRun(
            name=f"tkchat window — mode {window.teaching.mode}",
            origin=start,
            samples=samples,
            callbacks=self.ledger.kept_since(start),
            lags=lags,
            culprits=long_task_culprits(samples, lags),
            tokens=[at for at in times if at >= start],
            prompt=prompt if prompt is not None and prompt[1] >= start else None,
            arrivals=arrivals,
            counter_names=tuple(self.sampler.counters),
        )

    def save_trace(self, path: Path) -> Path | None:
        run = self.trace_run()
        if run is None:
            return None
        return write_trace(path, [run], self.window.t.lang, saved=time.strftime("%Y-%m-%d %H:%M"))

    def save_trace_dialog(self) -> str:
        """The lesson panel's *Save trace…*: asks where, writes, returns what to say."""
        from tkinter import filedialog

        t = self.window.t
        if not self.sampler.recent():
            return t("trace.none")
        chosen = filedialog.asksaveasfilename(
            parent=self.window.root,
            defaultextension=".json",
            initialfile=time.strftime("tkchat-trace-%Y%m%d-%H%M%S.json"),
            filetypes=[("Chrome trace (JSON)", "*.json")],
        )
        if not chosen:
            return ""
        try:
            self.save_trace(Path(chosen))
        except OSError as exc:
            return t("trace.failed", error=exc)
        return t("trace.saved", path=chosen)


def _merged(controller: GenerationController) -> float:
    """Sampler thread: pieces of text merged into a chunk still waiting in the queue, so far
    in the current answer (two ints read)."""
    running = controller.running  # a worker, or an asyncio mode's task (its sender, if any)
    sender = running.sender if running is not None else None
    if sender is None:
        return 0.0
    return float(sender.pieces - sender.chunks)


def witness_the_loop(window: WitnessedWindow) -> LoopWitness:
    """Start the witness of ``window``'s loop (the chat window calls this once)."""
    witness = LoopWitness(window)
    witness.start()
    return witness
