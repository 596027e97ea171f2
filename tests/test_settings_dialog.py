"""The chat settings dialog on a real Tk window: the values it shows, Save with valid and
invalid input, Cancel and Esc, Reset to defaults, the font size's default, Ctrl+Enter and the
language."""

from __future__ import annotations

import re
import tkinter as tk
from collections.abc import Callable, Iterator
from tkinter import ttk

import pytest

from tests.conftest import pump_until
from tests.x_input import keyboard_focus
from tkchat.conversation import DEFAULT_SYSTEM_PROMPT, Sampling
from tkchat.i18n import STRINGS
from tkchat.i18n.settings_dialog import STRINGS as SETTINGS_STRINGS
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.palette import LIGHT
from tkchat.ui.look.theme import Theme
from tkchat.ui.settings.dialog import FIELDS, ChatSettingsDialog, ModelContext

pytestmark = pytest.mark.gui

CJK = re.compile(r"[\u4e00-\u9fff]")
DEFAULT_FONT = 11
GIVEN_PROMPT = "You are a pirate.\nAnswer in one line."
# top_k and repeat_penalty are not shown: the dialog must hand them back unchanged.
GIVEN = Sampling(temperature=0.7, top_p=0.8, top_k=12, repeat_penalty=1.3, max_tokens=256, seed=42)

Applied = list[tuple[str, Sampling, "int | None"]]


@pytest.fixture
def open_dialog(root: tk.Tk) -> Iterator[Callable[..., tuple[ChatSettingsDialog, Applied]]]:
    Theme(root).apply(LIGHT)  # the window's theme gives the notes their grey and red
    dialogs: list[ChatSettingsDialog] = []

    def build(
        lang: str = "en",
        *,
        prompt: str = GIVEN_PROMPT,
        sampling: Sampling = GIVEN,
        font_size: int | None = 14,
        model_context: ModelContext | None = None,
    ) -> tuple[ChatSettingsDialog, Applied]:
        applied: Applied = []
        dialog = ChatSettingsDialog(
            root,
            translate=Translator(lang),
            system_prompt=prompt,
            sampling=sampling,
            font_size=font_size,
            default_font_size=DEFAULT_FONT,
            on_apply=lambda *args: applied.append(args),
            model_context=model_context,
        )
        dialogs.append(dialog)
        # The window maps before its children: wait for the last of them.
        pump_until(root, dialog.save_button.winfo_viewable, what="the dialog to show")
        root.update()
        return dialog, applied

    yield build
    for dialog in dialogs:
        if dialog.winfo_exists():
            dialog.destroy()


def set_text(entry: ttk.Entry, text: str) -> None:
    entry.delete(0, "end")
    entry.insert(0, text)


def set_prompt(dialog: ChatSettingsDialog, text: str) -> None:
    dialog.prompt.delete("1.0", "end")
    dialog.prompt.insert("1.0", text)


def prompt_text(dialog: ChatSettingsDialog) -> str:
    return dialog.prompt.get("1.0", "end-1c")


def press(root: tk.Tk, widget: tk.Misc, sequence: str) -> None:
    # Tk sends key events to the focus window: give the widget the focus first.
    keyboard_focus(root, widget)
    widget.event_generate(sequence)
    root.update()


def is_open(dialog: ChatSettingsDialog) -> bool:
    return bool(dialog.winfo_exists()) and not dialog.closed


def test_shows_the_given_values(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    assert prompt_text(dialog) == GIVEN_PROMPT
    assert str(dialog.prompt.cget("wrap")) == "word"
    assert dialog.temperature.get() == "0.7"
    assert dialog.top_p.get() == "0.8"
    assert dialog.max_tokens.get() == "256"
    assert dialog.seed.get() == "42"
    assert dialog.font_size.get() == "14"
    assert dialog.title() == "Chat settings"
    assert dialog.save_button.cget("text") == "Save"
    assert dialog.cancel_button.cget("text") == "Cancel"
    assert dialog.reset_button.cget("text") == "Reset to defaults"
    assert "135M" in str(dialog.sampling_hint.cget("text"))
    assert dialog.sampling_hint.winfo_ismapped()
    assert dialog.errors() == {}
    assert str(dialog.wm_transient()) == str(root)
    assert applied == []


def test_no_seed_and_no_font_size_show_blank_and_the_default(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]],
) -> None:
    dialog, _ = open_dialog(sampling=Sampling(), font_size=None)
    assert dialog.seed.get() == ""
    assert dialog.font_size.get() == str(DEFAULT_FONT)
    assert dialog.temperature.get() == "0.3"
    assert dialog.max_tokens.get() == "512"


