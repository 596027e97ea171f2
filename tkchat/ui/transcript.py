"""The conversation view: one read-only Text widget, written only from the main thread.

Each answer lives between two marks, so appending never computes a character offset — which
matters because Tk 8.6 counts a character above U+FFFF (😀, 𝄞) as two index positions, and
any Python-side offset arithmetic would cut such characters in half.
"""

from __future__ import annotations

import time
import tkinter as tk
import tkinter.font as tkfont
from dataclasses import dataclass, field
from tkinter import ttk

from tkchat.i18n import Translator
from tkchat.ui.markdown_view import MarkdownPainter
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler

BODY_FONT_SIZE = 11


@dataclass
class AnswerView:
    """Where one streaming answer is in the widget, and what it holds so far."""

    number: int
    start_mark: str
    end_mark: str
    text: str = ""
    rendered: bool = False
    started_at: float = 0.0  # perf_counter when the answer began (the question was sent)
    first_text_at: float | None = None  # perf_counter when its first text was on screen
    arrivals: list[tuple[float, int]] = field(default_factory=list)  # (when, chars so far)


class Transcript(ttk.Frame):
    """Main thread only."""

    def __init__(self, master: tk.Misc, scheduler: AfterScheduler, translate: Translator) -> None:
        super().__init__(master)
        self.t = translate
        # Named fonts are deleted when their Python object is collected: keep them here.
        self.body_font = tkfont.Font(family=_body_family(master), size=BODY_FONT_SIZE)
        self.text = tk.Text(
            self, wrap="word", state="disabled", padx=12, pady=8, borderwidth=0,
            background="white", foreground="#1b1b1b", undo=False, spacing3=2,
            font=self.body_font,
        )
        scroll = ttk.Scrollbar(self, orient="vertical", command=self.text.yview)
        self.text.configure(yscrollcommand=scroll.set)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        bold = tkfont.Font(family=_body_family(master), size=BODY_FONT_SIZE, weight="bold")
        self._fonts = [bold]
        self.text.tag_configure("who", font=bold, spacing1=10, foreground="#555555")
        self.text.tag_configure("user", lmargin1=12, lmargin2=12, foreground="#0b3d91")
        self.text.tag_configure("answer", lmargin1=12, lmargin2=12)
        self.text.tag_configure("note", foreground="#8a6d00")
        self.text.tag_configure("error", foreground="#b00020")
        self.painter = MarkdownPainter(self.text, scheduler)
        self.answers: list[AnswerView] = []
        self.inserts = 0  # widget inserts of streamed text: the "UI updates" of the window

    # -- writing -------------------------------------------------------------------------------

    def _write(self, index: str, *args: object) -> None:
        with writable(self.text):
            self.text.insert(index, *args)  # type: ignore[arg-type]

    def _at_bottom(self) -> bool:
        return self.text.yview()[1] >= 0.999

    def _follow(self, was_at_bottom: bool) -> None:
        # Scroll with the answer only if the reader was already at the bottom: someone who
        # scrolled up to read keeps their place.
        if was_at_bottom:
            self.text.see("end")

    def add_user(self, message: str) -> None:
        bottom = self._at_bottom()
        self._write("end", self.t("transcript.you") + "\n", ("who",), message + "\n", ("user",))
        self._follow(bottom)

    def add_note(self, message: str, kind: str = "note") -> None:
        bottom = self._at_bottom()
        self._write("end", message + "\n", (kind,))
        self._follow(bottom)

    def begin_answer(self) -> AnswerView:
        bottom = self._at_bottom()
        number = len(self.answers) + 1
        view = AnswerView(number, f"answer-{number}-start", f"answer-{number}-end",
                          started_at=time.perf_counter())
        self._write("end", self.t("transcript.assistant") + "\n", ("who",), "\n")
        # Both marks sit just before that last newline; text inserted at the end mark pushes
        # it along (right gravity) while the start mark stays put (left gravity).
        self.text.mark_set(view.start_mark, "end-2c")
        self.text.mark_gravity(view.start_mark, "left")
        self.text.mark_set(view.end_mark, "end-2c")
        self.text.mark_gravity(view.end_mark, "right")
        self.answers.append(view)
        self._follow(bottom)
        return view

    def append(self, view: AnswerView, text: str) -> None:
        """One insert for everything that arrived this tick."""
        bottom = self._at_bottom()
        self._write(view.end_mark, text, ("answer",))
        self.record(view, text)
        self._follow(bottom)

    def record(self, view: AnswerView, text: str) -> None:
        """Account for text shown (by :meth:`append`, or by a demo that draws it elsewhere)."""
        view.text += text
        self.inserts += 1
        now = time.perf_counter()
        view.arrivals.append((now, len(view.text)))
        if view.first_text_at is None:
            view.first_text_at = now

    def embed(self, view: AnswerView, widget: tk.Misc) -> None:
        """Show ``widget`` as the answer's body (the per-chunk-render demo's HTML widget)."""
        with writable(self.text):
            self.text.window_create(view.end_mark, window=widget, padx=8)
        self.text.see("end")

    def finish(self, view: AnswerView, *, stopped: bool = False, error: str | None = None,
               render: bool = True, interrupted: bool = False) -> None:
        """Mark the end of an answer; then paint its markdown in slices. ``interrupted``: a
        saved answer the app was closed (or killed) in the middle of."""
        bottom = self._at_bottom()
        if stopped or interrupted:
            key = "transcript.interrupted" if interrupted else "transcript.stopped"
            self._write("end-1c", self.t(key) + "\n", ("note",))
        if error:
            self._write("end-1c", f"⚠ {error}\n", ("error",))
        self._follow(bottom)
        if render and view.text.strip():
            self.painter.paint(view.start_mark, view.end_mark, view.text,
                               extra_tags=("answer",), on_done=lambda: _rendered(view))

    def clear(self) -> None:
        self.painter.cancel()
        with writable(self.text):
            self.text.delete("1.0", "end")
        for view in self.answers:
            self.text.mark_unset(view.start_mark, view.end_mark)
        self.answers.clear()

    def plain_text(self) -> str:
        """Everything visible, for tests and copy (elided, not-yet-shown text excluded)."""
        return str(self.text.tk.call(self.text._w, "get", "-displaychars", "1.0", "end-1c"))


def _rendered(view: AnswerView) -> None:
    view.rendered = True


def _body_family(widget: tk.Misc) -> str:
    """A font with good Unicode coverage if the system has one; Tk falls back per glyph
    (fontconfig) for Chinese and emoji either way."""
    families = {name.lower(): name for name in tkfont.families(widget)}
    for wanted in ("noto sans", "dejavu sans", "liberation sans", "helvetica"):
        if wanted in families:
            return families[wanted]
    return "TkDefaultFont"
