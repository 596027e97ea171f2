"""``tkchat bench`` end to end: the real window, short runs, the JSON schema and the report.

These check that the figures exist and are coherent, not how fast anything is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_trace import trace_problems

pytestmark = pytest.mark.gui

REQUIRED = {
    "mode",
    "backend",
    "tokens",
    "tokens_per_s",
    "ttft_ms",
    "lag_p50_ms",
    "lag_p99_ms",
    "lag_max_ms",
    "long_tasks",
    "ui_updates_per_s",
    "cancel_p50_ms",
    "cancel_p99_ms",
    "rss_peak_mb",
    "input_p50_ms",
    "input_p99_ms",
    "input_max_ms",
}


def bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tkchat",
            "bench",
            "--repeats",
            "1",
            "--cancels",
            "3",
            "--idle-seconds",
            "0.5",
            "--json",
            str(out),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(out.read_text())
    assert data["targets"], "a run checks its targets"
    for target in data["targets"]:  # each verdict is printed as it is in the JSON
        verdict = "PASS" if target["pass"] else "FAIL"
        assert f"{verdict}  {target['target']}: {target['figure']}" in result.stdout
    return data


# One scripted run and one on the bundled model, each read by several tests: a bench run
# takes one to four minutes, most of it the scenarios every run has (idle, raw, the long
# render, the history).
SCRIPTED_TOKENS = 200  # per-chunk-render is quadratic: 400 tokens took it 13 s of 26


@pytest.fixture(scope="module")
def scripted_run(display: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """``--busy`` and a report and a trace, three modes: the JSON and the run's folder."""
    folder = tmp_path_factory.mktemp("scripted-bench")
    data = bench(
        folder,
        "--backend",
        "scripted",
        "--rate",
        "2000",
        "--tokens",
        str(SCRIPTED_TOKENS),
        "--modes",
        "fixed,blocking,per-chunk-render",
        "--busy",
        "--report",
        str(folder / "report"),
        "--trace",
        str(folder / "trace.json"),
    )
    return data, folder


