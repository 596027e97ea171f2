"""What someone leaving LM Studio, GPT4All or Jan meets on the first day (issue 22, "the
smaller items"), each on a real window on Xvfb, with real keys and clicks where they matter:
Enter while the model loads, Regenerate after a branch flipped, the versions' arrows and
their keys, a long pasted paragraph, a long status message, the menus' border.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import tkinter as tk
from dataclasses import dataclass, field

import pytest

from tests.conftest import pump_for, pump_until
from tkchat.generate.backend import LoadWatch
from tkchat.generate.scripted import ScriptedBackend

pytestmark = pytest.mark.gui

needs_xdotool = pytest.mark.skipif(shutil.which("xdotool") is None, reason="needs xdotool")


def xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=True, timeout=20)


def focus_window(root: tk.Tk) -> None:
    root.geometry("1140x680+0+0")
    root.focus_force()
    pump_for(root, 0.3)


@dataclass
class SlowToLoad(ScriptedBackend):
    """The scripted backend, whose load waits for ``loaded`` to be set (loader thread)."""

    loaded: threading.Event = field(default_factory=threading.Event)

    def load(self, watch: LoadWatch | None = None) -> None:
        self.loaded.wait(30)


# -- Enter while the model loads ----------------------------------------------------------------


@needs_xdotool
def test_enter_while_the_model_loads_sends_the_question_once_it_is_ready(
    root: tk.Tk, make_app
) -> None:
    """Reported: Enter pressed while the model loaded was refused ("not ready yet")."""
    backend = SlowToLoad(rate=0, text="Ready now.")
    app = make_app(backend, wait=False)
    focus_window(root)
    app.input.focus_set()
    xdotool("type", "--delay", "8", "asked while it loads")
    xdotool("key", "Return")
    pump_for(root, 0.3)
    assert not app.model_ready and app.transcript.entries == []
    assert app.status.get() == app.t("app.send_when_ready")
    assert app.input.draft == "asked while it loads"  # kept in the box meanwhile
    backend.loaded.set()
    pump_until(root, lambda: bool(app.finished), timeout=30, what="the question to be sent")
    assert [entry.text for entry in app.transcript.entries] == [
        "asked while it loads",
        "Ready now.",
    ]
    assert app.input.draft == ""


# -- Regenerate after a branch flipped ----------------------------------------------------------


def test_after_flipping_to_another_branch_regenerate_and_ctrl_r_agree(
    root: tk.Tk, make_app
) -> None:
    """Reported: after flipping a question to its branch 1/2, the Regenerate button (and its
    menu item) were greyed out while Ctrl+R worked. The button was wrong: the branch ends
    with an answer and the model is ready, so there is something to regenerate. (While the
    branch is still being put on screen both refuse: Ctrl+R says "not ready".)"""
    backend = ScriptedBackend(rate=0, text="First answer.")
    app = make_app(backend, history=True)
    pump_until(root, lambda: app.conversations.ready and not app.showing_conversation)
    for question in ("one?", "two?"):
        assert app.send(question)
        pump_until(root, lambda: app.answer is None, what="the answer")
    question = app.transcript.entries[2]
    app.flow.edit(question)
    app.input.set_draft("two, again?")
    backend.text = "Second answer."
    assert app.send()
    pump_until(root, lambda: app.answer is None, what="the edited question's answer")
    assert app.flow.show_version(app.transcript.entries[2], -1)  # ◀ on the question: 1/2
    pump_until(root, lambda: not app.showing_conversation, what="the branch")
    pump_for(root, 0.1)
    assert [entry.text for entry in app.transcript.entries][-1] == "First answer."
    assert app.regenerate_button.instate(["!disabled"]), "the button is greyed out"
    assert app.menubar.enabled("regenerate")
    finished = len(app.finished)
    root.event_generate("<Control-r>", when="tail")  # and the shortcut does what it says
    pump_until(root, lambda: len(app.finished) > finished, what="the regenerated answer")
    answer = app.transcript.entries[-1]
    assert len(answer.versions) == 2 and answer.text == "Second answer."
