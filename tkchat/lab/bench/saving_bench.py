"""``tkchat bench --saving``: how many bytes saving one streamed answer writes, by its size.

Each answer (10,000, 100,000 and 1,000,000 characters by default) streams into a fresh
history on disk through the real :class:`~tkchat.store.writer.StoreWriter`, as the window
feeds it: a question, an empty streaming answer, the text a few characters at a time, then
its end with the whole text (the window's copy is authoritative). A stream's rate decides
how many commits it costs (one per ``FLUSH_INTERVAL_S`` with new text), so each answer is
saved at two rates, with a commit every ``rate × FLUSH_INTERVAL_S`` characters:

- ``flood``: :data:`FLOOD_CHARS_PER_S`, the scripted backend's flood through the window;
- ``model``: :data:`MODEL_CHARS_PER_S`, about 100 tokens a second, a fast local model.

Bytes written are this process's ``wchar`` in ``/proc/self/io``: every byte handed to
``write``, whatever the disk later does with it (the write-ahead log, the checkpoints
copying it into the database, the database growing). Where ``/proc`` has no such file
(not Linux), the figure is the size of the database and its log at the end, a lower bound.
Linear saving means bytes per character stay flat as the answer grows ten and a hundred
times; the quadratic scheme this replaced wrote 410 MB for one 1,000,000-character answer.

Runs on the main thread, no window; the writer has its own thread, as in the app.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tkchat.lab.bench.figures import Check
from tkchat.store.db import ConversationStore
from tkchat.store.writer import FLUSH_INTERVAL_S, StoreWriter

SIZES = (10_000, 100_000, 1_000_000)
FLOOD_CHARS_PER_S = 20_000.0
MODEL_CHARS_PER_S = 400.0
RATES = {"flood": FLOOD_CHARS_PER_S, "model": MODEL_CHARS_PER_S}
TOKEN = "word "  # one appended piece: a token's text
LINEAR_RATIO = 2.0  # bytes per character may grow this much from the smallest answer up


@dataclass(frozen=True)
class SavingFigures:
    """One answer saved at one rate."""

    rate: str
    chars: int
    commits: int  # flushes while it streamed (its end is one more)
    bytes_written: int
    db_bytes: int  # the database file at the end
    wal_bytes: int  # its write-ahead log at the end (0: emptied after the answer)
    source: str  # "wchar" or "files" (see the module docstring)

    @property
    def bytes_per_char(self) -> float:
        return self.bytes_written / self.chars


def written_bytes() -> int | None:
    """This process's bytes handed to ``write`` so far; None without ``/proc/self/io``."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def save_one(folder: Path, chars: int, rate: str) -> SavingFigures:
    """Stream one answer of ``chars`` characters into a new history in ``folder``."""
    path = folder / f"{rate}-{chars}.sqlite3"
    text = (TOKEN * (chars // len(TOKEN) + 1))[:chars]
    per_commit = max(1, int(RATES[rate] * FLUSH_INTERVAL_S))
    with ConversationStore(path) as store:
        conversation = store.create("bench")
        store.add_message(conversation.id, "user", "tell me everything")
    writer = StoreWriter(path, flush_interval=3600.0)  # commits are the bench's: see below
    before = written_bytes()
    commits = 0
    try:
        answer = writer.add_message(conversation.id, "assistant", "", status="streaming")
        since = 0
        for start in range(0, chars, len(TOKEN)):
            piece = text[start : start + len(TOKEN)]
            writer.append(answer, piece)
            since += len(piece)
            if since >= per_commit:  # what the flush interval does at this rate
                writer.flush(timeout=60)
                commits, since = commits + 1, 0
        writer.finish(answer, "complete", content=text)
        writer.flush(timeout=120)
    finally:
        writer.close(timeout=120)
    after = written_bytes()
    wal = path.with_name(path.name + "-wal")
    db_bytes, wal_bytes = path.stat().st_size, wal.stat().st_size if wal.exists() else 0
    if before is None or after is None:
        return SavingFigures(
            rate, chars, commits, db_bytes + wal_bytes, db_bytes, wal_bytes, "files"
        )
    return SavingFigures(rate, chars, commits, after - before, db_bytes, wal_bytes, "wchar")


def measure_saving(
    sizes: tuple[int, ...] = SIZES, rates: tuple[str, ...] = tuple(RATES)
) -> list[SavingFigures]:
    """Every size at every rate, each in a history of its own (in a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="tkchat-saving-") as folder:
        return [save_one(Path(folder), chars, rate) for rate in rates for chars in sizes]


def saving_verdicts(runs: list[SavingFigures]) -> list[Check]:
    """Per rate: bytes per character of the largest answer within :data:`LINEAR_RATIO` of
    the smallest's (linear), and the log empty after every answer."""
    checks: list[Check] = []
    for rate in dict.fromkeys(r.rate for r in runs):
        mine = sorted((r for r in runs if r.rate == rate), key=lambda r: r.chars)
        small, large = mine[0], mine[-1]
        ratio = large.bytes_per_char / small.bytes_per_char
        checks.append(
            Check(
                f"saving grows linearly ({rate})",
                ratio <= LINEAR_RATIO,
                f"{small.bytes_per_char:.1f} B/char at {small.chars:,}, "
                f"{large.bytes_per_char:.1f} at {large.chars:,} (×{ratio:.2f})",
            )
        )
    leftover = max(r.wal_bytes for r in runs)
    checks.append(
        Check("write-ahead log emptied after each answer", leftover == 0, f"{leftover} B")
    )
    return checks


def format_saving(runs: list[SavingFigures]) -> str:
    lines = [
        f"{'rate':<6} {'chars':>10} {'commits':>8} {'written':>12} {'B/char':>7} "
        f"{'db':>10} {'wal':>6}"
    ]
    for r in runs:
        lines.append(
            f"{r.rate:<6} {r.chars:>10,} {r.commits:>8,} {r.bytes_written:>12,} "
            f"{r.bytes_per_char:>7.1f} {r.db_bytes:>10,} {r.wal_bytes:>6,}"
        )
    return "\n".join(lines)


def run_saving_bench(json_out: Path | None = None, sizes: tuple[int, ...] = SIZES) -> int:
    """Measure, print the table and the verdicts; exit status 0 (1 if a verdict fails)."""
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    runs = measure_saving(sizes)
    checks = saving_verdicts(runs)
    print(f"bytes written to save one streamed answer (commit every {FLUSH_INTERVAL_S} s)")
    print(format_saving(runs))
    print()
    for check in checks:
        print(check.line)
    if json_out is not None:
        payload = {
            "command": "tkchat " + shlex.join(sys.argv[1:]),
            "started": started,
            "python": sys.version.split()[0],
            "sqlite": sqlite3.sqlite_version,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "flush_interval_s": FLUSH_INTERVAL_S,
            "rates_chars_per_s": RATES,
            "runs": [{**asdict(r), "bytes_per_char": round(r.bytes_per_char, 2)} for r in runs],
            "targets": [check.as_json() for check in checks],
        }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {json_out}")
    return 0 if all(check.ok for check in checks) else 1


__all__ = [
    "SIZES",
    "SavingFigures",
    "format_saving",
    "measure_saving",
    "run_saving_bench",
    "save_one",
    "saving_verdicts",
    "written_bytes",
]
