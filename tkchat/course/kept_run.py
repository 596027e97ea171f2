"""Where the figures a lesson quotes come from: the kept run, and what it says about itself.

``lessons/figures.json`` holds, for each lesson and language, the figures of the last run of
its demo that ``tkchat bench --lessons --write`` kept, and for each such run where and when
it was measured: the date, the machine, its load and the idle window's lag at the time. A
lesson shows its quotes as what they are — one machine's figures on one day ("measured on
…") — and the live figures under it are this machine's, now. No test compares the two.

Tk-free: files and plain data, any thread.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tkchat.course.claims import format_figure
from tkchat.i18n.lesson_panel import STRINGS

FIGURES_FILE = "lessons/figures.json"  # as a reader finds it in the repository
# The idle window's lag p99 above which a machine is too busy to measure figures for a
# lesson to quote (a quiet laptop: 0.2-0.6 ms; two programs keeping its cores busy: 3-15).
BUSY_IDLE_LAG_P99_MS = 2.0
BUSY_IDLE_CPU_WAIT_SHARE = 0.05
DEFAULT_COMMAND = "tkchat bench --lessons --write"


@dataclass(frozen=True, slots=True)
class KeptRun:
    """Where and when a kept run measured its figures."""

    date: str  # YYYY-MM-DD
    machine: str | None  # "Intel(R) Xeon(R) …, 2 cores, Linux 6.1" (None: not recorded)
    load: float | None  # the 1-minute load average as the run began
    idle_lag_p99_ms: float | None  # the idle window's lag p99 as the run began
    command: str = DEFAULT_COMMAND

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeptRun:
        def number(key: str) -> float | None:
            value = data.get(key)
            return float(value) if isinstance(value, (int, float)) else None

        machine = data.get("machine")
        return cls(
            date=str(data.get("date", "")),
            machine=machine if isinstance(machine, str) and machine else None,
            load=number("load"),
            idle_lag_p99_ms=number("idle_lag_p99_ms"),
            command=str(data.get("command") or DEFAULT_COMMAND),
        )

    def describe(self, language: str) -> str:
        """One sentence for the lesson: "Figures quoted here were measured on …"."""
        strings = STRINGS[language if language in STRINGS else "en"]
        if self.machine is None:
            where = strings["lesson.kept.unknown_machine"]
        else:
            where = strings["lesson.kept.machine"].format(
                machine=self.machine,
                load="—" if self.load is None else f"{self.load:.1f}",
                idle="—"
                if self.idle_lag_p99_ms is None
                else format_figure("lag_ms", self.idle_lag_p99_ms, language),
            )
        return strings["lesson.kept.run"].format(
            date=self.date, where=where, command=self.command, file=FIGURES_FILE
        )


def this_machine() -> str:
    """This machine in a few words: its processor, how many cores, its system."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            names = [
                line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")
            ]
        model = names[0] if names else model
    except OSError:
        pass
    return f"{model}, {os.cpu_count() or 1} cores, {platform.system()} {platform.release()}"


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):  # not on this system
        return None


def now_run(idle_lag_p99_ms: float | None) -> KeptRun:
    """The provenance of a run starting now on this machine."""
    return KeptRun(time.strftime("%Y-%m-%d"), this_machine(), load_average(), idle_lag_p99_ms)


def too_busy(idle: Mapping[str, float | None]) -> str | None:
    """Why the idle window's figures say this machine is too busy to measure figures for a
    lesson to quote (None: it is quiet enough)."""
    p99 = idle.get("lag_p99_ms")
    share = idle.get("cpu_wait_share")
    if p99 is not None and p99 > BUSY_IDLE_LAG_P99_MS:
        return (
            f"the idle window's lag p99 is {p99:g} ms (a quiet machine: under "
            f"{BUSY_IDLE_LAG_P99_MS:g} ms)"
        )
    if share is not None and share > BUSY_IDLE_CPU_WAIT_SHARE:
        return f"the idle window waited for a CPU {share:.0%} of the time"
    return None


# -- the file --------------------------------------------------------------------------------


def read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def kept_run_of(path: Path, lesson_id: str, language: str) -> KeptRun | None:
    """The kept run that measured ``lesson_id``'s quotes in ``language`` (None: none)."""
    data = read(path)
    name = data.get("measured_in", {}).get(lesson_id, {}).get(language)
    run = data.get("runs", {}).get(name) if isinstance(name, str) else None
    return KeptRun.from_json(run) if isinstance(run, dict) else None


def keep(
    path: Path, run: KeptRun, figures: Mapping[tuple[str, str], Mapping[str, float | None]]
) -> None:
    """Merge ``figures`` (``{(lesson id, language): {metric: value}}``) into the file, as
    measured by ``run``; runs no lesson quotes any more leave the file."""
    data = read(path)
    lessons = data.setdefault("lessons", {})
    runs = data.setdefault("runs", {})
    measured_in = data.setdefault("measured_in", {})
    name = f"{run.date} {time.strftime('%H:%M')}"
    runs[name] = asdict(run)
    for (lesson_id, language), values in figures.items():
        kept = {metric: value for metric, value in values.items() if value is not None}
        lessons.setdefault(lesson_id, {})[language] = kept
        measured_in.setdefault(lesson_id, {})[language] = name
    used = {name for by_language in measured_in.values() for name in by_language.values()}
    data["runs"] = {key: value for key, value in runs.items() if key in used}
    data.pop("measured", None)  # the old single date: each run has its own now
    data["how"] = (
        "tkchat bench --lessons --write (every lesson's demo, in the real window); "
        "runs: where and when each was measured"
    )
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
