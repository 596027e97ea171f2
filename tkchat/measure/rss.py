"""Resident memory of this process, read from /proc (Linux) or resource (elsewhere)."""

from __future__ import annotations

import resource
import sys


def rss_mb() -> float:
    """Current resident set size in MB."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * resource.getpagesize() / 1e6
    except OSError:  # not Linux: peak is the best we can read
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 1e6 if sys.platform == "darwin" else peak / 1e3
