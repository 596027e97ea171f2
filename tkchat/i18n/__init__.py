"""Every string the window shows, in English and Chinese: ``STRINGS[lang][key]``.

Pure data, no Tk: one module per part of the window (``window.py`` for the chat window
itself, then the lesson panel, the sidebar, the settings dialog, the model picker, the
model catalogue, the exercises (a pipeline of one's own), the self-test's report, who held
the event loop and the pipeline view), merged here.
:class:`tkchat.ui.base.translator.Translator` puts them on widgets.
"""

from __future__ import annotations

from collections.abc import Callable

from tkchat.i18n import (
    appearance,
    catalogue,
    culprit,
    exercise,
    lesson_panel,
    model_picker,
    recording,
    selftest,
    settings_dialog,
    sidebar,
    stages,
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
        **culprit.STRINGS[lang],
        **selftest.STRINGS[lang],
        **watchdog.STRINGS[lang],
        **stages.STRINGS[lang],
    }
    for lang in LANGUAGES
}


def strings(lang: str) -> Callable[..., str]:
    """The strings of ``lang`` as a function — ``strings("zh")("selftest.pass")`` — for text
    made where there is no window (Tk-free; the window's own is ``Translator``)."""
    table = STRINGS[lang]

    def say(key: str, **values: object) -> str:
        return table[key].format(**values) if values else table[key]

    return say
