"""The whole window in English and Chinese, and every lesson's demo set up from the panel."""

from __future__ import annotations

import re
import tkinter as tk
from collections.abc import Iterator

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Sampling
from tkchat.course.claims import format_figure
from tkchat.course.lessons import load_lessons
from tkchat.generate.backend import Backend
from tkchat.generate.factory import BackendOptions, ScriptedOptions
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.i18n import LANGUAGES, STRINGS
from tkchat.modes import MODES
from tkchat.ui.base.translator import Translator
from tkchat.ui.look.fit import unbreakable
from tkchat.ui.models import switch as model_switch

pytestmark = pytest.mark.gui

PLACEHOLDER = re.compile(r"{(\w+)}")
# Whole texts that are the same in both languages on purpose: the button that names the other
# language, the heartbeat clock and the health bar's separator. (Any other text must contain
# Chinese: an English label such as "Send" left untranslated must fail the test, so plain
# ASCII is not excused.)
SAME_IN_BOTH = re.compile(r"^(English|中文|♥ \d\d:\d\d:\d\d|│)$")
CJK = re.compile(r"[\u4e00-\u9fff]")


def figures_in(root: tk.Misc, app, lang: str) -> None:
    """Until the health bar's figures are written in ``lang``: they follow a language
    switch at their next refresh (a timer, every 250 ms)."""
    labels = (app.health.lag, app.health.rates)
    pump_until(
        root,
        lambda: all(bool(CJK.search(str(x.cget("text")))) == (lang == "zh") for x in labels),
        what=f"the health bar's figures in {lang}",
    )


def widgets(root: tk.Misc) -> Iterator[tk.Misc]:
    for child in root.winfo_children():
        yield child
        yield from widgets(child)


def visible_texts(root: tk.Misc) -> list[str]:
    texts = []
    for widget in widgets(root):
        try:
            text = str(widget.cget("text"))
        except tk.TclError:
            continue
        if text.strip():
            texts.append(text)
    return texts


def without_figures(texts: list[str]) -> list[str]:
    """The texts with every number replaced by "#" (and its padding by one space): the clock,
    the lag and the lesson panel's live figure change from one look to the next."""
    return [re.sub(r"\d[\d,.:]*", "#", " ".join(text.split())) for text in texts]


def test_every_string_exists_in_both_languages_with_the_same_placeholders() -> None:
    assert set(STRINGS["en"]) == set(STRINGS["zh"])
    for key, english in STRINGS["en"].items():
        chinese = STRINGS["zh"][key]
        assert set(PLACEHOLDER.findall(english)) == set(PLACEHOLDER.findall(chinese)), key
        words = PLACEHOLDER.sub("", english)
        if english != chinese and re.search(r"[A-Za-z]{2}", words):  # real words to translate
            assert re.search(r"[\u4e00-\u9fff]", chinese) or key == "button.language", key
    for mode in MODES:
        assert f"mode.{mode}" in STRINGS["en"]
    with pytest.raises(KeyError):
        Translator("en")("no.such.key")


def test_the_chinese_window_shows_no_english_interface_text(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), language="en")
    app.teaching.toggle_lessons()
    app.teaching.set_mode("blocking")
    app.flow.send("hello")  # a blocking answer: the status, title and transcript labels change
    pump_until(root, lambda: not app.transcript.painter.busy, what="render")
    root.update()
    english = visible_texts(root)
    app.toggle_language()
    figures_in(root, app, "zh")
    assert app.t.lang == "zh" and app.teaching.lesson_panel is not None
    assert app.teaching.lesson_panel.current is not None
    assert re.search(r"[\u4e00-\u9fff]", app.teaching.lesson_panel.current.title)
    chinese = visible_texts(root)
    english_values = {v for v in STRINGS["en"].values() if "{" not in v}
    for text in chinese:
        if SAME_IN_BOTH.search(text):
            continue
        assert text not in english_values, f"untranslated: {text!r}"
        assert re.search(r"[\u4e00-\u9fff]", text), f"no Chinese in {text!r}"
    assert len(chinese) == len(english)  # the same widgets, relabelled
    assert "故障模式" in root.title()
    app.toggle_language()
    figures_in(root, app, "en")
    assert app.t.lang == "en"
    assert without_figures(visible_texts(root)) == without_figures(english)  # all back


