"""The catalogue of models tkchat offers to download, and what this machine makes of them.

Tk-free and cheap: reading the small JSON file, ``/proc/meminfo`` and a few paths in the
Hugging Face cache. Nothing here touches the network or imports ``huggingface_hub`` (whose
import costs a tenth of a second or more: too long for the Tk main thread, which calls this
when the dialog opens).

The data lives in ``catalogue.json`` next to this module; ``$TKCHAT_CATALOGUE`` (or the
command line's ``--catalogue``) names another file of the same shape, e.g. a school's own
list on its own mirror.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tkchat.generate.llama_backend import MAX_AUTO_N_CTX
from tkchat.limits import cut
from tkchat.models.finder import huggingface_cache

CATALOGUE_ENV = "TKCHAT_CATALOGUE"
DEFAULT_CATALOGUE = Path(__file__).with_name("catalogue.json")
DEFAULT_ENDPOINT = "https://huggingface.co"
# A public mirror of the hub that users in mainland China can usually reach quickly.
CHINA_MIRROR = "https://hf-mirror.com"
ENDPOINTS = (DEFAULT_ENDPOINT, CHINA_MIRROR)

SHA256_RE = re.compile(r"[0-9a-f]{64}")
# llama.cpp's working memory besides the weights and the KV cache: the logits of one batch of
# 512 tokens (n_vocab floats each) dominate it, plus a fixed part for the runtime itself.
BATCH_TOKENS = 512
RUNTIME_BYTES = 100_000_000


MAX_TEXT_CHARS = 500  # a catalogue's title, name, licence...: they are shown in a dialog


class CatalogueError(ValueError):
    """The catalogue file is missing or malformed (one sentence, naming the file)."""


@dataclass(frozen=True)
class Architecture:
    """What the memory estimate needs to know about a model (from its config.json)."""

    layers: int
    kv_heads: int
    head_dim: int
    vocab: int


@dataclass(frozen=True)
class CatalogueEntry:
    """One downloadable GGUF file. ``size`` and ``sha256`` may be None: then the hub's own
    figures are used at download time (see catalogue.json's "about")."""

    name: str
    title: str
    repo: str
    file: str
    revision: str
    size: int | None
    sha256: str | None
    licence: str
    languages: tuple[str, ...]
    architecture: Architecture | None
    about: Mapping[str, str]  # language -> one line

    def describe(self, lang: str) -> str:
        return self.about.get(lang) or self.about.get("en", "")


def catalogue_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    value = environ.get(CATALOGUE_ENV)
    return Path(value).expanduser() if value else DEFAULT_CATALOGUE


def load_catalogue(path: Path | None = None) -> list[CatalogueEntry]:
    """The entries of the catalogue at ``path`` (default: :func:`catalogue_path`). Raises
    :class:`CatalogueError` with one sentence when the file cannot be used."""
    path = catalogue_path() if path is None else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogueError(f"Cannot read the model catalogue {path}: {exc.strerror}") from exc
    except (ValueError, RecursionError) as exc:  # (RecursionError: nested thousands deep)
        raise CatalogueError(
            f"The model catalogue {path} is not valid JSON: {cut(str(exc), 120)}"
        ) from exc
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not models:
        raise CatalogueError(f'The model catalogue {path} has no "models" list.')
    entries = [_entry(item, path, index) for index, item in enumerate(models)]
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        raise CatalogueError(f"The model catalogue {path} names a model twice.")
    return entries


def _entry(item: Any, path: Path, index: int) -> CatalogueEntry:
    where = f"model {index + 1} of the catalogue {path}"
    if not isinstance(item, dict):
        raise CatalogueError(f"The {where} is not an object.")

    def text(key: str, default: str | None = None) -> str:
        value = item.get(key, default)
        if not isinstance(value, str) or not value or len(value) > MAX_TEXT_CHARS:
            raise CatalogueError(
                f'The {where} needs a text "{key}" (of at most {MAX_TEXT_CHARS} characters).'
            )
        return value

    size = item.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise CatalogueError(f'The {where} has a "size" that is not a number of bytes.')
    sha = item.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not SHA256_RE.fullmatch(sha)):
        raise CatalogueError(f'The {where} has a "sha256" that is not 64 hex digits.')
    repo, file = text("repo"), text("file")
    if repo.count("/") != 1 or "/" in file or "\\" in file or file.startswith("."):
        raise CatalogueError(f'The {where} needs "repo" as owner/name and a plain "file".')
    languages = item.get("languages", [])
    arch = item.get("architecture")
    architecture = None
    if isinstance(arch, dict):
        try:
            architecture = Architecture(**{k: int(arch[k]) for k in Architecture.__annotations__})
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # (1e400)
            raise CatalogueError(f'The {where} has an incomplete "architecture".') from exc
    return CatalogueEntry(
        name=text("name"),
        title=text("title", item.get("name")),
        repo=repo,
        file=file,
        revision=text("revision", "main"),
        size=size,
        sha256=sha,
        licence=text("licence", "unknown"),
        languages=tuple(str(lang)[:16] for lang in languages[:32])
        if isinstance(languages, list)
        else (),
        architecture=architecture,
        about={
            lang: str(item[f"about_{lang}"]) for lang in ("en", "zh") if item.get(f"about_{lang}")
        },
    )


