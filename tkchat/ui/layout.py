"""Where everything is in the chat window: the widgets, built and placed, and nothing else.

:class:`ChatLayout` is the window without behaviour (like a Qt ``setupUi``): the app
(``tkchat/ui/app.py``) inherits it and gives it the few commands its buttons call. Reading
this file tells where a widget is; reading the app tells what it does.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass
from tkinter import ttk
from typing import Literal

from tkchat.ui.context_meter import ContextMeter
from tkchat.ui.health import HealthBar
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.message_box import MessageBox
from tkchat.ui.notice import NoticeBanner
from tkchat.ui.progress import ProgressLine
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.status import StatusLine
from tkchat.ui.transcript import Transcript
from tkchat.ui.translator import Translator


@dataclass(frozen=True)
class ButtonCommands:
    """What the window's buttons call."""

    send: Callable[[], object]
    stop: Callable[[], object]
    regenerate: Callable[[], object]
    toggle_language: Callable[[], object]


class ChatLayout:
    """The widgets of one chat window, from top to bottom:

    ``top_bar`` (the language button; the teaching controls join it, see
    ``tkchat/ui/teaching.py``) · ``status`` line with the context meter (and, while the
    window waits for a prompt to be read or a model to load, the ``progress`` line) ·
    ``health`` bar ·
    ``storage_banner`` (hidden) · ``transcript`` · the ``input`` row with Send, Stop and
    Regenerate.

    The chat sits in ``panes``, so the sidebar (left) and the lesson panel (right) can join it.
    """

    def _build_layout(
        self,
        root: tk.Tk,
        translate: Translator,
        scheduler: AfterScheduler,
        probe: LagProbe,
        read_tokens: Callable[[], int],
        commands: ButtonCommands,
    ) -> None:
        t = translate
        root.geometry("900x680")
        root.minsize(520, 360)
        self.panes = ttk.Panedwindow(root, orient="horizontal")
        self.panes.pack(fill="both", expand=True)
        self.chat = chat = ttk.Frame(self.panes)
        self.panes.add(chat, weight=3)

        self.top_bar = ttk.Frame(chat, padding=(8, 6, 8, 0))
        self.language_button = self._button(
            self.top_bar, t, "button.language", commands.toggle_language
        )
        self.language_button.configure(width=8)
        self.top_bar.pack(side="top", fill="x")

        status_row = ttk.Frame(chat)
        self.status = StatusLine(status_row, t)
        self.context_meter = ContextMeter(status_row, t)
        self.context_meter.pack(side="right")
        self.status.pack(side="left", fill="x", expand=True)
        self.progress = ProgressLine(status_row, t, before=self.status)  # packs itself
        status_row.pack(side="top", fill="x", padx=8, pady=(4, 0))

        self.health = HealthBar(
            chat, scheduler, probe, read_tokens, lambda: self.transcript.inserts, t
        )
        self.health.pack(side="top", fill="x")
        self.storage_banner = NoticeBanner(chat, self.health, t)

        bottom = ttk.Frame(chat, padding=8)
        self.input = MessageBox(bottom, on_send=commands.send)
        self.input.pack(side="left", fill="both", expand=True)
        self.send_button = self._button(bottom, t, "button.send", commands.send, "left", 8)
        self.stop_button = self._button(bottom, t, "button.stop", commands.stop, "left")
        self.regenerate_button = self._button(
            bottom, t, "button.regenerate", commands.regenerate, "left"
        )
        for button in (self.stop_button, self.regenerate_button):
            button.configure(state="disabled")
        bottom.pack(side="bottom", fill="x")

        # Packed last, so it takes the room the others leave.
        self.transcript = Transcript(chat, scheduler, t)
        self.transcript.pack(side="top", fill="both", expand=True)
        self.input.configure(font=self.transcript.body_font)

    @staticmethod
    def _button(
        parent: tk.Misc,
        translate: Translator,
        key: str,
        command: Callable[[], object],
        side: Literal["left", "right"] = "right",
        gap: int = 6,
    ) -> ttk.Button:
        button = ttk.Button(parent, command=command)
        translate.bind(button, key)
        button.pack(side=side, padx=(gap, 0))
        return button
