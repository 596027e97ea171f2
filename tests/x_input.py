"""Real X input for window tests (xdotool), and the waits that follow input or a change of
layout: until Tk has handled every event the input made (:func:`handled`), until every
widget's geometry has stopped changing (:func:`laid_out`). No fixed pause: the X protocol
orders it.

Why :func:`handled` is enough: xdotool syncs with the X server before it exits (XCloseDisplay
does XSync), so the server has turned its keys and clicks into events by then; one round trip
from Tk (a pointer query) makes the server deliver every event queued before the reply, and
``update()`` handles them, with whatever idle work they scheduled.
"""

from __future__ import annotations

import shutil
import subprocess
import tkinter as tk

import pytest

from tests.conftest import pump_until

needs_xdotool = pytest.mark.skipif(shutil.which("xdotool") is None, reason="needs xdotool")


def xdotool(*args: str) -> None:
    """Test thread: run xdotool; it has synced with the X server when this returns."""
    subprocess.run(["xdotool", *args], check=True, timeout=20)


def handled(root: tk.Misc) -> None:
    """Test thread: Tk has handled every event of the input sent so far, and what those
    events set in motion on the X server (a focus change, a window mapped) as well."""
    for _ in range(2):  # the second round brings the events the first one's work caused
        root.winfo_pointerxy()  # a round trip: every event before the reply is in Tk's queue
        root.update()


def _geometry(root: tk.Misc) -> list[tuple[str, int, int, int, int, int]]:
    """Every widget's place, size and whether it is mapped."""
    found = []
    todo = [root]
    while todo:
        widget = todo.pop()
        found.append(
            (
                str(widget),
                widget.winfo_rootx(),
                widget.winfo_rooty(),
                widget.winfo_width(),
                widget.winfo_height(),
                widget.winfo_ismapped(),
            )
        )
        todo.extend(widget.winfo_children())
    return found


def laid_out(root: tk.Misc) -> None:
    """Test thread: run Tk until a round of events and idle work (geometry management, the
    ``<Configure>`` handlers it sets off, the X server's answers to a resize) changes no
    widget's geometry. Work a timer does later (a health bar's refresh) is not waited for:
    wait for its result with ``pump_until``."""
    before = None
    for _ in range(1000):
        handled(root)
        now = _geometry(root)
        if now == before:
            return
        before = now
    raise AssertionError("the layout never settles")  # a loop in it, not a slow machine


def focus_window(root: tk.Tk, geometry: str = "1140x680+0+0") -> None:
    """Place the window (``geometry``: "WxH+X+Y"), laid out at that size, and give it the
    keyboard (there is no window manager on Xvfb)."""
    root.geometry(geometry)
    width, height = (int(n) for n in geometry.split("+")[0].split("x"))
    pump_until(
        root,
        lambda: (root.winfo_width(), root.winfo_height()) == (width, height),
        what=f"the window at {geometry}",
    )
    root.focus_force()
    handled(root)


def keyboard_focus(root: tk.Misc, widget: tk.Misc) -> None:
    """Give ``widget`` the keyboard and wait until the X server has: Tk sends a generated key
    event to the window that has the X focus, and drops it while none has."""
    widget.focus_force()
    pump_until(root, lambda: root.focus_get() is widget, what=f"the keyboard focus on {widget}")


def click_at(root: tk.Misc, x: int, y: int, button: str = "1") -> None:
    """A real click at (x, y) on the screen, handled. One xdotool call moves and clicks, so
    the X server takes the two in order (``mousemove --sync`` waits for a motion, and when
    the pointer is already there none comes)."""
    xdotool("mousemove", str(x), str(y), "click", button)
    handled(root)


def click(root: tk.Misc, widget: tk.Misc) -> None:
    """A real click in the middle of ``widget``, handled."""
    root.update()
    x = widget.winfo_rootx() + widget.winfo_width() // 2
    y = widget.winfo_rooty() + widget.winfo_height() // 2
    click_at(root, x, y)


def move_to(root: tk.Misc, x: int, y: int) -> None:
    """Move the pointer to (x, y) on the screen; the Enter and Motion events handled."""
    xdotool("mousemove", str(x), str(y))
    handled(root)


def type_text(root: tk.Misc, text: str) -> None:
    """Type ``text`` with real keys, handled."""
    xdotool("type", "--delay", "2", text)
    handled(root)


def press(root: tk.Misc, *keys: str) -> None:
    """Press keys (xdotool's names: "Return", "ctrl+n"), handled."""
    xdotool("key", *keys)
    handled(root)
