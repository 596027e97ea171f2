"""The window's look: light and dark on every widget, switched live and remembered; what the
system says about dark mode (detected without a desktop); the chat-only view; ``--teach``."""

from __future__ import annotations

import json
import tkinter as tk
from pathlib import Path
from tkinter import ttk

import pytest

from tests.conftest import KEEP_ALIVE, pump_until
from tests.x_input import laid_out
from tkchat.cli import build_parser
from tkchat.generate.scripted import ScriptedBackend
from tkchat.store.settings import AppSettings, load_settings
from tkchat.ui.look.fit import ellipsize, ellipsize_around
from tkchat.ui.look.palette import DARK, LIGHT, PALETTES, Palette, contrast, resolve_choice
from tkchat.ui.look.system_theme import (
    MACOS,
    PORTAL,
    WINDOWS_KEY,
    Detected,
    detect_system_theme,
    gtk_settings_scheme,
    kde_scheme,
    portal_scheme,
    scheme_of_theme_name,
)
from tkchat.ui.transcript.markdown_looks import CODE_BLOCK_TAG

# -- detection, without a desktop -------------------------------------------------------------


def answers(table: dict[str, str]) -> tuple[list[list[str]], object]:
    """A fake command runner: the stdout for each command line (joined), None for others;
    and the list of the commands it was asked to run."""
    asked: list[list[str]] = []

    def run(command: list[str]) -> str | None:
        asked.append(command)
        return table.get(" ".join(command))

    return asked, run


def detect(environ: dict[str, str], table: dict[str, str], files: dict[str, str] | None = None):
    asked, run = answers(table)
    home = Path("/home/someone")
    found = detect_system_theme(
        platform="linux",
        environ=environ,
        run=run,  # type: ignore[arg-type]
        read_text=lambda path: (files or {}).get(str(path.relative_to(home))),
        home=home,
    )
    return found, asked


GNOME_SCHEME = "gsettings get org.gnome.desktop.interface color-scheme"
GNOME_THEME = "gsettings get org.gnome.desktop.interface gtk-theme"


@pytest.mark.parametrize(
    ("value", "scheme"),
    [("Adwaita:dark", "dark"), ("Adwaita-dark", "dark"), ("Breeze-Dark", "dark"),
     ("Adwaita", "light"), ("Darkroom-light", "light")],
)  # fmt: skip
def test_gtk_theme_in_the_environment_wins(value: str, scheme: str) -> None:
    found, asked = detect({"GTK_THEME": value, "DBUS_SESSION_BUS_ADDRESS": "x"}, {})
    assert found == Detected(scheme, f"GTK_THEME={value}")
    assert asked == []  # nothing else was asked


