"""``tkchat watchdog``: the heartbeat window a chat window opens, drawing its freezes from
outside (started by the app, fed on stdin)."""

from __future__ import annotations

import argparse

from tkchat.cli.options import Subcommands
from tkchat.i18n import LANGUAGES

NAME = "watchdog"


def add_parser(commands: Subcommands) -> None:
    watchdog = commands.add_parser(
        NAME,
        help="the heartbeat window a chat window opens: its freezes, drawn from outside",
        description="Plot the heartbeat a chat window sends on stdin; started by the app.",
    )
    watchdog.add_argument("--geometry", help="window size and place, Tk style")
    watchdog.add_argument(
        "--room",
        metavar="WxH+X+Y",
        help="the part of the chat window it may cover (the chat window gives its chat text)",
    )
    watchdog.add_argument(
        "--window", metavar="WxH+X+Y", help="the chat window: a corner of the screen it leaves free"
    )
    watchdog.add_argument(
        "--state", action="store_true", help="print what is on screen as a JSON line per redraw"
    )
    watchdog.add_argument("--theme", choices=["light", "dark"], default=None)
    watchdog.add_argument(
        "--lang", choices=LANGUAGES, default="en", help="its language: the chat window's"
    )


def run(args: argparse.Namespace) -> int:
    from tkchat.lab.watchdog import run_watchdog

    return run_watchdog(
        state=args.state,
        geometry=args.geometry,
        theme=args.theme,
        language=args.lang,
        room=args.room,
        chat_window=args.window,
    )
