"""``tkchat bench --class``: a short class on the scripted backend, and the accounting that
must be able to say "lost", "mixed up" and "out of order". No figure of speed is asserted:
the bench reports those, from a kept run (docs/runs/class/scripted.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from tests.test_server import HELLO, serve  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402
from tkchat.lab.classroom.run import (  # noqa: E402
    ClassOptions,
    HealthMonitor,
    answer_tokens,
    class_figures,
    run_class_bench,
)
from tkchat.lab.classroom.students import Ask  # noqa: E402


def test_a_short_class_is_all_answered_in_order_with_nothing_lost(tmp_path: Path) -> None:
    """Six students who all arrive at once share one scripted model: every request is
    accounted for, and the health monitor asks the class's server and its idle twin in
    step. How many stood in line, and for how long, is the bench's figure, not this test's
    (the line's own places and order: tests/test_line.py)."""
    out = tmp_path / "class.json"
    options = ClassOptions(
        students=6,
        duration_s=1.5,
        read_s=(0.2, 0.5),
        arrive_s=0.0,
        max_tokens=12,
        long_every=3,  # s00 and s03 ask for 96 tokens: the server's bound lets them
        idle_s=0.3,
        model_args=("--backend", "scripted", "--rate", "100", "--echo"),
        json_path=out,
    )
    assert run_class_bench(options) == 0
    figures = json.loads(out.read_text())
    assert figures["requests"] == figures["answered"] >= options.students
    assert figures["lost"] == figures["mixed_up"] == figures["out_of_order"] == 0
    assert figures["refused"] == {} and figures["not_told_place"] == 0
    assert figures["server_counts"]["joined"] == figures["requests"]
    # the monitor asks once more after the class: at least one reading, the twin's beside it
    assert figures["health_ms"]["count"] > 0 and figures["health_failures"] == 0
    assert figures["health_twin_ms"]["count"] == figures["health_ms"]["count"]
    assert figures["where"]["cores"] and figures["started"]
    rows = figures["per_student"]
    assert [row["student"] for row in rows] == [f"s{i:02d}" for i in range(6)]
    assert sum(row["requests"] for row in rows) == figures["requests"]
    assert all(row["answered"] == row["requests"] >= 1 for row in rows)
    assert all(row["refused"] == row["failed"] == 0 for row in rows)
    assert sum(row["waited"] for row in rows) == figures["waited_in_line"]


def test_every_kth_student_asks_for_long_answers() -> None:
    """``--long-every K``: a class that mixes short and long answers, the first student
    among the long ones; 0 is a class of alike answers."""
    mixed = ClassOptions(students=7, max_tokens=10, long_every=3)
    assert [answer_tokens(mixed, i) for i in range(7)] == [80, 10, 10, 80, 10, 10, 80]
    alike = ClassOptions(students=3, max_tokens=10)
    assert [answer_tokens(alike, i) for i in range(3)] == [10, 10, 10]


def test_a_class_on_a_server_already_running_at_a_port(tmp_path: Path, capsys: Any) -> None:
    """``--port``: the class uses the server the teacher started (here one in this process),
    counts only its own requests there, and prints a line for each student."""
    out = tmp_path / "class.json"
    with serve(ScriptedBackend(rate=100)) as live:
        live.fetch("POST", "/chat", {**HELLO, "max_tokens": 2})  # before the class
        options = ClassOptions(
            students=3,
            duration_s=1.0,
            read_s=(0.2, 0.4),
            arrive_s=0.0,
            max_tokens=8,
            idle_s=0.3,
            echo=False,
            json_path=out,
            port=live.port,
        )
        assert run_class_bench(options) == 0
    figures = json.loads(out.read_text())
    assert figures["server_counts"]["joined"] == figures["requests"] == figures["answered"]
    assert figures["lost"] == figures["mixed_up"] == figures["out_of_order"] == 0
    assert [row["student"] for row in figures["per_student"]] == ["s00", "s01", "s02"]
    assert "--port" in figures["command"]
    printed = capsys.readouterr().out.splitlines()
    table = printed[printed.index("  each student:") + 1 :]
    assert table[0].split()[:3] == ["student", "asked", "answered"]
    for line, row in zip(table[1:], figures["per_student"], strict=True):
        assert line.split()[:4] == [row["student"], str(row["requests"]), str(row["answered"]), "0"]


def test_no_server_at_the_port_is_said_at_once(capsys: Any) -> None:
    from tkchat.lab.bench.sse_bench import free_port

    assert run_class_bench(ClassOptions(students=1, port=free_port())) == 2
    assert "no tkchat serve answers" in capsys.readouterr().out


def _ask(student: str, ticket: int, gen: int, text: str | None = None) -> Ask:
    ask = Ask(student, 1, f"[{student}, question 1] Why?", sent=0.0, status=200, ticket=ticket)
    ask.joined_at, ask.places = 1, [(0.0, 1, None)]
    ask.final, ask.gen, ask.gens, ask.seqs = "done", gen, {gen}, [1, 2]
    ask.text = ask.question + " answer" if text is None else text
    ask.turn_at = 0.1
    return ask


def test_the_accounting_can_say_mixed_up_out_of_order_and_lost() -> None:
    options = ClassOptions(students=3)
    monitor = HealthMonitor(0)
    fine = [_ask("a", 1, 1), _ask("b", 2, 2), _ask("c", 3, 3)]
    assert class_figures(fine, monitor, options)["mixed_up"] == 0
    swapped = [_ask("a", 1, 1, text="[b, question 1] Why? answer"), *fine[1:]]
    assert class_figures(swapped, monitor, options)["mixed_up"] == 1
    shared = [fine[0], _ask("b", 2, 1), fine[2]]  # one generation for two students
    assert class_figures(shared, monitor, options)["mixed_up"] == 2
    late = [_ask("a", 1, 2), _ask("b", 2, 1), fine[2]]  # b came second, was served first
    assert class_figures(late, monitor, options)["out_of_order"] == 1
    cut = _ask("c", 3, 3)
    cut.final = None
    assert class_figures([*fine[:2], cut], monitor, options)["lost"] == 1
    untold = _ask("c", 3, 3)
    untold.places = []  # it joined second in line, and was never told
    assert class_figures([*fine[:2], untold], monitor, options)["not_told_place"] == 1


def test_each_students_figures_are_counted_apart() -> None:
    options = ClassOptions(students=3)  # s00, s01 and s02; s02 never got to ask
    refused = Ask("s01", 1, "[s01, question 1] Why?", sent=0.0, status=429, kind="per_client")
    asks = [_ask("s00", 1, 1), _ask("s01", 2, 2), _ask("s00", 3, 3), refused]
    asks[2].places = []  # s00's second was served at once
    asks[1].places, asks[1].turn_at = [(1.0, 2, 2.0), (3.0, 1, 0.5)], 6.0  # told 2 s at 1 s
    figures = class_figures(asks, HealthMonitor(0), options)
    rows = figures["per_student"]
    keys = ("student", "requests", "answered", "refused", "waited")
    assert [tuple(row[k] for k in keys) for row in rows] == [
        ("s00", 2, 2, 0, 1),
        ("s01", 2, 1, 1, 1),
        ("s02", 0, 0, 0, 0),
    ]
    assert rows[2]["wait_max_s"] is None and rows[2]["first_text_p50_s"] is None
    # told against actual, from the first estimate: its turn came 3 s later than told
    assert [row["eta_error_p50_s"] for row in rows] == [None, 3.0, None]
    assert figures["eta_error_s"]["median_signed"] == 3.0
    assert figures["eta_error_s"]["later_than_told"] == 1


ROOT = Path(__file__).resolve().parent.parent
CLASS_RUNS = sorted((ROOT / "docs" / "runs" / "class").glob("*.json"))


@pytest.mark.parametrize("path", CLASS_RUNS, ids=[p.stem for p in CLASS_RUNS])
def test_the_serve_page_quotes_each_kept_class_run(path: Path) -> None:
    """Provenance, not speed: every kept class run is linked from docs/serve.md, and the
    figures the page quotes for it are the run's (a run kept again needs its page updated)."""
    page = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    run = json.loads(path.read_text(encoding="utf-8"))
    assert f"(runs/class/{path.name})" in page
    assert run["lost"] == run["mixed_up"] == run["out_of_order"] == 0
    wait = run["wait_in_line_s"]
    quoted = f"{wait['p50']:.1f} s / {wait['p90']:.1f} s / {wait['max']:.1f} s"
    assert quoted in page, quoted
    assert f"| {run['requests']}" in page or f"{run['requests']}, **all answered**" in page