@pytest.fixture(scope="module")
def model_run(display: None, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The bundled model: the fixed pipeline, and ``--turn2``."""
    return bench(
        tmp_path_factory.mktemp("model-bench"), "--tokens", "24", "--modes", "fixed", "--turn2"
    )


def test_scripted_bench_measures_every_asked_mode_and_writes_a_report(
    scripted_run: tuple[dict, Path],
) -> None:
    data, tmp_path = scripted_run
    report = tmp_path / "report"
    runs = {run["mode"]: run for run in data["runs"]}
    assert list(runs) == [
        "idle",
        "raw",
        "fixed",
        "fixed-unsampled",  # the same, the window's sampler off: what sampling costs
        "blocking",
        "per-chunk-render",
        "render",
        "history",
        "busy-idle",
        "busy-raw",
        "busy-fixed",
    ]
    for run in data["runs"]:
        assert set(run) >= REQUIRED, run["mode"]
    fixed, blocking = runs["fixed"], runs["blocking"]
    assert fixed["tokens"] == SCRIPTED_TOKENS and runs["raw"]["tokens"] == SCRIPTED_TOKENS
    assert fixed["cancel_samples"] >= 1 and fixed["cancel_p99_ms"] is not None
    assert fixed["input_p99_ms"] is not None and blocking["input_max_ms"] is not None
    assert fixed["lag_p50_ms"] <= fixed["lag_p99_ms"] <= fixed["lag_max_ms"]
    assert runs["idle"]["tokens"] is None and runs["raw"]["lag_p99_ms"] is None
    assert {t["target"] for t in data["targets"]} >= {
        "flood lag p99 <= 16 ms",
        "markdown slices while streaming <= 16 ms",
    }
    # markdown is rendered while the answer streams, and the bench shows what it cost
    assert fixed["streaming_slices"] > 0 and fixed["streaming_slice_max_ms"] > 0
    history = runs["history"]
    assert history["long_tasks"] is not None and history["messages"] == 200
    assert history["chars"] >= 100_000  # the size: 200 messages, 100,000 characters
    # the main-thread store calls, timed on a history of many conversations
    assert history["conversations"] > 200
    assert all(
        history[f"{call}_ms"] >= 0 for call in ("list", "search", "rename", "delete", "restore")
    )
    render = runs["render"]
    assert render["answer_chars"] >= 11_000 and render["slices"] > 1
    assert render["set_html_ms_per_1000_chars"] > 0
    # every long task carries who held the loop: in a broken mode, the mode's function
    freeze = max(blocking["long_task_culprits"], key=lambda c: c["lag_ms"])
    assert freeze["culprit"]["held_by"] == "GenerateInClickHandler.start"
    assert freeze["lag_ms"] == pytest.approx(blocking["lag_max_ms"], abs=0.1)
    assert freeze["culprit"]["label"]
    # (held by it, or by Tk's redisplay of what it left: "… in Tk's redisplay after
    # RenderEveryChunk.show")
    held = {c["culprit"]["held_by"] for c in runs["per-chunk-render"]["long_task_culprits"]}
    assert "RenderEveryChunk.show" in held, held
    assert "the sampler costs the fixed pipeline <= 5 % of its tokens/s" in {
        t["target"] for t in data["targets"]
    }
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace_problems(trace) == []
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert names == [
        "fixed — 1",
        "fixed-unsampled — 2",
        "blocking — 3",
        "per-chunk-render — 4",
        "fixed — 5",  # --busy: the fixed pipeline again, a hog on every core
    ]
    text = (report / "report.md").read_text()
    assert "lag-timeline.png" in text and "lag-vs-length.png" in text
    for png in ("lag-timeline.png", "lag-vs-length.png"):
        assert (report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_scripted_flood_gives_broken_modes_a_short_answer(display: None, tmp_path: Path) -> None:
    """A broken mode at flood length would run for hours (per-chunk-render is quadratic):
    they get at most 600 tokens, whatever resets the window between runs."""
    data = bench(
        tmp_path,
        "--backend",
        "scripted",
        "--rate",
        "5000",
        "--tokens",
        "700",
        "--modes",
        "fixed,blocking",
    )
    runs = {run["mode"]: run for run in data["runs"]}
    assert runs["fixed"]["tokens"] == 700
    assert runs["blocking"]["tokens"] == 600


@pytest.mark.model
def test_bench_runs_on_the_bundled_model(model_run: dict) -> None:
    data = model_run
    runs = {run["mode"]: run for run in data["runs"]}
    assert runs["raw"]["tokens_per_s"] > 0 and runs["fixed"]["tokens_per_s"] > 0
    assert data["backend"] == "llama"
    targets = {t["target"] for t in data["targets"]}
    assert "fixed tokens/s >= 0.95 x raw" in targets
    assert "cancel p99 <= 2 token periods" in targets


def test_busy_runs_the_fixed_pipeline_again_with_a_hog_per_core(
    scripted_run: tuple[dict, Path],
) -> None:
    """``--busy``: the bench starts one CPU hog per core, measures under them, stops them,
    and holds the busy rows to ratios of the same run's baselines."""
    data, _folder = scripted_run
    runs = {run["mode"]: run for run in data["runs"]}
    assert {"idle", "raw", "fixed", "busy-idle", "busy-raw", "busy-fixed"} <= set(runs)
    busy = runs["busy-fixed"]
    assert busy["hogs"] == (os.cpu_count() or 1) and len(busy["hog_pids"]) == busy["hogs"]
    assert busy["tokens"] == SCRIPTED_TOKENS and runs["busy-raw"]["tokens_per_s"] > 0
    assert busy["cancel_samples"] >= 1 and busy["load_1min"] is not None
    for pid in busy["hog_pids"]:  # stopped (and reaped) by the bench before it ended
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    figures = {t["target"]: t["figure"] for t in data["targets"]}
    lag = next(f for t, f in figures.items() if t.startswith(f"busy ({busy['hogs']} hogs)"))
    # held to the idle window under the same hogs; the quiet idle's ratio is reported too
    assert "(2 x busy idle)" in next(t for t in figures if t.startswith("busy ("))
    assert " ms of busy idle, " in lag and " ms of quiet idle" in lag
    assert "x (" in figures["busy: fixed tokens/s >= 0.9 x busy raw"]
    assert "busy: fixed long tasks == 0" in figures


@pytest.mark.model
def test_turn2_reads_only_the_new_part_in_both_languages(model_run: dict) -> None:
    """``--turn2``: rows for English and Chinese, each follow-up evaluating only its new part,
    with the baseline and the ratio reported (their size is the bench's verdict, not this
    test's: nothing here is timed)."""
    data = model_run
    runs = {run["mode"]: run for run in data["runs"]}
    for lang in ("en", "zh"):
        row = runs[f"turn-2-{lang}"]
        assert 0 < row["tokens"] < row["prompt_tokens"] / 10  # the new part of a long chat
        assert max(row["evaluated"]) <= row["tokens"] + 1
        assert row["reused"][-1] >= row["prompt_tokens"] - row["tokens"] - 1  # the last turn
        assert row["new_part_alone_ttft_ms"] > 0 and row["ttft_ratio"] is not None
        assert f"turn-2-{lang} evaluates only the new part (+1)" in {
            t["target"] for t in data["targets"]
        }
