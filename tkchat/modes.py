"""The names of every way tkchat can move an answer to the screen (``--mode``, the mode menu).

``fixed`` is tkchat's pipeline; the others are the deliberately broken demos in
``tkchat/antipatterns/``. Only names live here, with no import at all: ``tkchat --help`` and
``tkchat serve`` need them on machines without Tk, while every pipeline draws with Tk. The
classes behind the names are in :func:`tkchat.ui.pipeline.make_pipeline`.
"""

from __future__ import annotations

FIXED = "fixed"
MODES: tuple[str, ...] = (
    FIXED,
    "blocking",
    "main-thread-reader",
    "per-chunk-render",
    "no-coalesce",
)
BROKEN_MODES: tuple[str, ...] = tuple(name for name in MODES if name != FIXED)


def check_mode(name: str) -> None:
    """Raise ValueError for a name that is not a mode."""
    if name not in MODES:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(MODES)}")
