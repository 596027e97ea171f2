"""The classroom's controls: the mode menu, the red BROKEN banner, the lesson panel, Compare.

In the chat-only view (View menu, remembered) they fold into one line in the top bar: the
heartbeat and the lag stay (a window that keeps ticking is the product's promise), and a
*Teaching controls* button brings everything back with one click. The BROKEN banner shows
whenever a broken mode is on, in either view.

Switching the mode decides how the *next* answer travels to the screen (see
:mod:`tkchat.modes`); a broken mode is labelled as such in a banner and the title. The lesson
panel sits beside the chat; its *Set up the demo* button calls back into the window
(``setup_demo``), since a demo touches the backend, the mode and the message box.

Main thread only.
"""

from __future__ import annotations

import subprocess
import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass
from tkinter import ttk

from tkchat.course.lessons import Lesson
from tkchat.modes import CORRECT_MODES, MODES, check_mode, is_outside_mode
from tkchat.ui.base.services import Services
from tkchat.ui.look.scaling import dp, window_size
from tkchat.ui.look.theme import palette_of, recolour, set_role
from tkchat.ui.places import Places
from tkchat.ui.teaching.lag_timeline import LagTimeline
from tkchat.ui.teaching.lesson_panel import BODY_SIZE, LessonPanel

LESSONS_MIN_WIDTH = 1320  # design pixels: the chat and a readable lesson side by side
LESSONS_MIN_HEIGHT = 680


@dataclass(frozen=True)
class LessonHooks:
    """What the lesson panel asks of the window: ``setup_demo(lesson)`` sets up a lesson's
    demo; ``read_figure(metric)`` is the live figure it shows beside the one the lesson
    expects; ``timeline(master)`` draws the lag timeline (None: no timeline);
    ``answers_ended()`` counts the window's ended answers (the demo's end reveals the answer
    to a lesson's question and holds the live figure); ``caught_up()``: the window is done
    with its last answer (painted, its lag counted); ``picked()``: another lesson was picked
    (the health bar's mark of what the last demo watched goes)."""

    setup_demo: Callable[[Lesson], None]
    read_figure: Callable[[str], float | None]
    timeline: Callable[[tk.Misc], LagTimeline] | None = None
    answers_ended: Callable[[], int] | None = None
    caught_up: Callable[[], bool] | None = None
    picked: Callable[[], None] | None = None  # another lesson picked (no demo of it yet)


