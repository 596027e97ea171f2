"""The window under test, started by the grader (:mod:`.runner`) in a process of its own,
with a home of its own, as an ordinary ``tkchat --mode FILE.py:CLASS`` looks: its setup
comes on stdin (:func:`read_setup`), and the grader's modules leave ``sys.modules`` before
the student's file is imported (:func:`unnamed`; what a file can still see:
docs/security.md).

This is the only process that imports the pipeline's file. It runs the real ``ChatApp``
(made and seen as the lab sees every window: :mod:`tkchat.lab.window`) with its ordinary
main loop, the pipeline timed (:mod:`.instruments`), and reports raw figures to the grader
(:mod:`.observe`); the grade is made, and printed, by the grader. The main loop sends the
watchdog's heartbeat on a second pipe, so that the grader sees from outside when the loop
stands still.

**A main thread stuck in the pipeline.** A ``start`` that never returns keeps the main thread
for ever. When the grader sees the heartbeat silent past the answer's limit it sends
``interrupt``: a SIGINT to the main thread, whose handler raises
:class:`~tkchat.ui.teaching.outside.PipelineInterrupted` — but only inside a Tk callback,
never in the idle main loop — and the window goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import signal
import sys
import threading
import tkinter as tk
from types import FrameType, TracebackType
from typing import IO

from tkchat.generate.controller import GenerationController
from tkchat.i18n import strings
from tkchat.lab.selftest.instruments import (
    CallTimer,
    GcClock,
    QueueProbe,
    SchedClock,
    TimedPipeline,
    TokenMeter,
    selftest_backend,
)
from tkchat.lab.selftest.observe import (
    ChildCommands,
    QuestionWitness,
    Sources,
    WindowReport,
    note_inputs,
    publish_points,
    report_fd,
)
from tkchat.lab.selftest.protocol import Reporter
from tkchat.lab.window import AppOptions, Instruments, TkLabWindow, open_lab_window
from tkchat.modes import is_outside_mode
from tkchat.transport.channel import EventChannel
from tkchat.ui.teaching.outside import (
    TK_THREADS,
    GuardedPipeline,
    OutsidePipelineError,
    PipelineInterrupted,
    TkCalledFromThread,
    in_tk_callback,
    load_outside_class,
)
from tkchat.ui.teaching.watchdog_link import HeartbeatSender

BEAT_MS = 20  # the heartbeat's interval
PUBLISH_MS = 100
GEOMETRY = "900x700+0+0"


SETUP = {
    "mode": None,
    "backend": "scripted",
    "model": None,
    "rate": 2000.0,
    "tokens": None,
    "lang": "en",
    "limit": 20.0,
    "report_fd": None,
    "beat_fd": None,
}


def read_setup(stream: IO[str]) -> argparse.Namespace:
    """The grader's setup: the first line on stdin, one JSON object (:data:`SETUP`'s keys).
    Not on the command line, and not in the environment: the window's command line is an
    ordinary ``tkchat --mode FILE.py:CLASS`` (:mod:`.runner`), and nothing the student's
    code reads in ``sys.argv`` or ``os.environ`` names the grader (docs/security.md)."""
    given = json.loads(stream.readline() or "{}")
    missing = [key for key, default in SETUP.items() if default is None and key not in given]
    if {"mode", "report_fd", "beat_fd"} & set(missing):
        raise SystemExit(f"no setup on stdin (missing {', '.join(missing)})")
    return argparse.Namespace(**{key: given.get(key, default) for key, default in SETUP.items()})


def unnamed() -> None:
    """Before the student's file is imported: the grader's modules leave ``sys.modules``
    (and the ``tkchat.lab`` package's attributes), so that a file looking there for the
    grader finds tkchat's lab and nothing that says it is graded. The modules live on in the
    code already holding them; nothing in the window imports them again."""
    import tkchat.lab

    for name in [name for name in sys.modules if ".selftest" in name]:
        del sys.modules[name]
    with contextlib.suppress(AttributeError):
        delattr(tkchat.lab, "selftest")


class Interrupter:
    """Main thread: a SIGINT the grader asked for ends the Tk callback that is stuck."""

    def __init__(self, commands: ChildCommands, limit_s: float) -> None:
        self.commands = commands
        self.limit_s = limit_s

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """Main thread, between two bytecodes."""
        if not self.commands.interrupt_requested:  # Ctrl+C from a terminal: stop, as always
            raise KeyboardInterrupt
        self.commands.interrupt_requested = False
        if in_tk_callback(frame):  # stuck in a handler: end it; the main loop goes on
            raise PipelineInterrupted(f"{self.limit_s:g} s")
        # otherwise the main loop is free again by now: nothing to interrupt


class CallbackErrors:
    """Main thread: what Tk callbacks raised (the window survives them; the grade counts)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(
        self, kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if isinstance(value, PipelineInterrupted):
            return  # the limit's own doing, noted on its question
        self.errors.append(f"{kind.__name__}: {value}"[:300])


def _quiet_about_stopped_threads() -> None:
    """A thread stopped at a call into Tk is in the grade; its traceback would only repeat
    it on stderr."""
    hook = threading.excepthook

    def quiet(args: threading.ExceptHookArgs) -> object:
        if isinstance(args.exc_value, TkCalledFromThread):
            return None
        return hook(args)

    threading.excepthook = quiet


def pipeline_sources(pipeline: object) -> list[str]:
    """The files of the pipeline under test — its class's, and those of the classes it is
    built on — whose code the sampler counts as "the pipeline": a student's file, and
    tkchat's ``ui/pipeline.py`` for ``--mode fixed`` or a class built on ``FixedPipeline``."""
    inner = pipeline.inner if isinstance(pipeline, GuardedPipeline) else pipeline
    files: list[str] = []
    for cls in type(inner).__mro__[:-1]:  # (not ``object``)
        with contextlib.suppress(TypeError, OSError):
            path = inspect.getsourcefile(cls)
            if path is not None:
                files.append(path)
    return files


def _witness(
    instruments: Instruments, pipeline: object, probe: QueueProbe, out: Reporter
) -> QuestionWitness:
    """The window's own main-thread sampler (:mod:`tkchat.trace`), on in the self-test's
    window whatever its view, with the pipeline's files as "the pipeline": the grader's
    second witness of whose time the late time was."""
    sampler = instruments.sampler
    for path in pipeline_sources(pipeline):
        sampler.book.add_pipeline_file(path)
    instruments.sample_loop(True)
    return QuestionWitness(sampler, probe.samples, out)


def main() -> int:
    """The window's process. 0 after a normal close, 2 when the pipeline cannot be used."""
    args = read_setup(sys.stdin)
    out = report_fd(args.report_fd)
    unnamed()
    if is_outside_mode(args.mode):
        try:
            load_outside_class(args.mode)
        except OutsidePipelineError as exc:
            out.send("problem", text=exc.sentence(strings(args.lang)))
            return 2
    TK_THREADS.install()  # before any thread a pipeline might start
    faults, sampling = selftest_backend(args.mode, args.backend, args.model, args.rate, args.tokens)
    commands = ChildCommands(TokenMeter(faults, out), faults, sampling)
    root = tk.Tk()
    errors = CallbackErrors()
    root.report_callback_exception = errors
    controller = GenerationController(commands.meter, EventChannel())
    options = AppOptions(mode=args.mode, sampling=sampling, language=args.lang)
    window = open_lab_window(root, controller, options)
    instruments = window.instruments
    if instruments.pipeline.name != args.mode:  # the class was not made: said in the window
        out.send("problem", text=instruments.pipeline_problem or args.mode)
        window.close()
        return 2
    run_window(window, commands, errors, out, args)
    return 0


def run_window(
    window: TkLabWindow,
    commands: ChildCommands,
    errors: CallbackErrors,
    out: Reporter,
    args: argparse.Namespace,
) -> None:
    """Main thread: time the pipeline, report, beat, obey, until the grader says close."""
    instruments = window.instruments
    guarded = instruments.pipeline
    timer = CallTimer(SchedClock(), GcClock())
    instruments.pipeline = TimedPipeline(guarded, timer)  # (the same name: the window keeps it)
    tk_before = TK_THREADS.count

    def tk_calls() -> tuple[int, dict[str, str] | None]:
        first = TK_THREADS.first_since(tk_before)
        return TK_THREADS.count - tk_before, None if first is None else first.values()

    raised = [guarded.raised] if isinstance(guarded, GuardedPipeline) else []
    probe = QueueProbe(lambda ms, then: window.later("selftest-probe", ms, then))
    sources = Sources(calls=timer.calls, tk_calls=tk_calls, raised=[*raised, errors.errors])
    sources.probe = probe.samples
    commands.witness = _witness(instruments, guarded, probe, out)
    instruments.root.geometry(GEOMETRY)
    out.send("window", id=instruments.root.winfo_id())  # what the grader pings from outside
    note_inputs(window, sources)
    report = WindowReport(window, commands.meter, commands.faults, sources, out)
    beats = HeartbeatSender(None, args.beat_fd, BEAT_MS)

    def beat() -> None:
        if commands.closing.is_set():
            return  # no beat after the last report (see closing)
        beats.beat()
        if not beats.gone:  # (the grader has gone: nothing more to beat for)
            window.later(HeartbeatSender.TIMER, BEAT_MS, beat)

    def publish() -> None:
        publish_points(window, sources)
        window.later("selftest-publish", PUBLISH_MS, publish)

    def closing() -> None:
        if commands.closing.is_set():
            # No beat after this last report (beat sees the flag): a silence ending later
            # would have no lag sent for it, and the figures check would FAIL.
            report.tick()  # the last of it
            window.close()
        else:
            window.later("selftest-closing", 100, closing)

    probe.start()  # the whole run; the grader takes the spans it needs
    Interrupter(commands, args.limit).install()
    _quiet_about_stopped_threads()
    beat()
    commands.start(window.controller)
    window.controller.load_async()
    publish()
    report.start(commands.closing)
    closing()
    instruments.root.mainloop()
    out.send("bye")


if __name__ == "__main__":
    raise SystemExit(main())
