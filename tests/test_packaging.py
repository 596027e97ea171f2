"""The package as a user installs it: the wheel carries everything the app shows or serves,
the course is found through importlib.resources, a missing extra is one sentence, and the
smoke test ``.ci/run`` runs on each Python (tests/tools/smoke.py) is well formed.

The full proof — the wheel installed in fresh venvs on 3.10, 3.11 and 3.13 and run from an
unrelated folder — is .ci/run's; these tests are what can fail here, in a minute.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tkchat import installed
from tkchat.cli import main
from tkchat.cli.exercise import copy_exercise

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "tests" / "tools" / "smoke.py"


def shipped_files() -> list[str]:
    """Every file of the repository the app shows or serves, as the wheel must name it."""
    course = [
        "tkchat/lessons/" + path.relative_to(REPO / "lessons").as_posix()
        for path in (REPO / "lessons").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    page = [
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tkchat" / "serve" / "static").iterdir()
        if path.is_file()
    ]
    return [*course, *page, "tkchat/models/catalogue.json"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    """The wheel built from this tree, as pip builds it (isolated, setuptools from PyPI)."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    [path] = out.glob("tkchat-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_the_wheel_carries_the_course_the_page_and_the_catalogue(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    wanted = shipped_files()
    assert len([name for name in wanted if name.startswith("tkchat/lessons/")]) > 40
    assert [name for name in wanted if name not in names] == []
    assert "tkchat/lessons/__init__.py" in names  # importlib.resources finds it as a package
    assert not [name for name in names if name.startswith(("lessons/", "tests/"))]  # no strays


def test_the_wheel_carries_the_licence_its_metadata_names(wheel: zipfile.ZipFile) -> None:
    """``License-Expression: MIT`` with the MIT text beside it (setuptools takes LICENSE)."""
    names = wheel.namelist()
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    assert "License-Expression: MIT" in wheel.read(metadata).decode()
    licences = [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
    assert licences and b"MIT License" in wheel.read(licences[0])
    assert wheel.read(licences[0]) == (REPO / "LICENSE").read_bytes()


def test_a_source_tree_reads_its_own_lessons() -> None:
    """From a clone (editable, or on PYTHONPATH) the course is the tree's ``lessons/``, not
    whichever checkout an editable install maps ``tkchat.lessons`` to."""
    assert installed.course_root() == REPO / "lessons"
    assert installed.static_root() == REPO / "tkchat" / "serve" / "static"
    assert installed.source_root() == REPO


def test_an_editable_install_maps_the_course_into_the_package() -> None:
    """``pip install -e .`` (the README's install) makes ``tkchat.lessons`` this tree's
    ``lessons/`` for importlib.resources too. Checked where this tree is the one installed
    editable (CI); elsewhere (a worktree beside the installed checkout) skipped."""
    import importlib.metadata
    import importlib.resources
    import json

    # (a build leaves tkchat.egg-info in the tree: the installed one is the one pip recorded)
    urls = [
        json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
        for dist in importlib.metadata.distributions(name="tkchat")
    ]
    if f"file://{REPO}" not in urls:
        pytest.skip(f"this tree is not the editable install ({', '.join(filter(None, urls))})")
    assert Path(str(importlib.resources.files("tkchat.lessons"))) == REPO / "lessons"


def test_an_installed_course_is_found_through_importlib_resources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Outside a source tree (a wheel in site-packages) the course is the package data
    ``tkchat.lessons``; a course that is missing altogether is one sentence."""
    site = tmp_path / "site"
    course = site / "fake_course"
    (course / "en").mkdir(parents=True)
    (course / "__init__.py").write_text('"""A course."""\n')
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(installed, "source_root", lambda: site)  # not a source tree
    monkeypatch.setattr(installed, "COURSE_PACKAGE", "fake_course")
    assert installed.course_root() == course
    monkeypatch.setattr(installed, "COURSE_PACKAGE", "fake_course_that_is_not_there")
    with pytest.raises(FileNotFoundError, match="reinstall it from its wheel"):
        installed.course_root()


HIDE = "import sys, importlib.util; "


def run_hidden(modules: list[str], args: list[str]) -> subprocess.CompletedProcess[str]:
    """``tkchat ARGS`` in a process where ``modules`` cannot be imported (nor found)."""
    hide = "".join(f"sys.modules[{name!r}] = None; " for name in modules)
    find = (
        "real = importlib.util.find_spec; "
        f"importlib.util.find_spec = lambda name, *a: None if name in {modules!r} "
        "else real(name, *a); "
    )
    code = HIDE + hide + find + f"from tkchat.cli import main; raise SystemExit(main({args!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )


@pytest.mark.parametrize(
    ("modules", "args", "sentence"),
    [
        (
            ["starlette", "uvicorn"],
            ["serve", "--backend", "scripted"],
            "tkchat: tkchat serve needs starlette and uvicorn (the serve extra), which are not "
            "installed: pip install -e '.[serve]'",
        ),
        (
            ["matplotlib"],
            ["bench", "--backend", "scripted", "--report", "never-written"],
            "tkchat: tkchat bench --report needs matplotlib (the report extra), which is not "
            "installed: pip install -e '.[report]'",
        ),
        (
            ["uvicorn"],
            ["bench", "--serve-loop", "--backend", "scripted"],
            "tkchat: tkchat bench --serve-loop needs uvicorn (the serve extra), which is not "
            "installed: pip install -e '.[serve]'",
        ),
    ],
)
def test_a_missing_extra_is_one_sentence_naming_its_pip_install(
    modules: list[str], args: list[str], sentence: str
) -> None:
    result = run_hidden(modules, args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == sentence  # (it was a 9-line ModuleNotFoundError; from a
    # clone here: an installed wheel names pip install 'tkchat[serve]', .ci/run's smoke test)
    assert not (REPO / "never-written").exists()  # said before anything ran


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["bench", "--help"]])
def test_the_command_line_works_without_the_serve_extra(args: list[str]) -> None:
    """``pip install tkchat`` (no extras): every command's options are read without Starlette
    (the line's defaults, shown in ``serve --help``, once imported it and broke every
    command, the window's included)."""
    result = run_hidden(["starlette", "uvicorn"], args)
    assert result.returncode == 0, result.stderr
    assert "usage: tkchat" in result.stdout


def test_the_hint_names_the_install_this_tkchat_has(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert installed.install_hint("qt") == "pip install -e '.[qt]'"  # a clone: the README's
    monkeypatch.setattr(installed, "source_root", lambda: tmp_path)  # site-packages: a wheel
    assert installed.install_hint("serve") == "pip install 'tkchat[serve]'"
    with pytest.raises(ValueError, match="unknown extra"):
        installed.install_hint("gpu")


def test_without_llama_cpp_the_hint_names_the_extras_own_packages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``pip install -e '.[serve]'`` would pull llama-cpp-python back in (the compile that
    failed, or that a student skipped): without it, the hint names Starlette and Uvicorn."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        installed.importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "llama_cpp" else real(name, *rest),
    )
    assert installed.install_hint("serve") == "pip install starlette uvicorn"
    assert installed.install_hint("qt") == "pip install PySide6-Essentials"


def test_serve_says_at_start_when_the_page_is_missing(tmp_path: Path) -> None:
    from tkchat.serve.static_files import STATIC_DIR, client_missing

    assert client_missing(STATIC_DIR) is None
    sentence = client_missing(tmp_path)
    assert sentence is not None and "reinstall tkchat" in sentence and "\n" not in sentence


def test_tkchat_exercise_copies_the_exercise_and_overwrites_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine"
    assert main(["exercise", str(target)]) == 0
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    source = REPO / "lessons" / "exercises"
    assert copied == sorted(  # every file of the exercise, the wrong pipelines among them
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.suffix in (".py", ".md") and "__pycache__" not in p.parts
    )
    assert {"README.en.md", "pipeline_template.py", "wrong/blocking_loop.py"} <= set(copied)
    assert f"tkchat --mode {target / 'pipeline_template.py'}:Pipeline" in capsys.readouterr().out
    (target / "pipeline_template.py").write_text("# mine now\n")
    assert main(["exercise", str(target)]) == 1  # a second copy would overwrite the work
    assert (target / "pipeline_template.py").read_text() == "# mine now\n"
    assert "exists already" in capsys.readouterr().err
    with pytest.raises(FileExistsError):
        copy_exercise(target)


# -- the smoke test of .ci/run ------------------------------------------------------------------


def test_the_smoke_test_is_well_formed() -> None:
    """It runs by path with any Python (no import of the repository's tests), says what it
    does, refuses to run without a wheel and a Python, and checks the extras tkchat has."""
    source = SMOKE.read_text(encoding="utf-8")
    compile(source, str(SMOKE), "exec")
    assert "from tests" not in source and "import tests" not in source
    helped = subprocess.run(
        [sys.executable, str(SMOKE), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and "--wheel" in helped.stdout and "--python" in helped.stdout
    refused = subprocess.run([sys.executable, str(SMOKE)], capture_output=True, text=True)
    assert refused.returncode == 2 and "--wheel and --python are needed" in refused.stderr
    sys.path.insert(0, str(SMOKE.parent))
    try:
        smoke = importlib.import_module("smoke")
    finally:
        sys.path.remove(str(SMOKE.parent))
    assert {extra for _args, extra in smoke.EXTRA_CHECKS} == set(installed.EXTRAS)
    lessons = len(list((REPO / "lessons" / "en").glob("[0-9][0-9]-*.md")))
    assert lessons == smoke.LESSONS
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python tests/tools/smoke.py --wheel" in ci


GRADED = """\
  PASS  4. Stop, pressed mid-answer: Stop handled 17 ms after the click
        stop_ms 17.4, text_after 0, tokens_after 0, loop_left_ms -15.7
  FAIL  event-loop lag p99 <= 25.77 ms: 48.99 ms
  FAIL  no call into the pipeline holds the event loop over 16 ms (the bench's lag max): 26.88 ms
  PASS  Tk called only from the main thread: none from another thread
  PASS  nothing raised out of the pipeline: nothing
  PASS  the window's own figures agree with what was seen from outside (...): 0 ms
Grade: FAIL — 2 of 12 checks fail
"""


def test_the_smoke_test_fails_a_selftest_on_its_mechanisms_and_leaves_timing_to_the_bench() -> None:
    """A grade that failed only on lag (a shared machine) is the bench's to judge; a call into
    Tk from another thread, an exception, a token after Stop, or a check missing from the
    report fails the smoke test."""
    sys.path.insert(0, str(SMOKE.parent))
    try:
        smoke = importlib.import_module("smoke")
    finally:
        sys.path.remove(str(SMOKE.parent))
    assert smoke.mechanism_failures(GRADED.splitlines()) == []
    for broken in (
        GRADED.replace("PASS  Tk called", "FAIL  Tk called"),
        GRADED.replace("PASS  nothing raised", "FAIL  nothing raised"),
        GRADED.replace("tokens_after 0,", "tokens_after 12,"),
        GRADED.replace("text_after 0,", "text_after 0.5,"),
        "\n".join(line for line in GRADED.splitlines() if "seen from outside" not in line),
    ):
        assert smoke.mechanism_failures(broken.splitlines()), broken


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = readme.split("## Run the tests", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert command.startswith("pip install -e '.[test]'") and command.endswith("python -m pytest")
    ci_lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci_lines


def test_the_smoke_tests_checks_are_named_as_the_grader_names_them() -> None:
    """The smoke test finds its mechanism checks in the grade by their names: a label the
    grader renamed (the figures' check, when the X server became its second witness) made
    every wheel's smoke test fail with 'no line for …'."""
    from tests.tools.smoke import MECHANISM_CHECKS
    from tkchat.i18n.selftest import STRINGS

    labels = [text for key, text in STRINGS["en"].items() if key.startswith("selftest.target.")]
    for name in MECHANISM_CHECKS:
        assert any(label.startswith(name) for label in labels), name
