"""What this installation of tkchat holds: its data files, and which optional extras it has.

**Data files.** The course (the lessons in ``en/`` and ``zh/``, the class plans, the
exercises, the figures the lessons quote) and the browser client (``serve/static/``) are
package data, found through :mod:`importlib.resources`, so a wheel installed anywhere has
them as a clone has. The course lives at the top of the repository, in ``lessons/``, where
people look for it; the build maps that folder into the package as ``tkchat.lessons``
(``setup.py``), so it is never copied. Running from a source tree (a clone, installed
editable or only on ``PYTHONPATH``), the course is that tree's own ``lessons/``, the folder
an editable install maps too: a worktree on ``PYTHONPATH`` must read its own lessons, not
those of whichever checkout was installed.

**Extras.** ``serve`` (Starlette, uvicorn), ``report`` (matplotlib) and ``qt`` (PySide6) are
optional; a command that needs a missing one says so in one sentence that names the
``pip install`` that adds it (:func:`extra_missing`), instead of a traceback.

Plain functions, any thread: they only look at files and import specs.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

DISTRIBUTION = "tkchat"
COURSE_PACKAGE = "tkchat.lessons"  # lessons/ of the repository, installed into the package
# Each optional extra and the modules it brings (pyproject.toml's optional-dependencies).
EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("starlette", "uvicorn"),
    "report": ("matplotlib",),
    "qt": ("PySide6",),
}


def _on_disk(found: Traversable, what: str) -> Path:
    """``found`` as a real folder: Tk, Starlette and ``ast`` read files by path. A wheel is
    always installed as files; only a zipped import would not be."""
    if isinstance(found, Path) and found.is_dir():
        return found
    raise FileNotFoundError(
        f"{what} is not a folder on disk ({found}): install tkchat with pip, not as a zip"
    )


def package_root() -> Path:
    """The ``tkchat`` package's own folder (``…/site-packages/tkchat``, or a clone's)."""
    return _on_disk(importlib.resources.files("tkchat"), "the tkchat package")


def source_root() -> Path:
    """The folder a quoted path such as ``tkchat/ui/pump.py`` is relative to: the one that
    holds the package (a clone's top, or ``site-packages``)."""
    return package_root().parent


def source_tree() -> Path | None:
    """The repository's top folder when tkchat runs from its source tree (a clone, installed
    editable or only on ``PYTHONPATH``: the tree has its ``pyproject.toml`` and ``lessons/``;
    ``site-packages`` has neither), else None."""
    top = source_root()
    if (top / "pyproject.toml").is_file() and (top / "lessons").is_dir():
        return top
    return None


def course_root() -> Path:
    """The course's folder: ``en/``, ``zh/``, ``plan.<lang>.md``, ``exercises/`` and
    ``figures.json``. A clear :class:`FileNotFoundError` when this tkchat has none."""
    tree = source_tree()
    if tree is not None:
        return tree / "lessons"
    try:
        found = importlib.resources.files(COURSE_PACKAGE)
    except ModuleNotFoundError:
        raise FileNotFoundError(
            "the course's files (tkchat.lessons) are missing from this installation of "
            "tkchat: reinstall it from its wheel, or run pip install -e . in a clone"
        ) from None
    return _on_disk(found, "the course")


def static_root() -> Path:
    """The browser client's folder (``tkchat/serve/static``): what ``tkchat serve`` serves."""
    return package_root() / "serve" / "static"


def install_hint(extra: str) -> str:
    """The command that adds ``extra``: from a clone, ``pip install -e '.[serve]'`` (in its
    folder: the README's install); an installed wheel, ``pip install 'tkchat[serve]'``, which
    keeps that install and adds only the extra's packages."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; choose one of {', '.join(EXTRAS)}")
    if importlib.util.find_spec("llama_cpp") is None:
        # Installing tkchat's extra would pull llama-cpp-python back in (a compile of
        # minutes, the one that may have failed): name the extra's own packages instead.
        return "pip install " + " ".join(_extra_requirements(extra))
    if source_tree() is not None:
        return f"pip install -e '.[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _extra_requirements(extra: str) -> list[str]:
    """The packages ``extra`` adds, as this installation's metadata declares them (their
    version bounds dropped), quoted for a shell; its module names where there is none."""
    import importlib.metadata
    import re

    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    names = []
    for requirement in declared:
        if f'extra == "{extra}"' in requirement:
            name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
            if name not in names:
                names.append(name)
    return names or list(EXTRAS[extra])


def extra_missing(what: str, extra: str) -> str | None:
    """None when ``extra``'s modules can be imported; else one sentence: ``what`` ("tkchat
    serve", "the Qt client") needs them, and the ``pip install`` that adds them."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return (
        f"{what} needs {' and '.join(missing)} (the {extra} extra), which {verb} not "
        f"installed: {install_hint(extra)}"
    )
