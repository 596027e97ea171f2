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

from tkchat.generate.controller import GenerationController
from tkchat.ui.base.remembered import Remembered
from tkchat.ui.base.session import ChatSession
from tkchat.ui.base.status import StatusLine
from tkchat.ui.base.translator import Translator
from tkchat.ui.scheduler import AfterScheduler


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
