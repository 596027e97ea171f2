"""The suite's own rule, checked: a Tk callback that raises fails the test, whichever root
it ran on (tests/conftest.py, ``no_tk_callback_raised``)."""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont

import pytest

from tests.conftest import KEEP_ALIVE, TK_CALLBACK_ERRORS, pump_until

pytestmark = pytest.mark.gui


def test_the_fixture_and_the_tests_share_one_conftest() -> None:
    """pytest loaded tests/conftest.py as ``conftest`` while the tests imported it as
    ``tests.conftest``: two modules, two lists of errors, and the fixture read the list that
    nobody wrote to — no test failed for a raising callback, whatever it raised (found
    2026-12-02). tests/__init__.py makes the suite one package: one module."""
    import sys

    import tests.conftest

    assert sys.modules.get("conftest", tests.conftest) is tests.conftest
    assert tk.Tk.report_callback_exception is tests.conftest._report_callback_exception


def test_a_root_made_outside_the_fixture_reports_a_raising_callback(display: None) -> None:
    other = tk.Tk()  # not the ``root`` fixture: as an app's second window or a helper makes it
    KEEP_ALIVE.append(other)

    def broken() -> None:
        raise RuntimeError("a callback that raised")

    other.after(1, broken)
    # Only this root's errors: pumping runs every root's timers, and what a window another
    # test left behind raised stays listed for the fixture, which fails this test naming
    # that test. Pumped until it is reported, then one round of the loop more (its timer has
    # fired; nothing runs it again): it must be reported once.
    made_in = f"(on a root made in {other.made_in_test})"  # type: ignore[attr-defined]

    def mine() -> list[str]:
        return [e for e in TK_CALLBACK_ERRORS.errors if e.startswith(made_in)]

    pump_until(other, lambda: bool(mine()), timeout=10, what="the callback's error")
    other.update()
    other.destroy()
    caught = mine()
    TK_CALLBACK_ERRORS.errors[:] = [e for e in TK_CALLBACK_ERRORS.errors if e not in caught]
    assert len(caught) == 1 and "a callback that raised" in caught[0]


def test_the_window_leaves_no_tk_variable_to_the_garbage_collector(root: tk.Tk, make_app) -> None:
    """A ``tk.Variable`` unsets itself in ``__del__``, on whichever thread the collector runs:
    collected on the model's worker (a closed window's menu check marks, its search box), it
    called Tk from that thread, waited a second for a main loop and raised — a lesson demo
    took 28 s instead of one. The window keeps Tcl variables by name instead
    (tkchat/ui/tcl_var.py), and makes fonts that never delete themselves
    (tkchat/ui/look/lasting_font.py)."""
    import gc

    from tkchat.generate.scripted import ScriptedBackend

    def self_deleting_fonts() -> list[tkfont.Font]:
        return [o for o in gc.get_objects() if isinstance(o, tkfont.Font) and o.delete_font]

    # (other tests' fonts, of windows long gone, may still wait for the collector: not ours)
    elsewhere = {id(font) for font in self_deleting_fonts()}
    app = make_app(ScriptedBackend(rate=0), history=True, show_lessons=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    app.chat_settings.open()
    root.update()
    app.chat_settings.dialog.cancel()
    app.menubar.set_checked("chat_only", True)  # a check mark, as the View menu shows it
    assert app.menubar.checked("chat_only")
    app.menubar.set_checked("chat_only", False)
    assert not app.menubar.checked("chat_only")
    app.flow.send("a question, so that an answer's fonts are made too")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    gc.collect()
    variables = [o for o in gc.get_objects() if isinstance(o, tk.Variable)]
    assert variables == [], [type(v).__name__ for v in variables]
    # Nor a font that deletes itself: collected on a worker, each waited a second for a main
    # loop (the window closed by one test made the next test's stream take 23 s, not 0.3).
    fonts = [font.name for font in self_deleting_fonts() if id(font) not in elsewhere]
    assert fonts == [], fonts
