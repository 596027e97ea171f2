"""Application settings that survive a restart: one small JSON file in the user's data folder.

What is stored (:class:`AppSettings`): the interface language, the font size, the system
prompt and sampling values that NEW conversations start with (a conversation keeps its own
copy in the history), the most recently used model files, the folder the user browses for
GGUF files, the window's size (in pixels of the 96-dpi design, so that it survives a change
of screen density) and place, its theme (light, dark, or the system's), whether it shows the
chat only, the address models are downloaded from (a mirror
such as hf-mirror.com), whether the first-run model suggestion was shown, and the context
length chosen for each model file (by its file name), and the memory for caches of chats a
local model read earlier.

Where: ``settings.json`` in :func:`tkchat.store.files.data_dir` (next to the conversation
history; ``$TKCHAT_DATA_DIR`` overrides it), see :func:`settings_path`.

Nothing here imports Tk, and every function is pure file I/O, safe on any thread: the app
calls :func:`load_settings` once at start-up and :func:`save_settings` whenever a setting
changes (the file is tiny, so doing either on the Tk thread is fine). Neither raises for a
disk problem: each returns one sentence for the window instead.

- Loading never loses a file silently: a file that cannot be read or parsed is renamed aside
  (``settings.json.damaged-<YYYYmmdd-HHMMSS>``, byte for byte) and the defaults are used; a
  single invalid value falls back to its own default and the warning names it.
- Saving is atomic (a temporary file in the same folder, fsync, ``os.replace``): a crash or a
  full disk leaves the previous file whole, never half-written.
- Compatibility: keys this version does not know are ignored on load and carried over on save,
  so running an older tkchat does not wipe a newer one's settings. A future version must
  therefore only ADD keys; a value whose meaning changes needs a new key.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tkchat.conversation import DEFAULT_SYSTEM_PROMPT, MAX_N_CTX, MIN_N_CTX, Sampling
from tkchat.limits import DEFAULT_KEPT_MB, MAX_KEPT_MB
from tkchat.store.errors import classify, error_detail
from tkchat.store.files import data_dir, move_aside, write_atomically
from tkchat.store.records import is_int
from tkchat.store.sampling_json import sampling_from_settings, settings_from_sampling

SETTINGS_NAME = "settings.json"
# The interface languages (the same as tkchat.i18n.LANGUAGES, which is not imported because it
# pulls in Tk and the widgets; the store layer must stay importable without a display).
LANGUAGES: tuple[str, ...] = ("en", "zh")
# The window's themes (tkchat.ui.look.palette, likewise not imported: it is part of the window).
THEMES: tuple[str, ...] = ("light", "dark")
FONT_SIZE_MIN = 8
FONT_SIZE_MAX = 40
MAX_RECENT_MODELS = 8
MAX_GPU_LAYERS = 10_000  # more than any model has: "all" in all but name
# What `wm geometry` returns: WIDTHxHEIGHT, optionally +X+Y. An offset may itself be negative
# ("+-8+-8" for a maximised window on Windows, or a monitor left of the primary one).
_GEOMETRY = re.compile(r"[1-9][0-9]{0,4}x[1-9][0-9]{0,4}(?:[+-]-?[0-9]{1,5}[+-]-?[0-9]{1,5})?")
_SIZE = re.compile(r"[1-9][0-9]{0,4}x[1-9][0-9]{0,4}")


@dataclass
class AppSettings:
    """Everything tkchat remembers between sessions. ``None`` means "not chosen": follow the
    system (``language``), Tk's default (``font_size``), or nothing remembered yet."""

    language: str | None = None  # one of LANGUAGES, or None to follow the system locale
    font_size: int | None = None  # points, FONT_SIZE_MIN..FONT_SIZE_MAX; None: Tk's default
    system_prompt: str = DEFAULT_SYSTEM_PROMPT  # for NEW conversations
    sampling: Sampling = field(default_factory=Sampling)  # for NEW conversations
    recent_models: list[str] = field(default_factory=list)  # absolute paths, newest first
    model_folder: str | None = None  # where the user looks for GGUF files
    geometry: str | None = None  # Tk geometry in pixels, e.g. "1140x680+10+20" (older tkchats)
    # The window's size in pixels of the 96-dpi design, "1140x680" (tkchat/ui/look/scaling.py):
    # a size in pixels reopened at half size on a 192-dpi screen. Wins over ``geometry``.
    window_size: str | None = None
    theme: str | None = None  # one of THEMES, or None to follow the system's light or dark
    chat_only: bool = False  # the teaching controls folded into one line (View menu)
    hf_endpoint: str | None = None  # where models are downloaded from; None: huggingface.co
    model_hint_shown: bool = False  # the first-run "get a better model" line was shown
    # The context chosen in Settings for a model, by its file name (what the window shows;
    # the same file in another folder is the same model). A model not here gets its trained
    # context, capped (tkchat.generate.llama_backend.auto_n_ctx).
    model_contexts: dict[str, int] = field(default_factory=dict)
    # GPU offload for local models (tkchat.generate.hardware): None automatic (all layers where
    # llama-cpp-python was built with GPU support, else none), 0 the CPU only, -1 all, N layers
    gpu_layers: int | None = None
    # MB of memory for caches of chats a local model read earlier (0: none kept): a chat
    # opened again, or a model switched back to, then reads only what is new
    kept_mb: int = DEFAULT_KEPT_MB


