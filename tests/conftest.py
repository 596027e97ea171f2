"""Shared fixtures: a virtual screen, a strict Tk root, and waiting helpers.

Like Porcupine's test suite, a test fails if any Tk callback raised, even when the exception
was swallowed by Tk's event loop and the test's own assertions passed.
"""

from __future__ import annotations

import gc
import http.server
import io
import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tkinter as tk
import traceback
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tkchat.events import Done, Error, GenerationEvent
from tkchat.lab.display import ensure_display
from tkchat.store import db as store_db
from tkchat.threads import short_slices
from tkchat.transport.channel import EventChannel

if TYPE_CHECKING:
    from tkchat.ui.window.chat_window import ChatApp


@pytest.fixture(scope="session", autouse=True)
def private_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test (nor an app it starts in a subprocess) touches the user's real history."""
    folder = tmp_path_factory.mktemp("tkchat-data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TKCHAT_DATA_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def display() -> Iterator[None]:
    """Start Xvfb when DISPLAY is unset (it stops when the test session ends)."""
    proc = ensure_display()
    yield
    if proc is not None:
        proc.terminate()
        proc.wait(5)


class CallbackErrors:
    """What Tk callbacks raised: Tk's ``report_callback_exception`` for every root. Each
    error names the test that made the root it ran on: a window a test left behind keeps its
    timers, and the test that next runs Tk's loop is where they fire."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(
        self, root: tk.Tk, exc: type[BaseException], value: BaseException, tb: object
    ) -> None:
        made_in = getattr(root, "made_in_test", None) or "no test"
        told = traceback.format_exception(exc, value, tb)  # type: ignore[arg-type]
        self.errors.append(f"(on a root made in {made_in})\n" + "".join(told))


# Every Tk root of the test session reports here — the ``root`` fixture's, an app's second
# window, a module's shared window, a root a helper makes — because the hook is set on the
# class, not on one instance: a callback that raises fails the test it ran in, whoever made
# the root (Porcupine's rule, for every root).
TK_CALLBACK_ERRORS = CallbackErrors()


def _report_callback_exception(
    root: tk.Tk, exc: type[BaseException], value: BaseException, tb: object
) -> None:
    TK_CALLBACK_ERRORS(root, exc, value, tb)


tk.Tk.report_callback_exception = _report_callback_exception  # type: ignore[method-assign, assignment]


def _take_tk_errors() -> list[str]:
    raised = list(TK_CALLBACK_ERRORS.errors)
    TK_CALLBACK_ERRORS.errors.clear()
    return raised


@pytest.fixture(autouse=True)
def no_tk_callback_raised() -> Iterator[None]:
    """Fail the test if any Tk callback of any root raised while it ran (Tk itself only
    prints such an exception and goes on, so the test's own assertions may all pass). What
    a module's shared window raised while its fixture was set up counts for the first test
    that used it; after the last test, :func:`pytest_sessionfinish` tells."""
    before = _take_tk_errors()
    yield
    raised = before + _take_tk_errors()
    assert not raised, "a Tk callback raised:\n" + "\n".join(raised)


AFTER_LAST_TEST = "tk errors after the last test"  # a worker's report to the controller


@pytest.fixture(autouse=True)
def unwatched_threads() -> Iterator[None]:
    """A student's pipeline, once loaded, watches every thread started after it for Tk calls
    (:data:`tkchat.ui.teaching.outside.TK_THREADS`, process-wide): the next tests' threads
    must not pay for it. Left on, it made a hostile-server test take 29 s instead of 0.3."""
    yield
    from tkchat.ui.teaching.outside import TK_THREADS

    TK_THREADS.uninstall()


CPYTHON_SWITCH_INTERVAL_S = sys.getswitchinterval()  # read before any window changed it


@pytest.fixture(autouse=True)
def default_switch_interval() -> Iterator[None]:
    """Every window hands the GIL over every millisecond (process-wide) and asks for short
    slices for its thread (:func:`tkchat.threads.favour_the_gui_thread`); each test starts
    from CPython's own interval and the kernel's default slice, whichever test (or
    module-scoped window) ran before it in this process."""
    sys.setswitchinterval(CPYTHON_SWITCH_INTERVAL_S)
    short_slices(False)
    yield
    sys.setswitchinterval(CPYTHON_SWITCH_INTERVAL_S)
    short_slices(False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A callback that raised after the last test (a shared window's teardown) fails the run.
    In a pytest-xdist worker, whose exit status the controller ignores, it is also handed
    to the controller (:func:`pytest_testnodedown`); the controller fails the run."""
    raised = _take_tk_errors() + getattr(session.config, "tk_errors_of_workers", [])
    if raised:
        print("\na Tk callback raised after the last test:\n" + "\n".join(raised))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        worker_output = getattr(session.config, "workeroutput", None)
        if worker_output is not None:
            worker_output[AFTER_LAST_TEST] = raised


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: a worker has finished; keep what it said had raised."""
    raised = getattr(node, "workeroutput", {}).get(AFTER_LAST_TEST, [])
    if raised:
        config = node.config
        config.tk_errors_of_workers = [*getattr(config, "tk_errors_of_workers", []), *raised]


def pytest_configure(config: pytest.Config) -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (Python's Docker images set it), every
    ``python -m tkchat`` a test starts compiled the whole package again: about 0.4 s a child,
    and 28 s of the suite's test time. The controller (before it starts the workers, who
    inherit its environment) lets the children cache their bytecode in a folder of this run
    instead, removed at its end: the checkout still gets no ``__pycache__``."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or hasattr(config, "workerinput"):
        return
    folder = tempfile.mkdtemp(prefix="tkchat-test-bytecode-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = folder


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every test module and what it imports, set aside from later collections (see
    :func:`collect_garbage_of_this_test`): none of it becomes garbage."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core, at most eight (each starts its own virtual screen)."""
    return max(1, min(os.cpu_count() or 1, 8))


# Every root a test created stays referenced until the interpreter exits. A Tk interpreter
# freed by a garbage collection that happens to run on a worker thread aborts the process
# (Tcl_AsyncDelete); the app itself never frees its root, so only tests need this. Every root
# made in this process is kept, whoever makes it (a test, a helper, a command run in-process
# such as ``tkchat bench --lessons``): four roots of one test file, dropped, aborted the suite
# in the next file's server thread.
KEEP_ALIVE: list[tk.Tk] = []
_tk_init = tk.Tk.__init__


def _kept_tk_init(self: tk.Tk, *args: Any, **kwargs: Any) -> None:
    _tk_init(self, *args, **kwargs)
    KEEP_ALIVE.append(self)
    self.made_in_test = os.environ.get("PYTEST_CURRENT_TEST")  # type: ignore[attr-defined]


tk.Tk.__init__ = _kept_tk_init  # type: ignore[method-assign]


@pytest.fixture
def root(display: None, caplog: pytest.LogCaptureFixture) -> Iterator[tk.Tk]:
    """A real Tk root; the test fails if anything logged an ERROR while it lived (and, as in
    every test, if a Tk callback raised: :func:`no_tk_callback_raised`)."""
    tk_root = tk.Tk()
    KEEP_ALIVE.append(tk_root)
    yield tk_root
    try:
        if tk_root.winfo_exists():
            pointer_inside(tk_root)
            tk_root.destroy()
    except tk.TclError:
        pass  # the app under test already destroyed it
    collect_garbage_of_this_test()
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not logged, f"errors were logged: {logged}"


def collect_garbage_of_this_test() -> None:
    """Free the test's Tk objects here, on the main thread (a collection on a worker thread
    that frees a Tk object aborts the process); then set what is still alive aside from every
    later collection (:func:`gc.freeze`, as the app does after start-up): a full collection
    walks the whole heap, and a worker's heap grows with every module and every kept root
    (62 ms a collection by the middle of a run, 13 % of the test time). What a later test
    frees by reference counting is still freed; a cycle left alive here is kept for good."""
    gc.collect()
    gc.freeze()


def pointer_inside(tk_root: tk.Tk) -> None:
    """Put the real pointer inside ``tk_root`` before it is destroyed, if it is outside.
    Tk 8.6.13 crashes (SIGSEGV in TkSetFocusWin) at the next ``focus -force`` of a later
    interpreter in this process when a destroyed one's window had the pointer and lost it
    (tests/test_model_picker.py's hover, then test_day_one's window: the suite died). A test
    process has one root after another; the app has one, and never forces the focus."""
    if shutil.which("xdotool") is None or not tk_root.winfo_viewable():
        return
    x, y = tk_root.winfo_pointerxy()
    left, top = tk_root.winfo_rootx(), tk_root.winfo_rooty()
    if left <= x < left + tk_root.winfo_width() and top <= y < top + tk_root.winfo_height():
        return
    subprocess.run(["xdotool", "mousemove", str(left + 1), str(top + 1)], check=False)
    deadline = time.monotonic() + 5  # the move's Enter handled (a backstop, not a timing)
    while tk_root.winfo_pointerxy() != (left + 1, top + 1) and time.monotonic() < deadline:
        tk_root.update()
    tk_root.update()


@pytest.fixture
def scaled(root: tk.Tk) -> Iterator[Callable[[float], None]]:
    """Set ``tk scaling`` (pixels per point) for this test, as an X server started with
    ``-dpi 192`` reports it (``scaled(192 / 72)``). Tk keeps it per display, not per window,
    so later tests' windows would inherit it: it is put back afterwards."""
    before = float(root.tk.call("tk", "scaling"))
    yield lambda scaling: root.tk.call("tk", "scaling", scaling)
    probe = tk.Tk()
    KEEP_ALIVE.append(probe)
    probe.tk.call("tk", "scaling", before)
    probe.destroy()


def free_port() -> int:
    """A port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


def run_to_end(channel: EventChannel, gen: int, timeout: float = 120) -> list[GenerationEvent]:
    """Test thread. Every event of generation ``gen``, up to its final one."""
    events: list[GenerationEvent] = []
    while True:
        event = channel.get(timeout=timeout)
        if getattr(event, "gen", None) != gen:
            continue
        events.append(event)  # type: ignore[arg-type]
        if isinstance(event, (Done, Error)):
            return events


def tkchat_windows() -> list[str]:
    """Test thread: the ids of the visible windows on this worker's screen whose name starts
    with "tkchat" (xdotool)."""
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", "^tkchat"], capture_output=True, text=True
    )
    return found.stdout.split()


def window_name(window: str) -> str:
    """Test thread: the name of the X window ``window`` (xdotool)."""
    return subprocess.run(
        ["xdotool", "getwindowname", window], capture_output=True, text=True
    ).stdout


def wait_until(
    ready: Callable[[], object],
    timeout: float = 10.0,
    what: str = "condition",
    interval: float = 0.01,
) -> None:
    """Test thread, no Tk loop: call ``ready()`` every ``interval`` s until it is true; fail
    after ``timeout`` s naming ``what``. (To let a window work meanwhile, use ``pump_until``.)
    ``ready`` may raise to give up early, e.g. when the process it waits for has died."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def pump_until(
    root: tk.Misc, ready: Callable[[], bool], timeout: float = 20.0, what: str = "condition"
) -> None:
    """Run the Tk event loop (as mainloop would) until ``ready()`` or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        root.update()
        time.sleep(0.002)


def run_script(root: tk.Misc, script: Iterator[Any], timeout: float = 600.0) -> None:
    """Drive a measurement script (``tkchat/lab/bench/script.py``) as the bench's runner does:
    each yielded number is seconds to let the Tk loop run, each callable a condition to run
    it until."""
    for wait in script:
        if callable(wait):
            pump_until(root, wait, timeout=timeout, what="a step of the script")
        else:
            pump_for(root, float(wait))


def layout_problems(root: tk.Misc) -> list[str]:  # noqa: C901 - a debt (tests/test_architecture.py)
    """Every mapped widget that sticks out of its parent, every label or button too narrow
    for its own text, and every two widgets laid out side by side (pack or grid, in the
    same container) that overlap: what a user sees as "cut". Geometry, not pixels."""
    found: list[str] = []

    def box(widget: tk.Misc) -> tuple[int, int, int, int]:
        return (
            widget.winfo_rootx(),
            widget.winfo_rooty(),
            widget.winfo_width(),
            widget.winfo_height(),
        )

    def walk(parent: tk.Misc) -> None:
        px, py, pw, ph = box(parent)
        for child in parent.winfo_children():
            if isinstance(child, tk.Menu) or not child.winfo_ismapped():
                continue
            if child.winfo_toplevel() is child:  # a window of its own (a tip): not laid out
                continue  # in its parent
            x, y, width, height = box(child)
            if x < px or y < py or x + width > px + pw + 1 or y + height > py + ph + 1:
                found.append(
                    f"outside its parent: {child} at {x - px},{y - py} {width}x{height}"
                    f" in {pw}x{ph}"
                )
            labelled = child.winfo_class() in ("TLabel", "Label", "TButton", "Button")
            if labelled and child.winfo_reqwidth() > width + 1:
                found.append(
                    f"text cut: {child} needs {child.winfo_reqwidth()} px, has "
                    f"{width}: {child.cget('text')!r}"
                )
            walk(child)
        found.extend(_overlaps(parent))

    def _overlaps(parent: tk.Misc) -> list[str]:
        laid: dict[str, list[tuple[tk.Misc, tuple[int, int, int, int]]]] = {}
        for child in parent.winfo_children():
            manager = child.winfo_manager() if child.winfo_ismapped() else ""
            if manager not in ("pack", "grid") or isinstance(child, tk.Menu):
                continue
            info = child.pack_info() if manager == "pack" else child.grid_info()
            laid.setdefault(str(info.get("in", parent)), []).append((child, box(child)))
        problems = []
        for siblings in laid.values():
            for index, (first, (x1, y1, w1, h1)) in enumerate(siblings):
                for second, (x2, y2, w2, h2) in siblings[index + 1 :]:
                    if min(w1, h1, w2, h2) <= 1:
                        continue  # an empty strip (the banners' anchor) overlaps nothing
                    if x1 < x2 + w2 and x2 < x1 + w1 and y1 < y2 + h2 and y2 < y1 + h1:
                        problems.append(f"overlap: {first} and {second}")
        return problems

    walk(root)
    return found


def pump_for(root: tk.Misc, seconds: float) -> None:
    """Run the Tk event loop for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        root.update()
        time.sleep(0.002)


@pytest.fixture
def make_app(
    root: tk.Tk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_data_dir: Path
) -> Iterator[Callable[..., object]]:
    """Build a ChatApp around a backend and wait until its model is ready (or failed).

    Each test's windows keep their history in a folder of the test's own, so a chat one
    test saved never shows up (in the sidebar, or as the chat restored at start) in the
    next; a test that wants another folder sets ``TKCHAT_DATA_DIR`` itself (before or after)."""
    if os.environ.get("TKCHAT_DATA_DIR") == str(private_data_dir):
        monkeypatch.setenv("TKCHAT_DATA_DIR", str(tmp_path / "tkchat-data"))
    from tkchat.generate.controller import GenerationController
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.window.chat_window import AppOptions, ChatApp

    apps: list[ChatApp] = []

    def build(backend: object, wait: bool = True, **kwargs: object) -> ChatApp:
        kwargs.setdefault("language", "en")  # the tests read English; the default is the locale
        controller = GenerationController(backend, EventChannel())  # type: ignore[arg-type]
        app = ChatApp(root, controller, AppOptions(**kwargs))  # type: ignore[arg-type]
        controller.load_async()
        apps.append(app)
        if wait:
            pump_until(
                root,
                lambda: app.flow.model_ready or app.send_button.instate(["disabled"]),
                what="the model to load",
            )
        return app

    yield build
    for app in apps:
        if not app.closed:
            app.close()


@pytest.fixture
def fresh_app(display: None) -> Iterator[Callable[..., Any]]:
    """A ChatApp on a NEW Tk root (the app after a restart); like every root, the test fails
    if a Tk callback of that window raised. No language is forced: the app takes it from
    ``app_settings``."""
    from tkchat.generate.controller import GenerationController
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.window.chat_window import AppOptions, ChatApp

    made: list[ChatApp] = []

    def build(backend: object, **kwargs: object) -> ChatApp:
        tk_root = tk.Tk()
        KEEP_ALIVE.append(tk_root)
        controller = GenerationController(backend, EventChannel())  # type: ignore[arg-type]
        app = ChatApp(tk_root, controller, AppOptions(**kwargs))  # type: ignore[arg-type]
        controller.load_async()
        made.append(app)
        pump_until(tk_root, lambda: app.flow.model_ready, timeout=60, what="the model to load")
        return app

    yield build
    for app in made:
        if not app.closed:
            app.close()


# -- a hostile model answer, and what would catch the app touching the network ----------


def png_bytes() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def counting_server() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records every request path it receives."""
    pytest.importorskip("PIL")
    hits: list[str] = []
    png = png_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for serve_forever's next poll: 0.5 s by default, at every test's end.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server.server_address[1], hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests must reach 127.0.0.1 directly, so the control test can see its request."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def io_spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Record (and still perform) every requests.get and PIL Image.open tkhtmlview makes."""
    from tkhtmlview import html_parser

    calls: dict[str, list[str]] = {"get": [], "open": []}
    real_get, real_open = html_parser.requests.get, html_parser.Image.open

    def spy_get(url: str, *args: Any, **kwargs: Any) -> Any:
        calls["get"].append(url)
        kwargs.setdefault("timeout", 5)
        return real_get(url, *args, **kwargs)

    def spy_open(fp: Any, *args: Any, **kwargs: Any) -> Any:
        calls["open"].append(str(fp))
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(html_parser.requests, "get", spy_get)
    monkeypatch.setattr(html_parser.Image, "open", spy_open)
    return calls


def hostile_answer(port: int, local_png: Path) -> str:
    """Model output that tries every way to make the app fetch a URL or open a file."""
    base = f"http://127.0.0.1:{port}"
    return "\n\n".join(
        [
            "Here is your answer.",
            f'<img src="{base}/a.png">',
            f"![x]({base}/b.png)",
            f'Inline <img src="{base}/c.png" width="10"> image and ![y]({local_png}) too.',
            f'<img src="{local_png}">',
            "<script>alert(1)</script>",
            "<a href=javascript:alert(2)>click me</a> and [js](javascript:alert(3))",
            f'<iframe src="{base}/frame"></iframe>',
            f'<p onmouseover="alert(4)" style="font-family: Courier">hover {base}/d.png</p>',
            f"<{base}/autolink.png>",
            f'<div>\n<img src="{base}/e.png">\n</div>',
            f'```html\n<img src="{base}/f.png">\n```',
        ]
    )


# -- storage faults ------------------------------------------------------------------------------


# A message's saved text read with plain SQL: its content, then (while it streams) the parts
# written since, in order (tkchat/store/messages.py). For tests that read the file directly.
SAVED_CONTENT = (
    "content || COALESCE((SELECT group_concat(text, '') FROM (SELECT text FROM message_parts p "
    "WHERE p.message_id = messages.id ORDER BY p.rowid)), '')"
)


def saved_content(conn: sqlite3.Connection) -> str:
    """:data:`SAVED_CONTENT`, or plain ``content`` in a history from before parts (so a
    test can show that the old code failed it for the reason it claims)."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    return SAVED_CONTENT if "message_parts" in names else "content"


class Faults:
    """Errors injected into every file connection the store opens from now on (the window's
    and the writer thread's alike); switch them on and off at any moment."""

    def __init__(self) -> None:
        self.write_error: str | None = None  # raised by INSERT/UPDATE/DELETE statements
        self.connect_error: str | None = None  # raised when connecting


_WRITES = ("INSERT", "UPDATE", "DELETE")


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Faults:
    """A full disk or a read-only file on demand (tests run as root, which ignores chmod)."""
    state = Faults()

    class FaultyConnection(sqlite3.Connection):
        def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:
            if state.write_error and sql.lstrip().upper().startswith(_WRITES):
                raise sqlite3.OperationalError(state.write_error)
            return super().execute(sql, parameters)  # type: ignore[arg-type]

        def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
            if state.write_error and sql.lstrip().upper().startswith(_WRITES):
                raise sqlite3.OperationalError(state.write_error)
            return super().executemany(sql, parameters)

    real_connect = store_db._connect

    def connect(target: str, *, timeout: float, uri: bool = False) -> sqlite3.Connection:
        if target == ":memory:":  # the fallback does not touch the faulty disk
            return real_connect(target, timeout=timeout)
        if state.connect_error:
            raise sqlite3.OperationalError(state.connect_error)
        return sqlite3.connect(
            target,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
            factory=FaultyConnection,
        )

    monkeypatch.setattr(store_db, "_connect", connect)
    return state


@pytest.fixture
def teach_projector_window(root: tk.Tk) -> Iterator[Callable[..., ChatApp]]:
    """The window ``tkchat --teach --projector --lang LANG`` opens (scripted backend; with
    ``projector=False``, ``tkchat --teach --lessons``),
    closed after the test: a window only destroyed with its root kept its loop sampler
    running, and the next tests' frames (a closed dialog's) in that sampler's keeping."""
    from tkchat.cli import build_parser
    from tkchat.cli.window import _app_options
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.scripted import ScriptedBackend
    from tkchat.store.settings import AppSettings
    from tkchat.transport.channel import EventChannel
    from tkchat.ui.window.chat_window import ChatApp

    apps: list[ChatApp] = []

    def build(lang: str, *, projector: bool = True) -> ChatApp:
        shown = "--projector" if projector else "--lessons"  # (--teach --lessons: no projector)
        args = build_parser().parse_args(
            ["--teach", shown, "--backend", "scripted", "--no-history", "--lang", lang]
        )
        controller = GenerationController(ScriptedBackend(rate=0), EventChannel())
        app = ChatApp(root, controller, _app_options(args, AppSettings(), None))
        controller.load_async()
        apps.append(app)
        return app

    yield build
    for app in apps:
        if not app.closed:
            app.close()
