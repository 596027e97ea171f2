"""The window's two looks, light and dark, as plain colours (no Tk here).

Every colour tkchat paints itself comes from a :class:`Palette`: the ttk theme
(``tkchat/ui/look/theme.py``) builds its styles from it, and the parts that draw their own colours
(the transcript and its rendered markdown, the lesson panel, the lag timeline, the health bar,
the banners, the watchdog window) are handed it. A part never names a colour of its own, so
a dark window has no white patch left in it.

Two colours do not change with the theme, on purpose: the BROKEN banner is the same strong
red with white text in both (a class must never mistake a broken mode for the fixed one),
and the heartbeat stays in the window's text colour, readable on either background.
"""

from __future__ import annotations

from dataclasses import dataclass

LIGHT_NAME = "light"
DARK_NAME = "dark"
SYSTEM = "system"  # the user's choice "follow the system" (stored as None in settings.json)
CHOICES = (SYSTEM, LIGHT_NAME, DARK_NAME)

BROKEN_RED = "#b00020"  # the BROKEN banner, in both themes
BROKEN_TEXT = "#ffffff"


@dataclass(frozen=True)
class Palette:
    """Named colours of one look (``#rrggbb``). Grouped by where they are used."""

    name: str
    dark: bool
    # window chrome: frames, buttons, fields, lists
    background: str  # the window behind the widgets
    surface: str  # reading areas: the transcript, the lesson text, lists, the timeline
    foreground: str
    muted: str  # secondary text: hints, dates, message headers
    disabled: str
    border: str
    field: str  # entries, the message box
    button: str
    button_hover: str
    button_pressed: str
    accent: str  # the default action (Send), focus rings, the selection in lists
    accent_hover: str
    accent_text: str
    selection: str  # selected text and list rows
    selection_text: str
    scrollbar: str  # the thumb; its trough is the surface
    scrollbar_hover: str
    # the transcript and the rendered markdown
    user_text: str  # the user's questions
    link: str  # "Copy", "Edit", "Copy code"
    note: str  # [stopped], lesson quotes
    error: str  # error text in the transcript and in dialogs
    warn: str  # the context meter when the context is nearly full
    code_background: str
    code_text: str
    pygments_style: str  # a Pygments style name that reads well on code_background
    heading: str  # lesson sub-headings
    # banners and highlights
    notice_background: str  # the warning banner that stays (storage problems)
    notice_text: str
    alert_background: str  # the error banner that stays (a model that failed to load)
    alert_text: str
    watch_background: str  # the figure a lesson asks to watch
    watch_text: str
    # charts (the lag timeline, the watchdog window)
    chart_ink: str
    chart_grid: str
    chart_line: str  # the lag line
    chart_good: str  # text arriving, a healthy heartbeat
    chart_frozen_fill: str
    chart_frozen_ink: str
    chart_frozen_background: str  # the watchdog's whole chart while the window is frozen
    broken_background: str = BROKEN_RED
    broken_text: str = BROKEN_TEXT


LIGHT = Palette(
    name=LIGHT_NAME,
    dark=False,
    background="#f3f4f6",
    surface="#ffffff",
    foreground="#1f2328",
    muted="#5f6b76",
    disabled="#a4abb3",
    border="#d0d5dc",
    field="#ffffff",
    button="#ffffff",
    button_hover="#eef1f4",
    button_pressed="#e1e5ea",
    accent="#2563eb",
    accent_hover="#1d4ed8",
    accent_text="#ffffff",
    selection="#cfe0fc",
    selection_text="#0f1b33",
    scrollbar="#c3c9d1",
    scrollbar_hover="#9aa3ad",
    user_text="#0b3d91",
    link="#0b57d0",
    note="#8a6d00",
    error="#b00020",
    warn="#a15c00",
    code_background="#f1f3f5",
    code_text="#1f2328",
    pygments_style="default",
    heading="#0b3d91",
    notice_background="#fff3cd",
    notice_text="#5c4400",
    alert_background="#fde7e9",
    alert_text="#8c0015",
    watch_background="#ffe27a",
    watch_text="#1f2328",
    chart_ink="#1b1b1b",
    chart_grid="#dcdcdc",
    chart_line="#0b3d91",
    chart_good="#1a7f37",
    chart_frozen_fill="#f6c6c6",
    chart_frozen_ink="#a31515",
    chart_frozen_background="#fde4e4",
)

DARK = Palette(
    name=DARK_NAME,
    dark=True,
    background="#1f2024",
    surface="#26282c",
    foreground="#e3e5e8",
    muted="#9aa1a9",
    disabled="#5d636b",
    border="#3d4148",
    field="#2c2e33",
    button="#2f3237",
    button_hover="#3a3d43",
    button_pressed="#464a51",
    accent="#3b82f6",
    accent_hover="#2563eb",
    accent_text="#ffffff",
    selection="#264f8c",
    selection_text="#ffffff",
    scrollbar="#565b63",
    scrollbar_hover="#727882",
    user_text="#9cc3ff",
    link="#8ab4f8",
    note="#e0b84c",
    error="#ff7b7b",
    warn="#f0b429",
    code_background="#1b1c20",
    code_text="#e3e5e8",
    pygments_style="github-dark",
    heading="#9cc3ff",
    notice_background="#4a3b00",
    notice_text="#ffe8a3",
    alert_background="#4d1a1f",
    alert_text="#ffb4ab",
    watch_background="#6b5500",
    watch_text="#fff4c2",
    chart_ink="#e3e5e8",
    chart_grid="#3d4148",
    chart_line="#7fb0ff",
    chart_good="#4ade80",
    chart_frozen_fill="#5c2227",
    chart_frozen_ink="#ff8a80",
    chart_frozen_background="#3a1d20",
)

PALETTES = {LIGHT_NAME: LIGHT, DARK_NAME: DARK}


def palette_named(name: str | None) -> Palette:
    """The palette called ``name`` ("light" or "dark"); anything else is light."""
    return PALETTES.get(name or LIGHT_NAME, LIGHT)


def resolve_choice(choice: str | None, system: str | None) -> Palette:
    """The palette to use for the user's ``choice`` ("light", "dark", or None / "system" to
    follow the system) when the system says ``system`` ("light", "dark" or None: unknown).
    An unknown system gives light: the look Tk itself has everywhere."""
    if choice in PALETTES:
        return PALETTES[choice]
    return palette_named(system)


def luminance(colour: str) -> float:
    """Relative luminance (WCAG 2) of a ``#rrggbb`` colour, 0 (black) to 1 (white)."""
    channels = []
    for start in (1, 3, 5):
        value = int(colour[start : start + 2], 16) / 255
        channels.append(value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4)
    red, green, blue = channels
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(first: str, second: str) -> float:
    """WCAG contrast ratio of two colours, 1 to 21 (4.5 is enough for body text)."""
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)
