"""Where other local-model apps keep their GGUF files, so the model picker finds the models
people already downloaded (tkchat/models/finder.py walks them).

Tk-free, plain file-system work. The ``*_folders`` functions are pure: they only build paths
from the environment and the home folder (so a test can point them at a temporary home);
:func:`jan_moved` and the Ollama reader open small JSON files and run where the walk runs,
on a worker thread.

The layouts, as each app documents or writes them:

- **GPT4All** downloads into ``~/.local/share/nomic.ai/GPT4All`` on Linux (under
  ``$XDG_DATA_HOME`` when set), ``~/Library/Application Support/nomic.ai/GPT4All`` on macOS
  and ``%LOCALAPPDATA%\\nomic.ai\\GPT4All`` on Windows; its Python package into
  ``~/.cache/gpt4all``. Plain ``.gguf`` files.
- **Jan** keeps its data folder at ``<data dir>/Jan/data`` (Linux ``~/.local/share``, macOS
  ``~/Library/Application Support``, Windows ``%APPDATA%``), or where its
  ``<data dir>/Jan/settings.json`` says (``data_folder``) after the user moved it; models
  are ``llamacpp/models/<id>/model.gguf`` there since Jan 0.6, ``models/<id>/`` before.
  Older releases used ``~/.config/Jan/data`` (Linux) and ``~/jan``. Every file is called
  ``model.gguf``, so the picker names it by its folder, as Jan does.
- **Ollama** keeps ``manifests/<host>/<namespace>/<model>/<tag>`` (JSON) and ``blobs/
  sha256-<hex>`` under ``$OLLAMA_MODELS``, else ``~/.ollama/models`` (macOS, Windows, and
  Linux when run by the user) or ``/usr/share/ollama/.ollama/models`` (Linux, the system
  service). A manifest's layer of media type ``application/vnd.ollama.image.model`` is the
  GGUF; the picker names it as ``ollama list`` does: ``llama3.2:3b``, the default host
  ``registry.ollama.ai`` and namespace ``library`` left out.
- ``~/models``: where many people (and llama.cpp's own examples) put GGUF files.

Hugging Face's cache and LM Studio's folders are in finder.py, with the picker's order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_HOST, OLLAMA_NAMESPACE = "registry.ollama.ai", "library"
OLLAMA_SERVICE_HOME = Path("/usr/share/ollama/.ollama/models")  # Linux: the system service's
MAX_MANIFEST_BYTES = 1_000_000  # a manifest is a few hundred bytes: anything larger is not one
MAX_SETTINGS_BYTES = 1_000_000


def env_path(value: str | None, home: Path) -> Path | None:
    """An environment variable's folder, with ``~`` meaning ``home`` (None when unset)."""
    if not value:
        return None
    if value == "~" or value.startswith(("~/", "~\\")):
        return home / value[2:]
    return Path(value)


def _data_dirs(environ: Mapping[str, str], home: Path) -> tuple[Path, Path, Path]:
    """The per-user data folders of Linux (XDG), macOS and Windows (roaming)."""
    linux = env_path(environ.get("XDG_DATA_HOME"), home) or home / ".local" / "share"
    mac = home / "Library" / "Application Support"
    windows = env_path(environ.get("APPDATA"), home) or home / "AppData" / "Roaming"
    return linux, mac, windows


def gpt4all_folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """GPT4All's default download folders on Linux, macOS and Windows, and its Python
    package's."""
    linux, mac, _roaming = _data_dirs(environ, home)
    local = env_path(environ.get("LOCALAPPDATA"), home) or home / "AppData" / "Local"
    return [
        linux / "nomic.ai" / "GPT4All",
        mac / "nomic.ai" / "GPT4All",
        local / "nomic.ai" / "GPT4All",
        home / ".cache" / "gpt4all",
    ]


def _jan_moved_data_folder(settings: Path) -> Path | None:
    """The ``data_folder`` Jan's ``settings.json`` names, if it names one (small file read:
    worker thread)."""
    try:
        if settings.stat().st_size > MAX_SETTINGS_BYTES:
            return None
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    folder = data.get("data_folder") if isinstance(data, dict) else None
    if isinstance(folder, str) and folder and "\0" not in folder and Path(folder).is_absolute():
        return Path(folder)
    return None


