"""``python -m tests.tools.hostile``, run as a test: docs/security.md's table stays true.

One real window on the virtual screen is attacked by every case of
:data:`tests.tools.hostile.CASES`, with the same script the bench runs. Each case must keep
the bounds the case list gives it (the lag probe's worst lag, memory, one final event, a
status line of bounded length, the unprotected baseline far above the window's worst lag),
and docs/security.md's rows must say what this run shows (see
:func:`tests.tools.hostile_readme.disagreements` for what "agree" means, and its margins). The
same run measures ``tkchat serve`` under half-open sockets and the page's markdown in
Chromium; the page's sentences on them are held to it the same way.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import subprocess
import sys
import tkinter as tk
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import KEEP_ALIVE, pump_until, run_script
from tests.tools.hostile import CASES, TRICKLE_ID, CaseFigures, hostile_script, verdicts
from tests.tools.hostile_page import INPUTS, PageFigures, page_verdicts, readme_sentence
from tests.tools.hostile_readme import (
    PAGE_BEGIN,
    PAGE_END,
    README_BEGIN,
    README_END,
    README_HEADER,
    SECURITY_PAGE,
    SERVE_BEGIN,
    SERVE_END,
    disagreements,
    page_disagreements,
    quoted_rows,
    readme_rows,
    serve_disagreements,
)
from tests.tools.hostile_serve import HalfOpenFigures, serve_verdicts
from tests.tools.hostile_serve import readme_row as serve_readme_row
from tests.tools.hostile_server import HostileServer, tkchat_health
from tkchat.generate.controller import GenerationController
from tkchat.generate.remote.backend import RemoteBackend
from tkchat.transport.channel import EventChannel
from tkchat.ui.window.chat_window import AppOptions, ChatApp

pytestmark = pytest.mark.gui


@dataclass
class HostileRun:
    runs: list[CaseFigures]
    served: list[HalfOpenFigures]  # tkchat serve under half-open sockets
    pages: list[PageFigures]  # the page's markdown in Chromium (none without a browser)
    errors: list[str]  # ERRORs logged while under attack (a raising Tk callback: conftest)


class _Errors(logging.Handler):
    """Every ERROR logged while installed (an attack may be logged as a WARNING, no more)."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.ERROR)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(f"logged: {record.getMessage()[:300]}")


@pytest.fixture(scope="module")
def hostile(display: None) -> Iterator[HostileRun]:
    """Every case once, in one window on one hostile server (as
    ``python -m tests.tools.hostile``)."""
    root = tk.Tk()
    KEEP_ALIVE.append(root)
    errors: list[str] = []
    logged = _Errors(errors)
    logging.getLogger().addHandler(logged)
    # The worker logs each attack's error whole (64,000 characters): a failure's report would
    # be all "disk on fire". Warnings are not what this test checks; errors still reach it.
    worker_log = logging.getLogger("tkchat.generate.worker")
    level = worker_log.level
    worker_log.setLevel(logging.ERROR)
    with HostileServer({"/health": tkchat_health()}) as server:
        controller = GenerationController(RemoteBackend(server.url), EventChannel())
        app = ChatApp(root, controller, AppOptions(language="en"))
        controller.load_async()
        pump_until(root, lambda: app.flow.model_ready, what="the hostile server's /health")
        runs: list[CaseFigures] = []
        served: list[HalfOpenFigures] = []
        pages: list[PageFigures] = []
        run_script(root, hostile_script(root, app, server, runs, served, pages), timeout=60)
        app.close()
    logging.getLogger().removeHandler(logged)
    worker_log.setLevel(level)
    gc.collect()  # free the closed window's Tk objects here, on the main thread, not later
    yield HostileRun(runs, served, pages, errors)


def test_every_case_ran_and_nothing_raised_or_logged_an_error(hostile: HostileRun) -> None:
    assert [f.id for f in hostile.runs] == [case.id for case in CASES] + [TRICKLE_ID]
    assert not hostile.errors, "\n".join(hostile.errors)


