"""The window under test: ``python -m tkchat.lab.selftest.child …``, started by the
grader (:mod:`.runner`) in a process of its own, with a data folder and home of its own.

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
import signal
import threading
import tkinter as tk
from types import FrameType, TracebackType

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


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tkchat.lab.selftest.child")
    parser.add_argument("--mode", required=True)
    parser.add_argument("--backend", default="scripted")
    parser.add_argument("--model")
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--limit", type=float, default=20.0)
    parser.add_argument("--report-fd", type=int, required=True)
    parser.add_argument("--beat-fd", type=int, required=True)
    return parser.parse_args(argv)


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


def main(argv: list[str] | None = None) -> int:
    """The window's process. 0 after a normal close, 2 when the pipeline cannot be used."""
    args = parse(argv)
    out = report_fd(args.report_fd)
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
    note_inputs(window, sources)
    report = WindowReport(window, commands.meter, commands.faults, sources, out)
    beats = HeartbeatSender(None, args.beat_fd, BEAT_MS)

    def beat() -> None:
        beats.beat()
        if not beats.gone:  # (the grader has gone: nothing more to beat for)
            window.later(HeartbeatSender.TIMER, BEAT_MS, beat)

    def publish() -> None:
        publish_points(window, sources)
        window.later("selftest-publish", PUBLISH_MS, publish)

    def closing() -> None:
        if commands.closing.is_set():
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
