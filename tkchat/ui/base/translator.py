"""Puts the interface strings (``tkchat.i18n``) on widgets, and switches language.

Widgets register their text with :meth:`Translator.bind`; switching the language re-labels
them all. Text made on the fly (status lines, health figures) calls the translator each time.
Model output and the model's own error messages are content, not interface, and stay as they
are.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.i18n import LANGUAGES, STRINGS

CJK_FAMILIES = (
    "noto sans cjk sc",
    "noto sans cjk",
    "noto serif cjk sc",
    "source han sans",
    "wenquanyi",
    "droid sans fallback",
    "ar pl",
    "microsoft yahei",
    "pingfang sc",
    "simsun",
    "hiragino sans gb",
    "sarasa",
)


class Translator:
    """Main thread only (it configures widgets)."""

    def __init__(self, lang: str) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}")
        self.lang = lang
        self._bound: list[tuple[tk.Misc, str, str]] = []
        self._listeners: list[Callable[[str], None]] = []
        self._prune_at = 64  # forget destroyed widgets once the lists grow past this

    def __call__(self, key: str, **values: object) -> str:
        text = STRINGS[self.lang].get(key)
        if text is None:
            raise KeyError(f"no {self.lang} string for {key!r}")
        return text.format(**values) if values else text

    def bind(self, widget: tk.Misc, key: str, option: str = "text") -> None:
        """Label ``widget`` now and again whenever the language changes."""
        widget.configure({option: self(key)})
        self._bound.append((widget, option, key))
        self._maybe_prune()

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(lang)`` after every language change (for text built on the fly).
        A widget's bound method is dropped once that widget is destroyed (a closed dialog)."""
        self._listeners.append(listener)
        self._maybe_prune()

    def forget(self, window: tk.Misc) -> None:
        """A window closing: drop its widgets and its listeners now (what :meth:`_maybe_prune`
        would drop only once the lists had grown)."""
        path = str(window)
        inside = (path, f"{path}.")

        def outside(widget: object) -> bool:
            return not (isinstance(widget, tk.Misc) and str(widget).startswith(inside))

        self._bound = [entry for entry in self._bound if outside(entry[0])]
        self._listeners = [
            listener for listener in self._listeners if outside(getattr(listener, "__self__", None))
        ]

    def _maybe_prune(self) -> None:
        """Dialogs come and go: without this, each one opened stayed referenced forever."""
        if len(self._bound) + len(self._listeners) < self._prune_at:
            return
        self._bound = [entry for entry in self._bound if _alive(entry[0])]
        self._listeners = [
            listener for listener in self._listeners if _alive(getattr(listener, "__self__", None))
        ]
        self._prune_at = max(64, 2 * (len(self._bound) + len(self._listeners)))

    def set_language(self, lang: str) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}")
        self.lang = lang
        for widget, option, key in self._bound:
            if widget.winfo_exists():
                widget.configure({option: self(key)})
        for listener in self._listeners:
            if _alive(getattr(listener, "__self__", None)):  # not a widget destroyed since
                listener(lang)


def _alive(owner: object) -> bool:
    """False for a destroyed widget; True for anything that is not a widget."""
    if not isinstance(owner, tk.Misc):
        return True
    try:
        return bool(owner.winfo_exists())
    except tk.TclError:  # its whole Tk is gone
        return False


def has_cjk_font(widget: tk.Misc) -> bool:
    """Whether the system has a font that can show Chinese (Tk falls back to it per glyph)."""
    import tkinter.font as tkfont

    families = [name.lower() for name in tkfont.families(widget)]
    return any(name.startswith(wanted) for name in families for wanted in CJK_FAMILIES)
