"""``tkchat replay FILE``: a recorded run played back in the window, at its recorded pace,
through this window's pipeline (the recorded mode if it is a built-in one, or ``--mode``).

A recording is data passed between machines (recorded in the lab, replayed on the projector
laptop): it never chooses code to run. A recording made through a student's pipeline
(``helper.py:Pipeline`` in its header) replays through the fixed pipeline, with a sentence
saying how to name the file; only ``--mode FILE.py:CLASS`` on the command line imports one.
Main thread (a command)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat.cli.from_args import usable
from tkchat.cli.options import Subcommands, window_options
from tkchat.cli.window import open_root
from tkchat.lab.commands.record import load_or_say, recording_window_options
from tkchat.modes import FIXED, MODES, check_mode

NAME = "replay"


def add_parser(commands: Subcommands) -> None:
    replay = commands.add_parser(
        NAME,
        # the window's options without the model's: the recording is the model
        parents=[window_options()],
        help="play a recorded run back in the window, at its recorded pace",
        description="Open the window on a recording: the recorded question is sent, and the "
        "recorded tokens arrive at their recorded pace through this window's pipeline "
        "(the recorded mode, or --mode). The lesson panel's timeline draws the recorded lag "
        "beside this window's.",
    )
    replay.add_argument("file", type=Path, metavar="FILE")
    replay.add_argument(
        "--speed", type=float, default=1.0, help="play this many times as fast (default 1)"
    )
    replay.set_defaults(mode=None)  # None: the mode the run was recorded in


def replay_mode(asked: str | None, recorded: str) -> tuple[str, str | None]:
    """The pipeline a replay goes through, and a sentence when it is not the recorded one:
    ``--mode`` if the user gave one; else the recorded mode if it is built in; else the fixed
    pipeline (a name from a file is never imported on a file's word)."""
    if asked is not None:
        return asked, None
    if recorded in MODES:
        return recorded, None
    return FIXED, (
        f"the recording names the pipeline {recorded!r}; a recording never chooses code to "
        f"run, so it replays through the {FIXED} pipeline (to use that file's pipeline, "
        f"name it yourself: --mode {recorded})"
    )


def run(args: argparse.Namespace) -> int:
    name = f"tkchat {NAME}"
    recording = load_or_say(args.file, name, args.lang)
    if recording is None:
        return 2
    mode, note = replay_mode(args.mode, recording.mode)
    if note is not None:
        print(f"{name}: {note}", file=sys.stderr)
    try:
        check_mode(mode)
    except ValueError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    if args.speed <= 0:
        print(f"{name}: --speed must be above 0 (1 plays at the recorded pace)", file=sys.stderr)
        return 2
    if not usable(mode, NAME):
        return 2
    from tkchat.lab.recording.recorded_window import open_replay_window

    root = open_root(name)
    if root is None:
        return 2
    open_replay_window(root, recording, recording_window_options(args, mode), speed=args.speed)
    if args.geometry:
        root.geometry(args.geometry)
    root.mainloop()
    return 0
