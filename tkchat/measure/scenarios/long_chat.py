"""``tkchat bench --long-chat``: a long saved conversation opened, paged, resized and streamed
into, in the real window — at several lengths, so the growth shows.

For each length (messages: 0, then ``--long-chat`` sizes, 10, 100, 300 and 1,000 by default;
0 is the same run's empty-chat baseline) a conversation of that many messages of paragraphs,
lists, code and Chinese (:mod:`tkchat.measure.scenarios.chat_text`, ~3,333 characters a message:
300 messages are a million characters) is saved, then, with the lag probe recording:

1. ``open``: the sidebar's way of opening it (:meth:`SavedConversations.show`), until it is
   on screen and its painting near the view is done;
2. ``page``: Page Up through it (a page every 50 ms), a jump to the top, Page Down, a jump to
   the middle, and back to the end;
3. ``resize``: the window made narrower and wider (every line wraps again);
4. ``flood``: a question sent at its end and an answer streamed (a scripted flood of
   :data:`FLOOD_TOKENS` tokens at ``--rate``) until it is painted.

Each length is one row (``chat-N``) with the lag over all four phases and each phase's
worst frame; the target is the issue's: no long task and lag max within
:data:`~tkchat.measure.figures.LONG_CHAT_LAG_MAX_MS` at every length, and the longest chat's
worst frame against the empty chat's (the growth). Main thread; the script yields what to
wait for, like the rest of the benchmark.
"""

from __future__ import annotations

import time
from typing import Any

from tkchat.conversation import Sampling
from tkchat.measure.figures import LONG_CHAT_LAG_MAX_MS, BenchOptions, RunFigures, lag_figures
from tkchat.measure.scenarios.chat_text import long_conversation
from tkchat.measure.script import Script
from tkchat.stats import LagSample, rounded
from tkchat.ui.window.chat_window import ChatApp

SIZES = (10, 100, 300, 1000)
FLOOD_TOKENS = 20_000  # four seconds at 5,000 tokens/s
PAGES = 24  # Page Ups from the end (then half as many Page Downs from the top)
PAGE_S = 0.05
WIDTHS = (820, 1320, 700, 1140)  # the window's width, in turn (pixels)
RESIZE_S = 0.4
PHASES = ("open", "page", "resize", "flood")
QUESTION = "One more question, at the end of a long chat: say it all again, at length."


