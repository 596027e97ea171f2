"""The lessons: both languages in step, every code quote alive, the panel on a real window."""

from __future__ import annotations

import dataclasses
import functools
import re
import tkinter as tk
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.course import lessons as teach
from tkchat.course.lessons import (
    HEADER_KEYS,
    LANGUAGES,
    PLACEHOLDER_RE,
    Lesson,
    default_language,
    load_lessons,
    render_body,
    resolve_reference,
)
from tkchat.ui.look.fit import text_as_written, unbreakable
from tkchat.ui.transcript.markdown_looks import CODE_BLOCK_TAG, HEADING_TAGS, INLINE_CODE_TAG

EN = load_lessons("en")
ZH = load_lessons("zh")
PAIRS = list(zip(EN, ZH, strict=False))
SEED_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "shared/seed/async-stream-article.zh.txt",
    Path("/work/shared/seed/async-stream-article.zh.txt"),
)
COPY_RUN = 20  # this many consecutive characters in common count as copied


def header_keys(lesson: Lesson) -> set[str]:
    text = lesson.path.read_text(encoding="utf-8").split("---", 2)[1]
    return {line.partition(":")[0].strip() for line in text.splitlines() if line.strip()}


def headings(lesson: Lesson) -> list[str]:
    return [line for line in lesson.body.splitlines() if line.startswith("## ")]


def prose(lesson: Lesson) -> str:
    """The lesson body without code: what people read as sentences."""
    text = PLACEHOLDER_RE.sub("", lesson.body)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"`[^`]*`", "", text)


def is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF" and unicodedata.category(ch).startswith("L")


# -- the two languages are in step ----------------------------------------------------------


