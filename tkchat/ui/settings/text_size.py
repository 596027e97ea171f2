"""The text size the user chooses, and projector mode.

The View menu, Ctrl+plus/minus/0 and the settings dialog set one size for the whole window;
it is remembered in ``settings.json`` (the default is not written, so it keeps following Tk's).
How that one number reaches every widget is :mod:`tkchat.ui.settings.fonts`. Projector mode
(View menu, F11, ``--projector``) is for a classroom: text large enough for the back of the room
everywhere (the lesson panel included), the heartbeat and the lag larger still, and the list
of saved chats out of the way; turning it off gives back the size used before. The sizes
projector mode sets are not remembered (one the user picks while it is on is, as always), so
the next start has the user's own size.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.ui.base.services import Services
from tkchat.ui.places import Places
from tkchat.ui.settings.fonts import FontSizer
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE

PROJECTOR_SIZE = BODY_FONT_SIZE + 5  # points: readable from the back of a room
BIG_FIGURE_STEP = 4  # the heartbeat and the lag, this much larger still, in projector mode


class TextSize:
    """Sets ``fonts``' size, remembers it in ``remembered``, and runs projector mode.

    After every size change the ``health`` bar's figures and the ``top_bar`` wrap again (and
    in projector mode the figures grow with the text). ``sidebar()`` is the list of saved
    chats, or None where the window keeps none (a getter: it is built after this, and this
    must listen to ``fonts`` before the list does). ``panes`` holds it; ``status`` says when
    projector mode turns on or off. (``remembered`` and ``status`` come from the window's
    services; ``health``, ``top_bar`` and ``panes`` from its places.)"""

    def __init__(
        self,
        fonts: FontSizer,
        services: Services,
        places: Places,
        sidebar: Callable[[], tk.Widget | None],
    ) -> None:
        self.fonts = fonts
        self.remembered = services.remembered
        self.status = services.status
        self.health = places.health
        self.top_bar = places.top_bar
        self.panes = places.panes
        self.sidebar = sidebar
        self.projector = False
        self._size_before_projector = BODY_FONT_SIZE
        fonts.on_change(self._resize_big_figures)

    def change(self, step: int) -> None:
        """Ctrl+plus, Ctrl+minus: ``step`` points bigger (or smaller), remembered."""
        self.set(self.fonts.size + step)

    def set(self, size: int, *, save: bool = True) -> int:
        """The whole window's text size; remembered if ``save``. Returns the size used
        (clamped)."""
        size = self.fonts.apply(size)
        if save:
            self.remembered.change(font_size=None if size == BODY_FONT_SIZE else size)
        return size

    def set_projector(self, on: bool) -> None:
        """Projector mode on or off (nothing to do if it already is)."""
        if on == self.projector:
            return
        self.projector = on
        sidebar = self.sidebar()
        if on:
            self._size_before_projector = self.fonts.size
            if sidebar is not None:  # a class needs the room more than the list of chats
                self.panes.forget(sidebar)
            self.set(max(self.fonts.size, PROJECTOR_SIZE), save=False)
            self.status.say("app.projector_on")
        else:
            if sidebar is not None:
                self.panes.insert(0, sidebar, weight=1)
            self.health.set_big(None)
            self.set(self._size_before_projector, save=False)
            self.status.say("app.projector_off")

    def _resize_big_figures(self, size: int) -> None:
        """After a text size change: the projector's figures, and the rows that wrap."""
        if self.projector:
            self.health.set_big(size + BIG_FIGURE_STEP)
        self.health.relayout()
        self.top_bar.relayout()
