"""A lesson's question for the class before its demo: "predict, then observe".

A lesson's header may pose it in one line, the question and then the choices the class picks
from, separated by ``|``::

    predict: Every chunk re-renders the answer. How does the window feel? | smooth | janky
      from the start | janky as it grows

(on one line in the file). The choices are optional: a question alone is asked openly. The
lesson panel shows the question before the demo and keeps the lesson's ``expect`` line hidden
until the demo's answer has ended (or the teacher reveals it) — and the lesson's own account
of the result, its *What you see* section (:data:`OBSERVED`), which :func:`hide_observed`
replaces with a line saying it comes after the prediction.

Tk-free, so the tests check every lesson without a window; any thread may call it.
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATOR = "|"
# The heading of the section that tells what the demo shows, in each language: a lesson that
# asks a question keeps it folded until the answer is out (tests/test_predict.py checks each
# such lesson has one).
OBSERVED = {"en": "What you see", "zh": "你会看到"}
FENCE = "```"
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


def hide_observed(body: str, language: str, note: str) -> str:
    """``body`` (a lesson's markdown) with its :data:`OBSERVED` section, heading and all,
    replaced by ``note``: one line, so that the panel still shows as many lines of the
    lesson at 1280×720 (two headings and a note took the room of three). The section ends
    at the next heading of its level or above, outside a code block. Unchanged without
    such a section."""
    heading = f"## {OBSERVED.get(language, OBSERVED['en'])}"
    lines = body.splitlines(keepends=True)
    start = next((n for n, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        return body
    end, fenced = len(lines), False
    for n in range(start + 1, len(lines)):
        line = lines[n]
        if line.lstrip().startswith(FENCE):
            fenced = not fenced
        elif not fenced and (line.startswith("## ") or line.startswith("# ")):
            end = n
            break
    return "".join([*lines[:start], note.rstrip(), "\n\n", *lines[end:]])
