"""Finding the GGUF models already on this computer, for the model picker.

Tk-free and meant for a worker thread: walking a models folder is disk I/O of unknown length
(a network drive, a home folder with a million files), which must never run on the main
thread. Everything here is plain file-system work; nothing is loaded, and of each file only
its header is read (the GGUF magic and counts while walking, the whole header once the walk
is done: tkchat/models/gguf_check.py), besides Ollama's small JSON manifests. What is found
is reported as it is found (``progress``), so a slow disk shows its first rows at once.

The places searched, in order: the bundled model, the recently used files, the folder the user
chose, the Hugging Face cache, LM Studio's, GPT4All's and Jan's models folders, Ollama's store
and ``~/models`` (tkchat/models/stores.py has the other apps' layouts). A file is listed once,
under the first place that found it, even when several paths lead to it (the Hugging Face cache
keeps each file as a hash-named blob and links to it from a readable ``snapshots/<revision>/``
path: the readable path is the one shown). Ollama's and Jan's files have no name of their own
(``sha256-…``, ``model.gguf``): they are listed by the name their app gives them
(``llama3.2:3b``), wherever they were found first.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tkchat.generate.model_file import GGUF_MAGIC, bundled_model_path
from tkchat.models.gguf_check import Problem, extent_problem, header_problem
from tkchat.models.stores import (
    env_path,
    gpt4all_folders,
    home_models,
    jan_folders,
    jan_label,
    jan_moved,
    ollama_folders,
    ollama_models,
)

SOURCES = (
    "bundled",
    "recent",
    "folder",
    "huggingface",
    "lmstudio",
    "gpt4all",
    "jan",
    "ollama",
    "home",
)

# ``name-00002-of-00003.gguf``: llama.cpp opens a split model from its first shard and finds
# the others itself, so only shard 1 is a model the user can pick.
_SHARD_RE = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class FoundModel:
    """One GGUF file: the path to show and to load (never a resolved hash-named blob when a
    readable path to it was found), its size in bytes, where it was found (one of
    :data:`SOURCES`), the name its app gives it, if the file's own is none (an Ollama
    model's ``llama3.2:3b``, a Jan model's folder), why it cannot load (``problem``: a
    header that does not hold, a file cut short; None: none seen) and ``key``, the same for
    every path to the file (its resolved path; "": the path as given)."""

    path: Path
    size: int
    source: str
    label: str | None = None
    problem: Problem | None = None
    key: str = ""

    @property
    def name(self) -> str:
        return self.label or self.path.name

    @property
    def ident(self) -> str:
        """What names this file in a list however it was reached (a row's identity)."""
        return self.key or os.path.normcase(os.path.abspath(self.path))


Progress = Callable[[list[FoundModel]], None]


def describe_size(n: int) -> str:
    """A file size as people read it: ``"812 KB"``, ``"135 MB"``, ``"4.1 GB"`` (decimal
    units, like the sizes model hubs print)."""
    if n < 1000:
        return f"{n} B"
    if round(n / 1e3) < 1000:
        return f"{round(n / 1e3)} KB"
    if round(n / 1e6) < 1000:
        return f"{round(n / 1e6)} MB"
    if round(n / 1e9, 1) < 1000:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e12:.1f} TB"


