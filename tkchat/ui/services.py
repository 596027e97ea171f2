"""What the chat window's parts share, handed to each as one value.

The window (:mod:`tkchat.ui.window.chat_window`) makes one :class:`Services` and gives it to
every part (saved conversations, model switching, the settings, the teaching controls ...)
together with what is that part's alone. A part takes the few services it uses in its
constructor and keeps only those, so what a part depends on stays visible at the top of its
class, and no part holds the whole window.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from dataclasses import dataclass
from tkinter import ttk

from tkchat.generate.controller import GenerationController
from tkchat.ui.chats.session import ChatSession
from tkchat.ui.health import HealthBar
from tkchat.ui.look.fit import FlowRow
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.settings.remembered import Remembered
from tkchat.ui.window.status import StatusLine
from tkchat.ui.window.translator import Translator


@dataclass(frozen=True)
class Services:
    """``root``: the window, parent of its dialogs; ``scheduler``: every timer, named;
    ``translate``: the interface's language; ``status``: the status line; ``remembered``:
    the settings kept between runs; ``controller``: the model (loading, generating,
    counting); ``session``: the conversation as the model reads it."""

    root: tk.Tk
    scheduler: AfterScheduler
    translate: Translator
    status: StatusLine
    remembered: Remembered
    controller: GenerationController
    session: ChatSession


@dataclass(frozen=True)
class Places:
    """Where the parts add to the window (:mod:`tkchat.ui.window.layout` makes them):
    ``panes`` (the sidebar joins the chat at the left, the lesson panel at the right),
    ``top_bar`` (buttons), ``health`` (the health bar) and ``banner_anchor`` (banners are
    packed after it)."""

    panes: ttk.Panedwindow
    top_bar: FlowRow
    health: HealthBar
    banner_anchor: tk.Misc
