"""``tkchat bench``'s verdicts on the asyncio modes, fed constructed figures (no clock): the
correct ones held to the fixed pipeline's targets, each broken one judged by its own mistake
— a freeze for ``asyncio-run``, ``asyncio-render`` and ``asyncio-blocking-call``, text held
back in bursts for ``asyncio-slow-poll`` (whose lag is fine: that is its trap).
"""

from __future__ import annotations

from typing import Any

import pytest

from tkchat.lab.bench.figures import BenchOptions, RunFigures, screen_gap_figures
from tkchat.lab.bench.verdicts import BURSTY_MODES, FREEZING_MODES, verdicts
from tkchat.modes import ASYNCIO_THREAD, ASYNCIO_TK, BROKEN_MODES, CORRECT_MODES

SLOW = "asyncio-slow-poll"
BURSTS = f"{SLOW} (broken) shows text in bursts: screen gap p50 >= 3 x fixed's (at least 80 ms)"
NO_FREEZE = f"{SLOW} (broken) does not freeze: lag max < 5 x fixed's lag p99 (at least 5 frames)"


def _row(mode: str, backend: str = "scripted", **figures: Any) -> RunFigures:
    gap = figures.pop("gap", None)
    row = RunFigures(mode=mode, backend=backend, **figures)
    if gap is not None:
        row.extra["screen_gap_p50_ms"] = gap
    return row


def _flood(**slow: Any) -> dict[str, Any]:
    rows = [
        _row("idle", lag_p99_ms=1.0, lag_max_ms=2.0, long_tasks=0),
        _row("fixed", lag_p99_ms=6.0, lag_max_ms=12.0, long_tasks=0, gap=16.7),
        _row(ASYNCIO_THREAD, lag_p99_ms=7.0, lag_max_ms=14.0, long_tasks=0, gap=16.8),
        _row(ASYNCIO_TK, lag_p99_ms=20.0, lag_max_ms=30.0, long_tasks=1, gap=16.9),
        _row("asyncio-run", lag_max_ms=1200.0, long_tasks=1),
        _row(SLOW, **slow),
    ]
    return {c.name: c for c in verdicts(rows, BenchOptions(backend="scripted"))}


def test_every_broken_mode_is_judged_by_one_mistake_and_the_slow_poll_by_bursts() -> None:
    assert set(FREEZING_MODES) | set(BURSTY_MODES) == set(BROKEN_MODES)
    assert not set(FREEZING_MODES) & set(BURSTY_MODES)
    assert BURSTY_MODES == (SLOW,)


def test_the_correct_asyncio_modes_are_held_to_the_fixed_pipeline_s_flood_targets() -> None:
    checks = _flood(lag_p99_ms=1.5, lag_max_ms=9.0, long_tasks=0, gap=200.0)
    assert {ASYNCIO_THREAD, ASYNCIO_TK} <= set(CORRECT_MODES)
    for name in ("flood lag p99 <= 16 ms", "flood lag max <= 16 ms", "flood long tasks == 0"):
        assert checks[name].ok  # fixed's, unprefixed as before
        assert checks[f"{ASYNCIO_THREAD}: {name}"].ok
    # asyncio-tk here missed a frame at p99 and at most, with a long task: each one fails
    assert not checks[f"{ASYNCIO_TK}: flood lag p99 <= 16 ms"].ok
    assert not checks[f"{ASYNCIO_TK}: flood lag max <= 16 ms"].ok
    assert not checks[f"{ASYNCIO_TK}: flood long tasks == 0"].ok
    # and no correct mode is asked to freeze
    assert not any(name.startswith(f"{ASYNCIO_TK} (broken)") for name in checks)


