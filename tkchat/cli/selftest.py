"""``tkchat selftest``: the three questions (clicks, a dying model, scrolling) asked of a real
window with injected X events; exit 0 if all pass, 1 if not."""

from __future__ import annotations

import argparse
import sys
from typing import Protocol

from tkchat.cli.from_args import qt_problem, rate_or
from tkchat.cli.options import MODE_HELP, TOOLKITS, Subcommands, mode_type, model_options
from tkchat.i18n import LANGUAGES
from tkchat.modes import FIXED

NAME = "selftest"
# Each answer's wall-clock limit. An answer of the default scripted run takes about 1.5 s;
# 20 s is a freeze no one would wait out, and short enough to grade one that never ends.
SELFTEST_LIMIT_S = 20.0
SELFTEST_RATE = 2000.0  # the scripted backend's tokens per second when --rate is not given


class _SelfTest(Protocol):
    """What runs the self-test, of the Tk window or of the Qt client."""

    def __call__(
        self,
        mode: str,
        backend_kind: str,
        model: str | None,
        rate: float,
        *,
        language: str,
        limit_s: float,
        tokens: int | None = None,
    ) -> int: ...


def add_parser(commands: Subcommands) -> None:
    selftest = commands.add_parser(
        NAME,
        parents=[model_options()],
        help="the three questions: clicks, a dying model, scrolling — with real X input",
        description="Ask a real window (on a virtual screen if needed) three questions with "
        "injected X events; exit 0 if all pass, 1 if not.",
    )
    selftest.add_argument("--mode", type=mode_type, default=FIXED, metavar="MODE", help=MODE_HELP)
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

    if args.toolkit == "qt":
        problem = qt_problem(args.mode)
        if problem:
            print(f"tkchat selftest: {problem}", file=sys.stderr)
            return 2
        from tkchat.measure.qt_selftest import run_qt_selftest

        run_test: _SelfTest = run_qt_selftest
    else:
        from tkchat.measure.selftest import run_selftest

        run_test = run_selftest
    return run_test(
        args.mode,
        args.backend,
        args.model,
        rate=rate_or(args, SELFTEST_RATE),
        language=args.lang or default_language(),
        limit_s=args.limit,
        tokens=args.tokens,
    )
