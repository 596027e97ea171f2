"""The chat flow's logic without a window: Send, Stop, Edit, Regenerate, ◀ ▶, another chat,
the final event, the model's news.

The window is a double of the flow's own view Protocol (``tests/chat_flow_doubles.py``); the
model side is real (a scripted backend, the controller's worker thread, the consumer, the
16 ms pump), ticked by hand instead of by Tk. No display is needed. The same flows on a real
window are in test_app_gui.py, test_chat_controls.py and test_answer_versions.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.chat_flow_doubles import ChatRig, FakeSaved
from tkchat.consume.stream_consumer import TickResult
from tkchat.events import Done, GenerationStats, ModelFailed
from tkchat.generate.scripted import ScriptedBackend, TokenGate, scripted_tokens
from tkchat.ui.chats.flow import PAINT_LOOK_MS, PAINT_WAIT_LOOKS
from tkchat.ui.pump import TICK_MS
from tkchat.ui.transcript.transcript import AnswerView, UserView

SLOW = "slow " * 400  # an answer the test lets through a few tokens at a time (a TokenGate)


@pytest.fixture
def rigs() -> Iterator[list[ChatRig]]:
    made: list[ChatRig] = []
    yield made
    for rig in made:
        rig.close()


def rig_for(rigs: list[ChatRig], backend: ScriptedBackend, **kwargs: object) -> ChatRig:
    rig = ChatRig(backend, **kwargs)  # type: ignore[arg-type]
    rigs.append(rig)
    return rig


def ready(rigs: list[ChatRig], **kwargs: object) -> ChatRig:
    """A flow whose model has loaded, answering "Hello there." at once."""
    rig = rig_for(rigs, ScriptedBackend(rate=0, text="Hello there."), **kwargs)
    rig.load()
    return rig


def answered(rig: ChatRig, question: str) -> AnswerView:
    """Send ``question`` from the box and run the pump until its answer has ended."""
    finished = len(rig.flow.answering.finished)
    rig.view.input.draft = question
    assert rig.flow.send()
    rig.until(lambda: len(rig.flow.answering.finished) > finished, what="the answer")
    return rig.view.transcript.answers[-1]


def gated(rigs: list[ChatRig], **kwargs: object) -> ChatRig:
    """A flow whose model has loaded; its answer (:data:`SLOW`) streams only as far as the
    test lets it (:func:`streaming`), so it is still streaming whatever the machine's pace."""
    rig = rig_for(rigs, ScriptedBackend(gate=TokenGate(), text=SLOW), **kwargs)
    rig.load()
    return rig


def streaming(rig: ChatRig, question: str, tokens: int = 5) -> AnswerView:
    """Send ``question``, let ``tokens`` of its answer through the gate and run the pump
    until they are on screen; the answer then waits, mid-stream, at the gate."""
    gate = rig.backend.gate
    assert gate is not None
    assert rig.flow.send(question)
    answer = rig.view.transcript.answers[-1]
    gate.release(tokens)
    text = "".join(scripted_tokens(SLOW)[:tokens])
    rig.until(lambda: answer.text == text, what=f"{tokens} tokens on screen")
    return answer


# -- Send ------------------------------------------------------------------------------------


def test_enter_before_the_model_is_ready_sends_the_box_once_it_is(rigs: list[ChatRig]) -> None:
    """Reported (issue 22): Enter pressed while the model loaded was refused ("not ready
    yet"); the question now goes as soon as the model is ready."""
    rig = rig_for(rigs, ScriptedBackend(rate=0, text="Hi."))
    rig.view.input.draft = "a question typed early"
    assert not rig.flow.send()  # not yet
    assert rig.view.status.last == "app.send_when_ready"
    assert rig.view.input.draft == "a question typed early"  # nothing is lost meanwhile
    assert rig.view.transcript.entries == [] and not rig.controller.is_generating()
    assert not rig.flow.send("a text from elsewhere")  # refused, not queued: the box's only
    assert rig.view.status.last == "app.not_ready"
    rig.load()
    assert rig.view.enabled["send"] and rig.view.loaded  # the window was told, once
    rig.until(lambda: rig.flow.answering.finished, what="the question sent once ready")
    assert [entry.text for entry in rig.view.transcript.entries] == [
        "a question typed early",
        "Hi.",
    ]
    assert rig.view.input.draft == "" and rig.flow.queued is None


