"""What a widget needs from :class:`tkchat.i18n.Translator`, as a protocol.

Widgets that bring their own strings (the sidebar, the dialogs) are merged into
``tkchat.i18n``, so they cannot import it back; they type their ``translate`` with this.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from typing import Protocol


class Translate(Protocol):
    def __call__(self, key: str, **values: object) -> str: ...

    def bind(self, widget: tk.Misc, key: str, option: str = "text") -> None: ...

    def on_change(self, listener: Callable[[str], None]) -> None: ...
