"""``tkchat models list`` and ``tkchat models get NAME``: the catalogue of Model > Get a
model…, from the command line. The download is the window's: the same child process,
progress, checks and sentences."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat.cli.options import Subcommands
from tkchat.i18n import LANGUAGES

if TYPE_CHECKING:  # for the annotations only: the catalogue loads when the command runs
    from tkchat.models.catalogue import CatalogueEntry
    from tkchat.models.download_job import DownloadJob, Result

NAME = "models"


def add_parser(commands: Subcommands) -> None:
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "--catalogue",
        type=Path,
        metavar="FILE",
        help="another catalogue file of the same shape (default: $TKCHAT_CATALOGUE, else "
        "the one shipped with tkchat)",
    )
    shared.add_argument("--lang", choices=LANGUAGES, default="en", help="language of messages")
    models = commands.add_parser(
        NAME,
        help="list the catalogue of better models, or download one",
        description="The curated models of Model > Get a model…: list them, or download one "
        "into the Hugging Face cache (resumable, checked against its SHA-256).",
    )
    actions = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    actions.add_parser("list", parents=[shared], help="the models, their size and memory needs")
    get = actions.add_parser(
        "get",
        parents=[shared],
        help="download a model (an interrupted download continues where it stopped)",
    )
    get.add_argument("name", help="a name from `tkchat models list`")
    get.add_argument(
        "--endpoint",
        metavar="URL",
        help="hub or mirror to download from, e.g. https://hf-mirror.com in mainland China "
        "(default: $HF_ENDPOINT, else the one chosen in the window, else huggingface.co)",
    )


def run(args: argparse.Namespace) -> int:
    from tkchat.models.catalogue import CatalogueError, cache_dir, load_catalogue

    try:
        entries = load_catalogue(args.catalogue)
    except CatalogueError as exc:
        print(f"tkchat: {exc}", file=sys.stderr)
        return 2
    if args.models_command == "list":
        print(_catalogue_table(entries, cache_dir(), args.lang))
        return 0
    return _get_model(args, entries)


def _catalogue_table(entries: list[CatalogueEntry], cache: Path, lang: str) -> str:
    from tkchat.models.catalogue import (
        downloaded_path,
        fits,
        memory_available,
        memory_needed,
    )
    from tkchat.models.download_text import say
    from tkchat.models.finder import describe_size

    free = memory_available()
    rows = [("name", "size", "memory", "languages", "licence", "")]
    for entry in entries:
        needed = memory_needed(entry)
        if downloaded_path(entry, cache) is not None:
            state = say(lang, "catalogue.state.downloaded")
        elif not fits(entry, free) and free is not None:
            state = say(lang, "catalogue.state.too_big", free=describe_size(free))
        else:
            state = ""
        rows.append(
            (
                entry.name,
                describe_size(entry.size) if entry.size else "?",
                describe_size(needed) if needed else "?",
                ",".join(entry.languages),
                entry.licence,
                state,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _endpoint(args: argparse.Namespace) -> str | None:
    """The hub to download from: ``--endpoint`` (None, with its sentence, if it is not a
    URL), else ``$HF_ENDPOINT``, else the one chosen in the window, else huggingface.co."""
    from tkchat.models.catalogue import chosen_endpoint, normalize_endpoint
    from tkchat.models.download_job import Failed
    from tkchat.models.download_text import describe_failure
    from tkchat.store.settings import load_settings

    if args.endpoint is None:
        remembered = load_settings()[0].hf_endpoint if "HF_ENDPOINT" not in os.environ else None
        return chosen_endpoint(remembered)
    endpoint = normalize_endpoint(args.endpoint)
    if endpoint is None:
        failed = Failed("bad_endpoint", {"endpoint": args.endpoint})
        print(f"tkchat: {describe_failure(args.lang, failed)}", file=sys.stderr)
    return endpoint


def _get_model(args: argparse.Namespace, entries: list[CatalogueEntry]) -> int:
    from tkchat.models.catalogue import cache_dir, find_entry
    from tkchat.models.download_job import DownloadJob, Failed
    from tkchat.models.download_text import describe_failure, say

    lang = args.lang
    entry = find_entry(entries, args.name)
    if entry is None:
        print(f"tkchat: {say(lang, 'catalogue.cli.none', name=args.name)}", file=sys.stderr)
        return 2
    endpoint = _endpoint(args)
    if endpoint is None:
        return 2
    job = DownloadJob(entry, endpoint=endpoint, cache=cache_dir())
    result = _wait_showing_progress(job, lang, endpoint, entry.file)
    if isinstance(result, Failed) or result is None:
        failed = result or Failed("failed", {"detail": "no result"})
        sentence = describe_failure(
            lang, failed, endpoint=endpoint, repo=entry.repo, file=entry.file
        )
        print(f"tkchat: {sentence}", file=sys.stderr)
        return 1
    print(say(lang, "catalogue.cli.saved", path=result.path))
    return 0


def _wait_showing_progress(job: DownloadJob, lang: str, endpoint: str, file: str) -> Result | None:
    """Run the download to its end (Ctrl+C cancels it), its progress on one line of a
    terminal's stderr; the job's result."""
    from tkchat.models.download_text import describe_progress

    job.start()
    shown = ""
    try:
        while (result := job.poll()) is None:
            line = describe_progress(lang, job.progress, endpoint=endpoint, file=file)
            if line != shown and sys.stderr.isatty():
                print("\r" + line.ljust(len(shown)), end="", file=sys.stderr, flush=True)
            shown = line
            time.sleep(0.1)
    except KeyboardInterrupt:
        job.cancel()
        result = job.result
    if shown and sys.stderr.isatty():
        print(file=sys.stderr)
    return result
