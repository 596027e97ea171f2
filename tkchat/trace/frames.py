"""One Python frame, as the sampler keeps it: where it is, and whose code it is.

A frame's *role* says which part of the program it belongs to, read from its file once per
code object: the pipeline under study (``tkchat/antipatterns/``, ``tkchat/ui/pipeline.py``, a
pipeline file of one's own), the generation stage (``tkchat/generate/``, llama-cpp-python),
the rest of tkchat, Tkinter, or anything else. Tkinter's few frames that matter are known by
name, not by importing tkinter (this package is Tk-free): ``CallWrapper.__call__`` is where
Tk calls into Python (every ``after`` timer and event binding), and ``mainloop``, ``update``
and friends are where Python hands the thread to Tcl's event loop.

Any thread: the sampler thread builds these, the main thread reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType

PIPELINE = "pipeline"  # the code a lesson is about: how an answer reaches the screen
MODEL = "model"  # the generation stage: the backends, llama-cpp-python
PROJECT = "project"  # the rest of tkchat
TK = "tk"  # Tkinter: each call into it runs Tcl/Tk (the GIL released)
OTHER = "other"  # the standard library, other packages

CALL_WRAPPER = "CallWrapper.__call__"  # Tk -> Python: a timer or a binding starts here
# Python -> Tk's event loop: while one of these is the innermost frame, Tcl runs the loop
# (its own work — redisplay, layout, geometry — or waiting for the next event).
LOOP_FUNCTIONS = frozenset(
    {
        "Misc.mainloop",
        "Misc.update",
        "Misc.update_idletasks",
        "Misc.wait_window",
        "Misc.wait_variable",
        "Misc.wait_visibility",
    }
)
MAX_DEPTH = 80  # frames kept per stack, innermost first (a deep recursion is cut, not copied)

_TKCHAT = Path(__file__).resolve().parent.parent
# The fixed pipeline (``tkchat/ui/pipeline.py``) is tkchat's own code like the rest: in a
# flood, what still costs time is named inside it (``Transcript.append``), not the one-line
# method that calls it.
_PIPELINE_DIRS = (_TKCHAT / "antipatterns",)
_MODEL_DIRS = (_TKCHAT / "generate",)


@dataclass(frozen=True, slots=True)
class FrameRef:
    """One frame of a sampled stack."""

    file: str
    line: int
    function: str  # the qualified name: "GenerateInClickHandler.start"
    role: str

    @property
    def where(self) -> str:
        """``tkchat/antipatterns/blocking.py:37:GenerateInClickHandler.start``"""
        return f"{short_path(self.file)}:{self.line}:{self.function}"

    def as_json(self) -> dict[str, object]:
        return {"file": short_path(self.file), "line": self.line, "function": self.function}


def short_path(file: str) -> str:
    """A path a reader recognises: from ``tkchat/`` or a package's folder on, else as is."""
    parts = Path(file).parts
    for anchor in ("tkchat", "llama_cpp", "tkinter", "tkhtmlview"):
        if anchor in parts:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[index:])
    return file


