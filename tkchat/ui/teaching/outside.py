"""Pipelines written outside tkchat — a student's, for ``lessons/exercises/`` — loaded safely.

``tkchat --mode path/to/mine.py:Pipeline`` (and ``selftest``, ``bench``, ``compare``) runs a
class from a file tkchat has never seen, through the same :class:`~tkchat.ui.pipeline.Pipeline`
protocol the built-in modes implement. A file someone has just written may be anything, and
the window must survive all of it:

1. The file is first imported in a **child process** with a time limit
   (:data:`IMPORT_LIMIT_S`). A top-level endless loop hangs only the child, which is killed;
   a syntax error, an exception, a missing class or a class that does not fit the protocol
   comes back as the facts of one sentence (JSON on the child's stdout). Importing on a
   thread instead could not be cancelled: the thread, and Python's import lock, would stay
   stuck in the loop for the rest of the session.
2. Only a file that passed is imported here, once per process.
3. The object is wrapped in :class:`GuardedPipeline`: an exception out of ``start``, ``show``
   or ``finish`` ends the answer with a clear sentence instead of leaving the window waiting
   for text that will not come, and a Tk call from any thread but the main one
   (:class:`TkThreadGuard`) is said under the answer.

What no wrapper can rescue is a ``start`` or ``show`` that never returns: the main thread is
inside it, so nothing else runs — that *is* the blocking anti-pattern. ``tkchat selftest``
puts a wall-clock limit on each answer and interrupts it there (:class:`PipelineInterrupted`),
so it reports the freeze with its figures instead of waiting for ever.

Loading runs on the main thread (it is short, and waits at most :data:`IMPORT_LIMIT_S` for
the child); the thread guard's hook runs on the threads it watches.
"""

from __future__ import annotations

import _tkinter
import inspect
import json
import os
import re
import subprocess
import sys
import threading
import tkinter
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from tkchat.events import Error
from tkchat.generate.backend import GenerationRequest
from tkchat.i18n import STRINGS
from tkchat.modes import split_outside_mode
from tkchat.threads import is_own
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.transcript.transcript import AnswerView

if TYPE_CHECKING:
    from tkchat.ui.pipeline import Pipeline, PipelineHost

# A student's file imports tkchat (and with it tkinter) in a fresh interpreter: well under a
# second on a quiet machine, a few on a busy one. Ten leaves room and still answers a
# top-level endless loop while the student is looking.
IMPORT_LIMIT_S = 10.0
_REPORT = "TKCHAT-OUTSIDE-CHECK "  # marks the child's answer among whatever the file prints
# What the protocol asks of the class, as the sentence names it when something is missing.
NEEDS = {
    "__init__": "__init__(self, host)",
    "start": "start(self, view, request)",
    "show": "show(self, view, chunks)",
    "finish": "finish(self, view, *, stopped, error)",
    "name": "name: str",
    "broken": "broken: bool",
    "coalesce": "coalesce: bool",
}
_CALLS: dict[str, tuple[tuple[None, ...], dict[str, object]]] = {  # how the window calls them
    "start": ((None, None), {}),
    "show": ((None, None), {}),
    "finish": ((None,), {"stopped": False, "error": None}),
}

Translate = Callable[..., str]  # a Translator, or English strings (the command line's default)


def english(key: str, **values: object) -> str:
    return STRINGS["en"][key].format(**values)


class OutsidePipelineError(ValueError):
    """A pipeline file that cannot be used: ``kind`` names what is wrong (``not_found``,
    ``syntax``, ``raised``, ``hangs``, ``no_class``, ``not_class``, ``protocol``,
    ``init_raised``) and ``values`` fill the sentence :meth:`sentence` says."""

    def __init__(self, kind: str, **values: object) -> None:
        self.kind = kind
        self.values = values
        super().__init__(self.sentence(english))

    def sentence(self, translate: Translate) -> str:
        return translate(f"outside.{self.kind}", **self.values)


class PipelineInterrupted(BaseException):
    """Raised on the main thread inside a callback that did not return in time (by
    ``tkchat selftest``'s wall-clock limit). A BaseException, so that a student's
    ``except Exception`` cannot swallow it and carry on looping."""


