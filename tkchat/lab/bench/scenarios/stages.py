"""The pipeline view's cost (issue 36): the fixed pipeline with the stage view open.

Drawing the three stages live (tkchat/ui/stages/: F9, and the demos of lessons 04, 06, 07, 11
and 13) runs on the window's main thread, beside the very pipeline it shows; it must not cost
that pipeline its targets. In every run of the fixed pipeline the bench streams one more of
its answers with the view open at full speed, as F9 opens it (the sampler on, as in a class),
in turn with the answers without it, so drift hits both alike: the row ``fixed-stages``,
beside ``fixed``. It is held to the fixed pipeline's own targets against the same run's idle
window and model alone (tkchat/lab/bench/verdicts.py), and here to the same run's ``fixed``:
at most 5 % of its tokens/s, with its lag, long tasks and main-thread CPU per second printed
beside fixed's.

Main thread (the bench's script); the verdicts are plain arithmetic, any thread.
"""

from __future__ import annotations

from tkchat.lab.bench.figures import TOKENS_RATIO_MIN, Check, RunFigures, StreamResult
from tkchat.lab.bench.scenarios.runs import BenchRuns
from tkchat.lab.bench.script import Script
from tkchat.lab.window import instruments_of
from tkchat.modes import FIXED

STAGES = "fixed-stages"  # the fixed pipeline, the stage view open at full speed
STAGES_COST = (
    f"the stage view costs the fixed pipeline <= {round((1 - TOKENS_RATIO_MIN) * 100):g} % "
    "of its tokens/s"
)


def with_stage_view(bench: BenchRuns, results: list[StreamResult]) -> Script:
    """One fixed answer with the stage view open (closed again after it, whatever happens),
    appended to ``results``."""
    tools = instruments_of(bench.app)
    tools.sample_loop(True)
    tools.show_stages(True)
    try:
        result: StreamResult = {}
        yield from bench.stream_once(FIXED, bench.sampling, result)
        results.append(result)
    finally:
        tools.show_stages(False)
        tools.sample_loop(None)


def stages_verdicts(runs: list[RunFigures]) -> list[Check]:
    """The view's cost against the fixed pipeline of the same run (nothing without both)."""
    by = {r.mode: r for r in runs}
    on, off = by.get(STAGES), by.get(FIXED)
    if on is None or off is None or not on.tokens_per_s or not off.tokens_per_s:
        return []
    ratio = on.tokens_per_s / off.tokens_per_s
    cpu_on, cpu_off = on.extra.get("main_cpu_per_s"), off.extra.get("main_cpu_per_s")
    return [
        Check(
            STAGES_COST,
            ratio >= TOKENS_RATIO_MIN,
            f"{on.tokens_per_s:g} vs {off.tokens_per_s:g} tokens/s ({ratio:.3f} x); lag p99 "
            f"{on.lag_p99_ms} vs {off.lag_p99_ms} ms, max {on.lag_max_ms} vs {off.lag_max_ms} "
            f"ms; long tasks {on.long_tasks} vs {off.long_tasks}; main-thread CPU {cpu_on} vs "
            f"{cpu_off} s per s",
            on.tokens_per_s,
            off.tokens_per_s,
            "fixed tokens/s",
            f">= {TOKENS_RATIO_MIN:g} x",
            "tokens/s",
        )
    ]
