"""``tkchat`` with no command: the chat window (``--toolkit qt``: the small Qt client).

Its options are the top-level parser's; the window's modules are imported when it runs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat import __version__
from tkchat.cli.from_args import (
    SCRIPTED_RATE,
    backend_options,
    chaos_from_args,
    child_model_args,
    gpu_choice,
    qt_problem,
    rate_or,
    sampling_from_args,
)
from tkchat.cli.options import TOOLKITS, add_server_option, model_options, window_options
from tkchat.generate.factory import LlamaOptions, ScriptedOptions, make_backend
from tkchat.generate.model_file import ENV_VAR

if TYPE_CHECKING:  # for the annotations only: the window's modules load when it runs
    import tkinter as tk

    from tkchat.store.settings import AppSettings
    from tkchat.ui.window.chat_window import AppOptions


def make_parser() -> argparse.ArgumentParser:
    """The top-level parser: the window's options; the commands are added to it."""
    parser = argparse.ArgumentParser(
        prog="tkchat",
        parents=[model_options(), window_options()],
        description="An offline chat for local GGUF models whose window never freezes.",
    )
    parser.add_argument("--version", action="version", version=f"tkchat {__version__}")
    add_server_option(parser)
    parser.add_argument(
        "--toolkit",
        choices=TOOLKITS,
        default="tk",
        help="tk: the chat window (default); qt: the small Qt client on the same pipeline "
        "(modes fixed and no-coalesce; needs the qt extra: pip install -e '.[qt]')",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """The chat window, in the toolkit asked for."""
    return run_qt(args) if args.toolkit == "qt" else run_app(args)


def window_model(given: str | None, recent: list[str], environ: Mapping[str, str]) -> str | None:
    """The model the chat window loads: ``--model``, else ``$TKCHAT_MODEL`` (None here: the
    backend reads it), else the one chosen last time if it is still there, else None (the
    bundled model)."""
    if given is not None or environ.get(ENV_VAR):
        return given
    return recent[0] if recent and Path(recent[0]).is_file() else None


def open_root(name: str, advice: str = "") -> tk.Tk | None:
    """The Tk root of a command's window, or None with a sentence on stderr (no display)."""
    import tkinter as tk

    try:
        return tk.Tk(className="tkchat")
    except tk.TclError as exc:
        print(f"{name}: cannot open a window ({exc}). Is there a display?{advice}", file=sys.stderr)
        return None


def run_qt(args: argparse.Namespace) -> int:
    """``tkchat --toolkit qt``: the Qt window on the same backends (no history, lessons or
    projector: it is the article's client, kept small)."""
    problem = qt_problem(args.mode)
    unsupported = [
        flag
        for flag, given in (("--lessons", args.lessons), ("--projector", args.projector))
        if given
    ]
    if unsupported and problem is None:  # the client itself first, as compare says it
        problem = f"the Qt client has no {' or '.join(unsupported)}"
    if problem:
        print(f"tkchat: {problem}", file=sys.stderr)
        return 2
    from tkchat.course.lessons import default_language
    from tkchat.qt.launch import QtOptions, run_qt_app

    return run_qt_app(
        make_backend(backend_options(args, faults=True, remote=True)),
        QtOptions(
            mode=args.mode,
            sampling=sampling_from_args(args),
            language=args.lang or default_language(),
            prompt=args.prompt,
            geometry=args.geometry,
            chaos=chaos_from_args(args),
        ),
    )


def run_app(args: argparse.Namespace) -> int:
    """The Tk chat window: the settings kept (unless ``--no-history``), the model loading on a
    worker once the window is up."""
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.scripted import ScriptedBackend, script_for
    from tkchat.store.settings import AppSettings, load_settings
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.window.chat_window import ChatApp
    from tkchat.ui.window.heap import freeze_what_is_alive

    root = open_root("tkchat", " On a headless machine run it under xvfb-run.")
    if root is None:
        return 2
    settings, settings_warning = (AppSettings(), None) if args.no_history else load_settings()
    model = window_model(args.model, settings.recent_models, os.environ)
    backend = make_backend(
        backend_options(
            args,
            faults=True,
            remote=True,
            model=model,
            # the context chosen in Settings for this model file (--n-ctx wins over it)
            context_for=settings.model_contexts.get,
            gpu_layers=settings.gpu_layers,  # (--gpu-layers wins over it)
        )
    )
    controller = GenerationController(backend, EventChannel())
    app = ChatApp(root, controller, _app_options(args, settings, model))
    if isinstance(backend, ScriptedBackend):  # it answers in the window's language
        backend.text = script_for(app.t.lang)
    if settings_warning:
        app.storage_banner.show(settings_warning)
    if args.geometry:
        root.geometry(args.geometry)
    controller.load_async()  # the window is up first; the model loads on a worker
    freeze_what_is_alive()  # (tkchat/ui/window/heap.py: full collections walk less)
    app.probe.start_once_shown(root)  # the lag counts once it is drawn, not its build
    root.mainloop()
    return 0


def _app_options(args: argparse.Namespace, settings: AppSettings, model: str | None) -> AppOptions:
    """The chat window's options: the command line's over the settings kept."""
    from tkchat.course.compare import compare_command
    from tkchat.ui.window.chat_window import AppOptions

    model_args = child_model_args(args)
    return AppOptions(
        sampling=sampling_from_args(args, settings.sampling),
        mode=args.mode,
        autosend=args.prompt,
        compare_command=lambda broken: compare_command(broken, model_args),
        language=args.lang,
        # a lesson's demo switches to the same model file, or to the scripted backend
        demo_llama=LlamaOptions(model, gpu_layers=gpu_choice(args, settings.gpu_layers)),
        demo_scripted=ScriptedOptions(rate=rate_or(args, SCRIPTED_RATE)),
        # a class: the teaching controls on a projector open the lessons (the class plan)
        show_lessons=args.lessons or (args.teach and args.projector),
        history=not args.no_history,
        app_settings=settings,
        persist_settings=not args.no_history,
        projector=args.projector,
        chaos=chaos_from_args(args),
        theme=args.theme,
        teach=args.teach,
        freeze_heap=True,
    )