class FrameBook:
    """Turns live frames into :class:`FrameRef` values, each (code, line) made once.

    ``pipeline_files``: more files whose code is "the pipeline" (a student's pipeline file),
    added any time with :meth:`add_pipeline_file`. Used by one thread (the sampler's)."""

    def __init__(self, pipeline_files: Iterable[str] = ()) -> None:
        self._roles: dict[CodeType, tuple[str, str]] = {}  # code -> (role, qualified name)
        self._refs: dict[tuple[CodeType, int], FrameRef] = {}
        self._pipeline_files = {os.path.realpath(path) for path in pipeline_files}

    def add_pipeline_file(self, path: str) -> None:
        real = os.path.realpath(path)
        if real not in self._pipeline_files:
            self._pipeline_files.add(real)
            self._roles.clear()  # the roles of that file's code change
            self._refs.clear()

    def role_of(self, code: CodeType) -> tuple[str, str]:
        known = self._roles.get(code)
        if known is None:
            name = getattr(code, "co_qualname", code.co_name)
            known = self._roles[code] = (self._role_of_file(code.co_filename), name)
        return known

    def _role_of_file(self, file: str) -> str:
        if file.startswith("<"):
            return OTHER
        path = Path(os.path.realpath(file))
        if str(path) in self._pipeline_files:
            return PIPELINE
        if any(path.is_relative_to(folder) for folder in _PIPELINE_DIRS):
            return PIPELINE
        if any(path.is_relative_to(folder) for folder in _MODEL_DIRS) or "llama_cpp" in path.parts:
            return MODEL
        if path.is_relative_to(_TKCHAT):
            return PROJECT
        if path.parent.name == "tkinter":
            return TK
        return OTHER

    def stack(self, frame: FrameType | None) -> tuple[FrameRef, ...]:
        """``frame`` and its callers, outermost first (at most :data:`MAX_DEPTH`).

        The chain is read whole first, with nothing in the loop that lets the GIL go; only
        then are the frames named, which may look up a file's real path (system calls, which
        let the GIL go). Let go in the middle of the walk, the GIL let the sampled thread run
        on and return from the frames still to be read — and CPython 3.11 can crash in
        ``f_back`` of such a frame (seen once in the suite: a segmentation fault in this loop
        while the main thread was in a Tcl call; python/cpython#99110 and its followers)."""
        chain: list[tuple[CodeType, int]] = []
        while frame is not None and len(chain) < MAX_DEPTH:
            chain.append((frame.f_code, frame.f_lineno or 0))
            frame = frame.f_back
        refs: list[FrameRef] = []
        for code, line in reversed(chain):
            ref = self._refs.get((code, line))
            if ref is None:
                role, name = self.role_of(code)
                ref = self._refs[(code, line)] = FrameRef(code.co_filename, line, name, role)
            refs.append(ref)
        return tuple(refs)


def callback_index(stack: tuple[FrameRef, ...]) -> int:
    """Where the code Tk called begins in ``stack`` (just inside the outermost
    ``CallWrapper.__call__``), or -1 when Tk called nothing (the loop, or code run outside
    it: a test, a benchmark's raw run)."""
    for index, ref in enumerate(stack):
        if ref.role == TK and ref.function == CALL_WRAPPER:
            return index + 1 if index + 1 < len(stack) else -1
    return -1


def callback_name(stack: tuple[FrameRef, ...]) -> str | None:
    """The function Tk called, named as a reader knows it: the first frame inside the
    wrapper that is neither Tkinter's nor a closure that only passes the call on (the
    scheduler's ``fire``, Tkinter's ``callit``, a focus-keeping wrapper)."""
    start = callback_index(stack)
    if start < 0:
        return None
    inside = [ref for ref in stack[start:] if ref.role != TK]
    named = next((ref for ref in inside if "<locals>" not in ref.function), None)
    chosen = named or (inside[0] if inside else None)
    return chosen.function if chosen is not None else None


def in_loop(stack: tuple[FrameRef, ...]) -> bool:
    """The innermost frame hands the thread to Tcl's event loop (mainloop, update...)."""
    return bool(stack) and stack[-1].role == TK and stack[-1].function in LOOP_FUNCTIONS


def between_callbacks(stack: tuple[FrameRef, ...]) -> bool:
    """Tk's loop runs on its own, no code of the app holding it: Tcl's loop innermost, no
    callback of Tk's outside it, and called from ``mainloop`` or from outside tkchat (a
    test's ``update()``). An ``update_idletasks()`` that tkchat's own code calls, even
    outside a callback, is that code forcing a redraw."""
    if not in_loop(stack) or callback_index(stack) >= 0:
        return False
    caller = stack[-2] if len(stack) > 1 else None
    own_code = caller is not None and caller.role in (PIPELINE, PROJECT, MODEL)
    return stack[-1].function == "Misc.mainloop" or not own_code


def blame_of(stack: tuple[FrameRef, ...]) -> FrameRef | None:
    """The frame held responsible for the time ``stack`` stands for: inside the callback Tk
    called, the innermost frame of the pipeline under study (a broken mode, a pipeline of
    one's own) — the function its lesson is about —, else tkchat's innermost frame (what still
    costs time in the fixed pipeline), else the callback itself; None for an empty stack."""
    start = max(callback_index(stack), 0)
    inside = stack[start:]
    for roles in ((PIPELINE,), (PROJECT, MODEL)):
        found = next((ref for ref in reversed(inside) if ref.role in roles), None)
        if found is not None:
            return found
    named = next((ref for ref in inside if ref.role != TK), None)
    return named or (inside[-1] if inside else None)
