"""The browser page in the server's line (issue 23): a student whose question finds the model
busy sees "2nd in line, about 20 s" where the answer will appear — in English or Chinese —
until the turn comes, then the answer; a full line says when to try again.

Real server (the scripted backend, slow enough to wait for), real headless Chromium, several
pages at once as several students' tabs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests import test_browser
from tests.test_browser import LiveServer, Page, ask, state, wait_answer
from tkchat.generate.scripted import ScriptedBackend
from tkchat.serve.line import LineLimits

# The page, the browser and the server come from test_browser's fixtures.
browser = test_browser.browser
open_page = test_browser.open_page
serve = test_browser.serve

pytestmark = pytest.mark.gui

# 40 tokens/s for minutes: an answer holds the model until its page stops it, however slowly
# the machine lets the other pages ask; "max tokens" on a page makes its own answers short.
SLOW = {"rate": 40, "tokens": 100_000}


def place_text(page: Page) -> str:
    """The place shown in the last answer (empty once it has gone)."""
    return str(
        page.evaluate(
            "() => document.querySelector('#transcript .msg.assistant:last-of-type .place')"
            "?.textContent ?? ''"
        )
    )


def open_lang(open_page: Callable[..., Page], server: LiveServer, lang: str) -> Page:
    page = open_page(server)
    if lang != "en":
        page.goto(server.url + f"?lang={lang}")
        page.wait_for_function("() => window.tkchat && window.TkI18n")
    return page


def short_answers(page: Page, tokens: int = 8) -> Page:
    page.fill("#max-tokens", str(tokens))
    return page


def test_a_student_in_line_sees_their_place_then_their_answer(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    server = serve(ScriptedBackend(**SLOW))
    first, second, third = (short_answers(open_page(server)) for _ in range(3))
    ask(first)
    wait_answer(first)  # one turn timed: from now on the line can estimate
    first.fill("#max-tokens", "")
    ask(first)  # a long answer (the server's cap): the model is taken until Stop
    first.wait_for_function("() => window.tkchat.state.chunks > 0")
    ask(second)
    second.wait_for_function("() => window.tkchat.state.placeShown")
    ask(third)
    third.wait_for_function("() => window.tkchat.state.place?.position === 2")
    assert place_text(second).startswith("1st in line, about ")
    assert place_text(third).startswith("2nd in line, about ")
    assert "waiting for the model: 2nd in line" in str(third.text_content("#status"))
    first.click("#stop")
    assert state(first)["status"] == "stopped"
    for page in (second, third):
        st = wait_answer(page)
        assert st["text"] and not st["placeShown"] and place_text(page) == ""
    assert state(second)["placeEvents"] >= 1
    assert state(third)["place"]["position"] == 1  # it moved up before its turn


def test_the_place_in_chinese(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    server = serve(ScriptedBackend(**SLOW))
    first = open_page(server)
    waiting = short_answers(open_lang(open_page, server, "zh"))
    ask(first)
    first.wait_for_function("() => window.tkchat.state.chunks > 0")
    ask(waiting, "为什么窗口不会卡？")
    waiting.wait_for_function("() => window.tkchat.state.placeShown")
    assert place_text(waiting) == "排在第 1 位"  # no turn timed yet: no estimate
    assert "正在等待模型" in str(waiting.text_content("#status"))
    first.click("#stop")
    assert wait_answer(waiting)["text"]


def test_each_tab_names_itself_and_stop_then_send_is_not_refused(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    server = serve(ScriptedBackend(rate=40, tokens=2000))
    one, two = open_page(server), open_page(server)
    assert state(one)["clientId"] != state(two)["clientId"]
    ask(one)
    one.wait_for_function("() => window.tkchat.state.chunks > 0")
    one.click("#stop")
    ask(one, "And again?")  # the same tab at once: its first question is gone
    one.wait_for_function("() => window.tkchat.state.chunks > 0")
    one.click("#stop")
    assert state(one)["status"] == "stopped"


def test_a_full_line_says_when_to_try_again(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    limits: Any = LineLimits(waiting=1)
    server = serve(ScriptedBackend(rate=40, tokens=2000), limits=limits)
    pages = [open_page(server) for _ in range(3)]
    ask(pages[0])
    pages[0].wait_for_function("() => window.tkchat.state.chunks > 0")
    ask(pages[1])
    pages[1].wait_for_function("() => window.tkchat.state.placeShown")
    ask(pages[2])
    st = wait_answer(pages[2], "error")
    assert st["text"] == ""
    note = str(pages[2].text_content("#transcript .msg.assistant:last-of-type .note"))
    assert note.startswith("the line is full; try again in about ")
    for page in pages[:2]:
        page.click("#stop")


def test_an_estimate_that_is_only_a_lower_bound_says_at_least(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """The server marks an estimate ``at_least`` once an answer ahead has run past every
    estimate of it (tkchat/serve/line.py; the mechanism: tests/test_line.py): the page says so,
    in English and in Chinese, and says "about" otherwise."""
    server = serve(ScriptedBackend(rate=40))
    place = "{type: 'queued', position: 2, waiting: 3, eta_s: 12.4, at_least: %s}"
    for lang, lower, about in (
        ("en", "2nd in line, at least 12 s", "2nd in line, about 12 s"),
        ("zh", "排在第 2 位，至少 12 秒", "排在第 2 位，大约 12 秒"),
    ):
        page = open_lang(open_page, server, lang)
        assert page.evaluate(f"() => TkI18n.inLine({place % 'true'})") == lower
        assert page.evaluate(f"() => TkI18n.inLine({place % 'false'})") == about