def test_a_question_queued_before_the_model_is_ready_waits_if_the_box_changed(
    rigs: list[ChatRig],
) -> None:
    rig = rig_for(rigs, ScriptedBackend(rate=0))
    rig.view.input.draft = "first thought"
    assert not rig.flow.send()
    rig.view.input.draft = "first thought, then more"  # typed on: not what Enter sent
    rig.load()
    rig.settle()
    assert rig.view.transcript.entries == []
    assert rig.view.input.draft == "first thought, then more"
    rig.view.input.draft = "queued, then the model fails"
    rig.flow.model_unloading()
    assert not rig.flow.send()
    rig.flow.on_tick(TickResult((), None, (ModelFailed("no such file: x.gguf"),), 0))
    assert rig.flow.queued is None and rig.view.input.draft == "queued, then the model fails"


def test_a_model_that_failed_to_load_refuses_send_with_its_reason_kept(
    rigs: list[ChatRig],
) -> None:
    rig = rig_for(rigs, ScriptedBackend(rate=0))
    rig.flow.on_tick(TickResult((), None, (ModelFailed("no such file: x.gguf"),), 0))
    assert rig.view.model_banner.text == "no such file: x.gguf"
    assert not rig.view.enabled["send"] and not rig.view.enabled["regenerate"]
    assert not rig.flow.send("hello")
    assert rig.view.status.last == "app.no_model"
    rig.load()  # another model loads: the banner goes, Send works again
    assert rig.view.model_banner.text is None and not rig.flow.model_failed
    assert rig.flow.send("hello")


def test_send_is_refused_while_a_saved_chat_is_still_put_on_screen_or_the_store_is_shut(
    rigs: list[ChatRig],
) -> None:
    saved = FakeSaved()
    rig = ready(rigs, saved=saved)
    saved.showing = True
    assert not rig.flow.send("too early")
    assert rig.view.status.last == "app.not_ready"
    saved.showing, saved.ready = False, False  # (a question could not be saved yet)
    assert not rig.flow.send("too early")
    saved.ready = True
    assert rig.flow.send("now")
    assert saved.archive.saved[:2] == ["question now", "answer started"]


def test_a_draft_the_counter_holds_back_is_not_sent_and_stays_in_the_box(
    rigs: list[ChatRig],
) -> None:
    rig = ready(rigs)
    rig.draft.fit = False  # too long for the context (the counter said why)
    rig.view.input.draft = "a very long draft"
    assert not rig.flow.send()
    assert rig.view.input.draft == "a very long draft" and rig.view.transcript.entries == []
    assert rig.flow.send("a question from elsewhere")  # not the box's: not counted


def test_send_while_an_answer_streams_leaves_it_streaming_and_the_draft_in_the_box(
    rigs: list[ChatRig],
) -> None:
    """Reported (issue 37): Enter while an answer streamed stopped it and sent the new
    question, without a word. Now the answer goes on, Send is greyed, the box keeps the
    draft and the status line says how to send it; once the answer has ended, it goes."""
    rig = gated(rigs)
    first = streaming(rig, "first")
    assert not rig.view.enabled["send"] and rig.view.enabled["stop"]
    rig.view.input.draft = "second"
    assert not rig.flow.send()
    assert not rig.flow.send("from elsewhere")  # no caller stops an answer by asking
    assert rig.view.status.last == "app.busy_answering"
    assert rig.view.input.draft == "second"  # untouched
    assert rig.flow.answering.answer is first and rig.controller.is_generating()
    assert [entry.text for entry in rig.view.transcript.entries] == ["first", first.text]
    rig.flow.stop()  # the way to end it (Esc, Stop)
    assert first.status == "stopped" and rig.view.enabled["send"]
    assert rig.flow.send()
    assert rig.view.input.draft == "" and rig.view.transcript.entries[2].text == "second"
    assert rig.controller.is_generating() and not rig.view.enabled["send"]


# -- Stop ------------------------------------------------------------------------------------


def test_stop_mid_answer_ends_it_marked_stopped_and_nothing_of_it_arrives_later(
    rigs: list[ChatRig],
) -> None:
    saved = FakeSaved()
    rig = gated(rigs, saved=saved)
    answer = streaming(rig, "tell me")
    worker = rig.controller.current
    assert worker is not None and rig.view.enabled["stop"]
    rig.flow.stop()
    shown = answer.text
    assert rig.flow.answering.answer is None and answer.status == "stopped"
    assert rig.view.status.last == "app.stopped" and not rig.view.enabled["stop"]
    assert rig.view.transcript.ended == [(answer, "stopped")]
    assert saved.archive.saved[-1] == "answer stopped"
    assert rig.session.chat[-1].content == shown  # the model's context has what was shown
    rig.backend.gate.release(100)  # had the worker not seen Stop, these would follow
    rig.until(lambda: not worker.is_alive(), what="the worker to leave")
    rig.until(lambda: rig.flow.answering.last_cancel_ms is not None, what="the cancel figure")
    rig.settle()  # its last events (and its "cancelled" done) are dropped
    assert answer.text == shown and rig.flow.answering.finished == []
    assert rig.view.enabled["regenerate"]  # a stopped answer can be asked for again


