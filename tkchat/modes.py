"""Every way tkchat can move an answer to the screen, by name (``--mode``, the mode menu).

``fixed`` is tkchat's pipeline; the others are the deliberately broken demos in
``tkchat/antipatterns/``.
"""

from __future__ import annotations

from tkchat.antipatterns.blocking import GenerateInClickHandler
from tkchat.antipatterns.main_thread_reader import ReadStreamOnMainThread
from tkchat.antipatterns.no_coalesce import InsertEveryToken
from tkchat.antipatterns.per_chunk_render import RenderEveryChunk
from tkchat.ui.pipeline import FixedPipeline, Pipeline

FIXED = "fixed"

_FACTORIES: dict[str, type[Pipeline]] = {
    FIXED: FixedPipeline,
    "blocking": GenerateInClickHandler,
    "main-thread-reader": ReadStreamOnMainThread,
    "per-chunk-render": RenderEveryChunk,
    "no-coalesce": InsertEveryToken,
}
MODES: tuple[str, ...] = tuple(_FACTORIES)
BROKEN_MODES: tuple[str, ...] = tuple(name for name in MODES if name != FIXED)


def make_pipeline(name: str) -> Pipeline:
    """A new pipeline object (some keep per-window state)."""
    try:
        return _FACTORIES[name]()
    except KeyError:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(MODES)}") from None


def summary(name: str) -> str:
    return _FACTORIES[name].summary
