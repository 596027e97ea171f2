"""tkchat's ttk theme, light or dark, on every widget — and the switch between them.

**Why our own theme rather than a package.** sv-ttk (MIT, 50 kB, Tk 8.6) looks the part,
but draws its widgets from fixed-size PNG sprites and sets its own pixel-sized fonts
(``SunValleyBodyFont``, -14 px, "Segoe UI Variable"): at 192 dpi its scrollbars, arrows and
check marks stay at their 96-dpi size (its issue #18, open since 2022), and widgets would no
longer use Tk's named fonts, which the text-size setting scales (``tkchat/ui/settings/fonts.py``).
Undoing both would leave little of it. So this module builds a theme "tkchat" on Tk's own
``clam`` engine, which draws every element with vectors at any size: flat buttons with a
one-pixel border, an accent colour for the default action and for focus, borderless fields
with a focus ring, thin scrollbars without arrows whose width follows the screen's density,
and the named fonts untouched: one module, no image, no dependency.

What :class:`Theme` paints:

- ttk widgets, through the style database (every dialog opened later too);
- classic Tk widgets (``tk.Text``, ``tk.Canvas``, ``tk.Menu``, the Combobox's drop-down
  list, frames and labels), by walking the widget tree once per switch and through the option
  database for those created later. A widget that draws a meaning with its colour says so
  with :func:`set_role` ("broken": the red BROKEN banner; "notice": the amber warning
  banner; "alert": the error banner; "surface": a reading area; "keep": leave it alone);
- colours a part draws itself (tags in the transcript, the lag timeline's lines): the part
  calls :func:`follow_theme` once, and repaints from the new :class:`Palette` on every
  switch;
- a few shared label styles with a meaning: ``Hint.TLabel`` (grey), ``Error.TLabel``,
  ``Watch.TLabel`` (the figure a lesson asks to watch) and ``FieldHint.TLabel`` (a hint
  inside an entry).

Main thread only.
"""

from __future__ import annotations

import contextlib
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk
from typing import Any

from tkchat.ui.look.palette import LIGHT, Palette
from tkchat.ui.look.scaling import dp

THEME_NAME = "tkchat"
ACCENT_BUTTON = "Accent.TButton"
HINT_STYLE = "Hint.TLabel"
ERROR_STYLE = "Error.TLabel"
WATCH_STYLE = "Watch.TLabel"
FIELD_HINT_STYLE = "FieldHint.TLabel"
ROLE_ATTRIBUTE = "tkchat_theme_role"
ROLES = ("broken", "outside", "notice", "alert", "surface", "field", "keep")
_PALETTE_ATTRIBUTE = "tkchat_palette"


def set_role(widget: tk.Misc, role: str) -> None:
    """Say what ``widget``'s colours mean, so a theme switch paints it right (see ROLES)."""
    if role not in ROLES:
        raise ValueError(f"unknown theme role {role!r}")
    setattr(widget, ROLE_ATTRIBUTE, role)


def follow_theme(widget: tk.Misc, paint: Callable[[Palette], object]) -> None:
    """Call ``paint(palette)`` now and after every theme switch, for as long as ``widget``
    lives: how a part repaints the colours it draws itself (tags, canvas items). It rides
    on Tk's own ``<<ThemeChanged>>``, which every widget gets when the styles change, so no
    one has to hand the part a theme. ``paint`` must not change ttk styles (that would send
    the event again)."""
    paint(palette_of(widget))
    widget.bind("<<ThemeChanged>>", lambda _e: paint(palette_of(widget)), add="+")


def palette_of(widget: tk.Misc) -> Palette:
    """The palette in use in ``widget``'s window (light before any theme is applied)."""
    root = widget.nametowidget(".")
    palette = getattr(root, _PALETTE_ATTRIBUTE, LIGHT)
    return palette if isinstance(palette, Palette) else LIGHT


class Theme:
    """The window's look: :meth:`apply` paints everything in a palette (the parts that draw
    their own colours follow through :func:`follow_theme`)."""

    def __init__(self, root: tk.Tk) -> None:
        self.root = root
        self.style = ttk.Style(root)
        self.palette = palette_of(root)
        if THEME_NAME not in self.style.theme_names():
            self.style.theme_create(THEME_NAME, parent="clam")

    def apply(self, palette: Palette) -> None:
        """Paint the whole window (and every window opened later) in ``palette``."""
        self.palette = palette
        setattr(self.root, _PALETTE_ATTRIBUTE, palette)
        self.style.theme_use(THEME_NAME)
        configure_styles(self.style, palette, lambda pixels: dp(self.root, pixels))
        _option_defaults(self.root, palette, dp(self.root, 1))
        recolour(self.root, palette)
        fit_list_rows(self.root)
        # Tk sends <<ThemeChanged>> from an idle callback: run it now, so every part has
        # repainted when this returns.
        self.root.update_idletasks()


