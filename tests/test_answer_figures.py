"""Under each answer, its figures as LM Studio shows them — tokens, tokens/s, time to the
first token, how it ended — kept with it: saved, shown again after a restart, one line per
version of a regenerated answer, back under a branch's answers when ◀ ▶ show the branch again;
in both languages, in quiet type. A real window on Xvfb."""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Sampling
from tkchat.events import Done, Error
from tkchat.generate.scripted import ScriptedBackend, TokenGate
from tkchat.store.settings import load_settings
from tkchat.ui.look.palette import DARK, LIGHT
from tkchat.ui.transcript.answer_figures import FIGURES_TAG
from tkchat.ui.transcript.transcript import AnswerView

pytestmark = pytest.mark.gui

SLOW = "slow " * 400  # an answer the test lets through a few tokens at a time (a TokenGate)


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(folder))
    return folder


def line_of(app, view: AnswerView) -> str | None:
    """The figures line under ``view`` as shown (None: none)."""
    text = app.transcript.text
    found = text.tag_nextrange(FIGURES_TAG, view.notes_mark, view.tail_mark)
    return " ".join(text.get(*found).replace("\u00a0", " ").split()) if found else None


def answers(app) -> list[AnswerView]:
    return [entry for entry in app.transcript.entries if isinstance(entry, AnswerView)]


def ask(root: tk.Misc, app, question: str) -> Done | Error:
    count = len(app.flow.answering.finished)
    assert app.flow.send(question), app.status.get()
    pump_until(
        root, lambda: len(app.flow.answering.finished) > count, timeout=30, what="the answer"
    )
    pump_until(root, lambda: not app.transcript.painter.busy, timeout=30, what="the painting")
    return app.flow.answering.finished[-1]


def reopened(fresh_app, backend: ScriptedBackend, **options: object):
    """The window after a restart, its last chat back on screen."""
    again = fresh_app(
        backend, history=True, persist_settings=True, app_settings=load_settings()[0], **options
    )
    window = again.root
    pump_until(window, lambda: again.conversations.ready and bool(again.transcript.entries))
    pump_until(window, lambda: not again.flow.showing_conversation, what="the chat reopened")
    pump_until(window, lambda: not again.transcript.painter.busy, what="the painting")
    return again


FIGURES = re.compile(
    r"^(?P<tokens>[\d,]+) tokens · (?P<speed>[\d,.]+) tokens/s · "
    r"(?P<ttft>[\d.]+) s to first token · (?P<ended>.+)$"
)


def test_every_answer_shows_its_figures_and_they_survive_a_restart(
    root: tk.Tk, make_app, fresh_app
) -> None:
    backend = ScriptedBackend(rate=0, text="A short answer of a few words.")
    app = make_app(backend, history=True, persist_settings=True)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    shown = []
    for question in ("first?", "second?"):
        final = ask(root, app, question)
        assert isinstance(final, Done)
        line = line_of(app, answers(app)[-1])
        assert line is not None, app.transcript.plain_text()
        found = FIGURES.match(line)
        assert found, line
        assert int(found["tokens"].replace(",", "")) == final.stats.tokens > 0
        assert found["ended"] == "finished"
        assert float(found["speed"].replace(",", "")) == pytest.approx(
            final.stats.tokens_per_s, abs=0.05
        )
        shown.append(line)
    assert app.transcript.answers[-1].text == "A short answer of a few words."  # (only shown)
    app.close()

    again = reopened(fresh_app, ScriptedBackend(rate=0))
    assert [line_of(again, view) for view in answers(again)] == shown


def test_each_version_of_an_answer_keeps_its_own_figures(root: tk.Tk, make_app, fresh_app) -> None:
    backend = ScriptedBackend(rate=0, text="one two three")
    app = make_app(backend, history=True, persist_settings=True)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    first = ask(root, app, "count for me")
    backend.text = "one two three four five six seven eight"
    count = len(app.flow.answering.finished)
    assert app.flow.regenerate()
    pump_until(root, lambda: len(app.flow.answering.finished) > count, what="the second version")
    pump_until(root, lambda: not app.transcript.painter.busy, what="the painting")
    second = app.flow.answering.finished[-1]
    assert isinstance(first, Done) and isinstance(second, Done)
    assert first.stats.tokens != second.stats.tokens
    answer = answers(app)[-1]

    def tokens_shown(view: AnswerView) -> int:
        line = line_of(app, view) or ""
        return int(line.split(" ", 1)[0].replace(",", ""))

    assert tokens_shown(answer) == second.stats.tokens
    assert app.flow.show_version(answer, -1)
    pump_until(root, lambda: not app.transcript.painter.busy, what="the painting")
    assert tokens_shown(answer) == first.stats.tokens  # version 1's own figures
    assert app.transcript.plain_text().count("tokens/s") == 1  # one line, not two
    app.close()

    again = reopened(fresh_app, ScriptedBackend(rate=0))
    answer = answers(again)[-1]
    app = again
    assert answer.shown == 0 and tokens_shown(answer) == first.stats.tokens
    assert again.flow.show_version(answer, +1)
    pump_until(again.root, lambda: not again.transcript.painter.busy, what="the painting")
    assert tokens_shown(answer) == second.stats.tokens