class PipelineFailed(Exception):
    """What a failing ``show`` becomes: the 16 ms pump ends the answer with this sentence."""


class TkCalledFromThread(BaseException):
    """Raised in a thread that is not the main one, at its first call into Tk: the call is
    stopped, and so is the thread. A BaseException, so that ``except Exception`` cannot catch
    it and go on touching the window."""


# -- loading -------------------------------------------------------------------------------------


def load_outside_class(mode: str, limit_s: float | None = None) -> type:
    """The class ``mode`` (``path.py:ClassName``) names, checked in a child process first,
    then imported here once; :class:`OutsidePipelineError` says what is wrong. Main thread."""
    parts = split_outside_mode(mode)
    if parts is None:
        raise ValueError(f"{mode!r} is not of the form FILE.py:CLASS")
    path, class_name = Path(parts[0]).expanduser().resolve(), parts[1]
    key = (str(path), class_name)
    if key not in _LOADED:
        _check_in_child(path, class_name, IMPORT_LIMIT_S if limit_s is None else limit_s)
        _LOADED[key] = import_outside_class(path, class_name)
    return _LOADED[key]


_LOADED: dict[tuple[str, str], type] = {}


def _check_in_child(path: Path, class_name: str, limit_s: float) -> None:
    """Import the file in a fresh interpreter that may hang or die without harm."""
    code = "from tkchat.ui.teaching.outside import check_in_child; check_in_child()"
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])  # the same tkchat as this process
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path), class_name],
            capture_output=True,
            text=True,
            timeout=limit_s,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:  # (run() has killed the child)
        raise OutsidePipelineError("hangs", path=path.name, seconds=f"{limit_s:g}") from None
    answers = [line for line in done.stdout.splitlines() if line.startswith(_REPORT)]
    if not answers:  # the child died before it could say why (os._exit, a crash in C)
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise OutsidePipelineError("raised", path=path.name, error=last[:300], line="?")
    report = json.loads(answers[-1][len(_REPORT) :])
    if report["kind"] != "ok":
        raise OutsidePipelineError(report["kind"], **report["values"])


def check_in_child() -> None:
    """The child process: ``python -c ... PATH CLASS``. Prints one report line."""
    path, class_name = Path(sys.argv[1]), sys.argv[2]
    try:
        import_outside_class(path, class_name)
        report: dict[str, Any] = {"kind": "ok", "values": {}}
    except OutsidePipelineError as exc:
        report = {"kind": exc.kind, "values": {k: str(v) for k, v in exc.values.items()}}
    sys.stdout.flush()
    print(_REPORT + json.dumps(report), flush=True)


def import_outside_class(path: Path, class_name: str) -> type:
    """Run the file as a module and return its class, checked against the protocol.
    (Here only after the child survived it; the child itself calls this too.)"""
    if not path.is_file():
        raise OutsidePipelineError("not_found", path=str(path))
    try:
        source = path.read_text(encoding="utf-8")
        code = compile(source, str(path), "exec")
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or "?"
        message = getattr(exc, "msg", None) or str(exc)
        raise OutsidePipelineError("syntax", path=path.name, message=message, line=line) from None
    name = "tkchat_outside_" + re.sub(r"\W", "_", path.stem)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and typing look their module up by name
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))  # its own helper modules, never ahead of the stdlib
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise OutsidePipelineError(
            "raised", path=path.name, error=_error_text(exc), line=_line_in(exc, path)
        ) from None
    found = module.__dict__.get(class_name)
    if found is None:
        classes = sorted(
            key
            for key, value in module.__dict__.items()
            if isinstance(value, type) and value.__module__ == name
        )
        raise OutsidePipelineError(
            "no_class", path=path.name, name=class_name, found=", ".join(classes) or "-"
        )
    if not isinstance(found, type):
        raise OutsidePipelineError("not_class", path=path.name, name=class_name)
    missing = _protocol_gaps(found)
    if missing:
        raise OutsidePipelineError(
            "protocol", path=path.name, name=class_name, missing="; ".join(missing)
        )
    return found


