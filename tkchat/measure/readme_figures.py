"""The README's bench figures, written by the bench itself and checked by a test.

A figure typed into the README by hand drifts: the code changes, the number stays. So the
README's "latest run" tables are never typed. ``tkchat bench --readme NAME`` keeps the run's
JSON as ``tkchat/measure/runs/NAME.json`` and rewrites the block between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` in README.md from it;
``tests/test_readme_figures.py`` renders every block again from its JSON and fails when the
README says anything else (a hand edit, a JSON without its block, a block without its run).

Plain functions on plain data (no Tk, no model): any thread, usually the bench's main one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

RUNS_DIR = Path(__file__).with_name("runs")
README = Path(__file__).resolve().parents[2] / "README.md"

# The columns a reader needs to see the story: how fast, how late the loop, whether a click
# was answered, whether Stop stopped. The JSON keeps every other figure.
COLUMNS = (
    "mode",
    "tokens",
    "tokens_per_s",
    "ttft_ms",
    "lag_p99_ms",
    "lag_max_ms",
    "long_tasks",
    "ui_updates_per_s",
    "input_p99_ms",
    "cancel_p99_ms",
)

_BLOCK = re.compile(
    r"<!-- bench:(?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->", re.S
)


class ReadmeFiguresError(Exception):
    """A block or a run that cannot be matched; the message is one sentence for the user."""


def cell(value: object) -> str:
    """One table cell: thousands separated, two decimals below 100, a dash for "not measured"."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def render_block(payload: dict[str, Any]) -> str:
    """The Markdown of one run: what was run and when, the table, every target's verdict."""
    command = payload.get("command") or "tkchat bench"
    when = str(payload.get("started", "?")).replace("T", " ")
    lines = [
        f"`{command}` — {when}, Python {payload.get('python', '?')}, Tk {payload.get('tk', '?')}:",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for run in payload.get("runs", []):
        lines.append("| " + " | ".join(cell(run.get(c)) for c in COLUMNS) + " |")
    lines.append("")
    for target in payload.get("targets", []):
        verdict = "PASS" if target.get("pass") else "FAIL"
        lines.append(f"- {verdict} — {target.get('target')}: {target.get('figure')}")
    return "\n".join(lines) + "\n"


def blocks(readme_text: str) -> dict[str, str]:
    """Every bench block of the README, by name: its text between the two markers."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(readme_text)}


def load_run(name: str, runs_dir: Path = RUNS_DIR) -> dict[str, Any]:
    path = runs_dir / f"{name}.json"
    try:
        payload: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadmeFiguresError(f"There is no run {name!r} ({path} is missing).") from None
    return payload


def require_block(name: str, readme: Path = README) -> str:
    """The README's text, if it has block ``name``; otherwise one sentence saying what to do
    (checked before a bench run, so a long run is not wasted on a typo)."""
    if not readme.is_file():
        raise ReadmeFiguresError(
            f"--readme needs the source tree's README.md ({readme} not found): run the bench "
            "from a clone, installed with pip install -e ."
        )
    text = readme.read_text(encoding="utf-8")
    if name not in blocks(text):
        raise ReadmeFiguresError(
            f"README.md has no block {name!r}: add the two lines <!-- bench:{name} --> and "
            f"<!-- /bench:{name} --> where its figures belong."
        )
    return text


def update_readme(
    name: str, payload: dict[str, Any], *, readme: Path = README, runs_dir: Path = RUNS_DIR
) -> Path:
    """Keep ``payload`` as run ``name`` and rewrite its block in ``readme`` from it. A README
    without the block is refused (with the markers to add), so no run is kept that no reader
    sees."""
    text = require_block(name, readme)
    runs_dir.mkdir(parents=True, exist_ok=True)
    (runs_dir / f"{name}.json").write_text(
        json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    fresh = render_block(payload)
    text = _BLOCK.sub(lambda m: m.group(0) if m["name"] != name else _wrap(name, fresh), text)
    readme.write_text(text, encoding="utf-8")
    return readme


def _wrap(name: str, body: str) -> str:
    return f"<!-- bench:{name} -->\n{body}<!-- /bench:{name} -->"
