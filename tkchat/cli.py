"""Command line: ``tkchat`` opens the chat window; ``tkchat bench`` measures it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tkchat import __version__
from tkchat.generate.model_file import ENV_VAR


def _backend_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("model")
    group.add_argument("--backend", choices=["llama", "scripted"], default="llama",
                       help="llama: a local GGUF model (default); scripted: a reproducible "
                            "answer at a chosen token rate, for demos and floods")
    group.add_argument("--model", metavar="PATH",
                       help=f"GGUF file to load (default: ${ENV_VAR}, else the bundled "
                            "SmolLM2-135M-Instruct)")
    group.add_argument("--rate", type=float, default=None,
                       help="scripted backend: tokens per second (0 = as fast as possible)")
    group.add_argument("--tokens", type=int, default=None,
                       help="scripted: answer length in tokens; bench: tokens per generation")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _backend_options()
    parser = argparse.ArgumentParser(
        prog="tkchat", parents=[common],
        description="An offline chat for local GGUF models whose window never freezes.",
    )
    parser.add_argument("--version", action="version", version=f"tkchat {__version__}")
    parser.add_argument("--max-tokens", type=int, default=512, help="answer length limit")
    parser.add_argument("--temperature", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=None, help="fixed sampling seed")
    parser.add_argument("--fail-at", type=int, default=None, metavar="K",
                        help="scripted backend: crash at token K (to see the error path)")
    parser.add_argument("--split-utf8", action="store_true",
                        help="scripted backend: cut multi-byte characters across tokens")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    bench = commands.add_parser(
        "bench", parents=[common], help="measure lag, tokens/s, cancel latency, memory",
        description="Run the real window and measure idle, raw and fixed in one run.",
    )
    bench.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    bench.add_argument("--repeats", type=int, default=3, help="generations per mode")
    bench.add_argument("--cancels", type=int, default=20, help="stops at random points")
    bench.add_argument("--idle-seconds", type=float, default=3.0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench":
        from tkchat.measure.bench import BenchOptions, run_bench

        scripted = args.backend == "scripted"
        return run_bench(BenchOptions(
            backend=args.backend, model=args.model,
            tokens=args.tokens or (100_000 if scripted else 256),
            rate=5000.0 if args.rate is None else args.rate,
            repeats=args.repeats, cancels=args.cancels, idle_s=args.idle_seconds,
            json_path=args.json,
        ))
    return run_app(args)


def run_app(args: argparse.Namespace) -> int:
    import tkinter as tk

    from tkchat.generate.backend import Sampling
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import make_backend
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.app import ChatApp

    try:
        root = tk.Tk(className="tkchat")
    except tk.TclError as exc:
        print(f"tkchat: cannot open a window ({exc}). Is there a display? "
              "On a headless machine run it under xvfb-run.", file=sys.stderr)
        return 2
    backend = make_backend(
        args.backend, model=args.model, rate=50.0 if args.rate is None else args.rate,
        tokens=args.tokens, fail_at=args.fail_at, split_utf8=args.split_utf8,
    )
    controller = GenerationController(backend, EventChannel())
    sampling = Sampling(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed)
    ChatApp(root, controller, sampling=sampling)
    controller.load_async()  # the window is up first; the model loads on a worker
    root.mainloop()
    return 0
