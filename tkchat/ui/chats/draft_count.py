"""The draft's token count: "37 tokens" under the message box while the user types.

Counting needs the model's tokenizer, and tokenizing a 50,000-character paste takes about
37 ms on the bundled model (measured; more on a larger vocabulary): on the Tk thread that is
a dropped frame per keystroke. So the count runs on a thread
(:meth:`~tkchat.generate.controller.GenerationController.measure_context`), started
:data:`DEBOUNCE_MS` after the last change, one at a time; this polls for it. An answer about
a draft that has changed since, or about a conversation that has (refresh), is dropped,
and the newest draft counted instead; while one count runs, further keystrokes only mark
it stale.

The same count says whether the draft can be sent at all (the context policy's test, with
the conversation as it stands): :meth:`DraftCounter.fits` answers Send. A text too short to
overflow goes at once, uncounted; one whose count says it cannot fit is refused before it
reaches the transcript, and stays in the box; one whose count is not in yet waits for it
(:attr:`DraftCounter.waiting`) and is sent then, if it fits and is still what the box holds.

Main thread only (the count itself runs on the controller's thread).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from tkinter import ttk

from tkchat.generate.context import MIN_ANSWER_ROOM
from tkchat.generate.controller import ContextMeasure
from tkchat.ui.base.message_box import MessageBox
from tkchat.ui.base.services import Services
from tkchat.ui.look.theme import ERROR_STYLE, HINT_STYLE

DEBOUNCE_MS = 150  # a pause in typing; a count per keystroke would only queue up
POLL_MS = 20
# Bytes a chat template may add around a system prompt and a question (role markers, BOS):
# a draft whose bytes fit with this to spare fits without counting (see DraftCounter.fits).
TEMPLATE_MARGIN = 256


@dataclass(frozen=True, slots=True)
class DraftFigure:
    """What one count found for ``text`` (the box's text, stripped as Send strips it)."""

    text: str
    tokens: int | None  # None: the count failed (the generation will report why, if it must)
    too_long: bool
    n_ctx: int


class DraftCounter:
    """Counts the draft in ``box``, shows it in ``label``, and tells Send whether it fits.

    A count is the conversation (the services' ``session``) plus the draft as the next
    question, measured by the ``controller`` with its model; ``model_ready()`` says whether
    there is one to count with; ``send()`` sends the box's text, once a count that a
    waiting draft needed is in. What Send is told is said in the status line.
    """

    def __init__(
        self,
        label: ttk.Label,
        box: MessageBox,
        services: Services,
        *,
        model_ready: Callable[[], bool],
        send: Callable[[], object],
    ) -> None:
        self.label = label
        self.box = box
        self.scheduler = services.scheduler
        self.t = services.translate
        self.status = services.status
        self.controller = services.controller
        self.session = services.session
        self.model_ready = model_ready
        self.send = send
        self.figure: DraftFigure | None = None  # the latest figure, maybe of an older text
        self.waiting: str | None = None  # a draft sent before its count was known
        self.counts = 0  # counts started (tests read it: typing must not start one per key)
        self._running: tuple[str, ContextMeasure, int] | None = None
        self._conversation = 0  # bumped by refresh(): a count begun before it is stale
        box.bind("<<Modified>>", self._on_modified, add="+")
        self.t.on_change(lambda _lang: self._draw())

    @property
    def text(self) -> str:
        return self.box.draft.strip()

    def figure_for(self, text: str) -> DraftFigure | None:
        """The figure of exactly ``text``, if it is known (else a count is on its way)."""
        figure = self.figure
        return figure if figure is not None and figure.text == text else None

    def fits(self, prompt: str) -> bool:
        """Whether the box's text ``prompt`` can be sent: refused here, before it reaches the
        transcript, when even with the earlier turns left out it leaves no room for an answer
        (the worker's own test, :mod:`tkchat.generate.context`). A text that may not fit and
        whose count is not in yet waits for it, and is sent then if it fits."""
        backend = self.controller.backend
        if not backend.context_known:
            return True  # a server fits its own context, and says so if it cannot
        # A token is at least one byte of the prompt: a text this short cannot overflow,
        # whatever the count says (the margin covers the chat template's own tokens).
        room = backend.n_ctx - MIN_ANSWER_ROOM - TEMPLATE_MARGIN
        if len(prompt.encode()) + len(self.session.system_prompt.encode()) <= room:
            return True
        figure = self.figure_for(prompt)
        if figure is None:
            # (No answer streams now: Send waits for it. The count needs the model lock.)
            self.waiting = prompt
            self.status.say("app.draft_counting")
            self.refresh()
            return False
        if figure.too_long:
            tokens = "?" if figure.tokens is None else f"{figure.tokens:,}"
            self.status.say("app.draft_too_long", tokens=tokens, n_ctx=f"{figure.n_ctx:,}")
            return False
        return True  # (a count that failed does not hold the message back)

    def count(self, text: str) -> ContextMeasure | None:
        """Start counting ``text`` as the next question (None: nothing to count with: no
        model loaded, or a server that fits its own context)."""
        if not self.model_ready() or not self.controller.backend.context_known:
            return None
        return self.controller.measure_context(self.session.request_for(text), draft=True)

    def refresh(self, delay_ms: int = 0) -> None:
        """Count again soon: the conversation or the model changed, so the same draft may
        fit differently (also the first count after the model is ready)."""
        self.figure = None
        self._conversation += 1
        self.scheduler.once("draft-count", delay_ms, self._start)

    def _on_modified(self, _event: object) -> None:
        if not self.box.edit_modified():
            return  # the flag being reset below sends the event too
        self.box.edit_modified(False)
        self.scheduler.once("draft-count", DEBOUNCE_MS, self._start)

    def _start(self) -> None:
        if self._running is not None:
            return  # the poll starts the newest draft when this one is done
        text = self.text
        if not text:
            self.figure = None
            self._draw()
            return
        if self.figure_for(text) is not None:
            return
        measure = self.count(text)
        if measure is None:
            self.figure = None
            self._draw()
            return
        self.counts += 1
        self._running = (text, measure, self._conversation)
        self.scheduler.once("draft-poll", POLL_MS, self._poll)

    def _poll(self) -> None:
        if self._running is None:
            return
        text, measure, conversation = self._running
        if not measure.done.is_set():
            self.scheduler.once("draft-poll", POLL_MS, self._poll)
            return
        self._running = None
        if text != self.text or conversation != self._conversation:
            self._start()  # typed on, or the conversation changed, meanwhile: stale
            return
        self.figure = DraftFigure(text, measure.draft_tokens, measure.too_long, measure.n_ctx)
        self._draw()
        self._send_waiting()

    def _send_waiting(self) -> None:
        """A draft sent while it was being counted: send it now, or say why not (Send asks
        :meth:`fits` again, which knows the figure now)."""
        if self.waiting is not None and self.waiting == self.text:
            self.send()
        else:
            self.waiting = None

    def _draw(self) -> None:
        figure = self.figure_for(self.text)
        if figure is None or figure.tokens is None:
            if not self.text or figure is not None:
                self.label.configure(text="")
            return  # keep the last figure while the next one is counted: no flicker
        tokens = f"{figure.tokens:,}"
        if figure.too_long:
            text = self.t("draft.too_long", tokens=tokens, n_ctx=f"{figure.n_ctx:,}")
        else:
            text = self.t("draft.tokens", tokens=tokens)
        self.label.configure(text=text, style=ERROR_STYLE if figure.too_long else HINT_STYLE)
