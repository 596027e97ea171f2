"""``tkchat bench --turn2``: the second turn of a chat, in English and in Chinese, against
llama-cpp-python reading just its new part, in the same run (issue 24, item 2).

For each language: a fresh chat whose first question carries a pasted text (a few hundred
tokens), answered by the window; then a follow-up in the same chat, :data:`TURNS` times (each
after the last answer). Each follow-up's prompt is the whole chat; the backend's
:class:`~tkchat.generate.prompt_eval.TokenMemory` should leave only the new message and its
template to evaluate. The baseline: with the model's cache cut back to where that new part
begins, ``Llama.generate`` over the same prompt (it finds the prefix itself) until its first
token — the least any front end can do.

Rows ``turn-2-en`` and ``turn-2-zh``: ``ttft_ms`` (the window's, median), ``tokens`` (the new
part), and in the extra figures the prompt's size, what was reused and evaluated, what was
re-tokenised, the baseline and the ratio. Main thread (the bench's script); the model lock is
held for the baseline.
"""

from __future__ import annotations

import os
import time
from typing import Any

from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.scripted import long_answer
from tkchat.lab.bench.figures import Check, RunFigures
from tkchat.lab.bench.prompt_bench import _answered
from tkchat.lab.bench.scenarios.runs import BenchRuns
from tkchat.lab.bench.script import Script
from tkchat.lab.window import instruments_of
from tkchat.stats import median, rounded
from tkchat.threads import lower_this_thread, own_thread

TURN2_TTFT_RATIO_MAX = 1.2  # turn 2 within 1.2 x reading just its new part
TURNS = 3
ANSWER_TOKENS = 48
# Pasted texts of a few hundred tokens, and the questions: tkchat's own sentences.
ZH_TEXT = (
    "第{n}段：工作线程负责运行模型，一个词一个词地生成回答；主线程负责绘制窗口、响应点击和滚动。"
    "两者之间只通过一个队列交换消息，主线程每一帧取走队列里的全部内容，一次写进文本框。"
)
TEXTS = {
    "en": (long_answer(1_500), "Summarize the text above in two sentences.", "Why is that?"),
    "zh": (
        "".join(ZH_TEXT.format(n=n) for n in range(1, 5)),
        "用两句话总结上面的内容。",
        "为什么？",
    ),
}


def turn_two_scenario(bench: BenchRuns) -> Script:
    """The bench's script: both languages (nothing without ``--turn2`` or on a backend that
    reads no prompt)."""
    backend = bench.app.controller.backend
    if not bench.options.turn2 or not isinstance(backend, LlamaBackend):
        return
    for lang, (text, question, follow_up) in TEXTS.items():
        out: dict[str, Any] = {"ttfts": [], "evaluated": [], "reused": [], "worker": []}
        yield from _chat(bench, backend, f"{text}\n\n{question}", follow_up, out)
        out["baseline_ms"] = _new_part_alone(bench, backend)
        bench.runs.append(_figures(lang, out))


def _chat(
    bench: BenchRuns, backend: LlamaBackend, first: str, follow_up: str, out: dict[str, Any]
) -> Script:
    """Main thread: the first question in a fresh chat, then the follow-ups, each timed."""
    app = bench.app
    tools = instruments_of(app)
    tools.new_chat()
    tools.sampling = Sampling(max_tokens=ANSWER_TOKENS, temperature=0.0, seed=1)
    for turn in range(TURNS + 1):
        finished = len(app.finished)
        if not app.send(first if turn == 0 else follow_up):
            raise RuntimeError("the window refused the question: " + tools.status_text)
        yield _answered(app, finished)
        final = app.finished[-1]
        answer = tools.answer_times()
        if not isinstance(final, Done) or answer.first_text_at is None:
            raise RuntimeError(f"turn {turn + 1} did not answer")
        if turn > 0:
            out["ttfts"].append((answer.first_text_at - answer.started_at) * 1000)
            out["worker"].append(final.stats.ttft_ms)  # the worker's own: from its start
            reader = backend.reader
            out["evaluated"].append(reader.evaluated if reader else None)
            out["reused"].append(reader.reused if reader else None)
            out["prompt"], out["remembered"] = len(backend.last_read[0]), backend.last_read[1]
        yield 0.2
    tools.sampling = bench.sampling


def _new_part_alone(bench: BenchRuns, backend: LlamaBackend) -> float:
    """Main thread, model lock held: llama-cpp-python's TTFT for the last follow-up's prompt
    with the cache cut back to where its new part begins (ms, the median of :data:`TURNS`).
    On a thread of its own at the worker's priority (:func:`lower_this_thread`), the main
    thread waiting: the same footing as the worker, with no window competing."""
    prompt, remembered = backend.last_read
    took: list[float] = []

    def first_token() -> None:
        lower_this_thread()
        llm = backend.llm
        for _ in range(TURNS):
            llm.n_tokens = min(llm.n_tokens, remembered)
            llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
            began = time.perf_counter()
            tokens = llm.generate(prompt, temp=0.0, reset=True)
            next(tokens)
            took.append((time.perf_counter() - began) * 1000)
            tokens.close()

    with bench.app.controller.model_lock:
        thread = own_thread(first_token, name="tkchat-bench-turn2")
        thread.start()
        thread.join()
        backend.forget_prompt()
    return median(took) or 0.0


def _figures(lang: str, out: dict[str, Any]) -> RunFigures:
    ttft = median(out["ttfts"])
    baseline = out["baseline_ms"]
    return RunFigures(
        mode=f"turn-2-{lang}",
        backend="llama",
        tokens=out["prompt"] - out["remembered"],
        ttft_ms=rounded(ttft, 1),
        extra={
            "prompt_tokens": out["prompt"],
            "reused": out["reused"],
            "evaluated": out["evaluated"],
            "re_tokenised": out["prompt"] - out["remembered"],
            "new_part_alone_ttft_ms": rounded(baseline, 1),
            "worker_ttft_ms": [rounded(t, 1) for t in out["worker"]],
            "ttft_ratio": rounded(ttft / baseline, 2) if baseline else None,
            "load_1min": rounded(os.getloadavg()[0], 2),
        },
    )


def turn_two_verdicts(runs: list[RunFigures]) -> list[Check]:
    """Each language's turn 2 against its own baseline (none without ``--turn2``)."""
    out: list[Check] = []
    for run in runs:
        if not run.mode.startswith("turn-2-") or run.ttft_ms is None:
            continue
        ratio, new = run.extra["ttft_ratio"], run.tokens or 0
        out.append(
            Check(
                f"{run.mode} TTFT <= {TURN2_TTFT_RATIO_MAX:g} x reading just the new part",
                ratio is not None and ratio <= TURN2_TTFT_RATIO_MAX,
                f"{run.ttft_ms} ms vs {run.extra['new_part_alone_ttft_ms']} ms ({ratio} x)",
            )
        )
        most = max(e for e in run.extra["evaluated"] if e is not None)
        out.append(
            Check(
                f"{run.mode} evaluates only the new part (+1)",
                most <= new + 1,
                f"evaluated {run.extra['evaluated']} of {run.extra['prompt_tokens']} tokens, "
                f"new part {new}",
            )
        )
    return out