def jan_moved(environ: Mapping[str, str], home: Path) -> list[Path]:
    """The data folders Jan's settings name, where the user moved it (reads small files:
    the search thread, not the main one)."""
    settings = (base / "Jan" / "settings.json" for base in _data_dirs(environ, home))
    found = (_jan_moved_data_folder(path) for path in settings)
    return [folder for folder in found if folder is not None]


def jan_folders(environ: Mapping[str, str], home: Path, moved: Sequence[Path] = ()) -> list[Path]:
    """Jan's model folders: under the data folders ``moved`` (:func:`jan_moved`), its
    default one on each platform, and the older releases' ``~/.config/Jan/data`` and
    ``~/jan``. Pure."""
    config = env_path(environ.get("XDG_CONFIG_HOME"), home) or home / ".config"
    data = [
        *moved,
        *(base / "Jan" / "data" for base in _data_dirs(environ, home)),
        config / "Jan" / "data",
        home / "jan",
    ]
    return [folder / sub for folder in data for sub in (Path("llamacpp", "models"), Path("models"))]


def ollama_folders(environ: Mapping[str, str], home: Path) -> list[Path]:
    """Ollama's models folders: ``$OLLAMA_MODELS`` if set (then only it: Ollama uses no
    other), else the user's and the Linux service's."""
    chosen = env_path(environ.get("OLLAMA_MODELS"), home)
    if chosen is not None:
        return [chosen]
    return [home / ".ollama" / "models", OLLAMA_SERVICE_HOME]


def home_models(home: Path) -> list[Path]:
    return [home / "models"]


def jan_label(path: Path, root: Path) -> str | None:
    """How Jan names the ``model.gguf`` at ``path`` under its models folder ``root``: the
    model's folder (``unsloth/gemma-3-4b-it-GGUF``). None for another file name."""
    if path.name.lower() != "model.gguf":
        return None
    try:
        folder = path.parent.relative_to(root)
    except ValueError:
        return None
    return folder.as_posix() if folder.parts else None


def stored_label(path: str) -> str | None:
    """The name to show for a model opened by its path (the one used last, ``--model``) whose
    file's own name says nothing: Jan's ``…/models/<id>/model.gguf`` is ``<id>``, as the
    picker names it (it was "model.gguf" in the title after a restart). None otherwise."""
    file = Path(path)
    for parent in file.parents:
        if parent.name == "models":
            return jan_label(file, parent)
    return None


def ollama_name(host: str, namespace: str, model: str, tag: str) -> str:
    """A model's name as ``ollama list`` shows it: ``llama3.2:3b``, ``me/mine:latest``,
    ``hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M``."""
    if host.lower() == OLLAMA_HOST and namespace.lower() == OLLAMA_NAMESPACE:
        return f"{model}:{tag}"
    if host.lower() == OLLAMA_HOST:
        return f"{namespace}/{model}:{tag}"
    return f"{host}/{namespace}/{model}:{tag}"


def _model_blob(manifest: Path, blobs: Path) -> Path | None:
    """The GGUF blob a manifest names (its model layer), if the manifest is one and the
    blob is there. Ollama names blobs ``sha256-<hex>`` (``sha256:<hex>`` before 0.1.x on
    Linux and macOS)."""
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict) or layer.get("mediaType") != OLLAMA_MODEL_LAYER:
            continue
        digest = layer.get("digest")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            return None
        hex_part = digest.removeprefix("sha256:")
        if not hex_part.isalnum():
            return None
        for name in (f"sha256-{hex_part}", f"sha256:{hex_part}"):
            if (blobs / name).is_file():
                return blobs / name
        return None
    return None


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def ollama_models(root: Path) -> Iterator[tuple[str, Path]]:
    """``(name, blob)`` for every model in the Ollama models folder ``root`` whose GGUF blob
    is there, in name order (a blob two tags share comes once per tag). Worker thread."""
    manifests, blobs = root / "manifests", root / "blobs"
    for host in _subfolders(manifests):
        for namespace in _subfolders(host):
            for model in _subfolders(namespace):
                try:
                    tags = sorted(p for p in model.iterdir() if p.is_file())
                except OSError:
                    continue
                for tag in tags:
                    blob = _model_blob(tag, blobs)
                    if blob is not None:
                        yield ollama_name(host.name, namespace.name, model.name, tag.name), blob
