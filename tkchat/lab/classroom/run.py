"""``tkchat bench --class N``: N students share one ``tkchat serve`` for a few minutes.

The server runs in a process of its own, as a teacher would start it (``python -m tkchat
serve`` with the bench's model options); the students are threads of this process
(:mod:`.students`), each with its own name and conversation, on the loopback; a monitor asks
``GET /health`` a few times a second, as a dashboard would. At the end every request is
accounted for:

- **answered** (a ``done``), **refused** (429/503, with the kind; the student tries again after
  ``Retry-After``), **failed** (an ``error`` event) or **lost** (accepted, then no final event:
  must be 0);
- **told its place**: a request that waited got a ``queued`` event before its turn;
- **not mixed up**: each stream is one generation, seq 1..n without a gap, no generation went
  to two students, and with ``--echo`` every answer begins with its own student's question;
- **in order**: sorted by ticket (the order of arrival), the generations only grow (FIFO),
  but for the places the line deferred (a share that owed model time gave its place up:
  ``counts["deferred"]``, :mod:`tkchat.serve.line`);
- the **line's waits** (send → the turn, p50/p90/p99/max), the **estimates** it told against
  the waits that followed, and ``/health``'s latency (p50/p99/max) while the line was long,
  beside an idle twin server's at the same moments (the machine's share of it);
- **each student's** figures (``per_student``): requests, answered, refused, how many waited
  in line, the median and longest wait, how much later than its first estimate its turn
  came (median), the median time to the first text.

With ``port`` (``--port``) the class uses a ``tkchat serve`` already running on this machine
(the one the class will use, with its model and limits: the class plan starts it before the
class) instead of starting one; the server's counts are then those of the class alone (the
difference from before it), and answers are not checked for their owner's question (that
needs the scripted backend's ``--echo``).

Figures, not verdicts: the run is kept (``--json``) with where and when it ran; no test asserts
its absolute figures (tests/test_class_bench.py runs a short class and checks the accounting).
"""

from __future__ import annotations

import http.client
import json
import os
import platform
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tkchat.lab.bench.sse_bench import free_port, server_process
from tkchat.lab.classroom.students import Ask, Student
from tkchat.stats import percentile, rounded

HEALTH_EVERY_S = 0.25
LONG_FACTOR = 8  # how much longer a long-answer student's answers are (--long-every)
IDLE_S = 10.0  # /health on the idle server first: the baseline of the same run and machine


@dataclass(frozen=True)
class ClassOptions:
    students: int = 30
    duration_s: float = 180.0
    read_s: tuple[float, float] = (4.0, 12.0)  # how long a student reads an answer
    arrive_s: float = 10.0  # students arrive within this many seconds of the start
    max_tokens: int = 64
    # Every ``long_every``-th student (0: none) asks for answers LONG_FACTOR times as long:
    # a real class mixes short questions with "explain it all", and a long answer ahead in
    # the line is what a queue's estimate has to foresee.
    long_every: int = 0
    model_args: tuple[str, ...] = ("--backend", "scripted", "--echo")  # for tkchat serve
    echo: bool = True  # the backend echoes the question: check each answer's owner
    seed: int = 23
    idle_s: float = IDLE_S
    json_path: Path | None = None
    port: int | None = None  # a tkchat serve already running here: the class uses it


class HealthMonitor(threading.Thread):
    """Asks ``GET /health`` every :data:`HEALTH_EVERY_S` on a fresh connection, as a
    dashboard would; keeps each answer's latency and the line's length.

    Two baselines from the same run: the class's server before the class begins, and, at the
    same moments as during the class, a twin ``tkchat serve`` that nobody uses (``twin_port``).
    What the machine does to a request (other programs, this process's threads) it does to
    both; what the line costs shows only in the class's."""

    def __init__(self, port: int, twin_port: int | None = None) -> None:
        super().__init__(name="health-monitor", daemon=True)
        self.port = port
        self.twin_port = twin_port
        self.stop = threading.Event()
        self.latencies_ms: list[float] = []
        self.idle_ms: list[float] = []  # before the class began: the baseline
        self.twin_ms: list[float] = []  # the idle twin, asked right after each class request
        self.class_began = False
        self.waiting: list[int] = []
        self.failures = 0
        self.last: dict[str, Any] = {}
        self.counts_before: dict[str, int] = {}  # the server's line counts as the class began

    def run(self) -> None:
        while not self.stop.wait(HEALTH_EVERY_S):
            self.ask()

    def ask(self) -> None:
        answer = _timed_health(self.port)
        if answer is None:
            self.failures += 1
            return
        took, health = answer
        if not self.class_began:
            self.idle_ms.append(took)
            self.counts_before = dict(health.get("line", {}).get("counts", {}))
            return
        self.latencies_ms.append(took)
        self.waiting.append(int(health["line"]["waiting"]))
        self.last = health
        twin = _timed_health(self.twin_port) if self.twin_port else None
        if twin is not None:
            self.twin_ms.append(twin[0])


