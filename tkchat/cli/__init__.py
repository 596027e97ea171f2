"""Command line: ``tkchat`` opens the chat window; subcommands measure and compare it.

One module per command, each with its sub-parser (``add_parser``) and what runs it (``run``);
:func:`commands` is the table from a command's name to its module: the app's commands are
here, the lab's (``bench``, ``selftest``, ``watchdog``, ``record``, ``replay``) in
``tkchat/lab/commands/``, named by :data:`LAB_COMMANDS`. No command given: the window
(:mod:`tkchat.cli.window`, whose options are the top-level parser's). Every module imports
its heavy parts inside ``run``, so that ``tkchat --help`` works without Tk."""

from __future__ import annotations

import argparse
import importlib
from typing import Protocol, cast

from tkchat.cli import compare, exercise, models, serve, window
from tkchat.cli.options import Subcommands


class Command(Protocol):
    """A command's module."""

    NAME: str

    def add_parser(self, commands: Subcommands) -> None:
        """Add the command's sub-parser, named NAME, with its options."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the command; its exit status."""


# The lab's commands: measuring and grading the window, the classroom's tools. The app imports
# nothing of the lab (tests/test_architecture.py), so they are named here by import path, like
# the modes in tkchat.modes.PIPELINES, and imported only to build the parser.
LAB_COMMANDS = {
    "bench": "tkchat.lab.commands.bench",
    "selftest": "tkchat.lab.commands.selftest",
    "watchdog": "tkchat.lab.commands.watchdog",
    "record": "tkchat.lab.commands.record",
    "replay": "tkchat.lab.commands.replay",
}


def _lab(name: str) -> Command:
    return cast(Command, importlib.import_module(LAB_COMMANDS[name]))


def commands() -> dict[str, Command]:
    """Every command by name, in the order `tkchat --help` lists them."""
    in_order: tuple[Command, ...] = (
        _lab("bench"),
        compare,
        _lab("selftest"),
        serve,
        _lab("watchdog"),
        models,
        _lab("record"),
        _lab("replay"),
        exercise,
    )
    return {command.NAME: command for command in in_order}


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the window's options, then each command's sub-parser."""
    parser = window.make_parser()
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands().values():
        command.add_parser(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``tkchat``'s entry point: parse ``argv`` (default: the process's), run what it names;
    the exit status."""
    args = build_parser().parse_args(argv)
    command = commands().get(args.command)
    return window.run(args) if command is None else command.run(args)


__all__ = ["LAB_COMMANDS", "build_parser", "commands", "main"]
