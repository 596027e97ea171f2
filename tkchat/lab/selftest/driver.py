"""The grader's side: plays the user, with real X events, from outside the window's process.

The driver types, clicks and scrolls with real X events (:mod:`.senses`), notes
the time just before each, and reads what the window's process reports (:mod:`.protocol`):
when each handler ran, the answers' lengths, the final events. Latency = the handler's time
minus the injection time, paired in order. It judges nothing: it gathers one
:class:`Question` per question, and :mod:`.grade` turns them into checks.

**A wall-clock limit on every answer.** Each answer gets ``limit_s`` seconds. If by then the
window's heartbeat (seen here, from outside) has been silent for a second, the driver asks
the window's process to interrupt its main thread; if the answer is still open, it clicks
Stop. What was not handled counts with the time it took, so the question fails *with
figures*. Should even the interrupt not bring the window back, the driver gives up
(:class:`GaveUp`) and the grader reports what it has.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tkchat.lab.selftest.observe import PROMPT
from tkchat.lab.selftest.protocol import Commands, ModelRun, WindowState, within
from tkchat.lab.selftest.senses import Heartbeat, XInput

RECOVER_S = 10.0  # how long an interrupt or a Stop may take to bring the window back
IDLE_S = 0.3  # the idle baseline
WHOSE_S = 5.0  # how long the window may take to say whose a question's late time was
RAW_TOKENS = {"scripted": 1000, "llama": 120}  # the baseline's length: enough for tokens/s
STALLED_S = 0.5  # an answer that has not grown this long after a stopped Tk call is over
# Question 2's model dies this many tokens into its answer: the bundled model's answers in a
# growing chat can be as short as 15 tokens.
BASELINE_KEYS = ("raw1", "raw2")  # the sampler's accounts of the two baseline passes
DIES_AFTER = {"scripted": 20, "llama": 5}
AFTER_STOP_S = 0.3  # how long the driver watches for text and tokens after Stop
# How long the driver waits, once the answer has ended, for the window's report that the
# model died: the same report tick sends it just after the final, but a window process not
# given a core for seconds (two CPU hogs and a suite beside a class) sent it more than the
# 0.3 s once allowed later, and a correct file got "the model never ran long enough to die".
# Waited for so long only after an answer that ended in an error (its model died).
DIED_REPORT_S = 5.0
Translate = Callable[..., str]


class GaveUp(Exception):
    """The window did not come back, even after an interrupt: the self-test ends here."""


@dataclass
class Asked:
    """One question sent: which answer, and when."""

    index: int
    finals_before: int
    runs_before: int
    tk_before: int
    at: float = 0.0  # when Enter was pressed: the answer's time limit runs from here


@dataclass
class Question:
    """What one question measured, raw; :mod:`.grade` judges it."""

    key: str
    inputs: list[tuple[float, float | None]] = field(default_factory=list)  # (sent, handled)
    notes: list[str] = field(default_factory=list)
    span: tuple[float, float] = (0.0, 0.0)  # from Enter to the answer's end
    extra: dict[str, Any] = field(default_factory=dict)


def paired(sent: list[float], handled: list[float]) -> list[tuple[float, float | None]]:
    """The n-th injection with the n-th handler run (None: never handled)."""
    return [(at, handled[i] if i < len(handled) else None) for i, at in enumerate(sent)]


class Driver:
    """Plays the user (the grader's main thread)."""

    def __init__(
        self,
        state: WindowState,
        commands: Commands,
        heartbeat: Heartbeat,
        *,
        backend: str,
        limit_s: float,
        t: Translate,
    ) -> None:
        self.state = state
        self.commands = commands
        self.heartbeat = heartbeat
        self.backend = backend
        self.limit_s = limit_s
        self.t = t
        self.questions: list[Question] = []
        self.idle: tuple[float, float] | None = None
        self.raw: list[ModelRun] = []  # the model alone: before the questions, and after
        self.dies_after = DIES_AFTER.get(backend, 5)
        self._growth: dict[int, tuple[int, float]] = {}  # answer -> (length, since when)
        self.x = XInput()

    def run(self) -> None:
        """Raises GaveUp, or TimeoutError/OSError (a self-test that could not run)."""
        self._wait(lambda: bool(self.state.points) or self.state.ended, 120, "the model to load")
        if self.state.ended:
            raise TimeoutError("the window's process ended before the window was ready")
        self.baselines()
        # (The model dies third: the bundled model's answers grow shorter as the chat grows,
        # and a fourth could end before the token it was to die at.)
        for ask in (
            self.question_click,
            self.question_scroll_and_keys,
            self.question_model_dies,
            self.question_stop,
        ):
            self.commands.send("question")  # the window's sampler records it
            asked = ask()
            self.commands.send("answered", asked.key)  # ... and says whose its late time was
            self.questions.append(asked)
            self._said_whose(asked.key)
        self._within(lambda: not self.state.answer_open, RECOVER_S)
        time.sleep(IDLE_S)  # the window idle again, its queue of events handled
        self.raw.append(self.model_alone(BASELINE_KEYS[1]))  # the machine's load changes

    def _said_whose(self, key: str) -> None:
        """The next question begins once the window has said whose this one's late time was:
        nothing else runs in the window's process meanwhile."""
        self._within(lambda: key in self.state.whose, WHOSE_S)

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        if not self._within(ready, timeout) or self.state.ended:
            raise TimeoutError(f"the self-test waited {timeout:.0f} s for {what}")

    def _within(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Whether ``ready()`` became true in time; gives up at once if the window's
        process has ended (a crash): :meth:`_ask` then says so."""
        return within(lambda: ready() or self.state.ended, timeout) and not self.state.ended

    # -- baselines -----------------------------------------------------------------------------

    def baselines(self) -> None:
        """Idle lag (the window open, nothing streaming), then the same model loop with no
        window reading it (``raw``), run in the window's process while the window idles."""
        began = time.perf_counter()
        time.sleep(IDLE_S)
        self.idle = (began, time.perf_counter())
        self.raw.append(self.model_alone(BASELINE_KEYS[0]))

    def model_alone(self, key: str) -> ModelRun:
        """One pass of the model loop that no window reads (the ``raw`` baseline). The
        window's sampler records it as it records a question (``key``): a pipeline of one's
        own that holds the loop while nothing streams (its own timer) would otherwise pass
        as the machine's load and widen its own lag bound (:func:`.targets.lag_bound`)."""
        self._within(lambda: all(run.closed is not None for run in self.state.runs), RECOVER_S)
        runs = len(self.state.runs)
        self.commands.send("question")
        self.commands.send("raw", RAW_TOKENS.get(self.backend, 0))

        def done() -> bool:
            return len(self.state.runs) > runs and self.state.runs[runs].closed is not None

        self._wait(done, max(60.0, 4 * self.limit_s), "the raw run")
        self.commands.send("answered", key)
        self._said_whose(key)
        return self.state.runs[runs]

    # -- helpers ---------------------------------------------------------------------------------

    def _ask(self) -> Asked:
        """Type the prompt into the input box and press Enter."""
        state = self.state
        if state.ended:
            raise TimeoutError("the window's process has ended")
        # Every question begins with the model idle: a loop that went on after an earlier
        # Stop would otherwise take this question's fault, or hold the model through it.
        self._within(lambda: all(run.closed is not None for run in state.runs), RECOVER_S)
        # ... and the window's answer closed: Enter while one is open is kept in the box.
        self._within(lambda: not state.answer_open, RECOVER_S)
        asked = Asked(len(state.answers), len(state.finals), len(state.runs), state.tk_calls)
        self.x.click(state.points["input"])
        self.x.type(PROMPT)
        asked.at = self.x.key("Return")
        if not self._within(lambda: len(state.answers) > asked.index, self.limit_s):
            self._recover([])
            raise TimeoutError("the window did not begin an answer")
        return asked

    def _left(self, asked: Asked) -> float:
        return self.limit_s - (time.perf_counter() - asked.at)

    def _blocked(self, asked: Asked) -> bool:
        """Whether a thread's call into Tk was stopped since ``asked`` and the answer has not
        grown for a while since: the thread that was writing it has ended, and the answer
        will not go on. (A helper thread stopped at its first call leaves the answer be.)"""
        if self.state.tk_calls <= asked.tk_before:
            return False
        chars, now = self._chars(asked), time.perf_counter()
        seen = self._growth.get(asked.index)
        if seen is None or seen[0] != chars:
            self._growth[asked.index] = (chars, now)
            return False
        return now - seen[1] > STALLED_S

    def _chars(self, asked: Asked) -> int:
        answers = self.state.answers
        return answers[asked.index] if len(answers) > asked.index else 0

    def _await_text(self, asked: Asked, notes: list[str]) -> None:
        """Wait (within the limit) until some text of the answer is on screen."""

        def shown() -> bool:
            return self._chars(asked) > 40

        over = self._over(asked)
        self._within(lambda: shown() or over() or self._blocked(asked), self._left(asked))
        if not shown() and not over():
            notes.append(self.t("selftest.note.no_text", seconds=f"{self.limit_s:g}"))

    def _over(self, asked: Asked) -> Callable[[], bool]:
        """Whether the answer has ended: by its final event, or by Stop (which ends it at
        once: the stopped worker's last events are dropped)."""
        state = self.state
        # (An answer is over once seen open and then not: the window's reports are read from
        # another thread, which may catch the new answer a moment before it counts as open.)
        return lambda: (
            len(state.finals) > asked.finals_before
            or (asked.index in state.opened and not state.answer_open)
        )

    def _end(self, asked: Asked, all_handled: Callable[[], bool], notes: list[str]) -> float:
        """Once every input is handled (within the limit), end the answer as a user would,
        with Stop: nothing more is asked of it. Past the limit, make it end. Returns when
        the question's span ended."""
        over = self._over(asked)
        self._within(lambda: all_handled() or over() or self._blocked(asked), self._left(asked))
        if not over() and all_handled() and not self._blocked(asked):
            self.press_stop()
            self._within(over, min(max(self._left(asked), 1.0), 5.0))
        if not over():
            self._recover(notes, asked)
        ended = time.perf_counter()
        self._within(all_handled, 5.0)
        return ended

    def _recover(self, notes: list[str], asked: Asked | None = None, tries: int = 2) -> None:
        """Past the limit: bring the window back (interrupt a stuck main thread), then end
        the answer (Stop), as a user would after waiting that long. The same, at once, for an
        answer whose thread was stopped at a call into Tk."""
        if tries <= 0:
            raise GaveUp
        seconds = f"{self.limit_s:g}"
        if asked is not None and self._blocked(asked) and self.state.answer_open:
            notes.append(self.t("selftest.note.tk_blocked"))
            self.press_stop()
            if self._within(lambda: not self.state.answer_open, RECOVER_S):
                return
        if self.heartbeat.stuck():
            notes.append(self.t("selftest.note.interrupted", seconds=seconds))
            self.commands.send("interrupt")
            if not self._within(lambda: not self.heartbeat.stuck(), RECOVER_S):
                raise GaveUp
        if self.state.answer_open:
            notes.append(self.t("selftest.note.stopped", seconds=seconds))
            self.press_stop()
            if not self._within(lambda: not self.state.answer_open, RECOVER_S):
                if not self.heartbeat.stuck():
                    raise GaveUp
                self._recover(notes, tries=tries - 1)  # Stop itself got stuck: once more

    def press_stop(self) -> float:
        """Click Stop; returns when the click was sent."""
        return self.x.click(self.state.points["stop"])

    def _runs(self, asked: Asked) -> list[ModelRun]:
        return [run for run in self.state.runs[asked.runs_before :] if not run.raw]

    # -- the four questions --------------------------------------------------------------------

    def question_click(self) -> Question:
        q = Question("q1")
        asked = self._ask()
        self._await_text(asked, q.notes)
        pings = self.state.times("ping")
        before = len(pings)
        sent = []
        for _ in range(5):
            sent.append(self.x.click(self.state.points["ping"]))
            time.sleep(0.05)
        ended = self._end(asked, lambda: len(pings) - before >= len(sent), q.notes)
        q.inputs, q.span = paired(sent, pings[before:]), (asked.at, ended)
        q.extra["runs"] = self._runs(asked)
        return q

    def question_scroll_and_keys(self) -> Question:
        q = Question("q3")
        asked = self._ask()
        self._await_text(asked, q.notes)
        scrolls, keys = self.state.times("scroll"), self.state.times("key")
        scrolls_before, keys_before = len(scrolls), len(keys)
        sent_scrolls: list[float] = []
        sent_keys: list[float] = []
        for _ in range(8):
            sent_scrolls.append(self.x.click(self.state.points["transcript"], 5))
            time.sleep(0.03)
            sent_keys.append(self.x.key("x"))  # the input box still has the keyboard focus
            time.sleep(0.03)

        def handled() -> bool:
            return len(scrolls) - scrolls_before >= len(sent_scrolls) and len(
                keys
            ) - keys_before >= len(sent_keys)

        ended = self._end(asked, handled, q.notes)
        q.inputs = paired(sent_scrolls, scrolls[scrolls_before:])
        q.inputs += paired(sent_keys, keys[keys_before:])
        q.span = (asked.at, ended)
        q.extra["runs"] = self._runs(asked)
        return q

    def question_stop(self) -> Question:
        """Stop, mid-answer: handled within 100 ms, no text after it, and the model loop
        left within about two tokens — counted where the tokens come out of the backend."""
        q = Question("q4")
        asked = self._ask()
        self._await_text(asked, q.notes)
        time.sleep(0.1)  # well into the answer
        stops = self.state.times("stop")
        before = len(stops)
        sent = self.press_stop()
        handled = self._within(lambda: len(stops) > before, self._left(asked))
        stop_at = stops[before] if handled else None
        counts = {run.number: run.tokens for run in self._runs(asked)}
        time.sleep(AFTER_STOP_S)  # text or tokens that come after Stop come now

        def settled() -> bool:
            """Every pass has left its loop, or has given a token since Stop."""
            runs = self._runs(asked)
            return stop_at is None or all(
                run.closed is not None or (run.last or 0) > stop_at for run in runs
            )

        self._within(settled, RECOVER_S)  # a stopped worker slow to get a core, under load
        if self.state.answer_open:
            self._recover(q.notes, asked)
        q.inputs = [(sent, stop_at)]
        q.span = (asked.at, time.perf_counter())
        q.extra.update(
            runs=self._runs(asked),
            counts_at_stop=counts,
            chars_at_stop=self.state.stop_chars[before] if handled else None,
            chars_after=self._chars(asked),
        )
        return q

    def question_model_dies(self) -> Question:
        q = Question("q2")
        died = self.state.died
        dead_before = len(died)  # (before Enter: at 2,000 tokens/s it dies within 15 ms)
        self.commands.send("arm", self.dies_after)
        asked = self._ask()
        over = self._over(asked)
        self._within(
            lambda: len(died) > dead_before or self._blocked(asked) or over(), self._left(asked)
        )
        # An answer that ended in an error had its model die: wait for the report that says
        # so; one that ended otherwise (or not yet) gets a moment only.
        ended = self.state.finals[asked.finals_before :]
        errored = any(final.get("end") == "error" for final in ended)
        self._within(lambda: len(died) > dead_before, DIED_REPORT_S if errored else 0.3)
        if len(died) == dead_before:
            if not self._blocked(asked):
                seconds = f"{self.limit_s:g}"
                q.notes.append(
                    self.t("selftest.note.never_died", tokens=self.dies_after, seconds=seconds)
                )
            self._recover(q.notes, asked)
            q.span = (asked.at, time.perf_counter())
            return q
        pings = self.state.times("ping")
        before = len(pings)
        clicked = self.x.click(self.state.points["ping"])
        if not self._within(self._over(asked), self._left(asked)):
            self._recover(q.notes, asked)
        self._within(lambda: len(pings) > before, 5.0)
        finals = self.state.finals[asked.finals_before :]
        q.inputs = paired([clicked], pings[before:])
        q.span = (asked.at, time.perf_counter())
        q.extra.update(died=died[dead_before], final=finals[0] if finals else None)
        return q
