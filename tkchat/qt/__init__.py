"""The article's third client, running: a small Qt chat window on tkchat's own pipeline.

It consumes the same events from the same worker as the Tk window (``GenerationController``,
``EventChannel``, ``StreamConsumer``), in-process or from ``tkchat serve``, and shows the same
health figures. What is Qt's own is how the events reach the GUI thread: a reader object on a
``QThread`` waits on the queue and hands each batch over as a queued signal, and a 16 ms
``QTimer`` appends everything that arrived with one insert (``consume.py``).

The package imports no Tk, and nothing in the Tk window imports it (tests/test_architecture.py).
PySide6 is optional (the ``qt`` extra: ``pip install 'tkchat[qt]'``): importing this package
alone does not need it, so ``tkchat --help`` works without Qt.
"""

from __future__ import annotations

from tkchat.installed import extra_missing

# The two ways the Qt window can move text to the screen: tkchat's, and the article's own
# mistake (a signal and an append per token). The names are the Tk window's mode names.
QT_MODES: tuple[str, ...] = ("fixed", "no-coalesce")


def qt_missing() -> str | None:
    """None when PySide6 can be imported; otherwise one sentence saying how to get it."""
    return extra_missing("the Qt client", "qt")
