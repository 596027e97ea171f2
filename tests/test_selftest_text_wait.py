"""The self-test's judgement of a window that stays smooth and shows its text late (issue 34).

``asyncio-slow-poll`` steps its asyncio loop every 200 ms: the event loop is free between
steps, so the lag, the clicks and the keys all pass — and each token waits up to 200 ms for
the screen, and Stop up to 200 ms for the model. The grade judges three things it already
observes, against the same run's baseline, never a clock of the test's own:

- each token's wait from the model to the screen, less the time the event loop was late
  meanwhile (the lag's business): within a frame plus the lag allowed (``text_wait``);
- the model's last token after Stop: within two tokens, or — its cancel having reached it
  (the pass ended cancelled) — within two frames of a free loop (a cancel handed over at the
  next 16 ms step is as correct as one at once; one at the next 200 ms step is late);
- the dead model's error: shown late with the loop free is the pipeline's, not the machine's.

Figures in, verdicts out: constructed observations, no window, no clock.
"""

from __future__ import annotations

from dataclasses import replace

from tests.test_selftest_grade import (
    ANSWER_S,
    KINDS,
    GradingRun,
    Hold,
    Holds,
    lags,
    measured,
    said,
)
from tkchat.i18n import strings
from tkchat.lab.selftest.driver import Question
from tkchat.lab.selftest.protocol import ModelRun, Probed
from tkchat.lab.selftest.questions import question_check
from tkchat.lab.selftest.targets import target_checks, text_bound, text_waits
from tkchat.lab.selftest.verdict import BUSY, FAIL, PASS, Check

EN, ZH = strings("en"), strings("zh")
TOKEN_S = 1 / 2000


def tokens_shown_every(step_s: float, start: float = 100.0, count: int = 4000) -> list:
    """A token every 0.5 ms from ``start``, each shown at the next step ``step_s`` apart."""
    tokens = [start + TOKEN_S * i for i in range(count)]
    steps = [start + step_s * (k + 1) for k in range(int(count * TOKEN_S / step_s) + 1)]
    return text_waits(tokens, steps)


def text_check(t=EN, **changes: object) -> Check:
    (check,) = [c for c in target_checks(t, measured(**changes)) if c.key == "text_wait"]
    return check


def test_each_token_is_paired_with_the_next_time_text_reached_the_screen() -> None:
    assert text_waits([1.0, 1.001, 1.02, 1.5], [1.016, 1.032]) == [
        (1.0, 1.016),
        (1.001, 1.016),
        (1.02, 1.032),
    ]  # the last token came after the last text shown: Stop dropped it
    assert text_waits([1.0], []) == []


def test_text_shown_every_tick_passes_and_every_200_ms_fails_however_smooth_the_lag() -> None:
    smooth = text_check(text_waits=tokens_shown_every(0.016))
    assert smooth.verdict == PASS and smooth.figures["free_p90_ms"] <= 16.0, smooth
    for t in (EN, ZH):
        slow = text_check(t, text_waits=tokens_shown_every(0.2))
        assert slow.verdict == FAIL and slow.why == t("selftest.why.text_wait"), slow
        assert slow.figures["free_p90_ms"] > 150.0  # the probe on time: the loop was free
    assert "every so often" in EN("selftest.why.text_wait")


def test_text_that_waited_behind_a_late_event_loop_is_the_lags_business() -> None:
    """The same 200 ms waits, with the event loop late all that while (the probe, re-armed
    every 10 ms, firing 200 ms late): the text waited for the loop, which the lag checks
    judge; this check passes."""
    late_loop = [Probed(100.0 + 0.2 * (k + 1), 200.0) for k in range(11)]
    check = text_check(text_waits=tokens_shown_every(0.2), lag_all=late_loop)
    assert check.verdict == PASS and check.figures["free_p90_ms"] < 16.0, check


def test_the_bound_grows_with_the_same_runs_baseline() -> None:
    """A frame, plus the lag allowed in this run: twice the model-alone lag (at least the
    flood's frame). A run whose baseline lag was 100 ms allows 216 ms."""
    assert text_bound(measured()) == 32.0
    slow_machine = measured(baseline=lags(*([100.0] * 40), start=50.0))
    assert text_bound(slow_machine) == 216.0
    check = text_check(text_waits=tokens_shown_every(0.2), baseline=slow_machine.baseline)
    assert check.verdict == PASS, check


def test_text_late_while_the_window_was_late_past_its_bound_is_not_judged() -> None:
    """The machine so busy that the window's lag is past its bound (the lag check's
    business): the threads carrying the text waited for cores too — BUSY, not FAIL."""
    busy = lags(*([200.0] * 200))
    check = text_check(text_waits=tokens_shown_every(0.2), streaming=busy)
    assert check.verdict == BUSY and "not judged" in said(check), said(check)


