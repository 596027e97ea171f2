"""What a conversation is made of, for every layer: its messages, the sampling settings, and
the context sizes a user may ask for.

Plain values with no behaviour and no imports of tkchat: the generation stage reads them, the
store saves them, the server validates them, and none of those needs another to know them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


DEFAULT_SYSTEM_PROMPT = "You are a helpful, concise assistant."


@dataclass(frozen=True, slots=True)
class Sampling:
    """Defaults that suit a small (135M) model: low temperature keeps it on topic."""

    temperature: float = 0.3
    top_p: float = 0.9
    top_k: int = 40
    repeat_penalty: float = 1.1
    max_tokens: int = 512
    seed: int | None = None


# What the window lets a user choose (the settings dialog) and what a saved or imported
# conversation may ask for; anything outside falls back to the default.
TEMPERATURE_RANGE = (0.0, 2.0)
TOP_P_RANGE = (0.05, 1.0)
MAX_TOKENS_RANGE = (1, 32768)
SEED_MAX = 2**32 - 1  # llama.cpp takes a 32-bit unsigned seed (the HTTP API caps it too)


# The contexts a user may ask for (--n-ctx, Settings): below 256 not even a system prompt and
# a question fit; above 2**20 no GGUF model has been trained for, and the cache would not fit.
MIN_N_CTX = 256
MAX_N_CTX = 1_048_576