def list_row_height(widget: tk.Misc, lines: int = 1) -> int:
    """Pixels for a list row of ``lines`` lines of the default font, with a little air.

    A ttk.Treeview row does not grow with its font: its height is a fixed number of pixels
    (20 in ``clam``), which a 192-dpi screen or a larger text size overflows — the rows
    then overlap their neighbours' text."""
    line = int(tkfont.nametofont("TkDefaultFont", root=widget).metrics("linespace"))
    return lines * line + dp(widget, 6 + 2 * lines)


def fit_list_rows(widget: tk.Misc) -> None:
    """Make every list's rows (the plain ``Treeview`` style: the model picker, the model
    catalogue) as tall as the default font needs now: call it after the theme is put in
    use (a style's settings belong to one theme) and after the text size changes."""
    ttk.Style(widget).configure("Treeview", rowheight=list_row_height(widget))


def configure_styles(style: ttk.Style, p: Palette, px: Callable[[float], int]) -> None:
    """The ttk styles of the current theme, from ``p``; ``px`` turns design pixels into
    screen pixels (paddings, borders, scrollbar width)."""
    line = max(1, px(1))
    style.configure(
        ".",
        background=p.background,
        foreground=p.foreground,
        bordercolor=p.border,
        lightcolor=p.background,
        darkcolor=p.background,
        troughcolor=p.surface,
        focuscolor=p.accent,
        selectbackground=p.selection,
        selectforeground=p.selection_text,
        fieldbackground=p.field,
        insertcolor=p.foreground,
        arrowcolor=p.muted,
        borderwidth=line,
        insertwidth=line,
        font="TkDefaultFont",
    )
    style.map(".", foreground=[("disabled", p.disabled)])
    _buttons(style, p, px)
    _fields(style, p, px)
    _lists(style, p, px)
    _scrollbars(style, p, px)
    style.configure("TFrame", background=p.background)
    style.configure("TLabel", background=p.background, foreground=p.foreground)
    style.configure("TLabelframe", background=p.background, bordercolor=p.border, relief="solid")
    style.configure("TLabelframe.Label", background=p.background, foreground=p.muted)
    style.configure(
        "Sash", sashthickness=px(6), gripcount=0, background=p.background, bordercolor=p.border
    )
    style.configure("TPanedwindow", background=p.border)
    for kind in ("TCheckbutton", "TRadiobutton"):
        style.configure(
            kind,
            background=p.background,
            indicatorbackground=p.field,
            indicatorforeground=p.accent,
            indicatormargin=(0, 0, px(6), 0),
            indicatorsize=px(12),  # clam's is 10 pixels at any density: 8 px at 192 dpi
        )
        style.map(kind, background=[("active", p.background)])
    style.configure("TProgressbar", background=p.accent, troughcolor=p.surface)
    style.configure(HINT_STYLE, foreground=p.muted)
    style.configure(ERROR_STYLE, foreground=p.error)
    style.configure(WATCH_STYLE, background=p.watch_background, foreground=p.watch_text)
    style.configure(FIELD_HINT_STYLE, foreground=p.muted, background=p.field)


def _buttons(style: ttk.Style, p: Palette, px: Callable[[float], int]) -> None:
    flat = {"lightcolor": p.button, "darkcolor": p.button}
    style.configure(
        "TButton",
        background=p.button,
        foreground=p.foreground,
        bordercolor=p.border,
        padding=(px(12), px(4)),
        anchor="center",
        relief="flat",
        **flat,
    )
    states: list[tuple[str, str]] = [
        ("disabled", p.background),
        ("pressed", p.button_pressed),
        ("active", p.button_hover),
    ]
    style.map(
        "TButton",
        background=states,
        lightcolor=states,
        darkcolor=states,
        bordercolor=[("focus", p.accent)],
        foreground=[("disabled", p.disabled)],
    )
    style.configure(
        ACCENT_BUTTON,
        background=p.accent,
        foreground=p.accent_text,
        bordercolor=p.accent,
        lightcolor=p.accent,
        darkcolor=p.accent,
    )
    accent_states = [
        ("disabled", p.button_pressed),
        ("pressed", p.accent_hover),
        ("active", p.accent_hover),
    ]
    style.map(
        ACCENT_BUTTON,
        background=accent_states,
        lightcolor=accent_states,
        darkcolor=accent_states,
        bordercolor=[("disabled", p.border), ("focus", p.accent_hover)],
        foreground=[("disabled", p.disabled)],
    )