def test_the_hostile_bench_runs_from_a_clone_not_from_tkchat_bench() -> None:
    from tkchat.cli import build_parser

    with pytest.raises(SystemExit):  # `tkchat bench --hostile` is gone
        build_parser().parse_args(["bench", "--hostile"])
    done = subprocess.run(
        [sys.executable, "-m", "tests.tools.hostile", "--help"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "python -m tests.tools.hostile" in done.stdout


@pytest.mark.parametrize("case_id", [case.id for case in CASES] + [TRICKLE_ID])
def test_the_case_keeps_its_bounds(hostile: HostileRun, case_id: str) -> None:
    figures = [f for f in hostile.runs if f.id == case_id]
    checks = verdicts(figures)
    assert checks, f"no verdict for {case_id}"
    broken = [f"{name}: {figure}" for name, ok, figure in checks if not ok]
    assert not broken, broken


def test_the_server_keeps_its_bounds_under_half_open_sockets(hostile: HostileRun) -> None:
    (figures,) = hostile.served
    broken = [f"{name}: {figure}" for name, ok, figure in serve_verdicts(figures) if not ok]
    assert not broken, broken


def test_the_security_page_says_what_the_server_did(hostile: HostileRun) -> None:
    (figures,) = hostile.served
    problems = serve_disagreements(SECURITY_PAGE.read_text(encoding="utf-8"), figures)
    assert not problems, "\n".join(problems) + "\n\nThis run: " + serve_readme_row(figures)


def _page(hostile: HostileRun) -> PageFigures:
    if not hostile.pages:
        pytest.skip("no Playwright or no Chromium: the page's markdown was not measured")
    return hostile.pages[0]


def test_adversarial_markdown_in_the_page_keeps_its_bound(hostile: HostileRun) -> None:
    page = _page(hostile)
    assert set(page.inputs_ms) == set(INPUTS)
    broken = [f"{name}: {figure}" for name, ok, figure in page_verdicts(page) if not ok]
    assert not broken, (broken, page.inputs_ms)


def test_the_security_page_says_what_the_page_did(hostile: HostileRun) -> None:
    page = _page(hostile)
    problems = page_disagreements(SECURITY_PAGE.read_text(encoding="utf-8"), page)
    assert not problems, "\n".join(problems) + "\n\nThis run: " + readme_sentence(page)


def test_the_security_page_says_what_this_run_shows(hostile: HostileRun) -> None:
    quoted = quoted_rows(SECURITY_PAGE.read_text(encoding="utf-8"))
    problems = disagreements(quoted, hostile.runs)
    assert not problems, (
        "\n".join(problems)
        + "\n\nRun `python -m tests.tools.hostile` and paste its rows:\n"
        + readme_rows(hostile.runs)
    )


# -- the agreement check itself can fail (no window needed) ------------------------------------


def _a_run() -> list[CaseFigures]:
    """Figures as a run on this machine gave them (docs/security.md's own rows, read back)."""
    return [
        CaseFigures(
            "line-330k",
            final="done:stop",
            pieces=110,
            answer_chars=330_000,
            line_max=1000,
            lag_max_ms=4.8,
            long_tasks=0,
            rss_growth_mb=1.7,
            baseline_ms=2660.0,
        ),
        CaseFigures(
            TRICKLE_ID,
            final="error:RemoteError",
            message="The server did not finish answering within 20 s",
            errors_shown=1,
            seconds=20.0,
        ),
    ]


def _table(runs: list[CaseFigures]) -> str:
    return f"{README_BEGIN}\n{readme_rows(runs)}\n{README_END}"


def test_rows_written_from_a_run_agree_with_it() -> None:
    runs = _a_run()
    assert readme_rows(runs).startswith(README_HEADER)
    assert disagreements(quoted_rows(_table(runs)), runs) == []


@pytest.mark.parametrize(
    "drift, complaint",
    [
        ({"pieces": 512}, "security.md shows"),  # what the window shows changed
        ({"answer_chars": 330_001}, "security.md shows"),  # a count off by one
        ({"pieces": 111}, "security.md shows"),
        # a baseline that no longer measures the harm: its quoted ratio falls under the bound
        ({"baseline_ms": 10.0, "lag_max_ms": 20.0}, "is under"),
        ({"lag_max_ms": 300.0}, "breaks its bound"),  # a quoted figure over its bound
        ({"final": "done:length"}, "security.md shows"),
    ],
)
def test_a_drifted_figure_is_caught(drift: dict[str, object], complaint: str) -> None:
    live = _a_run()
    quoted_run = [dataclasses.replace(live[0], **drift), live[1]]  # type: ignore[arg-type]
    problems = disagreements(quoted_rows(_table(quoted_run)), live)
    assert any(complaint in p for p in problems), problems


@pytest.mark.parametrize("seconds, agree", [(20.0, True), (20.5, True), (22.0, False)])
def test_a_time_in_what_the_window_shows_agrees_within_five_percent(
    seconds: float, agree: bool
) -> None:
    live = _a_run()
    quoted_run = [live[0], dataclasses.replace(live[1], seconds=seconds)]
    problems = disagreements(quoted_rows(_table(quoted_run)), live)
    assert (problems == []) is agree, problems


def test_a_missing_or_unknown_row_is_caught() -> None:
    live = _a_run()
    problems = disagreements(quoted_rows(_table(live[:1])), live)
    assert any("no security.md row" in p for p in problems), problems
    table = _table(live).replace("one line of 330 KB", "one line of 3 KB")
    problems = disagreements(quoted_rows(table), live)
    assert any("a row for no case" in p for p in problems), problems


SERVED = HalfOpenFigures(400, 0.72, 0.9, 0.59, 1.53, 107, [])


def _sentence(figures: HalfOpenFigures) -> str:
    return f"Measured: {SERVE_BEGIN}\n{serve_readme_row(figures)}{SERVE_END}."


def test_the_servers_sentence_from_a_run_agrees_with_it() -> None:
    assert serve_disagreements(_sentence(SERVED), SERVED) == []


@pytest.mark.parametrize(
    "quoted",
    [
        dataclasses.replace(SERVED, half_open=50),  # a smaller attack than the run's
        dataclasses.replace(SERVED, descriptors=140),  # over the cap
        dataclasses.replace(SERVED, descriptors=90),  # more than 10 % off the run's
        dataclasses.replace(SERVED, max_ms=300.0),  # over the bound
        dataclasses.replace(SERVED, p50_ms=30.0),  # 40 times slower than without
        dataclasses.replace(SERVED, logged=["ERROR: Exception in ASGI application"]),
    ],
)
def test_a_drifted_server_figure_is_caught(quoted: HalfOpenFigures) -> None:
    assert serve_disagreements(_sentence(quoted), SERVED)


PAGE = PageFigures(8.9, {name: 0.5 for name in INPUTS} | {'`"> "` repeated': 1.7}, 0)


def _page_sentence(figures: PageFigures) -> str:
    return f"Measured: {PAGE_BEGIN}\n{readme_sentence(figures)}{PAGE_END}."


def test_the_pages_sentence_from_a_run_agrees_with_it() -> None:
    assert page_disagreements(_page_sentence(PAGE), PAGE) == []


@pytest.mark.parametrize(
    "quoted",
    [
        dataclasses.replace(PAGE, inputs_ms={"a": 20.0}),  # fewer inputs, one over the bound
        dataclasses.replace(PAGE, inputs_ms=PAGE.inputs_ms | {"`[` repeated": 14.0}),
        dataclasses.replace(PAGE, fallbacks=2),
    ],
)
def test_a_drifted_page_figure_is_caught(quoted: PageFigures) -> None:
    assert page_disagreements(_page_sentence(quoted), PAGE)


def test_a_page_time_measured_elsewhere_is_no_drift() -> None:
    """Ordinary markdown took 50 ms where it was quoted and 8.9 ms here: a slower or busier
    machine, not a wrong sentence (the bound is against the same machine's ordinary time)."""
    assert (
        page_disagreements(_page_sentence(dataclasses.replace(PAGE, ordinary_ms=50.0)), PAGE) == []
    )


def test_a_bound_quoted_other_than_the_case_list_is_caught() -> None:
    live = _a_run()
    table = _table(live).replace("(< 250 ms)", "(< 500 ms)")
    problems = disagreements(quoted_rows(table), live)
    assert any("bound" in p and "is not 250" in p for p in problems), problems
