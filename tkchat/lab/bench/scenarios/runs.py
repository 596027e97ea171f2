"""What the bench's scenarios (tkchat/lab/bench/scenarios/) may ask of the bench that runs
them: its options, the window it drives, the rows measured so far (a scenario appends its
own), the answer every mode streams, and its four measurements. The bench
(:class:`tkchat.lab.bench.bench.Bench`) satisfies it as it is; a scenario imports this
Protocol, never the bench, so the bench can import the scenarios.

Main thread only: each measurement is a script the bench's runner resumes
(tkchat/lab/bench/script.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tkchat.conversation import Sampling
from tkchat.lab.bench.figures import BenchOptions, RunFigures, StreamResult
from tkchat.lab.bench.script import Script

if TYPE_CHECKING:
    from tkchat.lab.window import LabWindow


class BenchRuns(Protocol):
    """A bench run, as its scenarios see it. Each measurement is one of the bench's own: a
    scenario repeats the bench's rows under other conditions (``--busy``: the same rows
    with every core busy), and gets figures measured exactly as the modes' are."""

    @property
    def options(self) -> BenchOptions: ...
    @property
    def app(self) -> LabWindow: ...
    @property
    def runs(self) -> list[RunFigures]: ...
    @property
    def sampling(self) -> Sampling: ...

    def idle(self, mode: str = "idle") -> Script:
        """The window open and doing nothing: appends a row ``mode`` (lag, memory)."""
        ...

    def raw_once(self) -> tuple[float, float]:
        """The model alone, no window: (tokens/s, TTFT ms). Holds the main loop."""
        ...

    def stream_once(
        self, mode: str, sampling: Sampling, result: StreamResult, *, row: str | None = None
    ) -> Script:
        """One answer in ``mode``, measured into ``result`` (``row``: the row it is for,
        which names its trace)."""
        ...

    def cancels(self, latencies: list[float]) -> Script:
        """Stops at random points: appends each one's latency (ms) to ``latencies``."""
        ...