def _fields(style: ttk.Style, p: Palette, px: Callable[[float], int]) -> None:
    for kind in ("TEntry", "TCombobox", "TSpinbox"):
        style.configure(
            kind,
            fieldbackground=p.field,
            foreground=p.foreground,
            background=p.button,
            bordercolor=p.border,
            lightcolor=p.field,
            darkcolor=p.field,
            insertcolor=p.foreground,
            arrowcolor=p.muted,
            arrowsize=px(12),
            padding=(px(6), px(3)),
        )
        style.map(
            kind,
            bordercolor=[("focus", p.accent)],
            lightcolor=[("focus", p.field)],
            fieldbackground=[("readonly", p.field), ("disabled", p.background)],
            foreground=[("disabled", p.disabled)],
            background=[("active", p.button_hover), ("pressed", p.button_pressed)],
            arrowcolor=[("disabled", p.disabled), ("active", p.foreground)],
        )
    # A read-only Combobox shows its value selected while focused; in our colours that is
    # the accent, which reads as "something is wrong" next to the flat fields: keep it plain.
    style.map(
        "TCombobox",
        selectbackground=[("readonly", p.field)],
        selectforeground=[("readonly", p.foreground)],
        bordercolor=[("focus", p.accent)],
        fieldbackground=[("readonly", p.field), ("disabled", p.background)],
    )


def _lists(style: ttk.Style, p: Palette, px: Callable[[float], int]) -> None:
    style.configure(
        "Treeview",
        background=p.surface,
        fieldbackground=p.surface,
        foreground=p.foreground,
        bordercolor=p.border,
        lightcolor=p.surface,
        darkcolor=p.surface,
    )
    style.map(
        "Treeview",
        background=[("selected", p.selection)],
        foreground=[("selected", p.selection_text)],
    )
    style.configure(
        "Treeview.Heading",
        background=p.background,
        foreground=p.muted,
        bordercolor=p.border,
        lightcolor=p.background,
        darkcolor=p.background,
        relief="flat",
        padding=(px(6), px(3)),
    )
    style.map("Treeview.Heading", background=[("active", p.button_hover)])


def _scrollbars(style: ttk.Style, p: Palette, px: Callable[[float], int]) -> None:
    """Thin, arrowless scrollbars: a rounded-looking thumb on the reading surface, 12 design
    pixels wide (24 at 192 dpi), darker while hovered or dragged."""
    for orient, sticky in (("Vertical", "ns"), ("Horizontal", "ew")):
        thumb = (f"{orient}.Scrollbar.thumb", {"expand": "1", "sticky": "nswe"})
        trough: Any = (f"{orient}.Scrollbar.trough", {"sticky": sticky, "children": [thumb]})
        style.layout(f"{orient}.TScrollbar", [trough])
    style.configure(
        "TScrollbar",
        troughcolor=p.surface,
        background=p.scrollbar,
        bordercolor=p.surface,
        lightcolor=p.scrollbar,
        darkcolor=p.scrollbar,
        arrowsize=px(12),
        gripcount=0,
        relief="flat",
    )
    hover = [("pressed", p.scrollbar_hover), ("active", p.scrollbar_hover)]
    style.map("TScrollbar", background=hover, lightcolor=hover, darkcolor=hover)