def test_the_lessons_have_the_same_ids_in_both_languages() -> None:
    assert LANGUAGES == ("en", "zh")
    assert [lesson.id for lesson in EN] == [lesson.id for lesson in ZH]
    assert [lesson.number for lesson in EN] == list(range(1, 21))
    assert EN[14].id == "15-qt-to-tk"
    for lesson in EN + ZH:
        assert lesson.id == lesson.path.stem
        assert re.fullmatch(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*", lesson.id)


@pytest.mark.parametrize(("en", "zh"), PAIRS, ids=[en.id for en, _ in PAIRS])
def test_same_header_keys_structure_and_code(en: Lesson, zh: Lesson) -> None:
    assert header_keys(en) == header_keys(zh)
    assert header_keys(en) <= set(HEADER_KEYS)
    assert len(headings(en)) == len(headings(zh)) >= 3
    assert en.placeholders == zh.placeholders
    assert en.code == zh.code
    # everything that drives the demo and the live figure is the same; only words differ
    for name in ("mode", "backend", "rate", "watch", "expect_mode", "expect_metric"):
        assert getattr(en, name) == getattr(zh, name), name
    assert en.title != zh.title and en.expect != zh.expect
    assert (en.prompt is None) == (zh.prompt is None)


def test_every_live_figure_is_named_in_words_in_both_languages() -> None:
    """The panel's "now (…)" names the figure, not the bench's key (a Chinese class read
    'lag_max_ms')."""
    from tkchat.i18n import STRINGS
    from tkchat.ui.teaching.live_figures import LIVE_METRICS

    for lang in ("en", "zh"):
        names = {metric: STRINGS[lang].get(f"lesson.metric.{metric}") for metric in LIVE_METRICS}
        assert all(names.values()), (lang, names)
        assert not any("_" in name for name in names.values() if name), names


@pytest.mark.parametrize("lesson", EN + ZH, ids=[f"{x.language}-{x.id}" for x in EN + ZH])
def test_header_values_are_valid(lesson: Lesson) -> None:
    # imported here: the window and the bench are edited often, and a break there should fail
    # this test, not hide every other lesson test behind an import error
    from tkchat.modes import MODES
    from tkchat.ui.teaching.live_figures import LIVE_METRICS

    assert lesson.mode in MODES
    assert lesson.expect_mode in MODES
    assert lesson.expect_metric in LIVE_METRICS, f"{lesson.expect_metric}: no live figure"
    assert lesson.backend in ("scripted", "llama")
    assert lesson.watch in ("heartbeat", "lag", "rates", "transcript")
    assert lesson.rate is None or lesson.rate > 0
    assert lesson.code, "every lesson quotes some of tkchat's code"


# -- code quotes resolve against the live source ----------------------------------------------


@pytest.mark.parametrize("lesson", EN + ZH, ids=[f"{x.language}-{x.id}" for x in EN + ZH])
def test_every_code_reference_resolves_and_every_placeholder_is_listed(lesson: Lesson) -> None:
    for ref in lesson.code:
        source = resolve_reference(ref)
        name = ref.rpartition(".")[2].rpartition("::")[2]
        word = re.escape(name)
        assert re.search(  # Python; or JavaScript: a function, a class or a method
            rf"\b(def|class|function)\s+{word}\b|\b{word}\s*[:=]|^(async\s+)?{word}\s*\(",
            source,
            re.M,
        ), ref
    assert lesson.placeholders, "the code section quotes something"
    assert set(lesson.placeholders) <= set(lesson.code)
    rendered = render_body(lesson)
    assert "{{code" not in rendered
    for ref in lesson.placeholders:
        assert resolve_reference(ref) in rendered


def test_resolve_reference_finds_methods_classes_and_attributes() -> None:
    method = resolve_reference("tkchat/consume/reorder.py::ReorderBuffer.push")
    assert method.startswith("def push(self, event: GenerationEvent)")
    assert not method.startswith(" ")  # dedented
    whole = resolve_reference("tkchat/consume/reorder.py::ReorderBuffer")
    assert whole.startswith("class ReorderBuffer") and method.strip() in whole.replace(
        "\n    ", "\n"
    )
    attribute = resolve_reference("tkchat/ui/pipeline.py::FixedPipeline.coalesce")
    assert attribute.strip() == "coalesce = True"
    decorated = resolve_reference("tkchat/consume/reorder.py::ReorderBuffer.waiting")
    assert decorated.startswith("@property\ndef waiting")


TRICKY_JS = """\
(function (scope) {
  /** Braces in strings, templates, comments and regexes do not count. */
  function tricky({ a = 1 } = {}) {
    const s = '}'; const t = "{"; const u = `${a} }`;
    const r = /[}/]{2}/g; // a } in a comment
    /* and { here */
    return { s, t, u, r };
  }

  class Parser {
    constructor() { this.n = 0; }

    /** One read. */
    async feed(bytes) {
      if (bytes) { this.n += 1; }
      return this.n;
    }
  }

  function after() { return 2; }
  function twice() {}
  function twice() {}
})(self);
"""


def test_resolve_reference_quotes_javascript_functions_classes_and_methods(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "tkchat").mkdir()
    (tmp_path / "tkchat" / "client.js").write_text(TRICKY_JS, encoding="utf-8")
    monkeypatch.setattr(teach, "repo_root", lambda: tmp_path)
    tricky = resolve_reference("tkchat/client.js::tricky")
    assert tricky.startswith("/** Braces in strings")  # the comment above comes along
    assert tricky.rstrip().endswith("return { s, t, u, r };\n}")  # the right closing brace
    method = resolve_reference("tkchat/client.js::Parser.feed")
    assert method.startswith("/** One read. */\nasync feed(bytes) {")  # dedented
    assert method.rstrip().endswith("return this.n;\n}")
    whole = resolve_reference("tkchat/client.js::Parser")
    assert whole.startswith("class Parser {") and "after" not in whole
    for ref, message in [
        ("tkchat/client.js::twice", "declared 2 times"),
        ("tkchat/client.js::nope", "no function or class"),
        ("tkchat/client.js::Parser.nope", "no function or class"),
        ("tkchat/client.js::Parser.feed.x", "Class.method"),
    ]:
        with pytest.raises(LookupError, match=message):
            resolve_reference(ref)


def test_the_browser_client_can_be_quoted() -> None:
    run = resolve_reference("tkchat/serve/static/sse-worker.js::run")
    assert run.startswith("async function run(") and "AbortController" in run
    lesson = dataclasses.replace(
        EN[0],
        body="{{code tkchat/serve/static/sse-worker.js::run}}\n",
        code=("tkchat/serve/static/sse-worker.js::run",),
    )
    assert render_body(lesson).startswith("```javascript\n// tkchat/serve/static/sse-worker.js")


@pytest.mark.parametrize(
    "ref",
    [
        "tkchat/no_such_file.py::Thing",
        "tkchat/consume/reorder.py::NoSuchClass",
        "tkchat/consume/reorder.py::ReorderBuffer.no_such_method",
        "tkchat/consume/reorder.py::ReorderBuffer.push.inner",
        "tkchat/consume/reorder.py",
        "../outside.py::Thing",
        "README.md::Thing",
        "tests/conftest.py::root",  # in the repository, but not tkchat's (nor in a wheel)
    ],
)
def test_resolve_reference_raises_a_clear_lookup_error(ref: str) -> None:
    with pytest.raises(LookupError, match=re.escape(repr(ref))):
        resolve_reference(ref)


def test_render_body_without_strict_shows_a_broken_reference() -> None:
    lesson = dataclasses.replace(
        EN[0], body="Look:\n\n{{code tkchat/events.py::Nope}}\n", code=("tkchat/events.py::Nope",)
    )
    with pytest.raises(LookupError):
        render_body(lesson)
    assert "Nope" in render_body(lesson, strict=False)


# -- languages --------------------------------------------------------------------------------


def test_chinese_lessons_are_chinese_and_english_ones_are_not() -> None:
    for en, zh in PAIRS:
        zh_text, en_text = prose(zh), prose(en)
        zh_share = sum(map(is_cjk, zh_text)) / max(1, sum(not c.isspace() for c in zh_text))
        assert zh_share > 0.5, f"{zh.id}: only {zh_share:.0%} Chinese"
        assert sum(map(is_cjk, en_text)) == 0, en.id
        assert any(map(is_cjk, zh.title)) and not any(map(is_cjk, en.title))
        # A Chinese demo prompts in Chinese, except on the bundled 135M model, which answers
        # Chinese with nonsense: there the prompt is the English one, and the lesson says why.
        if zh.backend == "llama":
            assert zh.prompt == en.prompt, zh.id
        else:
            assert zh.prompt is None or any(map(is_cjk, zh.prompt)), zh.id


@pytest.mark.parametrize("lesson", EN, ids=[x.id for x in EN])
def test_english_lessons_are_short(lesson: Lesson) -> None:
    words = len(re.findall(r"[A-Za-z0-9][\w'’.,-]*", prose(lesson)))
    low = 150 if lesson.id.startswith("15-") else 250  # the Qt table is a short appendix
    assert low <= words <= 500, f"{lesson.id}: {words} words"


def test_no_sentence_is_copied_from_the_seed_article() -> None:
    seed_path = next((p for p in SEED_CANDIDATES if p.is_file()), None)
    if seed_path is None:
        pytest.skip("the seed article (shared/seed) is not next to this clone")

    def letters(text: str) -> str:  # punctuation and spacing differ, wording is what counts
        return "".join(ch for ch in text if ch.isalnum())

    seed = letters(seed_path.read_text(encoding="utf-8"))
    copied: list[str] = []
    texts = [(x.id, x.path.read_text(encoding="utf-8").split("---", 2)[2]) for x in ZH]
    texts.append(("plan.zh", teach.plan_path("zh").read_text(encoding="utf-8")))
    for name, body in texts:
        # an API's name in `code` (requestAnimationFrame) is not a sentence of the article's
        text = letters(re.sub(r"`[^`\n]*`", "", body))
        copied += [
            f"{name}: {text[i : i + COPY_RUN]}"
            for i in range(len(text) - COPY_RUN + 1)
            if text[i : i + COPY_RUN] in seed
        ]
    assert not copied, "copied from the seed article:\n" + "\n".join(copied)


def test_default_language_follows_the_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(teach.locale, "getlocale", lambda: ("en_US", "UTF-8"))
    assert default_language() == "en"
    monkeypatch.setattr(teach.locale, "getlocale", lambda: ("Chinese (Simplified)_China", "936"))
    assert default_language() == "zh"
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert default_language() == "zh"
    monkeypatch.setenv("LC_ALL", "en_GB.UTF-8")
    assert default_language() == "en"
    monkeypatch.setenv("LANGUAGE", "zh_TW:en")
    assert default_language() == "zh"


def test_load_lessons_rejects_an_unknown_language() -> None:
    with pytest.raises(ValueError, match="fr"):
        load_lessons("fr")


def test_a_missing_lessons_folder_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tkchat import installed

    monkeypatch.setattr(installed, "source_root", lambda: tmp_path)  # neither a source tree
    monkeypatch.setattr(installed, "COURSE_PACKAGE", "tkchat.no_such_course")  # nor installed
    with pytest.raises(FileNotFoundError, match="lessons"):
        load_lessons("en")


# -- the panel, on a real window --------------------------------------------------------------


@pytest.mark.gui
def test_lesson_panel_picks_sets_up_switches_language_and_cleans_up(root: tk.Tk) -> None:
    from tkchat.i18n.lesson_panel import STRINGS as PANEL_STRINGS
    from tkchat.ui.teaching.lesson_panel import LessonPanel

    assert set(PANEL_STRINGS["en"]) == set(PANEL_STRINGS["zh"])
    language = {"now": "en"}
    received: list[Lesson] = []
    asked: list[str] = []

    def timers() -> set[str]:
        """Tk's ids of the ``after`` timers (and idle callbacks) not yet run."""
        return set(root.tk.splitlist(root.tk.call("after", "info")))

    before = timers()

    def read_figure(metric: str) -> float | None:
        asked.append(metric)
        return 1234.4

    panel = LessonPanel(
        root,
        language="en",
        on_setup_demo=received.append,
        read_figure=read_figure,
        translate=lambda key: PANEL_STRINGS[language["now"]][key],
    )
    panel.pack(fill="both", expand=True)
    root.update()
    assert panel.picker.cget("values")[0].startswith("01 · ")

    # pick lesson 4 as a user would: choose it in the combobox
    panel.picker.current(3)
    panel.picker.event_generate("<<ComboboxSelected>>")
    pump_until(root, lambda: not panel.rendering, what="the lesson painted")
    assert panel.current is not None and panel.current.id == "04-blocking"
    body = text_as_written(panel.text)
    assert "What you see" in body and "def start(self" in body  # the live code is quoted
    assert "{{code" not in body
    assert {HEADING_TAGS[1], CODE_BLOCK_TAG, INLINE_CODE_TAG} <= _tags_in(panel.text)

    panel.setup_button.invoke()
    assert [lesson.id for lesson in received] == ["04-blocking"]
    assert received[0].mode == "blocking"
    # lesson 04 asks the class first (tests/test_predict.py); the teacher shows the answer
    assert panel.prediction.waiting
    panel.prediction.show_button.invoke()

    pump_until(root, lambda: len(asked) >= 2, timeout=5, what="the live figure to refresh")
    assert set(asked) == {"lag_max_ms"}
    figure = unbreakable(str(panel.figure_label.cget("text")))
    assert figure.startswith("expected: about the whole generation")
    assert figure.endswith("now (longest lag): 1,234\u00a0ms")  # a number keeps its unit
    assert "heartbeat" in unbreakable(str(panel.watch_label.cget("text")))

    language["now"] = "zh"
    panel.set_language("zh")
    root.update()
    assert panel.current is not None and panel.current.id == "04-blocking"
    assert panel.current.language == "zh"
    titles = panel.picker.cget("values")
    assert all(any(map(is_cjk, title)) for title in titles)
    assert str(panel.setup_button.cget("text")) == PANEL_STRINGS["zh"]["lesson.setup"]
    assert "预期" in unbreakable(str(panel.figure_label.cget("text")))
    panel.setup_button.invoke()
    assert received[-1].language == "zh" and received[-1].id == "04-blocking"

    assert panel.timers.pending("refresh") and timers() - before
    panel.destroy()
    assert timers() <= before  # none of the panel's timers is left to fire into dead widgets


def _tags_in(text: tk.Text) -> set[str]:
    return {str(tag) for tag in text.tag_names() if text.tag_ranges(tag)}


@pytest.mark.gui
def test_lesson_panel_renders_every_lesson(root: tk.Tk) -> None:
    from tkchat.i18n.lesson_panel import STRINGS as PANEL_STRINGS
    from tkchat.ui.teaching.lesson_panel import LessonPanel

    for lang in LANGUAGES:
        panel = LessonPanel(
            root,
            language=lang,
            on_setup_demo=lambda _lesson: None,
            read_figure=lambda _metric: None,
            translate=lambda key, lang=lang: PANEL_STRINGS[lang][key],
        )
        panel.pack()
        for lesson in panel.lessons:
            panel.select(lesson.id)
            pump_until(root, lambda p=panel: not p.rendering, what=f"{lesson.id} painted")
            shown = text_as_written(panel.text)
            assert "##" not in shown and "```" not in shown, lesson.id
            assert _tags_in(panel.text) >= {HEADING_TAGS[1], CODE_BLOCK_TAG}, lesson.id
            assert PANEL_STRINGS[lang]["lesson.no_value"] in unbreakable(
                str(panel.figure_label.cget("text"))
            )
        panel.destroy()


# -- no figure typed by hand -------------------------------------------------------------------

# A number with a unit in a lesson is either a quoted measurement ({{figure …}}, from the last
# `tkchat bench --lessons` run), one of the design's own constants, or a token rate the lesson
# asks for (its demo's rate, or a `--rate N` it tells the student to try).
_MEASURE_RE = re.compile(
    r"(?<![\w.])(\d[\d,.]*)\s*(?:[–-]\s*\d[\d,.]*\s*)?"
    r"(ms|s\b|seconds?|tokens/s|tokens a second|tokens per second|updates/s|MB|毫秒|秒|个 token|"
    r"次/秒|token/s)"
)
DESIGN_CONSTANTS = {
    ("5", "ms"),  # the lag probe's period
    ("16", "ms"),  # one 60 Hz frame: the pump's tick
    ("50", "ms"),  # a long task (the browsers' threshold)
    ("100", "ms"),  # a reaction that still feels instant
}
_UNIT_CANON = {"毫秒": "ms", "秒": "s", "seconds": "s", "second": "s"}


def typed_figures(lesson: Lesson) -> list[str]:
    from tkchat.course.claims import FIGURE_RE

    text = FIGURE_RE.sub("", PLACEHOLDER_RE.sub("", lesson.expect + "\n" + lesson.body))
    rates = {lesson.rate} | {float(r) for r in re.findall(r"--rate (\d+)", text)}
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    found = []
    for match in _MEASURE_RE.finditer(text):
        number, unit = match.group(1).replace(",", ""), match.group(2)
        unit = _UNIT_CANON.get(unit, unit)
        if (number, unit) in DESIGN_CONSTANTS:
            continue
        if "token" in unit and float(number) in rates:
            continue
        found.append(match.group(0))
    return found


@pytest.mark.parametrize("lesson", EN + ZH, ids=[f"{x.language}-{x.id}" for x in EN + ZH])
def test_no_figure_is_typed_by_hand(lesson: Lesson) -> None:
    assert typed_figures(lesson) == [], (
        "quote measured figures with {{figure metric}} (tkchat bench --lessons measures them)"
    )


def test_the_typed_figure_check_can_fail() -> None:
    lesson = dataclasses.replace(EN[0], body="It takes about 1,700 ms, 2.2 ms p99.", expect="x")
    assert typed_figures(lesson) == ["1,700 ms", "2.2 ms"]


# -- every UI string a lesson quotes is one its own window shows -------------------------------

# A lesson quotes the window in **bold**, *italics*, “quotes”, "quotes" or `code`, and uses the
# same marks for emphasis. A quote counts as the window's words when it is a template with holes
# (“Done — N tokens at M tokens/s”, `model … tokens/s`), a transcript mark ([stopped]), or a name
# right after press/click/点/按 or before button/按钮: the lesson's own window must show it (or
# it is a mode or a tkchat command). Besides, no piece of the other language's window (three
# characters or more, and not shown by the lesson's own window too) may appear in its prose.
_QUOTE_RE = re.compile(
    r"\*\*(?P<bold>[^*\n]+)\*\*|\*(?P<em>[^*\n]+)\*|“(?P<curly>[^”\n]+)”"
    r"|\"(?P<ascii>[^\"\n]+)\"|`(?P<code>[^`\n]+)`"
)
# a hole in a quoted template such as “Done — N tokens at M tokens/s” or `model … tokens/s`;
# a number stands for a hole when the quote is compared with the window's strings
_HOLE_RE = re.compile(r"\{[a-z_0-9]+\}|…|\.\.\.|(?<!\w)[NM](?!\w)")
_NUMBER_RE = re.compile(r"\d[\d,.:]*")
# the verb before a button's name, or the word after it
_CUE_BEFORE_RE = re.compile(
    r"(?i)\b(?:press|pressing|click|clicking|clicks|choose|select|pick)\s+(?:the\s+|on\s+)?$"
    r"|(?:(?<![一重要特优缺终起观焦])点|按(?!钮|照|顺序)|选)[^，。；：！？、“”*`\n]{0,8}$"
)
_CUE_AFTER_RE = re.compile(r"^\s*(?:button|按钮)")


def _with_holes(text: str) -> str:
    text = _NUMBER_RE.sub("…", _HOLE_RE.sub("…", text.replace("\u00a0", " ")))
    return re.sub(r"\s+", " ", re.sub(r"…(?:\s*…)*", "…", text)).strip()


@functools.cache
def window_lines(lang: str) -> tuple[str, ...]:
    """Everything the window in ``lang`` shows, a variable part written "…": each string, cut
    at the health bar's "│", and each string followed by its continuations (``app.done`` and
    ``app.done.speed``), which the window shows as one line. (Worked out once per language:
    every lesson is checked against it.)"""
    from tkchat.i18n import STRINGS

    strings = STRINGS[lang]
    joined = [
        strings[key] + strings[more]
        for key in strings
        for more in strings
        if more.startswith(key + ".")
    ]
    return tuple(
        _with_holes(part)
        for text in [*strings.values(), *joined]
        for part in text.split("│")
        if part.strip()
    )


# Words of a window's sentence that are also the name of a technology a lesson may use in
# either language ("Event {seq} never arrived" and Server-Sent Events).
TECHNICAL_TERMS = {"Event"}


@functools.cache
def foreign_words(lang: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The pieces of the other language's window (three characters or more, and not shown by
    the window in ``lang`` too) that its lessons must not use, each with the pattern that
    finds it as a word."""
    own = window_lines(lang)
    other = next(x for x in LANGUAGES if x != lang)
    found: dict[str, re.Pattern[str]] = {}
    for line in window_lines(other):
        for piece in line.split("…"):
            piece = piece.strip(" —–-:：,，.。;；()（）[]")
            if len(piece) < 3 or piece in TECHNICAL_TERMS or any(piece in mine for mine in own):
                continue
            found[piece] = re.compile(rf"(?<![A-Za-z0-9]){re.escape(piece)}(?![A-Za-z0-9])")
    return tuple(found.items())


def ui_quote_problems(lesson: Lesson) -> list[str]:
    """UI strings ``lesson`` quotes that its window does not show, and strings of the other
    language's window it names."""
    from tkchat.course.claims import FIGURE_RE
    from tkchat.modes import MODES

    lang = lesson.language
    own = window_lines(lang)
    text = FIGURE_RE.sub("…", PLACEHOLDER_RE.sub("", lesson.expect + "\n" + lesson.body))
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"(?<!\n)\n(?!\n)", " ", text)  # a quote may wrap onto the next line
    problems = []
    for match in _QUOTE_RE.finditer(text):
        quoted = next(value for value in match.groups() if value is not None)
        is_ui = (
            _HOLE_RE.search(quoted)  # a template, with holes
            or quoted.startswith("[")  # a mark in the transcript, such as [stopped]
            or (
                match.lastgroup != "code"
                and (
                    _CUE_BEFORE_RE.search(text[max(0, match.start() - 20) : match.start()])
                    or _CUE_AFTER_RE.match(text[match.end() : match.end() + 10])
                )
            )
        )
        shown = quoted in MODES or quoted.startswith("tkchat ")
        shown = shown or any(_with_holes(quoted) in line for line in own)
        if is_ui and not shown:
            problems.append(f"not in the {lang} window: {quoted!r}")
    other = next(x for x in LANGUAGES if x != lang)
    words = re.sub(r"`[^`\n]*`", "", text)  # code is the same in both languages
    for piece, pattern in foreign_words(lang):
        if pattern.search(words):
            problems.append(f"the {other} window's words: {piece!r}")
    return sorted(set(problems))


