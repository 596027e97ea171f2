"""What the model sees when a conversation outgrows its context: tkchat's one policy.

A long chat ends up longer than the model's context window (8,192 tokens for the bundled
model). Sending it anyway gives llama.cpp's error, or a server's 400, in the middle of a
chat. Instead, before every generation the worker fits the conversation:

1. the system prompt and the newest user message are always kept;
2. the oldest earlier messages are left out, one at a time, until the rest plus room for the
   answer fits (the room is ``max_tokens``, at most half the context);
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
    used = count(chat)
    room = answer_room(max_tokens, n_ctx)
    if used + room <= n_ctx:
        return ContextFit(chat, used, n_ctx)  # the usual case: one count
    system = tuple(m for m in chat[:1] if m.role == "system")
    earlier = list(chat[len(system) : -1])
    newest = chat[-1:]
    # Estimate with each message's own count (cheap), then check with an exact count once
    # the estimate says it fits: a chat template adds a few tokens per message.
    sizes = [count((m,)) for m in earlier]
    estimate, dropped, exact = used, 0, True
    while earlier and estimate + room > n_ctx:
        earlier.pop(0)
        estimate -= sizes.pop(0)
        dropped += 1
        # Whole turns only: many chat templates refuse a chat whose first turn is the
        # assistant's ("roles must alternate").
        while earlier and earlier[0].role != "user":
            earlier.pop(0)
            estimate -= sizes.pop(0)
            dropped += 1
        exact = estimate + room <= n_ctx
        if exact:
            estimate = count(system + tuple(earlier) + newest)
    kept = system + tuple(earlier) + newest
    used = estimate if exact else count(kept)
    if used + MIN_ANSWER_ROOM > n_ctx:
        own = count(system + newest)
        raise ContextOverflowError(
            f"This message needs about {own:,} tokens (with the system prompt) but the "
            f"model's context holds {n_ctx:,}, with room for an answer. Shorten the message "
            "or load a model with a larger context."
        )
    # An answer shorter than max_tokens is fine: the length limit says where it was cut.
    return ContextFit(kept, used, n_ctx, dropped)
