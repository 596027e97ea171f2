"""Scenarios ``tkchat bench`` runs besides its modes, each against baselines of the same run:
``--busy`` (:mod:`.busy`), ``--turn2`` (:mod:`.turn2`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tkchat.measure.figures import RunFigures
from tkchat.measure.scenarios.busy import busy_scenario, busy_verdicts
from tkchat.measure.scenarios.turn2 import turn_two_scenario, turn_two_verdicts
from tkchat.measure.script import Script

if TYPE_CHECKING:
    from tkchat.measure.bench import Bench


def scenarios(bench: Bench) -> Script:
    """The bench's script, after its modes: the scenarios its options ask for."""
    yield from turn_two_scenario(bench)
    yield from busy_scenario(bench)


def scenario_verdicts(runs: list[RunFigures]) -> list[tuple[str, bool, str]]:
    return turn_two_verdicts(runs) + busy_verdicts(runs)
