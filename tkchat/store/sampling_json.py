"""Sampling values to and from the JSON dicts they are stored as.

A conversation keeps its temperature, top_p, max_tokens and seed in its ``settings`` column,
and ``settings.json`` keeps the values new conversations start with. Both are plain JSON a
person may edit, so reading goes one way only: whatever is unusable falls back to the
default instead of reaching the backend. Pure; any thread (in the app, the Tk thread when a
conversation is opened or the settings are loaded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from tkchat.conversation import MAX_TOKENS_RANGE, SEED_MAX, TEMPERATURE_RANGE, TOP_P_RANGE, Sampling
from tkchat.store.records import is_int, is_number

_SAMPLING_KEYS = tuple(f.name for f in fields(Sampling))


def settings_from_sampling(sampling: Sampling) -> dict[str, Any]:
    """A conversation's ``settings`` dict for these sampling values (pure; any thread)."""
    return {name: getattr(sampling, name) for name in _SAMPLING_KEYS}


def sampling_from_settings(settings: Mapping[str, Any]) -> Sampling:
    """The :class:`Sampling` a conversation asks for: known keys of the right type override
    the defaults, anything else is ignored (a hand-edited or imported file must not crash
    generation). Pure; any thread."""
    defaults = Sampling()
    chosen: dict[str, Any] = {}
    for name in _SAMPLING_KEYS:
        value, default = settings.get(name), getattr(defaults, name)
        if name == "seed" and (value is None or is_int(value) and 0 <= value <= SEED_MAX):
            chosen[name] = value
        elif isinstance(default, float) and is_number(value) and _in_range(name, value):
            chosen[name] = float(value)
        elif is_int(default) and is_int(value) and _in_range(name, value):
            chosen[name] = value
    return Sampling(**chosen)


_RANGES = {
    "temperature": TEMPERATURE_RANGE,
    "top_p": TOP_P_RANGE,
    "max_tokens": (0, MAX_TOKENS_RANGE[1]),
}  # 0: no limit, as the backends read it


def _in_range(name: str, value: Any) -> bool:
    """Within what the settings dialog offers (a hand-edited file may say anything)."""
    low, high = _RANGES.get(name, (float("-inf"), float("inf")))
    return bool(low <= value <= high)


__all__ = ["sampling_from_settings", "settings_from_sampling"]
