"""Two scenarios every ``tkchat bench`` run ends with: the final markdown render of an
11,000-character answer (against one whole-document ``set_html``, the "render once at the end"
that freezes the window), and a saved conversation of 200 messages opened and scrolled from
top to bottom beside a history of 300 others (with the store calls a user triggers, timed).
Main thread; scripts the bench's runner drives.
"""

from __future__ import annotations

import time

from tkchat.generate.scripted import long_answer
from tkchat.lab.bench.figures import Check, RunFigures, lag_figures
from tkchat.lab.bench.script import Script
from tkchat.lab.window import LabWindow, instruments_of
from tkchat.render.safe_markdown import markdown_to_safe_html
from tkchat.stats import LONG_TASK_MS, rounded
from tkchat.ui.look.html_fonts import stock_tkhtmlview

OTHER_CONVERSATIONS = 300  # besides the long one, in the history run


def render_long(app: LabWindow, runs: list[RunFigures]) -> Script:
    """The final markdown render of an 11,000-character answer with code blocks.

    Baseline in the same run: one whole-document ``set_html`` — the "render once at the
    end" that freezes the window — timed first, on a scratch widget, outside the record."""
    from tkhtmlview import HTMLText

    tools = instruments_of(app)
    tools.new_chat()
    text = long_answer(11_000)
    html = markdown_to_safe_html(text)
    with stock_tkhtmlview():
        scratch = HTMLText(tools.root)
        began = time.perf_counter()
        scratch.set_html(html)
        whole_ms = (time.perf_counter() - began) * 1000
        scratch.destroy()
    yield 0.3
    written = tools.write_answer(text)  # as if it had streamed in
    slices_before = tools.counts().slices
    app.start_lag_recording()
    started = time.perf_counter()
    tools.finish_answer(written)
    yield lambda: not tools.painting
    seconds = time.perf_counter() - started
    yield 0.2
    samples = app.stop_lag_recording()
    slices = tools.slice_ms(slices_before)
    runs.append(
        RunFigures(
            mode="render",
            backend="markdown",
            render_slice_max_ms=rounded(max(slices), 2),
            seconds=rounded(seconds, 3),
            extra={
                "answer_chars": len(text),
                "slices": len(slices),
                "whole_document_set_html_ms": rounded(whole_ms, 1),
                # what one stock set_html costs per 1,000 characters of markdown: the
                # figure the painter's block size (render/) is chosen against
                "set_html_ms_per_1000_chars": rounded(whole_ms / len(text) * 1000, 2),
            },
            **lag_figures(samples),
        )
    )


def history_open(app: LabWindow, runs: list[RunFigures]) -> Script:
    """A saved conversation of 200 messages and about 100,000 characters: opened, rendered
    and scrolled from top to bottom, with the lag probe recording all along."""
    tools = instruments_of(app)
    store = tools.store
    if store is None:
        return
    answer = long_answer(1_000)[:995]  # with the questions: just over 100,000 characters
    conversation = store.create("bench: a long conversation")
    for index in range(100):  # set-up, not measured
        store.add_message(conversation.id, "user", f"Question {index + 1}?")
        store.add_message(conversation.id, "assistant", answer)
    for index in range(OTHER_CONVERSATIONS):  # a history of many chats, for the sidebar
        other = store.create(f"bench: chat {index + 1}")
        store.add_message(other.id, "user", f"Tell me about mutex {index}.")
        store.add_message(other.id, "assistant", answer[:400])
    stored = store.messages(conversation.id)
    yield 0.3
    app.start_lag_recording()
    slices_before = tools.counts().slices
    started = time.perf_counter()
    tools.open_saved(conversation.id)
    yield lambda: not tools.showing_conversation and not tools.painting
    opened_s = time.perf_counter() - started
    for step in range(21):  # scroll through it, top to bottom
        tools.scroll_to(step / 20)
        yield 0.05
    # The store calls a user triggers that run on the main thread (one small transaction
    # or query each, see tkchat/ui/chats/history.py), timed on this history.
    calls: dict[str, float | None] = {}
    for name, call in (
        ("list", tools.list_saved),
        ("search", lambda: tools.search_saved("mutex 7")),
        ("rename", lambda: tools.rename_saved(conversation.id, "bench: renamed")),
        ("delete", lambda: tools.delete_saved(conversation.id)),
        ("restore", lambda: tools.restore_saved(conversation.id)),
    ):
        began = time.perf_counter()
        call()
        calls[f"{name}_ms"] = rounded((time.perf_counter() - began) * 1000, 2)
        yield 0.05
    samples = app.stop_lag_recording()
    slices = tools.slice_ms(slices_before)
    runs.append(
        RunFigures(
            mode="history",
            backend="sqlite",
            seconds=rounded(opened_s, 3),
            render_slice_max_ms=rounded(max(slices) if slices else None, 2),
            extra={
                "messages": 200,
                "chars": sum(len(m.content) for m in stored),
                "conversations": OTHER_CONVERSATIONS + 1,
                **calls,
            },
            **lag_figures(samples),
        )
    )


def saved_verdicts(by: dict[str, RunFigures]) -> list[Check]:
    """The targets of these two runs: no long task (a lag max within :data:`LONG_TASK_MS`;
    and the history's lag p99 within a frame), beside the idle window's lag for scale."""
    out: list[Check] = []
    idle = by.get("idle")
    history = by.get("history")
    if history is not None and history.lag_p99_ms is not None:
        out.append(
            Check(
                "200-message conversation opens and scrolls: no long task, lag p99 <= 16 ms",
                history.long_tasks == 0 and history.lag_p99_ms <= 16,
                f"{history.long_tasks} long tasks, lag p99 {history.lag_p99_ms:.2f} ms, "
                f"max {history.lag_max_ms:.2f} ms, open {history.seconds} s",
                history.lag_p99_ms,
                baseline=idle.lag_p99_ms if idle is not None else None,
                baseline_of="idle lag p99",
                bound="no long task, lag p99 <= 16 ms",
                unit="ms",
            )
        )
    render = by.get("render")
    if render is not None and render.lag_max_ms is not None:
        out.append(
            Check(
                "final render of 11k chars: no long task",
                render.long_tasks == 0,
                f"slice max {render.render_slice_max_ms} ms, lag max "
                f"{render.lag_max_ms:.2f} ms (whole set_html: "
                f"{render.extra['whole_document_set_html_ms']} ms)",
                render.lag_max_ms,
                idle.lag_max_ms if idle is not None else None,
                "idle lag max",
                f"<= {LONG_TASK_MS:g} ms (no long task)",
                "ms",
            )
        )
    return out
