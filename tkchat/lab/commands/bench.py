"""``tkchat bench``: the real window measured in every mode, with baselines, in one run; or
the lessons' demos (``--lessons``), the server's event loop (``--serve-loop``), the bytes
written to save an answer (``--saving``), the report of a recorded run (``--recording``), or
every timing claim judged, retried, as CI checks them (``--claims``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat.cli.from_args import backend_options, has_extra, output_problem, rate_or, usable
from tkchat.cli.options import Subcommands, model_options, server_url_type
from tkchat.generate.factory import make_backend
from tkchat.modes import MODES, OUTSIDE_FORM, is_outside_mode

NAME = "bench"
DEFAULT_PROMPT_TOKENS = 3000  # a pasted page or two; fits the bundled model's 8,192 context
LONG_CHAT_SIZES = "10,100,300,1000"
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
        "--trace",
        type=Path,
        metavar="FILE",
        help="also write every streaming run as a Chrome trace (open it in Perfetto or "
        "chrome://tracing): callbacks, who held the loop, long tasks, tokens, counters",
    )
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
    _add_sizes(bench)
    bench.add_argument(
        "--prompt-tokens",
        type=int,
        nargs="?",
        const=DEFAULT_PROMPT_TOKENS,
        metavar="N",
        help=f"also a long prompt of N tokens (default {DEFAULT_PROMPT_TOKENS:,}): prompt "
        "tokens/s, Stop while it is read, progress, lag, the next turn's TTFT, a model load",
    )
    _add_scenarios(bench)
    _add_class_options(bench)
    _add_other_runs(bench)
    _add_lesson_options(bench)


def _add_sizes(bench: argparse.ArgumentParser) -> None:
    """How much each mode is measured."""
    bench.add_argument("--repeats", type=int, default=3, help="generations per mode")
    bench.add_argument("--cancels", type=int, default=20, help="stops at random points")
    bench.add_argument("--idle-seconds", type=float, default=3.0)
    bench.add_argument(
        "--broken-tokens",
        type=int,
        metavar="N",
        help="on the scripted backend, a broken mode's answer is cut at N tokens (default "
        "600: per-chunk-render's cost grows with the square of the answer)",
    )


def _add_scenarios(bench: argparse.ArgumentParser) -> None:
    """Scenarios run after the modes (tkchat/lab/bench/scenarios/)."""
    bench.add_argument(
        "--busy",
        action="store_true",
        help="also the fixed pipeline with a CPU hog on every core (the bench starts and "
        "stops them): lag and tokens/s against the same run's quiet baselines",
    )
    bench.add_argument(
        "--turn2",
        action="store_true",
        help="also a chat's second turn, in English and in Chinese, against llama-cpp-python "
        "reading just its new part (the llama backend)",
    )
    bench.add_argument(
        "--no-costs",
        dest="costs",
        action="store_false",
        help="leave out the rows that say what each instrument costs (the plain window, and "
        "the fixed one less each instrument): they judge no claim, so `--claims` skips them",
    )
    bench.add_argument(
        "--no-clicks",
        dest="clicks",
        action="store_false",
        help="no clicks on the window while it streams (ten a second, each handled by the "
        "window), so no input latency: the peer tool (tests/tools/peer_lag.py) uses it, as "
        "the peer's window gets no clicks",
    )


def _add_class_options(bench: argparse.ArgumentParser) -> None:
    """``--class N``: a class of simulated students sharing one ``tkchat serve``."""
    bench.add_argument(
        "--class",
        dest="class_size",
        type=int,
        metavar="N",
        help="N simulated students share one `tkchat serve` (in a process of its own) for "
        "--duration seconds: each asks, reads, asks again; every request accounted for "
        "(answered, refused, lost, mixed up, in order), the line's waits, /health's latency. "
        "--tokens: each answer's length (default 64)",
    )
    bench.add_argument(
        "--long-every",
        type=int,
        default=0,
        metavar="K",
        help="with --class: every K-th student asks for answers 8 times as long (a class "
        "mixing short and long answers: what the line's estimates must foresee)",
    )
    bench.add_argument(
        "--duration",
        type=float,
        default=180.0,
        metavar="S",
        help="with --class: how long the class lasts (default 180 s)",
    )
    bench.add_argument(
        "--server",
        type=server_url_type,
        metavar="URL",
        help="with --class: the class's tkchat serve relays to this OpenAI-compatible server "
        "(tkchat serve --server URL) instead of loading a model",
    )
    bench.add_argument(
        "--parallel",
        type=int,
        default=1,
        metavar="N",
        help="with --class --server: answers the server generates at once (default 1)",
    )
    bench.add_argument(
        "--port",
        type=int,
        metavar="PORT",
        help="with --class: the class uses the `tkchat serve` already running on this machine "
        "at this port (the one started for the class, with its model and limits) instead of "
        "starting one; the model options are then the server's own",
    )


def _add_other_runs(bench: argparse.ArgumentParser) -> None:
    """The options that run something else than the measurement of the modes."""
    bench.add_argument(
        "--long-chat",
        nargs="?",
        const=LONG_CHAT_SIZES,
        metavar="SIZES",
        help="instead of the modes: a saved conversation of each of these lengths "
        f"(messages, default {LONG_CHAT_SIZES}) opened, paged, resized and streamed into, "
        "against an empty chat",
    )
    bench.add_argument(
        "--claims",
        action="store_true",
        help="every timing claim (the lessons', and the fixed pipeline's on the model, in a "
        "flood and in a long chat), each against a baseline of the same run; a failed claim "
        "measured again, three times in all; the table printed; exit status 1 only for a "
        "claim that failed every time the machine was quiet enough to judge it (what CI runs)",
    )
    bench.add_argument(
        "--saving",
        action="store_true",
        help="the bytes written to save one streamed answer of 10,000, 100,000 and 1,000,000 "
        "characters (a flood and a model's pace): linear, and the log emptied after it",
    )
    bench.add_argument(
        "--recording",
        type=Path,
        metavar="FILE",
        help="with --report DIR: the report of a recorded run (tkchat record) instead of a "
        "new measurement",
    )


def _add_lesson_options(bench: argparse.ArgumentParser) -> None:
    """``--lessons``: every lesson's demo, its claims checked."""
    bench.add_argument(
        "--lessons",
        action="store_true",
        help="run every lesson's demo in the window and check what each lesson claims "
        "(read-only: the lessons keep the figures they quote)",
    )
    bench.add_argument(
        "--write",
        action="store_true",
        help="with --lessons: keep this run's figures for the lessons to quote "
        "(lessons/figures.json, with the date, the machine and its load); refused when the "
        "idle window says the machine is busy",
    )
    bench.add_argument(
        "--once",
        action="store_true",
        help="with --lessons: each demo run once for every lesson that sets it up, in either "
        "language (lessons 01, 03, 04 and 14 set up the same answer), its claims all judged "
        "on that run",
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


def run(args: argparse.Namespace) -> int:
    if not _extras_present(args):
        return 2
    for option, path in (("--trace", args.trace), ("--json", args.json)):
        problem = output_problem(path, option) if path is not None else None
        if problem is not None:
            print(f"tkchat bench: {problem}", file=sys.stderr)
            return 2
    if args.recording:
        return _recording_report(args)
    if args.claims:
        from tkchat.lab.bench.claim_runs import run_claims

        return run_claims(json_out=args.json)
    if args.lessons:
        from tkchat.lab.bench.lesson_demos import LessonBenchOptions, run_lesson_bench

        return run_lesson_bench(
            LessonBenchOptions(
                tuple(_listed(args.lang)),
                only=tuple(_listed(args.only)),
                write=args.write,
                once=args.once,
                json_path=args.json,
            )
        )
    if args.class_size:
        return _bench_class(args)
    if args.saving:
        from tkchat.lab.bench.saving_bench import run_saving_bench

        return run_saving_bench(json_out=args.json)
    if args.serve_loop:
        from tkchat.lab.bench.server_loop import run_server_loop_bench

        backend = make_backend(backend_options(args))
        return run_server_loop_bench(backend, max_tokens=args.tokens or 64, json_out=args.json)
    return _bench_modes(args)


def _bench_class(args: argparse.Namespace) -> int:
    """``--class N``: the server gets the bench's model options; the scripted backend echoes
    each question, so that every answer's owner can be checked."""
    from tkchat.cli.from_args import child_model_args
    from tkchat.lab.classroom.run import ClassOptions, run_class_bench

    scripted = args.backend == "scripted" and not args.server and args.port is None
    model_args = [*child_model_args(args), *(["--echo"] if scripted else [])]
    if args.server:
        model_args += ["--parallel", str(args.parallel)]
    return run_class_bench(
        ClassOptions(
            students=args.class_size,
            duration_s=args.duration,
            max_tokens=args.tokens or 64,
            long_every=max(args.long_every, 0),
            model_args=tuple(model_args),
            echo=scripted,
            json_path=args.json,
            port=args.port,
        )
    )


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
    from tkchat.lab.bench.figures import BenchOptions
    from tkchat.lab.bench.run import run_bench

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
            **({"broken_tokens": args.broken_tokens} if args.broken_tokens else {}),
            json_path=args.json,
            report_dir=args.report,
            trace_path=args.trace,
            transport=args.transport,
            prompt_tokens=args.prompt_tokens,
            long_chat=tuple(int(n) for n in _listed(args.long_chat or "")),
            busy=args.busy,
            turn2=args.turn2,
            costs=args.costs,
            clicks=args.clicks,
        )
    )


def _recording_report(args: argparse.Namespace) -> int:
    """``bench --recording FILE --report DIR``: the report of a run saved by ``tkchat record``."""
    from tkchat.lab.commands.record import load_or_say

    recording = load_or_say(args.recording, "tkchat bench", args.lang)
    if recording is None:
        return 2
    if args.report is None:
        print("tkchat bench: --recording FILE needs --report DIR", file=sys.stderr)
        return 2
    from tkchat.lab.recording.report import write_recording_report

    print(write_recording_report(recording, args.report, args.recording))
    return 0
