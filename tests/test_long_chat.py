"""A long conversation costs the window what a short one does (issue 24, item 1).

Real window on Xvfb, generated saved chats (paragraphs, lists, code, Chinese; ~3,333
characters a message). Only the answers near the view are painted as rich text; far ones
stay (or go back to) plain text; the whole conversation is still there for select-all, copy
and search; the reader's view never moves while the painting near it changes. The one figure
here is a ratio between two chats opened in the same test (main-thread CPU time, which a
busy second core does not inflate the way it inflates wall-clock time).
"""

from __future__ import annotations

import time
import tkinter as tk

import pytest

from tests.conftest import pump_until
from tkchat.generate.scripted import ScriptedBackend
from tkchat.lab.bench.figures import RunFigures
from tkchat.lab.bench.scenarios.chat_text import long_conversation
from tkchat.lab.bench.scenarios.long_chat import long_chat_verdicts
from tkchat.ui.transcript.paint_zone import KEEP_CHARS, ZONE_CHARS
from tkchat.ui.transcript.transcript import AnswerView

pytestmark = pytest.mark.gui

WAIT_S = 120


def saved(app, messages: int, seed: int = 7) -> int:
    store = app.archive.store
    chat = store.create(f"{messages} messages")
    for role, text in long_conversation(messages, seed):
        store.add_message(chat.id, role, text)
    return int(chat.id)


def settled(app) -> bool:
    return not app.flow.showing_conversation and not app.transcript.painter.busy


def open_chat(root: tk.Tk, app, chat: int) -> None:
    app.conversations.show(chat)
    pump_until(root, lambda: settled(app), timeout=WAIT_S, what="the chat, painted near the view")


def rendered_chars(app) -> int:
    return sum(len(v.text) for v in app.transcript.answers if v.rendered)


def top_line(app) -> str:
    text = app.transcript.text
    return str(text.get("@0,0", "@0,0 lineend"))


def page(root: tk.Tk, app, pages: int) -> None:
    """Page Up (negative) or Down, as the keys do, letting the window settle after each."""
    for _ in range(abs(pages)):
        app.transcript.text.yview_scroll(-1 if pages < 0 else 1, "pages")
        root.update()
        pump_until(root, lambda: settled(app), timeout=WAIT_S, what="the painting near the view")