def test_the_portal_is_asked_only_with_a_session_bus() -> None:
    portal = " ".join(PORTAL)
    found, asked = detect(
        {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus"}, {portal: "(<<uint32 1>>,)\n"}
    )
    assert found == Detected("dark", "the freedesktop settings portal")
    found, asked = detect({}, {portal: "(<<uint32 1>>,)\n"})
    assert PORTAL not in asked and found.scheme is None


def test_the_portal_without_a_preference_falls_through_to_gnome() -> None:
    portal = " ".join(PORTAL)
    bus = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/bus"}
    found, _ = detect(bus, {portal: "(<<uint32 0>>,)", GNOME_SCHEME: "'prefer-dark'\n"})
    assert found == Detected("dark", "GNOME color-scheme=prefer-dark")
    found, _ = detect(bus, {portal: "(<uint32 2>,)"})  # ReadOne's shape
    assert found.scheme == "light"


def test_gnome_default_scheme_reads_the_theme_name() -> None:
    found, _ = detect({}, {GNOME_SCHEME: "'default'", GNOME_THEME: "'Yaru-dark'"})
    assert found == Detected("dark", "GNOME gtk-theme=Yaru-dark")
    found, _ = detect({}, {GNOME_SCHEME: "'default'", GNOME_THEME: "'Adwaita'"})
    assert found.scheme == "light"


def test_kde_and_gtk_files_are_read_when_no_command_answers() -> None:
    kde = "[General]\nColorScheme=Custom\n\n[Colors:Window]\nBackgroundNormal=35,38,41\n"
    found, _ = detect({}, {}, {".config/kdeglobals": kde})
    assert found == Detected("dark", "KDE kdeglobals")
    gtk = "[Settings]\ngtk-application-prefer-dark-theme=1\n"
    found, _ = detect({}, {}, {".config/gtk-3.0/settings.ini": gtk})
    assert found == Detected("dark", "~/.config/gtk-3.0/settings.ini")
    assert detect({}, {})[0] == Detected(None, "nothing detected")


def test_the_parsers_take_what_desktops_write() -> None:
    assert portal_scheme("(<<uint32 1>>,)") == "dark" and portal_scheme("garbage") is None
    assert portal_scheme(None) is None and portal_scheme("(<<uint32 7>>,)") is None
    assert kde_scheme("[Colors:Window]\nBackgroundNormal=239,240,241\n") == "light"
    assert kde_scheme("[General]\nColorScheme=BreezeDark\n") == "light"  # one word: unknown
    assert kde_scheme("[General]\nColorScheme=Breeze-Dark\n") == "dark"
    assert kde_scheme("not an ini file [") is None and kde_scheme(None) is None
    assert gtk_settings_scheme("[Settings]\ngtk-theme-name=Arc-Dark\n") == "dark"
    assert gtk_settings_scheme("[Settings]\ngtk-application-prefer-dark-theme=false\n") == "light"
    assert scheme_of_theme_name("HighContrast") == "light"


def test_macos_and_windows() -> None:
    def mac(answer: str | None) -> Detected:
        return detect_system_theme(
            platform="darwin", run=lambda command: answer if command == MACOS else None
        )

    assert mac("Dark\n").scheme == "dark"
    assert mac(None).scheme == "light"  # the key exists only in dark mode

    def windows(value: int | None) -> Detected:
        return detect_system_theme(
            platform="win32",
            read_registry=lambda key, name: (
                value if (key, name) == (WINDOWS_KEY, "AppsUseLightTheme") else None
            ),
        )

    assert windows(0).scheme == "dark" and windows(1).scheme == "light"
    assert windows(None).scheme is None


def test_choice_and_system_make_the_palette() -> None:
    assert resolve_choice("dark", "light") is DARK
    assert resolve_choice("light", "dark") is LIGHT
    assert resolve_choice(None, "dark") is DARK and resolve_choice("system", "dark") is DARK
    assert resolve_choice("system", None) is LIGHT


@pytest.mark.parametrize("palette", list(PALETTES.values()), ids=list(PALETTES))
def test_every_palette_is_readable(palette: Palette) -> None:
    """WCAG contrast: body text 7:1, secondary text and links 4.5:1, the BROKEN banner's
    text 4.5:1 on a red that is the same in both themes."""
    assert contrast(palette.foreground, palette.surface) >= 7
    assert contrast(palette.foreground, palette.background) >= 7
    for colour in (palette.muted, palette.link, palette.user_text, palette.error, palette.note):
        assert contrast(colour, palette.surface) >= 4.5, colour
    assert contrast(palette.code_text, palette.code_background) >= 7
    assert contrast(palette.accent_text, palette.accent) >= 3  # large-ish button text
    assert contrast(palette.selection_text, palette.selection) >= 4.5
    assert contrast(palette.notice_text, palette.notice_background) >= 4.5
    assert contrast(palette.alert_text, palette.alert_background) >= 4.5
    assert palette.broken_background == LIGHT.broken_background == "#b00020"
    assert contrast(palette.broken_text, palette.broken_background) >= 4.5


# -- ellipsis ---------------------------------------------------------------------------------


@pytest.mark.gui
def test_a_cut_snippet_keeps_the_word_searched_for(root: tk.Tk) -> None:
    import tkinter.font as tkfont

    font = tkfont.nametofont("TkDefaultFont", root=root)
    text = "the beginning of a long message that mentions a queue somewhere in its middle part"
    start = text.index("queue")
    for width in (90, 120, 200, 300):
        shown = ellipsize_around(font, text, start, start + 5, width)
        assert "queue" in shown and font.measure(shown) <= width, (width, shown)
        assert shown.startswith("…") and shown.endswith("…")
    assert ellipsize_around(font, text, start, start + 5, 10_000) == text
    # a hit wider than the room keeps its start (and says what was cut before it)
    narrow = ellipsize_around(font, text, start, start + 5, font.measure("…queue") - 1)
    assert narrow.startswith("…qu") and narrow.endswith("…")
    assert (
        ellipsize(font, text, 100).endswith("…") and font.measure(ellipsize(font, text, 100)) <= 100
    )


# -- the theme in the window ------------------------------------------------------------------


def classic_colours(widget: tk.Misc) -> list[tuple[str, str]]:
    """(widget, background) of every Text and Canvas in the window."""
    found = []
    if widget.winfo_class() in ("Text", "Canvas") and widget.winfo_toplevel() is not None:
        found.append((str(widget), str(widget.cget("background"))))
    for child in widget.winfo_children():
        found.extend(classic_colours(child))
    return found


def assert_painted(root: tk.Tk, app, palette: Palette) -> None:
    style = ttk.Style(root)
    assert style.theme_use() == "tkchat"
    assert style.lookup("TButton", "background") == palette.button
    assert style.lookup("Accent.TButton", "background") == palette.accent
    assert style.lookup("Treeview", "background") == palette.surface
    assert style.lookup("TEntry", "fieldbackground") == palette.field
    assert style.lookup("TFrame", "background") == palette.background
    assert style.lookup("TScrollbar", "background") == palette.scrollbar
    assert str(app.send_button.cget("style")) == "Accent.TButton"
    assert str(app.transcript.text.cget("background")) == palette.surface
    assert str(app.transcript.text.tag_cget("action", "foreground")) == palette.link
    assert str(app.input.cget("background")) == palette.field
    assert str(app.input.cget("foreground")) == palette.foreground
    assert str(app.menubar.bar.cget("background")) == palette.surface
    panel = app.teaching.lesson_panel
    assert panel is not None
    assert str(panel.text.cget("background")) == palette.surface
    assert str(panel.text.tag_cget(CODE_BLOCK_TAG, "background")) == palette.code_background
    assert panel.timeline is not None
    assert str(panel.timeline.cget("background")) == palette.surface
    assert panel.timeline.palette is palette
    # the rendered markdown's code block
    code_tags = [
        tag
        for tag in app.transcript.text.tag_names()
        if str(tag).startswith("md-style-")
        and str(app.transcript.text.tag_cget(tag, "background")) == palette.code_background
    ]
    assert code_tags, "no code block in the code colours"
    # the BROKEN banner stays red, with white text, in both themes
    assert app.teaching.warning.winfo_ismapped()
    assert str(app.teaching.warning.cget("background")) == "#b00020"
    assert str(app.teaching.warning.cget("foreground")) == "#ffffff"
    # the banners that stay: amber for a warning, red for a model that failed to load
    assert str(app.storage_banner.label.cget("background")) == palette.notice_background
    assert str(app.model_banner.label.cget("background")) == palette.alert_background
    assert str(app.model_banner.label.cget("foreground")) == palette.alert_text
    # and no reading area is left in the other theme's colour
    for name, background in classic_colours(root):
        assert background in (palette.surface, palette.field), (name, background)


def a_themed_window(make_app, root: tk.Tk, **options):
    app = make_app(ScriptedBackend(rate=0), show_lessons=True, **options)
    app.teaching.set_mode("blocking")
    app.flow.send("a question")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    pump_until(root, lambda: not app.transcript.painter.busy, what="the markdown")
    return app


@pytest.mark.gui
def test_light_and_dark_paint_every_widget_and_switch_live(root: tk.Tk, make_app) -> None:
    app = a_themed_window(make_app, root, theme="light")
    assert_painted(root, app, LIGHT)
    app.appearance.set_theme("dark")  # View ▸ Dark theme
    assert_painted(root, app, DARK)
    # A dialog opened now is dark as well.
    app.chat_settings.open()
    dialog = app.chat_settings.dialog
    assert dialog is not None
    root.update()
    assert str(dialog.prompt.cget("background")) == DARK.field
    assert str(dialog.cget("background")) == DARK.background
    dialog.cancel()
    app.appearance.set_theme("light")
    assert_painted(root, app, LIGHT)


@pytest.mark.gui
def test_the_system_theme_is_followed_and_the_choice_is_remembered(
    root: tk.Tk, make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path))
    said = {"scheme": "dark"}
    app = make_app(
        ScriptedBackend(rate=0),
        app_settings=AppSettings(),
        persist_settings=True,
        detect_theme=lambda: Detected(said["scheme"], "a test desktop"),
    )
    assert app.appearance.choice == "system" and app.appearance.palette is DARK
    assert app.menubar.checked("theme_system") and not app.menubar.checked("theme_dark")
    app.appearance.set_theme("light")
    assert load_settings()[0].theme == "light"
    assert app.menubar.checked("theme_light") and not app.menubar.checked("theme_system")
    said["scheme"] = "light"
    app.appearance.set_theme("dark")
    assert load_settings()[0].theme == "dark"
    app.appearance.set_theme("system")  # asked again: the desktop is light now
    assert app.appearance.palette is LIGHT
    assert load_settings()[0].theme is None
    assert "a test desktop" in app.status.get()
    app.appearance.set_theme("dark")
    app.close()
    settings = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert settings["theme"] == "dark"


