"""The names of every way tkchat can move an answer to the screen (``--mode``, the mode menu).

``fixed`` is tkchat's pipeline, and ``asyncio-thread`` and ``asyncio-tk`` move an answer with
asyncio, correctly (``tkchat/aio/``); the others are the deliberately broken demos in
``tkchat/antipatterns/``. Only names live here, with no import at all: ``tkchat --help`` and
``tkchat serve`` need them on machines without Tk, while every pipeline draws with Tk. The
classes behind the names are named in :data:`PIPELINES` (by import path, so this module
imports nothing) and made by :func:`tkchat.ui.window.pipeline_choice.make_pipeline`.

A mode may also name a pipeline written outside tkchat — a student's, for the exercises in
``lessons/exercises/`` — as ``path/to/file.py:ClassName``. Here it is only recognised by its
shape; :mod:`tkchat.ui.teaching.outside` loads it (and says clearly what is wrong with
it, if anything).
"""

from __future__ import annotations

FIXED = "fixed"
ASYNCIO_THREAD = "asyncio-thread"  # the asyncio way tkchat recommends: a loop on its own thread
ASYNCIO_TK = "asyncio-tk"
# The one registry of modes: each name and the class that moves an answer in that mode, by
# import path. A broken demo is imported only when a window uses it, so nothing outside
# ``tkchat/antipatterns/`` imports those modules by name; tests/test_architecture.py reads
# this table and checks these imports like any other.
PIPELINES: dict[str, str] = {
    FIXED: "tkchat.ui.pipeline:FixedPipeline",
    ASYNCIO_THREAD: "tkchat.aio.thread_loop:AsyncioThreadPipeline",
    ASYNCIO_TK: "tkchat.aio.tk_loop:AsyncioTkPipeline",
    "blocking": "tkchat.antipatterns.blocking:GenerateInClickHandler",
    "main-thread-reader": "tkchat.antipatterns.main_thread_reader:ReadStreamOnMainThread",
    "per-chunk-render": "tkchat.antipatterns.per_chunk_render:RenderEveryChunk",
    "no-coalesce": "tkchat.antipatterns.no_coalesce:InsertEveryToken",
    "asyncio-run": "tkchat.antipatterns.asyncio_run:AwaitInSendHandler",
    "asyncio-render": "tkchat.antipatterns.asyncio_render:RenderInTheCoroutine",
    "asyncio-blocking-call": "tkchat.antipatterns.asyncio_blocking_call:CallTheModelInACoroutine",
    "asyncio-slow-poll": "tkchat.antipatterns.asyncio_slow_poll:PollTheLoopSlowly",
}
MODES: tuple[str, ...] = tuple(PIPELINES)
# The modes that keep the window smooth; every other one freezes it, on purpose.
CORRECT_MODES: tuple[str, ...] = (FIXED, ASYNCIO_THREAD, ASYNCIO_TK)
BROKEN_MODES: tuple[str, ...] = tuple(name for name in MODES if name not in CORRECT_MODES)
OUTSIDE_FORM = "FILE.py:CLASS"  # how --help names the shape of an outside pipeline


def split_outside_mode(name: str) -> tuple[str, str] | None:
    """``("path/to/file.py", "ClassName")`` for an outside pipeline's mode, else None. The
    last colon splits, so a Windows path (``C:\\work\\mine.py:Pipeline``) works too."""
    path, colon, class_name = name.rpartition(":")
    if not colon or not path.endswith(".py") or not class_name.isidentifier():
        return None
    return path, class_name


def is_outside_mode(name: str) -> bool:
    return split_outside_mode(name) is not None


def check_mode(name: str) -> None:
    """Raise ValueError for a name that is neither a mode nor ``FILE.py:CLASS``."""
    if name not in MODES and not is_outside_mode(name):
        raise ValueError(
            f"unknown mode {name!r}; choose one of {', '.join(MODES)}, "
            f"or a pipeline of your own as {OUTSIDE_FORM}"
        )