def test_escape_stops_an_answer_and_otherwise_cancels_an_edit(rigs: list[ChatRig]) -> None:
    rig = gated(rigs)
    answer = streaming(rig, "tell me")
    rig.flow.escape()
    assert answer.status == "stopped"
    rig.until(lambda: not rig.controller.is_generating(), what="the worker to leave")
    question = rig.view.transcript.entries[0]
    assert isinstance(question, UserView)
    rig.flow.edit(question)
    rig.flow.escape()
    assert rig.flow.editing is None and rig.view.status.last == "app.edit_cancelled"


# -- Edit and resend -----------------------------------------------------------------------


def test_edit_sets_the_draft_aside_and_gives_it_back_on_cancel(rigs: list[ChatRig]) -> None:
    rig = ready(rigs)
    answered(rig, "first question")
    question = rig.view.transcript.entries[0]
    assert isinstance(question, UserView)
    rig.view.input.draft = "my unsent draft"
    rig.flow.edit(question)
    assert rig.flow.editing is question and rig.view.input.draft == "first question"
    assert rig.view.status.last == "app.editing: {'number': 1}" and rig.view.focused == 1
    rig.flow.edit(question)  # a second Edit keeps what was set aside the first time
    rig.flow.cancel_edit()
    assert rig.flow.editing is None and rig.view.input.draft == "my unsent draft"
    assert rig.view.status.last == "app.edit_cancelled"
    rig.flow.cancel_edit()  # nothing to cancel: nothing said
    assert rig.view.status.last == "app.edit_cancelled" and len(rig.view.transcript.entries) == 2


def test_an_edit_sent_replaces_the_question_and_what_followed_and_gives_the_draft_back(
    rigs: list[ChatRig],
) -> None:
    rig = ready(rigs)
    answered(rig, "first question")
    answered(rig, "second question")
    second = rig.view.transcript.entries[2]
    assert isinstance(second, UserView)
    rig.view.input.draft = "my unsent draft"
    rig.flow.edit(second)
    rig.view.input.draft = "second, better"
    finished = len(rig.flow.answering.finished)
    assert rig.flow.send()
    rig.until(lambda: len(rig.flow.answering.finished) > finished, what="the new answer")
    entries = rig.view.transcript.entries
    assert [entry.text for entry in entries[::2]] == ["first question", "second, better"]
    edited = entries[2]
    assert isinstance(edited, UserView) and edited.versions == ["second question", "second, better"]
    assert rig.view.input.draft == "my unsent draft" and rig.flow.editing is None
    assert [m.content for m in rig.session.chat if m.role == "user"] == [
        "first question",
        "second, better",
    ]
    assert "rewound 2" in rig.context.calls


# -- Regenerate and versions -----------------------------------------------------------------


def test_regenerate_asks_again_and_keeps_the_earlier_answer_as_a_version(
    rigs: list[ChatRig],
) -> None:
    rig = ready(rigs)
    assert not rig.flow.regenerate()  # nothing to regenerate yet
    assert rig.view.status.last == "app.regenerate_none"
    first = answered(rig, "question")
    assert rig.view.enabled["regenerate"]
    finished = len(rig.flow.answering.finished)
    assert rig.flow.regenerate()
    again = rig.view.transcript.answers[-1]
    assert again is not first
    assert again.versions == [("Hello there.", "complete"), ("", "streaming")]
    rig.until(lambda: len(rig.flow.answering.finished) > finished, what="the new version")
    assert [entry.text for entry in rig.view.transcript.entries] == ["question", "Hello there."]
    assert [m.role for m in rig.session.chat] == ["user", "assistant"]  # replaced, not added
    assert rig.view.enabled["regenerate"]