def test_the_figures_say_how_each_answer_ended(root: tk.Tk, make_app) -> None:
    """Finished, cut at the length limit, stopped by the user, ended by an error."""
    backend = ScriptedBackend(rate=0, text="one two three four five six")
    app = make_app(backend, history=True, sampling=Sampling(max_tokens=3))
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    final = ask(root, app, "a long one, please")
    assert isinstance(final, Done) and final.reason == "length"
    assert (line_of(app, answers(app)[-1]) or "").endswith("stopped at the length limit")

    app.session.sampling = Sampling()
    backend.text, backend.gate = SLOW, TokenGate()  # 3 tokens, then it waits at the gate
    assert app.flow.send("one to stop")
    answer = answers(app)[-1]
    backend.gate.release(3)
    pump_until(root, lambda: answer.text.count("slow") == 3, what="some of the answer")
    app.flow.stop()
    pump_until(
        root,
        lambda: (line_of(app, answer) or "").endswith("stopped by you"),
        what="the stopped answer's figures",
    )
    line = line_of(app, answer) or ""
    tokens = int(line.split(" ", 1)[0])
    assert tokens >= 3 and "s to first token" in line  # what the worker had counted

    backend.text, backend.gate, backend.fail_at = "one two three four", None, 2
    final = ask(root, app, "one that fails")
    assert isinstance(final, Error)
    assert (line_of(app, answers(app)[-1]) or "").endswith("ended with an error")
    # And each was saved as it ended.
    archive = app.archive
    assert archive is not None and archive.writer is not None and archive.store is not None
    assert archive.writer.flush(timeout=10)
    kept = archive.store.figures(archive.conversation_id)
    assert sorted(figures.ended for figures in kept.values()) == ["error", "length", "stopped"]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_figures_are_quiet_and_in_the_windows_language(
    root: tk.Tk, make_app, theme: str
) -> None:
    app = make_app(ScriptedBackend(rate=0, text="A short answer."), language="zh", theme=theme)
    assert isinstance(ask(root, app, "问题"), Done)
    answer = answers(app)[-1]
    line = line_of(app, answer) or ""
    assert re.fullmatch(
        r"\d+ 个 token · [\d,.]+ token/秒 · 首个 token 用时 [\d.]+ 秒 · 已答完", line
    )
    app.toggle_language()  # the line follows the language, in place
    assert FIGURES.match(line_of(app, answer) or ""), line_of(app, answer)
    text = app.transcript.text
    palette = DARK if theme == "dark" else LIGHT
    assert text.tag_cget(FIGURES_TAG, "foreground") == palette.muted
    small = tkfont.Font(root=root, font=text.tag_cget(FIGURES_TAG, "font")).actual("size")
    assert small < app.transcript.body_font.actual("size")
    app.text_size.change(+2)  # it follows the text size (smaller than the body still)
    bigger = tkfont.Font(root=root, font=text.tag_cget(FIGURES_TAG, "font")).actual("size")
    assert small < bigger < app.transcript.body_font.actual("size")


def test_a_branch_flipped_back_shows_its_answers_figures_again(
    root: tk.Tk, make_app, fresh_app
) -> None:
    """An edited question sent puts its branch aside; ◀ on the question brings the branch
    back with the figures under its answers: in this window, and from the store after a
    restart. Each was saved with the model and the system prompt it was made with."""
    backend = ScriptedBackend(rate=0, text="one two three")
    app = make_app(backend, history=True, persist_settings=True)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    ask(root, app, "first?")
    backend.text = "four five six seven eight"
    ask(root, app, "second?")
    before = [line_of(app, view) for view in answers(app)]
    assert None not in before and before[0] != before[1], before

    def flipped(window, step: int) -> list[str | None]:
        assert window.flow.show_version(window.transcript.entries[0], step)
        pump_until(window.root, lambda: not window.flow.showing_conversation, what="the branch")
        pump_until(window.root, lambda: not window.transcript.painter.busy, what="the painting")
        return [line_of(window, view) for view in answers(window)]

    app.flow.edit(app.transcript.entries[0])
    app.input.set_draft("first, again?")
    backend.text = "nine"
    count = len(app.flow.answering.finished)
    assert app.flow.send()
    pump_until(root, lambda: len(app.flow.answering.finished) > count, what="the new answer")
    pump_until(root, lambda: not app.transcript.painter.busy, what="the painting")
    after = [line_of(app, view) for view in answers(app)]
    assert len(after) == 1 and after[0] is not None and after[0] not in before
    assert flipped(app, -1) == before  # ◀: the old branch, each answer's figures under it
    assert flipped(app, +1) == after
    assert flipped(app, -1) == before
    model, prompt = backend.name, app.session.system_prompt
    app.close()

    again = reopened(fresh_app, ScriptedBackend(rate=0))
    assert [line_of(again, view) for view in answers(again)] == before  # from the store
    assert flipped(again, +1) == after  # the other branch, read from the store
    assert flipped(again, -1) == before
    archive = again.archive
    assert archive is not None and archive.store is not None and archive.writer is not None
    assert archive.writer.flush(timeout=10)
    kept = archive.store.figures(archive.conversation_id).values()
    assert len(kept) == 2 and {(f.model, f.system_prompt) for f in kept} == {(model, prompt)}
