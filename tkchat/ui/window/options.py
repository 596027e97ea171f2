"""How a chat window starts: :class:`AppOptions`, from the command line, a recording, a test.

Tk-free values only, so the command line can build them before any window exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tkchat.conversation import Sampling
from tkchat.generate.factory import LlamaOptions, ScriptedOptions
from tkchat.modes import FIXED
from tkchat.stats import LagSample
from tkchat.store.settings import AppSettings
from tkchat.transport.chaos import Chaos
from tkchat.ui.look.system_theme import Detected


@dataclass(frozen=True)
class AppOptions:
    """How a window starts. ``sampling`` and ``system_prompt`` override the remembered
    defaults of new conversations (command-line flags). ``mode``: a name from
    :mod:`tkchat.modes`. ``compare_command(broken_mode)`` gives the command line of
    ``tkchat compare`` (None: no Compare button). ``autosend`` is sent once the model is
    ready (``--prompt``). ``language``: "en" or "zh" (default: remembered, else the system's).
    ``demo_llama``, ``demo_scripted``: the backends a lesson's demo switches to (made once,
    when one first asks; a window started on a model keeps that one).
    ``history``: keep conversations in the user's data folder and reopen the latest.
    ``app_settings``: what was remembered (``settings.json``); with ``persist_settings``
    every change is written back. ``projector``: start in projector mode (large text).
    ``chaos``: answers travel through the chaos transport (lesson 13, ``--chaos SEED``).
    ``theme``: "system", "light" or "dark" for this run (default: remembered, else the
    system's); ``teach``: the teaching controls shown even if the chat-only view was
    remembered (``--teach``); ``detect_theme()`` asks the desktop (tests give their own).
    ``recorded_lag()``: a recording's lag samples, drawn beside the live lag in the lesson
    panel's timeline (``tkchat replay``). ``freeze_heap``: each loaded model's objects set
    aside from the garbage collector, as start-up's are (tkchat/ui/window/heap.py): the
    command line's window and a lab window that measures; off where one process makes many
    windows (the tests), whose closed windows' garbage would be frozen with them."""

    sampling: Sampling | None = None
    system_prompt: str | None = None
    mode: str = FIXED
    compare_command: Callable[[str], list[str]] | None = None
    autosend: str | None = None
    language: str | None = None
    demo_llama: LlamaOptions = LlamaOptions()
    demo_scripted: ScriptedOptions = ScriptedOptions()
    show_lessons: bool = False
    history: bool = False
    app_settings: AppSettings | None = None
    persist_settings: bool = False
    projector: bool = False
    chaos: Chaos | None = None
    theme: str | None = None
    teach: bool = False
    detect_theme: Callable[[], Detected] | None = None
    recorded_lag: Callable[[], Sequence[LagSample]] | None = None
    freeze_heap: bool = False