@pytest.mark.model
def test_every_lesson_demo_sets_its_mode_backend_and_prompt(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def factory(options: BackendOptions) -> Backend:
        kind = "scripted" if isinstance(options, ScriptedOptions) else "llama"
        made.append(kind)
        return ScriptedBackend(rate=0) if kind == "scripted" else LlamaBackend()

    monkeypatch.setattr(model_switch, "make_backend", factory)
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None
    lessons = load_lessons("en")
    assert len(lessons) >= 14
    for lesson in lessons:
        panel.select(lesson.id)
        panel.setup_button.invoke()
        assert app.teaching.mode == lesson.mode and app.teaching.mode_box.get() == lesson.mode, (
            lesson.id
        )
        kind = "scripted" if isinstance(app.controller.backend, ScriptedBackend) else "llama"
        assert kind == lesson.backend, lesson.id
        if lesson.rate is not None and kind == "scripted":
            assert app.controller.backend.rate == lesson.rate
        assert app.input.get("1.0", "end-1c") == (lesson.prompt or "")
        pump_until(root, lambda: app.flow.model_ready, timeout=60, what=f"{lesson.id}'s backend")
    assert made.count("llama") <= 1 and made.count("scripted") <= 1  # kept, not remade


def test_live_figures_follow_an_answer(root: tk.Tk, make_app) -> None:
    gate = TokenGate()  # the answer reaches the screen in two updates, whatever the pace
    app = make_app(ScriptedBackend(gate=gate, text="One two three four."))
    app.flow.send("go")
    answer = app.transcript.answers[-1]
    gate.release(2)
    pump_until(root, lambda: len(answer.arrivals) == 1, what="the answer's first update")
    gate.release(100)
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    assert len(answer.arrivals) >= 2
    for metric in (
        "lag_max_ms",
        "lag_p99_ms",
        "long_tasks",
        "tokens_per_s",
        "ui_updates_per_s",
        "ttft_ms",
        "rss_peak_mb",
    ):
        value = app.demos.live_figure(metric)
        assert value is not None and value >= 0, metric
        if metric in ("tokens_per_s", "ui_updates_per_s", "ttft_ms", "rss_peak_mb"):
            assert value > 0, metric  # an answer was generated, shown and took time
    assert app.demos.live_figure("no_such_metric") is None
    assert set(LANGUAGES) == {"en", "zh"}


def test_the_lesson_figure_holds_the_demos_final_value_until_the_next_demo(
    root: tk.Tk, make_app
) -> None:
    """Lesson 03's blocking demo, a real freeze in the window: the figure the class reads
    off (long tasks) is the demo's final one, its freeze counted though the answer ended
    inside it; what the window does next (another answer, the panel refreshing) is not read
    into it; *Set up the demo* again makes it live."""
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None
    reads: list[float | None] = []  # every value of the live figure the panel took
    live = panel.read_figure

    def read_figure(metric: str) -> float | None:
        reads.append(live(metric))
        return reads[-1]

    panel.read_figure = read_figure
    panel.select("03-event-loop-gate")
    panel.setup_button.invoke()
    assert panel.prediction.waiting and reads[-1] == 0.0  # the demo starts from no long task
    backend = app.controller.backend
    assert isinstance(backend, ScriptedBackend)  # the same scripted backend, kept
    # the demo's answer, short: 20 tokens at once, each holding the loop 10 ms (a freeze)
    backend.rate, backend.tokens, backend.token_cost_ms = 0, 20, 10.0
    app.flow.send()  # the lesson's prompt; a blocking demo returns once its answer ended
    assert len(app.flow.answering.finished) == 1
    assert not app.demos.caught_up()  # the loop is not back yet: the freeze is not counted
    panel.refresh_figure()
    assert panel.prediction.waiting  # so the demo has not ended
    pump_until(root, lambda: not panel.prediction.waiting, what="the demo's end")
    held = reads[-1]
    assert held is not None and held >= 1, reads  # the freeze, counted after the answer
    shown = str(panel.figure_label.cget("text"))
    assert format_figure("long_tasks", held, "en") in unbreakable(shown)

    taken = len(reads)
    app.flow.send("And again?")  # the window goes on: another answer, another freeze
    assert len(app.flow.answering.finished) == 2
    pump_until(root, app.demos.caught_up, what="the window done with that answer")
    for _ in range(3):
        panel.refresh_figure()  # as its timer does twice a second
    assert len(reads) == taken and str(panel.figure_label.cget("text")) == shown

    panel.setup_button.invoke()  # the next demo: the figure is live again, from nothing
    assert len(reads) == taken + 1 and reads[-1] == 0.0
    assert str(panel.figure_label.cget("text")) != shown


def test_the_lesson_figure_is_the_demos_alone_none_before_the_demo_is_set_up(
    root: tk.Tk, make_app
) -> None:
    """Walked in English: lesson 03's answer shown without its demo, the "now" figure went
    on counting what the window did (0, then 2 long tasks after two F11s). Until *Set up the
    demo*, the figure is not read: there is no demo of this lesson to show."""
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None
    reads: list[str] = []
    panel.read_figure = lambda metric: reads.append(metric) or 2.0  # type: ignore[func-returns-value]
    panel.select("03-event-loop-gate")
    panel.prediction.reveal()  # *Show the answer*, no demo run
    for _ in range(3):
        panel.refresh_figure()
    assert reads == []
    assert app.t("lesson.no_value") in unbreakable(str(panel.figure_label.cget("text")))
    panel.setup_button.invoke()  # the demo: its figure, live
    assert reads == ["long_tasks"]


def test_another_lesson_picked_takes_the_last_demos_mark_off_the_health_bar(
    root: tk.Tk, make_app
) -> None:
    """Walked in English: after lesson 20 the health bar still marked its rates while
    lesson 03, picked next, watches the lag. The mark is a demo's: picking another lesson
    takes it off; that lesson's demo puts its own on."""
    from tkchat.ui.look.theme import WATCH_STYLE

    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None
    labels = (app.health.heartbeat, app.health.lag, app.health.rates)

    def marked() -> list[str]:
        return [str(label.cget("text")) for label in labels if label.cget("style") == WATCH_STYLE]

    panel.select("20-two-ways-to-join-the-loops")
    panel.setup_button.invoke()
    assert len(marked()) == 1
    panel.select("03-event-loop-gate")
    assert marked() == []
    panel.setup_button.invoke()
    assert len(marked()) == 1


def test_lesson_11s_flood_takes_no_more_than_the_context_the_meter_shows(
    root: tk.Tk, make_app
) -> None:
    """Walked at 1280×720: lesson 11's 30,000 tokens read "context 30,019 / 8,192 tokens"
    in the health bar. Set up, the meter shows the context of the backend the demo chose
    (a scripted one's holds its answer); the flood (here as fast as it goes) fits in it."""
    app = make_app(ScriptedBackend(rate=0))
    app.teaching.toggle_lessons()
    panel = app.teaching.lesson_panel
    assert panel is not None
    panel.select("11-backpressure")
    panel.setup_button.invoke()
    backend = app.controller.backend
    assert isinstance(backend, ScriptedBackend) and backend.tokens == 30_000
    meter = app.context_meter
    assert meter.n_ctx == backend.n_ctx and meter.used is None  # a fresh chat, before Send
    backend.rate = 0
    app.flow.send()
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the flood", timeout=120)
    assert meter.used is not None and 30_000 < meter.used <= meter.n_ctx == backend.n_ctx
    assert meter.dropped == 0 and f"/ {backend.n_ctx:,} tokens" in meter.full


def test_closed_dialogs_are_not_kept_alive_by_the_translator(root: tk.Tk) -> None:
    """Each opened dialog binds its labels and a language listener; once closed, they must
    go (they did not: 100 dialogs stayed referenced; then the last few, until the lists grew
    enough to be pruned: 4 or 5 of 40, by the order the tests ran in)."""
    import gc
    import weakref

    from tkchat.ui.base.translator import Translator
    from tkchat.ui.settings.dialog import ChatSettingsDialog

    translate = Translator("en")
    gone = []
    for _ in range(40):
        dialog = ChatSettingsDialog(
            root,
            translate=translate,
            system_prompt="",
            sampling=Sampling(),
            font_size=None,
            default_font_size=11,
            on_apply=lambda *_: None,
        )
        gone.append(weakref.ref(dialog))
        dialog.cancel()
        del dialog
    root.update()
    gc.collect()
    alive = sum(ref() is not None for ref in gone)
    assert alive == 0, f"{alive} of 40 closed dialogs are still referenced"
    translate.set_language("zh")  # and a language change after all that is clean


def test_headers_and_links_already_on_screen_follow_the_language(root: tk.Tk, make_app) -> None:
    fence = "```\nprint('hi')\n```"
    app = make_app(ScriptedBackend(rate=0, text=f"Here:\n\n{fence}\n"), language="en")
    app.flow.send("hello")
    pump_until(
        root,
        lambda: bool(app.flow.answering.finished) and not app.transcript.painter.busy,
        what="the rendered answer",
    )
    app.toggle_language()
    zh = STRINGS["zh"]
    shown = app.transcript.plain_text()
    for key in (
        "transcript.you",
        "transcript.assistant",
        "transcript.copy",
        "transcript.edit",
        "transcript.copy_code",
    ):
        assert zh[key] in shown, key
    for key in ("transcript.you", "transcript.assistant", "transcript.copy_code"):
        assert STRINGS["en"][key] not in shown, key
    assert "hello" in shown and "print('hi')" in shown  # content is not translated
    # the links still work: a click on the question's "编辑" edits that question, ...
    question = app.transcript.entries[0]
    text = app.transcript.text
    head = text.index(question.head_mark)
    link = text.search(zh["transcript.edit"], head, f"{head} lineend")
    assert link, "no edit link in the question's header"
    text.see(link)
    root.update()
    x, y, width, height = text.bbox(link)
    text.event_generate("<Button-1>", x=x + width // 2, y=y + height // 2)
    root.update()
    assert app.input.get("1.0", "end-1c") == "hello"
    # ... and the code copied is the right code
    start = app.transcript.text.tag_ranges("copy-code")[0]
    assert app.transcript.painter.code_at(str(start)) == "print('hi')"


def test_a_second_language_switch_while_the_first_relabels_leaves_no_stale_slice(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen on a busy machine: the first switch's relabelling ran over its budget and left
    its next slice waiting; the second switch relabelled everything at once and removed the
    mark that slice starts from, and the slice then raised ("bad text index")."""
    from tkchat.ui.transcript import header_links as transcript_module

    app = make_app(ScriptedBackend(rate=0, text="An answer."), language="en")
    app.flow.send("hello")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    monkeypatch.setattr(transcript_module, "RELABEL_BUDGET_MS", -1)  # every slice over budget
    app.toggle_language()
    assert app.transcript.scheduler.pending("relabel")  # the first switch is not done
    monkeypatch.setattr(transcript_module, "RELABEL_BUDGET_MS", 10_000)
    app.toggle_language()  # the second one is done at once
    root.update()  # (a stale slice would raise here)
    shown = app.transcript.plain_text()
    assert STRINGS["en"]["transcript.you"] in shown and STRINGS["zh"]["transcript.you"] not in shown