def _timed_health(port: int) -> tuple[float, dict[str, Any]] | None:
    """``GET /health`` on a fresh connection: milliseconds and the answer (None: it failed)."""
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        return (time.perf_counter() - began) * 1000, health
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def run_class_bench(options: ClassOptions) -> int:
    """Run the class; print the figures (and write them to ``json_path``); exit status 1 if a
    request was lost, mixed up or served out of order; 2 if ``port`` was given and no
    tkchat serve answers there."""
    port = options.port or free_port()
    if options.port is not None and _timed_health(port) is None:
        print(f"tkchat bench --class: no tkchat serve answers /health at 127.0.0.1:{port}")
        return 2
    command = [sys.executable, "-m", "tkchat", "serve", *options.model_args]
    longest = options.max_tokens * (LONG_FACTOR if options.long_every else 1)
    command += ["--port", str(port), "--max-answer-tokens", str(max(longest, 1))]
    started = datetime.now().isoformat(timespec="seconds")
    load_before = os.getloadavg()
    twin_port = free_port()
    twin = [sys.executable, "-m", "tkchat", "serve", "--backend", "scripted"]
    with ExitStack() as servers:
        if options.port is None:
            servers.enter_context(server_process(command, f"http://127.0.0.1:{port}/health"))
        servers.enter_context(
            server_process(
                [*twin, "--port", str(twin_port)], f"http://127.0.0.1:{twin_port}/health"
            )
        )
        asks, monitor, seconds = _run_class(port, twin_port, options)
    figures = class_figures(asks, monitor, options)
    figures = {
        "command": "tkchat bench --class " + " ".join(_shown_args(options)),
        "started": started,
        "where": _machine(load_before),
        "seconds": round(seconds, 1),
        "options": {k: v for k, v in asdict(options).items() if k != "json_path"},
        **figures,
    }
    print(summary(figures))
    if options.json_path is not None:
        options.json_path.parent.mkdir(parents=True, exist_ok=True)
        options.json_path.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    problems = figures["lost"] + figures["mixed_up"] + figures["out_of_order"]
    return 1 if problems or figures["not_told_place"] else 0


def _run_class(
    port: int, twin_port: int, options: ClassOptions
) -> tuple[list[Ask], HealthMonitor, float]:
    monitor = HealthMonitor(port, twin_port)
    monitor.start()
    time.sleep(options.idle_s)
    monitor.ask()  # one idle reading for sure: the server's counts before the class
    monitor.class_began = True
    began = time.perf_counter()
    deadline = began + options.duration_s
    extra = {"read_s": options.read_s, "arrive_s": options.arrive_s}
    students = [
        Student(
            student_name(index),
            port,
            deadline,
            {**extra, "max_tokens": answer_tokens(options, index)},
            seed=options.seed * 1000 + index,
        )
        for index in range(options.students)
    ]
    for student in students:
        student.start()
    for student in students:  # the last questions may still be in line: they are answered
        student.join(options.duration_s + 600)
    monitor.stop.set()
    monitor.join(10)
    monitor.ask()  # the server's own counts, after the class
    return [ask for s in students for ask in s.asks], monitor, time.perf_counter() - began


