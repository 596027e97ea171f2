"""The window under test: ``python -m tkchat.lab.selftest.child …``, started by the
grader (:mod:`.runner`) in a process of its own, with a data folder and home of its own.

This is the only process that imports the pipeline's file. It runs the real ``ChatApp`` with
its ordinary main loop, the pipeline timed (:mod:`.instruments`), and reports raw figures to
the grader (:mod:`.observe`); the grade is made, and printed, by the grader. The main loop
sends the watchdog's heartbeat on a second pipe, so that the grader sees from outside when
the loop stands still.

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
import time
import tkinter as tk
from collections.abc import Sequence
from types import FrameType, TracebackType

from tkchat.events import Done, Error
from tkchat.generate.controller import GenerationController
from tkchat.lab.selftest.instruments import (
    CallTimer,
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
    report_fd,
)
from tkchat.lab.selftest.protocol import Reporter
from tkchat.modes import is_outside_mode
from tkchat.transport.channel import EventChannel
from tkchat.ui.base.translator import Translator
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
from tkchat.ui.window.chat_window import AppOptions, ChatApp

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


def _bind_inputs(app: ChatApp, sources: Sources) -> None:
    """Handlers that note when the driver's scrolls, keys and Stop clicks were handled."""
    scrolls = sources.inputs.setdefault("scroll", [])
    keys = sources.inputs.setdefault("key", [])
    stops = sources.inputs.setdefault("stop", [])

    def stopped(event: tk.Event) -> None:
        """After the button's own binding has run its command (``all`` comes last)."""
        if str(event.widget) == str(app.stop_button):
            answers = app.transcript.answers
            sources.stop_chars.append(len(answers[-1].text) if answers else 0)
            stops.append(time.perf_counter())

    # On every widget ("all"): a pipeline may show its answer in a widget of its own,
    # embedded in the transcript, and that widget then gets the wheel.
    app.root.bind_all("<Button-5>", lambda _e: scrolls.append(time.perf_counter()), add="+")
    app.input.bind("<KeyPress-x>", lambda _e: keys.append(time.perf_counter()), add="+")
    app.root.bind_all("<ButtonRelease-1>", stopped, add="+")


def _publish(app: ChatApp, sources: Sources) -> None:
    """Main thread: where the driver's clicks go — again every :data:`PUBLISH_MS`, since the
    window's layout may still move (its size applied late, a banner shown)."""
    app.scheduler.once("selftest-publish", PUBLISH_MS, lambda: _publish(app, sources))
    if not app.root.winfo_ismapped():
        return

    def centre(widget: tk.Misc) -> tuple[int, int]:
        return (
            widget.winfo_rootx() + widget.winfo_width() // 2,
            widget.winfo_rooty() + widget.winfo_height() // 2,
        )

    sources.points.update(
        ping=centre(app.health.ping_button),
        transcript=centre(app.transcript.text),
        input=centre(app.input),
        stop=centre(app.stop_button),
    )


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


def _witness(app: ChatApp, pipeline: object, probe: QueueProbe, out: Reporter) -> QuestionWitness:
    """The window's own main-thread sampler (:mod:`tkchat.trace`), on in the self-test's
    window whatever its view, with the pipeline's files as "the pipeline": the grader's
    second witness of whose time the late time was."""
    sampler = app.witness.sampler
    for path in pipeline_sources(pipeline):
        sampler.book.add_pipeline_file(path)
    app.witness.force(True)
    return QuestionWitness(sampler, probe.samples, out)


def main(argv: list[str] | None = None) -> int:
    """The window's process. 0 after a normal close, 2 when the pipeline cannot be used."""
    args = parse(argv)
    out = report_fd(args.report_fd)
    t = Translator(args.lang)
    if is_outside_mode(args.mode):
        try:
            load_outside_class(args.mode)
        except OutsidePipelineError as exc:
            out.send("problem", text=exc.sentence(t))
            return 2
    TK_THREADS.install()  # before any thread a pipeline might start
    faults, sampling = selftest_backend(args.mode, args.backend, args.model, args.rate, args.tokens)
    commands = ChildCommands(TokenMeter(faults, out), faults, sampling)
    root = tk.Tk()
    errors = CallbackErrors()
    root.report_callback_exception = errors
    controller = GenerationController(commands.meter, EventChannel())
    app = ChatApp(root, controller, AppOptions(mode=args.mode, sampling=sampling, language=t.lang))
    if app.flow.answering.pipeline.name != args.mode:  # the class was not made: said in the window
        out.send("problem", text=app.pipelines.problem or args.mode)
        app.close()
        return 2
    run_window(app, commands, errors, out, args)
    return 0


class TkWindowSeen:
    """The Tk window as the report reads it (:class:`~.observe.SelftestWindow`): its parts,
    and the answer on its way from its chat flow. Main thread only."""

    def __init__(self, app: ChatApp) -> None:
        self.app = app
        self.transcript = app.transcript
        self.health = app.health
        self.probe = app.probe
        self.controller = app.controller

    @property
    def model_ready(self) -> bool:
        return self.app.flow.model_ready

    @property
    def answer(self) -> object | None:
        return self.app.flow.answering.answer

    @property
    def finished(self) -> Sequence[Done | Error]:
        return self.app.flow.answering.finished

    @property
    def last_error(self) -> str | None:
        return self.app.flow.answering.last_error

    @property
    def final_handled_at(self) -> float | None:
        return self.app.flow.answering.final_handled_at


def run_window(
    app: ChatApp,
    commands: ChildCommands,
    errors: CallbackErrors,
    out: Reporter,
    args: argparse.Namespace,
) -> None:
    """Main thread: time the pipeline, report, beat, obey, until the grader says close."""
    guarded = app.flow.answering.pipeline
    timer = CallTimer(SchedClock())
    # (the same name: the window keeps it)
    app.flow.answering.pipeline = TimedPipeline(app.flow.answering.pipeline, timer)
    tk_before = TK_THREADS.count

    def tk_calls() -> tuple[int, dict[str, str] | None]:
        first = TK_THREADS.first_since(tk_before)
        return TK_THREADS.count - tk_before, None if first is None else first.values()

    raised = [guarded.raised] if isinstance(guarded, GuardedPipeline) else []
    probe = QueueProbe(lambda ms, then: app.scheduler.once("selftest-probe", ms, then))
    sources = Sources(calls=timer.calls, tk_calls=tk_calls, raised=[*raised, errors.errors])
    sources.probe = probe.samples
    commands.witness = _witness(app, guarded, probe, out)
    app.root.geometry(GEOMETRY)
    _bind_inputs(app, sources)
    report = WindowReport(TkWindowSeen(app), commands.meter, commands.faults, sources, out)

    def closing() -> None:
        if commands.closing.is_set():
            report.tick()  # the last of it
            app.close()
        else:
            app.scheduler.once("selftest-closing", 100, closing)

    probe.start()  # the whole run; the grader takes the spans it needs
    Interrupter(commands, args.limit).install()
    _quiet_about_stopped_threads()
    HeartbeatSender(app.scheduler, args.beat_fd, BEAT_MS).start()
    commands.start(app.controller)
    app.controller.load_async()
    _publish(app, sources)
    report.start(commands.closing)
    closing()
    app.root.mainloop()
    out.send("bye")


if __name__ == "__main__":
    raise SystemExit(main())
