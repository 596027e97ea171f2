"""Live values of ``tkchat bench`` figures, read from the running window.

The lesson panel shows them next to the figure a lesson expects. Main thread only: it reads
the probe, the transcript and the finished answers of the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

from tkchat.events import Done, Error
from tkchat.stats import rss_mb
from tkchat.transport.channel import GenerationSender
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.teaching.ordering import OrderingCounters
from tkchat.ui.transcript.transcript import Transcript


class LiveFigures:
    """``finished()``: the window's final events, in order; ``cancel_ms()``: how long the last
    Stop took to leave the model loop (None before any); ``ordering()``: what the chaos
    transport did and what keeping order cost (lesson 13); ``sender()``: the sender of the
    latest answer, which counts the pieces of text it merged (lesson 11)."""

    def __init__(
        self,
        probe: LagProbe,
        transcript: Transcript,
        finished: Callable[[], Sequence[Done | Error]],
        cancel_ms: Callable[[], float | None],
        ordering: Callable[[], OrderingCounters],
        sender: Callable[[], GenerationSender | None],
    ) -> None:
        self.probe = probe
        self.ordering = ordering
        self.sender = sender
        self.transcript = transcript
        self.finished = finished
        self.cancel_ms = cancel_ms

    def __call__(self, metric: str) -> float | None:  # noqa: C901 - a debt (tests/test_architecture.py)
        """The window's current value of a bench metric (None when not measured yet).

        "Since the last question" for the peaks (``lag_max_ms``, ``long_tasks``), the last few
        seconds for ``lag_p99_ms``, the last answer for the rest."""
        answers = self.transcript.answers
        last = answers[-1] if answers else None
        if metric == "lag_max_ms":
            return self.probe.peak_ms
        if metric == "lag_p99_ms":
            return self.probe.p99_ms()
        if metric == "long_tasks":
            return float(self.probe.long_tasks)
        if metric == "tokens_per_s":
            done = [final for final in self.finished() if isinstance(final, Done)]
            return done[-1].stats.tokens_per_s if done else None
        if metric == "ui_updates_per_s" and last is not None and len(last.arrivals) > 1:
            span = last.arrivals[-1][0] - last.arrivals[0][0]
            return (len(last.arrivals) - 1) / span if span > 0 else None
        if metric == "ttft_ms" and last is not None and last.first_text_at is not None:
            return (last.first_text_at - last.started_at) * 1000
        if metric == "cancel_p99_ms":
            return self.cancel_ms()
        if metric == "render_slice_max_ms":
            slices = self.transcript.painter.slice_ms[-200:]
            return max(slices) if slices else None
        if metric == "rss_peak_mb":
            return rss_mb()
        if metric in ORDERING_METRICS:
            return float(asdict(self.ordering())[metric])
        sender = self.sender()
        if metric == "merged" and sender is not None:
            return float(sender.pieces - sender.chunks)
        if metric == "chunks" and sender is not None:
            return float(sender.chunks)
        return None


# What lesson 13 watches: the chaos transport's work and the consumer's.
ORDERING_METRICS = tuple(
    name for name in OrderingCounters.__dataclass_fields__ if name != "chaos_on"
)
LIVE_METRICS = (
    "lag_max_ms",
    "lag_p99_ms",
    "long_tasks",
    "tokens_per_s",
    "ui_updates_per_s",
    "ttft_ms",
    "cancel_p99_ms",
    "render_slice_max_ms",
    "rss_peak_mb",
    "merged",
    "chunks",
    *ORDERING_METRICS,
)
