"""``python -m tests.tools.hostile``, run as a test: what each attack ends in, and
docs/security.md's rows and sentences.

One real window on the virtual screen is attacked by every case of
:data:`tests.tools.hostile.CASES`, with the script the bench runs, paced for a test
(:data:`tests.tools.hostile.QUICK`: no settling, no baselines, and the trickling ``/health``
against a short handshake deadline). Each case must end as the case list says (its final
event, one of them, a status line of bounded length), nothing may raise or log an error, and
docs/security.md's rows must say what the window showed (see
:func:`tests.tools.hostile_readme.disagreements`). The page's two sentences (``tkchat serve``
under half-open sockets, the page's markdown in Chromium) must quote the set-up the bench
runs and figures within its bounds.

The bounds in time and memory (the window's worst lag, memory growth, the unprotected
baseline far above the worst lag, the trickle ended at the real deadline, /health under
half-open sockets, the page's markdown against ordinary markdown) are the bench's claims:
``python -m tests.tools.hostile`` measures and judges them. Here their verdicts are checked
on constructed figures.
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
from tests.tools.hostile import (
    CASES,
    LAG_BOUND_MS,
    QUICK,
    TRICKLE_ID,
    CaseFigures,
    bound_verdicts,
    hostile_script,
    outcome_verdicts,
    verdicts,
)
from tests.tools.hostile_page import INPUTS, PageFigures, readme_sentence
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
    quoted_page_figures,
    quoted_rows,
    quoted_serve_figures,
    readme_rows,
    serve_disagreements,
)
from tests.tools.hostile_serve import HalfOpenFigures, serve_verdicts
from tests.tools.hostile_serve import readme_row as serve_readme_row
from tests.tools.hostile_server import HostileServer, tkchat_health
from tkchat.generate.controller import GenerationController
from tkchat.generate.remote.backend import RemoteBackend
from tkchat.lab.window import AppOptions, open_lab_window
from tkchat.limits import HANDSHAKE_TIMEOUT_S
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.gui


@dataclass
class HostileRun:
    runs: list[CaseFigures]
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
    ``python -m tests.tools.hostile`` runs them, paced for a test)."""
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
        app = open_lab_window(root, controller, AppOptions(language="en"))
        controller.load_async()
        pump_until(root, lambda: app.model_ready, what="the hostile server's /health")
        runs: list[CaseFigures] = []
        run_script(root, hostile_script(root, app, server, runs, [], [], QUICK), timeout=60)
        app.close()
    logging.getLogger().removeHandler(logged)
    worker_log.setLevel(level)
    gc.collect()  # free the closed window's Tk objects here, on the main thread, not later
    yield HostileRun(runs, errors)


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
def test_the_case_ends_as_the_case_list_says(hostile: HostileRun, case_id: str) -> None:
    figures = [f for f in hostile.runs if f.id == case_id]
    checks = outcome_verdicts(figures)
    assert checks, f"no verdict for {case_id}"
    broken = [f"{name}: {figure}" for name, ok, figure in checks if not ok]
    assert not broken, broken


def test_the_trickle_ended_at_its_own_deadline(hostile: HostileRun) -> None:
    """The short deadline this run gave the client, not the idle timeout (a minute) nor the
    trickle's end (minutes away): the message names the deadline."""
    (trickle,) = [f for f in hostile.runs if f.id == TRICKLE_ID]
    assert trickle.message == (
        f"The server did not finish answering within {QUICK.handshake_timeout:g} s"
    )


def as_the_bench_runs_it(runs: list[CaseFigures]) -> list[CaseFigures]:
    """This run's figures, the trickle's as the real deadline gives them (this run's was
    short): what the pasted rows must say."""
    short = f"within {QUICK.handshake_timeout:g} s"
    return [
        dataclasses.replace(
            f,
            message=f.message.replace(short, f"within {HANDSHAKE_TIMEOUT_S:g} s"),
            seconds=HANDSHAKE_TIMEOUT_S,
        )
        if f.id == TRICKLE_ID
        else f
        for f in runs
    ]


def test_the_security_page_says_what_this_run_shows(hostile: HostileRun) -> None:
    quoted = quoted_rows(SECURITY_PAGE.read_text(encoding="utf-8"))
    runs = as_the_bench_runs_it(hostile.runs)
    problems = disagreements(quoted, runs)
    assert not problems, (
        "\n".join(problems)
        + "\n\nRun `python -m tests.tools.hostile` and paste its rows:\n"
        + readme_rows(runs)
    )


def test_the_security_page_quotes_the_servers_set_up_and_bounds() -> None:
    readme = SECURITY_PAGE.read_text(encoding="utf-8")
    problems = serve_disagreements(readme, quoted_serve_figures(readme))
    assert not problems, "\n".join(problems)


def test_the_security_page_quotes_the_pages_set_up_and_bounds() -> None:
    readme = SECURITY_PAGE.read_text(encoding="utf-8")
    problems = page_disagreements(readme, quoted_page_figures(readme))
    assert not problems, "\n".join(problems)


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


# -- the bench's verdicts on its bounds, on constructed figures ---------------------------------


def _failed(checks: list[tuple[str, bool, str]]) -> list[str]:
    return [name for name, ok, _figure in checks if not ok]


def test_the_bench_holds_a_run_on_this_machine_to_every_bound() -> None:
    assert _failed(verdicts(_a_run())) == []
    assert _failed(serve_verdicts(SERVED)) == []


@pytest.mark.parametrize(
    "drift, failed",
    [
        ({"own_lag_max_ms": LAG_BOUND_MS}, "own lag max"),  # a freeze the window felt
        ({"rss_growth_mb": 64.0}, "RSS"),  # memory that grew with the attack
        ({"baseline_ms": 10.0, "own_lag_max_ms": 5.0}, "unprotected"),  # a baseline too cheap
        ({"final": "done:length"}, "ends as"),
        ({"errors_shown": 2}, "one final event"),
    ],
)
def test_a_case_over_a_bound_fails_its_verdict(drift: dict[str, object], failed: str) -> None:
    run = _a_run()
    broken = [dataclasses.replace(run[0], **drift), run[1]]  # type: ignore[arg-type]
    names = _failed(verdicts(broken))
    assert len(names) == 1 and failed in names[0], names
    outcome_only = _failed(outcome_verdicts(broken))
    assert bool(outcome_only) == (failed in ("ends as", "one final event")), outcome_only


@pytest.mark.parametrize(
    "seconds, at_deadline", [(20.0, True), (24.9, True), (19.0, False), (25.0, False)]
)
def test_the_trickle_is_judged_at_the_real_deadline(seconds: float, at_deadline: bool) -> None:
    trickle = dataclasses.replace(_a_run()[1], seconds=seconds)
    assert (_failed(bound_verdicts([trickle])) == []) is at_deadline
    assert _failed(outcome_verdicts([trickle])) == []  # one failure, the deadline's, either way


@pytest.mark.parametrize(
    "figures",
    [
        dataclasses.replace(SERVED, max_ms=250.0),  # /health too slow at worst
        dataclasses.replace(SERVED, p50_ms=10.0),  # 11 times slower than without the sockets
        dataclasses.replace(SERVED, descriptors=129),  # over the cap
        dataclasses.replace(SERVED, logged=["ERROR: Exception in ASGI application"]),
    ],
)
def test_a_server_over_a_bound_fails_its_verdict(figures: HalfOpenFigures) -> None:
    assert len(_failed(serve_verdicts(figures))) == 1