def test_save_applies_the_edited_values_exactly(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_prompt(dialog, "Be brief.\n\nUse  two  spaces.")
    set_text(dialog.temperature, "1.25")
    set_text(dialog.top_p, " 0.05 ")  # surrounding spaces are forgiven
    set_text(dialog.max_tokens, "32768")
    set_text(dialog.seed, "")
    set_text(dialog.font_size, "18")
    dialog.save_button.invoke()
    root.update()
    assert applied == [
        (
            "Be brief.\n\nUse  two  spaces.",
            Sampling(
                temperature=1.25,
                top_p=0.05,
                top_k=12,
                repeat_penalty=1.3,
                max_tokens=32768,
                seed=None,
            ),
            18,
        )
    ]
    assert not is_open(dialog)


def test_a_seed_number_is_an_int_and_the_range_ends_are_allowed(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog(sampling=Sampling())
    set_text(dialog.seed, "7")
    set_text(dialog.temperature, "0")
    set_text(dialog.top_p, "1")
    set_text(dialog.max_tokens, "1")
    set_text(dialog.font_size, "40")
    dialog.save_button.invoke()
    root.update()
    assert len(applied) == 1
    _prompt, sampling, font_size = applied[0]
    assert sampling.seed == 7 and type(sampling.seed) is int
    assert (sampling.temperature, sampling.top_p, sampling.max_tokens) == (0.0, 1.0, 1)
    assert type(sampling.max_tokens) is int
    assert font_size == 40


def test_unchanged_save_hands_back_the_given_values(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    dialog.save_button.invoke()
    root.update()
    assert applied == [(GIVEN_PROMPT, GIVEN, 14)]


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("temperature", "hot"),
        ("temperature", "-1"),
        ("temperature", "3"),
        ("temperature", "nan"),
        ("top_p", "0"),
        ("top_p", "1.5"),
        ("max_tokens", "0"),
        ("max_tokens", "x"),
        ("max_tokens", "1e9"),
        ("max_tokens", "1000000000"),
        ("max_tokens", "12.5"),
        ("seed", "-3"),
        ("seed", "abc"),
        ("seed", "4294967296"),
        ("font_size", "4"),
        ("font_size", "100"),
        ("font_size", ""),
    ],
)
def test_invalid_input_shows_a_message_and_applies_nothing(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]],
    root: tk.Tk,
    field: str,
    text: str,
) -> None:
    dialog, applied = open_dialog()
    entry = getattr(dialog, field)
    set_text(entry, text)
    set_text(dialog.temperature if field != "temperature" else dialog.top_p, "0.5")
    dialog.save_button.invoke()
    root.update()
    assert applied == []
    assert is_open(dialog)
    errors = dialog.errors()
    assert list(errors) == [field]  # only the bad field complains
    note = dialog.notes[field]
    assert note.cget("text") == errors[field] != ""
    assert note.winfo_ismapped()
    style = str(note.cget("style"))
    assert str(ttk.Style(root).lookup(style, "foreground")) == LIGHT.error
    # The valid fields keep their grey hint, not a red message.
    for other in FIELDS:
        if other != field:
            other_style = str(dialog.notes[other].cget("style"))
            assert ttk.Style(root).lookup(other_style, "foreground") != LIGHT.error
    assert dialog.focus_lastfor() == entry  # the cursor goes where the problem is