@pytest.mark.gui
def test_a_remembered_theme_beats_the_desktop(root: tk.Tk, make_app) -> None:
    app = make_app(
        ScriptedBackend(rate=0),
        app_settings=AppSettings(theme="dark"),
        detect_theme=lambda: Detected("light", "a test desktop"),
    )
    assert app.appearance.palette is DARK and app.appearance.choice == "dark"


# -- the chat-only view -----------------------------------------------------------------------


def teaching_widgets(app) -> list[tk.Misc]:
    parts = [app.teaching.mode_box, app.teaching.lessons_button, app.health, app.health.ping_button]
    return parts + ([app.teaching.compare_button] if app.teaching.compare_button else [])


@pytest.mark.gui
def test_chat_only_folds_the_teaching_controls_into_one_line(
    root: tk.Tk, make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path))
    app = make_app(
        ScriptedBackend(rate=0),
        app_settings=AppSettings(),
        persist_settings=True,
        compare_command=lambda broken: ["true"],
        show_lessons=True,
    )
    laid_out(root)
    assert all(widget.winfo_ismapped() for widget in teaching_widgets(app))
    assert not app.health.compact.winfo_ismapped()
    top_before = app.transcript.winfo_rooty()

    app.menubar.invoke("chat_only")  # View ▸ Chat only
    laid_out(root)
    assert not any(widget.winfo_ismapped() for widget in teaching_widgets(app))
    assert app.teaching.lesson_panel is None  # the lessons are teaching controls too
    assert app.transcript.winfo_rooty() < top_before  # the chat got the room
    # one line: the heartbeat (still ticking), the lag, the button that brings all back
    line = app.health.compact
    assert line.winfo_ismapped() and app.teaching.teach_button.winfo_ismapped()
    assert abs(line.winfo_rooty() - app.language_button.winfo_rooty()) < line.winfo_height()
    first = str(line.cget("text"))
    assert first.startswith("♥ ") and "lag" in first
    beats = app.health.beats
    pump_until(root, lambda: app.health.beats > beats, what="the next heartbeat (each second)")
    assert str(line.cget("text")).startswith(str(app.health.heartbeat.cget("text")))
    assert load_settings()[0].chat_only is True and app.menubar.checked("chat_only")
    # a broken mode still shows its red banner
    app.teaching.set_mode("per-chunk-render")
    laid_out(root)
    assert app.teaching.warning.winfo_ismapped()

    app.teaching.teach_button.invoke()  # one click: a class gets its controls back
    laid_out(root)
    assert all(widget.winfo_ismapped() for widget in teaching_widgets(app))
    assert not line.winfo_ismapped() and not app.teaching.teach_button.winfo_ismapped()
    assert load_settings()[0].chat_only is False and not app.menubar.checked("chat_only")
    # the health bar is back where it was, above the banner
    assert app.health.winfo_rooty() < app.teaching.warning.winfo_rooty()


