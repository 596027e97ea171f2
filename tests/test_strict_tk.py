"""The suite's own rule, checked: a Tk callback that raises fails the test, whichever root
it ran on (tests/conftest.py, ``no_tk_callback_raised``)."""

from __future__ import annotations

import tkinter as tk

import pytest

from tests.conftest import KEEP_ALIVE, TK_CALLBACK_ERRORS, pump_for

pytestmark = pytest.mark.gui


def test_a_root_made_outside_the_fixture_reports_a_raising_callback(display: None) -> None:
    other = tk.Tk()  # not the ``root`` fixture: as an app's second window or a helper makes it
    KEEP_ALIVE.append(other)

    def broken() -> None:
        raise RuntimeError("a callback that raised")

    other.after(1, broken)
    pump_for(other, 0.1)
    other.destroy()
    caught = list(TK_CALLBACK_ERRORS.errors)
    TK_CALLBACK_ERRORS.errors.clear()  # it was raised on purpose: this test passes
    assert len(caught) == 1 and "a callback that raised" in caught[0]
