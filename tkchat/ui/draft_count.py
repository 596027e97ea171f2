"""The draft's token count: "37 tokens" under the message box while the user types.

Counting needs the model's tokenizer, and tokenizing a 50,000-character paste takes about
37 ms on the bundled model (measured; more on a larger vocabulary): on the Tk thread that is
a dropped frame per keystroke. So the count runs on a thread
(:meth:`~tkchat.generate.controller.GenerationController.measure_context`), started
:data:`DEBOUNCE_MS` after the last change, one at a time; this polls for it. An answer about
a draft that has changed since is dropped, and the newest draft counted instead; while one
count runs, further keystrokes only mark it stale.

The same count says whether the draft can be sent at all (the context policy's test, with
the conversation as it stands): :meth:`DraftCounter.figure_for` gives the window that answer
for exactly the text in the box, or None while it is not known yet.

Main thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from tkinter import ttk

from tkchat.generate.controller import ContextMeasure
from tkchat.ui.message_box import MessageBox
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.theme import ERROR_STYLE, HINT_STYLE
from tkchat.ui.translator import Translator

DEBOUNCE_MS = 150  # a pause in typing; a count per keystroke would only queue up
POLL_MS = 20


@dataclass(frozen=True, slots=True)
class DraftFigure:
    """What one count found for ``text`` (the box's text, stripped as Send strips it)."""

    text: str
    tokens: int | None  # None: the count failed (the generation will report why, if it must)
    too_long: bool
    n_ctx: int


class DraftCounter:
    """Counts the draft in ``box`` and shows it in ``label``.

    ``count(text)`` starts a count of ``text`` as the next message of the conversation (None
    when nothing can count now: no model loaded, or a server that fits its own context).
    ``on_counted()`` is called after each fresh figure (the window sends a draft that was
    waiting for one).
    """

    def __init__(
        self,
        label: ttk.Label,
        box: MessageBox,
        count: Callable[[str], ContextMeasure | None],
        scheduler: AfterScheduler,
        translate: Translator,
        on_counted: Callable[[], object] = lambda: None,
    ) -> None:
        self.label = label
        self.box = box
        self.count = count
        self.scheduler = scheduler
        self.t = translate
        self.on_counted = on_counted
        self.figure: DraftFigure | None = None  # the latest figure, maybe of an older text
        self.counts = 0  # counts started (tests read it: typing must not start one per key)
        self._running: tuple[str, ContextMeasure] | None = None
        box.bind("<<Modified>>", self._on_modified, add="+")
        translate.on_change(lambda _lang: self._draw())

    @property
    def text(self) -> str:
        return self.box.draft.strip()

    def figure_for(self, text: str) -> DraftFigure | None:
        """The figure of exactly ``text``, if it is known (else a count is on its way)."""
        figure = self.figure
        return figure if figure is not None and figure.text == text else None

    def refresh(self, delay_ms: int = 0) -> None:
        """Count again soon: the conversation or the model changed, so the same draft may
        fit differently (also the first count after the model is ready)."""
        self.figure = None
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
        self._running = (text, measure)
        self.scheduler.once("draft-poll", POLL_MS, self._poll)

    def _poll(self) -> None:
        if self._running is None:
            return
        text, measure = self._running
        if not measure.done.is_set():
            self.scheduler.once("draft-poll", POLL_MS, self._poll)
            return
        self._running = None
        if text != self.text:  # typed on meanwhile: this answer is stale
            self._start()
            return
        self.figure = DraftFigure(text, measure.draft_tokens, measure.too_long, measure.n_ctx)
        self._draw()
        self.on_counted()

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
