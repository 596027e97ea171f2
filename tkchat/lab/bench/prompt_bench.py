"""``tkchat bench --prompt-tokens N``: a long prompt, measured in the real window.

What a pasted document costs before the first token, and whether the window and Stop stay
alive meanwhile. In the same run as ``tkchat bench``'s own baselines (``idle``, ``raw``):

- ``prompt-raw``: llama-cpp-python evaluating the same N-token prompt in one ``eval`` call,
  with nothing else running (the main thread waits on it): the prompt tokens/s ceiling.
- ``prompt``: the window asks the same prompt (cold cache). Prompt tokens/s (the worker's
  reading time), TTFT, progress events and their rate, lag and real clicks during the
  reading; then Stops at random points of one reading (each send continues from the prefix
  the last Stop kept, so the stops spread over the whole prompt): Stop → worker out.
- ``prompt-chunks-only``: the same, with the alternative design — chunks aimed at 50 ms and
  Stop checked only between them, no abort callback — so the choice is measured each run.
- ``turn-2``: a follow-up question in the same chat (the long prompt is now history, read
  from the cache) against the same question alone in a fresh chat with a cold cache (the
  median of three each), and against llama-cpp-python evaluating just the new tokens where
  they sit.
- ``load``: the model loaded again through the Model menu's path, with the lag probe on.

Only for the llama backend (the others have no prompt to read). Main thread; the script
yields what to wait for, like the rest of the benchmark.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from tkchat.conversation import Message, Sampling
from tkchat.events import Done, Error
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.prompt_eval import PromptReader
from tkchat.generate.scripted import long_answer
from tkchat.generate.worker import GenerationWorker
from tkchat.lab.bench.figures import (
    SYSTEM,
    BenchOptions,
    Check,
    RunFigures,
    input_figures,
    lag_figures,
)
from tkchat.lab.bench.script import Script
from tkchat.lab.window import LabWindow, instruments_of
from tkchat.stats import median, percentile, rounded

ANSWER_TOKENS = 16  # the answers here only need to start: the prompt is what is measured
FOLLOW_UP = "Now name one tool the text mentions, in a few words."
TURNS = 3  # follow-ups measured (and as many cold runs of the question alone): the median
ASK = "\n\nSummarize the text above in one sentence."
CHUNKS_ONLY_S = 0.05  # the alternative's chunk target: small enough for Stop on its own


class Prober(Protocol):
    """What the prompt bench needs of the benchmark's click prober (``bench.InputProber``)."""

    def begin(self) -> int: ...

    def end(self, handled_from: int) -> list[float]: ...


