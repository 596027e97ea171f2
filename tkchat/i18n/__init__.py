"""Every string the window shows, in English and Chinese: ``STRINGS[lang][key]``.

Pure data, no Tk: one module per part of the window (``window.py`` for the chat window
itself, then the lesson panel, the sidebar, the settings dialog, the model picker, the
model catalogue and the exercises: a pipeline of one's own, the self-test's report), merged here.
:class:`tkchat.ui.window.translator.Translator` puts them on widgets.
"""

from __future__ import annotations

from tkchat.i18n import (
    appearance,
    catalogue,
    exercise,
    lesson_panel,
    model_picker,
    recording,
    settings_dialog,
    sidebar,
    watchdog,
    window,
)

LANGUAGES = ("en", "zh")

STRINGS: dict[str, dict[str, str]] = {
    lang: {
        **window.STRINGS[lang],
        **lesson_panel.STRINGS[lang],
        **sidebar.STRINGS[lang],
        **settings_dialog.STRINGS[lang],
        **model_picker.STRINGS[lang],
        **appearance.STRINGS[lang],
        **catalogue.STRINGS[lang],
        **exercise.STRINGS[lang],
        **recording.STRINGS[lang],
        **watchdog.STRINGS[lang],
    }
    for lang in LANGUAGES
}
