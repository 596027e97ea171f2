"""``python -m tests.tools.hostile``: the real window against servers that attack it, measured.

Every figure of the table "Hostile servers and answers" in docs/security.md comes from this
module, and so does every bound it quotes: :data:`CASES` is the one list of attacks, with
what each must end in and the bounds it is held to. Three things read it:

- ``python -m tests.tools.hostile`` (:func:`run_hostile_bench`) runs the cases, prints the table
  (:func:`format_table`) and the verdicts (:func:`verdicts`), and prints docs/security.md's rows
  (:mod:`tests.tools.hostile_readme`) to paste in;
- tests/test_bench_hostile.py runs the same script (:func:`hostile_script`) and fails when a
  case breaks its bound, or when docs/security.md's rows say something this run does not;
- docs/security.md, whose rows that test parses (:mod:`tests.tools.hostile_readme` says where
  a row and a run may differ).

The same run measures the two other sides the page's second section quotes:
``tkchat serve`` under half-open sockets (:mod:`tests.tools.hostile_serve`) and the
browser page's markdown in Chromium (:mod:`tests.tools.hostile_page`); their sentences
sit between markers on that page too, and are checked the same way.

A case is one answer from a hostile server (:mod:`tests.tools.hostile_server`) to one
Send in one real window (``tkchat serve``'s protocol, a ``RemoteBackend``). Its figures are
the main loop's worst lag and long tasks while the answer streams and renders (the window's
own lag probe), what the window shows (the final event, the status line's length), and how
much resident memory grew. Where the harm the budget prevents costs only a second or two
to show, the unprotected path runs in the same run as the case's baseline (Python-Markdown
on its own; a Tk text widget given the long line without soft breaks), and the table gives
the ratio: baseline / the window's worst lag under the same attack. Lag is load-dependent,
so the page quotes one run's figures beside the bound a test holds them to.

Main thread only (scripts are resumed by the Tk loop: see ``tkchat/lab/bench/script.py``),
except the trickling ``/health`` case, whose connect runs on a thread of its own while the
rest runs, because it takes the whole handshake deadline (20 s of the bench's 22).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import tkinter as tk
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.tools.hostile_page import (
    PageFigures,
    measure_page,
    page_verdicts,
    readme_sentence,
)
from tests.tools.hostile_serve import (
    HalfOpenFigures,
    measure_half_open,
    serve_verdicts,
)
from tests.tools.hostile_serve import readme_row as serve_readme_row
from tests.tools.hostile_server import Conn, Handler, HostileServer, event, tkchat_health
from tkchat.events import Done, Error
from tkchat.lab.bench.figures import lag_figures, own_lag_figures
from tkchat.lab.bench.script import Script
from tkchat.lab.window import LabWindow, instruments_of
from tkchat.limits import HANDSHAKE_TIMEOUT_S, cut
from tkchat.stats import rounded, rss_mb

SETTLE_S = 0.3  # after an answer: a late timer of a frozen window fires, the render finishes
# The window's worst lag under any attack: a freeze was seconds. Wide, because CI shares two
# cores: under a load average of 3 a case reached 52 ms where it usually takes 2-20 ms.
LAG_BOUND_MS = 250.0
RSS_BOUND_MB = 64.0  # memory an attack may add (unbounded reading grew without end)
MIN_BASELINE_RATIO = 3.0  # the unprotected path costs at least this many times the worst lag

# -- the attacks: what a hostile server answers to POST /chat -------------------------------------


def huge_error(conn: Conn) -> None:
    """An ``error`` event of a megabyte, just under the event budget."""
    conn.head()
    error = {"kind": "x", "message": "disk on fire " * (1_000_000 // 13 - 10)}
    conn.send(event({"type": "error", "gen": 1, "seq": 1, "error": error}))


def blank_lines_forever(conn: Conn) -> None:
    """200 text/event-stream, then nothing but line ends, as fast as TCP goes."""
    conn.head()
    conn.forever(b"\n" * 65536)


def chunks_forever(conn: Conn) -> None:
    """A server that ignores ``max_tokens`` and streams until it is hung up on."""
    conn.head()
    conn.forever(event({"type": "chunk", "gen": 1, "seq": 1, "text": "la "}) * 64)


MARKDOWN_BOMB = "[" * 6000 + "\n\n" + "[a](" * 4000 + "\n\n" + "*a" * 3000 + "\n\nThe end."


def markdown_bombs(conn: Conn) -> None:
    """Blocks Python-Markdown is super-linear on, as an answer in 500-character chunks."""
    stream_text(conn, MARKDOWN_BOMB, 500)


def deep_json(conn: Conn) -> None:
    """An event nested 100,000 deep (``json.loads`` would raise RecursionError)."""
    conn.head()
    conn.send(b"data: " + b"[" * 100_000 + b"\n\n")


def stream_text(conn: Conn, text: str, piece: int) -> None:
    """``text`` as chunk events of ``piece`` characters, then ``done``."""
    conn.head()
    for seq, start in enumerate(range(0, len(text), piece), start=1):
        conn.send(
            event({"type": "chunk", "gen": 1, "seq": seq, "text": text[start : start + piece]})
        )
    conn.send(event({"type": "done", "gen": 1, "seq": 1 << 30, "reason": "stop", "stats": {}}))


def one_line(chars: int) -> str:
    return "abcdefghij" * (chars // 10)


def long_line(chars: int) -> Handler:
    """One line of ``chars`` characters without a space, in 3,000-character chunks."""
    text = one_line(chars)
    return lambda conn: stream_text(conn, text, 3000)


def trickle_health(every_s: float = 1.0) -> Handler:
    """``GET /health`` one byte every ``every_s`` seconds, so no idle timeout ever fires."""

    def handle(conn: Conn) -> None:
        body = json.dumps({"server": "tkchat", "n_ctx": 4096}).encode() * 100
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        for byte in body:
            conn.send(bytes([byte]))
            time.sleep(every_s)

    return handle


# -- the unprotected baselines ------------------------------------------------------------------


def plain_markdown_ms(_root: tk.Tk) -> float:
    """Python-Markdown on its own (no budget) on a quarter of the bomb's ``[`` run: its cost
    grows with the square of the run, so the whole bomb would freeze for many seconds."""
    import markdown

    started = time.perf_counter()
    markdown.markdown("[" * 1500)
    return (time.perf_counter() - started) * 1000


def unbroken_line_ms(chars: int) -> Callable[[tk.Tk], float]:
    """Tk laying out one line of ``chars`` characters, as the window did before soft
    breaks: insert it into a text widget and draw (main thread, blocked on purpose)."""

    def measure(root: tk.Tk) -> float:
        top = tk.Toplevel(root)
        text = tk.Text(top, wrap="char")
        text.pack()
        root.update()
        started = time.perf_counter()
        text.insert("end", one_line(chars))
        text.see("end")
        root.update()
        elapsed = (time.perf_counter() - started) * 1000
        top.destroy()
        return elapsed

    return measure


# -- the cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostileCase:
    """One attack: the table row's label, the answer, what the window must end with (a
    ``done`` reason, or an ``error`` whose message contains ``expect``) and its bounds."""

    id: str
    attack: str  # the table row's first cell
    before: str  # what the window did before the budget (issue 15), in words
    answer: Handler
    final: str  # "done:<reason>" or "error:<kind>"
    expect: str = ""  # in the error message shown
    lag_bound_ms: float = LAG_BOUND_MS
    rss_bound_mb: float = RSS_BOUND_MB
    baseline: Callable[[tk.Tk], float] | None = None
    baseline_what: str = ""


CASES: tuple[HostileCase, ...] = (
    HostileCase(
        "huge-error",
        "1 MB error message (tkchat protocol)",
        "froze for seconds; a status line of a megabyte",
        huge_error,
        "error:x",
        expect="disk on fire",
    ),
    HostileCase(
        "blank-lines",
        "`200 text/event-stream`, then `\\n` forever",
        '"Generating…" forever, memory growing',
        blank_lines_forever,
        "error:bad_stream",
        expect="without one event",
    ),
    HostileCase(
        "ignores-max-tokens",
        "a server that ignores `max_tokens`",
        "streamed without end until the window stopped answering",
        chunks_forever,
        "done:length",
    ),
    HostileCase(
        "line-330k",
        "one line of 330 KB",
        "one stall of seconds (the baseline)",
        long_line(330_000),
        "done:stop",
        baseline=unbroken_line_ms(330_000),
        baseline_what="Tk lays the line out unbroken",
    ),
    HostileCase(
        "line-2m",
        "one line of 2.2 MB",
        "a freeze of tens of seconds",
        long_line(2_200_000),
        "done:length",
    ),
    HostileCase(
        "markdown-bombs",
        '`"[" * 6000`, `"[a](" * 4000` and `"*a" * 3000`',
        "froze for seconds (the baseline: Python-Markdown backtracks)",
        markdown_bombs,
        "done:stop",
        baseline=plain_markdown_ms,
        baseline_what='Python-Markdown alone on `"[" * 1500`',
    ),
    HostileCase(
        "deep-json",
        "JSON nested 100,000 deep",
        '"RecursionError: maximum recursion depth exceeded…"',
        deep_json,
        "error:bad_stream",
        expect="nested too deeply",
    ),
)

TRICKLE_ID = "trickling-health"
TRICKLE_ATTACK = "`/health` at one byte a second"
TRICKLE_BEFORE = '"Loading server…" forever'


@dataclass
class CaseFigures:
    """What one case measured (JSON-ready)."""

    id: str
    final: str  # "done:<reason>" or "error:<kind>"
    message: str = ""  # the error shown, if any
    pieces: int | None = None  # a done's token count
    answer_chars: int | None = None
    line_max: int | None = None  # the longest line on screen, in characters
    errors_shown: int = 0
    status_chars: int = 0
    lag_max_ms: float | None = None
    own_lag_max_ms: float | None = None  # less the wait for a CPU (tkchat.stats.LagSample)
    lag_p99_ms: float | None = None
    long_tasks: int | None = None
    rss_growth_mb: float | None = None
    seconds: float | None = None
    baseline_ms: float | None = None

    @property
    def ratio(self) -> float | None:
        """The unprotected path's cost over the window's worst own lag under the same attack
        (a lag under 1 ms counts as 1 ms: the probe's own jitter is about that)."""
        lag = self.own_lag_max_ms if self.own_lag_max_ms is not None else self.lag_max_ms
        if self.baseline_ms is None or lag is None:
            return None
        return self.baseline_ms / max(lag, 1.0)


def case_by_id(case_id: str) -> HostileCase:
    return next(case for case in CASES if case.id == case_id)


# -- the script -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pace:
    """How a run of :func:`hostile_script` is paced. The bench's (the defaults) measures: it
    lets the window settle around each case, times the baselines, ``tkchat serve`` and the
    page, and trickles ``/health`` against the real handshake deadline. A test's run
    (:data:`QUICK`) checks only what each attack ends in: no settling, no baselines, and a
    short deadline against a faster trickle (the deadline, not the pace, is what ends it)."""

    settle_s: float = SETTLE_S
    measure: bool = True  # the baselines, tkchat serve under half-open sockets, the page
    trickle_every_s: float = 1.0
    handshake_timeout: float = HANDSHAKE_TIMEOUT_S


QUICK = Pace(settle_s=0.0, measure=False, trickle_every_s=0.05, handshake_timeout=0.5)


def hostile_script(
    root: tk.Tk,
    app: LabWindow,
    server: HostileServer,
    out: list[CaseFigures],
    serve_out: list[HalfOpenFigures],
    page_out: list[PageFigures],
    pace: Pace = Pace(),
) -> Script:
    """Every case in turn on ``app`` (a window on ``server``'s ``/health``), then (when
    ``pace.measure``) the baselines, ``tkchat serve`` under half-open sockets
    (:mod:`.hostile_serve`) and the page's markdown in Chromium (:mod:`.hostile_page`, if
    there is one), then the trickling ``/health`` (started first, on its own thread and
    server: the others run while it waits for the handshake deadline)."""
    yield lambda: app.model_ready
    trickle: list[CaseFigures] = []
    with HostileServer({"/health": trickle_health(pace.trickle_every_s)}) as trickling:
        thread = threading.Thread(
            target=_connect_trickling,
            args=(trickling.url, trickle, pace.handshake_timeout),
            daemon=True,
        )
        thread.start()
        for case in CASES:
            yield from _one_case(app, server, case, out, pace.settle_s)
        if pace.measure:
            for figures in out:
                measure = case_by_id(figures.id).baseline
                if measure is not None:
                    figures.baseline_ms = rounded(measure(root), 1)
                    yield pace.settle_s  # the window catches up after the blocked baseline
            serve_out.append(measure_half_open())
            page = measure_page()
            if page is not None:
                page_out.append(page)
        yield lambda: not thread.is_alive()
    out.extend(trickle)


def _one_case(
    app: LabWindow,
    server: HostileServer,
    case: HostileCase,
    out: list[CaseFigures],
    settle_s: float,
) -> Script:
    server.routes["/chat"] = case.answer
    tools = instruments_of(app)
    tools.new_chat()
    yield settle_s
    before = len(app.finished)
    start_rss = peak_rss = rss_mb()

    def ended() -> bool:  # polled by the runner: the RSS peak is sampled with it
        nonlocal peak_rss
        peak_rss = max(peak_rss, rss_mb())
        return len(app.finished) > before and not tools.painting

    app.start_lag_recording()
    started = time.perf_counter()
    if not app.send(f"attack: {case.id}"):
        raise RuntimeError(f"{case.id}: the window did not send")
    yield ended
    seconds = time.perf_counter() - started
    yield settle_s
    peak_rss = max(peak_rss, rss_mb())
    samples = app.stop_lag_recording()
    finals = app.finished[before:]
    final = finals[-1]
    lags = lag_figures(samples)
    figures = CaseFigures(
        case.id,
        final=_final_name(final),
        errors_shown=sum(isinstance(f, Error) for f in finals),
        status_chars=len(tools.status_text),
        lag_max_ms=rounded(lags["lag_max_ms"], 1),
        own_lag_max_ms=rounded(own_lag_figures(samples)["own_lag_max_ms"], 1),
        lag_p99_ms=rounded(lags["lag_p99_ms"], 1),
        long_tasks=lags["long_tasks"],
        rss_growth_mb=rounded(peak_rss - start_rss, 1),
        seconds=rounded(seconds, 2),
    )
    if isinstance(final, Error):
        figures.message = final.message
    else:
        figures.pieces = final.stats.tokens
        figures.answer_chars = len(app.answers[-1].text)
        figures.line_max = max(map(len, tools.shown_text().split("\n")))
    out.append(figures)


def _final_name(final: Done | Error) -> str:
    return f"done:{final.reason}" if isinstance(final, Done) else f"error:{final.kind}"


def _connect_trickling(url: str, out: list[CaseFigures], handshake_timeout: float) -> None:
    """Its own thread: connect to a ``/health`` that trickles, until the client gives up."""
    from tkchat.generate.remote.backend import RemoteBackend

    started = time.monotonic()
    try:
        RemoteBackend(url, handshake_timeout=handshake_timeout).load()
    except Exception as exc:  # the failure is the figure
        out.append(
            CaseFigures(
                TRICKLE_ID,
                final=f"error:{type(exc).__name__}",
                message=str(exc),
                errors_shown=1,
                seconds=rounded(time.monotonic() - started, 1),
            )
        )
    else:
        out.append(CaseFigures(TRICKLE_ID, final="done:loaded"))


# -- verdicts and the table ------------------------------------------------------------------


Check = tuple[str, bool, str]  # (what, held, the figure)


def verdicts(runs: Iterable[CaseFigures]) -> list[Check]:
    """Each case against what it must end in and against its bounds (the bench's verdicts)."""
    return [check for f in runs for check in outcome_verdicts([f]) + bound_verdicts([f])]


def outcome_verdicts(runs: Iterable[CaseFigures]) -> list[Check]:
    """What each case must end in, whatever the machine's load: its final event, one of
    them, a status line of bounded length; the trickle, one failure at the handshake
    deadline (its message names it)."""
    checks: list[Check] = []
    for figures in runs:
        if figures.id == TRICKLE_ID:
            ok = (
                figures.errors_shown == 1
                and figures.final == "error:RemoteError"
                and "did not finish answering within" in figures.message
            )
            checks.append(
                (f"{TRICKLE_ID}: one failure, the handshake deadline's", ok, outcome(figures))
            )
            continue
        case = case_by_id(figures.id)
        ended = figures.final == case.final and case.expect in figures.message
        checks.append((f"{case.id}: ends as {case.final}", ended, outcome(figures)))
        checks.append(
            (
                f"{case.id}: one final event, status line bounded",
                figures.errors_shown <= 1 and figures.status_chars <= 400,
                f"{figures.errors_shown} errors, {figures.status_chars} characters",
            )
        )
    return checks


def bound_verdicts(runs: Iterable[CaseFigures]) -> list[Check]:
    """Each case against its bounds in time and memory (the bench's claims; they depend on
    the machine and its load): the window's own worst lag, the memory an attack may add,
    the unprotected baseline far above the worst lag, and the trickle ended at the
    handshake deadline, not before it nor much after."""
    checks: list[Check] = []
    for figures in runs:
        if figures.id == TRICKLE_ID:
            took = figures.seconds or 0.0
            # at the deadline, not before it, nor at a later one (a trickle goes on for minutes)
            deadline = HANDSHAKE_TIMEOUT_S
            ok = deadline <= took < 1.25 * deadline
            checks.append((f"{TRICKLE_ID}: at the handshake deadline", ok, f"{took} s"))
            continue
        case = case_by_id(figures.id)
        # the window's own worst lag: each late probe less its wait for a CPU other programs
        # held (a busy machine adds that wait to every case; the attack, only its own work)
        lag = figures.own_lag_max_ms if figures.own_lag_max_ms is not None else figures.lag_max_ms
        lag = lag or 0.0
        bound = case.lag_bound_ms
        checks.append((f"{case.id}: own lag max < {bound:g} ms", lag < bound, f"{lag} ms"))
        grown = figures.rss_growth_mb or 0.0
        checks.append(
            (
                f"{case.id}: RSS +< {case.rss_bound_mb:g} MB",
                grown < case.rss_bound_mb,
                f"{grown} MB",
            )
        )
        if figures.ratio is not None:
            checks.append(
                (
                    f"{case.id}: unprotected ≥ {MIN_BASELINE_RATIO:g} × the worst lag",
                    figures.ratio >= MIN_BASELINE_RATIO,
                    f"{figures.baseline_ms} ms / {lag} ms = {figures.ratio:.0f} ×",
                )
            )
    return checks


def outcome(figures: CaseFigures) -> str:
    """What the window ended with: the table's "what the window shows" cell."""
    if figures.id == TRICKLE_ID:
        return f"one `error` at {figures.seconds} s: “{figures.message}”"
    if figures.final.startswith("error:"):
        kind = figures.final.split(":", 1)[1]
        shown = figures.message if len(figures.message) <= 120 else figures.message[:40] + "…"
        return f"one `error` ({kind}), {len(figures.message):,} characters: “{shown}”"
    reason = figures.final.split(":", 1)[1]
    return (
        f"`done({reason})`, {figures.pieces:,} pieces, {figures.answer_chars:,} characters, "
        f"lines of at most {figures.line_max:,} on screen"
    )


def format_table(runs: Iterable[CaseFigures]) -> str:
    header = (
        f"{'case':<20}{'final':<18}{'lag max':>9}{'p99':>7}{'long':>5}{'RSS +':>8}"
        f"{'seconds':>8}{'baseline':>10}{'ratio':>7}"
    )
    lines = [header]
    for f in runs:
        lines.append(
            f"{f.id:<20}{f.final:<18}{_num(f.lag_max_ms, 'ms'):>9}{_num(f.lag_p99_ms, 'ms'):>7}"
            f"{_num(f.long_tasks, ''):>5}{_num(f.rss_growth_mb, 'MB'):>8}{_seconds(f.seconds):>8}"
            f"{_num(f.baseline_ms, 'ms'):>10}{_num(f.ratio and round(f.ratio), '×'):>7}"
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}s"


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value:g}{unit}" if isinstance(value, int) else f"{value:.1f}{unit}"


