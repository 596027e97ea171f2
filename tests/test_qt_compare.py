"""``tkchat compare`` with the Qt client: Qt beside Tk, Qt broken beside Qt fixed; and the
command line's answers when the Qt client cannot do what is asked."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import tkchat_windows, wait_until, window_name
from tkchat.cli import main
from tkchat.course.compare import window_commands
from tkchat.modes import FIXED


def commands(broken: str | None, toolkit: str) -> list[list[str]]:
    return window_commands(
        broken,
        ["--backend", "scripted"],
        prompt="hi",
        seed=3,
        max_tokens=64,
        screen=(1600, 1000),
        toolkit=toolkit,
    )


def option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def test_both_puts_the_qt_window_left_of_the_tk_window_both_fixed() -> None:
    left, right = commands(None, "both")
    assert option(left, "--toolkit") == "qt" and option(right, "--toolkit") is None
    assert option(left, "--mode") == option(right, "--mode") == FIXED
    for command in (left, right):
        assert option(command, "--seed") == "3" and option(command, "--prompt") == "hi"
    assert option(left, "--geometry").endswith("+0+0")  # type: ignore[union-attr]


def test_qt_puts_qts_broken_variant_beside_qt_fixed() -> None:
    left, right = commands(None, "qt")
    assert option(left, "--toolkit") == option(right, "--toolkit") == "qt"
    assert option(left, "--mode") == "no-coalesce" and option(right, "--mode") == FIXED
    # and the Tk pair is as it always was
    left, right = commands(None, "tk")
    assert "--toolkit" not in left + right
    assert option(left, "--mode") == "blocking" and option(right, "--mode") == FIXED


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--toolkit", "qt", "--mode", "blocking"], "the Qt client has the modes fixed and"),
        (["selftest", "--toolkit", "qt", "--mode", "per-chunk-render"], "modes fixed and"),
        (["compare", "--toolkit", "qt", "--broken", "blocking"], "not blocking"),
        (["compare", "--toolkit", "both", "--broken", "no-coalesce"], "leave out --broken"),
        (["--toolkit", "qt", "--lessons"], "the Qt client has no --lessons"),
        pytest.param(
            ["--toolkit", "qt", "--geometry", "big"],
            "--geometry must look like 900x700+0+0",
            marks=pytest.mark.skipif(
                importlib.util.find_spec("PySide6") is None, reason="checked by the Qt client"
            ),
        ),
    ],
)
def test_what_the_qt_client_cannot_do_is_said_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


QT_GONE = "the Qt client needs the qt extra (this test's stand-in for PySide6 missing)"


@pytest.mark.parametrize(
    ("argv", "qt_missing", "said"),
    [
        # Qt not there: that is what stops the user, whatever else they asked for
        (["compare", "--toolkit", "qt", "--projector"], QT_GONE, f"tkchat compare: {QT_GONE}"),
        (
            ["compare", "--toolkit", "both", "--broken", "blocking", "--projector"],
            QT_GONE,
            f"tkchat compare: {QT_GONE}",
        ),
        (["--toolkit", "qt", "--projector", "--lessons"], QT_GONE, f"tkchat: {QT_GONE}"),
        # a mode the Qt client lacks comes before an option it has no use for
        (
            ["compare", "--toolkit", "qt", "--broken", "blocking", "--projector"],
            None,
            "tkchat compare: the Qt client has the modes fixed and no-coalesce, not blocking",
        ),
        # the client can run: then the option is what is left to say
        (
            ["compare", "--toolkit", "qt", "--projector"],
            None,
            "tkchat compare: the Qt client has no projector mode: leave out --projector",
        ),
    ],
)
def test_the_first_thing_that_stops_a_qt_window_is_said_and_only_it(
    argv: list[str],
    qt_missing: str | None,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("tkchat.qt.qt_missing", lambda: qt_missing)
    assert main(argv) == 2
    assert capsys.readouterr().err == said + "\n"


@pytest.mark.gui
def test_compare_both_opens_a_qt_and_a_tk_window_and_closes_them(display: None) -> None:
    pytest.importorskip("PySide6.QtWidgets", reason="the Qt client needs PySide6 (the qt extra)")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tkchat", "compare", "--toolkit", "both"]
        + ["--backend", "scripted", "--rate", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "xcb"},
    )
    names: list[str] = []
    try:

        def two_windows() -> bool:
            names[:] = [window_name(w).strip() for w in tkchat_windows()]
            return len(names) >= 2

        wait_until(two_windows, timeout=30, what="compare to open two windows", interval=0.2)
        assert sum(name.startswith("tkchat (Qt) — ") for name in names) == 1, names
        assert not any("BROKEN" in name for name in names), names
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_the_qt_clients_own_strings_exist_in_both_languages() -> None:
    from tkchat.i18n import qt_window

    assert set(qt_window.STRINGS["en"]) == set(qt_window.STRINGS["zh"])
    for key, text in qt_window.STRINGS["zh"].items():
        assert text != qt_window.STRINGS["en"][key], key
