"""``tkchat compare``: two windows side by side, a broken mode beside the fixed pipeline,
sent the same prompt with the same seed."""

from __future__ import annotations

import argparse
import sys

from tkchat.cli.from_args import SCRIPTED_RATE, child_model_args, qt_problem, usable
from tkchat.cli.options import Subcommands, add_server_option, mode_type, model_options
from tkchat.course.compare import COMPARE_TOOLKITS, DEFAULT_BROKEN
from tkchat.i18n import LANGUAGES
from tkchat.modes import BROKEN_MODES, FIXED, OUTSIDE_FORM

NAME = "compare"
DEFAULT_SEED = 7
# A scripted answer lasts about this long unless --tokens says otherwise: time for a class to
# try Stop, scroll and type in the frozen window (the default script lasted half a second).
SCRIPTED_ANSWER_S = 6.0


def _other_mode(text: str) -> str:
    """What ``compare`` puts beside the fixed pipeline: a broken mode, or one's own."""
    if text == FIXED:
        raise argparse.ArgumentTypeError("compare puts a mode beside fixed: choose another")
    return mode_type(text)


def add_parser(commands: Subcommands) -> None:
    compare = commands.add_parser(
        NAME,
        parents=[model_options()],
        help="two windows side by side: a broken mode and the fixed pipeline",
        description="Open two tkchat processes next to each other — one broken mode, one "
        "fixed — and send both the same prompt with the same seed.",
    )
    compare.add_argument(
        "--broken",
        type=_other_mode,
        default=None,
        metavar="MODE",
        help=f"the window beside fixed: {', '.join(BROKEN_MODES)} (default blocking; "
        f"no-coalesce with --toolkit qt), or a pipeline of your own as {OUTSIDE_FORM}",
    )
    compare.add_argument(
        "--toolkit",
        choices=COMPARE_TOOLKITS,
        default="tk",
        help="tk: two Tk windows (default); qt: two Qt windows, the broken one left; "
        "both: the Qt window beside the Tk window, both fixed",
    )
    add_server_option(compare)
    compare.add_argument(
        "--prompt", default=None, help="the prompt both windows send (default: one in --lang)"
    )
    compare.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="both windows' language (default: the saved setting, else the system's)",
    )
    compare.add_argument(
        "--projector", action="store_true", help="both windows in projector mode: large text"
    )
    compare.add_argument("--seed", type=int, default=DEFAULT_SEED)
    compare.add_argument("--max-tokens", type=int, default=256)


def _long_enough_to_act_in(args: argparse.Namespace) -> None:
    """A scripted answer of :data:`SCRIPTED_ANSWER_S` at its rate, when its length is not
    given (a rate of 0, as fast as possible, keeps the script's own length)."""
    if args.backend != "scripted" or args.server or args.tokens is not None:
        return
    rate = args.rate if args.rate is not None else SCRIPTED_RATE
    if rate > 0:
        args.tokens = round(rate * SCRIPTED_ANSWER_S)
        args.max_tokens = max(args.max_tokens, args.tokens)


def _qt_windows_problem(args: argparse.Namespace) -> str | None:
    """Why the Qt windows cannot open as asked, in one sentence: the first that stops the
    user. The Qt client itself (not installed, or without the broken mode asked for) comes
    before an option it has no use for: leaving out --projector would not help them."""
    both = args.toolkit == "both"
    problem = qt_problem(FIXED if both else args.broken or DEFAULT_BROKEN["qt"])
    if problem is None and both and args.broken:
        problem = "--toolkit both compares the two fixed windows: leave out --broken"
    if problem is None and args.projector:
        problem = "the Qt client has no projector mode: leave out --projector"
    return problem


def run(args: argparse.Namespace) -> int:
    problem = None if args.toolkit == "tk" else _qt_windows_problem(args)
    if problem:
        print(f"tkchat compare: {problem}", file=sys.stderr)
        return 2
    from tkchat.course.compare import default_prompt, run_compare, window_args

    if args.broken is not None and not usable(args.broken, NAME):
        return 2
    _long_enough_to_act_in(args)
    return run_compare(
        args.broken,
        child_model_args(args) + window_args(args.lang, args.projector),
        prompt=args.prompt or default_prompt(args.lang),
        seed=args.seed,
        max_tokens=args.max_tokens,
        toolkit=args.toolkit,
    )
