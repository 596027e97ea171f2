"""What an answer's first and last callbacks do on the main thread, and the health bar beside
them (issue 38), counted: with its markdown made ready elsewhere (tests/test_html_layout.py),
Send's callback and the one that handles ``done`` were the longest of an answer. A control
already in the state asked for is not configured again, the sidebar's list is read in a
callback of its own after Send's, and the bar measures its figures only when their text
changes length. No clock."""

from __future__ import annotations

import tkinter as tk
from typing import Any

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Sampling
from tkchat.generate.scripted import ScriptedBackend

pytestmark = pytest.mark.gui


def test_a_control_already_so_is_not_configured_again(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(ScriptedBackend(rate=0))
    configured: list[str] = []
    real_entry = tk.Menu.entryconfigure

    def entry(menu: tk.Menu, index: Any, **options: Any) -> Any:
        configured.append(f"menu {options}")
        return real_entry(menu, index, **options)

    monkeypatch.setattr(tk.Menu, "entryconfigure", entry)
    real_button = app.send_button.configure
    monkeypatch.setattr(
        app.send_button,
        "configure",
        lambda **options: configured.append(f"send {options}") or real_button(**options),
    )
    app.enable("regenerate", True)  # (whatever it was: enabled now)
    app.enable("send", True)
    configured.clear()
    app.enable("regenerate", True)
    app.enable("regenerate", False)
    app.enable("regenerate", False)
    app.enable("send", True)
    assert configured == ["menu {'state': 'disabled'}"]
    assert app.menubar.enabled("regenerate") is False
    assert not app.send_button.instate(["disabled"])
    configured.clear()
    app.flow.send("hi")  # an answer's start and end: what changes is configured, once each
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    assert configured.count("send {'state': 'disabled'}") == 1
    assert configured.count("send {'state': 'normal'}") == 1


def test_send_leaves_the_sidebar_to_a_callback_of_its_own(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True, sampling=Sampling(max_tokens=3))
    pump_until(root, lambda: app.flow.send_allowed and app.conversations.ready, what="history")
    sidebar = app.conversations.sidebar
    listed: list[int] = []
    real = sidebar.set_conversations
    monkeypatch.setattr(
        sidebar,
        "set_conversations",
        lambda conversations, current: (
            listed.append(len(conversations)) or real(conversations, current)
        ),
    )
    before = len(app.conversations.archive.conversations())
    app.flow.send("A question that starts a chat")
    assert listed == []  # not inside Send's callback
    pump_until(root, lambda: listed != [], what="the sidebar's refresh")
    assert listed[0] == before + 1  # the new chat is in it
    assert app.scheduler.pending("sidebar-refresh") is False


def test_the_health_bar_measures_its_figures_only_when_their_text_changes_length(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four times a second the bar's figures change, not their width (a fixed-width font,
    numbers of a fixed width): measuring whether they still fit was most of that callback."""
    app = make_app(ScriptedBackend(rate=0))
    bar = app.health
    pump_until(root, lambda: bar.winfo_width() > 1, what="the bar, laid out")
    fits: list[int] = []
    real = bar._fit
    monkeypatch.setattr(bar, "_fit", lambda width: fits.append(width) or real(width))
    lag = {"now": 1.0}
    monkeypatch.setattr(bar.probe, "now_ms", lambda: lag["now"])
    monkeypatch.setattr(bar.probe, "p99_ms", lambda: 2.0)
    for now in (1.0, 3.5, 12.25):
        lag["now"] = now
        bar._refresh()
    assert len(fits) <= 1  # (the first refresh here may see a new text: at most that one)
    fits.clear()
    lag["now"] = 123456.0  # a freeze of two minutes: a longer figure
    bar._refresh()
    assert len(fits) == 1
    app.toggle_language()  # another language: measured again
    bar._refresh()
    assert len(fits) == 2
    app.toggle_language()
