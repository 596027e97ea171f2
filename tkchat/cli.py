"""Command line: ``tkchat`` opens the chat window; subcommands measure and compare it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tkchat import __version__
from tkchat.conversation import MAX_N_CTX, MIN_N_CTX, Sampling
from tkchat.course.compare import COMPARE_TOOLKITS
from tkchat.generate.llama_backend import MAX_AUTO_N_CTX
from tkchat.generate.model_file import ENV_VAR
from tkchat.modes import BROKEN_MODES, FIXED, MODES, OUTSIDE_FORM, check_mode, is_outside_mode
from tkchat.transport.chaos import Chaos

DEFAULT_SEED = 7
DEFAULT_PROMPT_TOKENS = 3000  # a pasted page or two; fits the bundled model's 8,192 context
TOOLKITS = ("tk", "qt")  # qt: the Qt client (tkchat/qt/, the optional `qt` extra)
# selftest: each answer's wall-clock limit. An answer of the default scripted run takes about
# 1.5 s; 20 s is a freeze no one would wait out, and short enough to grade one that never ends.
SELFTEST_LIMIT_S = 20.0


def _mode(text: str) -> str:
    """A mode's name, or a pipeline of one's own as ``FILE.py:CLASS`` (loaded later, where
    a file that cannot be used gets its sentence)."""
    try:
        check_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _other_mode(text: str) -> str:
    """What ``compare`` puts beside the fixed pipeline: a broken mode, or one's own."""
    if text == FIXED:
        raise argparse.ArgumentTypeError("compare puts a mode beside fixed: choose another")
    return _mode(text)


MODE_HELP = (
    "how answers reach the screen: fixed (default), one of the deliberately BROKEN teaching "
    f"modes ({', '.join(BROKEN_MODES)}), or a pipeline of your own as {OUTSIDE_FORM} "
    "(lessons/exercises/)"
)


def _context_length(text: str) -> int:
    """``--n-ctx``: a whole number of tokens llama.cpp can make a context of."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not MIN_N_CTX <= value <= MAX_N_CTX:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of tokens from {MIN_N_CTX} to {MAX_N_CTX:,}, got {text!r}"
        )
    return value


def _model_options() -> argparse.ArgumentParser:
    """Options every command shares: which backend, which model, how fast (scripted)."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("model")
    group.add_argument(
        "--backend",
        choices=["llama", "scripted"],
        default="llama",
        help="llama: a local GGUF model (default); scripted: a reproducible "
        "answer at a chosen token rate, for demos and floods",
    )
    group.add_argument(
        "--model",
        metavar="PATH",
        help=f"GGUF file to load (default: ${ENV_VAR}, else, in the chat "
        "window, the model chosen last time in Model > Choose model, "
        "else the bundled SmolLM2-135M-Instruct)",
    )
    group.add_argument(
        "--n-ctx",
        type=_context_length,
        default=None,
        metavar="TOKENS",
        help="local model: the context in tokens (default: the model's trained context, at "
        f"most {MAX_AUTO_N_CTX:,}, or what Settings chose for that model; this wins over both)",
    )
    group.add_argument(
        "--rate",
        type=float,
        default=None,
        help="scripted backend: tokens per second (0 = as fast as possible)",
    )
    group.add_argument(
        "--tokens",
        type=int,
        default=None,
        help="scripted: answer length in tokens; bench: tokens per generation; selftest: "
        "the answers' length limit",
    )
    group.add_argument(
        "--prompt-rate",
        type=float,
        default=0.0,
        metavar="RATE",
        help="scripted backend: read the prompt first at RATE tokens per second, with the "
        "progress a long prompt shows (default 0: at once)",
    )
    return common


def _add_server_option(parser: argparse.ArgumentParser) -> None:
    """Only where a window streams (the app, and each window of ``compare``)."""
    parser.add_argument(
        "--server",
        metavar="URL",
        help="stream from a server instead: `tkchat serve` or any "
        "OpenAI-compatible one (llama.cpp, Ollama, vLLM, llama-cpp-python)",
    )
    parser.add_argument(
        "--server-token",
        metavar="TOKEN",
        help="the token of a `tkchat serve --allow-remote` server (or a server's API key), "
        "sent as 'Authorization: Bearer'; better in $TKCHAT_SERVER_TOKEN, the default: "
        "a command line shows in ps",
    )


