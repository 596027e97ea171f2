"""What counts as a number in a JSON file a person may have edited.

JSON has one number type and Python's ``json`` gives back ``bool``, ``int`` and ``float`` (and,
unless told otherwise, NaN and infinity). The checks here are shared by every reader of such a
file in the package: a conversation's sampling settings, an imported export and
``settings.json``. Pure; any thread.
"""

from __future__ import annotations

import math
from typing import TypeGuard


def is_int(value: object) -> TypeGuard[int]:
    """A whole number. ``bool`` is an ``int`` subclass, but ``"seed": true`` in a file is a
    mistake, not the number 1, so it is refused."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """A whole or decimal number that is finite (NaN compares false with every bound, so a
    range check alone would let it through)."""
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


__all__ = ["is_int", "is_number"]
