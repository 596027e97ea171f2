"""A long conversation, generated: the saved chat the long-conversation bench opens.

Paragraphs, bullet and numbered lists, headings, fenced code and Chinese, in the proportions
of a technical chat, about 3,333 characters a message on average (300 messages: a million
characters). Deterministic for a seed, so every run opens the same chat. Plain functions on
plain data: any thread.
"""

from __future__ import annotations

import random

from tkchat.store.records import Role

CHARS_PER_MESSAGE = 3_333  # 300 messages: 1,000,000 characters

_PROSE = (
    "the main loop stays free while a worker thread reads the model and puts each piece "
    "of text on a queue that the window drains every frame so a click is answered between "
    "two ticks and the scrollbar keeps moving when a long answer arrives in a flood of "
    "tokens the widget lays out only the lines it shows and a reader who scrolled up keeps "
    "the place they were reading while new text is appended below it"
)
_WORDS = _PROSE.split(" ")
_TERMS = ("`queue.Queue`", "`after()`", "**one insert**", "*idle*", "`Text`", "**layout**")
_CJK = (
    "界面线程只做追加，模型在后台线程里逐字生成。",
    "长对话的代价不应该随着它的长度增长。",
    "离视口很远的消息不需要排版，滚动到附近时再分片渲染。",
    "每一帧的工作量都应该有上限，窗口才能一直流畅。",
    "复制、搜索和导出仍然作用于整段对话。",
)
_CODE = (
    "def drain(channel, view):",
    "    text = ''.join(event.text for event in channel.drain())",
    "    if text:",
    "        view.append(text)  # one insert per tick",
    "    return len(text)",
    "",
    "class Window:",
    "    def tick(self) -> None:",
    "        started = time.perf_counter()",
    "        self.pump.drain()",
    "        self.after(16, self.tick)",
)


def long_conversation(messages: int, seed: int = 7) -> list[tuple[Role, str]]:
    """``messages`` (role, text) pairs, a question and its answer by turns, of about
    :data:`CHARS_PER_MESSAGE` characters each on average."""
    rng = random.Random(seed)
    out: list[tuple[Role, str]] = []
    for number in range(messages):
        if number % 2 == 0:
            out.append(("user", _question(rng, number // 2 + 1)))
        else:
            # the answer makes up its question's share of the pair's characters
            wanted = 2 * CHARS_PER_MESSAGE - len(out[-1][1])
            out.append(("assistant", _answer(rng, wanted)))
    return out


def _sentence(rng: random.Random, words: int) -> str:
    start = rng.randrange(len(_WORDS))
    chosen = [_WORDS[(start + i) % len(_WORDS)] for i in range(words)]
    if rng.random() < 0.5:
        chosen.insert(rng.randrange(len(chosen)), rng.choice(_TERMS))
    text = " ".join(chosen)
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 24)) for _ in range(rng.randint(3, 7)))


def _question(rng: random.Random, number: int) -> str:
    body = " ".join(_sentence(rng, rng.randint(6, 16)) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.3:
        body += " " + rng.choice(_CJK)
    return f"Question {number}: {body}"


def _block(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return _paragraph(rng)
    if kind < 0.60:
        items = rng.randint(3, 7)
        return "\n".join(f"- {_sentence(rng, rng.randint(4, 12))}" for _ in range(items))
    if kind < 0.70:
        items = rng.randint(3, 6)
        return "\n".join(f"{i}. {_sentence(rng, rng.randint(4, 12))}" for i in range(1, items + 1))
    if kind < 0.85:
        lines = [_CODE[(rng.randrange(len(_CODE)) + i) % len(_CODE)] for i in range(5, 25)]
        return "```python\n" + "\n".join(lines[: rng.randint(5, 20)]) + "\n```"
    if kind < 0.93:
        return "".join(rng.choice(_CJK) for _ in range(rng.randint(3, 9)))
    return "### " + _sentence(rng, rng.randint(3, 6)).rstrip(".")


def _answer(rng: random.Random, wanted: int) -> str:
    blocks = [_paragraph(rng)]
    size = len(blocks[0])
    while size < wanted:
        block = _block(rng)
        blocks.append(block)
        size += len(block) + 2
    return "\n\n".join(blocks)