def test_showing_another_version_of_a_question_stops_the_answer_after_it(
    rigs: list[ChatRig],
) -> None:
    rig = gated(rigs)
    answer = streaming(rig, "tell me")
    question = rig.view.transcript.entries[0]
    assert isinstance(question, UserView)
    assert not rig.flow.show_version(question, -1)  # it has no other version: nothing stops
    assert rig.flow.answering.answer is answer
    question.versions = ["earlier", "tell me"]
    question.shown = 1
    assert rig.flow.show_version(question, -1)
    assert answer.status == "stopped" and rig.versions.shown == [(question, -1)]
    assert "rewound 0" in rig.context.calls and "measure" in rig.context.calls


# -- the final event -------------------------------------------------------------------------


def test_the_final_event_ends_the_answer_exactly_once(rigs: list[ChatRig]) -> None:
    saved = FakeSaved()
    rig = ready(rigs, saved=saved)
    answer = answered(rig, "question")
    final = rig.flow.answering.finished[-1]
    assert isinstance(final, Done) and final.reason == "stop"
    assert answer.status == "complete" and rig.view.transcript.ended == [(answer, "complete")]
    assert saved.archive.saved == ["question question", "answer started", "answer complete"]
    assert rig.view.status.last.startswith("app.done")
    # The same final again (a pipeline that ended the answer itself, then the tick): the
    # answer is not ended a second time, nor saved again.
    rig.flow.answering.handle_final(final)
    assert rig.view.transcript.ended == [(answer, "complete")]
    assert saved.archive.saved[-1] == "answer complete" and len(saved.archive.saved) == 3
    assert rig.session.chat[-1].content == "Hello there." and len(rig.session.chat) == 2
    # ... and one that arrives through the channel is dropped by the consumer.
    handled = len(rig.flow.answering.finished)
    rig.controller.channel.put(Done(final.gen, final.seq + 1, "stop", GenerationStats()))
    rig.settle()
    assert len(rig.flow.answering.finished) == handled
    assert rig.view.transcript.ended == [(answer, "complete")]


def test_an_error_ends_the_answer_with_its_message(rigs: list[ChatRig]) -> None:
    rig = rig_for(rigs, ScriptedBackend(rate=0, fail_at=3))
    rig.load()
    rig.flow.send("crash, please")
    rig.until(lambda: rig.flow.answering.finished, what="the error")
    answer = rig.view.transcript.answers[-1]
    assert answer.status == "error" and rig.flow.answering.answer is None
    assert "crashed at token 3" in (rig.flow.answering.last_error or "")
    assert rig.view.status.last.startswith("app.error")


def test_a_failing_tick_ends_the_answer_and_stops_its_worker(rigs: list[ChatRig]) -> None:
    rig = gated(rigs)
    answer = streaming(rig, "tell me")
    rig.flow.answering.failed(RuntimeError("a bug in a tick"))
    assert answer.status == "error" and rig.flow.answering.answer is None
    assert "RuntimeError: a bug in a tick" in rig.view.status.last
    rig.until(lambda: not rig.controller.is_generating(), what="the worker to stop")


# -- another chat ----------------------------------------------------------------------------


def test_a_new_chat_never_receives_the_old_generations_text(rigs: list[ChatRig]) -> None:
    rig = gated(rigs)
    old = streaming(rig, "in the old chat")
    rig.flow.new_chat()
    assert rig.view.transcript.entries == [] and rig.session.chat == []
    assert old.status == "stopped" and "reset" in rig.context.calls
    kept = old.text
    rig.backend.gate.release(100)  # had the old worker not seen Stop, these would follow
    rig.settle()  # the old worker's last events arrive, and are dropped
    assert rig.view.transcript.entries == [] and rig.flow.answering.finished == []
    rig.backend.text, rig.backend.gate = "fresh", None
    new = answered(rig, "in the new chat")
    assert new.text == "fresh" and old.text == kept
    assert [entry.text for entry in rig.view.transcript.entries] == ["in the new chat", "fresh"]


def test_opening_a_saved_chat_clears_this_one_and_ends_an_edit(rigs: list[ChatRig]) -> None:
    saved = FakeSaved()
    rig = ready(rigs, saved=saved)
    answered(rig, "question")
    question = rig.view.transcript.entries[0]
    assert isinstance(question, UserView)
    rig.view.input.draft = "draft"
    rig.flow.edit(question)
    rig.flow.clear_chat()  # what opening a saved chat does first
    rig.flow.open_conversation(7)
    assert saved.opened == [7] and rig.view.transcript.entries == []
    assert rig.flow.editing is None and rig.view.input.draft == "draft"
    assert rig.draft.waiting is None


