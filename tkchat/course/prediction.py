"""A lesson's question for the class before its demo: "predict, then observe".

A lesson's header may pose it in one line, the question and then the choices the class picks
from, separated by ``|``::

    predict: Every chunk re-renders the answer. How does the window feel? | smooth | janky
      from the start | janky as it grows

(on one line in the file). The choices are optional: a question alone is asked openly. The
lesson panel shows the question before the demo and keeps the lesson's ``expect`` line hidden
until the demo's answer has ended (or the teacher reveals it).

Tk-free, so the tests check every lesson without a window; any thread may call it.
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = "|"
# More than this many buttons do not fit beside each other on a projector at 1280×720.
MOST_CHOICES = 4


class PredictionError(ValueError):
    """A ``predict:`` line that cannot be asked (no question, one choice, an empty one …)."""


@dataclass(frozen=True, slots=True)
class Prediction:
    """The question asked before the demo, and the answers the class may pick (none: an open
    question)."""

    question: str
    choices: tuple[str, ...] = ()


def parse_prediction(text: str) -> Prediction | None:
    """The ``predict:`` header value as a :class:`Prediction` (None when there is none);
    :class:`PredictionError` says what is wrong with one that cannot be asked."""
    if not text.strip():
        return None
    question, *choices = (part.strip() for part in text.split(SEPARATOR))
    if not question:
        raise PredictionError("predict: the question comes first, before any '|'")
    if any(not choice for choice in choices):
        raise PredictionError("predict: an empty choice (two '|' in a row, or one at the end)")
    if len(choices) == 1:
        raise PredictionError("predict: one choice is no choice; give two or more, or none")
    if len(choices) > MOST_CHOICES:
        raise PredictionError(f"predict: at most {MOST_CHOICES} choices fit on a projector")
    if len(set(choices)) != len(choices):
        raise PredictionError("predict: the same choice twice")
    return Prediction(question, tuple(choices))
