"""Display-only line ends, found without looking at lines that cannot need one (issue 38: a
1,000-message chat put on screen looked for breaks line by line in each of its lines, the
costliest Python of opening it). The shortcut gives what the line-by-line rules give, and
asks nothing of them for text whose lines are all short. Deterministic, no clock."""

from __future__ import annotations

import random

import pytest

from tkchat.lab.bench.scenarios.chat_text import long_conversation
from tkchat.render import soft_breaks
from tkchat.render.soft_breaks import LineState, _break_line, soft_break


def line_by_line(text: str, state: LineState, limit: int) -> tuple[str, LineState]:
    """The rules applied to every line (what soft_break did before its shortcut)."""
    out: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if number:
            out.append("\n")
            state = LineState()
        shown, state = _break_line(line, state, limit)
        out.append(shown)
    return "".join(out), state


@pytest.mark.parametrize("seed", range(30))
def test_the_shortcut_breaks_where_the_rules_do(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = rng.choice(["ab \n", "a. b\n\n", "abc def\nxy", "中文。😀 \n", "x" * 5 + "\n "])
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4000)))
    limit = rng.choice([7, 50, 300, 2000])
    column = rng.randint(0, limit)
    state = LineState(column, rng.randint(0, column), "a. "[: rng.randint(0, 3)])
    assert soft_break(text, state, limit) == line_by_line(text, state, limit)


def test_a_saved_chat_s_messages_ask_nothing_of_the_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    real = soft_breaks._break_line
    monkeypatch.setattr(
        soft_breaks, "_break_line", lambda line, *rest: asked.append(line) or real(line, *rest)
    )
    messages = [text for _role, text in long_conversation(30)]
    for text in messages:
        assert soft_break(text, 0)[0] == text
    assert asked == []
    long_line = "word " * 1000
    soft_break("short\n" + long_line + "\nshort", 0)
    assert asked == ["short", long_line, "short"]  # a long line: the rules, every line
