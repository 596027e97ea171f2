"""``tkchat --toolkit qt``: open the Qt chat window on a backend (in-process or a server)."""

from __future__ import annotations

import locale
import re
import sys
from dataclasses import dataclass, field

from PySide6.QtWidgets import QApplication, QWidget

from tkchat.conversation import Sampling
from tkchat.generate.backend import Backend
from tkchat.generate.controller import GenerationController
from tkchat.qt.window import ChatWindow
from tkchat.transport.channel import EventChannel
from tkchat.transport.chaos import Chaos

_GEOMETRY_RE = re.compile(r"^(\d+)x(\d+)(?:\+(-?\d+)\+(-?\d+))?$")


@dataclass
class QtOptions:
    mode: str = "fixed"
    sampling: Sampling = field(default_factory=Sampling)
    language: str = "en"
    prompt: str | None = None  # sent as soon as the model is ready
    geometry: str | None = None  # Tk's form, as the other windows take it: 900x700+0+0
    chaos: Chaos | None = None  # lesson 13's chaos transport, in front of this window too


def application() -> QApplication:
    """The process's one ``QApplication`` (made on first use, on the calling thread, which
    becomes Qt's GUI thread). Qt sets the C locale from the environment when it starts;
    Python's own locale is put back as it was, so nothing else in the process changes."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    saved = locale.setlocale(locale.LC_ALL)
    app = QApplication([sys.argv[0] if sys.argv else "tkchat"])
    app.setApplicationName("tkchat")
    locale.setlocale(locale.LC_ALL, saved)
    return app


def place(window: QWidget, geometry: str) -> None:
    """Size (and place) ``window`` from a Tk-style ``WxH`` or ``WxH+X+Y``."""
    match = _GEOMETRY_RE.match(geometry.strip())
    if match is None:
        raise ValueError(f"geometry must look like 900x700 or 900x700+0+0, not {geometry!r}")
    width, height, x, y = match.groups()
    window.resize(int(width), int(height))
    if x is not None and y is not None:
        window.move(int(x), int(y))


def open_window(backend: Backend, options: QtOptions) -> ChatWindow:
    """GUI thread. A shown Qt window on ``backend``, whose model starts loading on a thread."""
    controller = GenerationController(backend, EventChannel())
    controller.sink_wrapper = options.chaos
    window = ChatWindow(
        controller,
        mode=options.mode,
        sampling=options.sampling,
        language=options.language,
        autosend=options.prompt,
    )
    place(window, options.geometry or "900x700")
    window.show()
    controller.load_async()  # the window is up first; ModelReady arrives as an event
    return window


def run_qt_app(backend: Backend, options: QtOptions) -> int:
    """Main thread: the Qt event loop, until the window closes. 2 for a malformed geometry."""
    if options.geometry and not _GEOMETRY_RE.match(options.geometry.strip()):
        print(
            f"tkchat: --geometry must look like 900x700+0+0, not {options.geometry!r}",
            file=sys.stderr,
        )
        return 2
    app = application()
    window = open_window(backend, options)
    app.aboutToQuit.connect(window.shutdown)  # Ctrl+C or a session ending: same clean exit
    return int(app.exec())
