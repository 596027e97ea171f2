"""Command line: ``tkchat`` opens the chat window; subcommands measure and compare it.

One module per command, each with its sub-parser (``add_parser``) and what runs it (``run``);
:data:`COMMANDS` is the table from a command's name to its module. No command given: the
window (:mod:`tkchat.cli.window`, whose options are the top-level parser's). Every module
imports its heavy parts inside ``run``, so that ``tkchat --help`` works without Tk."""

from __future__ import annotations

import argparse
from typing import Protocol

from tkchat.cli import (
    bench,
    compare,
    exercise,
    models,
    record,
    replay,
    selftest,
    serve,
    watchdog,
    window,
)
from tkchat.cli.options import Subcommands


class Command(Protocol):
    """A command's module."""

    NAME: str

    def add_parser(self, commands: Subcommands) -> None:
        """Add the command's sub-parser, named NAME, with its options."""

    def run(self, args: argparse.Namespace) -> int:
        """Run the command; its exit status."""


# In the order `tkchat --help` lists them (typed, so that mypy checks each module's shape).
_IN_ORDER: tuple[Command, ...] = (
    bench,
    compare,
    selftest,
    serve,
    watchdog,
    models,
    record,
    replay,
    exercise,
)
COMMANDS: dict[str, Command] = {command.NAME: command for command in _IN_ORDER}


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the window's options, then each command's sub-parser."""
    parser = window.make_parser()
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``tkchat``'s entry point: parse ``argv`` (default: the process's), run what it names;
    the exit status."""
    args = build_parser().parse_args(argv)
    command = COMMANDS.get(args.command)
    return window.run(args) if command is None else command.run(args)


__all__ = ["COMMANDS", "build_parser", "main"]
