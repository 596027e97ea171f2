"""What the window remembers between runs (``settings.json``), as the window's parts see it.

The settings dialog, the model picker, the text size and the language each change one field;
this writes the whole file once per change (when the window keeps settings at all:
``--no-history`` keeps nothing) and reports a failed write through ``on_warning``.

Main thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tkchat.store.settings import AppSettings, save_settings


class Remembered:
    def __init__(
        self, settings: AppSettings, *, persist: bool, on_warning: Callable[[str], None]
    ) -> None:
        self.current = settings
        self.persist = persist
        self.on_warning = on_warning

    def change(self, **changes: Any) -> None:
        """Change some fields (names of :class:`AppSettings`) and write the file."""
        self.current = replace(self.current, **changes)
        if not self.persist:
            return
        warning = save_settings(self.current)
        if warning:
            self.on_warning(warning)