def test_a_long_chat_opens_and_pages_for_about_the_cost_of_a_short_one(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    # Each chat its own text (a seed of its own), so that none reuses another's rendering.
    chats = {"short": saved(app, 10, 1), "short 2": saved(app, 10, 3), "long": saved(app, 300, 2)}
    costs = {}
    for name, chat in chats.items():
        started = time.thread_time()
        open_chat(root, app, chat)
        page(root, app, -6)
        costs[name] = time.thread_time() - started
    baseline = max(costs["short"], costs["short 2"])
    # Painting everything (as before) made the long chat cost 33 times the short ones here.
    assert costs["long"] <= 4 * baseline, costs
    # What is rich text is what is near the view: not the 300 messages' million characters.
    assert rendered_chars(app) <= 3 * ZONE_CHARS
    assert sum(len(v.text) for v in app.transcript.entries) > 1_000_000


def test_far_answers_go_back_to_plain_and_are_painted_again_when_the_reader_returns(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    open_chat(root, app, saved(app, 120))
    answers: list[AnswerView] = app.transcript.answers
    first, last = answers[0], answers[-1]
    assert last.rendered and not first.rendered  # the end is on screen, the start is far
    app.transcript.text.yview_moveto(0.0)  # the scrollbar dragged to the top
    root.update()
    pump_until(root, lambda: settled(app) and first.rendered, timeout=WAIT_S, what="the top")
    pump_until(root, lambda: not last.rendered, timeout=WAIT_S, what="the end, back to plain")
    # Nothing far stayed rich, and the reader's line did not move while that was done.
    line = top_line(app)
    for _ in range(20):
        root.update()
        time.sleep(0.01)
    assert top_line(app) == line
    distance = sum(len(v.text) for v in app.transcript.entries[answers.index(first) * 2 :])
    assert distance > KEEP_CHARS  # (the premise: the end is far from the top)
    app.transcript.text.see("end")  # back to the end: it is painted again
    root.update()
    pump_until(root, lambda: settled(app) and last.rendered, timeout=WAIT_S, what="the end")
    assert "```" not in app.transcript.text.get(f"{last.start_mark}", f"{last.end_mark}")


def test_select_all_copy_and_search_reach_the_whole_long_chat(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    chat = long_conversation(120)
    open_chat(root, app, saved(app, 120))
    text = app.transcript.text
    first_question, last_question = chat[0][1], chat[-2][1]
    assert text.search(first_question[:60], "1.0")  # far from the view, plain, still there
    menu = app.transcript_menu
    menu.invoke(1)  # Select all
    menu.invoke(0)  # Copy
    copied = root.clipboard_get()
    assert first_question in copied and last_question in copied


def test_the_scheduler_tells_the_bench_which_callback_cost_the_most(root: tk.Tk) -> None:
    from tkchat.ui.scheduler import AfterScheduler, CallbackCosts

    scheduler = AfterScheduler(root)
    costs = scheduler.costs = CallbackCosts()
    fired: list[str] = []
    scheduler.once("light", 0, lambda: fired.append("light"))
    scheduler.once("heavy", 0, lambda: fired.append(str(sum(range(300_000)))))
    pump_until(root, lambda: len(fired) == 2, what="both callbacks")
    assert costs.count == 2 and costs.worst == "heavy" and costs.worst_ms > 0
    scheduler.costs = None  # handed back: nothing is measured any more
    scheduler.once("after", 0, lambda: fired.append("after"))
    pump_until(root, lambda: len(fired) == 3, what="the last one")
    assert costs.count == 2
    scheduler.close()


def test_a_language_change_relabels_a_long_chat_in_slices(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    transcript = app.transcript
    relabelled = lambda: not transcript.scheduler.pending("relabel")  # noqa: E731
    costs = {}
    for name, messages in (("short", 10), ("long", 300), ("short again", 10)):
        open_chat(root, app, saved(app, messages, seed=messages))
        began = time.thread_time()
        app.toggle_language()
        costs[name] = time.thread_time() - began
        if name == "long":
            assert not relabelled()  # the premise: too much for one callback, so sliced
        pump_until(root, relabelled, timeout=WAIT_S, what="every header in the new language")
        words = (app.t("transcript.you"), app.t("transcript.assistant"))
        for tag, word in zip(("label-you", "label-assistant"), words, strict=True):
            ranges = transcript.text.tag_ranges(tag)
            pairs = zip(ranges[::2], ranges[1::2], strict=True)
            labels = {transcript.text.get(start, end) for start, end in pairs}
            assert labels == {word}, (tag, labels)
    # All 300 messages' headers in one callback (as before) took 7 times the short chat's.
    assert costs["long"] <= 3 * max(costs["short"], costs["short again"]), costs


def _chat_row(messages: int, cpu_s: float, lag_max_ms: float) -> RunFigures:
    return RunFigures(
        mode=f"chat-{messages}",
        backend="scripted",
        lag_max_ms=lag_max_ms,
        long_tasks=0,
        extra={"messages": messages, "cpu_s": cpu_s, "cpu_x": None, "lag_max_x": None},
    )


@pytest.mark.parametrize(
    ("cpu_at_1000", "lag_at_1000", "flat"),
    [(3.0, 30.0, True), (4.6, 30.0, False), (3.0, 145.0, False)],
)
def test_the_bench_calls_a_chat_flat_only_if_ten_times_the_messages_cost_about_the_same(
    cpu_at_1000: float, lag_at_1000: float, flat: bool
) -> None:
    """The growth verdict compares 1,000 messages with 100 (the length nearest a tenth), not
    with the empty chat, which has nothing to open or page through."""
    rows = [
        _chat_row(0, 1.0, 5.0),
        _chat_row(10, 1.5, 10.0),
        _chat_row(100, 2.8, 30.0),
        _chat_row(300, 3.0, 40.0),
        _chat_row(1000, cpu_at_1000, lag_at_1000),
    ]
    (growth,) = [v for v in long_chat_verdicts(rows) if v[0].startswith("growth")]
    assert growth[0].startswith("growth: 1,000 messages against 100:")
    assert growth[1] is flat, growth
