"""A check, and how a timing is judged: PASS, FAIL — or BUSY, when what was late fell
mostly outside the pipeline and the machine, not the student, must answer for it.

No Tk, no window: figures in, verdicts out. :mod:`.questions` and :mod:`.targets` make the
checks; :mod:`.report` prints them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tkchat.lab.selftest.attribution import (
    Lateness,
    Span,
    Witnesses,
    attribute,
    busiest_method,
    queued_ms,
)
from tkchat.lab.selftest.protocol import Probed, Whose
from tkchat.stats import percentile, rounded

Translate = Callable[..., str]
PASS, FAIL, BUSY = "pass", "fail", "busy"
QUESTIONS = ("q1", "q2", "q3", "q4")
LIMIT_MS = 100.0  # RAIL's "respond within 100 ms"; Nielsen's "feels instant"
# The model was slowed by the pipeline when at least this share of the answers' time the
# main thread spent inside the pipeline's calls (a model loop in ``start``).
INSIDE_MIN = 0.5
WHOSE_PARTS = ("pipeline", "app", "tk", "other_program", "other_threads", "idle", "unsampled")


@dataclass
class Check:
    """One line of the grade. ``key``: q1-q4 (the questions) or a target: lag_p99,
    lag_max, long_tasks, tokens, tk_thread, raised, figures."""

    key: str
    verdict: str  # PASS, FAIL or BUSY
    detail: str  # the figure that decided it, in words
    figures: dict[str, float | int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. what the time limit had to do
    why: str | None = None  # for a FAIL: what usually causes it, in words

    @property
    def passed(self) -> bool:
        return self.verdict == PASS


def percent(share: float) -> str:
    return f"{100 * share:.0f}"


def judge_late(t: Translate, late: Sequence[Lateness], allowed_ms: float, notes: list[str]) -> str:
    """Late things, each over ``allowed_ms``: FAIL if the pipeline's calls alone held the
    loop longer than that within one of them — it would have been late on an idle machine
    too — else BUSY: what made it late was mostly the machine. Says which, as a note."""
    worst = max(late, key=lambda x: x.inside_s)
    inside, total = worst.inside_s * 1000, worst.total_s * 1000
    method = busiest_method([worst]) or "-"
    if inside > allowed_ms:
        notes.append(
            t("selftest.note.inside", inside=f"{inside:.0f}", total=f"{total:.0f}", method=method)
        )
        return FAIL
    notes.append(t("selftest.note.outside", inside=f"{inside:.0f}", total=f"{total:.0f}"))
    return BUSY


def judge_inputs(
    t: Translate,
    inputs: Sequence[tuple[float, float | None]],
    spans: Sequence[Span],
    notes: list[str],
    probes: Sequence[Probed] = (),
) -> str:
    """Inputs handled within 100 ms pass — and so does one that was late only by the time
    the main thread waited for a core another program held; one never handled fails; the
    other late ones are judged by what held the loop while they waited."""
    if not inputs:
        return FAIL
    late = [(sent, done) for sent, done in inputs if done is None or done - sent > LIMIT_MS / 1e3]
    missing = sum(1 for _sent, done in late if done is None)
    if missing:
        notes.append(t("selftest.note.unhandled", missing=missing, events=len(inputs)))
        return FAIL
    waits = [(sent, done) for sent, done in late if done is not None]
    queued = [queued_ms(sent, done, probes) for sent, done in waits]
    own = [
        (w, q) for w, q in zip(waits, queued, strict=True) if (w[1] - w[0]) * 1000 - q > LIMIT_MS
    ]
    if len(own) < len(waits):
        most = max(queued)
        notes.append(t("selftest.note.queued", count=len(waits) - len(own), ms=f"{most:.0f}"))
    if not own:
        return PASS
    return judge_late(
        t, [attribute(sent, done, spans) for (sent, done), _q in own], LIMIT_MS, notes
    )


def worst_ms(inputs: Sequence[tuple[float, float | None]]) -> str:
    """The slowest input's latency in words ("∞": one was never handled)."""
    if any(done is None for _sent, done in inputs):
        return "∞"
    finite = [(done - sent) * 1000 for sent, done in inputs if done is not None]
    return f"{max(finite):.1f}" if finite else "-"


def latency_figures(inputs: Sequence[tuple[float, float | None]]) -> dict[str, float | int | None]:
    finite = [(done - sent) * 1000 for sent, done in inputs if done is not None]
    return {
        "events": len(inputs),
        "handled": len(finite),
        "p50_ms": rounded(percentile(finite, 50), 1),
        "p99_ms": rounded(percentile(finite, 99), 1),
        "max_ms": rounded(max(finite) if finite else None, 1),
    }


def worse(*verdicts: str) -> str:
    """The worst of some verdicts: FAIL, then BUSY, then PASS."""
    return FAIL if FAIL in verdicts else BUSY if BUSY in verdicts else PASS


# -- whose the late time was: the sampler's account, in words ----------------------------------


def top_function(whose: Whose | None) -> str:
    return whose.functions[0][0] if whose is not None and whose.functions else "-"


def whose_sentence(t: Translate, whose: Whose) -> str:
    """ "of 840 ms late: 790 ms in your pipeline (Pipeline.show), 40 ms Tk's redisplay…" """
    parts = sorted(
        ((name, whose.parts.get(name, 0.0)) for name in WHOSE_PARTS), key=lambda part: -part[1]
    )
    names = ", ".join(name for name, _ms in whose.functions[:2])
    said = []
    for name, ms in parts:
        if round(ms) < 1:
            continue
        key = "pipeline_unnamed" if name == "pipeline" and not names else name
        said.append(
            t(f"selftest.whose.{key}", ms=f"{ms:.0f}", functions=names, toolkit=whose.toolkit)
        )
    late = f"{whose.late_ms:.0f}"
    return t("selftest.note.whose", late=late, parts=t("selftest.whose.separator").join(said))


def witness_notes(t: Translate, whose: Whose, witnesses: Witnesses) -> list[str]:
    """Whose the late time was, and — where the two witnesses disagree badly — which one
    the question is judged on."""
    if not whose.late:
        return []
    notes = [whose_sentence(t, whose)]
    figures = {"sampled": f"{witnesses.sampled_ms:.0f}", "timed": f"{witnesses.timed_ms:.0f}"}
    if witnesses.hidden:
        notes.append(t("selftest.note.hidden", function=top_function(whose), **figures))
    elif witnesses.unseen:
        notes.append(t("selftest.note.unseen", **figures))
    return notes