def _window_options() -> argparse.ArgumentParser:
    """Options of a chat window (the app itself, and each window of ``compare``)."""
    window = argparse.ArgumentParser(add_help=False)
    group = window.add_argument_group("window")
    group.add_argument("--mode", type=_mode, default=FIXED, metavar="MODE", help=MODE_HELP)
    group.add_argument("--prompt", help="send this as soon as the model is ready")
    group.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help=f"answer length limit (default: the saved setting, else {Sampling().max_tokens})",
    )
    group.add_argument(
        "--temperature",
        type=float,
        default=None,
        help=f"sampling temperature (default: the saved setting, else {Sampling().temperature})",
    )
    group.add_argument("--seed", type=int, default=None, help="fixed sampling seed")
    group.add_argument("--geometry", help="window size and place, Tk style: 900x700+0+0")
    group.add_argument(
        "--lang",
        choices=["en", "zh"],
        default=None,
        help="interface and lessons language (default: the saved setting, else the system's)",
    )
    group.add_argument("--lessons", action="store_true", help="open the lesson panel")
    group.add_argument(
        "--teach",
        action="store_true",
        help="show the teaching controls (mode, Compare, Lessons, Ping, the health bar) even "
        "if the chat-only view was chosen last time (View menu)",
    )
    group.add_argument(
        "--theme",
        choices=["system", "light", "dark"],
        default=None,
        help="the window's look for this run (default: the one chosen in the View menu, "
        "else the system's light or dark)",
    )
    group.add_argument(
        "--projector",
        action="store_true",
        help="projector mode: large text and figures, for a classroom (View menu, F11)",
    )
    group.add_argument(
        "--no-history",
        action="store_true",
        help="keep nothing on disk and start from the default settings "
        "(conversations and settings are kept in the user's data "
        "folder, or $TKCHAT_DATA_DIR, by default)",
    )
    group.add_argument(
        "--fail-at",
        type=int,
        default=None,
        metavar="K",
        help="scripted backend: crash at token K (to see the error path)",
    )
    group.add_argument(
        "--split-utf8",
        action="store_true",
        help="scripted backend: cut multi-byte characters across tokens",
    )
    group.add_argument(
        "--chaos",
        type=int,
        default=None,
        metavar="SEED",
        help="lesson 13: shuffle, duplicate and delay the events between the model and the "
        "window, reproducibly from SEED (the window puts them back in order)",
    )
    group.add_argument(
        "--lose-event",
        type=int,
        default=None,
        metavar="SEQ",
        help="with --chaos: the first answer loses its event SEQ on the way (the window ends "
        "it with a clear message instead of waiting for ever)",
    )
    return window