def test_an_answer_never_shown_fails_and_one_never_streamed_is_unmeasured() -> None:
    never = text_check(text_waits=[])
    assert never.verdict == FAIL and never.why == EN("selftest.why.text_never"), never
    assert "4000 tokens" in never.detail
    unmeasured = text_check(text_tokens=0, text_waits=[])
    assert unmeasured.verdict == FAIL and unmeasured.detail == EN("selftest.unmeasured")


# -- Stop, and the dead model's error ----------------------------------------------------------

STOP = 50.3


def stopped(closed_after_ms: float, cancelled: bool | None, lag_ms: float = 0.0) -> Check:
    """Question 4: Stop handled at once at ``STOP``; the model gave a token every 0.5 ms
    until its loop was left ``closed_after_ms`` later; its cancel event set or not; the
    probe fired every 5 ms, ``lag_ms`` late."""
    closed = STOP + closed_after_ms / 1000
    times = [50.0 + TOKEN_S * i for i in range(int((closed - 50.0) / TOKEN_S))]
    run = ModelRun(5, False, 50.0, times, closed, len(times), times[-1], cancelled=cancelled)
    q = Question("q4", [(STOP - 0.002, STOP)], span=(50.0, closed + 0.3))
    q.extra.update(runs=[run], counts_at_stop={}, chars_at_stop=900, chars_after=900)
    probes = [Probed(STOP + 0.005 * i, lag_ms) for i in range(40)]
    return question_check(EN, q, [], probes)


def test_a_cancel_handed_to_the_model_at_the_next_step_is_stop_and_at_a_slow_poll_late() -> None:
    at_the_next_tick = stopped(16.0, cancelled=True)  # asyncio-tk: 32 scripted tokens on
    assert at_the_next_tick.verdict == PASS, said(at_the_next_tick)
    assert at_the_next_tick.figures["tokens_after"] > 2
    at_a_slow_poll = stopped(150.0, cancelled=True)  # asyncio-slow-poll
    assert at_a_slow_poll.verdict == FAIL, said(at_a_slow_poll)
    assert "Stop reached the model late" in said(at_a_slow_poll)
    assert "150 ms after Stop" in said(at_a_slow_poll)
    # the loop late all that while (busy elsewhere): the cancel waited for it, not for a poll
    behind_a_late_loop = stopped(150.0, cancelled=True, lag_ms=5.0)
    assert behind_a_late_loop.verdict == PASS, said(behind_a_late_loop)


def test_a_model_stop_never_reached_fails_as_before_however_soon_it_ended() -> None:
    for cancelled in (False, None):  # its own Event, never set; or a window that did not say
        check = stopped(16.0, cancelled=cancelled)
        assert check.verdict == FAIL and check.why == EN("selftest.why.q4.model"), said(check)


def test_the_dead_models_error_shown_late_with_the_loop_free_is_the_pipelines() -> None:
    died = 40.01
    final = {"t": died + 0.19, "end": "error", "message": "The model stopped responding."}
    q = Question("q2", [(died + 0.2, died + 0.2005)], span=(40.0, 41.0))
    q.extra.update(died=died, final=final)
    on_time = [Probed(died + 0.005 * i, 0.2) for i in range(60)]
    check = question_check(EN, q, [], on_time)
    assert check.verdict == FAIL and check.why == EN("selftest.why.q2"), said(check)


# -- a whole grading run: text shown every 200 ms --------------------------------------------


def every(step_s: float) -> Holds:
    """``start`` returning at once, then a short step every ``step_s`` that shows the text
    (an asyncio loop a Tk timer steps: its inserts are not calls into the pipeline)."""

    def holds(start: float, end: float) -> list[Hold]:
        found, at = [Hold(start, start + 0.0002, "start")], start + step_s
        while at < end + step_s:
            found.append(Hold(at, at + 0.0003, "step"))
            at += step_s
        return found

    return holds


def test_a_window_polled_every_200_ms_is_smooth_and_fails_on_its_text_alone() -> None:
    """The lag, the clicks and the keys pass — the loop is free between steps — and the text
    check fails, naming the mistake; stepped every 16 ms the same window passes it."""
    slow = replace(KINDS["fixed"], holds=every(0.2), shows="step")
    checks = GradingRun(slow).grade()
    assert {checks[key].verdict for key in ("q1", "q3", "lag_p99", "lag_max")} == {PASS}
    assert checks["text_wait"].verdict == FAIL, said(checks["text_wait"])
    assert checks["text_wait"].why == EN("selftest.why.text_wait")
    assert ANSWER_S > 0.2  # (the answers are long enough for several steps)
    quick = GradingRun(replace(slow, holds=every(0.016))).grade()
    assert quick["text_wait"].verdict == PASS, said(quick["text_wait"])
