"""The README's bench figures are the kept runs' figures, rendered by the bench's own code.

No timing here: this checks provenance (a figure in the README is one a `tkchat bench` run
printed and kept), not speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tkchat.measure.readme_figures import (
    README,
    RUNS_DIR,
    ReadmeFiguresError,
    blocks,
    load_run,
    render_block,
    require_block,
    update_readme,
)

KEPT = sorted(p.stem for p in RUNS_DIR.glob("*.json"))


def test_every_kept_run_has_its_block_and_every_block_its_run() -> None:
    assert KEPT, "no kept bench run: the README's latest-run tables come from tkchat/measure/runs"
    assert sorted(blocks(README.read_text(encoding="utf-8"))) == KEPT


@pytest.mark.parametrize("name", KEPT)
def test_readme_block_is_the_kept_run(name: str) -> None:
    payload = load_run(name)
    assert payload["runs"], f"run {name} has no rows"
    assert blocks(README.read_text(encoding="utf-8"))[name] == render_block(payload), (
        f"README's bench:{name} block differs from tkchat/measure/runs/{name}.json: figures "
        f"are not typed; run `tkchat bench --readme {name}` (with the same options) instead"
    )


def test_a_hand_edited_figure_is_caught(tmp_path: Path) -> None:
    name = KEPT[0]
    runs = tmp_path / "runs"
    runs.mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n<!-- bench:{name} -->\n<!-- /bench:{name} -->\nend\n", "utf-8")
    payload = load_run(name)
    update_readme(name, payload, readme=readme, runs_dir=runs)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("end\n")
    assert blocks(text)[name] == render_block(load_run(name, runs))
    # Change one figure of the fixed row by hand: the block no longer renders from the run.
    fixed = next(r for r in payload["runs"] if r.get("lag_max_ms") is not None)
    typed = render_block({**payload, "runs": [{**fixed, "lag_max_ms": 1.0}]})
    assert typed != render_block({**payload, "runs": [fixed]})
    kept = json.loads((runs / f"{name}.json").read_text(encoding="utf-8"))
    assert kept == payload


def test_a_readme_without_the_block_is_refused_before_a_run(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers here\n", encoding="utf-8")
    with pytest.raises(ReadmeFiguresError, match="<!-- bench:nope -->"):
        require_block("nope", readme)
    with pytest.raises(ReadmeFiguresError, match="not found"):
        require_block("model", tmp_path / "missing.md")


def test_cli_refuses_an_unknown_block_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    from tkchat.cli import main

    assert main(["bench", "--backend", "scripted", "--readme", "no-such-block"]) == 2
    assert "no block 'no-such-block'" in capsys.readouterr().err