def build_parser() -> argparse.ArgumentParser:
    common, window = _model_options(), _window_options()
    parser = argparse.ArgumentParser(
        prog="tkchat",
        parents=[common, window],
        description="An offline chat for local GGUF models whose window never freezes.",
    )
    parser.add_argument("--version", action="version", version=f"tkchat {__version__}")
    _add_server_option(parser)
    parser.add_argument(
        "--toolkit",
        choices=TOOLKITS,
        default="tk",
        help="tk: the chat window (default); qt: the small Qt client on the same pipeline "
        "(modes fixed and no-coalesce; needs the qt extra: pip install -e '.[qt]')",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    bench = commands.add_parser(
        "bench",
        parents=[common],
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

    compare = commands.add_parser(
        "compare",
        parents=[common],
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
    _add_server_option(compare)
    compare.add_argument("--prompt", default=None, help="the prompt both windows send")
    compare.add_argument("--seed", type=int, default=DEFAULT_SEED)
    compare.add_argument("--max-tokens", type=int, default=256)

    selftest = commands.add_parser(
        "selftest",
        parents=[common],
        help="the three questions: clicks, a dying model, scrolling — with real X input",
        description="Ask a real window (on a virtual screen if needed) three questions with "
        "injected X events; exit 0 if all pass, 1 if not.",
    )
    selftest.add_argument("--mode", type=_mode, default=FIXED, metavar="MODE", help=MODE_HELP)
    selftest.add_argument(
        "--toolkit", choices=TOOLKITS, default="tk", help="which window to test (qt: the Qt client)"
    )
    selftest.add_argument(
        "--lang",
        choices=["en", "zh"],
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

    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="serve the model over HTTP: SSE events, an OpenAI-compatible API, a browser client",
        description="Serve the model on this machine: POST /chat streams tkchat's events as "
        "Server-Sent Events, POST /v1/chat/completions speaks OpenAI's shape, and "
        "/ is a browser client. Binds to loopback unless told otherwise.",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; localhost is 127.0.0.1 and ::1; "
        ":: is IPv6 and IPv4). Any non-loopback address needs --allow-remote",
    )
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="let other machines in (with a non-loopback --host): the server then prints a "
        "token that every client must send (Authorization: Bearer), in the URL to open",
    )
    serve.add_argument(
        "--broken",
        action="store_true",
        help="BROKEN ON PURPOSE, for teaching: POST /chat iterates the model on the event loop "
        "(the generator is made on a thread, then read on the loop), so the server stalls",
    )

    watchdog = commands.add_parser(
        "watchdog",
        help="the heartbeat window a chat window opens: its freezes, drawn from outside",
        description="Plot the heartbeat a chat window sends on stdin; started by the app.",
    )
    watchdog.add_argument("--geometry", help="window size and place, Tk style")
    watchdog.add_argument(
        "--state", action="store_true", help="print what is on screen as a JSON line per redraw"
    )
    watchdog.add_argument("--theme", choices=["light", "dark"], default=None)
    _add_models_command(commands)
    _add_recording_commands(commands, common, window)  # record and replay
    return parser


def _add_models_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tkchat models list`` and ``tkchat models get NAME``: the catalogue of Model > Get a
    model…, from the command line."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument(
        "--catalogue",
        type=Path,
        metavar="FILE",
        help="another catalogue file of the same shape (default: $TKCHAT_CATALOGUE, else "
        "the one shipped with tkchat)",
    )
    shared.add_argument("--lang", choices=["en", "zh"], default="en", help="language of messages")
    models = commands.add_parser(
        "models",
        help="list the catalogue of better models, or download one",
        description="The curated models of Model > Get a model…: list them, or download one "
        "into the Hugging Face cache (resumable, checked against its SHA-256).",
    )
    actions = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    actions.add_parser("list", parents=[shared], help="the models, their size and memory needs")
    get = actions.add_parser(
        "get",
        parents=[shared],
        help="download a model (an interrupted download continues where it stopped)",
    )
    get.add_argument("name", help="a name from `tkchat models list`")
    get.add_argument(
        "--endpoint",
        metavar="URL",
        help="hub or mirror to download from, e.g. https://hf-mirror.com in mainland China "
        "(default: $HF_ENDPOINT, else the one chosen in the window, else huggingface.co)",
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    scripted = args.backend == "scripted"
    if args.command in ("record", "replay") or getattr(args, "recording", None):
        return run_recording_command(args)
    if args.command == "bench" and args.lessons:
        from tkchat.measure.lesson_demos import run_lesson_bench

        return run_lesson_bench(
            [lang.strip() for lang in args.lang.split(",") if lang.strip()],
            only=[part.strip() for part in args.only.split(",") if part.strip()],
        )
    if args.command == "bench" and args.serve_loop:
        from tkchat.generate.factory import make_backend
        from tkchat.measure.server_loop import run_server_loop_bench

        backend = make_backend(
            args.backend,
            model=args.model,
            rate=50.0 if args.rate is None else args.rate,
            tokens=args.tokens,
        )
        return run_server_loop_bench(backend, max_tokens=args.tokens or 64, json_out=args.json)
    if args.command == "bench":
        from tkchat.measure.bench import run_bench
        from tkchat.measure.figures import BenchOptions

        modes = MODES if args.modes == "all" else tuple(m.strip() for m in args.modes.split(","))
        unknown = [m for m in modes if m not in MODES and not is_outside_mode(m)]
        if unknown:
            print(f"tkchat bench: unknown mode(s) {', '.join(unknown)}", file=sys.stderr)
            return 2
        if not all(_usable(m, "bench") for m in modes):
            return 2
        return run_bench(
            BenchOptions(
                backend=args.backend,
                model=args.model,
                tokens=args.tokens or (100_000 if scripted else 256),
                rate=5000.0 if args.rate is None else args.rate,
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
    if args.command == "compare" and args.toolkit != "tk":
        problem = _qt_problem(args.broken or "no-coalesce")
        if args.toolkit == "both" and args.broken:
            problem = "--toolkit both compares the two fixed windows: leave out --broken"
        if problem:
            print(f"tkchat compare: {problem}", file=sys.stderr)
            return 2
    if args.command == "compare":
        from tkchat.course.compare import run_compare

        if args.broken is not None and not _usable(args.broken, "compare"):
            return 2
        return run_compare(
            args.broken,
            _child_model_args(args),
            prompt=args.prompt,
            seed=args.seed,
            max_tokens=args.max_tokens,
            toolkit=args.toolkit,
        )
    if args.command == "serve":
        from tkchat.generate.factory import make_backend
        from tkchat.serve.server import ChatServer, run_server

        backend = make_backend(
            args.backend,
            model=args.model,
            rate=50.0 if args.rate is None else args.rate,
            tokens=args.tokens,
            prompt_rate=args.prompt_rate,
            n_ctx=args.n_ctx,
        )
        server_type = ChatServer
        if args.broken:
            from tkchat.antipatterns.blocking_server import BANNER, BlockingChatServer

            print(f"tkchat serve: {BANNER}", file=sys.stderr)
            server_type = BlockingChatServer
        return run_server(
            backend,
            host=args.host,
            port=args.port,
            server_type=server_type,
            allow_remote=args.allow_remote,
        )
    if args.command == "selftest" and args.toolkit == "qt":
        problem = _qt_problem(args.mode)
        if problem:
            print(f"tkchat selftest: {problem}", file=sys.stderr)
            return 2
        from tkchat.course.lessons import default_language
        from tkchat.measure.qt_selftest import run_qt_selftest

        return run_qt_selftest(
            args.mode,
            args.backend,
            args.model,
            rate=2000.0 if args.rate is None else args.rate,
            language=args.lang or default_language(),
            limit_s=args.limit,
            tokens=args.tokens,
        )
    if args.command == "models":
        return run_models(args)
    if args.command == "selftest":
        from tkchat.course.lessons import default_language
        from tkchat.measure.selftest import run_selftest

        return run_selftest(
            args.mode,
            args.backend,
            args.model,
            rate=2000.0 if args.rate is None else args.rate,
            language=args.lang or default_language(),
            limit_s=args.limit,
            tokens=args.tokens,
        )
    if args.command == "watchdog":
        from tkchat.measure.watchdog import run_watchdog

        return run_watchdog(state=args.state, geometry=args.geometry, theme=args.theme)
    if args.toolkit == "qt":
        return run_qt(args)
    return run_app(args)


def run_models(args: argparse.Namespace) -> int:
    """``tkchat models list`` / ``tkchat models get NAME``. The download is the window's: the
    same child process, progress, checks and sentences."""
    from tkchat.models.catalogue import CatalogueError, cache_dir, load_catalogue

    try:
        entries = load_catalogue(args.catalogue)
    except CatalogueError as exc:
        print(f"tkchat: {exc}", file=sys.stderr)
        return 2
    if args.models_command == "list":
        print(_catalogue_table(entries, cache_dir(), args.lang))
        return 0
    return _get_model(args, entries)


def _catalogue_table(entries: list[Any], cache: Path, lang: str) -> str:
    from tkchat.models.catalogue import (
        downloaded_path,
        fits,
        memory_available,
        memory_needed,
    )
    from tkchat.models.download_text import say
    from tkchat.models.finder import describe_size

    free = memory_available()
    rows = [("name", "size", "memory", "languages", "licence", "")]
    for entry in entries:
        needed = memory_needed(entry)
        if downloaded_path(entry, cache) is not None:
            state = say(lang, "catalogue.state.downloaded")
        elif not fits(entry, free) and free is not None:
            state = say(lang, "catalogue.state.too_big", free=describe_size(free))
        else:
            state = ""
        rows.append(
            (
                entry.name,
                describe_size(entry.size) if entry.size else "?",
                describe_size(needed) if needed else "?",
                ",".join(entry.languages),
                entry.licence,
                state,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _get_model(args: argparse.Namespace, entries: list[Any]) -> int:
    import time

    from tkchat.models.catalogue import (
        cache_dir,
        chosen_endpoint,
        find_entry,
        normalize_endpoint,
    )
    from tkchat.models.download_job import DownloadJob, Failed
    from tkchat.models.download_text import describe_failure, describe_progress, say
    from tkchat.store.settings import load_settings

    lang = args.lang
    entry = find_entry(entries, args.name)
    if entry is None:
        print(f"tkchat: {say(lang, 'catalogue.cli.none', name=args.name)}", file=sys.stderr)
        return 2
    if args.endpoint is not None:
        endpoint = normalize_endpoint(args.endpoint)
        if endpoint is None:
            failed = Failed("bad_endpoint", {"endpoint": args.endpoint})
            print(f"tkchat: {describe_failure(lang, failed)}", file=sys.stderr)
            return 2
    else:
        remembered = load_settings()[0].hf_endpoint if "HF_ENDPOINT" not in os.environ else None
        endpoint = chosen_endpoint(remembered)
    job = DownloadJob(entry, endpoint=endpoint, cache=cache_dir())
    job.start()
    shown = ""
    try:
        while (result := job.poll()) is None:
            line = describe_progress(lang, job.progress, endpoint=endpoint, file=entry.file)
            if line != shown and sys.stderr.isatty():
                print("\r" + line.ljust(len(shown)), end="", file=sys.stderr, flush=True)
            shown = line
            time.sleep(0.1)
    except KeyboardInterrupt:
        job.cancel()
        result = job.result
    if shown and sys.stderr.isatty():
        print(file=sys.stderr)
    if isinstance(result, Failed) or result is None:
        failed = result or Failed("failed", {"detail": "no result"})
        sentence = describe_failure(
            lang, failed, endpoint=endpoint, repo=entry.repo, file=entry.file
        )
        print(f"tkchat: {sentence}", file=sys.stderr)
        return 1
    print(say(lang, "catalogue.cli.saved", path=result.path))
    return 0


def _usable(mode: str, command: str) -> bool:
    """A pipeline of one's own is loaded before a command measures or shows it: a file that
    cannot be used gets its one sentence here, not a window or a run that goes wrong."""
    if not is_outside_mode(mode):
        return True
    from tkchat.course.lessons import default_language
    from tkchat.ui.teaching.outside import OutsidePipelineError, load_outside_class
    from tkchat.ui.window.translator import Translator

    try:
        load_outside_class(mode)
    except OutsidePipelineError as exc:
        print(f"tkchat {command}: {exc.sentence(Translator(default_language()))}", file=sys.stderr)
        return False
    return True


def _child_model_args(args: argparse.Namespace) -> list[str]:
    """The model options again, as a command line for a child window."""
    out = ["--backend", args.backend]
    if args.server:
        out += ["--server", args.server]
    if args.server_token:
        out += ["--server-token", args.server_token]
    if args.model:
        out += ["--model", args.model]
    if args.n_ctx is not None:
        out += ["--n-ctx", str(args.n_ctx)]
    if args.rate is not None:
        out += ["--rate", str(args.rate)]
    if args.tokens is not None:
        out += ["--tokens", str(args.tokens)]
    return out


def _chaos(seed: int | None, lose: int | None) -> Chaos | None:
    if seed is None:
        return None
    chaos = Chaos(seed)
    if lose is not None:
        chaos.drop_next(lose)
    return chaos


def window_model(given: str | None, recent: list[str], environ: Mapping[str, str]) -> str | None:
    """The model the chat window loads: ``--model``, else ``$TKCHAT_MODEL`` (None here: the
    backend reads it), else the one chosen last time if it is still there, else None (the
    bundled model)."""
    if given is not None or environ.get(ENV_VAR):
        return given
    return recent[0] if recent and Path(recent[0]).is_file() else None


def _qt_problem(mode: str) -> str | None:
    """Why the Qt client cannot run as asked (None: it can)."""
    from tkchat.qt import QT_MODES, qt_missing

    if mode not in QT_MODES:
        return f"the Qt client has the modes {' and '.join(QT_MODES)}, not {mode}"
    return qt_missing()


def run_qt(args: argparse.Namespace) -> int:
    """``tkchat --toolkit qt``: the Qt window on the same backends (no history, lessons or
    projector: it is the article's client, kept small)."""
    problem = _qt_problem(args.mode)
    unsupported = [
        flag
        for flag, given in (("--lessons", args.lessons), ("--projector", args.projector))
        if given
    ]
    if unsupported:
        problem = f"the Qt client has no {' or '.join(unsupported)}"
    if problem:
        print(f"tkchat: {problem}", file=sys.stderr)
        return 2
    from dataclasses import replace

    from tkchat.conversation import Sampling
    from tkchat.course.lessons import default_language
    from tkchat.generate.factory import make_backend
    from tkchat.qt.launch import QtOptions, run_qt_app

    backend = make_backend(
        args.backend,
        model=args.model,
        rate=50.0 if args.rate is None else args.rate,
        tokens=args.tokens,
        fail_at=args.fail_at,
        split_utf8=args.split_utf8,
        server=args.server,
        server_token=args.server_token,
        n_ctx=args.n_ctx,
    )
    overrides = {
        name: value
        for name, value in (
            ("temperature", args.temperature),
            ("max_tokens", args.max_tokens),
            ("seed", args.seed),
        )
        if value is not None
    }
    return run_qt_app(
        backend,
        QtOptions(
            mode=args.mode,
            sampling=replace(Sampling(), **overrides),
            language=args.lang or default_language(),
            prompt=args.prompt,
            geometry=args.geometry,
            chaos=_chaos(args.chaos, args.lose_event),
        ),
    )


def run_app(args: argparse.Namespace) -> int:
    import tkinter as tk
    from dataclasses import replace

    from tkchat.course.compare import compare_command
    from tkchat.generate.backend import Backend
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.factory import make_backend
    from tkchat.store.settings import AppSettings, load_settings
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.window.chat_window import AppOptions, ChatApp

    try:
        root = tk.Tk(className="tkchat")
    except tk.TclError as exc:
        print(
            f"tkchat: cannot open a window ({exc}). Is there a display? "
            "On a headless machine run it under xvfb-run.",
            file=sys.stderr,
        )
        return 2
    settings, settings_warning = (AppSettings(), None) if args.no_history else load_settings()
    model = window_model(args.model, settings.recent_models, os.environ)
    backend = make_backend(
        args.backend,
        model=model,
        rate=50.0 if args.rate is None else args.rate,
        tokens=args.tokens,
        fail_at=args.fail_at,
        split_utf8=args.split_utf8,
        prompt_rate=args.prompt_rate,
        server=args.server,
        server_token=args.server_token,
        n_ctx=args.n_ctx,
        # the context chosen in Settings for this model file (--n-ctx wins over it)
        context_for=settings.model_contexts.get,
    )
    controller = GenerationController(backend, EventChannel())
    overrides = {
        name: value
        for name, value in (
            ("temperature", args.temperature),
            ("max_tokens", args.max_tokens),
            ("seed", args.seed),
        )
        if value is not None
    }
    sampling = replace(settings.sampling, **overrides)
    model_args = _child_model_args(args)

    def backend_for(kind: str) -> Backend:
        """A lesson's demo asks for a backend: the same model file, or the scripted one."""
        return make_backend(kind, model=model, rate=50.0 if args.rate is None else args.rate)

    app = ChatApp(
        root,
        controller,
        AppOptions(
            sampling=sampling,
            mode=args.mode,
            autosend=args.prompt,
            compare_command=lambda broken: compare_command(broken, model_args),
            language=args.lang,
            backend_factory=backend_for,
            show_lessons=args.lessons,
            history=not args.no_history,
            app_settings=settings,
            persist_settings=not args.no_history,
            projector=args.projector,
            chaos=_chaos(args.chaos, args.lose_event),
            theme=args.theme,
            teach=args.teach,
        ),
    )
    if settings_warning:
        app.storage_banner.show(settings_warning)
    if args.geometry:
        root.geometry(args.geometry)
    controller.load_async()  # the window is up first; the model loads on a worker
    root.mainloop()
    return 0


# -- record and replay: `tkchat record FILE`, `tkchat replay FILE`, `bench --recording` ---------

if TYPE_CHECKING:  # for the annotations only: the window's modules load when a command runs
    import tkinter as tk

    from tkchat.course.recording import Recording
    from tkchat.ui.window.chat_window import AppOptions


def _add_recording_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    window: argparse.ArgumentParser,
) -> None:
    """A run saved to a file and played back elsewhere (tkchat/course/recording.py)."""
    record = commands.add_parser(
        "record",
        parents=[common, window],
        help="save a run (tokens and their times, lag, clicks and keys) to FILE",
        description="Open the window and record its next answer — the model's tokens with "
        "their times, the lag probe's samples, clicks, keys and scrolls, the mode and this "
        "machine's facts — into FILE (JSON Lines), when the answer ends or the window closes.",
    )
    record.add_argument("file", type=Path, metavar="FILE")
    replay = commands.add_parser(
        "replay",
        # options of its own: the default --mode changes below, and a parent's actions are
        # shared with every parser made from it
        parents=[_window_options()],
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
    commands.choices["bench"].add_argument(
        "--recording",
        type=Path,
        metavar="FILE",
        help="with --report DIR: the report of a recorded run (tkchat record) instead of a "
        "new measurement",
    )


def run_recording_command(args: argparse.Namespace) -> int:
    from tkchat.course.lessons import default_language
    from tkchat.course.recording import Recording, RecordingError, load_recording

    lang = (args.lang if args.lang in ("en", "zh") else None) or default_language()
    name = f"tkchat {args.command}"
    if args.command == "record":
        recording = Recording(
            mode=args.mode,
            backend=args.backend,
            prompt=args.prompt or "",
            model=args.model,
            rate=(50.0 if args.rate is None else args.rate) if args.backend == "scripted" else None,
        )
        return _record(args, recording) if _usable(args.mode, "record") else 2
    try:
        recording = load_recording(args.file if args.command == "replay" else args.recording)
    except RecordingError as exc:
        print(f"{name}: {exc.sentence(lang)}", file=sys.stderr)
        return 2
    if args.command == "bench":
        if args.report is None:
            print(f"{name}: --recording FILE needs --report DIR", file=sys.stderr)
            return 2
        from tkchat.measure.recording_report import write_recording_report

        print(write_recording_report(recording, args.report, args.recording))
        return 0
    mode = args.mode or recording.mode
    try:
        check_mode(mode)
    except ValueError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    if args.speed <= 0:
        print(f"{name}: --speed must be above 0 (1 plays at the recorded pace)", file=sys.stderr)
        return 2
    if not _usable(mode, "replay"):
        return 2
    return _replay(args, recording, mode)


def _recording_window_options(args: argparse.Namespace, mode: str) -> AppOptions:
    """The window's options for record and replay: the command line's, nothing remembered
    and nothing kept (a recorded run is a demonstration, not a conversation)."""
    from dataclasses import replace

    from tkchat.conversation import Sampling
    from tkchat.ui.window.chat_window import AppOptions

    overrides = {
        name: value
        for name, value in (
            ("temperature", args.temperature),
            ("max_tokens", args.max_tokens),
            ("seed", args.seed),
        )
        if value is not None
    }
    return AppOptions(
        sampling=replace(Sampling(), **overrides),
        mode=mode,
        autosend=args.prompt,
        language=args.lang,
        show_lessons=args.lessons,
        projector=args.projector,
        theme=args.theme,
        teach=True,
    )


def _open_root(name: str) -> tk.Tk | None:
    import tkinter as tk

    try:
        return tk.Tk(className="tkchat")
    except tk.TclError as exc:
        print(f"{name}: cannot open a window ({exc}). Is there a display?", file=sys.stderr)
        return None


def _record(args: argparse.Namespace, recording: Recording) -> int:
    from tkchat.generate.factory import make_backend
    from tkchat.ui.teaching.recorded_window import open_record_window

    root = _open_root("tkchat record")
    if root is None:
        return 2
    backend = make_backend(
        args.backend,
        model=args.model,
        rate=50.0 if args.rate is None else args.rate,
        tokens=args.tokens,
        fail_at=args.fail_at,
        split_utf8=args.split_utf8,
        prompt_rate=args.prompt_rate,
    )
    options = _recording_window_options(args, args.mode)
    app, recorder = open_record_window(root, backend, options, recording, args.file)
    if args.geometry:
        root.geometry(args.geometry)
    root.mainloop()
    recorder.save()  # the window closed before the answer ended: keep what there is
    if recorder.error is not None:
        print(
            f"tkchat record: {app.t('recording.not_saved', path=args.file, reason=recorder.error)}",
            file=sys.stderr,
        )
        return 1
    print(
        app.t(
            "recording.saved",
            tokens=len(recording.tokens),
            seconds=f"{recording.duration_s:.2f}",
            path=args.file,
        )
    )
    return 0


def _replay(args: argparse.Namespace, recording: Recording, mode: str) -> int:
    from tkchat.ui.teaching.recorded_window import open_replay_window

    root = _open_root("tkchat replay")
    if root is None:
        return 2
    options = _recording_window_options(args, mode)
    open_replay_window(root, recording, options, speed=args.speed)
    if args.geometry:
        root.geometry(args.geometry)
    root.mainloop()
    return 0