@pytest.mark.gui
def test_chat_only_is_remembered(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), app_settings=AppSettings(chat_only=True))
    laid_out(root)
    assert app.appearance.chat_only and not app.health.winfo_ismapped()
    app.teaching.toggle_lessons()  # the Lessons menu item brings the controls back too
    laid_out(root)
    assert not app.appearance.chat_only and app.teaching.lesson_panel is not None


@pytest.mark.gui
def test_teach_shows_the_controls_although_chat_only_was_remembered(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), app_settings=AppSettings(chat_only=True), teach=True)
    laid_out(root)
    assert not app.appearance.chat_only and app.health.winfo_ismapped()


@pytest.mark.gui
def test_the_teach_and_theme_flags_reach_the_window(
    display: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tkchat --teach --theme dark`` with chat-only remembered: the controls are shown, the
    window is dark, and neither is written back (a flag is for this run)."""
    from tkchat.cli import window as cli_window
    from tkchat.ui.window import chat_window as app_module

    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path))
    (tmp_path / "settings.json").write_text(json.dumps({"chat_only": True, "theme": "light"}))
    seen = []

    class Recorded(app_module.ChatApp):
        def __init__(self, root: tk.Tk, *args, **kwargs) -> None:
            KEEP_ALIVE.append(root)
            super().__init__(root, *args, **kwargs)
            seen.append((self.appearance.chat_only, self.appearance.palette.name))
            root.mainloop = self.close  # type: ignore[method-assign]

    monkeypatch.setattr(app_module, "ChatApp", Recorded)
    args = build_parser().parse_args(["--backend", "scripted", "--teach", "--theme", "dark"])
    assert cli_window.run_app(args) == 0
    assert seen == [(False, "dark")]
    assert build_parser().parse_args([]).teach is False
    stored = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert stored["chat_only"] is True and stored["theme"] == "light"


@pytest.mark.gui
def test_the_watchdog_window_takes_the_chat_windows_theme(root: tk.Tk) -> None:
    from tkchat.lab.watchdog import FROZEN_AFTER_S, WatchdogWindow
    from tkchat.ui.teaching.watchdog_link import watchdog_command

    assert watchdog_command("dark")[-2:] == ["--theme", "dark"]
    assert "--theme" not in watchdog_command()
    assert build_parser().parse_args(["watchdog", "--theme", "dark"]).theme == "dark"
    now = [100.0]  # the watchdog's clock: moved by the test
    beats = [now[0]]
    window = WatchdogWindow(
        root,
        lambda: [beats.pop() for _ in range(len(beats))],
        lambda: False,
        clock=lambda: now[0],
        palette=DARK,
    )
    window.start()
    pump_until(root, lambda: window.shown_text(window.counter).startswith("alive"))
    assert str(window.canvas.cget("background")) == DARK.surface
    assert str(window.canvas.itemcget(window.counter, "fill")) == DARK.chart_good
    now[0] += 2 * FROZEN_AFTER_S  # no beat for that long: the chat window is frozen
    pump_until(root, lambda: window.trace.open_gap is not None, what="a silence")
    assert str(window.canvas.cget("background")) == DARK.chart_frozen_background
    assert str(window.canvas.itemcget(window.counter, "fill")) == DARK.chart_frozen_ink
    window.close()


@pytest.mark.gui
def test_the_context_meter_is_cut_with_an_ellipsis_in_a_narrow_row(root: tk.Tk) -> None:
    from tkchat.ui.base.translator import Translator
    from tkchat.ui.chats.context_meter import ContextMeter

    row = ttk.Frame(root, width=200, height=30)
    row.pack_propagate(False)
    row.pack(anchor="w")
    meter = ContextMeter(row, Translator("en"))
    meter.pack(side="right")
    meter.show(7808, 8192, dropped=160)
    laid_out(root)
    assert meter.full.endswith("160 earlier messages left out")
    shown = str(meter.cget("text"))
    assert shown.endswith("…") and meter.full.startswith(shown[:-1])
    assert meter.winfo_reqwidth() <= row.winfo_width()


@pytest.mark.gui
def test_the_context_meter_says_one_message_in_the_singular(root: tk.Tk) -> None:
    """Seen by hand: "context 8,055 / 8,192 tokens · 1 earlier messages left out"."""
    from tkchat.ui.base.translator import Translator
    from tkchat.ui.chats.context_meter import ContextMeter

    meter = ContextMeter(root, Translator("en"))
    meter.pack()
    meter.show(8055, 8192, dropped=1)
    assert meter.full.endswith(" · 1 earlier message left out")
    meter.show(8055, 8192, dropped=2)
    assert meter.full.endswith(" · 2 earlier messages left out")


def code_colours(app) -> dict[str, tuple[str, str]]:
    """The colours of each highlighted piece of the code block: its text -> (fore, back)."""
    text = app.transcript.text
    out: dict[str, tuple[str, str]] = {}
    for tag in text.tag_names():
        if not tag.removeprefix("md-code-").isdigit():  # (not the header's tags)
            continue
        ranges = text.tag_ranges(tag)
        for start, end in zip(ranges[::2], ranges[1::2], strict=True):
            piece = text.get(start, end).strip()
            if piece:
                colours = (
                    str(text.tag_cget(tag, "foreground")),
                    str(text.tag_cget(tag, "background")),
                )
                out[piece] = colours
    return out


@pytest.mark.gui
def test_highlighted_code_takes_the_themes_pygments_style_and_switches_live(
    root: tk.Tk, make_app
) -> None:
    from tkchat.render.safe_markdown import lexer_ready

    pump_until(root, lambda: lexer_ready("python", DARK.pygments_style), what="the dark style")
    app = make_app(
        ScriptedBackend(rate=0, text="Code:\n\n```python\ndef steep(x):\n    return x\n```\n"),
        theme="light",
    )
    app.flow.send("code please")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    pump_until(root, lambda: not app.transcript.painter.busy, what="the markdown")
    light = code_colours(app)
    assert light["def"][1] == LIGHT.code_background and light["def"][0] != LIGHT.code_text
    app.appearance.set_theme("dark")
    pump_until(
        root,
        lambda: code_colours(app)["def"][1] == DARK.code_background,
        what="the code block in the dark theme",
    )
    dark = code_colours(app)
    # the keyword's colour is the dark style's, not the light one's, on the dark background
    assert dark["def"][0] not in (light["def"][0], "") and dark["def"][0] != DARK.code_background
    assert all(back == DARK.code_background for _fore, back in dark.values())
    app.appearance.set_theme("light")
    assert code_colours(app)["def"] == light["def"]


def test_a_radio_button_s_circle_grows_with_the_screen_s_density(
    root: tk.Tk, make_app, scaled
) -> None:
    """Seen at 192 dpi: the lesson panel's choices had circles of 8 px beside 40 px text
    (clam draws its indicator in pixels, whatever the density)."""
    scaled(192 / 72)
    make_app(ScriptedBackend(rate=0))
    size = ttk.Style(root).lookup("TRadiobutton", "indicatorsize")
    assert int(float(size)) >= 20, size


@pytest.mark.gui
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_window_on_the_scripted_backend_plays_the_script_of_its_language(
    display: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    """Walked in Chinese: ``tkchat compare --lang zh`` opened two Chinese windows whose
    scripted model streamed the English script to a Chinese prompt. The window's scripted
    backend plays the script of the window's language."""
    from tkchat.cli import window as cli_window
    from tkchat.generate.scripted import SCRIPT
    from tkchat.ui.window import chat_window as app_module

    monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path))
    played: list[str] = []

    class Recorded(app_module.ChatApp):
        def __init__(self, root: tk.Tk, *args, **kwargs) -> None:
            KEEP_ALIVE.append(root)
            super().__init__(root, *args, **kwargs)

            def instead_of_the_loop() -> None:
                backend = self.controller.backend
                assert isinstance(backend, ScriptedBackend)
                played.append(backend.text)
                self.close()

            root.mainloop = instead_of_the_loop  # type: ignore[method-assign]

    monkeypatch.setattr(app_module, "ChatApp", Recorded)
    args = build_parser().parse_args(["--backend", "scripted", "--lang", lang])
    assert cli_window.run_app(args) == 0
    (text,) = played
    if lang == "en":
        assert text == SCRIPT
    else:
        assert text != SCRIPT and "主循环" in text and "Why the window" not in text
