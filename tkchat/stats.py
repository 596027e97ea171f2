"""Small statistics and process figures that every layer may use (no numpy, no Tk).

The lag probe in the window, the benchmark and the server's health figures all count the same
way: nearest-rank percentiles, the median of repeated runs, and resident memory.
"""

from __future__ import annotations

import math
import resource
import sys
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LagSample:
    """One firing of an event-loop lag probe (Tk's or Qt's): when, and how late."""

    at: float  # perf_counter when the probe fired
    lag_ms: float


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); None for no data."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float | None:
    """The nearest-rank median (a value that was measured, never an average of two); None
    for no data."""
    return percentile(values, 50)


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def rss_mb() -> float:
    """Current resident set size of this process in MB."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * resource.getpagesize() / 1e6
    except OSError:  # not Linux: peak is the best we can read
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1e6 if sys.platform == "darwin" else peak / 1e3