def class_figures(asks: list[Ask], monitor: HealthMonitor, options: ClassOptions) -> dict[str, Any]:
    """Every request accounted for (see the module)."""
    answered = [a for a in asks if a.answered]
    served = sorted((a for a in asks if a.gen is not None and a.ticket is not None), key=_ticket)
    gens = [a.gen for a in served if a.gen is not None]
    waited = [a for a in answered if a.places]
    counts = _counts_since(monitor)
    return {
        "students": options.students,
        "requests": len(asks),
        "answered": len(answered),
        "refused": _count(a.kind for a in asks if a.status not in (0, 200)),
        "failed": _count(a.reason or "" for a in asks if a.final == "error"),
        "client_errors": _count(a.kind for a in asks if a.status == 0),
        "lost": sum(a.lost for a in asks),
        "mixed_up": _mixed(answered, options.echo),
        # a share that owed model time gave up its place (tkchat/serve/line.py): each such
        # deferral puts one answer after a later ticket, and is the line's rule, not a slip
        "out_of_order": max(
            0,
            sum(1 for x, y in zip(gens, gens[1:], strict=False) if y <= x)
            - counts.get("deferred", 0),
        ),
        "waited_in_line": len(waited),
        # The server said (x-tkchat-place) it joined behind others, yet no place came first.
        "not_told_place": sum(1 for a in answered if (a.joined_at or 0) > 0 and not a.places),
        "longest_line_seen": max((p[1] for a in asks for p in a.places), default=0),
        "wait_s": _spread([a.wait_s for a in answered if a.wait_s is not None]),
        "wait_in_line_s": _spread([a.wait_s for a in waited if a.wait_s is not None]),
        "first_text_s": _spread([a.first_text_at - a.sent for a in answered if a.first_text_at]),
        "answer_tokens": _spread([float(a.tokens) for a in answered]),
        "eta_error_s": _eta_errors(waited),
        "health_ms": _spread(monitor.latencies_ms, digits=1) | {"count": len(monitor.latencies_ms)},
        "health_idle_ms": _spread(monitor.idle_ms, digits=1) | {"count": len(monitor.idle_ms)},
        "health_twin_ms": _spread(monitor.twin_ms, digits=1) | {"count": len(monitor.twin_ms)},
        "health_failures": monitor.failures,
        "line_length": _line_length(monitor.waiting),
        "server_counts": counts,
        "server_turn_s": monitor.last.get("line", {}).get("turn_s"),
        "per_student": per_student(asks, [student_name(i) for i in range(options.students)]),
    }


def _counts_since(monitor: HealthMonitor) -> dict[str, int]:
    """The server's line counts during the class: after it, less before it (a server started
    for the class had none; one already running has its earlier requests)."""
    after: dict[str, int] = monitor.last.get("line", {}).get("counts", {})
    return {kind: n - monitor.counts_before.get(kind, 0) for kind, n in after.items()}


def student_name(index: int) -> str:
    return f"s{index:02d}"


def per_student(asks: list[Ask], names: list[str]) -> list[dict[str, Any]]:
    """Each student's requests and what became of them, in the students' order (``names``,
    and any other that asked; one who never got to ask has a row of zeros): answered, refused
    (429/503), failed or lost; how many waited in line; the median and longest wait (send →
    its turn); the median error of the first estimate it was told (the wait that followed
    it, less it: > 0 later than told) and the median time to the first text (send → first
    text)."""
    rows = []
    for student in sorted(set(names) | {a.student for a in asks}):
        own = [a for a in asks if a.student == student]
        answered = [a for a in own if a.answered]
        waits = [a.wait_s for a in answered if a.places and a.wait_s is not None]
        firsts = [a.first_text_at - a.sent for a in answered if a.first_text_at is not None]
        off = eta_errors([a for a in answered if a.places])
        rows.append(
            {
                "student": student,
                "requests": len(own),
                "answered": len(answered),
                "refused": sum(1 for a in own if a.status not in (0, 200)),
                "failed": sum(1 for a in own if a.final == "error" or a.status == 0 or a.lost),
                "waited": len(waits),
                "wait_p50_s": rounded(percentile(waits, 50)),
                "wait_max_s": rounded(max(waits)) if waits else None,
                "eta_error_p50_s": rounded(percentile(off, 50)),
                "first_text_p50_s": rounded(percentile(firsts, 50)),
            }
        )
    return rows


STUDENT_COLUMNS = (
    ("student", "student"),
    ("requests", "asked"),
    ("answered", "answered"),
    ("refused", "refused"),
    ("failed", "failed"),
    ("waited", "waited"),
    ("wait_p50_s", "wait p50 s"),
    ("wait_max_s", "wait max s"),
    ("eta_error_p50_s", "later than told p50 s"),
    ("first_text_p50_s", "first text p50 s"),
)