_FIELD_NAMES = tuple(f.name for f in fields(AppSettings))


def settings_path() -> Path:
    """``settings.json`` in :func:`~tkchat.store.files.data_dir` (nothing is created)."""
    return data_dir() / SETTINGS_NAME


# --- loading -----------------------------------------------------------------------------------


def load_settings(path: Path | None = None) -> tuple[AppSettings, str | None]:
    """Read the settings at ``path`` (default: :func:`settings_path`); never raises.

    Returns the settings and ``None``, or the settings and ONE sentence for the window:

    - no file yet (the first start): the defaults, and no warning;
    - a file that cannot be read, is not JSON, or is not a JSON object: the defaults; the file
      is renamed aside byte for byte (or, if even that fails, left as it is) and the warning
      says where it went;
    - a value of the wrong type or out of range: that value's default, the others are kept,
      and the warning names every value that was ignored.

    Keys this version does not know are ignored, so a newer tkchat's file still loads.
    """
    target = settings_path() if path is None else Path(path)
    try:
        return _load(target)
    except Exception as exc:
        # Not expected to happen (every failure above is handled), but a crash here would
        # stop the app from starting at all, which is worse than default settings. The file
        # is not touched: it may be fine, and the problem may be in this code.
        return AppSettings(), (
            f"The settings in {target} could not be loaded ({error_detail(exc)}), "
            "so the default settings are used."
        )


def _load(target: Path) -> tuple[AppSettings, str | None]:
    try:
        raw = target.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        # Nothing to lose: a missing file (or a missing folder) is simply the first start. If
        # the folder cannot be created, save_settings says so when a setting changes.
        return AppSettings(), None
    except OSError as exc:
        return AppSettings(), _set_aside(target, f"could not be read ({error_detail(exc)})")
    try:
        data = json.loads(_text(raw))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError and integers too long to convert; RecursionError
        # is what deeply nested brackets raise. Either way the file is not settings.
        return AppSettings(), _set_aside(target, f"is not valid JSON ({error_detail(exc)})")
    if not isinstance(data, dict):
        return AppSettings(), _set_aside(target, f"holds {_json_kind(data)}, not a JSON object")
    settings, ignored = settings_from_json(data)
    if not ignored:
        return settings, None
    return settings, (
        f"Some settings in {target} were not valid, so their defaults are used: "
        f"{', '.join(ignored)}."
    )


def settings_from_json(data: Mapping[str, Any]) -> tuple[AppSettings, list[str]]:
    """The :class:`AppSettings` in a parsed settings object, and the names of the values that
    were invalid and replaced by their defaults (``"sampling.top_k"`` for one sampling value).
    A missing key takes its default silently (a file from an older version). Pure."""
    defaults = AppSettings()
    chosen: dict[str, Any] = {}
    ignored: list[str] = []
    for name, check in _CHECKS.items():
        if name not in data:
            continue
        value = check(data[name])
        if value is _INVALID:
            ignored.append(name)
        else:
            chosen[name] = value
    if "recent_models" in data:
        models, bad = _recent_models(data["recent_models"])
        chosen["recent_models"] = models
        if bad:
            ignored.append("recent_models")
    if "model_contexts" in data:
        contexts, bad = _model_contexts(data["model_contexts"])
        chosen["model_contexts"] = contexts
        if bad:
            ignored.append("model_contexts")
    if "sampling" in data:
        sampling, bad_keys = _sampling(data["sampling"])
        chosen["sampling"] = sampling
        ignored.extend(bad_keys)
    return replace(defaults, **chosen), ignored


class _Invalid:
    """The type of :data:`_INVALID` (a sentinel: ``None`` is a valid value for most fields)."""


_INVALID = _Invalid()


