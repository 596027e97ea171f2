"""The lesson panel: one lesson at a time, beside the chat, with a button that sets up its demo.

Main thread only, like every widget. It knows nothing about the chat window: the app hands it
three callables (set up a demo, read a live figure, translate a UI string), so the panel can be
built, tested and changed without ``tkchat.ui.window.chat_window``.

Above the lesson, the teacher's lines (the picker and the plan, the demo and its button, what
to watch, the lesson's question for the class if it asks one, the expected and live figure);
a lesson that asks a question keeps its expected figure, and the lesson's *What you see*
section, hidden until its demo's answer has ended or the teacher shows it
(:mod:`~tkchat.ui.teaching.prediction`). The lesson itself,
rendered by the app's one markdown renderer as the transcript renders an answer, is
:class:`~tkchat.ui.teaching.lesson_text.LessonText`'s; under it, the lag timeline.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

from tkchat.course.claims import format_figure
from tkchat.course.lessons import Lesson, expect_text, load_lessons, plan_path, render_body
from tkchat.course.prediction import hide_observed
from tkchat.ui.look.fit import breakable
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.scaling import dp, dp_pad
from tkchat.ui.look.wide_list import widen_list
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.teaching.lesson_text import LessonText
from tkchat.ui.teaching.prediction import PredictionBox

REFRESH_MS = 500  # the live figure is read twice a second
BODY_SIZE = 11  # points, as the transcript's body; the window passes its text size
# The lag timeline's height, in lines of the lesson's text: its labels (larger than the text)
# and three decades of lag, without one label on another (7 left the plot a few pixels tall).
TIMELINE_LINES = 11
# ... but never more than this share of the panel's height: in projector mode at 1280×720,
# 11 lines of large text left the lesson itself a line and a half (seen by hand) ...
TIMELINE_SHARE = 0.4
# ... and never so tall that fewer lines of the lesson (or the plan) than this show; a strip
# shorter than TIMELINE_MIN_LINES is not drawn (its labels would overlap). Five, not eight:
# at 1280×720 in projector mode eight lines left no room for the strip, and lessons 03, 04
# and 18 ask the class to watch it (the lesson scrolls; the timeline cannot).
MIN_LESSON_LINES = 5
TIMELINE_MIN_LINES = 8
# The lines above the lesson (the demo, what to watch, the figures) and the timeline's labels
# grow with the text size up to this; the lesson itself grows on (a projector's large text).
NOTE_MAX_SIZE = 13
NOTE_FONTS = ("note", "note_bold")


class LessonPanel(ttk.Frame):
    """A lesson picker, the lesson text, its demo button and a live "expected · now" line.

    Main thread only. ``on_setup_demo(lesson)`` is called when the demo button is pressed;
    ``read_figure(metric)`` returns the live value of a ``tkchat bench`` key (or None) and is
    called every 500 ms; ``translate(key)`` gives the panel's fixed strings (see
    ``tkchat/i18n/lesson_panel.py``). ``answers_ended()``, set by the window, counts the
    answers that have ended: the one after *Set up the demo* ends the demo, which reveals a
    question's answer and holds the live figure at its final value until the next demo.
    ``caught_up()``, also the window's, says whether the window has finished with its last
    answer (painted, its freeze counted): the demo ends only then."""

    def __init__(
        self,
        master: tk.Misc,
        *,
        language: str,
        on_setup_demo: Callable[[Lesson], None],
        read_figure: Callable[[str], float | None],
        translate: Callable[[str], str],
        body_size: int = BODY_SIZE,
        timeline: Callable[[tk.Misc], LagTimeline] | None = None,
    ) -> None:
        super().__init__(master, padding=dp_pad(master, 8, 6))
        self.language = language
        self.on_setup_demo = on_setup_demo
        self.read_figure = read_figure
        self.translate = translate
        self.lessons: list[Lesson] = []
        self.current: Lesson | None = None
        # The current lesson's expected figure in words: it fills in the measured figures
        # (lessons/figures.json) once when the lesson is shown, not at every refresh.
        self._expected = ""
        self.timers = AfterScheduler(self)
        self._load_error: str | None = None
        self.answers_ended: Callable[[], int] = lambda: 0
        self.caught_up: Callable[[], bool] = lambda: True
        self.picked: Callable[[], None] = lambda: None  # the window's: another lesson's turn
        self._ended_at: int | None = None  # answers ended when the demo was set up
        # The demo's final figure, once it has ended: what the class reads off stays put
        # while the window goes on (a scroll, the lesson's answer shown, another question).
        self._final: float | None = None
        self._held = False
        self.timeline: LagTimeline | None = None
        # Named fonts vanish when their Python object is collected: keep them on the panel.
        # Their sizes follow the window's text size (set_font_size).
        family = tkfont.nametofont("TkDefaultFont", root=self).actual()["family"]
        self._fonts = {name: lasting_font(root=self, family=family) for name in NOTE_FONTS}
        self._fonts["note_bold"].configure(weight="bold")
        self._build_header()
        self.body = LessonText(self, self.timers, lambda: self.translate("lesson.copy_code"))
        self.body.pack(side="top", fill="both", expand=True)
        self.text = self.body.text  # the lesson's tk.Text
        # The last seconds of lag, as a picture: a freeze that the frozen window could not
        # draw while it lasted shows here as soon as it is over (at the bottom of the panel).
        self.trace_button: ttk.Button | None = None
        if timeline is not None:
            self._add_timeline(timeline)
        self.set_font_size(body_size)
        self.bind("<Configure>", self._on_resize, add="+")
        # the lesson's share is known once the text is laid out: the timeline takes the rest
        self.text.bind("<Configure>", lambda _e: self._size_timeline(), add="+")
        self._load(language, keep=None)
        self.timers.once("refresh", REFRESH_MS, self._refresh)

    def _build_header(self) -> None:
        """The lines above the lesson: the picker and the plan, the demo and its button, what
        to watch, the expected and live figure. They are the teacher's, so they keep a
        reading size when a projector makes the lesson large (the ``note`` fonts)."""
        top = self.top = ttk.Frame(self)
        # No "Lesson" label before the picker: its "04 · Generation on the UI thread" says
        # what it is, and at 1280×720 in projector mode the label and the buttons left the
        # closed box "01 · Stre", too little to tell which lesson was chosen. It asks for 46
        # characters, the 40 it had and about its label's room: the panes share the window by
        # what they ask for (this row asks the most of the panel), and at 1280×720 neither the
        # chat nor the lesson had a line to spare.
        self.picker = ttk.Combobox(top, state="readonly", width=46)
        widen_list(self.picker, "Lessons.TCombobox")  # whole titles, whatever the box's width
        self.picker.bind("<<ComboboxSelected>>", self._on_pick)
        # The class plan replaces the lesson text; picking a lesson brings the lesson back.
        self.plan_button = ttk.Button(top, command=self.show_plan)
        self.plan_button.pack(side="right", padx=(dp(self, 6), 0))
        self.picker.pack(side="left", fill="x", expand=True)
        top.pack(side="top", fill="x")
        demo = self.demo_row = ttk.Frame(self)
        self.demo_label = ttk.Label(demo, justify="left", font=self._fonts["note"])
        self.setup_button = ttk.Button(demo, command=self._on_setup)
        self.setup_button.pack(side="right")
        self.demo_label.pack(side="left", fill="x", expand=True)
        demo.pack(side="top", fill="x", pady=(dp(self, 6), 0))
        self.watch_label = ttk.Label(self, justify="left", wraplength=420, font=self._fonts["note"])
        self.watch_label.pack(side="top", fill="x", pady=(dp(self, 4), 0))
        self.prediction = PredictionBox(
            self,
            translate=self.translate,
            fonts=(self._fonts["note"], self._fonts["note_bold"]),
            on_reveal=self._revealed,
        )
        self.figure_label = ttk.Label(
            self, justify="left", wraplength=420, font=self._fonts["note_bold"]
        )
        self.figure_label.pack(side="top", fill="x", pady=dp_pad(self, 2, 6))

    # -- public --------------------------------------------------------------------------------

    def set_font_size(self, size: int) -> None:
        """The window's text size (View menu, Ctrl+plus/minus, projector mode): the lesson
        follows at once, without being laid out again; the lines above it and the timeline
        stop at :data:`NOTE_MAX_SIZE`."""
        self.body.set_font_size(size)
        for name in NOTE_FONTS:
            self._fonts[name].configure(size=min(size, NOTE_MAX_SIZE))
        if self.timeline is not None:
            self.timeline.set_font_size(min(size, NOTE_MAX_SIZE))
            self._size_timeline()

    def _add_timeline(self, timeline: Callable[[tk.Misc], LagTimeline]) -> None:
        """The timeline at the bottom; above it, with the window's sampler running, *Save
        trace…* (the last 30 seconds as a Chrome trace, for Perfetto or chrome://tracing)."""
        self.timeline = timeline(self)
        self.timeline.pack(side="bottom", fill="x", pady=(dp(self, 6), 0), before=self.body)
        save = self.timeline.save_trace
        if save is not None:  # in the top row, beside Class plan: it takes no height of its own
            self.trace_button = ttk.Button(self.top, command=lambda: self._save_trace(save))
            self.trace_button.pack(side="right", before=self.plan_button)
            # where the file went: under the demo's line, only once there is something to say
            self.trace_said = ttk.Label(self, font=self.body.fonts["body"], anchor="w")
        self._size_timeline()
        self.timeline.start()

    def _save_trace(self, save: Callable[[], str]) -> None:
        said = save()
        if said:
            self.trace_said.configure(text=breakable(said))
            if not self.trace_said.winfo_manager():
                self.trace_said.pack(side="top", fill="x", before=self.body)

    def _size_timeline(self) -> None:
        """The timeline's height: a strip under the lesson (TIMELINE_LINES, at most
        TIMELINE_SHARE of the panel), and never so tall that fewer than MIN_LESSON_LINES of
        the lesson show; too little room left for a readable strip, and it steps aside until
        there is (a projector's large text on a 1280×720 screen)."""
        timeline = self.timeline
        if timeline is None:
            return
        line = int(self._fonts["note"].metrics("linespace"))
        height = TIMELINE_LINES * line
        if self.winfo_height() > 1 and self.text.winfo_height() > 1:
            height = min(height, int(self.winfo_height() * TIMELINE_SHARE))
            shown = timeline.winfo_height() + dp(self, 6) if timeline.winfo_ismapped() else 0
            lesson = self.body.lines_px(MIN_LESSON_LINES)
            height = min(height, shown + self.text.winfo_height() - lesson - dp(self, 6))
        if height < TIMELINE_MIN_LINES * line:
            if timeline.winfo_manager():
                timeline.pack_forget()
            return
        if int(timeline.cget("height")) != height:
            timeline.configure(width=1, height=height)  # width=1: it takes the panel's width
        if not timeline.winfo_manager():
            timeline.pack(side="bottom", fill="x", pady=(dp(self, 6), 0), before=self.body)

    def select(self, lesson_id: str) -> None:
        """Show the lesson with this id (e.g. ``"04-blocking"``)."""
        for index, lesson in enumerate(self.lessons):
            if lesson.id == lesson_id:
                self._show(index)
                return
        raise KeyError(f"no lesson {lesson_id!r} in {self.language!r}")

    def show_plan(self) -> None:
        """Show the class plan in the panel's language (lessons/plan.<lang>.md)."""
        path = plan_path(self.language)
        self.body.show(lambda: path.read_text(encoding="utf-8"), failed=self._unavailable)

    @property
    def rendering(self) -> bool:
        """Is the lesson (or the plan) still being prepared or painted? (It is shown block
        by block, in slices: :class:`LessonText`.)"""
        return self.body.rendering

    def set_language(self, lang: str) -> None:
        """Reload the lessons in ``lang``, keeping the same lesson on screen. The app changes
        what ``translate`` returns first; the panel's fixed strings are relabelled here."""
        self.language = lang
        self._load(lang, keep=self.current.id if self.current else None)

    def refresh_figure(self) -> None:
        """Read the live figure now and update the "expected · now" line (twice a second);
        once the demo has ended, its last reading stays, until *Set up the demo* again.
        Nothing here reads a file, and the line is configured only when its text changes:
        each ``configure`` of a label asks its geometry again, and the panel's packing with
        it (lessons/figures.json was read and parsed at every refresh)."""
        lesson = self.current
        if lesson is None:
            self._set_figure_line("")
            return
        over = self._demo_over()
        if over and self.prediction.waiting:
            self.prediction.reveal()  # which lays the lines out and refreshes this one
            return
        if self._ended_at is None:  # no demo set up for this lesson: nothing of its to show
            self._final = None  # (walked: after *Show the answer* it counted F11's relayouts)
        elif not self._held:
            self._final = self.read_figure(lesson.expect_metric)
            self._held = over
        value = self._final
        now = (
            self.translate("lesson.no_value")
            if value is None
            else format_figure(lesson.expect_metric, value, lesson.language)
        )
        metric = self.translate(f"lesson.metric.{lesson.expect_metric}")  # its name, not its key
        now_label = self.translate("lesson.now").format(metric=metric)
        self._set_figure_line(
            breakable(
                f"{self._line('lesson.expected', self._expected)}  ·  "
                f"{self._line(now_label, now, translated=True)}"
            )
        )

    def _demo_over(self) -> bool:
        """Has the demo set up last ended? Its answer has (the first to end after *Set up
        the demo*), and the window has caught up with it: a blocking demo ends its answer
        inside the freeze, which the lag probe counts only once the loop is back."""
        ended_at = self._ended_at
        return ended_at is not None and self.answers_ended() > ended_at and self.caught_up()

    def _set_figure_line(self, text: str) -> None:
        if str(self.figure_label.cget("text")) != text:
            self.figure_label.configure(text=text)

    def destroy(self) -> None:
        self.timers.close()
        super().destroy()

    # -- loading and showing -------------------------------------------------------------------

    def _load(self, lang: str, keep: str | None) -> None:
        try:
            self.lessons = load_lessons(lang)
            self._load_error = None
        except (OSError, ValueError) as exc:
            self.lessons = []
            self._load_error = str(exc)
        self._relabel()
        self.picker.configure(values=[_choice(lesson) for lesson in self.lessons])
        if not self.lessons:
            self.current = None
            self.picker.set("")
            self.setup_button.state(["disabled"])
            said = self.translate("lesson.unavailable").format(error=self._load_error)
            self.body.show(lambda: said, failed=self._unavailable)
            self.demo_label.configure(text="")
            self.watch_label.configure(text="")
            self._set_figure_line("")
            self.prediction.clear()
            self._arrange()
            return
        self.setup_button.state(["!disabled"])
        ids = [lesson.id for lesson in self.lessons]
        self._show(ids.index(keep) if keep in ids else 0)

    def _relabel(self) -> None:
        self.setup_button.configure(text=self.translate("lesson.setup"))
        self.plan_button.configure(text=self.translate("lesson.plan"))
        if self.trace_button is not None:
            self.trace_button.configure(text=self.translate("trace.save"))

    def _show(self, index: int) -> None:
        lesson = self.lessons[index]
        again = self.current is not None and self.current.id == lesson.id  # another language
        self.current = lesson
        self._expected = expect_text(lesson)
        self._ask(lesson, again=again)
        self.picker.current(index)
        if lesson.rate is not None:
            demo = self.translate("lesson.demo_rate").format(
                mode=lesson.mode, backend=lesson.backend, rate=f"{lesson.rate:g}"
            )
        else:
            demo = self.translate("lesson.demo").format(mode=lesson.mode, backend=lesson.backend)
        self.demo_label.configure(text=breakable(demo))
        self.watch_label.configure(
            text=breakable(
                self._line("lesson.watch", self.translate("lesson.watch." + lesson.watch))
            )
        )
        self._show_body(lesson)
        self.refresh_figure()

    def _show_body(self, lesson: Lesson) -> None:
        """The lesson, prepared on a worker; while its question waits for the answer, with
        its *What you see* section folded (it tells the result the class is to predict)."""
        if self.prediction.waiting:
            note = self.translate("predict.observed_hidden")
            self.body.show(
                lambda: hide_observed(render_body(lesson, strict=False), lesson.language, note),
                failed=self._unavailable,
            )
        else:
            self.body.show(lambda: render_body(lesson, strict=False), failed=self._unavailable)

    def _revealed(self) -> None:
        """The answer is out: the figures under the demo's line, the whole lesson."""
        self._arrange()
        if self.current is not None:
            self._show_body(self.current)

    def _unavailable(self, error: Exception) -> str:
        return self.translate("lesson.unavailable").format(error=error)

    def _line(self, label: str, text: str, *, translated: bool = False) -> str:
        """ "Label: text", with the language's own colon."""
        name = label if translated else self.translate(label)
        return self.translate("lesson.line").format(label=name, text=text)

    def _on_pick(self, _event: tk.Event | None = None) -> None:
        index = self.picker.current()
        if 0 <= index < len(self.lessons):
            self._show(index)

    def _ask(self, lesson: Lesson, *, again: bool) -> None:
        """Pose the lesson's question above its figures (none: the box steps aside)."""
        if not again:  # another lesson: no demo of its own yet, no figure
            self._ended_at = None
            self._held = False
            self.picked()
        if lesson.predict is None:
            self.prediction.clear()
        else:
            self.prediction.ask(lesson.predict, again=again)
        self._arrange()

    def _arrange(self) -> None:
        """The lines under the demo's: while a question waits for its answer, the question
        and its choices alone (what to watch and the expected figure would give the answer
        away, and at 1280×720 with a projector's text there is room for no more); answered,
        or with no question, what to watch and the figures, as before."""
        waiting = self.prediction.waiting
        parts: tuple[tk.Widget, ...] = (self.watch_label, self.prediction, self.figure_label)
        for part in parts:
            part.pack_forget()
        anchor: tk.Widget = self.demo_row
        for part, shown in zip(
            parts, (not waiting, self.prediction.prediction, not waiting), strict=True
        ):
            if shown:
                pady = dp_pad(self, 2, 6) if part is self.figure_label else (dp(self, 4), 0)
                part.pack(side="top", fill="x", pady=pady, after=anchor)
                anchor = part
        self.refresh_figure()

    def _on_setup(self) -> None:
        if self.current is not None:
            self.on_setup_demo(self.current)
            # the next answer to end is the demo's: it reveals the answer to the question
            # and holds the figure; until then the figure is live again
            self._ended_at = self.answers_ended()
            self._held = False
            self.refresh_figure()

    def _refresh(self) -> None:
        # Re-armed first: a failing read_figure is reported by Tk, and the line keeps living.
        self.timers.once("refresh", REFRESH_MS, self._refresh)
        self.refresh_figure()

    def _on_resize(self, event: tk.Event) -> None:
        # the panel's width less its padding (8 design pixels each side) and a little more
        wrap = max(200, int(event.width) - dp(self, 20))
        self.watch_label.configure(wraplength=wrap)
        self.figure_label.configure(wraplength=wrap)
        self.prediction.set_wrap(wrap)
        button = self.setup_button.winfo_reqwidth()
        self.demo_label.configure(wraplength=max(120, wrap - button - dp(self, 12)))
        if self.trace_button is not None:
            self.trace_said.configure(wraplength=max(120, wrap - button - dp(self, 12)))
        if self.timeline is not None:
            self._size_timeline()  # its share of the panel's new height


def _choice(lesson: Lesson) -> str:
    return f"{lesson.number:02d} · {lesson.title}"
