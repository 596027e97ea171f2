"""The browser page speaks the reader's language (issue 35), in headless Chromium with
test_browser's fixtures: a zh-CN browser gets ``<html lang="zh-CN">`` and a page with no
English word in what it shows (its texts, tooltips and placeholders), the status line's
messages during a real answer are Chinese, Stop and a model's error are Chinese, and
``?lang=en`` gives the English page back. tests/test_page_strings.py checks the strings
themselves without a browser.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests import test_browser
from tests.test_browser import LiveServer, Page, ask, state, wait_answer
from tests.test_page_strings import index_keys, read_strings
from tkchat.generate.scripted import ScriptedBackend, TokenGate

pytestmark = pytest.mark.gui

# The page, the browser and the server come from test_browser's fixtures.
browser = test_browser.browser
open_page = test_browser.open_page
serve = test_browser.serve

# What the Chinese page keeps in Latin letters, as the desktop window's Chinese does (the
# unit tokens/s, the product's name and its command, keys on the keyboard, names of
# technologies).
KEPT = {"tkchat", "serve", "tokens", "token", "s", "p99", "DOM", "Markdown", "Shift", "Esc"}

# Every text the page shows outside the answers, and its tooltips and placeholders.
SHOWN_JS = """() => {
  const parts = [document.title];
  for (const el of document.querySelectorAll('header, fieldset, #broken-bar, form, footer')) {
    if (el.checkVisibility()) parts.push(el.innerText);
  }
  for (const el of document.querySelectorAll('[title], [placeholder], [aria-label]')) {
    parts.push(el.title || '', el.placeholder || '', el.getAttribute('aria-label') || '');
  }
  return parts.join('\\n');
}"""


def english_words(text: str) -> set[str]:
    return {word for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) if word not in KEPT}


def test_a_chinese_browser_gets_the_page_in_chinese(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    gate = TokenGate()
    page = open_page(serve(ScriptedBackend(rate=0, tokens=40, gate=gate)), locale="zh-CN")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    assert page.title() == "tkchat —— 浏览器客户端"
    assert page.inner_text("header dt >> nth=0") == "心跳"
    assert page.inner_text("#send") == "发送" and page.inner_text("#status") == "就绪"
    assert (
        page.get_attribute("#prompt", "placeholder")
        == "问点什么吧。回车发送，Shift+回车换行，Esc 停止。"
    )
    assert "故障模式" in page.inner_text("fieldset legend")
    page.check("#broken-per-chunk")
    assert page.inner_text("#broken-bar").startswith("故障模式（为教学故意为之）：")
    assert english_words(page.evaluate(SHOWN_JS)) == set()
    page.uncheck("#broken-per-chunk")
    # The page's strings are the ones this file read (its reader of i18n.js is right).
    assert page.evaluate("() => window.TkI18n.STRINGS") == read_strings()

    ask(page, "为什么窗口不会卡？")
    gate.release(5)
    page.wait_for_function("() => window.tkchat.state.chunks > 0")
    assert page.inner_text("#status") == "正在生成……"
    gate.release(35)
    wait_answer(page)
    done = page.inner_text("#status")
    assert done.startswith("完成（已答完） · 40 个 token"), done
    assert english_words(done) == set(), done


def test_stop_and_a_model_error_in_chinese(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    gate = TokenGate()
    page = open_page(serve(ScriptedBackend(rate=0, tokens=40, gate=gate)), query="?lang=zh")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    ask(page, "你好")
    gate.release(3)
    page.wait_for_function("() => window.tkchat.state.chunks > 0")
    page.click("#stop")
    assert state(page)["status"] == "stopped"
    assert page.inner_text("#transcript .note.stopped") == "[已停止]"
    assert page.inner_text("#status") == "已停止"
    failing = open_page(serve(ScriptedBackend(rate=0, fail_at=2)), query="?lang=zh")
    ask(failing, "你好")
    wait_answer(failing, "error")
    note = failing.inner_text("#transcript .note.error")
    assert note.startswith("模型出错（"), note
    assert failing.inner_text("#status") == "出错"


def test_lang_en_gives_english_in_a_chinese_browser(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    page = open_page(serve(ScriptedBackend(rate=0, tokens=8)), locale="zh-CN", query="?lang=en")
    assert page.evaluate("() => document.documentElement.lang") == "en"
    assert page.title() == "tkchat — browser client"
    keys = index_keys()
    for key, text in list(keys.texts.items())[:8]:
        assert page.inner_text(f"[data-i18n='{key}'] >> nth=0") == text, key
    ask(page)
    wait_answer(page)
    assert page.inner_text("#status").startswith("done (stop) · 8 tokens")


def test_the_token_question_in_chinese(
    serve: Callable[..., LiveServer], open_page: Callable[..., Page]
) -> None:
    """A server that wants its token: the 401 is said in Chinese by its kind, and the field
    for the token, its refusal and its welcome are Chinese too."""
    token = "T0ken-of_the-server"
    server = LiveServer(ScriptedBackend(rate=0, tokens=8), token=token, join_code="J0in").start()
    try:
        page = open_page(server, locale="zh-CN")
        ask(page, "你好")
        wait_answer(page, "error")
        note = page.locator("#transcript .note.error").last
        assert note.inner_text().startswith("这个服务器需要它的令牌")
        assert page.get_attribute(".token-form input", "placeholder") == "tkchat serve 打印的令牌"
        assert page.inner_text(".token-form button") == "使用"
        page.fill(".token-form input", "not-the-token")
        page.press(".token-form input", "Enter")
        page.wait_for_function(
            "() => document.querySelector('.token-form input').placeholder === '令牌不对，请再试'"
        )
        page.fill(".token-form input", token)
        page.press(".token-form input", "Enter")
        page.wait_for_function("() => sessionStorage.length === 1")
        assert "已接受：请再问一次。" in note.inner_text()
        assert english_words(note.inner_text()) == set()
    finally:
        server.stop()
