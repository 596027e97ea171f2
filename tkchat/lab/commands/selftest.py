"""``tkchat selftest``: four questions (clicks, a dying model, scrolling, Stop) asked of a real
window with injected X events, and the benchmark's targets; exit 0 if all pass, 1 if not, 2
if the pipeline could not be graded, 3 if the machine was too busy to judge.

``--mode FOLDER/`` grades every pipeline in the folder: a class at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat.cli.from_args import qt_problem, rate_or
from tkchat.cli.options import MODE_HELP, TOOLKITS, Subcommands, mode_type, model_options
from tkchat.i18n import LANGUAGES
from tkchat.modes import FIXED

NAME = "selftest"
# Each answer's wall-clock limit. An answer of the default scripted run takes about 2 s;
# 20 s is a freeze no one would wait out, and short enough to grade one that never ends.
SELFTEST_LIMIT_S = 20.0
# The backend and rate the exercise's README names: a reproducible flood, the same on every
# laptop of a class (--backend llama: the bundled model, as the chat window uses it).
SELFTEST_BACKEND = "scripted"
SELFTEST_RATE = 2000.0  # the scripted backend's tokens per second when --rate is not given


def mode_or_folder(text: str) -> str:
    """A mode, or a folder of pipelines (a class) — ending with a slash, or one that exists."""
    if text.endswith(("/", "\\")) or Path(text).is_dir():
        if not Path(text).is_dir():
            raise argparse.ArgumentTypeError(f"{text} is not a folder")
        return text
    return mode_type(text)


def add_parser(commands: Subcommands) -> None:
    selftest = commands.add_parser(
        NAME,
        parents=[model_options()],
        help="grade a pipeline: clicks, a dying model, scrolling, Stop — with real X input",
        description="Ask a real window (on a virtual screen if needed) four questions with "
        "injected X events and hold it to the benchmark's targets; the pipeline runs in a "
        "process of its own, the grade is computed outside it. Exit 0 if all pass, 1 if "
        "not, 2 if it could not be graded, 3 if the machine was too busy to judge. "
        f"Default backend: {SELFTEST_BACKEND} at {SELFTEST_RATE:,.0f} tokens/s.",
    )
    selftest.set_defaults(backend=SELFTEST_BACKEND)
    for action in selftest._actions:  # (this parser's own copy of the shared options)
        if action.dest == "backend":
            action.help = (
                f"scripted: a reproducible answer at --rate tokens/s (default, "
                f"{SELFTEST_RATE:,.0f}), the same on every laptop; llama: a local GGUF model"
            )
    selftest.add_argument(
        "--mode",
        type=mode_or_folder,
        default=FIXED,
        metavar="MODE",
        help=MODE_HELP + "; or FOLDER/: every pipeline in it, with a table of the grades",
    )
    selftest.add_argument(
        "--toolkit", choices=TOOLKITS, default="tk", help="which window to test (qt: the Qt client)"
    )
    selftest.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="the report's language (default: the system's)",
    )
    selftest.add_argument(
        "--limit",
        type=float,
        default=SELFTEST_LIMIT_S,
        metavar="SECONDS",
        help="wall-clock limit of each answer: a window still busy then is interrupted and "
        f"the question fails with its figures (default {SELFTEST_LIMIT_S:g})",
    )


def run(args: argparse.Namespace) -> int:
    from tkchat.course.lessons import default_language
    from tkchat.lab.selftest.runner import Setup, run_selftest

    if args.toolkit == "qt":
        problem = qt_problem(args.mode)
        if problem:
            print(f"tkchat selftest: {problem}", file=sys.stderr)
            return 2
    setup = Setup(
        mode=args.mode,
        backend=args.backend,
        model=args.model,
        rate=rate_or(args, SELFTEST_RATE),
        language=args.lang or default_language(),
        limit_s=args.limit,
        tokens=args.tokens,
        toolkit=args.toolkit,
    )
    if Path(args.mode).is_dir():
        from tkchat.lab.selftest.classroom import run_class

        return run_class(setup, Path(args.mode))
    return run_selftest(setup)