def _option_defaults(root: tk.Misc, p: Palette, line: int) -> None:
    """Colours for classic widgets created from now on (dialogs, context menus, the
    Combobox's drop-down list), through Tk's option database."""
    options: dict[str, Any] = {
        "*Text.background": p.field,
        "*Text.foreground": p.foreground,
        "*Text.insertBackground": p.foreground,
        "*Text.selectBackground": p.selection,
        "*Text.selectForeground": p.selection_text,
        "*Text.inactiveSelectBackground": p.selection,
        "*Text.highlightBackground": p.border,
        "*Text.highlightColor": p.accent,
        "*Canvas.background": p.surface,
        "*Canvas.highlightThickness": 0,
        "*Listbox.background": p.field,
        "*Listbox.foreground": p.foreground,
        "*Listbox.selectBackground": p.selection,
        "*Listbox.selectForeground": p.selection_text,
        "*TCombobox*Listbox.background": p.field,
        "*TCombobox*Listbox.foreground": p.foreground,
        "*TCombobox*Listbox.selectBackground": p.selection,
        "*TCombobox*Listbox.selectForeground": p.selection_text,
        "*Toplevel.background": p.background,
        "*Frame.background": p.background,
        "*Label.background": p.background,
        "*Label.foreground": p.foreground,
    }
    for name, value in _menu_options(p, line).items():
        options[f"*Menu.{_DATABASE_NAMES.get(name, name)}"] = value
    for pattern, value in options.items():
        root.option_add(pattern, value)


# widget option name -> its name in the option database
_DATABASE_NAMES = {
    "activebackground": "activeBackground",
    "activeforeground": "activeForeground",
    "disabledforeground": "disabledForeground",
    "selectcolor": "selectColor",
    "borderwidth": "borderWidth",
    "activeborderwidth": "activeBorderWidth",
}


def _menu_options(p: Palette, line: int) -> dict[str, Any]:
    """A menu's colours and its edge. "flat" drew the border in the menu's own background,
    so a menu over the transcript had no edge at all (light and dark alike); a Tk menu has
    no border colour, and "solid" is black whatever the theme, so the edge is a groove,
    whose two lines Tk shades from the background: darker and lighter than it, in both."""
    return {
        "background": p.surface,
        "foreground": p.foreground,
        "activebackground": p.selection,
        "activeforeground": p.selection_text,
        "disabledforeground": p.disabled,
        "selectcolor": p.accent,
        "relief": "groove",
        "borderwidth": 2 * line,
        "activeborderwidth": 0,
    }


def recolour(widget: tk.Misc, p: Palette) -> None:
    """Paint ``widget`` and everything in it (classic Tk widgets; ttk ones follow their
    styles). Widgets with a role get their role's colours; role "keep" is skipped."""
    role = getattr(widget, ROLE_ATTRIBUTE, None)
    if role != "keep":
        options = _classic_options(widget, role, p)
        if options:
            # an option this build's widget lacks: keep the rest of the tree going
            with contextlib.suppress(tk.TclError):
                widget.configure(**options)
    for child in widget.winfo_children():
        recolour(child, p)


def _classic_options(widget: tk.Misc, role: str | None, p: Palette) -> dict[str, Any]:
    kind = widget.winfo_class()
    if role == "broken":
        return {"background": p.broken_background, "foreground": p.broken_text}
    if role == "outside":  # a pipeline of one's own: neither tkchat's fixed one nor a demo
        return {"background": p.accent, "foreground": p.accent_text}
    if role in ("notice", "alert"):
        background, text = (
            (p.notice_background, p.notice_text)
            if role == "notice"
            else (p.alert_background, p.alert_text)
        )
        if kind == "Label":
            return {"background": background, "foreground": text}
        return {"background": background} if kind == "Frame" else {}
    if kind == "Text":
        ground = p.surface if role == "surface" else p.field
        return {
            "background": ground,
            "foreground": p.foreground,
            "insertbackground": p.foreground,
            "selectbackground": p.selection,
            "selectforeground": p.selection_text,
            "inactiveselectbackground": p.selection,
            "highlightbackground": p.border,
            "highlightcolor": p.accent,
        }
    if kind == "Canvas":
        return {"background": p.surface}
    if kind == "Menu":
        options = _menu_options(p, dp(widget, 1))
        owner = widget.master
        if isinstance(owner, (tk.Tk, tk.Toplevel)) and str(owner.cget("menu")) == str(widget):
            options.update(relief="flat", borderwidth=0)  # the menu bar: no box around it
        return options
    if kind == "Listbox":
        return {
            "background": p.field,
            "foreground": p.foreground,
            "selectbackground": p.selection,
            "selectforeground": p.selection_text,
        }
    if kind in ("Tk", "Toplevel", "Frame"):
        return {"background": p.background}
    if kind == "Label":
        return {"background": p.background, "foreground": p.foreground}
    return {}
