"""What several commands make of their parsed options: the backend, the sampling, a child
window's command line, and the checks that turn a mode that cannot run into one sentence.

The heavy modules (a model, a window) are imported inside the functions, when a command runs:
``tkchat --help`` must work on a machine without Tk."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tkchat.conversation import Sampling
from tkchat.generate.factory import BackendOptions, LlamaOptions, RemoteOptions, ScriptedOptions
from tkchat.models.stores import stored_label
from tkchat.modes import is_outside_mode
from tkchat.transport.chaos import Chaos

SCRIPTED_RATE = 50.0  # tokens per second of the scripted backend when --rate is not given


def rate_or(args: argparse.Namespace, default: float) -> float:
    """``--rate``, else the command's own default (the bench and the self-test go faster)."""
    return default if args.rate is None else float(args.rate)


def backend_options(
    args: argparse.Namespace,
    *,
    faults: bool = False,
    remote: bool = False,
    model: str | None = None,
    context_for: Callable[[str], int | None] | None = None,
    gpu_layers: int | None = None,
) -> BackendOptions:
    """The backend the model options ask for (:func:`~tkchat.generate.factory.make_backend`
    makes it). ``faults``: the command's window has the scripted faults (``--fail-at``,
    ``--split-utf8``); ``remote``: it streams from ``--server`` when one is given. Both are
    off elsewhere, where these options, given before the command's name, are not the
    command's. ``model``: the window's choice instead of ``--model`` (None: ``--model``);
    ``context_for``: the contexts chosen in Settings; ``gpu_layers``: the Settings' offload,
    used when ``--gpu-layers`` is not given."""
    if remote and args.server:
        return RemoteOptions(args.server, token=args.server_token)
    if args.backend == "scripted":
        return ScriptedOptions(
            rate=rate_or(args, SCRIPTED_RATE),
            tokens=args.tokens,
            prompt_rate=args.prompt_rate,
            echo=args.echo,
            fail_at=args.fail_at if faults else None,
            split_utf8=args.split_utf8 if faults else False,
        )
    path = model or args.model
    return LlamaOptions(
        path,
        n_ctx=args.n_ctx,
        context_for=context_for,
        gpu_layers=gpu_choice(args, gpu_layers),
        label=stored_label(path) if path else None,
    )


def gpu_choice(args: argparse.Namespace, saved: int | None) -> int | None:
    """``--gpu-layers`` when given, else ``saved`` (the window's Settings; None: automatic)."""
    from tkchat.cli.options import GPU_FROM_SETTINGS, FromSettings

    given: int | None | FromSettings = getattr(args, "gpu_layers", GPU_FROM_SETTINGS)
    return saved if isinstance(given, FromSettings) else given


def sampling_from_args(args: argparse.Namespace, base: Sampling | None = None) -> Sampling:
    """``base`` (default: the defaults) with what ``--temperature``, ``--max-tokens`` and
    ``--seed`` give; an option not given keeps the base's value."""
    overrides = {
        name: value
        for name, value in (
            ("temperature", args.temperature),
            ("max_tokens", args.max_tokens),
            ("seed", args.seed),
        )
        if value is not None
    }
    return replace(base or Sampling(), **overrides)


def chaos_from_args(args: argparse.Namespace) -> Chaos | None:
    """``--chaos SEED`` and ``--lose-event SEQ`` as the chaos between model and window."""
    if args.chaos is None:
        return None
    chaos = Chaos(args.chaos)
    if args.lose_event is not None:
        chaos.drop_next(args.lose_event)
    return chaos


def child_model_args(args: argparse.Namespace) -> list[str]:
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
    return out + _gpu_args(args)


def _gpu_args(args: argparse.Namespace) -> list[str]:
    from tkchat.cli.options import GPU_FROM_SETTINGS
    from tkchat.generate.hardware import ALL_LAYERS

    given = getattr(args, "gpu_layers", GPU_FROM_SETTINGS)
    if given is GPU_FROM_SETTINGS:
        return []
    word = "auto" if given is None else "all" if given == ALL_LAYERS else str(given)
    return ["--gpu-layers", word]


def usable(mode: str, command: str) -> bool:
    """A pipeline of one's own is loaded before a command measures or shows it: a file that
    cannot be used gets its one sentence here, not a window or a run that goes wrong."""
    if not is_outside_mode(mode):
        return True
    from tkchat.course.lessons import default_language
    from tkchat.ui.base.translator import Translator
    from tkchat.ui.teaching.outside import OutsidePipelineError, load_outside_class

    try:
        load_outside_class(mode)
    except OutsidePipelineError as exc:
        print(f"tkchat {command}: {exc.sentence(Translator(default_language()))}", file=sys.stderr)
        return False
    return True


def has_extra(what: str, extra: str) -> bool:
    """Whether the optional ``extra`` that ``what`` needs is installed; if not, its one
    sentence (with the ``pip install`` that adds it) on stderr instead of a traceback."""
    from tkchat.installed import extra_missing

    problem = extra_missing(what, extra)
    if problem is not None:
        print(f"tkchat: {problem}", file=sys.stderr)
    return problem is None


def qt_problem(mode: str) -> str | None:
    """Why the Qt client cannot run as asked (None: it can)."""
    from tkchat.qt import QT_MODES, qt_missing

    if mode not in QT_MODES:
        return f"the Qt client has the modes {' and '.join(QT_MODES)}, not {mode}"
    return qt_missing()


def output_problem(path: Path, option: str) -> str | None:
    """Why a command could not write its output file ``path`` (``option`` names it), in one
    sentence; None when it can. Asked before the work, so that a bench of minutes does not
    end in a traceback with its figures lost. A link is refused rather than followed: the
    file it points at would be overwritten."""
    if path.is_symlink():
        return f"{option} {path}: is a link; name the file itself"
    if path.is_dir():
        return f"{option} {path}: is a folder; name a file in it"
    existing = path if path.exists() else path.parent
    while not existing.exists():
        existing = existing.parent  # a folder to be made: judged by the nearest one there
    if not existing.is_dir() and existing != path:
        return f"{option} {path}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK):
        return f"{option} {path}: {existing} cannot be written"
    return None
