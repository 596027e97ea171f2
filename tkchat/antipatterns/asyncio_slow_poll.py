"""BROKEN ON PURPOSE — ``asyncio-slow-poll``: Tk runs the asyncio loop only every 200 ms.

The ``asyncio-tk`` mode, with its poll slowed down "to save CPU". The window stays perfectly
responsive — the lag meter shows nothing wrong, since a step is short and Tk is free between
steps — but a token that reaches the loop waits for the next step, up to 200 ms, and every
token that arrived meanwhile goes on screen with it: the answer comes in bursts, five a
second, instead of streaming. The cost of a slow poll is latency, not lag.
"""

from __future__ import annotations

from tkchat.aio.tk_loop import AsyncioTkPipeline

# THE MISTAKE: a poll far slower than a frame; each token waits for it, and the text jumps.
SLOW_POLL_MS = 200


class PollTheLoopSlowly(AsyncioTkPipeline):
    name = "asyncio-slow-poll"
    broken = True
    poll_ms = SLOW_POLL_MS