class PromptBench:
    def __init__(self, app: LabWindow, prober: Prober, options: BenchOptions) -> None:
        self.app = app
        self.tools = instruments_of(app)
        self.prober = prober
        self.options = options
        self.rng = random.Random(options.seed)
        self.sampling = Sampling(max_tokens=ANSWER_TOKENS, seed=options.seed, temperature=0.0)
        self.text = ""
        self.tokens = 0

    @property
    def backend(self) -> LlamaBackend:
        backend = self.app.controller.backend
        if not isinstance(backend, LlamaBackend):
            raise RuntimeError("--prompt-tokens measures the llama backend only")
        return backend

    def run(self, runs: list[RunFigures]) -> Script:
        self._make_prompt(self.options.prompt_tokens or 0)
        runs.append(self._raw())
        yield 0.3  # the raw run held the main loop on purpose: let late timers fire first
        turn2: dict[str, Any] = {}
        yield from self._alone(turn2)
        figures: dict[str, Any] = {}
        yield from self._read_in_window(figures)
        yield from self._turn_two(turn2)
        yield from self._cancels(figures)
        runs.append(self._figures("prompt", figures))
        alternative: dict[str, Any] = {}
        default_reader = self.backend.reader
        self.backend.reader = PromptReader(
            self.backend.llm, chunk_s=CHUNKS_ONLY_S, abort_callback=False
        )
        try:
            yield from self._read_in_window(alternative)
            yield from self._cancels(alternative)
        finally:
            self.backend.reader = default_reader
        runs.append(self._figures("prompt-chunks-only", alternative))
        runs.append(self._turn_two_figures(turn2, figures))
        yield from self._load(runs)

    # -- the prompt ------------------------------------------------------------------------

    def _messages(self, text: str) -> tuple[Message, ...]:
        return (Message("system", SYSTEM), Message("user", text))

    def _make_prompt(self, wanted: int) -> None:
        """A fixed text (the scripted answer's guide to tea, repeated) cut to ``wanted``
        prompt tokens at most, with room left in the context for both turns' answers."""
        backend = self.backend
        wanted = min(wanted, backend.n_ctx - 4 * ANSWER_TOKENS - 96)
        source = long_answer(wanted * 6)
        low, high = 0, len(source)
        while low < high:  # the longest prefix of the text that fits
            mid = (low + high + 1) // 2
            if backend.count_tokens(self._messages(source[:mid] + ASK)) <= wanted:
                low = mid
            else:
                high = mid - 1
        self.text = source[:low] + ASK
        self.tokens = backend.count_tokens(self._messages(self.text))

    # -- llama-cpp-python alone --------------------------------------------------------------

    def _raw(self) -> RunFigures:
        """The same prompt in one ``Llama.eval`` call, on this thread, nothing else running."""
        backend = self.backend
        with self.app.controller.model_lock:
            tokens = backend.chat_tokens(self._messages(self.text))
            backend.forget_prompt()
            began = time.perf_counter()
            backend.llm.eval(tokens)
            took = time.perf_counter() - began
            backend.forget_prompt()
        return RunFigures(
            mode="prompt-raw",
            backend="llama",
            tokens=len(tokens),
            tokens_per_s=rounded(len(tokens) / took, 1),
            seconds=rounded(took, 2),
        )

    # -- in the window ---------------------------------------------------------------------

    def _send(self, text: str, *, fresh: bool = True) -> tuple[GenerationWorker, float]:
        app, tools = self.app, self.tools
        if fresh:
            tools.new_chat()
            tools.sampling = self.sampling  # after new_chat, which starts from defaults
        started = time.perf_counter()
        if not app.send(text):
            raise RuntimeError("the window refused the long prompt: " + tools.status_text)
        worker = app.controller.current
        assert worker is not None
        return worker, started

    def _read_in_window(self, out: dict[str, Any]) -> Script:
        """One whole reading, cold cache, with the lag probe and real clicks during it."""
        app, tools = self.app, self.tools
        with app.controller.model_lock:
            self.backend.forget_prompt()
        finished = len(app.finished)
        app.start_lag_recording()
        handled_from = self.prober.begin()
        worker, _ = self._send(self.text)
        yield lambda: tools.answer_times().first_text_at is not None or len(app.finished) > finished
        out["samples"] = app.stop_lag_recording()
        out["inputs"] = self.prober.end(handled_from)
        yield lambda: len(app.finished) > finished
        final = app.finished[-1]
        answer = tools.answer_times()
        if not isinstance(final, Done) or final.reason == "cancelled":
            raise RuntimeError(f"the long prompt did not complete: {_describe(final)}")
        stats = final.stats
        read_ms = stats.prompt_eval_ms or 0.0
        out["read_s"] = read_ms / 1000
        out["evaluated"] = stats.prompt_tokens - stats.prompt_reused
        out["tps"] = out["evaluated"] / out["read_s"] if read_ms else None
        first = answer.first_text_at
        out["ttft"] = (first - answer.started_at) * 1000 if first is not None else None
        out["progress"] = worker.progress_sent
        out["chunks"] = self.backend.reader.chunks if self.backend.reader else None

    def _cancels(self, out: dict[str, Any]) -> Script:
        """Stops at random points of one reading: each send continues from the prefix the
        last Stop kept, so the stops move through the whole prompt."""
        app = self.app
        with app.controller.model_lock:
            self.backend.forget_prompt()
        step = 2 * out["read_s"] / max(1, self.options.cancels)
        latencies: list[float] = []
        finished_early = 0
        for _ in range(self.options.cancels):
            worker, _ = self._send(self.text)
            yield self.rng.uniform(0.02, max(0.05, step))
            if worker.first_token_at is not None or not worker.is_alive():
                finished_early += 1  # read to the end before the Stop: not a sample
                app.stop()
                yield _gone(worker)
                with app.controller.model_lock:
                    self.backend.forget_prompt()
                continue
            app.stop()
            yield _gone(worker)
            if worker.cancelled_at is not None and worker.exited_at is not None:
                latencies.append((worker.exited_at - worker.cancelled_at) * 1000)
        yield lambda: not self.tools.painting
        out["cancels"] = latencies
        out["cancels_after_the_end"] = finished_early

    def _figures(self, mode: str, out: dict[str, Any]) -> RunFigures:
        latencies: list[float] = out["cancels"]
        read_s = out["read_s"]
        return RunFigures(
            mode=mode,
            backend="llama",
            tokens=out["evaluated"],
            tokens_per_s=rounded(out["tps"], 1),
            ttft_ms=rounded(out["ttft"], 1),
            cancel_p50_ms=rounded(percentile(latencies, 50), 2),
            cancel_p99_ms=rounded(percentile(latencies, 99), 2),
            seconds=rounded(read_s, 2),
            extra={
                "progress_events": out["progress"],
                "progress_per_s": rounded(out["progress"] / read_s, 2) if read_s else None,
                "chunks": out["chunks"],
                "cancel_samples": len(latencies),
                "cancel_max_ms": rounded(max(latencies) if latencies else None, 2),
                "cancels_after_the_end": out["cancels_after_the_end"],
                "input_events": len(out["inputs"]),
            },
            **lag_figures(out["samples"]),
            **input_figures(out["inputs"]),
        )

    # -- the next turn -----------------------------------------------------------------------

    def _alone(self, out: dict[str, Any]) -> Script:
        """The baseline of the next turn: the follow-up question alone in a fresh chat, read
        from a cold cache, :data:`TURNS` times."""
        app = self.app
        ttfts: list[float] = []
        for _ in range(TURNS):
            with app.controller.model_lock:
                self.backend.forget_prompt()
            finished = len(app.finished)
            self._send(FOLLOW_UP)
            yield _answered(app, finished)
            last = app.finished[-1]
            alone = self.tools.answer_times()
            if not isinstance(last, Done) or alone.first_text_at is None:
                raise RuntimeError(f"the follow-up alone did not answer: {_describe(last)}")
            ttfts.append((alone.first_text_at - alone.started_at) * 1000)
            out["alone_tokens"] = last.stats.prompt_tokens
            yield 0.2
        out["alone_ttft"] = median(ttfts)

    def _turn_two(self, out: dict[str, Any]) -> Script:
        """Right after the window's full reading (turn 1, its answer in the chat): the
        follow-up, :data:`TURNS` times in the same chat (each time after the last answer);
        then llama-cpp-python evaluating just the last turn's new tokens where they sit."""
        app = self.app
        ttfts: list[float] = []
        for _ in range(TURNS):
            finished = len(app.finished)
            self._send(FOLLOW_UP, fresh=False)
            yield _answered(app, finished)
            final = app.finished[-1]
            answer = self.tools.answer_times()
            if not isinstance(final, Done) or answer.first_text_at is None:
                raise RuntimeError(f"turn 2 did not answer: {_describe(final)}")
            ttfts.append((answer.first_text_at - answer.started_at) * 1000)
            out["new_tokens"] = final.stats.prompt_tokens - final.stats.prompt_reused
            out["history_tokens"] = final.stats.prompt_reused
            yield 0.2
        out["ttft"] = median(ttfts)
        last_turn = self.tools.request().messages[:-1]  # the chat the last turn read
        with app.controller.model_lock:
            tokens = self.backend.chat_tokens(last_turn)
            reused = out["history_tokens"]
            llm = self.backend.llm
            llm.n_tokens = reused
            llm._ctx.kv_cache_seq_rm(-1, reused, -1)
            began = time.perf_counter()
            llm.eval(tokens[reused:])
            out["raw_new_tokens_ms"] = (time.perf_counter() - began) * 1000
            self.backend.forget_prompt()

    def _turn_two_figures(self, out: dict[str, Any], turn_one: dict[str, Any]) -> RunFigures:
        return RunFigures(
            mode="turn-2",
            backend="llama",
            tokens=out["new_tokens"],
            ttft_ms=rounded(out["ttft"], 1),
            extra={
                "turn_1_ttft_ms": rounded(turn_one["ttft"], 1),
                "history_tokens": out["history_tokens"],
                "new_tokens_alone_ttft_ms": rounded(out["alone_ttft"], 1),
                "new_tokens_alone_prompt_tokens": out["alone_tokens"],
                "raw_new_tokens_in_place_ms": rounded(out["raw_new_tokens_ms"], 1),
            },
        )

    # -- loading -------------------------------------------------------------------------------

    def _load(self, runs: list[RunFigures]) -> Script:
        """The model loaded again the way the Model menu does it (the old one freed first),
        with the lag probe recording from the choice to "ready"."""
        app = self.app
        controller = app.controller
        reports = controller.load_reports
        tools = self.tools
        app.start_lag_recording()
        started = time.perf_counter()
        tools.load_model(self.backend.model)
        yield lambda: app.model_ready or tools.model_failed  # (news the window has handled)
        seconds = time.perf_counter() - started
        samples = app.stop_lag_recording()
        if not app.model_ready:
            raise RuntimeError("the model did not load again: " + tools.status_text)
        runs.append(
            RunFigures(
                mode="load",
                backend="llama",
                seconds=rounded(seconds, 3),
                extra={"progress_events": controller.load_reports - reports},
                **lag_figures(samples),
            )
        )


