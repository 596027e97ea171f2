"""The options several commands share, as parent parsers, and the types that check them.

Every command module builds its sub-parser from these; each call makes fresh parsers, because a
parent's actions are shared with every parser made from it (``replay`` changes a default)."""

from __future__ import annotations

import argparse
from typing import TypeAlias

from tkchat.conversation import MAX_N_CTX, MIN_N_CTX, Sampling
from tkchat.generate.llama_backend import MAX_AUTO_N_CTX
from tkchat.generate.model_file import ENV_VAR
from tkchat.i18n import LANGUAGES
from tkchat.modes import BROKEN_MODES, CORRECT_MODES, FIXED, OUTSIDE_FORM, check_mode

# What each command module adds its sub-parser to (a name for annotations only: argparse's
# class cannot be subscripted at run time).
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

TOOLKITS = ("tk", "qt")  # qt: the Qt client (tkchat/qt/, the optional `qt` extra)

MODE_HELP = (
    "how answers reach the screen: fixed (default), asyncio done right "
    f"({', '.join(m for m in CORRECT_MODES if m != FIXED)}), one of the deliberately BROKEN "
    f"teaching modes ({', '.join(BROKEN_MODES)}), or a pipeline of your own as {OUTSIDE_FORM} "
    "(lessons/exercises/)"
)


def mode_type(text: str) -> str:
    """A mode's name, or a pipeline of one's own as ``FILE.py:CLASS`` (loaded later, where
    a file that cannot be used gets its sentence)."""
    try:
        check_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


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


class FromSettings:
    """``--gpu-layers`` not given: the window's Settings decide (elsewhere: automatic). Not a
    string, which argparse would pass through the option's type."""


GPU_FROM_SETTINGS = FromSettings()


def gpu_layers_type(text: str) -> int | None:
    """``--gpu-layers``: ``auto`` (None), ``all`` (-1) or a number of layers from 0."""
    from tkchat.generate.hardware import ALL_LAYERS

    word = text.strip().lower()
    if word == "auto":
        return None
    if word == "all":
        return ALL_LAYERS
    if word.isdigit():
        return int(word)
    raise argparse.ArgumentTypeError(f"{text!r}: a number of layers from 0, all, or auto")


def server_url_type(text: str) -> str:
    """``--server``: an http(s) URL (or ``HOST:PORT``), checked now and written the one way
    the app quotes it; a slip is a sentence here, not a failed connection in a window later."""
    from tkchat.generate.remote.http import server_base_url  # http.client: only when given

    try:
        return server_base_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def model_options() -> argparse.ArgumentParser:
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
        "--gpu-layers",
        type=gpu_layers_type,
        default=GPU_FROM_SETTINGS,
        metavar="N|all|auto",
        help="local model: how many layers go to the GPU (0: the CPU only; default auto: all "
        "of them where this llama-cpp-python was built with GPU support, else none; the "
        "window's default is what Settings chose)",
    )
    _scripted_options(group)
    return common


def _scripted_options(group: argparse._ArgumentGroup) -> None:
    """The scripted backend's options (and --tokens, which every command reads)."""
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
    group.add_argument(
        "--echo",
        action="store_true",
        help="scripted backend: begin each answer with the question it answers (a class of "
        "simulated students checks that every answer reached the one who asked)",
    )


def add_server_option(parser: argparse.ArgumentParser) -> None:
    """Only where a window streams (the app, and each window of ``compare``)."""
    parser.add_argument(
        "--server",
        type=server_url_type,
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


def window_options() -> argparse.ArgumentParser:
    """Options of a chat window (the app itself, record and replay)."""
    window = argparse.ArgumentParser(add_help=False)
    group = window.add_argument_group("window")
    group.add_argument("--mode", type=mode_type, default=FIXED, metavar="MODE", help=MODE_HELP)
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
        choices=LANGUAGES,
        default=None,
        help="interface and lessons language (default: the saved setting, else the system's)",
    )
    group.add_argument("--lessons", action="store_true", help="open the lesson panel")
    group.add_argument(
        "--teach",
        action="store_true",
        help="show the teaching controls (mode, Compare, Lessons, Ping, the health bar) even "
        "if the chat-only view was chosen last time (View menu); with --projector, open the "
        "lesson panel too (a class)",
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
    _add_history_and_faults(group)
    return window


def _add_history_and_faults(group: argparse._ArgumentGroup) -> None:
    """The window's last options: keep nothing on disk, and the faults a lesson provokes."""
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
