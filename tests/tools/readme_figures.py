"""The bench figures of docs/bench.md, written by the bench itself and checked by a test.

(The module keeps its name from when these tables were in the README.) A figure typed into a
page by hand drifts: the code changes, the number stays. So the "latest run" tables of
docs/bench.md are never typed. ``tkchat bench … --json docs/runs/NAME.json`` keeps a run;
``python -m tests.tools.readme_figures`` (from a clone) rewrites each block between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` from its kept run;
``tests/test_readme_figures.py`` renders every block again from its JSON and fails when the
page says anything else (a hand edit, a JSON without its block, a block without its run).

Plain functions on plain data (no Tk, no model): any thread, usually the bench's main one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RUNS_DIR = ROOT / "docs" / "runs"
BENCH_PAGE = ROOT / "docs" / "bench.md"  # the page whose bench blocks these are

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


# A run of ``tkchat bench --saving`` (bytes written to save one answer) has its own columns.
SAVING_COLUMNS = [
    "rate",
    "chars",
    "commits",
    "bytes_written",
    "bytes_per_char",
    "db_bytes",
    "wal_bytes",
]


def render_block(payload: dict[str, Any]) -> str:
    """The Markdown of one run: what was run and when, the table, every target's verdict."""
    command = payload.get("command") or "tkchat bench"
    when = str(payload.get("started", "?")).replace("T", " ")
    saving = "flush_interval_s" in payload
    # a run may name its own columns (--long-chat does)
    columns = payload.get("columns") or (SAVING_COLUMNS if saving else COLUMNS)
    made_with = f"SQLite {payload.get('sqlite', '?')}" if saving else f"Tk {payload.get('tk', '?')}"
    load = payload.get("load_1min")  # (runs kept before it was recorded have none)
    busy = f", 1-minute load {load[0]} → {load[1]}" if load else ""
    lines = [
        f"`{command}` — {when}, Python {payload.get('python', '?')}, {made_with}{busy}:",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for run in payload.get("runs", []):
        lines.append("| " + " | ".join(cell(run.get(c)) for c in columns) + " |")
    lines.append("")
    for target in payload.get("targets", []):
        verdict = "PASS" if target.get("pass") else "FAIL"
        lines.append(f"- {verdict} — {target.get('target')}: {target.get('figure')}")
    return "\n".join(lines) + "\n"


def blocks(page_text: str) -> dict[str, str]:
    """Every bench block of a page, by name: its text between the two markers."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(page_text)}


def load_run(name: str, runs_dir: Path = RUNS_DIR) -> dict[str, Any]:
    path = runs_dir / f"{name}.json"
    try:
        payload: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadmeFiguresError(f"There is no run {name!r} ({path} is missing).") from None
    return payload


def rewrite_blocks(page: Path = BENCH_PAGE, runs_dir: Path = RUNS_DIR) -> list[str]:
    """Render every block of ``page`` again from its kept run; the names rewritten. A block
    without a run is refused (so no block goes on quoting a run nobody kept)."""
    text = page.read_text(encoding="utf-8")
    names = sorted(blocks(text))
    fresh = {name: render_block(load_run(name, runs_dir)) for name in names}
    text = _BLOCK.sub(lambda m: _wrap(m["name"], fresh[m["name"]]), text)
    page.write_text(text, encoding="utf-8")
    return names


def _wrap(name: str, body: str) -> str:
    return f"<!-- bench:{name} -->\n{body}<!-- /bench:{name} -->"


def main() -> int:
    """``python -m tests.tools.readme_figures``: every block from its kept run."""
    try:
        names = rewrite_blocks()
    except ReadmeFiguresError as exc:
        print(exc)
        return 2
    print(f"rewrote {BENCH_PAGE}: {', '.join(names) or 'no blocks'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