def prompt_verdicts(runs: list[RunFigures], lag_p99_bound: float) -> list[Check]:
    """Issue 13's targets, against this run's own baselines."""
    by = {r.mode: r for r in runs}
    raw, prompt = by.get("prompt-raw"), by.get("prompt")
    alt, turn2 = by.get("prompt-chunks-only"), by.get("turn-2")
    out: list[Check] = []
    if prompt is None:
        return out
    if prompt.cancel_p99_ms is not None:
        out.append(
            Check(
                "Stop while reading the prompt: p99 <= 100 ms",
                prompt.cancel_p99_ms <= 100,
                f"p50 {prompt.cancel_p50_ms} ms, p99 {prompt.cancel_p99_ms} ms "
                f"({prompt.extra['cancel_samples']} stops)",
            )
        )
    if prompt.lag_p99_ms is not None and prompt.lag_max_ms is not None:
        out.append(
            Check(
                f"lag while reading the prompt: p99 <= {lag_p99_bound:.2f} ms, max <= 16 ms",
                prompt.lag_p99_ms <= lag_p99_bound and prompt.lag_max_ms <= 16,
                f"p99 {prompt.lag_p99_ms:.2f} ms, max {prompt.lag_max_ms:.2f} ms, "
                f"{prompt.long_tasks} long tasks",
            )
        )
    fixed = by.get("fixed")  # generation, in the same window, the same run
    if (
        fixed is not None
        and fixed.lag_p99_ms is not None
        and fixed.lag_max_ms is not None
        and prompt.lag_p99_ms is not None
        and prompt.lag_max_ms is not None
    ):
        out.append(
            Check(
                "lag while reading the prompt no worse than while generating (this run)",
                prompt.lag_p99_ms <= fixed.lag_p99_ms and prompt.lag_max_ms <= fixed.lag_max_ms,
                f"p99 {prompt.lag_p99_ms:.2f} vs {fixed.lag_p99_ms:.2f} ms, max "
                f"{prompt.lag_max_ms:.2f} vs {fixed.lag_max_ms:.2f} ms",
            )
        )
    if raw is not None and raw.tokens_per_s and prompt.tokens_per_s:
        ratio = prompt.tokens_per_s / raw.tokens_per_s
        out.append(
            Check(
                "prompt tokens/s >= 0.95 x llama-cpp-python in one call",
                ratio >= 0.95,
                f"{ratio:.3f} x ({prompt.tokens_per_s} vs {raw.tokens_per_s} tokens/s)",
            )
        )
    out += _progress_verdicts(prompt)
    if alt is not None and alt.tokens_per_s and prompt.tokens_per_s:
        out.append(
            Check(
                "abort callback beats chunks-only (tokens/s and cancel p99)",
                prompt.tokens_per_s >= alt.tokens_per_s
                and (prompt.cancel_p99_ms or 0) <= (alt.cancel_p99_ms or 0),
                f"{prompt.tokens_per_s} vs {alt.tokens_per_s} tokens/s, cancel p99 "
                f"{prompt.cancel_p99_ms} vs {alt.cancel_p99_ms} ms",
            )
        )
    if turn2 is not None and turn2.ttft_ms is not None:
        alone = turn2.extra["new_tokens_alone_ttft_ms"]
        out.append(
            Check(
                "turn-2 TTFT <= 1.5 x the new tokens alone",
                turn2.ttft_ms <= 1.5 * alone,
                f"{turn2.ttft_ms} ms vs {alone} ms ({turn2.ttft_ms / alone:.2f} x); turn 1 "
                f"{turn2.extra['turn_1_ttft_ms']} ms; the new tokens in place, "
                f"llama-cpp-python alone: {turn2.extra['raw_new_tokens_in_place_ms']} ms",
            )
        )
    if turn2 is not None and turn2.ttft_ms is not None:
        in_place = turn2.extra["raw_new_tokens_in_place_ms"]
        out.append(
            Check(
                "turn-2 TTFT <= 1.5 x llama-cpp-python reading the same new tokens in place",
                turn2.ttft_ms <= 1.5 * in_place,
                f"{turn2.ttft_ms} ms vs {in_place} ms ({turn2.ttft_ms / in_place:.2f} x): what "
                "the window adds; a token read after a long history costs more than one read "
                "first, whoever reads it",
            )
        )
    load = by.get("load")
    if load is not None and load.lag_max_ms is not None:
        out.append(
            Check(
                "lag while the model loads: max <= 16 ms",
                load.lag_max_ms <= 16,
                f"p99 {load.lag_p99_ms} ms, max {load.lag_max_ms} ms, load {load.seconds} s, "
                f"{load.extra['progress_events']} progress events",
            )
        )
    return out


def _progress_verdicts(prompt: RunFigures) -> list[Check]:
    """The reading's progress events: a few a second, whatever the prompt's length."""
    per_s = prompt.extra.get("progress_per_s")
    if per_s is None:
        return []
    return [Check("progress events: at most a few a second (<= 5)", per_s <= 5, f"{per_s}/s")]


def _answered(app: LabWindow, finished: int) -> Callable[[], bool]:
    """Whether the window has handled a final event beyond the first ``finished``."""
    return lambda: len(app.finished) > finished


def _gone(worker: GenerationWorker) -> Callable[[], bool]:
    return lambda: not worker.is_alive()


def _describe(final: Done | Error) -> str:
    return final.message if isinstance(final, Error) else final.reason