def test_every_invalid_field_is_reported_at_once_and_fixing_them_saves(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    for field, text in (
        ("temperature", "hot"),
        ("top_p", "0"),
        ("max_tokens", "x"),
        ("seed", "-3"),
        ("font_size", "100"),
    ):
        set_text(getattr(dialog, field), text)
    dialog.save_button.invoke()
    root.update()
    assert set(dialog.errors()) == set(FIELDS)
    assert applied == []
    assert dialog.errors()["temperature"] == "Enter a number from 0 to 2."
    assert dialog.errors()["top_p"] == "Enter a number from 0.05 to 1."
    assert dialog.errors()["max_tokens"] == "Enter a whole number from 1 to 32768."
    assert dialog.errors()["font_size"] == "Enter a whole number from 8 to 40."
    assert dialog.focus_lastfor() == dialog.temperature  # the first one, top to bottom

    for field, text in (
        ("temperature", "0.2"),
        ("top_p", "0.5"),
        ("max_tokens", "64"),
        ("seed", "3"),
        ("font_size", "12"),
    ):
        set_text(getattr(dialog, field), text)
    dialog.save_button.invoke()
    root.update()
    assert applied == [
        (
            GIVEN_PROMPT,
            Sampling(
                temperature=0.2, top_p=0.5, top_k=12, repeat_penalty=1.3, max_tokens=64, seed=3
            ),
            12,
        )
    ]
    assert not is_open(dialog)


def test_a_fixed_field_loses_its_message(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.temperature, "hot")
    set_text(dialog.seed, "abc")
    dialog.save_button.invoke()
    assert set(dialog.errors()) == {"temperature", "seed"}
    set_text(dialog.temperature, "0.4")
    dialog.save_button.invoke()
    root.update()
    assert set(dialog.errors()) == {"seed"}
    assert dialog.notes["temperature"].cget("text") == "0 – 2"
    assert applied == []
    assert is_open(dialog)


def test_cancel_applies_nothing(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.temperature, "1.5")
    set_prompt(dialog, "changed")
    dialog.cancel_button.invoke()
    root.update()
    assert not is_open(dialog)
    assert applied == []


@pytest.mark.parametrize("where", ["temperature", "prompt", "font_size"])
def test_escape_closes_and_applies_nothing(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk, where: str
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.temperature, "1.5")
    press(root, getattr(dialog, where), "<KeyPress-Escape>")
    assert not is_open(dialog)
    assert applied == []


def test_the_close_button_of_the_window_applies_nothing(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.temperature, "1.5")
    dialog.tk.call(dialog.protocol("WM_DELETE_WINDOW"))
    root.update()
    assert not is_open(dialog)
    assert applied == []


def test_reset_fills_the_defaults_and_save_applies_them(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.temperature, "hot")
    dialog.save_button.invoke()
    assert dialog.errors()  # a message is showing ...
    dialog.reset_button.invoke()
    root.update()
    assert dialog.errors() == {}  # ... and Reset clears it
    defaults = Sampling()
    assert prompt_text(dialog) == DEFAULT_SYSTEM_PROMPT
    assert dialog.temperature.get() == str(defaults.temperature)
    assert dialog.top_p.get() == str(defaults.top_p)
    assert dialog.max_tokens.get() == str(defaults.max_tokens)
    assert dialog.seed.get() == ""
    assert dialog.font_size.get() == str(DEFAULT_FONT)
    assert applied == []  # filling the fields applies nothing
    assert is_open(dialog)

    dialog.save_button.invoke()
    root.update()
    # The shown values are the defaults; top_k and repeat_penalty (not shown) are kept.
    assert applied == [
        (
            DEFAULT_SYSTEM_PROMPT,
            Sampling(top_k=GIVEN.top_k, repeat_penalty=GIVEN.repeat_penalty),
            None,
        )
    ]
    assert not is_open(dialog)


def test_reset_then_cancel_applies_nothing(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    dialog.reset_button.invoke()
    dialog.cancel_button.invoke()
    root.update()
    assert applied == []


def test_font_size_equal_to_the_default_is_none(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog(font_size=14)
    set_text(dialog.font_size, str(DEFAULT_FONT))
    dialog.save_button.invoke()
    root.update()
    assert applied[0][2] is None
    dialog, applied = open_dialog(font_size=None)
    dialog.save_button.invoke()
    root.update()
    assert applied[0][2] is None


def test_the_font_size_arrows_step_by_whole_points(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog(font_size=39)
    press(root, dialog.font_size, "<KeyPress-Up>")
    assert dialog.font_size.get() == "40"
    press(root, dialog.font_size, "<KeyPress-Up>")  # the top of the range
    assert dialog.font_size.get() == "40"
    dialog.save_button.invoke()
    root.update()
    assert applied[0][2] == 40


@pytest.mark.parametrize("where", ["temperature", "seed", "prompt"])
def test_ctrl_enter_saves(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk, where: str
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.max_tokens, "100")
    press(root, getattr(dialog, where), "<Control-KeyPress-Return>")
    assert len(applied) == 1
    prompt, sampling, _ = applied[0]
    assert prompt == GIVEN_PROMPT  # no newline typed into the prompt on the way
    assert sampling.max_tokens == 100
    assert not is_open(dialog)


def test_ctrl_enter_with_an_invalid_field_keeps_the_prompt_as_it_was(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    set_text(dialog.seed, "abc")
    press(root, dialog.prompt, "<Control-KeyPress-Return>")
    assert applied == []
    assert is_open(dialog)
    assert "seed" in dialog.errors()
    assert prompt_text(dialog) == GIVEN_PROMPT


def test_a_plain_enter_in_the_prompt_is_a_newline(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog()
    dialog.prompt.mark_set("insert", "end-1c")
    press(root, dialog.prompt, "<KeyPress-Return>")
    assert prompt_text(dialog) == GIVEN_PROMPT + "\n"
    assert applied == []
    assert is_open(dialog)


def test_built_with_a_chinese_translator(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], root: tk.Tk
) -> None:
    dialog, applied = open_dialog("zh")
    assert dialog.title() == "对话设置"
    assert dialog.save_button.cget("text") == "保存"
    assert dialog.cancel_button.cget("text") == "取消"
    labels = [
        dialog.reset_button.cget("text"),
        dialog.sampling_hint.cget("text"),
        dialog.notes["seed"].cget("text"),
        *(label.cget("text") for label in dialog.labels.values()),
    ]
    for label in labels:
        assert CJK.search(str(label)), label
    set_text(dialog.top_p, "2")
    dialog.save_button.invoke()
    root.update()
    assert CJK.search(dialog.errors()["top_p"])
    assert dialog.notes["top_p"].cget("text") == "请输入 0.05 到 1 之间的数。"
    assert applied == []


def test_a_language_switch_relabels_the_open_dialog(root: tk.Tk) -> None:
    translator = Translator("en")
    dialog = ChatSettingsDialog(
        root,
        translate=translator,
        system_prompt="",
        sampling=Sampling(),
        font_size=None,
        default_font_size=DEFAULT_FONT,
        on_apply=lambda *a: None,
    )
    set_text(dialog.seed, "abc")
    dialog.save_button.invoke()
    assert dialog.notes["seed"].cget("text").startswith("Leave blank")
    translator.set_language("zh")
    root.update()
    assert dialog.title() == "对话设置"
    assert dialog.save_button.cget("text") == "保存"
    assert CJK.search(str(dialog.notes["seed"].cget("text")))
    dialog.cancel_button.invoke()
    translator.set_language("en")  # a closed dialog ignores the change
    assert not dialog.winfo_exists()


def test_strings_are_complete_in_both_languages_and_merged() -> None:
    assert SETTINGS_STRINGS["en"].keys() == SETTINGS_STRINGS["zh"].keys()
    assert all(key.startswith("settings.") for key in SETTINGS_STRINGS["en"])
    # Every Chinese string is Chinese, except the bare number range.
    assert all(
        CJK.search(text) for key, text in SETTINGS_STRINGS["zh"].items() if key != "settings.range"
    )
    for lang in ("en", "zh"):
        assert SETTINGS_STRINGS[lang].items() <= STRINGS[lang].items()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_dialog_with_a_local_models_rows_fits_a_1280_pixel_screen(
    open_dialog: Callable[..., tuple[ChatSettingsDialog, Applied]], lang: str
) -> None:
    """Seen in the field (1280x800): with a local model's rows, the CPU-only GPU hint made the
    dialog about 1,350 pixels wide and Save was off the screen. The notes wrap; the dialog is
    placed on the screen."""
    model = ModelContext("smollm2-135m-jan", chosen=None, automatic=8192)
    dialog, _ = open_dialog(lang, model_context=model)
    assert dialog.winfo_reqwidth() <= 1280 - 80, dialog.winfo_reqwidth()
    assert dialog.winfo_rootx() + dialog.winfo_width() <= dialog.winfo_screenwidth()
    save = dialog.save_button
    assert save.winfo_rootx() + save.winfo_width() <= dialog.winfo_screenwidth()
