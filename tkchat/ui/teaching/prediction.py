"""Predict, then observe: a lesson's question for the class, in the lesson panel, before its demo.

The panel shows the question (and the choices the class picks from, as radio buttons) while
the lesson's expected figure stays hidden; when the demo's answer has ended, or the teacher
presses *Show the answer*, the box says which choice the class picked and the panel shows the
expectation beside the live figure (:mod:`tkchat.ui.teaching.lesson_panel` decides when).

Main thread only, like every widget.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

from tkchat.course.prediction import Prediction
from tkchat.ui.look.fit import breakable, wrap_rows
from tkchat.ui.look.scaling import dp
from tkchat.ui.tcl_var import TclVar

NOT_PICKED = -1


class PredictionBox(ttk.Frame):
    """The question, the choices and *Show the answer*; after the answer, the class's pick.

    ``translate(key)`` gives the fixed strings (``tkchat/i18n/lesson_panel.py``);
    ``on_reveal()`` is called once per question, when the answer is shown."""

    def __init__(
        self,
        master: tk.Misc,
        *,
        translate: Callable[[str], str],
        fonts: tuple[tkfont.Font, tkfont.Font],
        on_reveal: Callable[[], None],
    ) -> None:
        super().__init__(master)
        self.translate = translate
        self.on_reveal = on_reveal
        self.prediction: Prediction | None = None
        self.revealed = False
        self.pick = TclVar(self, NOT_PICKED)  # not a tk.IntVar: tkchat/ui/tcl_var.py says why
        note, bold = fonts
        self.question = ttk.Label(self, justify="left", wraplength=420, font=bold)
        self.question.pack(side="top", fill="x")
        # the choices left to right and the button at the right, on as many rows as the width
        # needs: at 1280×720 with a projector's text one row cut the last choice in half, and
        # the button beside the question made it four lines tall (the lag timeline lost)
        self.row = ttk.Frame(self)
        self.show_button = ttk.Button(self.row, command=self.reveal)
        self.buttons: list[ttk.Radiobutton] = []
        self._lines: list[ttk.Frame] = []
        self._shape: tuple[int, ...] = ()
        self.row.bind("<Configure>", lambda e: self._flow(int(e.width)), add="+")
        self.row.pack(side="top", fill="x", pady=(dp(self, 2), 0))
        # after the answer: which choice the class picked, in place of the choices
        self.picked_label = ttk.Label(self, justify="left", wraplength=420, font=note)

    @property
    def waiting(self) -> bool:
        """A question is asked and its answer not shown yet."""
        return self.prediction is not None and not self.revealed

    @property
    def picked(self) -> str | None:
        """The choice the class picked (None: none yet, or an open question)."""
        index = int(self.pick.get())
        if self.prediction is None or not 0 <= index < len(self.prediction.choices):
            return None
        return self.prediction.choices[index]

    def ask(self, prediction: Prediction, *, again: bool = False) -> None:
        """Pose ``prediction``. ``again``: the same question in the other language, keeping
        what the class picked and whether the answer is out."""
        self.prediction = prediction
        if not again:
            self.revealed = False
            self.pick.set(NOT_PICKED)
        for button in self.buttons:
            button.destroy()
        self.buttons = [
            self.pick.attach(ttk.Radiobutton(self.row, text=choice, value=index), "variable")
            for index, choice in enumerate(prediction.choices)
        ]
        self._relabel()
        self._shape = ()
        self.update_idletasks()  # the buttons' sizes, to flow them
        self._flow(self.row.winfo_width())

    def clear(self) -> None:
        """No question (a lesson that asks none): the box steps aside."""
        self.prediction = None
        self.pack_forget()

    def reveal(self) -> None:
        """Show the answer now (the button, or the demo's answer has ended)."""
        if not self.waiting:
            return
        self.revealed = True
        self._relabel()
        self.on_reveal()

    def set_wrap(self, width: int) -> None:
        self.question.configure(wraplength=width)
        self.picked_label.configure(wraplength=width)

    def _flow(self, width: int) -> None:
        """The choices and the button on rows of ``width`` pixels, left to right (unknown
        width: one row)."""
        gap = dp(self, 10)
        items: list[tk.Widget] = [*self.buttons, self.show_button]
        places = wrap_rows([item.winfo_reqwidth() + gap for item in items], width)
        rows = [[items[index] for index in row] for row in places]
        shape = tuple(len(row) for row in rows)
        if shape == self._shape:
            return
        self._shape = shape
        while len(self._lines) < len(rows):
            self._lines.append(ttk.Frame(self.row))
        for index, line in enumerate(self._lines):
            if index < len(rows):
                line.pack(side="top", fill="x", pady=(0 if index == 0 else dp(self, 2), 0))
            else:
                line.pack_forget()
        for line, row in zip(self._lines, rows, strict=False):
            for item in row:
                if item is self.show_button:
                    item.pack(in_=line, side="right")
                else:
                    item.pack(in_=line, side="left", padx=(0, gap))
                item.lift(line)  # stacked above the row it is packed into

    def _relabel(self) -> None:
        prediction = self.prediction
        if prediction is None:
            return
        label = self.translate("lesson.line").format(
            label=self.translate("predict.ask"), text=prediction.question
        )
        self.question.configure(text=breakable(label))
        self.show_button.configure(text=self.translate("predict.show"))
        if not self.revealed:
            self.picked_label.pack_forget()
            self.question.pack(side="top", fill="x")
            self.row.pack(side="top", fill="x", pady=(dp(self, 2), 0))
            return
        # answered: one line, which choice the class picked (the expectation is beside the
        # live figure, under it); the question has been discussed
        self.question.pack_forget()
        self.row.pack_forget()
        if not prediction.choices:
            self.picked_label.pack_forget()
            return
        picked = self.picked
        said = (
            self.translate("predict.none_picked")
            if picked is None
            else self.translate("predict.picked").format(choice=picked)
        )
        self.picked_label.configure(text=breakable(said))
        if not self.picked_label.winfo_manager():
            self.picked_label.pack(side="top", fill="x", pady=(dp(self, 2), 0))