def student_table(rows: list[dict[str, Any]]) -> list[str]:
    """The per-student figures as a text table, one line a student (``-``: no figure)."""
    cells = [[title for _, title in STUDENT_COLUMNS]]
    cells += [
        ["-" if row[key] is None else str(row[key]) for key, _ in STUDENT_COLUMNS] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(STUDENT_COLUMNS))]
    return [
        "  "
        + "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    ]


def _line_length(samples: list[int]) -> dict[str, float | None]:
    """How many waited, as the monitor saw it a few times a second."""
    if not samples:
        return {"max": None, "mean": None}
    return {"max": max(samples), "mean": rounded(sum(samples) / len(samples), 1)}


def _ticket(ask: Ask) -> int:
    return ask.ticket or 0


def _count(kinds: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _mixed(answered: list[Ask], echo: bool) -> int:
    """Answers that are not one whole generation, that share a generation with another
    answer, or (echo) that do not begin with their own question."""
    seen: dict[int, int] = {}
    for ask in answered:
        if ask.gen is not None:
            seen[ask.gen] = seen.get(ask.gen, 0) + 1
    return sum(
        1
        for a in answered
        if not a.whole() or seen.get(a.gen or -1, 0) > 1 or (echo and not _own(a))
    )


def _own(ask: Ask) -> bool:
    """The echoed answer begins with this student's question (or, cut short by its length,
    with as much of it as fits — its "[student, question n]" at least)."""
    name = ask.question[: ask.question.index("]") + 1]
    text = ask.text
    return text.startswith(name) and (
        text.startswith(ask.question) or ask.question.startswith(text)
    )


def _spread(values: list[float], digits: int = 2) -> dict[str, float | None]:
    return {
        "p50": rounded(percentile(values, 50), digits),
        "p90": rounded(percentile(values, 90), digits),
        "p99": rounded(percentile(values, 99), digits),
        "max": rounded(max(values), digits) if values else None,
    }


def eta_errors(asks: list[Ask]) -> list[float]:
    """Told against actual: for each request told an estimate while it waited, the wait that
    followed the first estimate, less that estimate (> 0: its turn came later than told)."""
    errors = []
    for ask in asks:
        told = next(((t, eta) for t, _, eta in ask.places if eta is not None), None)
        if told is not None and ask.turn_at is not None:
            errors.append(ask.turn_at - told[0] - told[1])
    return errors


def _eta_errors(waited: list[Ask]) -> dict[str, Any]:
    errors = eta_errors(waited)
    absolute = [abs(e) for e in errors]
    return {
        "estimates": len(errors),
        "median_abs": rounded(percentile(absolute, 50)),
        "p90_abs": rounded(percentile(absolute, 90)),
        "median_signed": rounded(percentile(errors, 50)),
        "p90_signed": rounded(percentile(errors, 90)),
        "later_than_told": sum(1 for e in errors if e > 0),
    }


def _machine(load_before: tuple[float, float, float]) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return {
        "host": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def answer_tokens(options: ClassOptions, index: int) -> int:
    """The length the ``index``-th student (from 0) asks for: every ``long_every``-th, the
    first included, asks for LONG_FACTOR times the others'."""
    long = options.long_every > 0 and index % options.long_every == 0
    return options.max_tokens * (LONG_FACTOR if long else 1)


def _shown_args(options: ClassOptions) -> list[str]:
    model = ["--port", str(options.port)] if options.port is not None else options.model_args
    return [
        str(options.students),
        "--duration",
        f"{options.duration_s:g}",
        "--tokens",
        str(options.max_tokens),
        *(["--long-every", str(options.long_every)] if options.long_every else []),
        *model,
    ]


def summary(figures: dict[str, Any]) -> str:
    """The figures a teacher reads first, as lines of text."""
    wait, health, twin = figures["wait_in_line_s"], figures["health_ms"], figures["health_twin_ms"]
    eta = figures["eta_error_s"]
    return "\n".join(
        [
            f"tkchat bench --class: {figures['students']} students, {figures['seconds']} s, "
            f"{figures['requests']} requests",
            f"  answered {figures['answered']}, refused {figures['refused'] or 0}, failed "
            f"{figures['failed'] or 0}, lost {figures['lost']}, mixed up {figures['mixed_up']}, "
            f"out of order {figures['out_of_order']}",
            f"  waited in line: {figures['waited_in_line']} (told their place: all but "
            f"{figures['not_told_place']}); longest line {figures['longest_line_seen']}",
            f"  wait in line s: p50 {wait['p50']}, p90 {wait['p90']}, p99 {wait['p99']}, "
            f"max {wait['max']}",
            f"  estimate off by s: median {eta['median_abs']}, p90 {eta['p90_abs']} "
            f"({eta['estimates']} estimates); later than told by s: median "
            f"{eta['median_signed']}, p90 {eta['p90_signed']} ({eta['later_than_told']} later)",
            f"  /health ms: p50 {health['p50']}, p99 {health['p99']}, max {health['max']} "
            f"({health['count']} asked, {figures['health_failures']} failed); an idle twin "
            f"server at the same moments: p50 {twin['p50']}, p99 {twin['p99']}, max {twin['max']}",
            "  each student:",
            *student_table(figures.get("per_student", [])),
        ]
    )