class TeachingControls:
    """Builds the mode box and the Compare and Lessons buttons at the right of the top bar,
    and the BROKEN banner after the banners' anchor (right under the health bar, whether or
    not it is shown). ``on_mode_changed()`` lets the window retitle itself; ``lessons``: what
    the lesson panel needs of the window; ``compare_command`` gives ``tkchat compare``'s
    command line for a broken mode (None: no Compare button)."""

    def __init__(
        self,
        services: Services,
        places: Places,
        lessons: LessonHooks,
        *,
        mode: str,
        compare_command: Callable[[str], list[str]] | None,
        on_mode_changed: Callable[[], None],
        then_typing: Callable[[Callable[[], object]], Callable[[], object]] = lambda c: c,
    ) -> None:
        check_mode(mode)
        self.root = services.root
        self.t, self.status = services.translate, services.status
        self.panes, self.health, self.bar = places.panes, places.health, places.top_bar
        self.anchor = places.banner_anchor
        self.chat_only = False
        # The chat-only view's button calls this (the window's part that remembers it).
        self.on_show_teaching: Callable[[], object] = lambda: self.set_chat_only(False)
        self.mode = mode
        self.lessons = lessons
        self.compare_command = compare_command
        self.compare_process: subprocess.Popen[bytes] | None = None
        self.on_mode_changed = on_mode_changed
        self.lesson_panel: LessonPanel | None = None
        self.font_size = BODY_SIZE  # the window's text size, which the lesson panel follows
        # After a button or the mode box the keys go back to the chat (ui/typing_home.py).
        self._then_typing = then_typing
        self._build_bar(mode)
        self.warning = tk.Label(
            self.health.master,
            anchor="w",
            justify="left",
            padx=dp(self.root, 8),
            pady=dp(self.root, 3),
            font="TkDefaultFont",
            wraplength=860,
        )
        set_role(self.warning, "broken")  # red with white text, in every theme
        recolour(self.warning, palette_of(self.root))
        self.warning.bind(
            "<Configure>", lambda e: self.warning.configure(wraplength=max(200, e.width - 20))
        )
        self.t.on_change(self._relabel)
        self._show_warning()  # a window started in a broken mode (or one's own) says so at once

    def _build_bar(self, mode: str) -> None:
        """The Lessons and Compare buttons and the mode box at the right of the top bar, and
        the chat-only view's line, left of the language button."""
        bar, translate = self.bar, self.t
        self.lessons_button = ttk.Button(bar, command=self._then_typing(self.toggle_lessons))
        translate.bind(self.lessons_button, "button.lessons")
        bar.add(self.lessons_button)
        self.compare_button: ttk.Button | None = None
        if self.compare_command is not None:
            self.compare_button = ttk.Button(bar, command=self._then_typing(self.open_compare))
            translate.bind(self.compare_button, "button.compare")
            bar.add(self.compare_button)
        # A pipeline of one's own (``--mode mine.py:Pipeline``) can be chosen again after
        # trying the others.
        modes = MODES + ((mode,) if is_outside_mode(mode) else ())
        self.mode_box = ttk.Combobox(bar, values=modes, state="readonly", width=19)
        self.mode_box.set(mode)
        self.mode_box.bind(
            "<<ComboboxSelected>>",
            lambda _e: self._then_typing(lambda: self.set_mode(self.mode_box.get()))(),
        )
        mode_label = ttk.Label(bar)
        translate.bind(mode_label, "label.mode")
        bar.add(self.mode_box, mode_label, gap=4)  # the label and its box stay together
        # The chat-only view's line: the figures, then the button that brings the rest back.
        # Left out until that view is chosen.
        self.teach_button = ttk.Button(
            bar, command=self._then_typing(lambda: self.on_show_teaching())
        )
        translate.bind(self.teach_button, "button.teaching")
        bar.add(self.teach_button)
        bar.add(self.health.compact)
        bar.set_visible(self.teach_button, False)
        bar.set_visible(self.health.compact, False)

    @property
    def broken(self) -> bool:
        """Not one of tkchat's correct pipelines (the fixed one, the asyncio ones): a broken
        demo, or one's own (whose banner is blue, and which Compare puts beside the fixed
        pipeline as it does a demo)."""
        return self.mode not in CORRECT_MODES

    def set_mode(self, mode: str) -> None:
        """Choose how the *next* answer travels to the screen."""
        check_mode(mode)
        self.mode = mode
        if self.mode_box.get() != mode:
            self.mode_box.set(mode)
        self._show_warning()
        self.on_mode_changed()

    def _show_warning(self) -> None:
        if not self.broken:
            self.warning.pack_forget()
            return
        if is_outside_mode(self.mode):
            text = self.t("outside.banner", mode=self.mode)
            set_role(self.warning, "outside")
        else:
            summary = self.t(f"mode.{self.mode}")
            text = self.t("warning.broken", mode=self.mode, summary=summary)
            set_role(self.warning, "broken")  # red with white text, in every theme
        recolour(self.warning, palette_of(self.warning))
        self.warning.configure(text=text)
        self.warning.pack(side="top", fill="x", after=self.anchor)

    def _relabel(self, lang: str) -> None:
        self._show_warning()
        if self.lesson_panel is not None:
            self.lesson_panel.set_language(lang)

    def set_chat_only(self, on: bool) -> None:
        """Fold the teaching controls into one line, or unfold them. Folding closes the
        lesson panel: it is a teaching control too."""
        self.chat_only = on
        for widget in (self.lessons_button, self.compare_button, self.mode_box):
            if widget is not None:
                self.bar.set_visible(widget, not on)
        self.bar.set_visible(self.teach_button, on)
        self.bar.set_visible(self.health.compact, on)
        self.health.set_compact(on)
        if on:
            self.health.pack_forget()
            if self.lesson_panel is not None:
                self.toggle_lessons()
        elif not self.health.winfo_manager():
            self.health.pack(side="top", fill="x", before=self.anchor)
            self.health.relayout()

    def toggle_lessons(self) -> None:
        """Show or hide the lesson panel beside the chat (in the chat-only view, the
        teaching controls come back with it)."""
        if self.lesson_panel is None and self.chat_only:
            self.on_show_teaching()
        if self.lesson_panel is None:
            self.lesson_panel = LessonPanel(
                self.panes,
                language=self.t.lang,
                on_setup_demo=self.lessons.setup_demo,
                read_figure=self.lessons.read_figure,
                translate=self.t,
                body_size=self.font_size,
                timeline=self.lessons.timeline,
            )
            if self.lessons.answers_ended is not None:
                self.lesson_panel.answers_ended = self.lessons.answers_ended
            if self.lessons.caught_up is not None:
                self.lesson_panel.caught_up = self.lessons.caught_up
            if self.lessons.picked is not None:
                self.lesson_panel.picked = self.lessons.picked
            self.panes.add(self.lesson_panel, weight=2)
            wide = window_size(self.root, LESSONS_MIN_WIDTH, LESSONS_MIN_HEIGHT)
            least_w, least_h = (int(part) for part in wide.split("x"))
            width = max(self.root.winfo_width(), least_w)
            self.root.geometry(f"{width}x{max(self.root.winfo_height(), least_h)}")
        else:
            self.panes.forget(self.lesson_panel)
            self.lesson_panel.destroy()
            self.lesson_panel = None
            self.health.highlight(None)

    def set_font_size(self, size: int) -> None:
        """The window's text size changed: the open lesson follows it live."""
        self.font_size = size
        if self.lesson_panel is not None:
            self.lesson_panel.set_font_size(size)

    def open_compare(self) -> None:
        """Start ``tkchat compare`` (two windows, broken and fixed) as its own process."""
        if self.compare_command is None:
            return
        if self.compare_process is not None and self.compare_process.poll() is None:
            self.status.say("app.compare_open")
            return
        broken = self.mode if self.broken else "blocking"
        self.compare_process = subprocess.Popen(self.compare_command(broken))
        self.status.say("app.compare_opened", broken=broken)

    def close(self) -> None:
        if self.compare_process is not None and self.compare_process.poll() is None:
            self.compare_process.terminate()
        if self.lesson_panel is not None:
            self.lesson_panel.destroy()
