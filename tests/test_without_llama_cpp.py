"""tkchat without llama-cpp-python: a laptop whose compile of it failed, or a student who needs
only the lessons, the scripted demos, ``--server``, a replay or the grader, gets all of that;
the local model says in one sentence what it needs and how to get it.

The commands run for real, in processes where ``llama_cpp`` cannot be imported (nor numpy,
jinja2 and diskcache, which only it brings): a ``sitecustomize`` first on ``PYTHONPATH``
puts a finder in front of the others that refuses them, as an import of a package that is
not installed fails, and every child those commands start (the grader's pipeline process)
inherits it."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tkinter as tk
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import pump_until, saved_content, wait_until
from tkchat.generate.llama_backend import ENGINE_MISSING, LlamaBackend
from tkchat.generate.scripted import ScriptedBackend
from tkchat.i18n import strings
from tkchat.lab.recording.file import load_recording
from tkchat.store.files import DATABASE_NAME

pytestmark = pytest.mark.gui

REPO = Path(__file__).resolve().parents[1]
WITHOUT = ("llama_cpp", "numpy", "jinja2", "diskcache")  # llama-cpp-python and what it brings
SITECUSTOMIZE = f'''"""tests/test_without_llama_cpp.py: {", ".join(WITHOUT)} not importable."""
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {WITHOUT!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
'''
TOKENS = 40  # the scripted answer's length: short runs


@pytest.fixture
def env(tmp_path: Path, display: None) -> dict[str, str]:
    """The environment of a tkchat without llama-cpp-python: this checkout's tkchat, a data
    folder of its own (no recent model, no model named in ``$TKCHAT_MODEL``)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    paths = [str(site), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    environ = {k: v for k, v in os.environ.items() if k != "TKCHAT_MODEL"}
    environ.update(PYTHONPATH=os.pathsep.join(paths), TKCHAT_DATA_DIR=str(tmp_path / "data"))
    return environ


def tkchat(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``tkchat ARGS`` run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "tkchat", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


@contextmanager
def running(env: dict[str, str], log: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``tkchat ARGS`` running, its stdout and stderr in ``log`` (read while it runs, with no
    pipe to fill); killed at the end if it is still there."""
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tkchat", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(20)


def alive_and(proc: subprocess.Popen[str], log: Path, ready: Callable[[], object]) -> object:
    """For wait_until: ``ready()``, failing at once (with the output) if the process ended."""
    assert proc.poll() is None, log.read_text(encoding="utf-8")
    return ready()


def windows_of(proc: subprocess.Popen[str]) -> list[str]:
    """The visible tkchat windows of ``proc`` (by its pid: another test's window on this
    screen is not the one to quit)."""
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--pid", str(proc.pid), "--name", "^tkchat"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    return found.stdout.split()


def quit_window(proc: subprocess.Popen[str], log: Path) -> str:
    """Ctrl+Q in the process's window (real X input); its output once it has ended."""
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    wait_until(
        lambda: alive_and(proc, log, lambda: windows_of(proc)),
        timeout=60,
        what="the window",
        interval=0.1,
    )
    window = windows_of(proc)[0]
    subprocess.run(["xdotool", "windowfocus", "--sync", window], check=True, timeout=20)
    subprocess.run(["xdotool", "key", "ctrl+q"], check=True, timeout=20)
    assert proc.wait(30) == 0
    return log.read_text(encoding="utf-8")


def saved_answer(data: Path) -> str:
    """The first answer the window saved as complete ("" until there is one)."""
    path = data / DATABASE_NAME
    if not path.exists():
        return ""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                f"SELECT {saved_content(conn)} FROM messages"
                " WHERE role = 'assistant' AND status = 'complete'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return ""  # the app is still creating it: look again
    return str(row[0]) if row is not None and row[0] else ""


def scripted_answer(tokens: int) -> str:
    """What the scripted backend answers in ``tokens`` tokens."""
    return b"".join(ScriptedBackend().pieces(tokens)).decode()


def test_the_finder_refuses_llama_cpp_and_no_module_of_tkchat_needs_it(env: dict[str, str]) -> None:
    """The premise first (llama_cpp really cannot be imported there), then every module of
    tkchat imports without it, and ``tkchat --help`` runs."""
    probe = "import llama_cpp"
    refused = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert refused.returncode == 1 and "No module named 'llama_cpp'" in refused.stderr
    every = (
        "import importlib, pkgutil, tkchat\n"
        "names = [m.name for m in pkgutil.walk_packages(tkchat.__path__, 'tkchat.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names))"
    )
    imported = subprocess.run(
        [sys.executable, "-c", every], env=env, capture_output=True, text=True, timeout=300
    )
    assert imported.returncode == 0, imported.stderr
    assert int(imported.stdout) > 200  # (all of them: the lab, the Qt client, the server …)
    helped = tkchat(env, "--help")
    assert helped.returncode == 0 and "usage: tkchat" in helped.stdout, helped.stderr


def test_the_scripted_window_with_its_lessons_answers_and_quits(
    env: dict[str, str], tmp_path: Path
) -> None:
    args = ["--backend", "scripted", "--rate", "0", "--tokens", str(TOKENS), "--lessons"]
    log = tmp_path / "window.log"
    with running(env, log, *args, "--lang", "en", "--prompt", "hello") as proc:
        data = tmp_path / "data"
        wait_until(
            lambda: alive_and(proc, log, lambda: saved_answer(data)),
            timeout=60,
            what="the scripted answer, saved",
            interval=0.1,
        )
        out = quit_window(proc, log)
    assert saved_answer(data) == scripted_answer(TOKENS)
    assert "Traceback" not in out, out


def test_serve_scripted_answers_and_the_window_streams_from_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """``tkchat serve --backend scripted`` answers a request, and ``tkchat --server URL``
    (the window's remote backend) streams its answer from it."""
    served = ["serve", "--backend", "scripted", "--port", "0", "--rate", "0"]
    server_log = tmp_path / "serve.log"
    with running(env, server_log, *served, "--tokens", str(TOKENS)) as server:
        wait_until(
            lambda: alive_and(server, server_log, lambda: "http://" in server_log.read_text()),
            timeout=60,
            what="tkchat serve to listen",
            interval=0.1,
        )
        url = server_log.read_text().split()[2]  # "tkchat serve: http://127.0.0.1:PORT/ (…)"
        request = urllib.request.Request(
            f"{url}v1/chat/completions",
            data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)["choices"][0]["message"]["content"]
        assert answer == scripted_answer(TOKENS)
        window_log = tmp_path / "window.log"
        with running(env, window_log, "--server", url, "--lang", "en", "--prompt", "hi") as proc:
            data = tmp_path / "data"
            wait_until(
                lambda: alive_and(proc, window_log, lambda: saved_answer(data)),
                timeout=60,
                what="the served answer, saved by the window",
                interval=0.1,
            )
            out = quit_window(proc, window_log)
    assert saved_answer(data) == scripted_answer(TOKENS)
    assert "Traceback" not in out and "Traceback" not in server_log.read_text(), out


def test_a_recording_is_made_and_replayed(env: dict[str, str], tmp_path: Path) -> None:
    """``tkchat record`` (scripted) writes its file when the answer ends; ``tkchat replay``
    opens its window on it."""
    path = tmp_path / "answer.jsonl"
    record = ["record", str(path), "--backend", "scripted", "--rate", "0"]
    record += ["--tokens", str(TOKENS), "--prompt", "hi", "--lang", "en"]
    log = tmp_path / "record.log"
    with running(env, log, *record) as proc:
        wait_until(lambda: alive_and(proc, log, path.exists), timeout=60, what="the recording")
        assert "Traceback" not in quit_window(proc, log)
    assert load_recording(path).text == scripted_answer(TOKENS)
    replay_log = tmp_path / "replay.log"
    with running(env, replay_log, "replay", str(path), "--lang", "en") as proc:
        out = quit_window(proc, replay_log)
    assert "Traceback" not in out, out


def test_the_grader_grades_the_scripted_backend(env: dict[str, str]) -> None:
    """``tkchat selftest`` (its default, the scripted backend) gets to a grade; whether the
    grade passes is this machine's load, not the point here (exit 2: it could not grade)."""
    graded = tkchat(env, "selftest", "--lang", "en", timeout=600)
    assert graded.returncode in (0, 1, 3), graded.stdout + graded.stderr
    assert "Grade:" in graded.stdout and "Traceback" not in graded.stderr, graded.stderr


def test_the_local_model_says_what_it_needs(env: dict[str, str], tmp_path: Path) -> None:
    """``tkchat`` (the bundled model by default) opens its window and says the one sentence,
    without a traceback; so does ``tkchat serve`` (its default backend is the model), which
    then exits: it has nothing to serve."""
    log = tmp_path / "window.log"
    with running(env, log, "--lang", "en") as proc:
        wait_until(
            lambda: alive_and(proc, log, lambda: ENGINE_MISSING in log.read_text()),
            timeout=60,
            what="the sentence",
            interval=0.1,
        )
        out = quit_window(proc, log)
    assert out.strip() == f"tkchat: {ENGINE_MISSING}"
    served = tkchat(env, "serve", "--port", "0")
    assert served.returncode != 0 and served.stdout == ""
    assert served.stderr.strip() == f"tkchat serve: {ENGINE_MISSING}"


def test_the_window_says_it_in_both_languages_and_the_demos_still_run(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the window, the sentence is the status line and the banner, in the user's
    language; a lesson's scripted demo then loads and answers."""
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # an import of it fails, as uninstalled
    app = make_app(LlamaBackend(None))
    english = strings("en")("app.engine_missing")
    assert english == ENGINE_MISSING  # the command line's sentence is the window's
    assert app.status.get() == english and english in app.model_banner.text
    assert app.send_button.instate(["disabled"])
    app.toggle_language()
    assert app.status.get() == strings("zh")("app.engine_missing")
    app.toggle_language()
    app.models.use("scripted", tokens=TOKENS)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted demo backend")
    assert app.flow.send("hello")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the demo's answer")
    assert app.flow.answering.finished[0].reason == "stop"


def test_the_install_without_it_names_every_other_dependency() -> None:
    """docs/using.md's install without llama-cpp-python names every other dependency of
    pyproject.toml (one added there and not in the page would be missing on that install)."""
    project = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", project, re.M | re.S)
    assert block is not None
    specs = re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)  # (tomllib: Python 3.11+)
    names = {re.split(r"[<>=!~;\[ ]", spec)[0] for spec in specs}
    assert "llama-cpp-python" in names and len(names) > 3
    page = (REPO / "docs" / "using.md").read_text(encoding="utf-8")
    command = re.search(r"`pip install --no-deps -e \. && pip install ([^`]+)`", page)
    assert command is not None, "the install without llama-cpp-python is gone from the page"
    assert set(command.group(1).split()) == names - {"llama-cpp-python"}
