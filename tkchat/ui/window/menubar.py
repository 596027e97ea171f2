"""The window's menu bar: every command in one findable place, with its shortcut shown.

The bar only names commands; what they do is the app's (``commands[name]``). Labels are
translated and re-labelled when the language changes. A menu accelerator is just text in Tk:
:func:`bind_shortcuts` binds the keys themselves, from :data:`SHORTCUTS`.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable, Mapping

from tkchat.ui.base.translator import Translator
from tkchat.ui.tcl_var import TclVar

# (menu label key, [(item label key, command name, accelerator text) or None for a separator])
MENUS: tuple[tuple[str, tuple[tuple[str, str, str] | None, ...]], ...] = (
    (
        "menu.file",
        (
            ("menu.new", "new", "Ctrl+N"),
            ("menu.search", "search", "Ctrl+F"),
            None,
            ("menu.import", "import", ""),
            ("menu.export_md", "export_md", ""),
            ("menu.export_json", "export_json", ""),
            None,
            ("menu.quit", "quit", "Ctrl+Q"),
        ),
    ),
    (
        "menu.chat",
        (
            ("menu.regenerate", "regenerate", "Ctrl+R"),
            ("menu.previous_version", "previous_version", "Alt+Left"),
            ("menu.next_version", "next_version", "Alt+Right"),
            ("menu.stop", "stop", "Esc"),
            ("menu.focus_input", "focus_input", "Ctrl+L"),
            None,
            ("menu.settings", "settings", "Ctrl+,"),
        ),
    ),
    (
        "menu.model",
        (
            ("menu.choose_model", "choose_model", "Ctrl+M"),
            ("menu.get_model", "get_model", ""),
        ),
    ),
    (
        "menu.view",
        (
            ("menu.bigger", "bigger", "Ctrl++"),
            ("menu.smaller", "smaller", "Ctrl+-"),
            ("menu.reset_size", "reset_size", "Ctrl+0"),
            ("menu.projector", "projector", "F11"),
            None,
            ("menu.theme_system", "theme_system", ""),
            ("menu.theme_light", "theme_light", ""),
            ("menu.theme_dark", "theme_dark", ""),
            ("menu.chat_only", "chat_only", ""),
            None,
            ("menu.lessons", "lessons", ""),
            ("menu.stages", "stages", "F9"),
            ("menu.language", "language", ""),
        ),
    ),
    ("menu.help", (("menu.shortcuts", "shortcuts", "F1"),)),
)


# Items shown with a check mark when on (MenuBar.set_checked): the theme chosen, the view.
CHECK_ITEMS = frozenset({"theme_system", "theme_light", "theme_dark", "chat_only"})

# Command name -> the key sequences that run it, anywhere in the window.
SHORTCUTS: dict[str, tuple[str, ...]] = {
    "stop_or_cancel_edit": ("<Escape>",),
    "quit": ("<Control-q>",),
    "new": ("<Control-n>",),
    "search": ("<Control-f>",),
    "focus_input": ("<Control-l>",),
    "regenerate": ("<Control-r>",),
    "previous_version": ("<Alt-Left>",),
    "next_version": ("<Alt-Right>",),
    "settings": ("<Control-comma>",),
    "choose_model": ("<Control-m>",),
    "bigger": ("<Control-plus>", "<Control-equal>", "<Control-KP_Add>"),
    "smaller": ("<Control-minus>", "<Control-KP_Subtract>"),
    "reset_size": ("<Control-0>",),
    "projector": ("<F11>",),
    "shortcuts": ("<F1>",),
    "stages": ("<F9>",),
}


def bind_shortcuts(root: tk.Misc, commands: Mapping[str, Callable[[], object]]) -> None:
    """Bind every shortcut whose command exists. A shortcut's "break" keeps the focused
    widget from also reading the key (Ctrl+N in the message box is not a newline)."""
    for name, sequences in SHORTCUTS.items():
        command = commands.get(name)
        if command is None:
            continue
        for sequence in sequences:
            root.bind(sequence, _breaking(command))


def _breaking(command: Callable[[], object]) -> Callable[[tk.Event], str]:
    def handler(_event: tk.Event) -> str:
        command()
        return "break"

    return handler


class MenuBar:
    """Builds the bar on ``root``; ``commands`` maps each command name to what it does."""

    def __init__(
        self, root: tk.Tk, translate: Translator, commands: Mapping[str, Callable[[], object]]
    ) -> None:
        self.t = translate
        self.bar = tk.Menu(root, tearoff=False)
        self.menus: dict[str, tk.Menu] = {}
        self._where: dict[str, tuple[tk.Menu, int]] = {}  # command -> (menu, index)
        # Tcl variables by name, not tkinter's Variable (tkchat/ui/tcl_var.py).
        self._checks: dict[str, TclVar] = {}
        for menu_key, items in MENUS:
            menu = tk.Menu(self.bar, tearoff=False)
            for item in items:
                if item is None:
                    # not twice in a row (a window without saved chats has no Search, Import
                    # or Export: two lines, which read as an empty item)
                    last = menu.index("end")
                    if last is not None and menu.type(last) != "separator":
                        menu.add_separator()
                    continue
                label_key, name, accelerator = item
                if name not in commands:
                    continue  # e.g. no "search" without saved conversations
                if name in CHECK_ITEMS:
                    self._checks[name] = TclVar(root, 0)
                    menu.add_checkbutton(label=translate(label_key), command=commands[name])
                    self._checks[name].attach_entry(menu, int(menu.index("end") or 0))
                else:
                    menu.add_command(
                        label=translate(label_key), command=commands[name], accelerator=accelerator
                    )
                self._where[name] = (menu, int(menu.index("end") or 0))
            last = menu.index("end")
            if last is not None and menu.type(last) == "separator":
                menu.delete(last)  # (nothing after it)
            self.bar.add_cascade(label=translate(menu_key), menu=menu)
            self.menus[menu_key] = menu
        root.configure(menu=self.bar)
        translate.on_change(lambda _lang: self._relabel())

    def _relabel(self) -> None:
        for position, (menu_key, items) in enumerate(MENUS):
            self.bar.entryconfigure(position, label=self.t(menu_key))
            for item in items:
                if item is not None and item[1] in self._where:
                    menu, index = self._where[item[1]]
                    menu.entryconfigure(index, label=self.t(item[0]))

    def label(self, name: str) -> str:
        menu, index = self._where[name]
        return str(menu.entrycget(index, "label"))

    def invoke(self, name: str) -> None:
        """Run a command as a click on its menu item does (tests, keyboard users)."""
        menu, index = self._where[name]
        menu.invoke(index)

    def enable(self, name: str, enabled: bool) -> None:
        if name in self._where:
            menu, index = self._where[name]
            menu.entryconfigure(index, state="normal" if enabled else "disabled")

    def set_checked(self, name: str, on: bool) -> None:
        """Show a check mark on item ``name`` (one of CHECK_ITEMS), or none."""
        if name in self._checks:
            self._checks[name].set(1 if on else 0)

    def checked(self, name: str) -> bool:
        return name in self._checks and self._checks[name].get_bool()

    def enabled(self, name: str) -> bool:
        menu, index = self._where[name]
        return str(menu.entrycget(index, "state")) != "disabled"
