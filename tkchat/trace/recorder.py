"""One measured run, recorded for its culprits and its trace (``tkchat bench``, lesson demos).

:class:`RunRecorder` is begun just before Send and ended after the answer: it keeps every
sample of the window's sampler, every callback the scheduler ran and every token time of the
worker in between, and turns them — with the lag probe's samples of the same run — into the
culprit of each long task and a :class:`tkchat.trace.chrome.TraceRun`.

Tk-free: it reads the sampler, the ledger and the controller it is given; the caller is the
main thread of the window being measured.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tkchat.generate.controller import GenerationController
from tkchat.stats import LagSample
from tkchat.trace.chrome import TraceRun
from tkchat.trace.culprit import Culprit, long_task_culprits
from tkchat.trace.ledger import CallbackLedger, KeptCall
from tkchat.trace.sampler import LoopSampler, Sample

KEEP_CALLBACKS = 400_000  # a run's callbacks: a 60 s flood runs some 400 a second
KEEP_TOKENS = 400_000  # a run's token times (a scripted flood: 100,000 per answer)
CULPRITS_KEPT = 100  # long tasks described per run in the bench's JSON (the longest)


@dataclass
class RecordedRun:
    """A run's long tasks with their culprits, and its trace."""

    culprits: list[Culprit]
    lags: list[LagSample]
    trace: TraceRun
    samples: int
    cost_percent: float | None = None  # the sampler thread's CPU, in % of one core, meanwhile

    def culprits_json(self, origin: float, lang: str = "en") -> list[dict[str, object]]:
        """For ``tkchat bench --json``: every long task (the longest, if very many), when it
        ended (seconds after ``origin``), how long it was, and who held the loop."""
        longest = sorted(self.culprits, key=lambda c: -c.length_ms)[:CULPRITS_KEPT]
        return [
            {
                "at_s": round(c.end - origin, 3),
                "lag_ms": round(c.length_ms, 1),
                "culprit": c.as_json(lang),
            }
            for c in sorted(longest, key=lambda c: c.end)
        ]

    @property
    def main_culprit(self) -> Culprit | None:
        """The longest long task's culprit (None: no long task, or none sampled)."""
        return max(self.culprits, key=lambda c: c.length_ms, default=None)


class RunRecorder:
    def __init__(
        self, sampler: LoopSampler, ledger: CallbackLedger, controller: GenerationController
    ) -> None:
        self.sampler = sampler
        self.ledger = ledger
        self.controller = controller
        self.started: float | None = None
        self._kept_before: deque[KeptCall] | None = None

    def begin(self) -> None:
        """Just before Send."""
        self.started = time.perf_counter()
        self.sampler.start_recording()
        self._cost_before = self.sampler.cost_s
        self._kept_before = self.ledger.kept  # the window's own ring, given back at the end
        self.ledger.keep(KEEP_CALLBACKS)
        self._tokens_before = self.controller.keep_token_times
        self.controller.keep_token_times = KEEP_TOKENS

    def end(
        self, name: str, lags: Sequence[LagSample], arrivals: Iterable[tuple[float, int]]
    ) -> RecordedRun:
        """After the answer: ``lags`` are the probe's samples of the same run, ``arrivals``
        when its text reached the screen."""
        assert self.started is not None, "end() before begin()"
        samples: list[Sample] = self.sampler.stop_recording()
        callbacks = self.ledger.kept_since(self.started)
        if self._kept_before is not None:
            self._kept_before.extend(self.ledger.kept or ())  # (bounded: its own maxlen)
        self.ledger.kept = self._kept_before
        self.controller.keep_token_times = self._tokens_before
        worker = self.controller.running  # a worker, or an asyncio task (tkchat/aio/)
        tokens: list[float] = []
        prompt = None
        started_at = worker.started_at if worker is not None else None
        if worker is not None and started_at is not None and started_at >= self.started:
            sender = worker.sender
            tokens = list(sender.times or ()) if sender is not None else []
            if worker.first_token_at is not None:
                prompt = (started_at, worker.first_token_at)
        culprits = long_task_culprits(samples, lags)
        trace = TraceRun(
            name=name,
            origin=self.started,
            samples=samples,
            callbacks=callbacks,
            lags=list(lags),
            culprits=culprits,
            tokens=tokens,
            prompt=prompt,
            arrivals=[arrival for arrival in arrivals if arrival[0] >= self.started],
            counter_names=tuple(self.sampler.counters),
        )
        seconds = time.perf_counter() - self.started
        cost = (self.sampler.cost_s - self._cost_before) / seconds * 100 if seconds > 0 else None
        return RecordedRun(culprits, list(lags), trace, len(samples), cost)
