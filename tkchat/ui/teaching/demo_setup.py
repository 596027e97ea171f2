"""The lessons' side of the window: a lesson's demo set up, the live figures the lesson panel
shows beside the ones a lesson expects, and the two tools lessons bring into the window: the
chaos transport (lesson 13) and the watchdog (lesson 14).

The lesson panel's *Set up the demo* button calls :meth:`LessonDemos.setup`, which touches
several parts of the window at once (the chat, the mode, the backend, the message box, the
health bar): it sees them through :class:`DemoWindow`, the few members it uses.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.course.lessons import Lesson
from tkchat.stats import LagSample
from tkchat.transport.chaos import Chaos
from tkchat.ui.base.message_box import MessageBox
from tkchat.ui.base.services import Services
from tkchat.ui.chats.flow import ChatFlow
from tkchat.ui.health import HealthBar
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.models.switch import ModelSwitch
from tkchat.ui.teaching.controls import LessonHooks, TeachingControls
from tkchat.ui.teaching.lag_record import answer_arrivals
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.teaching.live_figures import LiveFigures
from tkchat.ui.teaching.ordering import OrderingCounters, read_ordering
from tkchat.ui.teaching.watchdog_link import WatchdogHandle, open_watchdog, screen_geometry
from tkchat.ui.transcript.transcript import Transcript


class DemoWindow(Protocol):
    """What a demo sets up, and the live figures read, in the window
    (:class:`~tkchat.ui.window.chat_window.ChatApp`)."""

    @property
    def teaching(self) -> TeachingControls: ...
    @property
    def models(self) -> ModelSwitch: ...
    @property
    def input(self) -> MessageBox: ...
    @property
    def health(self) -> HealthBar: ...
    @property
    def probe(self) -> LagProbe: ...
    @property
    def transcript(self) -> Transcript: ...
    @property
    def flow(self) -> ChatFlow: ...


class LessonDemos:
    """``live_figure(metric)``: a bench figure's live value; ``chaos``: the chaos transport
    answers travel through (None: straight); ``watchdog``: the watchdog process, once
    opened. ``theme()``: the window's palette name, which the watchdog follows."""

    def __init__(
        self,
        services: Services,
        consumer: StreamConsumer,
        window: DemoWindow,
        *,
        theme: Callable[[], str],
    ) -> None:
        self.controller = services.controller
        self.session = services.session
        self.status = services.status
        self.scheduler = services.scheduler
        self.t = services.translate
        self.consumer = consumer
        self.window = window
        self.theme = theme
        self.chaos: Chaos | None = None
        self.watchdog: WatchdogHandle | None = None  # opened on demand: open_watchdog()
        # The pipeline view's door (the window sets it): a lesson whose demo shows it opens it.
        self.open_stages: Callable[[], object] | None = None
        self._ready_line: str | None = None  # a demo's line, its backend loading
        self.live_figure = LiveFigures(
            window.probe,
            window.transcript,
            lambda: window.flow.answering.finished,
            lambda: window.flow.answering.last_cancel_ms,
            self.ordering_counters,
            lambda: self.controller.running.sender if self.controller.running else None,
        )

    def hooks(self, recorded: Callable[[], Sequence[LagSample]] | None) -> LessonHooks:
        """What the lesson panel asks of the window; ``recorded()``: a recording's lag
        samples, drawn beside the live lag in its timeline (``tkchat replay``)."""
        window = self.window

        def timeline(master: tk.Misc) -> LagTimeline:  # made when the lesson panel opens
            return LagTimeline(
                master,
                self.scheduler,
                lambda: window.probe.history,
                answer_arrivals(window.transcript.answers),
                recorded=recorded,
                translate=self.t,
            )

        return LessonHooks(
            self.setup,
            self.live_figure,
            timeline,
            answers_ended=lambda: len(window.flow.answering.finished),
            caught_up=self.caught_up,
            picked=lambda: window.health.highlight(None),  # its demo marks what to watch
        )

    def caught_up(self) -> bool:
        """Is the window done with its last answer, as ``tkchat bench`` waits before it reads
        a run's figures? Its last markdown painted, and the lag probe fired since the answer's
        final event: a blocking demo handles it inside its freeze, which the probe counts
        only when the loop comes back."""
        window = self.window
        ended = window.flow.answering.final_handled_at
        probe = window.probe
        counted = not probe.running or (
            ended is not None and bool(probe.recent) and probe.recent[-1].at > ended
        )
        return counted and not window.transcript.painter.busy

    def setup(self, lesson: Lesson) -> None:
        """A lesson's demo, as its header describes it: a fresh chat (so earlier demos do not
        lengthen the prompt), its mode, its backend (rate, answer length, language), its
        answer limit and seed, its prompt in the box, what to watch highlighted."""
        window = self.window
        window.teaching.set_mode(lesson.mode)
        switched = window.models.use(
            lesson.backend, rate=lesson.rate, tokens=lesson.tokens, language=lesson.language
        )
        if lesson.fresh:  # after the backend is chosen: the context meter starts from its
            window.flow.new_chat()  # context (a scripted one's follows the answer's length)
        limit = lesson.max_tokens or lesson.tokens
        sampling = self.session.sampling
        self.session.sampling = replace(
            sampling,
            max_tokens=limit or sampling.max_tokens,
            seed=lesson.seed if lesson.seed is not None else sampling.seed,
        )
        self.set_chaos(None if lesson.chaos is None else Chaos(lesson.chaos))
        if lesson.watchdog:  # a new one, in front, where the timeline is now
            self.open_watchdog(anew=True)
        elif self.watchdog is not None:  # over the lag timeline, which this one may point at
            self.watchdog.close(wait=False)
            self.watchdog = None
        if lesson.stages and self.open_stages is not None:
            # after the backend is chosen: its answers are the ones stepped (behind the chat)
            self.open_stages()
        window.input.set_draft(lesson.prompt or "")
        window.input.focus_set()
        window.health.highlight(lesson.watch)
        window.probe.reset_peaks()
        # Enter (and F9) first and nothing else: at 1280×720 in projector mode the line has
        # room for about 30 characters, and the mode is in the Mode box just above it
        key = "app.demo_ready_stages" if lesson.stages else "app.demo_ready"
        self.status.say(key)
        # the backend chosen will say "Ready — …" over it once loaded: then it is said again
        self._ready_line = key if switched else None

    def model_loaded(self, ready: bool) -> None:
        """A model loaded (``ready``) or failed to: if it is the one a demo just chose and it
        loaded, the demo's line again (the load's "Ready — scripted, loaded in 0.0 s" took
        its place, F9's hint with it)."""
        line, self._ready_line = self._ready_line, None
        if ready and line is not None:
            self.status.say(line)

    # -- the chaos transport (lesson 13) -------------------------------------------------------

    def set_chaos(self, chaos: Chaos | None) -> None:
        """From the next answer on, events travel through ``chaos`` (None: straight)."""
        self.chaos = chaos
        self.controller.sink_wrapper = chaos

    def ordering_counters(self) -> OrderingCounters:
        """Lesson 13's live figures in one read: chaos done, order kept."""
        return read_ordering(self.chaos, self.consumer)

    # -- the watchdog (lesson 14) --------------------------------------------------------------

    def open_watchdog(self, *, anew: bool = False) -> WatchdogHandle:
        """Show this window's heartbeat in a second process, which can draw a freeze while
        it happens (``tkchat watchdog``), in the window's look and language. Opens it once;
        again only if it was closed (Esc closes it), or ``anew``: a demo's set-up replaces
        the one open (it opens in front, where the timeline is now: one placed for an earlier
        lesson stayed behind the window until the freeze, and covered a line and a half of
        a lesson whose header is taller). Where the screen has no room beside the
        window, it goes over the lesson's lag timeline (else the chat's text): a picture the
        frozen loop cannot redraw, and the watchdog steps behind the window once the window
        answers again, for the timeline to show the freeze. Never over the lesson, the chat's
        text (the class watches it stream in a freeze), the health bar or Send."""
        if self.watchdog is None or not self.watchdog.alive or anew:
            if self.watchdog is not None:
                self.watchdog.close(wait=False)
            panel = self.window.teaching.lesson_panel
            timeline = panel.timeline if panel is not None else None
            room: tk.Misc = self.window.transcript  # (no timeline shown: the chat's text)
            if timeline is not None and timeline.winfo_ismapped():
                room = timeline
            self.watchdog = open_watchdog(
                self.scheduler,
                theme=self.theme(),
                language=self.t.lang,
                room=screen_geometry(room),
                window=screen_geometry(room.winfo_toplevel()),
            )
        return self.watchdog

    def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.close()