@pytest.mark.parametrize("lesson", EN + ZH, ids=[f"{x.language}-{x.id}" for x in EN + ZH])
def test_a_lesson_quotes_only_what_its_own_window_shows(lesson: Lesson) -> None:
    assert ui_quote_problems(lesson) == []


def test_the_ui_quote_check_can_fail() -> None:
    # the mistakes the lessons made: the English window's words in a Chinese lesson, and a
    # status line that no window shows ("tok/s")
    zh = dataclasses.replace(
        ZH[0],
        expect="x",
        body="点一下 **Ping**：pong 计数在变。结束时显示“Done — N tokens at\nM tok/s”，"
        "回答标上 *[stopped]*；状态条上是 `model … tokens/s`。\n",
    )
    assert ui_quote_problems(zh) == [
        "not in the zh window: 'Done — N tokens at M tok/s'",
        "not in the zh window: 'Ping'",
        "not in the zh window: '[stopped]'",
        "not in the zh window: 'model … tokens/s'",
        "the en window's words: 'Done'",
        "the en window's words: 'Ping'",
        "the en window's words: 'pong'",
        "the en window's words: 'stopped'",
        "the en window's words: 'tokens at'",
    ]
    en = dataclasses.replace(EN[0], expect="x", body='It ends with "Done — N tokens at M tok/s".\n')
    assert ui_quote_problems(en) == ["not in the en window: 'Done — N tokens at M tok/s'"]
    # emphasis and made-up messages are not UI names; the window's own words pass
    fine = "**心跳**让人觉得“即时”，没有“模型忙”；按“停止”，标上 *[已停止]*，看“第 3 次响应”。\n"
    assert ui_quote_problems(dataclasses.replace(ZH[0], expect="x", body=fine)) == []


def test_a_parse_that_cpythons_own_check_broke_is_done_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen once in the suite: a code quote came out empty when a collection on the panel's
    worker thread ran a Tk object's ``__del__`` mid-parse (a SystemError of CPython's AST
    check). The quote is parsed again."""
    import ast

    real = ast.parse
    calls: list[str] = []

    def once_broken(source: str, filename: str = "<unknown>") -> ast.Module:
        calls.append(filename)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")
        return real(source, filename=filename)

    monkeypatch.setattr(ast, "parse", once_broken)
    quoted = resolve_reference("tkchat/ui/pipeline.py::FixedPipeline.show")
    assert quoted.lstrip().startswith("def show") and len(calls) == 2
