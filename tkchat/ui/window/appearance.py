"""The View menu's look: light, dark or the system's theme, and the chat-only view — both
remembered in ``settings.json``.

The window's part for it: of the window's services it takes the root (to paint), what is
remembered and the status line (to say what was detected); it is given the teaching controls
(which fold into one line in the chat-only view), and nothing else of the app.

Main thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from tkchat.ui.base.services import Services
from tkchat.ui.look.palette import CHOICES, SYSTEM, Palette, resolve_choice
from tkchat.ui.look.system_theme import Detected, detect_system_theme
from tkchat.ui.look.theme import Theme
from tkchat.ui.teaching.controls import TeachingControls
from tkchat.ui.window.menubar import MenuBar


class Appearance:
    """``choice`` is "system", "light" or "dark"; ``chat_only`` whether the teaching
    controls are folded. ``detect()`` asks the system (tests give their own)."""

    def __init__(
        self,
        services: Services,
        teaching: TeachingControls,
        detect: Callable[[], Detected] | None = None,
    ) -> None:
        self.root = services.root
        self.remembered = services.remembered
        self.teaching = teaching
        self.status = services.status
        self.detect = detect or detect_system_theme
        self.theme = Theme(self.root)
        self.choice = SYSTEM
        self.detected: Detected | None = None  # what the system said, once asked
        self.chat_only = False
        self.menubar: MenuBar | None = None
        teaching.on_show_teaching = lambda: self.set_chat_only(False)

    def commands(self) -> dict[str, Callable[[], object]]:
        """The View menu's items for it (names in ``tkchat/ui/window/menubar.py``)."""
        commands: dict[str, Callable[[], object]] = {
            f"theme_{choice}": partial(self.set_theme, choice) for choice in CHOICES
        }
        commands["chat_only"] = self.toggle_chat_only
        return commands

    def show_in(self, menubar: MenuBar) -> None:
        """Keep ``menubar``'s check marks on the theme and the view in use."""
        self.menubar = menubar
        self._mark()

    def _mark(self) -> None:
        if self.menubar is None:
            return
        for choice in CHOICES:
            self.menubar.set_checked(f"theme_{choice}", choice == self.choice)
        self.menubar.set_checked("chat_only", self.chat_only)

    @property
    def palette(self) -> Palette:
        return self.theme.palette

    def start(self, choice: str | None, chat_only: bool) -> None:
        """At start: the remembered (or command-line) theme and view, without saving them."""
        self.set_theme(choice or SYSTEM, save=False)
        self.set_chat_only(chat_only, save=False)

    def set_theme(self, choice: str, *, save: bool = True) -> None:
        """Light, dark, or "system": follow what the desktop says (asked again each time the
        user picks it, so a desktop switched since start is followed)."""
        if choice not in CHOICES:
            raise ValueError(f"unknown theme {choice!r}")
        self.choice = choice
        system = None
        if choice == SYSTEM:
            self.detected = self.detect()
            system = self.detected.scheme
        self.theme.apply(resolve_choice(choice, system))
        self._mark()
        if save:
            self.remembered.change(theme=None if choice == SYSTEM else choice)
            if choice == SYSTEM and self.detected is not None:
                self._say_detected(self.detected)

    def _say_detected(self, detected: Detected) -> None:
        t, name = self.status.t, self.palette.name

        def sentence() -> str:
            source = detected.source if detected.scheme else t("appearance.nothing_detected")
            return t("appearance.system", theme=t(f"appearance.name.{name}"), source=source)

        self.status.show(sentence)

    def set_chat_only(self, on: bool, *, save: bool = True) -> None:
        """Fold the teaching controls into one line (the heartbeat stays), or bring them
        back."""
        self.chat_only = on
        self.teaching.set_chat_only(on)
        self._mark()
        if save:
            self.remembered.change(chat_only=on)

    def toggle_chat_only(self) -> None:
        self.set_chat_only(not self.chat_only)