def _protocol_gaps(cls: type) -> list[str]:
    """The methods the window calls that ``cls`` lacks or cannot take as it calls them."""
    missing = []
    try:
        inspect.signature(cls).bind(None)
    except (TypeError, ValueError):
        missing.append(NEEDS["__init__"])
    for method, (args, kwargs) in _CALLS.items():
        function = getattr(cls, method, None)
        try:
            if not callable(function):
                raise TypeError(method)
            inspect.signature(function).bind(None, *args, **kwargs)
        except (TypeError, ValueError):
            missing.append(NEEDS[method])
    return missing


def _attribute_gaps(pipeline: object) -> list[str]:
    """The three attributes the window reads, on the object the class made."""
    return [
        NEEDS[attribute]
        for attribute, kind in (("name", str), ("broken", bool), ("coalesce", bool))
        if not isinstance(getattr(pipeline, attribute, None), kind)
    ]


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def _line_in(exc: BaseException, path: Path | str | None) -> int | str:
    """The line of ``path`` closest to where ``exc`` was raised ("?" if it is not there)."""
    line: int | str = "?"
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        if path is not None and tb.tb_frame.f_code.co_filename == str(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def make_outside_pipeline(
    mode: str, host: PipelineHost, translate: Translate | None = None
) -> GuardedPipeline:
    """A new guarded pipeline for one window. Main thread."""
    cls = load_outside_class(mode)
    path = Path(inspect.getfile(cls))
    try:
        pipeline = cls(host)
    except Exception as exc:
        raise OutsidePipelineError(
            "init_raised",
            path=path.name,
            name=cls.__name__,
            error=_error_text(exc),
            line=_line_in(exc, path),
        ) from None
    missing = _attribute_gaps(pipeline)
    if missing:
        raise OutsidePipelineError(
            "protocol",
            path=path.name,
            name=cls.__name__,
            missing="; ".join(missing),
        )
    TK_THREADS.install()
    return GuardedPipeline(mode, pipeline, host, translate or english, path)


# -- the guard around a running pipeline -----------------------------------------------------------


class GuardedPipeline:
    """A student's pipeline, as the window sees it. Main thread only, like every pipeline.

    ``name`` is the mode (``path.py:Class``), so the window knows it is still the one chosen;
    ``broken`` and ``coalesce`` are the student's own. ``raised`` keeps a sentence for every
    exception that escaped the student's code (the self-test grades it)."""

    def __init__(
        self,
        mode: str,
        inner: Pipeline,
        host: PipelineHost,
        translate: Translate,
        path: Path | None,
    ) -> None:
        self.name = mode
        self.inner = inner
        self.broken = inner.broken
        self.coalesce = inner.coalesce
        self.host = host
        self.t = translate
        self.path = path
        self.raised: list[str] = []
        self._tk_calls_before = TK_THREADS.count

    def _failure(self, method: str, exc: BaseException) -> str:
        if isinstance(exc, PipelineInterrupted):
            sentence = self.t("outside.interrupted", method=method, reason=str(exc))
        else:
            sentence = self.t(
                "outside.raised_in",
                method=method,
                error=_error_text(exc),
                line=_line_in(exc, self.path),
            )
        self.raised.append(sentence)
        return sentence

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self._tk_calls_before = TK_THREADS.count
        try:
            self.inner.start(view, request)
        except (Exception, PipelineInterrupted) as exc:
            message = self._failure("start", exc)
            # Nothing of this answer may keep running or arrive later: stop, unfollow, end.
            self.host.controller.stop()
            self.host.consumer.follow(-1)
            self.host.end_answer(Error(self.host.controller.gen, 0, "pipeline", message))

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        try:
            self.inner.show(view, chunks)
        except (Exception, PipelineInterrupted) as exc:
            # The pump's own path for a tick that fails: stop the worker, end the answer with
            # this sentence shown, keep ticking.
            raise PipelineFailed(self._failure("show", exc)) from exc

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        try:
            self.inner.finish(view, stopped=stopped, error=error)
        except (Exception, PipelineInterrupted) as exc:
            message = self._failure("finish", exc)
            self.host.transcript.finish(
                view, stopped=stopped, error=f"{error} — {message}" if error else message
            )
        first = TK_THREADS.first_since(self._tk_calls_before)
        if first is not None:
            self._tk_calls_before = TK_THREADS.count
            note = "⚠" + NO_BREAK + self.t("outside.tk_thread", **first.values())
            self.host.transcript.add_note(note, "error")


# -- Tk from a worker thread -----------------------------------------------------------------------


@dataclass(frozen=True)
class TkCallFromThread:
    """One call into Tk made by a thread that is not the main one."""

    thread: str  # the thread's name
    call: str  # the Python function that called into Tk, e.g. "Text.insert"
    where: str  # the nearest line outside tkinter and tkchat: the student's own, usually

    def values(self) -> dict[str, str]:
        return {"thread": self.thread, "call": self.call, "where": self.where}


_TKINTER_DIR = str(Path(tkinter.__file__).resolve().parent)
_TKCHAT_DIR = str(Path(__file__).resolve().parents[1])


class TkThreadGuard:
    """Stops every call into Tk (a method of Tcl's interpreter object, ``_tkinter.tkapp``)
    made from a thread other than the main one, and notes it.

    Tk must only be called from the main thread. With a threaded Tcl, tkinter quietly
    forwards such a call to the main thread and waits for it, so the mistake *seems* to work
    — until the main thread is not in ``mainloop`` ("main thread is not in main loop"), or
    the two threads wait for each other. Letting the calls through is not safe either: the
    self-test of ``lessons/exercises/wrong/tk_from_worker.py`` ended in a segmentation fault
    of the whole process in one run out of three while they were only noted. So the first
    such call raises :class:`TkCalledFromThread` in the calling thread, before Tcl sees it.

    Installed with :func:`threading.setprofile`: every thread started afterwards runs this
    hook on its calls (the main thread does not). tkchat's own threads — known by object, the
    threads :func:`tkchat.threads.own_thread` made, never by name — turn it off at their first
    call, so the model's worker pays nothing; any other thread keeps it, whatever it is called
    (a student's ``tkchat-feeder`` too), at the cost of a function call per call it makes. (A
    hook that raises is turned off for its thread; that thread is ending anyway.)"""

    LIMIT = 100  # calls kept; ``count`` goes on counting

    def __init__(self) -> None:
        self.calls: list[TkCallFromThread] = []
        self.count = 0
        self._installed = False
        self._checked = threading.local()

    def install(self) -> None:
        """Main thread, before the threads to watch are started. Idempotent."""
        if not self._installed:
            self._installed = True
            threading.setprofile(self._hook)

    def uninstall(self) -> None:
        """Threads started from now on are not watched (the tests' own threads)."""
        if self._installed:
            self._installed = False
            threading.setprofile(None)

    def first_since(self, count: int) -> TkCallFromThread | None:
        """The first call noted after ``count`` calls (the last one kept, past the limit)."""
        if self.count <= count or not self.calls:
            return None
        return self.calls[min(count, len(self.calls) - 1)]

    def _hook(self, frame: FrameType, event: str, arg: object) -> None:
        """The watched thread."""
        if not getattr(self._checked, "done", False):
            self._checked.done = True
            if is_own(threading.current_thread()):
                sys.setprofile(None)
                return
        if event != "c_call" or not isinstance(getattr(arg, "__self__", None), _tkinter.TkappType):
            return
        call = TkCallFromThread(
            threading.current_thread().name,
            getattr(frame.f_code, "co_qualname", frame.f_code.co_name),
            _where(frame),
        )
        self.count += 1
        if len(self.calls) < self.LIMIT:
            self.calls.append(call)
        raise TkCalledFromThread(english("outside.tk_thread", **call.values()))


def _where(frame: FrameType | None) -> str:
    """``file.py line N`` of the nearest caller outside tkinter and tkchat."""
    first = frame
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith((_TKINTER_DIR, _TKCHAT_DIR)):
            return f"{Path(name).name} line {frame.f_lineno}"
        frame = frame.f_back
    if first is None:
        return "?"
    return f"{Path(first.f_code.co_filename).name} line {first.f_lineno}"


TK_THREADS = TkThreadGuard()  # one per process: threading.setprofile is process-wide


def in_tk_callback(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside a Tk callback (an event handler or an ``after``), as
    opposed to Tk's idle main loop. Main thread."""
    wrapper = tkinter.CallWrapper.__call__.__code__
    while frame is not None:
        if frame.f_code is wrapper:
            return True
        frame = frame.f_back
    return False