def chosen_endpoint(remembered: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Where to download from unless told otherwise: the address chosen last time in the
    dialog, else ``$HF_ENDPOINT`` (huggingface_hub's own variable), else huggingface.co."""
    environ = os.environ if environ is None else environ
    for value in (remembered, environ.get("HF_ENDPOINT")):
        if value and normalize_endpoint(value) is not None:
            return normalize_endpoint(value) or DEFAULT_ENDPOINT
    return DEFAULT_ENDPOINT


def normalize_endpoint(text: str) -> str | None:
    """The hub address the user typed, tidied ("hf-mirror.com/" -> "https://hf-mirror.com"),
    or None when it cannot be one: a blank means the default hub."""
    value = text.strip().rstrip("/")
    if not value:
        return DEFAULT_ENDPOINT
    if "://" not in value:
        value = "https://" + value
    if value.count("://") != 1:
        return None
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.netloc.endswith(":")
        or parts.query
        or parts.fragment
        or any(c.isspace() for c in value)
    ):
        return None
    return value


def find_entry(entries: list[CatalogueEntry], name: str) -> CatalogueEntry | None:
    """The entry called ``name`` (any case), or whose file name is ``name``."""
    wanted = name.casefold()
    for entry in entries:
        if wanted in (entry.name.casefold(), entry.file.casefold()):
            return entry
    return None


# -- memory ---------------------------------------------------------------------------------------


def memory_needed(entry: CatalogueEntry, n_ctx: int = MAX_AUTO_N_CTX) -> int | None:
    """An estimate of the memory (bytes) llama.cpp needs to run ``entry`` with tkchat's
    context: the weights (the file, memory-mapped), the KV cache (keys and values, f16, for
    every layer and every position of the context) and the working buffers (the logits of a
    512-token batch, plus a fixed part). None when the size or the architecture is unknown.

    A deliberately cautious figure. Checked against the bundled model (30 layers, 3 KV heads
    of 64, a 49,152-token vocabulary): 98 MB file + 94 MB KV cache + 201 MB of buffers =
    393 MB estimated; measured, the process grew by 207 MB after loading and a short answer
    and by 288 MB after a 3,000-token prompt."""
    arch = entry.architecture
    if entry.size is None or arch is None:
        return None
    kv_cache = 2 * arch.layers * arch.kv_heads * arch.head_dim * n_ctx * 2
    buffers = BATCH_TOKENS * arch.vocab * 4 + RUNTIME_BYTES
    return entry.size + kv_cache + buffers


def memory_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Bytes of memory this machine can give a new program now: Linux's MemAvailable (free
    plus what the kernel can reclaim). Elsewhere a best effort: the free physical pages, or
    None when even that is unknown (then nothing is marked as too big)."""
    try:
        for line in meminfo.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def fits(entry: CatalogueEntry, available: int | None) -> bool:
    """Whether ``entry`` would fit in ``available`` bytes (True when either is unknown)."""
    needed = memory_needed(entry)
    return needed is None or available is None or needed <= available


# -- the Hugging Face cache, read locally ----------------------------------------------------------


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where downloads go: the standard Hugging Face cache, by huggingface_hub's own rules."""
    return huggingface_cache(os.environ if environ is None else environ, Path.home())


def repo_folder(entry: CatalogueEntry, cache: Path) -> Path:
    """``models--owner--name``: huggingface_hub's folder for a model repository."""
    return cache / ("models--" + entry.repo.replace("/", "--"))


def downloaded_path(entry: CatalogueEntry, cache: Path) -> Path | None:
    """The readable path of ``entry``'s file if a finished download is in the cache (the
    snapshot of the revision the catalogue names, else of any revision), else None. A few
    ``stat`` calls: fine on any thread."""
    folder = repo_folder(entry, cache)
    commits: list[str] = []
    with suppress(OSError, ValueError):
        commits.append((folder / "refs" / entry.revision).read_text(encoding="ascii").strip())
    with suppress(OSError):
        commits += sorted(p.name for p in (folder / "snapshots").iterdir())
    for commit in commits:
        if not commit or "/" in commit or commit.startswith("."):
            continue
        path = folder / "snapshots" / commit / entry.file
        if path.is_file():  # follows the link: a dangling one is not a model
            return path
    return None


def partial_path(entry: CatalogueEntry, cache: Path, sha256: str) -> Path:
    """Where an unfinished download of the file whose SHA-256 is ``sha256`` is kept: next to
    the blob it becomes, as ``<sha256>.incomplete`` (the name huggingface_hub used for its own
    resumable downloads). Never a ``.gguf``, so no model list offers it."""
    return repo_folder(entry, cache) / "blobs" / f"{sha256}.incomplete"


def partial_size(entry: CatalogueEntry, cache: Path) -> int:
    """Bytes of an unfinished download of ``entry`` (0 when none, or when its SHA-256 is not
    in the catalogue, so that the partial file cannot be named without asking the hub)."""
    if entry.sha256 is None:
        return 0
    try:
        return partial_path(entry, cache, entry.sha256).stat().st_size
    except OSError:
        return 0
