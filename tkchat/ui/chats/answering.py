"""One answer on its way to the screen: started, grown tick by tick, ended exactly once.

Main thread only. :class:`Answering` starts the answer through the pipeline the mode box
names, hands it each tick's text, and ends it on whichever comes first: its final event
(``done`` or ``error``), Stop, or a tick that failed. Ending clears :attr:`Answering.answer`
before anything else, so a second ending of the same answer finds nothing to end, and Stop
makes the consumer follow no generation at all, so nothing of a stopped answer reaches the
screen later (a chat switched to since must not receive it).

What the conversation does around it (send, edit, regenerate, another chat) is
:mod:`tkchat.ui.chats.flow`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from tkchat.consume.stream_consumer import TRANSPORT_GAP
from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import Running
from tkchat.limits import cut
from tkchat.modes import CORRECT_MODES, FIXED
from tkchat.store.figures import AnswerFigures
from tkchat.ui.chats.chat_view import ChatView, FlowParts, Scheduler
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.transcript.answer_figures import figures_of, figures_of_stopped
from tkchat.ui.transcript.transcript import AnswerView


class Answering:
    """The answer streaming now (``answer``, None between answers) and how the earlier ones
    ended: ``finished`` (their final events, in order), ``last_error``, ``last_cancel_ms``
    (how long the last Stop took to leave the model loop), ``final_handled_at`` (the
    ``perf_counter`` of the last final event handled). Tests, the bench and the lesson
    panel's live figures read them.

    ``pipelines(mode)`` makes the pipeline a mode names (the window's: it says in a banner
    when a pipeline file of one's own cannot be used); ``pipeline`` answers until the mode
    changes. ``on_change()`` runs whenever an answer starts or ends (what Regenerate may do
    follows). Main thread only."""

    def __init__(
        self,
        view: ChatView,
        parts: FlowParts,
        *,
        scheduler: Scheduler,
        translate: Callable[..., str],
        pipelines: Callable[[str], Pipeline],
        pipeline: Pipeline,
        on_change: Callable[[], None],
    ) -> None:
        self.view = view
        self.controller = parts.controller
        self.consumer = parts.consumer
        self.session = parts.session
        self.context = parts.context
        self.draft = parts.draft
        self.saved = parts.saved
        self.scheduler = scheduler
        self.t = translate
        self.pipelines = pipelines
        self.pipeline = pipeline
        self.on_change = on_change
        self.answer: AnswerView | None = None
        self.finished: list[Done | Error] = []
        self.last_error: str | None = None
        self.last_cancel_ms: float | None = None
        self.final_handled_at: float | None = None
        self._system_prompt = ""  # the one the answer streaming now was asked with

    def start(
        self,
        request: GenerationRequest,
        versions: list[tuple[str, str]] | None = None,
        figures: dict[int, AnswerFigures] | None = None,
    ) -> bool:
        """Answer the chat as it stands (the last message is the user's). ``versions``: a
        regenerate's, the answer's earlier versions and this one, and ``figures`` theirs.
        A blocking demo returns only once its answer has ended."""
        view = self.view
        first = request.messages[0] if request.messages else None
        self._system_prompt = first.content if first and first.role == "system" else ""
        answer = self.answer = view.transcript.begin_answer(versions)
        answer.figures.update(figures or {})
        if self.saved is not None:
            self.saved.archive.answer_started(answer)
        mode = view.teaching.mode
        if self.pipeline.name != mode:
            self.pipeline = self.pipelines(mode)
            if self.pipeline.name != mode:  # a file of one's own was unusable: fixed answers
                view.teaching.set_mode(self.pipeline.name)
        # Broken demos are naive all the way: their sender does not coalesce either.
        self.controller.channel.coalesce = self.pipeline.coalesce
        view.enable("stop", True)
        view.enable("send", False)  # the next question waits for this answer (even a blocking one)
        if self.pipeline.broken:
            view.status.say("app.generating_broken", mode=mode)
        elif mode in CORRECT_MODES and mode != FIXED:  # another correct way: say which one
            t = view.status.t
            view.status.show(lambda: t("app.generating_mode", summary=t(f"mode.{mode}")))
        else:
            view.status.say("app.generating")
        view.probe.reset_peaks()  # the live figures of a lesson count from this question
        self.pipeline.start(answer, request)
        if self.saved is not None:
            # A new conversation shows up at once, the model already at work: the list is
            # read on this thread, and the worker need not wait for it; in a callback of its
            # own, so Send's callback stays short (rows synced and fitted: about a third of
            # it, 2026-12-04).
            self.scheduler.once("sidebar-refresh", 0, self.saved.refresh)
        self.on_change()
        return True

    def grow(self, chunks: tuple[str, ...]) -> None:
        """A tick's new text: onto the answer streaming now (if any), saved as it grows."""
        if self.answer is None or not chunks:
            return
        self.pipeline.show(self.answer, chunks)
        if self.saved is not None:
            self.saved.archive.answer_grew()
        self.context.follow()

    def stop(self) -> None:
        """Ask the worker to stop; the answer ends here, marked stopped. Also when the worker
        has just finished by itself and its last events are still in the queue: the answer
        ends now, complete, and those events are dropped (they would otherwise end an answer
        that another chat may already have cleared from the screen)."""
        worker = self.controller.stop()
        if worker is not None:
            self._watch_cancel(worker)
        if self.answer is not None:
            # (no worker: it ended by itself, and how is in the final event dropped here)
            figures = None if worker is None else figures_of_stopped(worker, self._began)
            self._end(stopped=worker is not None, figures=figures)
        self.consumer.follow(-1)  # nothing of that generation may show up later

    def failed(self, exc: Exception) -> None:
        """A tick raised (a bug, or a widget gone): end the answer with the error shown, so
        the window never waits for text that will not come. The pump keeps running."""
        message = self.t("app.tick_failed", error=cut(f"{type(exc).__name__}: {exc}"))
        if self.answer is not None:
            worker = self.controller.stop()
            figures = None
            if worker is not None:
                self._watch_cancel(worker)
                figures = figures_of_stopped(worker, self._began, "error")
            self.consumer.follow(-1)
            self._end(error=message, figures=figures)
        self.view.status.show(lambda: message)

    def handle_final(self, final: Done | Error) -> None:
        """The answer's ``done`` or ``error``: end it, say how it went. Its time and message
        are noted before it joins ``finished``, and it joins before the answer ends: a reader
        on another thread (the self-test's report) sees them in that order."""
        self.final_handled_at = time.perf_counter()
        message: str | None = None
        if isinstance(final, Error):
            message = cut(final.message)  # the worker cuts it; an event from elsewhere too
            if final.kind == TRANSPORT_GAP:  # made by the consumer, not the model: see below
                message = self._transport_gap(final)
            self.last_error = message
        self.finished.append(final)
        self.context.after(final)
        self.draft.refresh()  # the conversation grew: the same draft may fit differently
        if isinstance(final, Error):
            self._end(error=message, figures=figures_of(final))
            self.view.status.say("app.error", message=message)
        else:
            self._end(stopped=final.reason == "cancelled", figures=figures_of(final))
            if final.reason != "cancelled":
                self.view.status.show(lambda: self._done_text(final))

    def _end(
        self,
        *,
        stopped: bool = False,
        error: str | None = None,
        figures: AnswerFigures | None = None,
    ) -> None:
        """The answer ends, once: saved as it ended, with its ``figures`` (shown under it) and
        what it was made with: the model's name as the window's title shows it (read now: a
        server's is known once it is loaded) and the system prompt it was asked with (an
        export writes both with the answer)."""
        answer, self.answer = self.answer, None  # first: an answer ends once
        self.view.enable("stop", False)
        self.view.progress.hide("reading")
        if answer is None:
            return
        self.on_change()
        if stopped:
            self.view.status.say("app.stopped")
        self.session.answered(answer.text)
        if figures is not None:
            model = self.controller.backend.name
            figures = replace(figures, model=model, system_prompt=self._system_prompt)
            answer.figures[answer.shown] = figures
        if self.saved is not None:
            archive = self.saved.archive
            archive.answer_grew()
            status = "error" if error else "stopped" if stopped else "complete"
            archive.answer_ended(status, figures)
        self.pipeline.finish(answer, stopped=stopped, error=error)
        self.view.transcript.show_figures(answer)

    @property
    def _began(self) -> float:
        """When the answer streaming now began (its worker's clock: ``perf_counter``)."""
        return self.answer.started_at if self.answer is not None else time.perf_counter()

    def _transport_gap(self, final: Error) -> str:
        """The consumer gave up on event ``final.seq``: it never arrived. The answer has
        ended, so its worker must not go on generating unseen (Stop means the model stops).
        Returns the window's own sentence for it, translated."""
        self.controller.stop()
        return self.t("app.transport_gap", seq=final.seq)

    def _done_text(self, final: Done) -> str:
        stats = final.stats
        speed = stats.tokens_per_s
        kept = ""
        if stats.prompt_restored:  # a cache kept from earlier spared reading the chat again
            mb = f"{stats.kept_bytes / 1e6:,.0f}"
            kept = self.t("app.done.kept", tokens=f"{stats.prompt_restored:,}", mb=mb)
        return (
            self.t("app.done", tokens=f"{stats.tokens:,}")
            + (self.t("app.done.speed", speed=f"{speed:.0f}") if speed else "")
            + (self.t("app.done.length") if final.reason == "length" else "")
            + kept
        )

    def _watch_cancel(self, worker: Running) -> None:
        """Note how long the stopped worker took to leave the model loop (live figure)."""
        if worker.is_alive():
            self.scheduler.once("cancel-watch", 5, lambda: self._watch_cancel(worker))
        elif worker.exited_at is not None and worker.cancelled_at is not None:
            self.last_cancel_ms = (worker.exited_at - worker.cancelled_at) * 1000
