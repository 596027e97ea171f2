"""``tkchat bench``: the real window measured in every mode, with baselines, in one run; or
the lessons' demos (``--lessons``), the server's event loop (``--serve-loop``), or the report
of a recorded run (``--recording``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat.cli.from_args import backend_from_args, has_extra, rate_or, usable
from tkchat.cli.options import Subcommands, model_options
from tkchat.modes import MODES, OUTSIDE_FORM, is_outside_mode

NAME = "bench"
DEFAULT_PROMPT_TOKENS = 3000  # a pasted page or two; fits the bundled model's 8,192 context
BENCH_RATE = 5000.0  # the scripted backend's tokens per second when --rate is not given


def add_parser(commands: Subcommands) -> None:
    bench = commands.add_parser(
        NAME,
        parents=[model_options()],
        help="measure lag, tokens/s, cancel latency, memory",
        description="Run the real window and measure every mode, with baselines, in one run.",
    )
    bench.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    bench.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="also write a Markdown report with PNG plots into DIR",
    )
    bench.add_argument(
        "--modes",
        default="all",
        help="comma-separated modes to measure besides idle and raw "
        f"(default all: {', '.join(MODES)}; a pipeline of your own as {OUTSIDE_FORM})",
    )
    bench.add_argument(
        "--transport",
        choices=["inprocess", "sse"],
        default="inprocess",
        help="sse: the bundled model in-process, through `tkchat serve`, and "
        "through llama-cpp-python's server, with the same client",
    )
    bench.add_argument(
        "--serve-loop",
        action="store_true",
        help="the server's event loop: one answer through `tkchat serve` and through "
        "`tkchat serve --broken`, measuring asyncio loop lag and a second client's /health",
    )
    bench.add_argument("--repeats", type=int, default=3, help="generations per mode")
    bench.add_argument("--cancels", type=int, default=20, help="stops at random points")
    bench.add_argument("--idle-seconds", type=float, default=3.0)
    bench.add_argument(
        "--prompt-tokens",
        type=int,
        nargs="?",
        const=DEFAULT_PROMPT_TOKENS,
        metavar="N",
        help=f"also a long prompt of N tokens (default {DEFAULT_PROMPT_TOKENS:,}): prompt "
        "tokens/s, Stop while it is read, progress, lag, the next turn's TTFT, a model load",
    )
    _add_other_runs(bench)


def _add_other_runs(bench: argparse.ArgumentParser) -> None:
    """The options that run something else than the measurement of the modes."""
    bench.add_argument(
        "--lessons",
        action="store_true",
        help="run every lesson's demo in the window, check what each lesson claims, and "
        "write the figures the lessons quote (lessons/figures.json)",
    )
    bench.add_argument(
        "--lang",
        default="en,zh",
        help="with --lessons: the lessons' languages (default en,zh)",
    )
    bench.add_argument(
        "--only",
        default="",
        metavar="IDS",
        help="with --lessons: only these lessons (comma-separated ids or numbers, e.g. 04,11)",
    )
    bench.add_argument(
        "--recording",
        type=Path,
        metavar="FILE",
        help="with --report DIR: the report of a recorded run (tkchat record) instead of a "
        "new measurement",
    )


def run(args: argparse.Namespace) -> int:
    if not _extras_present(args):
        return 2
    if args.recording:
        return _recording_report(args)
    if args.lessons:
        from tkchat.measure.lesson_demos import run_lesson_bench

        return run_lesson_bench(_listed(args.lang), only=_listed(args.only))
    if args.serve_loop:
        from tkchat.measure.server_loop import run_server_loop_bench

        backend = backend_from_args(args)
        return run_server_loop_bench(backend, max_tokens=args.tokens or 64, json_out=args.json)
    return _bench_modes(args)


def _extras_present(args: argparse.Namespace) -> bool:
    """The optional extras the asked run needs, checked before anything is measured."""
    needs = [
        ("tkchat bench --report", "report", args.report is not None),
        ("tkchat bench --serve-loop", "serve", args.serve_loop),
        ("tkchat bench --transport sse", "serve", args.transport == "sse"),
    ]
    return all(has_extra(what, extra) for what, extra, asked in needs if asked)


def _listed(text: str) -> list[str]:
    """A comma-separated option's items."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _bench_modes(args: argparse.Namespace) -> int:
    """The measurement of the modes, beside the idle and raw baselines."""
    from tkchat.measure.bench import run_bench
    from tkchat.measure.figures import BenchOptions

    modes = MODES if args.modes == "all" else tuple(m.strip() for m in args.modes.split(","))
    unknown = [m for m in modes if m not in MODES and not is_outside_mode(m)]
    if unknown:
        print(f"tkchat bench: unknown mode(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    if not all(usable(m, "bench") for m in modes):
        return 2
    scripted = args.backend == "scripted"
    return run_bench(
        BenchOptions(
            backend=args.backend,
            model=args.model,
            tokens=args.tokens or (100_000 if scripted else 256),
            rate=rate_or(args, BENCH_RATE),
            modes=modes,
            repeats=args.repeats,
            cancels=args.cancels,
            idle_s=args.idle_seconds,
            json_path=args.json,
            report_dir=args.report,
            transport=args.transport,
            prompt_tokens=args.prompt_tokens,
        )
    )


def _recording_report(args: argparse.Namespace) -> int:
    """``bench --recording FILE --report DIR``: the report of a run saved by ``tkchat record``."""
    from tkchat.cli.record import load_or_say

    recording = load_or_say(args.recording, "tkchat bench", args.lang)
    if recording is None:
        return 2
    if args.report is None:
        print("tkchat bench: --recording FILE needs --report DIR", file=sys.stderr)
        return 2
    from tkchat.measure.recording_report import write_recording_report

    print(write_recording_report(recording, args.report, args.recording))
    return 0
