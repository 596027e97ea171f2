"""Shared fixtures: a virtual screen, a strict Tk root, and waiting helpers.

Like Porcupine's test suite, a test fails if any Tk callback raised, even when the exception
was swallowed by Tk's event loop and the test's own assertions passed.
"""

from __future__ import annotations

import gc
import logging
import time
import tkinter as tk
import traceback
from collections.abc import Callable, Iterator

import pytest

from tkchat.measure.display import ensure_display


@pytest.fixture(scope="session")
def display() -> Iterator[None]:
    """Start Xvfb when DISPLAY is unset (it stops when the test session ends)."""
    proc = ensure_display()
    yield
    if proc is not None:
        proc.terminate()
        proc.wait(5)


class CallbackErrors:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, exc: type[BaseException], value: BaseException, tb: object) -> None:
        self.errors.append("".join(traceback.format_exception(exc, value, tb)))  # type: ignore[arg-type]


# Every root a test created stays referenced until the interpreter exits. A Tk interpreter
# freed by a garbage collection that happens to run on a worker thread aborts the process
# (Tcl_AsyncDelete); the app itself never frees its root, so only tests need this.
_KEEP_ALIVE: list[tk.Tk] = []


@pytest.fixture
def root(display: None, caplog: pytest.LogCaptureFixture) -> Iterator[tk.Tk]:
    """A real Tk root; the test fails if any Tk callback raised, or anything logged an ERROR,
    while it lived."""
    tk_root = tk.Tk()
    _KEEP_ALIVE.append(tk_root)
    errors = CallbackErrors()
    tk_root.report_callback_exception = errors  # type: ignore[method-assign]
    yield tk_root
    try:
        if tk_root.winfo_exists():
            tk_root.destroy()
    except tk.TclError:
        pass  # the app under test already destroyed it
    gc.collect()  # free this test's Tk objects here, on the main thread
    assert not errors.errors, "a Tk callback raised:\n" + "\n".join(errors.errors)
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not logged, f"errors were logged: {logged}"


def pump_until(root: tk.Misc, ready: Callable[[], bool], timeout: float = 20.0,
               what: str = "condition") -> None:
    """Run the Tk event loop (as mainloop would) until ``ready()`` or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        root.update()
        time.sleep(0.002)


def pump_for(root: tk.Misc, seconds: float) -> None:
    """Run the Tk event loop for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        root.update()
        time.sleep(0.002)


@pytest.fixture
def make_app(root: tk.Tk) -> Iterator[Callable[..., object]]:
    """Build a ChatApp around a backend and wait until its model is ready (or failed)."""
    from tkchat.generate.controller import GenerationController
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.app import ChatApp

    apps: list[ChatApp] = []

    def build(backend: object, wait: bool = True, **kwargs: object) -> ChatApp:
        controller = GenerationController(backend, EventChannel())  # type: ignore[arg-type]
        app = ChatApp(root, controller, **kwargs)  # type: ignore[arg-type]
        controller.load_async()
        apps.append(app)
        if wait:
            pump_until(root, lambda: app.model_ready or app.send_button.instate(["disabled"]),
                       what="the model to load")
        return app

    yield build
    for app in apps:
        if not app.closed:
            app.close()
