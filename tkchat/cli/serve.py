"""``tkchat serve``: the model over HTTP (SSE events, an OpenAI-compatible API, a browser
client), on loopback unless told otherwise, with a fair line in front of it; ``--server``: the
same, in front of another OpenAI-compatible server; ``--broken``: the server that stalls, on
purpose."""

from __future__ import annotations

import argparse
import sys

from tkchat.cli.from_args import backend_options, has_extra
from tkchat.cli.options import Subcommands, add_server_option, model_options
from tkchat.generate.factory import make_backend

NAME = "serve"


def add_parser(commands: Subcommands) -> None:
    serve = commands.add_parser(
        NAME,
        parents=[model_options()],
        help="serve the model over HTTP: SSE events, an OpenAI-compatible API, a browser client",
        description="Serve the model on this machine: POST /chat streams tkchat's events as "
        "Server-Sent Events, POST /v1/chat/completions speaks OpenAI's shape, and "
        "/ is a browser client. Requests wait their turn in a fair line. Binds to loopback "
        "unless told otherwise.",
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
    add_server_option(serve)  # --server: relay to an OpenAI-compatible server instead
    _add_line_options(serve)
    serve.add_argument(
        "--broken",
        action="store_true",
        help="BROKEN ON PURPOSE, for teaching: POST /chat iterates the model on the event loop "
        "(the generator is made on a thread, then read on the loop), so the server stalls",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _add_line_options(serve: argparse.ArgumentParser) -> None:
    from tkchat.serve.line import DEFAULT_LIMITS as LIMITS

    group = serve.add_argument_group("the line (a class sharing one model)")
    group.add_argument(
        "--queue",
        type=_positive,
        default=LIMITS.waiting,
        metavar="N",
        help=f"requests that may wait their turn (default {LIMITS.waiting}); one more gets "
        "503 with Retry-After",
    )
    group.add_argument(
        "--parallel",
        type=_positive,
        default=LIMITS.parallel,
        metavar="N",
        help="answers generated at once (default 1); more only with --server, in front of a "
        "server with as many parallel slots (llama-server -np N, vLLM)",
    )
    group.add_argument(
        "--max-answer-tokens",
        type=_positive,
        default=LIMITS.answer_tokens,
        metavar="N",
        help=f"the longest answer one request gets (default {LIMITS.answer_tokens}), so no one "
        "holds the model for long",
    )
    group.add_argument(
        "--max-prompt-tokens",
        type=_positive,
        default=LIMITS.prompt_tokens,
        metavar="N",
        help=f"the most prompt tokens one request has the model read (default "
        f"{LIMITS.prompt_tokens}): the page's chats lose their oldest turns, a longer /v1 "
        "prompt gets 400; reading a prompt holds the model as answering does",
    )
    group.add_argument(
        "--per-client",
        type=_positive,
        default=LIMITS.per_client,
        metavar="N",
        help=f"requests one client (a browser tab, an OpenAI user) may have waiting or being "
        f"answered (default {LIMITS.per_client}); one more gets 429 with Retry-After",
    )
    group.add_argument(
        "--per-address",
        type=_positive,
        default=LIMITS.per_address,
        metavar="N",
        help=f"requests one other machine may have waiting or being answered, whatever names "
        f"it gives (default {LIMITS.per_address})",
    )


def run(args: argparse.Namespace) -> int:
    if not has_extra("tkchat serve", "serve"):
        return 2
    from tkchat.serve.line import LineLimits
    from tkchat.serve.server import ChatServer, run_server
    from tkchat.serve.static_files import STATIC_DIR, client_missing

    missing = client_missing(STATIC_DIR)
    if missing is not None:
        print(f"tkchat serve: {missing}", file=sys.stderr)

    if args.parallel > 1 and not args.server:
        print(
            "tkchat serve: --parallel needs --server: one local model answers one question at "
            "a time (and on a CPU, two at once would each go at half the speed).",
            file=sys.stderr,
        )
        return 2
    backend = make_backend(backend_options(args, remote=True))
    server_type = ChatServer
    if args.broken:
        from tkchat.antipatterns.blocking_server import BANNER, BlockingChatServer

        print(f"tkchat serve: {BANNER}", file=sys.stderr)
        server_type = BlockingChatServer
    limits = LineLimits(
        waiting=args.queue,
        parallel=args.parallel,
        per_client=args.per_client,
        per_address=args.per_address,
        answer_tokens=args.max_answer_tokens,
        prompt_tokens=args.max_prompt_tokens,
    )
    return run_server(
        backend,
        host=args.host,
        port=args.port,
        server_type=server_type,
        allow_remote=args.allow_remote,
        limits=limits,
    )
