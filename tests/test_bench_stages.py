"""The pipeline view's cost in the bench (issue 36): the row ``fixed-stages`` beside
``fixed``, its answer streamed with the stage view open and in turn with the fixed ones, held
to the fixed pipeline's targets and to the same run's ``fixed``. Constructed figures and a
stand-in bench: no clock, no window."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tkchat.lab.bench.claims import SHORT, Claim, frame_budget
from tkchat.lab.bench.figures import BenchOptions, RunFigures, format_table
from tkchat.lab.bench.scenarios import scenario_verdicts
from tkchat.lab.bench.scenarios.stages import STAGES, STAGES_COST, stages_verdicts
from tkchat.lab.bench.verdicts import verdicts


def _row(mode: str, **figures: Any) -> RunFigures:
    return RunFigures(mode=mode, backend="scripted", **figures)


def _flood(stages_tps: float, stages_p99: float) -> list[RunFigures]:
    return [
        _row("idle", lag_p99_ms=1.0, lag_max_ms=3.0, long_tasks=0),
        _row("raw", tokens_per_s=5000.0),
        _row(
            "fixed",
            lag_p99_ms=6.0,
            lag_max_ms=12.0,
            long_tasks=0,
            tokens_per_s=4900.0,
            extra={"main_cpu_per_s": 0.2},
        ),
        _row(
            STAGES,
            lag_p99_ms=stages_p99,
            lag_max_ms=14.0,
            long_tasks=0,
            tokens_per_s=stages_tps,
            extra={"main_cpu_per_s": 0.3},
        ),
    ]


def test_the_view_is_held_to_the_fixed_pipelines_tokens_in_the_same_run() -> None:
    [held] = stages_verdicts(_flood(4800.0, 7.0))
    assert held.name == STAGES_COST and held.ok
    assert held.baseline == 4900.0 and held.baseline_of == "fixed tokens/s"
    assert "lag p99 7.0 vs 6.0 ms" in held.figure and "CPU 0.3 vs 0.2 s per s" in held.figure
    [costly] = stages_verdicts(_flood(4000.0, 7.0))
    assert not costly.ok and costly.ratio is not None and round(costly.ratio, 3) == 0.816
    assert stages_verdicts(_flood(4800.0, 7.0)[:3]) == []  # no view's row: nothing judged
    assert held in scenario_verdicts(_flood(4800.0, 7.0))  # printed with every run


def test_the_view_s_row_is_held_to_the_fixed_targets() -> None:
    options = BenchOptions(backend="scripted")
    checks = {c.name: c for c in verdicts(_flood(4800.0, 7.0), options)}
    assert checks["fixed-stages: flood lag p99 <= 16 ms"].ok
    assert checks["fixed-stages: flood long tasks == 0"].ok
    assert checks["fixed-stages: flood lag max <= 16 ms"].baseline_of == "idle lag max"
    janky = {c.name: c for c in verdicts(_flood(4800.0, 30.0), options)}
    assert not janky["fixed-stages: flood lag p99 <= 16 ms"].ok
    # a frame budget, as the fixed pipeline's own: short within 3 x, not the step's failure
    name = "fixed-stages: flood lag p99 <= 16 ms"
    assert frame_budget("flood", name) == frame_budget("flood", "flood lag p99 <= 16 ms")
    claim = Claim("flood", name, janky[name], ["FAIL"])
    assert claim.outcome == SHORT


def test_the_row_is_printed_beside_fixed() -> None:
    table = format_table(_flood(4800.0, 7.0)).splitlines()
    modes = [line.split()[0] for line in table[2:]]
    assert modes.index(STAGES) == modes.index("fixed") + 1


@pytest.mark.parametrize("costs", [True, False])
def test_the_view_s_answer_takes_turns_with_the_fixed_ones_and_is_closed_after_it(
    monkeypatch: pytest.MonkeyPatch, costs: bool
) -> None:
    """Repeat 0: on, off, then the view; repeat 1: the view first. The view is open only
    for its own answer, the sampler on for it as in a class. The instruments' cost rows
    follow each repeat, unless left out (``--no-costs``, as the claims step runs)."""
    from tkchat.lab.bench import bench as bench_module
    from tkchat.lab.bench.bench import Bench

    answers: dict[str, int] = {}

    def figures(mode: str, backend: str, results: list[Any], *_rest: Any) -> RunFigures:
        answers[mode] = len(results)
        return _row(mode)

    monkeypatch.setattr(bench_module, "stream_figures", figures)
    events: list[str] = []

    def cost_answers(bench: Any, repeat: int, results: dict[str, list[Any]]) -> Any:
        """(tests/test_bench_costs.py: the plain row and the instruments' rows)"""
        events.append(f"costs {repeat}")
        for row in bench_module.COST_ROWS:
            results.setdefault(row, []).append({})
        return iter(())

    monkeypatch.setattr(bench_module, "cost_answers", cost_answers)

    def stream_once(mode: str, sampling: object, result: dict[str, Any]) -> Any:
        events.append(f"answer {mode}")
        return iter(())

    tools = SimpleNamespace(
        sample_loop=lambda on: events.append(f"sampler {on}"),
        show_stages=lambda on: events.append(f"view {on}"),
    )
    bench: Any = SimpleNamespace(
        tools=tools,
        app=SimpleNamespace(instruments=tools),
        sampling=None,
        stream_once=stream_once,
        options=SimpleNamespace(
            repeats=2, modes=("fixed",), backend="scripted", cancels=0, costs=costs
        ),
        raw_once=lambda: (100.0, 5.0),
        _raw_tokens=10,
        runs=[],
        cancels=lambda latencies: iter(()),
    )
    bench._fixed_with_and_without_sampler = lambda *a, **k: Bench._fixed_with_and_without_sampler(
        bench, *a, **k
    )
    for _ in Bench._raw_and_fixed(bench):
        pass
    view = ["sampler True", "view True", "answer fixed", "view False", "sampler None"]
    pair_on_first = ["sampler True", "answer fixed", "sampler False", "answer fixed"]
    pair_off_first = ["sampler False", "answer fixed", "sampler True", "answer fixed"]
    assert events == [
        *pair_on_first,
        "sampler None",
        *view,
        *(["costs 0"] if costs else []),
        *view,
        *pair_off_first,
        "sampler None",
        *(["costs 1"] if costs else []),
    ]
    rows = list(bench_module.COST_ROWS) if costs else []
    assert [run.mode for run in bench.runs] == ["raw", "fixed", "fixed-unsampled", STAGES, *rows]
    assert answers == {"fixed": 2, "fixed-unsampled": 2, STAGES: 2, **dict.fromkeys(rows, 2)}
