"""``tkchat bench``'s scenarios besides the modes, each against baselines of the same run:
the final render of a long answer and a saved conversation opened and scrolled
(:mod:`.saved`), a long conversation at several lengths (``--long-chat``, :mod:`.long_chat`),
a chat's second turn (``--turn2``, :mod:`.turn2`) and a machine with every core busy
(``--busy``, :mod:`.busy`); the pipeline view's cost and each instrument's against a
plain window, in every run of the fixed pipeline (:mod:`.stages`, :mod:`.costs`). Each is
a script the bench's runner drives (tkchat/lab/bench/script.py), driving the bench through
:class:`~tkchat.lab.bench.scenarios.runs.BenchRuns` (never the bench's module, which imports
this one)."""

from __future__ import annotations

from tkchat.lab.bench.figures import Check, RunFigures
from tkchat.lab.bench.scenarios.busy import busy_scenario, busy_verdicts
from tkchat.lab.bench.scenarios.runs import BenchRuns
from tkchat.lab.bench.scenarios.stages import stages_verdicts
from tkchat.lab.bench.scenarios.turn2 import turn_two_scenario, turn_two_verdicts
from tkchat.lab.bench.script import Script


def scenarios(bench: BenchRuns) -> Script:
    """The bench's script, after its modes: the scenarios its options ask for."""
    yield from turn_two_scenario(bench)
    yield from busy_scenario(bench)


def scenario_verdicts(runs: list[RunFigures]) -> list[Check]:
    return turn_two_verdicts(runs) + busy_verdicts(runs) + stages_verdicts(runs)
