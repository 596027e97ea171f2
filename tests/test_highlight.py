"""Code highlighting (tkchat.render.highlight): lexers load off the calling thread; the runs
are the code, exactly; unknown languages are plain. No Tk."""

from __future__ import annotations

import threading

from tests.conftest import wait_until
from tkchat.render.highlight import PLAIN
from tkchat.render.safe_markdown import highlight, lexer_ready

CODE = 'def steep(minutes: float = 2.0) -> None:\n    print(f"{minutes} min")  # 🍵 中文\n\tx = 1\n'


def ready(lang: str) -> None:
    wait_until(lambda: lexer_ready(lang), what=f"the {lang} lexer")


def test_python_is_highlighted_and_the_runs_are_the_code_exactly() -> None:
    ready("python")
    runs = highlight(CODE, "python")
    assert "".join(text for text, _ in runs) == CODE
    looks = {text.strip(): look for text, look in runs}
    assert looks["def"].bold and looks["def"].colour  # a keyword has a look of its own
    assert looks["# 🍵 中文"].italic  # so does a comment
    assert len({look for _, look in runs}) > 3
    # adjacent runs never share a look (merged), and whitespace joins its neighbours
    assert all(a[1] != b[1] for a, b in zip(runs, runs[1:], strict=False))


def test_an_unknown_language_is_shown_plain() -> None:
    ready("no-such-language-at-all")  # found among Pygments' own, never by a plugin search
    assert highlight(CODE, "no-such-language-at-all") == [(CODE, PLAIN)]
    assert lexer_ready("") and highlight(CODE, "") == [(CODE, PLAIN)]  # none named: plain


def test_common_names_models_write_are_found() -> None:
    for lang in ("py", "js", "sh", "bash", "c++", "json", "plaintext"):
        ready(lang)
        assert "".join(text for text, _ in highlight("x = [1, 2]\n", lang)) == "x = [1, 2]\n"
    assert len(highlight("let x = 1;\n", "js")) > 1  # really lexed


def test_lexers_load_on_a_thread_of_their_own() -> None:
    before = {thread.name for thread in threading.enumerate()}
    lexer_ready("rust")  # asks, and returns at once
    ready("rust")
    assert "tkchat-lexers" in before | {thread.name for thread in threading.enumerate()}
    assert len(highlight("fn main() { let x = 1; }\n", "rust")) > 3
