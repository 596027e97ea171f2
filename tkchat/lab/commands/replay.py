"""``tkchat replay FILE``: a recorded run played back in the window, at its recorded pace,
through this window's pipeline (the recorded mode, or ``--mode``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat.cli.from_args import usable
from tkchat.cli.options import Subcommands, window_options
from tkchat.cli.window import open_root
from tkchat.lab.commands.record import load_or_say, recording_window_options
from tkchat.modes import check_mode

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


def run(args: argparse.Namespace) -> int:
    name = f"tkchat {NAME}"
    recording = load_or_say(args.file, name, args.lang)
    if recording is None:
        return 2
    mode = args.mode or recording.mode
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
