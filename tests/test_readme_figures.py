"""The bench figures of docs/bench.md are the kept runs' figures, rendered by the bench's own
code.

No timing here: this checks provenance (a figure in docs/bench.md is one a `tkchat bench` run
printed and kept), not speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools.readme_figures import (
    BENCH_PAGE,
    RUNS_DIR,
    ReadmeFiguresError,
    blocks,
    load_run,
    render_block,
    rewrite_blocks,
)

KEPT = sorted(p.stem for p in RUNS_DIR.glob("*.json"))


def test_every_kept_run_has_its_block_and_every_block_its_run() -> None:
    assert KEPT, "no kept bench run: docs/bench.md's latest-run tables come from docs/runs"
    assert sorted(blocks(BENCH_PAGE.read_text(encoding="utf-8"))) == KEPT


@pytest.mark.parametrize("name", KEPT)
def test_bench_page_block_is_the_kept_run(name: str) -> None:
    payload = load_run(name)
    assert payload["runs"], f"run {name} has no rows"
    assert blocks(BENCH_PAGE.read_text(encoding="utf-8"))[name] == render_block(payload), (
        f"docs/bench.md's bench:{name} block differs from docs/runs/{name}.json: figures are "
        f"not typed; keep a run with `tkchat bench … --json docs/runs/{name}.json` and "
        "rewrite the block with `python -m tests.tools.readme_figures` instead"
    )


def test_a_hand_edited_figure_is_caught_and_rewritten_from_the_kept_run(tmp_path: Path) -> None:
    name = KEPT[0]
    payload = load_run(name)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / f"{name}.json").write_text(json.dumps(payload), encoding="utf-8")
    # a figure of the fixed row typed by hand: the block no longer renders from the run
    fixed = next(r for r in payload["runs"] if r.get("lag_max_ms") is not None)
    typed = render_block({**payload, "runs": [{**fixed, "lag_max_ms": 1.0}]})
    page = tmp_path / "bench.md"
    page.write_text(f"intro\n<!-- bench:{name} -->\n{typed}<!-- /bench:{name} -->\nend\n")
    assert blocks(page.read_text(encoding="utf-8"))[name] != render_block(payload)
    assert rewrite_blocks(page, runs) == [name]
    text = page.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("end\n")
    assert blocks(text)[name] == render_block(payload)


def test_a_block_without_a_kept_run_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "bench.md"
    page.write_text("<!-- bench:nope -->\n<!-- /bench:nope -->\n", encoding="utf-8")
    with pytest.raises(ReadmeFiguresError, match="no run 'nope'"):
        rewrite_blocks(page, tmp_path)