# -- the command ------------------------------------------------------------------------------


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return cut(super().format(record), 160)


def run_hostile_bench(json_out: Path | None = None) -> int:
    """``python -m tests.tools.hostile``: every case in one real window (on a virtual screen if
    there is none). Returns 0 when every case held its bounds, 1 otherwise."""
    from tests.tools.hostile_readme import readme_rows  # it reads this module's cases
    from tkchat.generate.controller import GenerationController
    from tkchat.generate.remote.backend import RemoteBackend
    from tkchat.lab.bench.script import ScriptRunner
    from tkchat.lab.display import ensure_display
    from tkchat.lab.window import AppOptions, open_lab_window
    from tkchat.transport.channel import EventChannel

    ensure_display()
    # The attacks are logged in full (up to 64,000 characters each), on purpose; on the
    # bench's terminal one line each is enough.
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    logging.getLogger("tkchat").addHandler(handler)
    server = HostileServer({"/health": tkchat_health()})
    root = tk.Tk()
    controller = GenerationController(RemoteBackend(server.url), EventChannel())
    app = open_lab_window(root, controller, AppOptions(language="en"))
    controller.load_async()
    runs: list[CaseFigures] = []
    served: list[HalfOpenFigures] = []
    pages: list[PageFigures] = []
    started = time.monotonic()
    runner = ScriptRunner(root, hostile_script(root, app, server, runs, served, pages))
    runner.start()
    root.mainloop()
    if not app.closed:
        app.close()
    server.close()
    if runner.error is not None:
        raise runner.error
    print(format_table(runs))
    print()
    checks = verdicts(runs) + [check for figures in served for check in serve_verdicts(figures)]
    checks += [check for page in pages for check in page_verdicts(page)]
    for name, ok, figure in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {figure}")
    print(f"\n{time.monotonic() - started:.1f} s. docs/security.md's rows, from this run:\n")
    print(readme_rows(runs))
    for figures in served:
        print(f"\n{serve_readme_row(figures)}")
    for page in pages:
        print(f"\n{readme_sentence(page)}")
        print("\n".join(f"  {ms:8.2f} ms  {name}" for name, ms in page.inputs_ms.items()))
    if not pages:
        print("\nThe page's markdown was not measured: no Playwright or no Chromium here.")
    if json_out is not None:
        payload = {
            "window": [asdict(r) for r in runs],
            "serve_half_open": [asdict(f) for f in served],
            "page_markdown": [asdict(p) for p in pages],
        }
        json_out.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {json_out}")
    return 0 if all(ok for _name, ok, _figure in checks) else 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tests.tools.hostile",
        description="The real window against hostile servers (run from a clone).",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    raise SystemExit(run_hostile_bench(json_out=parser.parse_args().json))
