"""Where everything is in the chat window: the widgets, built and placed, and nothing else.

:class:`ChatLayout` is the window without behaviour (like a Qt ``setupUi``): the app
(``tkchat/ui/window/chat_window.py``) inherits it and gives it the few commands its buttons
call. Reading this file tells where a widget is; reading the app tells what it does.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass
from tkinter import ttk
from typing import Literal

from tkchat.ui.base.message_box import MessageBox
from tkchat.ui.base.notice import ERROR, NoticeBanner
from tkchat.ui.base.status import StatusLine
from tkchat.ui.base.translator import Translator
from tkchat.ui.chats.context_meter import ContextMeter
from tkchat.ui.health import HealthBar
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.look.fit import FlowRow
from tkchat.ui.look.scaling import dp, dp_pad, window_size
from tkchat.ui.look.theme import ACCENT_BUTTON, HINT_STYLE
from tkchat.ui.places import Places
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.transcript import Transcript
from tkchat.ui.window.progress import ProgressLine

# Sizes in pixels of the 96-dpi design; tkchat/ui/look/scaling.py turns them into screen pixels.
MESSAGE_BOX_MIN_WIDTH = 220  # below this, the buttons go under the box
BUTTON_GAP = 6
WINDOW_SIZE = (900, 680)
WINDOW_MIN_SIZE = (520, 360)


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
    ``tkchat/ui/teaching/controls.py``) · ``status`` line with the context meter (and, while the
    window waits for a prompt to be read or a model to load, the ``progress`` line) ·
    ``health`` bar ·
    ``banner_anchor`` (an empty strip the banners go after, so they keep their place when
    the chat-only view hides the health bar) · ``storage_banner`` (hidden) · ``transcript``
    · the ``input`` row with Send, Stop and Regenerate, and the draft's token count under it
    (``draft_label``).

    The chat sits in ``panes``, so the sidebar (left) and the lesson panel (right) can join it.
    ``places`` names where the parts add to the window (:class:`~tkchat.ui.places.Places`).
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
        root.geometry(window_size(root, *WINDOW_SIZE))
        root.minsize(dp(root, WINDOW_MIN_SIZE[0]), dp(root, WINDOW_MIN_SIZE[1]))
        self.panes = ttk.Panedwindow(root, orient="horizontal")
        self.panes.pack(fill="both", expand=True)
        self.chat = chat = ttk.Frame(self.panes)
        self.panes.add(chat, weight=3)

        self.top_bar = FlowRow(chat, padding=dp_pad(root, 8, 6, 8, 0))
        self.language_button = self._button(
            self.top_bar, t, "button.language", commands.toggle_language
        )
        self.language_button.configure(width=8)
        self.top_bar.add(self.language_button)
        self.top_bar.pack(side="top", fill="x")

        status_row = ttk.Frame(chat)
        self.status = StatusLine(status_row, t)
        self.context_meter = ContextMeter(status_row, t)
        self.context_meter.pack(side="right")
        self.status.pack(side="left", fill="x", expand=True)
        self.progress = ProgressLine(status_row, t, status=self.status)  # packs itself
        status_row.pack(side="top", fill="x", padx=dp(root, 8), pady=(dp(root, 4), 0))

        self.health = HealthBar(
            chat, scheduler, probe, read_tokens, lambda: self.transcript.inserts, t
        )
        self.health.pack(side="top", fill="x")
        self.banner_anchor = ttk.Frame(chat, height=1)
        self.banner_anchor.pack(side="top", fill="x")
        self.storage_banner = NoticeBanner(chat, self.banner_anchor, t)
        self.model_banner = NoticeBanner(chat, self.banner_anchor, t, kind=ERROR)

        bottom = ttk.Frame(chat, padding=dp(root, 8))
        self.input = MessageBox(bottom, on_send=commands.send)
        self.send_button = self._button(bottom, t, "button.send", commands.send)
        self.stop_button = self._button(bottom, t, "button.stop", commands.stop)
        self.regenerate_button = self._button(bottom, t, "button.regenerate", commands.regenerate)
        self.send_button.configure(style=ACCENT_BUTTON)  # the default action stands out
        for button in (self.stop_button, self.regenerate_button):
            button.configure(state="disabled")
        # The draft's token count, under the box (tkchat/ui/chats/draft_count.py fills it in).
        self.draft_label = ttk.Label(bottom, style=HINT_STYLE, anchor="w")
        self.draft_label.grid(row=2, column=0, columnspan=4, sticky="w")
        self._input_row: bool | None = None
        self._place_input_row(one_row=True)
        bottom.bind("<Configure>", lambda e: self._place_input_row(self._fits_one_row(e.width)))
        bottom.pack(side="bottom", fill="x")

        # Packed last, so it takes the room the others leave.
        self.transcript = Transcript(chat, scheduler, t)
        self.transcript.pack(side="top", fill="both", expand=True)
        self.input.configure(font=self.transcript.body_font)

    @property
    def places(self) -> Places:
        return Places(self.panes, self.top_bar, self.health, self.banner_anchor)

    def _buttons(self) -> tuple[ttk.Button, ...]:
        return (self.send_button, self.stop_button, self.regenerate_button)

    def _fits_one_row(self, width: int) -> bool:
        gap = dp(self.input, BUTTON_GAP)
        buttons = sum(button.winfo_reqwidth() + gap for button in self._buttons())
        return buttons + dp(self.input, MESSAGE_BOX_MIN_WIDTH) <= width

    def _place_input_row(self, one_row: bool) -> None:
        """The message box and its buttons on one row, or, when the window is too narrow for
        that (big text, a projector), the buttons on a row of their own under the box."""
        if one_row == self._input_row:
            return
        self._input_row = one_row
        self.input.grid(row=0, column=0, columnspan=1 if one_row else 4, sticky="nsew")
        gap = dp(self.input, BUTTON_GAP)
        for index, button in enumerate(self._buttons(), start=1):
            if one_row:
                button.grid(row=0, column=index, sticky="n", padx=(gap, 0), pady=0)
            else:
                button.grid(row=1, column=index, sticky="e", padx=(gap, 0), pady=(gap, 0))
        self.input.master.columnconfigure(0, weight=1)

    @staticmethod
    def _button(
        parent: tk.Misc,
        translate: Translator,
        key: str,
        command: Callable[[], object],
        side: Literal["left", "right"] | None = None,
        gap: int = 6,
    ) -> ttk.Button:
        button = ttk.Button(parent, command=command)
        translate.bind(button, key)
        if side is not None:
            button.pack(side=side, padx=(dp(parent, gap), 0))
        return button