def _is_path_text(value: object) -> bool:
    """An absolute path as text. A NUL byte would make every later os call raise ValueError,
    and a relative path would change meaning with the working directory."""
    return (
        isinstance(value, str) and bool(value) and "\0" not in value and Path(value).is_absolute()
    )


def _language(value: object) -> object:
    return value if value is None or value in LANGUAGES else _INVALID


def _font_size(value: object) -> object:
    if value is None:
        return None
    if is_int(value) and FONT_SIZE_MIN <= value <= FONT_SIZE_MAX:
        return value
    return _INVALID


def _gpu_layers(value: object) -> object:
    if value is None or (is_int(value) and -1 <= value <= MAX_GPU_LAYERS):
        return value
    return _INVALID


def _kept_mb(value: object) -> object:
    return value if is_int(value) and 0 <= value <= MAX_KEPT_MB else _INVALID


def _theme(value: object) -> object:
    return value if value is None or value in THEMES else _INVALID


def _flag(value: object) -> object:
    return value if isinstance(value, bool) else _INVALID


def _system_prompt(value: object) -> object:
    # An empty prompt is a real choice ("no system prompt"), so only the type is checked.
    return value if isinstance(value, str) else _INVALID


def _model_folder(value: object) -> object:
    return value if value is None or _is_path_text(value) else _INVALID


def _hf_endpoint(value: object) -> object:
    ok = isinstance(value, str) and value.startswith(("http://", "https://")) and len(value) < 300
    return value if value is None or ok else _INVALID


def _geometry(value: object) -> object:
    # fullmatch, not match with "$": "$" would also accept a trailing newline.
    if value is None or (isinstance(value, str) and _GEOMETRY.fullmatch(value)):
        return value
    return _INVALID


def _window_size(value: object) -> object:
    if value is None or (isinstance(value, str) and _SIZE.fullmatch(value)):
        return value
    return _INVALID


# The fields that are either valid as a whole or replaced by their default. recent_models and
# sampling are containers and are checked item by item (see settings_from_json).
_CHECKS: dict[str, Callable[[object], object]] = {
    "language": _language,
    "font_size": _font_size,
    "system_prompt": _system_prompt,
    "model_folder": _model_folder,
    "geometry": _geometry,
    "window_size": _window_size,
    "theme": _theme,
    "chat_only": _flag,
    "hf_endpoint": _hf_endpoint,
    "model_hint_shown": _flag,
    "gpu_layers": _gpu_layers,
    "kept_mb": _kept_mb,
}


def _recent_models(value: object) -> tuple[list[str], bool]:
    """The usable entries (absolute paths, first occurrence kept, at most
    MAX_RECENT_MODELS) and whether anything invalid was dropped. Duplicates and extra entries
    are tidied silently: they carry no information the list would otherwise keep."""
    if not isinstance(value, list):
        return [], True
    good = [item for item in value if _is_path_text(item)]
    return list(dict.fromkeys(good))[:MAX_RECENT_MODELS], len(good) != len(value)


def _model_contexts(value: object) -> tuple[dict[str, int], bool]:
    """The usable entries (a file name and a context in MIN_N_CTX..MAX_N_CTX) and whether
    anything was dropped."""
    if not isinstance(value, dict):
        return {}, True
    good = {
        name: size
        for name, size in value.items()
        if name and is_int(size) and MIN_N_CTX <= size <= MAX_N_CTX
    }
    return good, len(good) != len(value)


def _sampling(value: object) -> tuple[Sampling, list[str]]:
    """The stored sampling dict through the conversations' converter, and the keys it had
    to ignore."""
    if not isinstance(value, dict):
        return Sampling(), ["sampling"]
    sampling = sampling_from_settings(value)
    # sampling_from_settings drops a wrong-typed value silently (right for a conversation,
    # which has no one to tell); here the user should learn which value was ignored. A value
    # it kept compares equal (an int stored for a float field becomes that float); NaN never
    # does, and neither does a bool where a number is wanted.
    kept = settings_from_sampling(sampling)
    bad = [
        f"sampling.{key}"
        for key, stored in value.items()
        if key in kept and (stored != kept[key] or isinstance(stored, bool))
    ]
    return sampling, bad


def _set_aside(path: Path, problem: str) -> str:
    """Rename an unusable settings file aside (never delete or overwrite it); the warning."""
    aside = move_aside(path)
    if aside is None:
        return (
            f"The settings file {path} {problem} and could not be moved aside, so it was "
            "left as it is and the default settings are used."
        )
    return (
        f"The settings file {path} {problem}, so it was kept as {aside} and the default "
        "settings are used."
    )


# --- saving ------------------------------------------------------------------------------------