def test_a_chat_put_on_screen_is_counted_once_its_painting_is_over(rigs: list[ChatRig]) -> None:
    """The context count of a chat just put on screen waits for the painting near the view
    (the count's thread would hold the GIL against the painter's Tcl calls), and is made as
    soon as that is over; a painting that never ends delays it at most PAINT_WAIT_LOOKS
    looks. Counted on the scheduler's own clock."""
    rig = ready(rigs)
    rig.settle()
    context = rig.context
    for painting_looks in (3, None):
        context.calls.clear()
        rig.view.transcript.painting = True
        rig.flow.conversation_shown()
        looks = 0
        while "measure" not in context.calls:
            assert looks < PAINT_WAIT_LOOKS, "counted at last, painting or not"
            looks += 1
            if looks == painting_looks:
                rig.view.transcript.painting = False
            rig.scheduler.now_ms += PAINT_LOOK_MS - TICK_MS
            rig.scheduler.run_due()
        # counted at the first look that found the painting over, or at the last look
        assert looks == (painting_looks or PAINT_WAIT_LOOKS)
        assert context.calls.count("measure") == 1


# -- autosend --------------------------------------------------------------------------------


def test_autosend_waits_for_the_model_and_the_history_then_sends_once(
    rigs: list[ChatRig],
) -> None:
    saved = FakeSaved(ready=False)
    rig = rig_for(
        rigs, ScriptedBackend(rate=0, text="Hi."), saved=saved, autosend="from the command line"
    )
    rig.load()
    rig.settle()
    assert rig.view.transcript.entries == []  # the history is not open yet
    saved.ready = True
    rig.flow.history_ready([])
    rig.until(lambda: rig.flow.answering.finished, what="the question sent by itself")
    assert [entry.text for entry in rig.view.transcript.entries] == ["from the command line", "Hi."]
    assert rig.flow.autosend is None
    rig.flow.conversation_shown()  # later news does not send it again
    rig.settle()
    assert len(rig.view.transcript.entries) == 2


def test_unloading_the_model_stops_the_answer_and_disables_sending(rigs: list[ChatRig]) -> None:
    rig = gated(rigs)
    answer = streaming(rig, "tell me")
    rig.flow.model_unloading()
    assert answer.status == "stopped" and not rig.flow.model_ready
    assert not rig.view.enabled["send"] and not rig.view.enabled["regenerate"]
    assert not rig.flow.send("now?")
    assert rig.view.status.last == "app.not_ready"


# -- each answer's figures -------------------------------------------------------------------


def test_each_answer_ends_with_its_figures_saved_and_drawn(rigs: list[ChatRig]) -> None:
    saved = FakeSaved()
    rig = rig_for(rigs, ScriptedBackend(rate=0, text="Hello there."), saved=saved)
    rig.load()
    answer = answered(rig, "hi")
    final = rig.flow.answering.finished[-1]
    assert isinstance(final, Done)
    figures = saved.archive.figures[-1]
    assert figures is not None and figures.ended == "stop"
    assert figures.tokens == final.stats.tokens and figures.tokens_per_s is not None
    assert answer.figures == {0: figures}
    assert rig.view.transcript.figured[-1] == (answer, figures)  # drawn under it
    rig.backend.text, rig.backend.gate = SLOW, TokenGate()
    stopped = streaming(rig, "and a long one")
    rig.flow.stop()
    figures = saved.archive.figures[-1]
    assert figures is not None and figures.ended == "stopped" and figures.tokens >= 3
    assert stopped.figures == {0: figures}
    # A regenerate keeps the earlier version's figures with it.
    rig.backend.gate = None
    rig.backend.text = "Again."
    assert rig.flow.regenerate()
    rig.until(lambda: rig.flow.answering.answer is None, what="the new version")
    last = rig.view.transcript.answers[-1]
    assert last.figures[0] == figures and last.figures[1].ended == "stop"


def test_the_status_line_says_what_a_kept_cache_spared(rigs: list[ChatRig]) -> None:
    """An answer whose prompt came partly from a cache kept from earlier (another chat, a
    model switched away and back: tests/test_kept_states.py) says so, with the memory kept."""
    rig = ready(rigs)
    answered(rig, "question")
    assert "app.done.kept" not in rig.view.status.last
    kept = GenerationStats(tokens=3, prompt_tokens=3500, prompt_reused=3412, prompt_restored=3412)
    final = Done(rig.controller.gen, 4, "stop", replace(kept, kept_bytes=82_400_000))
    rig.flow.answering.handle_final(final)
    assert "app.done.kept {'tokens': '3,412', 'mb': '82'}" in rig.view.status.last