def test_the_correct_asyncio_modes_are_held_to_ratios_of_the_model_s_baselines() -> None:
    rows = [
        _row("idle", "llama", lag_p99_ms=1.5, lag_max_ms=3.0, long_tasks=0),
        _row("raw", "llama", tokens_per_s=50.0),
        _row("fixed", "llama", lag_p99_ms=2.9, lag_max_ms=9.0, long_tasks=0, tokens_per_s=48.0),
        _row(
            ASYNCIO_THREAD, "llama", lag_p99_ms=2.0, lag_max_ms=8.0, long_tasks=0, tokens_per_s=49
        ),
        _row(ASYNCIO_TK, "llama", lag_p99_ms=3.2, lag_max_ms=8.0, long_tasks=0, tokens_per_s=46),
    ]
    checks = {c.name: c for c in verdicts(rows, BenchOptions())}
    assert checks[f"{ASYNCIO_THREAD} lag p99 <= 2 x idle's (at least 2 ms)"].ok
    assert checks[f"{ASYNCIO_THREAD} tokens/s >= 0.95 x raw"].ok  # 0.98 x
    tk_p99 = checks[f"{ASYNCIO_TK} lag p99 <= 2 x idle's (at least 2 ms)"]
    assert not tk_p99.ok and tk_p99.baseline == 1.5 and tk_p99.bound == "<= 3.00 ms"
    assert not checks[f"{ASYNCIO_TK} tokens/s >= 0.95 x raw"].ok  # 0.92 x


def test_the_freezing_asyncio_modes_are_held_to_five_times_fixed_s_p99() -> None:
    checks = _flood(lag_p99_ms=1.5, lag_max_ms=9.0, long_tasks=0, gap=200.0)
    freeze = checks[
        "asyncio-run (broken) freezes: lag max >= 5 x fixed's lag p99 (at least 5 frames)"
    ]
    assert freeze.ok and freeze.ratio == pytest.approx(1200 / 6)


def test_a_slow_poll_that_holds_text_back_without_freezing_passes_both() -> None:
    checks = _flood(lag_p99_ms=1.5, lag_max_ms=9.0, long_tasks=0, gap=201.0)
    bursts = checks[BURSTS]
    assert bursts.ok and bursts.baseline == 16.7 and bursts.bound == ">= 80 ms"
    assert bursts.ratio == pytest.approx(201 / 16.7)
    assert checks[NO_FREEZE].ok and checks[NO_FREEZE].bound == "< 80 ms"
    # it is not asked to freeze, nor blamed for a long task it should not have
    assert not any(name.startswith(f"{SLOW} (broken) freezes") for name in checks)
    assert not any("blamed" in name and SLOW in name for name in checks)


def test_a_slow_poll_that_shows_text_each_frame_or_freezes_fails() -> None:
    smooth = _flood(lag_p99_ms=1.5, lag_max_ms=9.0, long_tasks=0, gap=40.0)
    assert not smooth[BURSTS].ok  # 40 ms: 2.4 x fixed's, and under 5 frames
    frozen = _flood(lag_p99_ms=1.5, lag_max_ms=300.0, long_tasks=1, gap=300.0)
    assert frozen[BURSTS].ok and not frozen[NO_FREEZE].ok


def test_slow_text_is_bursty_only_against_the_fixed_pipeline_s_own_gap() -> None:
    """On a slow model (a token every 50 ms) the fixed pipeline's gap is 50 ms: a slow
    poll must then hold text back 150 ms, not just 80 ms, to show a burst."""
    rows = [
        _row("fixed", lag_p99_ms=4.0, lag_max_ms=10.0, long_tasks=0, gap=50.0),
        _row(SLOW, lag_p99_ms=2.0, lag_max_ms=10.0, long_tasks=0, gap=120.0),
    ]
    checks = {c.name: c for c in verdicts(rows, BenchOptions(backend="scripted"))}
    assert not checks[BURSTS].ok and checks[BURSTS].bound == ">= 150 ms"


def test_the_gap_between_puts_on_screen_is_counted_from_the_arrivals() -> None:
    arrivals = [(10.0, 5), (10.2, 40), (10.4, 90), (10.9, 95)]
    figures = screen_gap_figures(arrivals)
    assert figures["screen_gap_p50_ms"] == pytest.approx(200.0)
    assert figures["screen_gap_max_ms"] == pytest.approx(500.0)
    assert screen_gap_figures([(1.0, 3)]) == {"screen_gap_p50_ms": None, "screen_gap_max_ms": None}
