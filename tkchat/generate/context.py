"""What the model sees when a conversation outgrows its context: tkchat's one policy.

A long chat ends up longer than the model's context window (8,192 tokens for the bundled
model). Sending it anyway gives llama.cpp's error, or a server's 400, in the middle of a
chat. Instead, before every generation the worker fits the conversation:

1. the system prompt and the newest user message are always kept;
2. the oldest earlier messages are left out, a whole turn at a time, until the rest plus room
   for the answer fits (the room is ``max_tokens``, at most half the context): the newest
   turns that fit are kept, found by counting from the newest, never the whole of a chat
   far longer than the context;
3. if even the system prompt and the newest message leave no room, the generation ends with
   one clear ``context_overflow`` error that says how long the message is and how much fits.

Nothing is deleted: the left-out messages stay in the transcript and in the saved
conversation; the model just no longer sees them, and the window says so.

Runs on worker threads (it calls :meth:`Backend.count_tokens`), with the model lock held.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tkchat.conversation import Message
from tkchat.generate.backend import ContextOverflowError

MIN_ANSWER_ROOM = 16  # below this the answer would be cut off at once: say so instead
# A chat longer than this many characters a token of the context is not counted whole first:
# it cannot fit (tokens average 1-5 characters), and counting a long chat whole is the costly
# part. Only the cost depends on it: either way the same messages are kept.
WHOLE_COUNT_CHARS_PER_TOKEN = 8


@dataclass(frozen=True, slots=True)
class ContextFit:
    """The messages the model will see and what they cost."""

    messages: tuple[Message, ...]
    used: int  # prompt tokens of ``messages``
    n_ctx: int
    dropped: int = 0  # earlier messages left out (still on screen and saved)


def answer_room(max_tokens: int, n_ctx: int) -> int:
    """Tokens kept free for the answer: ``max_tokens``, at most half the context (so one
    long ``max_tokens`` does not throw away the whole conversation)."""
    half = max(n_ctx // 2, MIN_ANSWER_ROOM)
    return min(max_tokens, half) if max_tokens > 0 else half


def fit_to_context(
    messages: Sequence[Message],
    count: Callable[[Sequence[Message]], int],
    n_ctx: int,
    max_tokens: int,
) -> ContextFit:
    """Worker thread. Apply the policy of the module docstring; ``count`` is the backend's
    ``count_tokens``. Raises :class:`ContextOverflowError` when the newest message itself
    does not fit."""
    chat = tuple(messages)
    room = answer_room(max_tokens, n_ctx)
    whole: int | None = None
    if sum(len(m.content) for m in chat) <= n_ctx * WHOLE_COUNT_CHARS_PER_TOKEN:
        whole = count(chat)
        if whole + room <= n_ctx:
            return ContextFit(chat, whole, n_ctx)  # the usual case: one count
    system = tuple(m for m in chat[:1] if m.role == "system")
    earlier = chat[len(system) : -1]
    newest = chat[-1:]
    # Where the kept earlier messages may begin: at a question (whole turns only: many chat
    # templates refuse a chat whose first turn is the assistant's, "roles must alternate"),
    # or after the last of them (none kept).
    starts = [i for i, m in enumerate(earlier) if m.role == "user"] + [len(earlier)]
    counted: dict[int, int] = {}
    if whole is not None and starts[0] == 0:
        counted[0] = whole  # keeping every earlier message is the whole chat, counted above

    def kept(k: int) -> tuple[Message, ...]:
        return system + earlier[starts[k] :] + newest

    def fits(k: int) -> bool:
        if k not in counted:
            counted[k] = count(kept(k))
        return counted[k] + room <= n_ctx

    # The earliest start that fits, counted from the newest: 1, 2, 4, 8... turns back until
    # one does not fit, then halving the gap. More turns never take fewer tokens, so this
    # finds what dropping the oldest one at a time would, with a few counts of at most
    # twice what fits, however long the chat (counted whole, a 1,000-message chat was a
    # million tokens: 1.9 s of the worker's time and 25 ms of the window's, 2026-12-05).
    good, bad, step = len(starts) - 1, -1, 1
    if fits(good):
        while good - bad > 1:
            probe = max(good - step, 0) if bad < 0 else (good + bad) // 2
            step *= 2
            if fits(probe):
                good = probe
            else:
                bad = probe
    used = counted[good]
    if used + MIN_ANSWER_ROOM > n_ctx:
        own = count(system + newest)
        raise ContextOverflowError(
            f"This message needs about {own:,} tokens (with the system prompt) but the "
            f"model's context holds {n_ctx:,}, with room for an answer. Shorten the message "
            "or load a model with a larger context."
        )
    # An answer shorter than max_tokens is fine: the length limit says where it was cut.
    return ContextFit(kept(good), used, n_ctx, starts[good])
