"""The chat flow: what Send, Stop, Edit, Regenerate, ◀ ▶ and a chat switch do.

Main thread only. The window (:mod:`tkchat.ui.window.chat_window`) builds the widgets and
wires them; :class:`ChatFlow` decides what happens to the conversation and tells the window
what to show through :class:`~tkchat.ui.chats.chat_view.ChatView`, a Protocol of the few
things it needs. The answer on its way is :class:`~tkchat.ui.chats.answering.Answering`'s.

Nothing here touches a widget directly, so a test can drive the whole flow with a double
of the view and a scripted backend, without a Tk window (``tests/test_chat_flow.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tkchat.consume.stream_consumer import TickResult
from tkchat.events import ModelFailed, ModelReady, Offload
from tkchat.generate.remote import RemoteBackend
from tkchat.limits import cut
from tkchat.store import Conversation
from tkchat.ui.chats.answer_versions import versions_after_regenerate
from tkchat.ui.chats.answering import Answering
from tkchat.ui.chats.chat_view import ChatView, FlowParts, Scheduler
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.transcript.transcript import AnswerView, UserView

# A chat put on screen is counted once its painting near the view is over: looked for this
# often, for at most this many looks (3 s), after which it is counted anyway.
PAINT_LOOK_MS = 30
PAINT_WAIT_LOOKS = 100


class ChatFlow:
    """One window's conversation. ``editing``: the past question being edited, if any;
    ``set_aside``: what the box held when that edit began. ``autosend``: a question sent
    once the model (and the history, if kept) is ready (``--prompt``). Main thread only."""

    def __init__(
        self,
        view: ChatView,
        parts: FlowParts,
        *,
        scheduler: Scheduler,
        translate: Callable[..., str],
        pipelines: Callable[[str], Pipeline],
        pipeline: Pipeline,
        autosend: str | None = None,
    ) -> None:
        self.view = view
        self.controller = parts.controller
        self.session = parts.session
        self.versions = parts.versions
        self.context = parts.context
        self.draft = parts.draft
        self.saved = parts.saved
        self.scheduler = scheduler
        self.t = translate
        # Whether a question may be asked at all (False: no model, or one being switched);
        # Send is also greyed while an answer streams (:meth:`update_actions`).
        self.send_allowed = True
        self.answering = Answering(
            view,
            parts,
            scheduler=scheduler,
            translate=translate,
            pipelines=pipelines,
            pipeline=pipeline,
            on_change=self.update_actions,
        )
        self.editing: UserView | None = None
        self.set_aside = ""
        self.model_ready = False
        self.model_failed = False  # the last load failed: nothing can be sent until another
        self.autosend = autosend
        # The box's text, sent with Enter before the window was ready (the model loading, a
        # chat being put on screen): it is sent once it is, if the box still holds it.
        self.queued: str | None = None
        self.versions.on_shown = self._branch_shown

    # -- sending -------------------------------------------------------------------------------

    def send(self, text: str | None = None) -> bool:
        """Send the input box's text (or ``text``). Returns whether a generation started.
        While a past question is being edited, the box's text replaces it and everything
        after it. Never while an answer streams: Enter does not stop it (:meth:`_busy`)."""
        prompt = (self.view.input.draft if text is None else text).strip()
        self.draft.waiting = None  # this send lets go of a draft that waited for its count
        if not prompt or self._busy() or not self._can_generate(prompt if text is None else None):
            return False
        if text is None and not self.draft.fits(prompt):
            return False  # said why in the status line; the box keeps the text
        if text is None:
            self.view.input.clear()
            if self.editing is not None:
                edited, self.editing = self.editing, None
                self._resend(edited, prompt)
                self._take_back_set_aside()
                return self.answering.start(self.session.request())
        self.editing = None
        self.view.transcript.add_user(prompt, follow=True)  # in sight, even if scrolled up
        self.session.ask(prompt)
        if self.saved is not None:
            self.saved.archive.question(
                prompt,
                system_prompt=self.session.system_prompt,
                settings_from=self.session.sampling,
            )
        return self.answering.start(self.session.request())

    def _busy(self) -> bool:
        """Whether an answer is streaming: then a question waits in the box, untouched, and
        the status line says how to send it. (Enter used to stop the answer and send at once;
        users of GPT4All or LM Studio, whose Send waits, found their answers cut short by a
        question typed ahead. Stop and Esc are the ways to end an answer.)"""
        if self.answering.answer is None:
            return False
        self.view.status.say("app.busy_answering")
        return True

    def _can_generate(self, draft: str | None = None) -> bool:
        """Whether an answer can start now; if not, the status line says why. ``draft``: the
        box's text, sent with Enter: if the window is only not ready YET (the model loading,
        the history opening, a chat being put on screen), it is sent once it is
        (:meth:`_send_queued`) rather than refused."""
        if self._reconnect():
            if draft is not None:
                self.queued = draft
            self.view.status.say("app.not_ready" if draft is None else "app.send_when_ready")
            return False
        if self.model_failed and not self.controller.loading:
            self.view.status.say("app.no_model")  # the box keeps the text: nothing is lost
            return False
        if not self.model_ready or self.showing_conversation or not self._history_open():
            # (a question sent before the history is open could not be saved)
            if draft is not None:
                self.queued = draft
            self.view.status.say("app.not_ready" if draft is None else "app.send_when_ready")
            return False
        self.queued = None
        return True

    def _reconnect(self) -> bool:
        """A server the window could not reach, or gave up connecting to (Stop, Esc): Send
        connects again, rather than leaving a window that can never send. Whether it does
        (a local model that failed to load stays failed: its file will not change)."""
        remote = isinstance(self.controller.backend, RemoteBackend)
        if not remote or self.model_ready or self.controller.loading:
            return False
        self.model_failed = False
        self.view.model_banner.hide()
        self.controller.load_async()
        self.model_loading()
        return True

    def _history_open(self) -> bool:
        return self.saved is None or self.saved.ready

    def stop(self) -> None:
        """The user's Stop (the button, the menu, Esc): the answer streaming (if any) ends
        here, marked stopped (:meth:`Answering.stop`); while the window connects to a server,
        it gives up connecting (the next Send connects again: :meth:`_reconnect`). The flow's
        own stops (another chat shown, a regenerate, an edit) stop the answer only: opening
        a saved chat while the server connects must not give the connection up."""
        self.answering.stop()
        if isinstance(self.controller.backend, RemoteBackend) and self.controller.cancel_load():
            self.view.enable("stop", False)  # connecting to a server, given up

    def escape(self) -> None:
        """Esc stops an answer; with none running it cancels an edit."""
        if self.controller.is_generating():
            self.stop()
        else:
            self.cancel_edit()

    # -- regenerate, edit and resend -------------------------------------------------------------

    def regenerate(self) -> bool:
        """Ask again for the last answer (Ctrl+R): the new one becomes its next version, on
        screen and on disk; the earlier ones stay a click away (◀ ▶)."""
        if not self._can_generate():
            return False
        # an answer still streaming or ending ends now: its version is kept so
        self.answering.stop()
        entries = self.view.transcript.entries
        last = entries[-1] if entries else None
        if not isinstance(last, AnswerView):
            self.view.status.say("app.regenerate_none")
            return False
        self._end_edit()
        versions = versions_after_regenerate(last)
        self._rewind_to(last)  # the saved answer takes the new version
        request = self.session.regenerate_request(len(versions) - 1)
        return self.answering.start(request, versions, dict(last.figures))

    def show_version(self, view: UserView | AnswerView, step: int) -> bool:
        """A message's ◀ / ▶: the chat goes on from that version of it (a question's: with
        its branch, so an answer streaming after it stops first)."""
        if isinstance(view, UserView):
            if self.showing_conversation or not self.versions.can_show(view, step):
                return False
            self.answering.stop()
            self.context.rewound(self.view.transcript.position(view))
        if not self.versions.show(view, step):
            return False
        if self.editing is not None and self.editing not in self.view.transcript.entries:
            self.cancel_edit()  # the question being edited went with the branch
        elif self.model_ready and not self.controller.is_generating():
            # "Done — 52 tokens" was about the version just put away
            self.view.status.say("app.ready_again", name=self.controller.backend.name)
        self.update_actions()
        self.measure_context()
        self.draft.refresh()  # the conversation changed: the same draft may fit differently
        return True

    def step_version(self, step: int) -> bool:
        """Alt+← (``step`` -1) or Alt+→ (+1): the previous or next version of the latest
        message on screen that has several (the answer regenerated, the question edited),
        as its ◀ or ▶ would."""
        for entry in reversed(self.view.transcript.entries):
            if len(entry.versions) > 1:
                return self.show_version(entry, step)
        self.view.status.say("app.no_versions")
        return False

    def _branch_shown(self) -> None:
        """A question's other branch is all on screen: Regenerate (greyed while it was put
        there, as Ctrl+R refuses then) replaces its last answer; a question sent meanwhile
        goes now."""
        self.update_actions()
        self._maybe_autosend()

    def edit(self, view: UserView) -> None:
        """Put a past question in the box; sending it replaces it and all that follows
        (which stay as the question's earlier version: :meth:`_resend`). What was typed in
        the box is set aside, and comes back when the edit is sent or cancelled."""
        if self.showing_conversation:
            return
        if self.editing is None:
            self.set_aside = self.view.input.draft
        self.editing = view
        self.view.input.set_draft(view.text)
        self.view.focus_input()
        self.view.status.say("app.editing", number=self.view.transcript.position(view) + 1)

    def _resend(self, view: UserView, prompt: str) -> None:
        """Send an edited question: it becomes the question's next version, in place of it
        and all that followed, which stay a click away (◀ on the question)."""
        self.answering.stop()  # an answer still ending ends now: the branch keeps it as it ended
        versions, branches = self.versions.resent(view, prompt)
        index = self.view.transcript.position(view)
        self._rewind_to(view)
        question = self.view.transcript.add_user(prompt, versions, branches, follow=True)
        self.session.ask(prompt)
        if self.saved is not None:
            question.saved_as = self.saved.archive.question(
                prompt,
                system_prompt=self.session.system_prompt,
                settings_from=self.session.sampling,
                edited=index,
            )

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self._end_edit()
            self.view.status.say("app.edit_cancelled")

    def _end_edit(self) -> None:
        """No question is being edited any more (Esc, Regenerate, another chat)."""
        if self.editing is not None:
            self.editing = None
            self._take_back_set_aside()

    def _take_back_set_aside(self) -> None:
        """The box gets back what was typed in it before an edit began (nothing is lost)."""
        self.view.input.set_draft(self.set_aside)
        self.set_aside = ""

    def _rewind_to(self, view: UserView | AnswerView) -> None:
        """Take ``view`` and everything after it off the screen and out of the model's
        context (the saved conversation keeps them as versions: see the callers)."""
        self.answering.stop()
        keep = self.view.transcript.position(view)
        self.view.transcript.remove_from(view)
        self.context.rewound(keep)
        self.session.rewind(keep)
        self.update_actions()

    def update_actions(self) -> None:
        """Regenerate needs an answer to replace, and a model to answer; not while a chat
        or a branch is still being put on screen (Ctrl+R refuses then: the two agree). Send
        needs a model, and waits while an answer streams (Enter then says why: :meth:`_busy`)."""
        entries = self.view.transcript.entries
        last_is_answer = bool(entries) and isinstance(entries[-1], AnswerView)
        possible = self.model_ready and last_is_answer and not self.showing_conversation
        self.view.enable("regenerate", possible)
        self.view.enable("send", self.send_allowed and self.answering.answer is None)

    def measure_context(self) -> None:
        """The meter's figure and the draft's, for the conversation as it stands now (also
        after a model has loaded, or a saved chat is back on screen)."""
        if self.model_ready:
            self.context.measure(self.session.request())
            self.draft.refresh()

    # -- new chat, saved conversations -----------------------------------------------------------

    def new_chat(self) -> None:
        """Start over (Ctrl+N): stop any answer, clear the transcript and the model's context.
        The new conversation starts with the default system prompt and sampling."""
        self.clear_chat()
        self.session.start_new()
        self.update_actions()
        if self.saved is not None:
            self.saved.forget_current()

    def clear_chat(self) -> None:
        """Before another conversation: nothing running, nothing on screen, nothing of a saved
        conversation still on its way to the screen, nothing said about the previous one."""
        self.answering.stop()
        if self.model_ready:  # "Done — 512 tokens" was about the chat that is going away
            self.view.status.say("app.ready_again", name=self.controller.backend.name)
        if self.saved is not None:
            self.saved.stop_showing()
        self._end_edit()
        self.view.transcript.clear()
        self.context.reset(self.controller.backend.n_ctx if self.model_ready else None)
        self.draft.waiting = None  # it was for the chat that is going away
        self.draft.refresh()

    def open_conversation(self, conversation_id: int) -> None:
        if self.saved is not None:
            self.saved.show(conversation_id)

    def show_earlier(self) -> None:
        """The line above a long chat's first message on screen was clicked: more of its
        start is shown. Not while an answer streams or a question is being edited (the
        chat is written again, and those are part of it): the status line says so."""
        busy = self.editing is not None or self.controller.is_generating()
        if self.saved is None or busy or not self.saved.show_earlier():
            self.view.status.say("app.earlier_later")

    @property
    def showing_conversation(self) -> bool:
        """Whether a saved conversation (or a question's other branch) is still being put
        on screen."""
        showing = self.saved is not None and self.saved.showing
        return showing or self.versions.showing

    def history_ready(self, conversations: list[Conversation]) -> None:
        """The store is open: reopen the latest conversation, unless one has begun or a
        ``--prompt`` is waiting (a question from the command line starts its own chat, with
        the command line's sampling)."""
        if conversations and not self.view.transcript.answers and not self.autosend:
            self.open_conversation(conversations[0].id)
        self._maybe_autosend()

    def conversation_shown(self) -> None:
        self.update_actions()
        self._measure_once_painted()
        self._maybe_autosend()

    def _measure_once_painted(self, looks: int = 0) -> None:
        """A chat just put on screen is counted once the answers near the view are painted
        (or after :data:`PAINT_WAIT_LOOKS` looks). The count runs on a thread of its own, but
        holds the GIL for much of a long chat (the scripted backend's split, a chat
        template's Python), and each of the painter's many Tcl calls then waits for the GIL
        to come back: the opening of a 1,000-message chat, in the long-chat bench (scripted,
        quiet, 2026-12-05, three pairs), had its worst frame at 27, 32 and 12 ms counted at
        once, 19, 18 and 14 ms counted after."""
        if self.view.transcript.painting and looks < PAINT_WAIT_LOOKS:
            self.scheduler.once(
                "context-after-paint", PAINT_LOOK_MS, lambda: self._measure_once_painted(looks + 1)
            )
        else:
            self.measure_context()

    def _maybe_autosend(self) -> None:
        """Send ``--prompt`` once the model (and the history, if kept) is ready; and the
        box's text sent before it was (:attr:`queued`)."""
        if self.queued is not None:
            self.scheduler.once("send-queued", 0, self._send_queued)
        if not self.autosend or not self.model_ready or self.showing_conversation:
            return
        if not self._history_open():
            return
        prompt, self.autosend = self.autosend, None
        # after this callback, so a blocking demo does not run inside it
        self.scheduler.once("autosend", 50, lambda: self.send(prompt))

    def _send_queued(self) -> None:
        """After the callback that made the window ready (a blocking demo must not run
        inside it): the queued text, if the box still holds it (typed on since, it waits
        for the next Enter); still not ready, it stays queued."""
        if self.queued is not None and self.queued == self.view.input.draft.strip():
            self.send()

    # -- events from the pump ------------------------------------------------------------------

    def on_tick(self, tick: TickResult) -> None:
        """One 16 ms tick's news: the model's, then the answer's text, then its end."""
        self.view.progress.follow(tick)
        for event in tick.app_events:
            if isinstance(event, ModelReady):
                self._model_ready(event)
            elif isinstance(event, ModelFailed):
                self._model_failed(event)
        self.answering.grow(tick.chunks)
        if tick.final is not None:
            self.answering.handle_final(tick.final)

    def _model_ready(self, event: ModelReady) -> None:
        if not self.controller.loaded:
            return  # a load that ended as another model was chosen: that one's news decides
        if self.answering.answer is None:
            self.view.enable("stop", False)  # (enabled while connecting)
        self.model_ready = True
        self.model_failed = False
        self.view.model_banner.hide()
        self.send_allowed = True
        self.update_actions()
        self.view.status.show(lambda: self._ready_text(event))
        self.view.model_loaded(event)
        self.measure_context()
        self._maybe_autosend()

    def _ready_text(self, event: ModelReady) -> str:
        """The status line of a model that loaded: what context was given, of what could be,
        and where the model runs (a local one): "Ready — name, loaded in 0.1 s, context 4,096
        of 8,192 trained · CPU only: …"."""
        seconds, n_ctx = f"{event.load_s:.1f}", f"{event.n_ctx:,}"
        if event.n_ctx_train:
            trained = f"{event.n_ctx_train:,}"
            text = self.t(
                "app.ready.trained", name=event.name, seconds=seconds, n_ctx=n_ctx, trained=trained
            )
        else:
            text = self.t("app.ready", name=event.name, seconds=seconds, n_ctx=n_ctx)
        if event.offload is None:
            return text
        return f"{text} · {offload_text(event.offload, self.t)}"

    def model_loading(self) -> None:
        """The window's model is loading (at start)."""
        self.view.status.say("app.loading", name=self.controller.backend.name)
        if isinstance(self.controller.backend, RemoteBackend):
            # Connecting to a server can take up to its handshake deadline: Stop gives up.
            self.view.enable("stop", True)

    def model_unloading(self) -> None:
        """Another backend is about to replace the current one."""
        self.answering.stop()
        self.model_ready = False
        self.model_failed = False
        self.view.model_banner.hide()
        self.send_allowed = False
        self.update_actions()

    def _model_failed(self, event: ModelFailed) -> None:
        """A banner that stays until dismissed (a restored chat must not push the reason out
        of sight), and the controls that need a model disabled — unless the model loaded
        before is still in use (``kept``): then it answers on, and the banner says so. A load
        cancelled on purpose (another model was chosen) is one sentence in the status line,
        not an error."""
        if event.cancelled and (self.controller.loading or self.controller.loaded):
            return  # a load given up, and another begun since (Send connects again): its news
        if event.cancelled and self.queued is not None and self._reconnect():
            return  # Send came after Stop, before the load had ended: the question waits on
        # a failure the translator knows is said in the user's language (the log: English)
        message = self.t(event.key) if event.key else cut(event.message)
        self.queued = None  # the box keeps it: Send (again) once a model is there to answer
        if self.answering.answer is None:
            self.view.enable("stop", False)  # (enabled while connecting)
        if event.cancelled:
            self.view.status.show(lambda: message)
            return
        print(f"tkchat: {cut(event.message)}", file=sys.stderr)
        self.view.model_not_loaded(event)
        kept = event.kept
        if kept is not None and self.controller.loaded:
            self.model_ready, self.model_failed = True, False
            self.view.model_banner.show(self.t("app.kept_banner", message=message, name=kept))
            self.view.status.say("app.model_kept", name=kept)
            self.send_allowed = True
            self.measure_context()
        else:
            self.model_failed = True
            self.view.model_banner.show(message)
            # a known failure's sentence is the status line itself (it says what to do)
            remote = isinstance(self.controller.backend, RemoteBackend)
            self.view.status.say(
                event.key or ("app.server_failed" if remote else "app.model_failed")
            )
            self.send_allowed = False
        self.update_actions()


def offload_text(offload: Offload, translate: Callable[..., str]) -> str:
    """Where a local model runs, in words: "CPU only: this llama-cpp-python was built without
    GPU support", "CPU only: GPU offload is off in Settings", "GPU: all 31 layers" …"""
    if not offload.supported:
        return translate("app.offload.cpu_build")
    if offload.layers == 0:
        return translate("app.offload.cpu_chosen")
    if offload.total is None or offload.layers < 0:
        return translate("app.offload.unknown")
    if offload.layers >= offload.total:
        return translate("app.offload.all", layers=offload.total)
    return translate("app.offload.some", layers=offload.layers, total=offload.total)