class LongChatBench:
    """The scenario, one length after another, in the window of a running ``tkchat bench``."""

    def __init__(self, app: ChatApp, options: BenchOptions, sizes: tuple[int, ...] = SIZES):
        self.app = app
        self.options = options
        self.sizes = sizes

    def run(self, runs: list[RunFigures]) -> Script:
        for messages in (0, *self.sizes):
            yield from self._one(messages, runs)

    def _one(self, messages: int, runs: list[RunFigures]) -> Script:
        app = self.app
        conversation, chars = self._save(messages)
        yield 0.3
        phases: dict[str, tuple[float, float]] = {}
        app.probe.start_recording()
        started = time.perf_counter()
        if conversation is None:
            app.new_chat()
        else:
            assert app.conversations is not None
            app.conversations.show(conversation)
        yield lambda: not app.showing_conversation and not app.transcript.painter.busy
        phases["open"] = (started, time.perf_counter())
        yield 0.2
        yield from self._page(phases)
        yield from self._resize(phases)
        yield from self._flood(phases)
        samples = app.probe.stop_recording()
        runs.append(self._figures(messages, chars, samples, phases))

    def _save(self, messages: int) -> tuple[int | None, int]:
        """The conversation in the store (set-up, not measured): its id and its characters."""
        if messages == 0:
            return None, 0
        archive = self.app.archive
        if archive is None or archive.store is None:
            raise RuntimeError("the long-chat bench needs the history (the store)")
        store = archive.store
        conversation = store.create(f"bench: {messages} messages")
        chat = long_conversation(messages, self.options.seed)
        for role, text in chat:
            store.add_message(conversation.id, role, text)
        return conversation.id, sum(len(text) for _role, text in chat)

    def _page(self, phases: dict[str, tuple[float, float]]) -> Script:
        text = self.app.transcript.text
        started = time.perf_counter()
        for _ in range(PAGES):
            text.yview_scroll(-1, "pages")
            yield PAGE_S
        text.yview_moveto(0.0)
        yield PAGE_S * 4
        for _ in range(PAGES // 2):
            text.yview_scroll(1, "pages")
            yield PAGE_S
        text.yview_moveto(0.5)
        yield PAGE_S * 4
        text.see("end")
        yield PAGE_S * 4
        phases["page"] = (started, time.perf_counter())

    def _resize(self, phases: dict[str, tuple[float, float]]) -> Script:
        root = self.app.root
        height = root.winfo_height()
        started = time.perf_counter()
        for width in WIDTHS:
            root.geometry(f"{width}x{height}")
            yield RESIZE_S
        phases["resize"] = (started, time.perf_counter())

    def _flood(self, phases: dict[str, tuple[float, float]]) -> Script:
        app = self.app
        painter = app.transcript.painter
        app.session.sampling = Sampling(max_tokens=FLOOD_TOKENS, seed=self.options.seed)
        finished_before = len(app.finished)
        started = time.perf_counter()
        if not app.send(QUESTION):
            raise RuntimeError("the long-chat bench could not send its question")
        yield lambda: len(app.finished) > finished_before
        yield lambda: not painter.busy
        yield 0.3
        phases["flood"] = (started, time.perf_counter())

    def _figures(
        self,
        messages: int,
        chars: int,
        samples: list[LagSample],
        phases: dict[str, tuple[float, float]],
    ) -> RunFigures:
        extra: dict[str, Any] = {"messages": messages, "chars": chars}
        for name in PHASES:
            begin, end = phases[name]
            lags = [s.lag_ms for s in samples if begin <= s.at <= end + 0.1]
            extra[f"{name}_lag_max_ms"] = rounded(max(lags) if lags else None, 2)
            extra[f"{name}_s"] = rounded(end - begin, 2)
        return RunFigures(
            mode=f"chat-{messages}",
            backend=self.options.backend,
            seconds=rounded(sum(end - begin for begin, end in phases.values()), 2),
            extra=extra,
            **lag_figures(samples),
        )


def long_chat_verdicts(runs: list[RunFigures]) -> list[tuple[str, bool, str]]:
    """No long task and lag max within budget at every length; the growth, as the longest
    chat's worst frame against the empty chat's."""
    rows = [r for r in runs if r.mode.startswith("chat-") and r.lag_max_ms is not None]
    out: list[tuple[str, bool, str]] = []
    for row in rows:
        phases = ", ".join(f"{name} {row.extra.get(f'{name}_lag_max_ms')}" for name in PHASES)
        out.append(
            (
                f"{row.extra['messages']:,} messages: no long task, lag max <= "
                f"{LONG_CHAT_LAG_MAX_MS:g} ms",
                row.long_tasks == 0 and (row.lag_max_ms or 0.0) <= LONG_CHAT_LAG_MAX_MS,
                f"{row.long_tasks} long tasks, lag max {row.lag_max_ms:.1f} ms ({phases})",
            )
        )
    if len(rows) >= 2:
        empty, longest = rows[0], rows[-1]
        ratio = (longest.lag_max_ms or 0.0) / max(empty.lag_max_ms or 0.0, 1.0)
        out.append(
            (
                f"growth: {longest.extra['messages']:,} messages' lag max / the empty chat's",
                True,  # reported, not held to a figure: the budget above is the target
                f"{ratio:.2f} x ({longest.lag_max_ms:.1f} / {empty.lag_max_ms:.1f} ms)",
            )
        )
    return out
