"""``tkchat serve``: the model over HTTP (SSE events, an OpenAI-compatible API, a browser
client), on loopback unless told otherwise; ``--broken``: the server that stalls, on purpose."""

from __future__ import annotations

import argparse
import sys

from tkchat.cli.from_args import backend_from_args, has_extra
from tkchat.cli.options import Subcommands, model_options

NAME = "serve"


def add_parser(commands: Subcommands) -> None:
    serve = commands.add_parser(
        NAME,
        parents=[model_options()],
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


def run(args: argparse.Namespace) -> int:
    if not has_extra("tkchat serve", "serve"):
        return 2
    from tkchat.serve.server import ChatServer, run_server
    from tkchat.serve.static_files import STATIC_DIR, client_missing

    missing = client_missing(STATIC_DIR)
    if missing is not None:
        print(f"tkchat serve: {missing}", file=sys.stderr)

    backend = backend_from_args(args)
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
