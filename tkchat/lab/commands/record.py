"""``tkchat record FILE``: the window's next answer saved to a file, to play back elsewhere
(``tkchat replay``, ``tkchat bench --recording``; the format is tkchat/lab/recording/file.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat.cli.from_args import (
    SCRIPTED_RATE,
    backend_options,
    rate_or,
    sampling_from_args,
    usable,
)
from tkchat.cli.options import Subcommands, model_options, window_options
from tkchat.cli.window import open_root
from tkchat.generate.factory import make_backend
from tkchat.i18n import LANGUAGES

if TYPE_CHECKING:  # for the annotations only: the window's modules load when a command runs
    from tkchat.lab.recording.file import Recording
    from tkchat.lab.window import AppOptions

NAME = "record"


def add_parser(commands: Subcommands) -> None:
    record = commands.add_parser(
        NAME,
        parents=[model_options(), window_options()],
        help="save a run (tokens and their times, lag, clicks and keys) to FILE",
        description="Open the window and record its next answer — the model's tokens with "
        "their times, the lag probe's samples, clicks, keys and scrolls, the mode and this "
        "machine's facts — into FILE (JSON Lines), when the answer ends or the window closes.",
    )
    record.add_argument("file", type=Path, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    from tkchat.lab.recording.file import Recording

    recording = Recording(
        mode=args.mode,
        backend=args.backend,
        prompt=args.prompt or "",
        model=args.model,
        rate=rate_or(args, SCRIPTED_RATE) if args.backend == "scripted" else None,
    )
    return _record(args, recording) if usable(args.mode, NAME) else 2


def load_or_say(path: Path, name: str, lang: str | None) -> Recording | None:
    """The recording in ``path``, or None with its sentence on stderr (in ``lang`` if it is
    one of the interface's languages, else the system's)."""
    from tkchat.course.lessons import default_language
    from tkchat.lab.recording.file import RecordingError, load_recording

    try:
        return load_recording(path)
    except RecordingError as exc:
        language = (lang if lang in LANGUAGES else None) or default_language()
        print(f"{name}: {exc.sentence(language)}", file=sys.stderr)
        return None


def recording_window_options(args: argparse.Namespace, mode: str) -> AppOptions:
    """The window's options for record and replay: the command line's, nothing remembered
    and nothing kept (a recorded run is a demonstration, not a conversation)."""
    from tkchat.lab.window import AppOptions

    return AppOptions(
        sampling=sampling_from_args(args),
        mode=mode,
        autosend=args.prompt,
        language=args.lang,
        show_lessons=args.lessons,
        projector=args.projector,
        theme=args.theme,
        teach=True,
    )


def _record(args: argparse.Namespace, recording: Recording) -> int:
    from tkchat.lab.recording.recorded_window import open_record_window

    root = open_root("tkchat record")
    if root is None:
        return 2
    backend = make_backend(backend_options(args, faults=True))
    options = recording_window_options(args, args.mode)
    window, recorder = open_record_window(root, backend, options, recording, args.file)
    say = window.instruments.say
    if args.geometry:
        root.geometry(args.geometry)
    root.mainloop()
    recorder.save()  # the window closed before the answer ended: keep what there is
    if recorder.error is not None:
        print(
            f"tkchat record: {say('recording.not_saved', path=args.file, reason=recorder.error)}",
            file=sys.stderr,
        )
        return 1
    print(
        say(
            "recording.saved",
            tokens=len(recording.tokens),
            seconds=f"{recording.duration_s:.2f}",
            path=args.file,
        )
    )
    return 0