def huggingface_cache(environ: Mapping[str, str], home: Path) -> Path:
    """Where ``huggingface_hub`` keeps downloads, by its own rules: ``$HF_HUB_CACHE`` (or its
    old name ``$HUGGINGFACE_HUB_CACHE``), else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (on every
    platform, Windows and macOS included)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        found = env_path(environ.get(name), home)
        if found is not None:
            return found
    hf_home = env_path(environ.get("HF_HOME"), home)
    if hf_home is not None:
        return hf_home / "hub"
    cache = env_path(environ.get("XDG_CACHE_HOME"), home) or home / ".cache"
    return cache / "huggingface" / "hub"


def lmstudio_folders(home: Path) -> list[Path]:
    """LM Studio's models folders: ``~/.lmstudio/models`` (LM Studio 0.3 and later) and
    ``~/.cache/lm-studio/models`` (earlier versions). LM Studio uses the same two folders
    under the user's home on Linux, macOS and Windows."""
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def model_places(
    *,
    folder: str | Path | None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    moved: Sequence[Path] = (),
) -> list[tuple[str, Path]]:
    """The folders :func:`find_models` searches, in order, as ``(source, folder)`` pairs (the
    bundled model and the recent files come before them; an ``ollama`` folder's manifests
    are read, the others are walked). ``moved``: Jan's data folders where the user moved
    them (read by the search). Cheap: nothing is read from disk, so it may run on any
    thread."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    places: list[tuple[str, Path]] = []
    if folder:
        places.append(("folder", Path(folder).expanduser()))
    places.append(("huggingface", huggingface_cache(environ, home)))
    places.extend(("lmstudio", place) for place in lmstudio_folders(home))
    places.extend(("gpt4all", place) for place in gpt4all_folders(environ, home))
    places.extend(("jan", place) for place in jan_folders(environ, home, moved))
    places.extend(("ollama", place) for place in ollama_folders(environ, home))
    places.extend(("home", place) for place in home_models(home))
    seen: set[str] = set()
    unique: list[tuple[str, Path]] = []
    for source, place in places:
        key = os.path.normcase(os.path.abspath(place))
        if key not in seen:
            seen.add(key)
            unique.append((source, place))
    return unique


def is_model_name(name: str) -> bool:
    """Whether a file name looks like a model the user can load: ``*.gguf`` (any case), not a
    multimodal projector (``mmproj-…``) and not the second or later shard of a split model."""
    lower = name.lower()
    if not lower.endswith(".gguf") or "mmproj" in lower:
        return False
    shard = _SHARD_RE.search(lower)
    return shard is None or int(shard.group(1)) == 1


def _has_magic(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


class _Search:
    """The state of one :func:`find_models` call (worker thread)."""

    def __init__(
        self, limit: int, cancel: threading.Event | None, progress: Progress | None = None
    ) -> None:
        self.limit = limit
        self.cancel = cancel
        self.progress = progress
        self.found: list[FoundModel] = []
        self.by_key: dict[str, int] = {}  # resolved path -> index in ``found``
        self.changed: set[int] = set()  # indexes in ``found`` not reported yet

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def stopped(self) -> bool:
        return len(self.found) >= self.limit or self.cancelled()

    def report(self) -> None:
        """Hand what is new or changed since the last report to ``progress``."""
        if self.progress is not None and self.changed:
            batch = [self.found[index] for index in sorted(self.changed)]
            self.changed.clear()
            self.progress(batch)

    def check_all(self) -> None:
        """The whole-header check of every file listed without a problem yet, in list
        order, each reported as soon as it is found wanting (the walk is done: the rows
        are on screen meanwhile)."""
        for index, model in enumerate(self.found):
            if self.cancelled():
                return
            if model.problem is None:
                problem = extent_problem(str(model.path))
                if problem is not None:
                    self.found[index] = replace(model, problem=problem)
                    self.changed.add(index)
                    self.report()

    def add(self, path: str, source: str, label: str | None = None) -> None:
        """List ``path`` if it is a readable GGUF file not listed yet (as ``label``, if its
        app names it)."""
        try:
            key = os.path.normcase(os.path.realpath(path))
        except (OSError, ValueError):
            return
        index = self.by_key.get(key)
        if index is not None:
            self._seen_again(index, path, label)
            return
        try:
            if not os.path.isfile(path):
                return
            size = os.stat(path).st_size
        except (OSError, ValueError):
            return
        if not _has_magic(path):
            return
        self.by_key[key] = len(self.found)
        self.changed.add(len(self.found))
        problem = header_problem(path, size)
        self.found.append(FoundModel(Path(path), size, source, label, problem, key))

    def _seen_again(self, index: int, path: str, label: str | None) -> None:
        """A file listed already (a link and its target, or the same file in two places): a
        readable name beats a hash-named blob (a recent file stored by its resolved path),
        and the name an app gives it comes along (an Ollama blob that was a recent file)."""
        known = self.found[index]
        if not known.path.name.lower().endswith(".gguf") and is_model_name(os.path.basename(path)):
            known = replace(known, path=Path(path))
        if known.label is None and label is not None:
            known = replace(known, label=label)
        if known != self.found[index]:
            self.found[index] = known
            self.changed.add(index)

    def ollama(self, root: Path) -> None:
        """List the models of the Ollama store at ``root`` by their Ollama names."""
        for name, blob in ollama_models(root):
            if self.stopped():
                return
            self.add(str(blob), "ollama", name)

    def walk(self, top: Path, source: str, max_depth: int) -> None:
        """List the models under ``top``, down to ``max_depth`` folders below it. Folder links
        are followed, each real folder at most once (so a link loop ends); hidden folders
        (``.git``, the Hugging Face cache's ``.locks``) and unreadable ones are skipped. Jan's
        ``model.gguf`` files are named by their folder."""
        visited: set[tuple[int, int]] = set()
        stack: list[tuple[str, int]] = [(os.path.abspath(top), 0)]
        while stack and not self.stopped():
            directory, depth = stack.pop()
            try:
                info = os.stat(directory)
            except (OSError, ValueError):
                continue  # missing, unreadable, or a link loop (ELOOP)
            if (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            subfolders: list[str] = []
            for entry in _entries(directory):
                if self.stopped():
                    return
                try:
                    if entry.is_dir():  # follows links; the visited set stops loops
                        if depth < max_depth and not entry.name.startswith("."):
                            subfolders.append(entry.path)
                        continue
                except OSError:
                    continue
                if is_model_name(entry.name):
                    label = jan_label(Path(entry.path), top) if source == "jan" else None
                    self.add(entry.path, source, label)
            self.report()  # each folder's finds at once: a slow disk shows rows as it goes
            # Depth first, in name order: the first folder is walked first.
            stack.extend((sub, depth + 1) for sub in reversed(subfolders))


def _entries(directory: str) -> Iterator[os.DirEntry[str]]:
    """The entries of ``directory`` sorted by name; none when it cannot be read."""
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except (OSError, ValueError):
        return iter(())
    return iter(sorted(entries, key=lambda entry: entry.name))


def find_models(
    *,
    folder: str | Path | None,
    recent: Sequence[str],
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    max_depth: int = 6,
    limit: int = 500,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> list[FoundModel]:
    """Every GGUF model in the usual places: the bundled model, the files in ``recent`` that
    still exist, then ``folder`` (walked recursively), the Hugging Face cache, LM Studio's,
    GPT4All's and Jan's folders, Ollama's store and ``~/models`` (see :func:`model_places`;
    ``environ`` and ``home`` default to the real ones).

    Worker thread: this walks folders and opens files. A file is listed when its name ends in
    ``.gguf`` (any case) and it starts with the GGUF magic; projector files (``mmproj``) and the
    later shards of split models are left out. The bundled model and the recent files are
    listed whatever their names (the user loaded them), as long as they are GGUF. Each file
    appears once, under its first path found. At most ``limit`` models are returned, folders
    deeper than ``max_depth`` below a place are not walked, unreadable folders are skipped
    without a word, and setting ``cancel`` ends the search early with what was found so far.
    Each file's header is checked (:mod:`tkchat.models.gguf_check`): one that cannot load
    is listed with its ``problem``.

    ``progress`` (called on this thread) gets the models as they are found, in the order
    found, and again whenever one changes (a readable name found for it, a problem found in
    it); the list returned at the end holds them all.

    The order returned: the bundled model, the recent files in the order given, then the
    rest by name.
    """
    search = _Search(limit, cancel, progress)
    bundled = bundled_model_path()
    if bundled is not None and not search.stopped():
        search.add(os.path.abspath(bundled), "bundled")
    for item in recent:
        if search.stopped():
            break
        if item:
            search.add(os.path.abspath(os.path.expanduser(item)), "recent")
    search.report()
    first_walked = len(search.found)
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    moved = jan_moved(environ, home)
    for source, place in model_places(folder=folder, environ=environ, home=home, moved=moved):
        if search.stopped():
            break
        if source == "ollama":
            search.ollama(place)
        else:
            search.walk(place, source, max_depth)
        search.report()
    search.check_all()
    head, rest = search.found[:first_walked], search.found[first_walked:]
    rest.sort(key=lambda model: (model.name.casefold(), str(model.path)))
    return head + rest