def save_settings(settings: AppSettings, path: Path | None = None) -> str | None:
    """Write ``settings`` to ``path`` (default: :func:`settings_path`) atomically; never raises
    for a disk problem. Returns ``None``, or ONE sentence for the window when the settings
    could not be saved (a full disk, a folder tkchat may not write, ...): the file saved
    before is then intact.

    The folder is created if needed. Keys in the existing file that this version does not
    know (written by a newer tkchat) are carried over unchanged.
    """
    target = settings_path() if path is None else Path(path)
    try:
        text = (
            json.dumps(
                {**_unknown_keys(target), **settings_to_json(settings)},
                ensure_ascii=False,
                allow_nan=False,
                indent=2,
            )
            + "\n"
        )
    except (TypeError, ValueError) as exc:
        # A programming error (a Path in recent_models, a NaN temperature), not a disk
        # problem; still a sentence rather than a crash in a "setting changed" callback.
        return f"Settings could not be saved: a value is not one JSON can store ({exc})."
    try:
        write_atomically(target, text.encode("utf-8"))
    except OSError as exc:
        # errors.classify sorts OS errors as it does for the conversation history: a full disk
        # (or quota), or anything else that means "this folder cannot be written".
        folder = target.parent
        why = (
            f"the disk holding {folder} is full"
            if classify(exc) == "full"
            else f"tkchat may not write to {folder}"
        )
        return (
            f"Settings could not be saved: {why} ({error_detail(exc)}); "
            "the settings saved earlier are intact."
        )
    return None


def settings_to_json(settings: AppSettings) -> dict[str, Any]:
    """The JSON object :func:`save_settings` writes (sampling as a conversation's settings
    dict). Pure."""
    data = {name: getattr(settings, name) for name in _FIELD_NAMES}
    data["sampling"] = settings_from_sampling(settings.sampling)
    data["recent_models"] = list(settings.recent_models)
    data["model_contexts"] = dict(settings.model_contexts)
    return data


def _unknown_keys(path: Path) -> dict[str, Any]:
    """The keys of the current file this version does not know; empty if there is no valid
    file (best effort: this must never stop a save)."""
    try:
        data = json.loads(_text(path.read_bytes()))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if key not in _FIELD_NAMES}


# --- recent models -----------------------------------------------------------------------------


def remember_model(settings: AppSettings, path: str | Path) -> AppSettings:
    """A copy of ``settings`` with ``path`` (absolute, as text, links kept: a Hugging Face
    snapshot keeps its readable name rather than its blob's hash) first in
    ``recent_models``; an entry naming the same file is removed and the list keeps at most
    :data:`MAX_RECENT_MODELS` entries. ``settings`` itself is not changed. Touches the disk
    only to resolve symlinks."""
    newest = os.path.abspath(os.path.expanduser(path))
    kept: list[str] = [newest]
    seen = {_resolved(newest)}
    for entry in settings.recent_models:
        key = _resolved(entry)  # an entry may name the same file through another symlink
        if key not in seen:
            seen.add(key)
            kept.append(entry)
    return replace(settings, recent_models=kept[:MAX_RECENT_MODELS])


def forget_model(settings: AppSettings, path: str | Path) -> AppSettings:
    """A copy of ``settings`` without ``path`` (or another path to the same file) in
    ``recent_models``: a model that failed to load is not offered as one that works."""
    gone = _resolved(path)
    kept = [entry for entry in settings.recent_models if _resolved(entry) != gone]
    return replace(settings, recent_models=kept)


def _resolved(path: str | Path) -> str:
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError):
        # RuntimeError: a symlink loop (Python < 3.13). The absolute path still identifies it.
        return os.path.abspath(os.path.expanduser(path))


def _json_kind(value: object) -> str:
    """What a parsed JSON value is, in JSON's words (a list is an "array" to the user)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


def _text(raw: bytes) -> str:
    """The file's text. A file hand-edited in Windows Notepad may start with a byte-order mark;
    it is stripped by hand rather than with the "utf-8-sig" codec, which Python imports lazily
    and which is then missing if the interpreter's own files cannot be read (seen after a
    process drops privileges): decoding must not be able to fail that way."""
    return raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")


__all__ = [
    "FONT_SIZE_MAX",
    "FONT_SIZE_MIN",
    "LANGUAGES",
    "MAX_RECENT_MODELS",
    "SETTINGS_NAME",
    "THEMES",
    "AppSettings",
    "load_settings",
    "remember_model",
    "save_settings",
    "settings_from_json",
    "settings_path",
    "settings_to_json",
]
