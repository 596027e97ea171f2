"""The chat window: what happens when you send, stop, switch, and when the answer arrives.

Main thread only. The window appears before the model loads (loading runs on a worker);
sending starts a worker through the controller; every result comes back through the 16 ms
pump. Where the widgets are is :mod:`tkchat.ui.window.layout`; each larger job has its own part
(saved conversations, model switching, export, the context meter, the live figures), which
gets only what it needs.
"""

from __future__ import annotations

import logging
import sys
import time
import tkinter as tk
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tkchat.consume.stream_consumer import TRANSPORT_GAP, StreamConsumer, TickResult
from tkchat.conversation import Sampling
from tkchat.course.lessons import Lesson, default_language
from tkchat.events import Done, Error, ModelFailed, ModelReady
from tkchat.generate.backend import Backend, GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import make_backend
from tkchat.generate.remote import RemoteBackend
from tkchat.generate.worker import GenerationWorker
from tkchat.limits import cut
from tkchat.modes import FIXED, is_outside_mode
from tkchat.stats import LagSample
from tkchat.store import Conversation
from tkchat.store.settings import AppSettings
from tkchat.transport.chaos import Chaos
from tkchat.ui.chats.answer_versions import AnswerVersions, versions_after_regenerate
from tkchat.ui.chats.context_meter import ContextWatch
from tkchat.ui.chats.conversation_files import ConversationFiles
from tkchat.ui.chats.conversations import SavedConversations
from tkchat.ui.chats.draft_count import DraftCounter
from tkchat.ui.chats.history import History
from tkchat.ui.chats.session import ChatSession
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.look.appearance import Appearance
from tkchat.ui.look.fonts import FontSizer
from tkchat.ui.look.scaling import remembered_size, window_size
from tkchat.ui.look.system_theme import Detected
from tkchat.ui.look.text_size import TextSize
from tkchat.ui.models.download import ModelCatalogue
from tkchat.ui.models.switch import ModelSwitch
from tkchat.ui.pipeline import Pipeline, PipelineHost, make_pipeline
from tkchat.ui.pump import EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.settings.chat_settings import ChatSettings
from tkchat.ui.settings.remembered import Remembered
from tkchat.ui.teaching.controls import TeachingControls
from tkchat.ui.teaching.lag_timeline import LagTimeline, answer_arrivals
from tkchat.ui.teaching.live_figures import LiveFigures
from tkchat.ui.teaching.ordering import OrderingCounters, read_ordering
from tkchat.ui.teaching.outside import OutsidePipelineError
from tkchat.ui.teaching.watchdog_link import WatchdogHandle, open_watchdog
from tkchat.ui.transcript import BODY_FONT_SIZE, AnswerView, UserView
from tkchat.ui.window.context_menus import attach_text_menu
from tkchat.ui.window.layout import ButtonCommands, ChatLayout
from tkchat.ui.window.menubar import MenuBar, bind_shortcuts
from tkchat.ui.window.notice import ERROR, NoticeBanner
from tkchat.ui.window.shortcut_sheet import ShortcutSheet
from tkchat.ui.window.translator import Translator, has_cjk_font
from tkchat.ui.window.typing_home import TypingHome

log = logging.getLogger(__name__)
WINDOW_SIZE_WITH_SIDEBAR = (1140, 680)  # pixels at 96 dpi (tkchat/ui/look/scaling.py)


@dataclass(frozen=True)
class AppOptions:
    """How a window starts. ``sampling`` and ``system_prompt`` override the remembered
    defaults of new conversations (command-line flags). ``mode``: a name from
    :mod:`tkchat.modes`. ``compare_command(broken_mode)`` gives the command line of
    ``tkchat compare`` (None: no Compare button). ``autosend`` is sent once the model is
    ready (``--prompt``). ``language``: "en" or "zh" (default: remembered, else the system's).
    ``backend_factory(kind)`` makes the "llama" or "scripted" backend a lesson's demo asks for.
    ``history``: keep conversations in the user's data folder and reopen the latest.
    ``app_settings``: what was remembered (``settings.json``); with ``persist_settings``
    every change is written back. ``projector``: start in projector mode (large text).
    ``chaos``: answers travel through the chaos transport (lesson 13, ``--chaos SEED``).
    ``theme``: "system", "light" or "dark" for this run (default: remembered, else the
    system's); ``teach``: the teaching controls shown even if the chat-only view was
    remembered (``--teach``); ``detect_theme()`` asks the desktop (tests give their own).
    ``recorded_lag()``: a recording's lag samples, drawn beside the live lag in the lesson
    panel's timeline (``tkchat replay``)."""

    sampling: Sampling | None = None
    system_prompt: str | None = None
    mode: str = FIXED
    compare_command: Callable[[str], list[str]] | None = None
    autosend: str | None = None
    language: str | None = None
    backend_factory: Callable[[str], Backend] | None = None
    show_lessons: bool = False
    history: bool = False
    app_settings: AppSettings | None = None
    persist_settings: bool = False
    projector: bool = False
    chaos: Chaos | None = None
    theme: str | None = None
    teach: bool = False
    detect_theme: Callable[[], Detected] | None = None
    recorded_lag: Callable[[], Sequence[LagSample]] | None = None


class ChatApp(ChatLayout):
    """One chat window around one controller. Main thread only."""

    def __init__(
        self, root: tk.Tk, controller: GenerationController, options: AppOptions | None = None
    ) -> None:
        options = options or AppOptions()
        self.root = root
        self.controller = controller
        self.channel = controller.channel
        settings = options.app_settings or AppSettings()
        self.t = Translator(options.language or settings.language or default_language())
        self.remembered = Remembered(
            settings, persist=options.persist_settings, on_warning=self._storage_warning
        )
        self.session = ChatSession(
            settings.system_prompt if options.system_prompt is None else options.system_prompt,
            options.sampling or settings.sampling,
        )
        self.scheduler = AfterScheduler(root)
        self.probe = LagProbe(self.scheduler)
        self.consumer = StreamConsumer()
        self.answer: AnswerView | None = None  # the answer streaming now
        self.editing: UserView | None = None  # the past question being edited, if any
        self.set_aside = ""  # what the box held when that edit began
        self.model_ready = False
        self.model_failed = False  # the last load failed: nothing can be sent until another
        self.closed = False
        self.finished: list[Done | Error] = []  # final events, in order (for tests and bench)
        self.last_error: str | None = None
        self.last_cancel_ms: float | None = None
        self.final_handled_at: float | None = None  # perf_counter of the last handle_final
        self.autosend = options.autosend
        self.shortcut_sheet: ShortcutSheet | None = None
        self.chaos: Chaos | None = None
        if options.chaos is not None:
            self.set_chaos(options.chaos)
        self.watchdog: WatchdogHandle | None = None  # opened on demand: open_watchdog()

        self.typing = TypingHome(root, lambda: self.input, self.scheduler)
        home = self.typing.then
        commands = ButtonCommands(
            home(self.send), home(self.stop), home(self.regenerate), home(self.toggle_language)
        )
        self._build_layout(root, self.t, self.scheduler, self.probe, self._tokens_so_far, commands)
        self._build_parts(options)
        self._bind_commands()
        self._restore(options, settings)
        self.new_chat()
        self.pump = EventPump(
            self.scheduler, self.channel, self.consumer, self._on_tick, self._pump_failed
        )
        self.pump.start()
        self.probe.start()
        self.health.start()

    def _build_parts(self, options: AppOptions) -> None:
        """The window's parts, each given only what it uses."""
        root, controller = self.root, self.controller
        self.pipeline_host = PipelineHost(
            controller, self.consumer, self.transcript, root.update_idletasks, self.handle_final
        )
        self.pipeline_problem: str | None = None  # why a pipeline file of one's own is unused
        self.pipeline_banner: NoticeBanner | None = None  # ... said where it stays in view
        self.pipeline: Pipeline = self._make_pipeline(options.mode)
        self.transcript.on_edit = self.edit
        self.transcript.on_version = self.show_version
        self.transcript_menu = attach_text_menu(self.transcript.text, self.t, editable=False)
        self.input_menu = attach_text_menu(self.input, self.t, editable=True)
        self.transcript.on_copied = lambda what: self.status.say(f"app.copied.{what}")
        self.context = ContextWatch(
            self.context_meter, controller, self.transcript, self.scheduler, self.t
        )
        self.draft = DraftCounter(
            self.draft_label,
            self.input,
            self.scheduler,
            self.t,
            self.status,
            controller,
            self.session,
            model_ready=lambda: self.model_ready,
            stop=self.stop,
            send=self.send,
        )
        self.live_figure = LiveFigures(
            self.probe,
            self.transcript,
            self.finished,
            lambda: self.last_cancel_ms,
            self.ordering_counters,
            lambda: self.controller.current.sender if self.controller.current else None,
        )
        self.teaching = TeachingControls(
            root,
            self.panes,
            self.top_bar,
            self.health,
            self.t,
            self.status,
            mode=self.pipeline.name,  # (fixed, if a pipeline file of one's own was unusable)
            setup_demo=self.setup_lesson_demo,
            read_figure=self.live_figure,
            compare_command=options.compare_command,
            on_mode_changed=self._set_title,
            anchor=self.banner_anchor,
            then_typing=self.typing.then,
            timeline=lambda master: LagTimeline(
                master,
                self.scheduler,
                lambda: self.probe.history,
                answer_arrivals(self.transcript.answers),
                recorded=options.recorded_lag,
                translate=self.t,
            ),
        )
        self.appearance = Appearance(
            root, self.remembered, self.teaching, self.status, detect=options.detect_theme
        )
        self.models = ModelSwitch(
            root,
            self.t,
            self.status,
            controller,
            self.remembered,
            make=options.backend_factory or (lambda kind: make_backend(kind)),
            on_unloading=self._model_unloading,
            on_dialog_closed=self.typing.soon,
        )
        self.catalogue = ModelCatalogue(
            root, self.t, self.status, self.scheduler, self.remembered, self.models.load
        )
        self.fonts = FontSizer(root)
        self.fonts.on_change(self.transcript.set_font_size)
        self.fonts.on_change(self.teaching.set_font_size)
        self.text_size = TextSize(
            self.fonts,
            self.remembered,
            self.status,
            self.health,
            self.top_bar,
            self.panes,
            sidebar=lambda: self.conversations.sidebar if self.conversations else None,
        )
        self.conversations: SavedConversations | None = None
        if options.history:
            self.conversations = SavedConversations(
                self.panes,
                self.scheduler,
                self.t,
                self.transcript,
                self.session,
                on_new=self.new_chat,
                clear_chat=self._clear_chat,
                on_shown=self._conversation_shown,
                on_ready=self._history_ready,
                on_warning=self._storage_warning,
                on_export=lambda cid: self.files.export("markdown", cid),
            )
            sidebar = self.conversations.sidebar
            self.panes.insert(0, sidebar, weight=1)
            # A chat picked with the mouse: type into it at once. (Picked with the arrow keys,
            # the list keeps the focus, so the arrows go on working.)
            sidebar.tree.bind("<ButtonRelease-1>", lambda _e: self.typing.soon(), add="+")
            sidebar.new_button.configure(command=self.typing.then(self.new_chat))
            self.fonts.on_change(lambda _size: sidebar.fonts_changed())
            root.geometry(window_size(root, *WINDOW_SIZE_WITH_SIDEBAR))
        self.archive: History | None = self.conversations.archive if self.conversations else None
        self.versions = AnswerVersions(self.transcript, self.session, self.archive, self.scheduler)
        self.files = ConversationFiles(
            root, self.t, self.status, self.archive, self._open_conversation
        )
        self.chat_settings = ChatSettings(
            root,
            self.t,
            self.status,
            controller,
            self.session,
            self.remembered,
            self.archive,
            self.text_size,
            self.context,
            self.draft,
            model_ready=lambda: self.model_ready,
            on_closed=self.typing.soon,
        )

    def _restore(self, options: AppOptions, settings: AppSettings) -> None:
        """What the user had last time (and asked for on the command line)."""
        self.root.protocol("WM_DELETE_WINDOW", self.close)
        self.status.say("app.loading", name=self.controller.backend.name)
        if isinstance(self.controller.backend, RemoteBackend):
            # Connecting to a server can take up to its handshake deadline: Stop gives up.
            self.stop_button.configure(state="normal")
        self.t.on_change(lambda _lang: self._set_title())
        self._set_title()
        if options.show_lessons:
            self.teaching.toggle_lessons()
        # Always once: Tk's named fonts are then in points, which follow the screen's DPI.
        self.text_size.set(settings.font_size or BODY_FONT_SIZE, save=False)
        self.appearance.start(
            options.theme or settings.theme, settings.chat_only and not options.teach
        )
        if options.projector:
            self.text_size.set_projector(True)
        size = settings.geometry and remembered_size(self.root, settings.geometry)
        if options.persist_settings and size:
            self.root.geometry(size)  # the size, within this screen; not the place
        self.input.focus_set()

    def _bind_commands(self) -> None:
        """The menu bar, the window's shortcuts and the message box's own keys."""
        commands: dict[str, Callable[[], object]] = {
            "new": self.new_chat,
            "quit": self.close,
            "regenerate": self.regenerate,
            "stop": self.stop,
            "stop_or_cancel_edit": self._escape,
            "focus_input": self.focus_input,
            "settings": self.chat_settings.open,
            "choose_model": self.models.choose,
            "get_model": self.catalogue.open,
            "bigger": lambda: self.text_size.change(+1),
            "smaller": lambda: self.text_size.change(-1),
            "reset_size": lambda: self.text_size.set(BODY_FONT_SIZE),
            "lessons": self.teaching.toggle_lessons,
            "projector": lambda: self.text_size.set_projector(not self.text_size.projector),
            "shortcuts": self.show_shortcuts,
            "language": self.toggle_language,
        }
        if self.conversations is not None:
            commands.update(
                {
                    "search": self.conversations.sidebar.focus_search,
                    "import": self.files.import_,
                    "export_md": lambda: self.files.export("markdown"),
                    "export_json": lambda: self.files.export("json"),
                }
            )
        commands.update(self.appearance.commands())
        # After a menu item or a shortcut, the next key typed goes to the message box (unless
        # the command opened somewhere else to type: a dialog, the search box).
        commands = {name: self.typing.then(command) for name, command in commands.items()}
        self.menubar = MenuBar(self.root, self.t, commands)
        self.appearance.show_in(self.menubar)
        bind_shortcuts(self.root, commands)

    # -- sending -------------------------------------------------------------------------------

    def send(self, text: str | None = None) -> bool:
        """Send the input box's text (or ``text``). Returns whether a generation started.
        While a past question is being edited, the box's text replaces it and everything
        after it."""
        prompt = (self.input.draft if text is None else text).strip()
        self.draft.waiting = None  # this send lets go of a draft that waited for its count
        if not prompt or not self._can_generate():
            return False
        if text is None and not self.draft.fits(prompt):
            return False  # said why in the status line; the box keeps the text
        if self.controller.is_generating():
            self.stop()  # the partial answer stays, marked stopped; the new one starts at once
        if text is None:
            self.input.clear()
            if self.editing is not None:
                edited, self.editing = self.editing, None
                self._resend(edited, prompt)
                self._take_back_set_aside()
                return self._generate(self.session.request())
        self.editing = None
        self.transcript.add_user(prompt)
        self.session.ask(prompt)
        if self.archive is not None:
            self.archive.question(
                prompt,
                system_prompt=self.session.system_prompt,
                settings_from=self.session.sampling,
            )
        return self._generate(self.session.request())

    def _can_generate(self) -> bool:
        if self.model_failed and not self.controller.loading:
            self.status.say("app.no_model")  # the box keeps the text: nothing is lost
            return False
        if not self.model_ready or self.showing_conversation or not self._history_open():
            # (a question sent before the history is open could not be saved)
            self.status.say("app.not_ready")
            return False
        return True

    def _history_open(self) -> bool:
        return self.conversations is None or self.conversations.ready

    def _generate(
        self, request: GenerationRequest, versions: list[tuple[str, str]] | None = None
    ) -> bool:
        """Answer the chat as it stands (the last message is the user's). ``versions``: a
        regenerate's, the answer's earlier versions and this one."""
        self.answer = self.transcript.begin_answer(versions)
        if self.conversations is not None:
            self.conversations.archive.answer_started(self.answer)
            self.conversations.refresh()  # a new conversation shows up at once
        mode = self.teaching.mode
        if self.pipeline.name != mode:
            self.pipeline = self._make_pipeline(mode)
            if self.pipeline.name != mode:
                self.teaching.set_mode(self.pipeline.name)
        # Broken demos are naive all the way: their sender does not coalesce either.
        self.channel.coalesce = self.pipeline.coalesce
        self.stop_button.configure(state="normal")
        if self.pipeline.broken:
            self.status.say("app.generating_broken", mode=mode)
        else:
            self.status.say("app.generating")
        self.probe.reset_peaks()  # the live figures of a lesson count from this question
        self.pipeline.start(self.answer, request)
        self._update_actions()
        return True

    def _make_pipeline(self, mode: str) -> Pipeline:
        """The pipeline ``mode`` names. A pipeline file of one's own that cannot be used (it
        does not parse, raises, hangs, lacks the class ...) is said in a banner that stays,
        and the fixed pipeline answers instead: the window never goes down with the file."""
        try:
            return make_pipeline(mode, self.pipeline_host, self.t)
        except OutsidePipelineError as exc:
            self.pipeline_problem = exc.sentence(self.t)
            print(f"tkchat: {self.pipeline_problem}", file=sys.stderr)
            if self.pipeline_banner is None:
                self.pipeline_banner = NoticeBanner(
                    self.chat, self.banner_anchor, self.t, kind=ERROR
                )
            self.pipeline_banner.show(self.t("outside.fallback", problem=self.pipeline_problem))
            return make_pipeline(FIXED, self.pipeline_host)

    # -- regenerate, edit and resend -------------------------------------------------------------

    def regenerate(self) -> bool:
        """Ask again for the last answer (Ctrl+R): the new one becomes its next version, on
        screen and on disk; the earlier ones stay a click away (◀ ▶)."""
        if not self._can_generate():
            return False
        self.stop()  # an answer still streaming or ending ends now: its version is kept so
        entries = self.transcript.entries
        if not entries or not isinstance(entries[-1], AnswerView):
            self.status.say("app.regenerate_none")
            return False
        self._end_edit()
        versions = versions_after_regenerate(entries[-1])
        self._rewind_to(entries[-1])  # the saved answer takes the new version
        request = self.session.regenerate_request(len(versions) - 1)
        return self._generate(request, versions)

    def show_version(self, view: UserView | AnswerView, step: int) -> bool:
        """A message's ◀ / ▶: the chat goes on from that version of it (a question's: with
        its branch, so an answer streaming after it stops first)."""
        if isinstance(view, UserView):
            if self.showing_conversation or not self.versions.can_show(view, step):
                return False
            self.stop()
            self.context.rewound(self.transcript.entries.index(view))
        if not self.versions.show(view, step):
            return False
        if self.editing is not None and self.editing not in self.transcript.entries:
            self.cancel_edit()  # the question being edited went with the branch
        elif self.model_ready and not self.controller.is_generating():
            # "Done — 52 tokens" was about the version just put away
            self.status.say("app.ready_again", name=self.controller.backend.name)
        self._update_actions()
        self.chat_settings.measure_context()
        self.draft.refresh()  # the conversation changed: the same draft may fit differently
        return True

    def edit(self, view: UserView) -> None:
        """Put a past question in the box; sending it replaces it and all that follows
        (which stay as the question's earlier version: :meth:`_resend`). What was typed in
        the box is set aside, and comes back when the edit is sent or cancelled."""
        if self.showing_conversation:
            return
        if self.editing is None:
            self.set_aside = self.input.draft
        self.editing = view
        self.input.set_draft(view.text)
        self.focus_input()
        self.status.say("app.editing", number=self.transcript.entries.index(view) + 1)

    def _resend(self, view: UserView, prompt: str) -> None:
        """Send an edited question: it becomes the question's next version, in place of it
        and all that followed, which stay a click away (◀ on the question)."""
        self.stop()  # an answer still ending ends now: the branch keeps it as it ended
        versions, branches = self.versions.resent(view, prompt)
        index = self.transcript.entries.index(view)
        self._rewind_to(view)
        question = self.transcript.add_user(prompt, versions, branches)
        self.session.ask(prompt)
        if self.archive is not None:
            question.saved_as = self.archive.question(
                prompt,
                system_prompt=self.session.system_prompt,
                settings_from=self.session.sampling,
                edited=index,
            )

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self._end_edit()
            self.status.say("app.edit_cancelled")

    def _end_edit(self) -> None:
        """No question is being edited any more (Esc, Regenerate, another chat)."""
        if self.editing is not None:
            self.editing = None
            self._take_back_set_aside()

    def _take_back_set_aside(self) -> None:
        """The box gets back what was typed in it before an edit began (nothing is lost)."""
        self.input.set_draft(self.set_aside)
        self.set_aside = ""

    def _rewind_to(self, view: UserView | AnswerView) -> None:
        """Take ``view`` and everything after it off the screen and out of the model's
        context (the saved conversation keeps them as versions: see the callers)."""
        self.stop()
        keep = self.transcript.entries.index(view)
        self.transcript.remove_from(view)
        self.context.rewound(keep)
        self.session.rewind(keep)
        self._update_actions()

    def _escape(self) -> None:
        """Esc stops an answer; with none running it cancels an edit."""
        if self.controller.is_generating():
            self.stop()
        else:
            self.cancel_edit()

    def show_shortcuts(self) -> None:
        """F1: every shortcut on one sheet."""
        if self.shortcut_sheet is not None and self.shortcut_sheet.winfo_exists():
            self.shortcut_sheet.lift()
            return
        self.shortcut_sheet = ShortcutSheet(self.root, self.t)
        self.shortcut_sheet.bind("<Destroy>", lambda _e: self.typing.soon(), add="+")

    def focus_input(self) -> None:
        """Ctrl+L: type without reaching for the mouse."""
        self.typing.into_box()

    def _update_actions(self) -> None:
        """Regenerate needs an answer to replace, and a model to answer."""
        entries = self.transcript.entries
        possible = self.model_ready and bool(entries) and isinstance(entries[-1], AnswerView)
        self.regenerate_button.configure(state="normal" if possible else "disabled")
        self.menubar.enable("regenerate", possible)

    # -- title, language, lesson demos ----------------------------------------------------------

    def _set_title(self) -> None:
        mode = self.teaching.mode
        if mode == FIXED:
            label = ""
        elif is_outside_mode(mode):  # one's own: not known to be broken
            label = self.t("app.title.outside", mode=mode)
        else:
            label = self.t("app.title.broken", mode=mode)
        self.root.title(self.t("app.title", name=self.controller.backend.name, broken=label))

    def toggle_language(self) -> None:
        """中文 ⇄ English: the whole window and the lessons (remembered)."""
        self.t.set_language("zh" if self.t.lang == "en" else "en")
        self.remembered.change(language=self.t.lang)
        if self.t.lang == "zh" and not has_cjk_font(self.root):
            self.status.say("app.no_cjk_font")

    def setup_lesson_demo(self, lesson: Lesson) -> None:
        """A lesson's demo, as its header describes it: a fresh chat (so earlier demos do not
        lengthen the prompt), its mode, its backend (rate, answer length, language), its
        answer limit and seed, its prompt in the box, what to watch highlighted."""
        if lesson.fresh:
            self.new_chat()
        self.teaching.set_mode(lesson.mode)
        self.models.use(
            lesson.backend, rate=lesson.rate, tokens=lesson.tokens, language=lesson.language
        )
        limit = lesson.max_tokens or lesson.tokens
        sampling = self.session.sampling
        self.session.sampling = replace(
            sampling,
            max_tokens=limit or sampling.max_tokens,
            seed=lesson.seed if lesson.seed is not None else sampling.seed,
        )
        self.set_chaos(None if lesson.chaos is None else Chaos(lesson.chaos))
        if lesson.watchdog:
            self.open_watchdog()
        self.input.set_draft(lesson.prompt or "")
        self.input.focus_set()
        self.health.highlight(lesson.watch)
        self.probe.reset_peaks()
        self.status.say("app.demo_ready", mode=lesson.mode)

    # -- stop, new chat, saved conversations -----------------------------------------------------

    def stop(self) -> None:
        """Ask the worker to stop; the answer ends here, marked stopped. Also when the worker
        has just finished by itself and its last events are still in the queue: the answer
        ends now, complete, and those events are dropped (they would otherwise end an answer
        that another chat may already have cleared from the screen)."""
        worker = self.controller.stop()
        if worker is not None:
            self._watch_cancel(worker)
        if self.answer is not None:
            self._end_answer(stopped=worker is not None)
        elif isinstance(self.controller.backend, RemoteBackend) and self.controller.cancel_load():
            self.stop_button.configure(state="disabled")  # connecting to a server, given up
        self.consumer.follow(-1)  # nothing of that generation may show up later

    def new_chat(self) -> None:
        """Start over (Ctrl+N): stop any answer, clear the transcript and the model's context.
        The new conversation starts with the default system prompt and sampling."""
        self._clear_chat()
        self.session.start_new()
        self._update_actions()
        if self.conversations is not None:
            self.conversations.forget_current()

    def _clear_chat(self) -> None:
        """Before another conversation: nothing running, nothing on screen, nothing of a saved
        conversation still on its way to the screen, nothing said about the previous one."""
        self.stop()
        if self.model_ready:  # "Done — 512 tokens" was about the chat that is going away
            self.status.say("app.ready_again", name=self.controller.backend.name)
        if self.conversations is not None:
            self.conversations.stop_showing()
        self._end_edit()
        self.transcript.clear()
        self.context.reset(self.controller.backend.n_ctx if self.model_ready else None)
        self.draft.waiting = None  # it was for the chat that is going away
        self.draft.refresh()

    def _open_conversation(self, conversation_id: int) -> None:
        if self.conversations is not None:
            self.conversations.show(conversation_id)

    @property
    def showing_conversation(self) -> bool:
        """Whether a saved conversation (or a question's other branch) is still being put
        on screen."""
        showing = self.conversations is not None and self.conversations.showing
        return showing or self.versions.showing

    def _history_ready(self, conversations: list[Conversation]) -> None:
        """The store is open: reopen the latest conversation, unless one has begun or a
        ``--prompt`` is waiting (a question from the command line starts its own chat, with
        the command line's sampling)."""
        if conversations and not self.transcript.answers and not self.autosend:
            self._open_conversation(conversations[0].id)
        self._maybe_autosend()

    def _conversation_shown(self) -> None:
        self._update_actions()
        self.chat_settings.measure_context()
        self._maybe_autosend()

    def _storage_warning(self, text: str) -> None:
        """Saving failed (or will not happen): say so in the status line and in a banner that
        stays until dismissed — the next status would hide the news within seconds."""
        self.status.show(lambda: text)
        self.storage_banner.show(text)

    def _maybe_autosend(self) -> None:
        """Send ``--prompt`` once the model (and the history, if kept) is ready."""
        if not self.autosend or not self.model_ready or self.showing_conversation:
            return
        if not self._history_open():
            return
        prompt, self.autosend = self.autosend, None
        # after this callback, so a blocking demo does not run inside it
        self.scheduler.once("autosend", 50, lambda: self.send(prompt))

    # -- events from the pump ------------------------------------------------------------------

    def _on_tick(self, tick: TickResult) -> None:
        self.progress.follow(tick)
        for event in tick.app_events:
            if isinstance(event, ModelReady):
                self._model_ready(event)
            elif isinstance(event, ModelFailed):
                self._model_failed(event.message, cancelled=event.cancelled)
        if self.answer is not None and tick.chunks:
            self.pipeline.show(self.answer, tick.chunks)
            if self.archive is not None:
                self.archive.answer_grew()
            self.context.follow()
        if tick.final is not None:
            self.handle_final(tick.final)

    def _pump_failed(self, exc: Exception) -> None:
        """A tick raised (a bug, or a widget gone): end the answer with the error shown, so
        the window never waits for text that will not come. The pump keeps running."""
        message = self.t("app.tick_failed", error=cut(f"{type(exc).__name__}: {exc}"))
        if self.answer is not None:
            worker = self.controller.stop()
            if worker is not None:
                self._watch_cancel(worker)
            self.consumer.follow(-1)
            self._end_answer(error=message)
        self.status.show(lambda: message)

    def _model_ready(self, event: ModelReady) -> None:
        if self.answer is None:
            self.stop_button.configure(state="disabled")  # (enabled while connecting)
        self.model_ready = True
        self.model_failed = False
        self.model_banner.hide()
        self.send_button.configure(state="normal")
        self._update_actions()
        seconds, n_ctx = f"{event.load_s:.1f}", f"{event.n_ctx:,}"
        if event.n_ctx_train:  # "context 4,096 of 8,192 trained": what was given, of what could be
            trained = f"{event.n_ctx_train:,}"
            self.status.say(
                "app.ready.trained", name=event.name, seconds=seconds, n_ctx=n_ctx, trained=trained
            )
        else:
            self.status.say("app.ready", name=event.name, seconds=seconds, n_ctx=n_ctx)
        self._set_title()
        self.catalogue.suggest(event.name, self.controller.backend)
        self.context_meter.clear(event.n_ctx)
        self.context_meter.set_trained(event.n_ctx_train)
        self.chat_settings.measure_context()
        self._maybe_autosend()

    def _model_unloading(self) -> None:
        """Another backend is about to replace the current one."""
        self.stop()
        self.model_ready = False
        self.model_failed = False
        self.model_banner.hide()
        self.send_button.configure(state="disabled")
        self._update_actions()

    def handle_final(self, final: Done | Error) -> None:
        """Main thread. The answer's ``done`` or ``error``: end it, say how it went."""
        self.finished.append(final)
        self.final_handled_at = time.perf_counter()
        self.context.after(final)
        self.draft.refresh()  # the conversation grew: the same draft may fit differently
        if isinstance(final, Error):
            message = cut(final.message)  # the worker cuts it; an event from elsewhere too
            if final.kind == TRANSPORT_GAP:  # made by the consumer, not the model: see below
                message = self._transport_gap(final)
            self.last_error = message
            self._end_answer(error=message)
            self.status.say("app.error", message=message)
        else:
            self._end_answer(stopped=final.reason == "cancelled")
            if final.reason != "cancelled":
                self.status.show(lambda: self._done_text(final))

    # -- the chaos transport (lesson 13) -------------------------------------------------------

    def set_chaos(self, chaos: Chaos | None) -> None:
        """From the next answer on, events travel through ``chaos`` (None: straight)."""
        self.chaos = chaos
        self.controller.sink_wrapper = chaos

    def ordering_counters(self) -> OrderingCounters:
        """Lesson 13's live figures in one read: chaos done, order kept."""
        return read_ordering(self.chaos, self.consumer)

    def _transport_gap(self, final: Error) -> str:
        """The consumer gave up on event ``final.seq``: it never arrived. The answer has
        ended, so its worker must not go on generating unseen (Stop means the model stops).
        Returns the window's own sentence for it, translated."""
        self.controller.stop()
        return self.t("app.transport_gap", seq=final.seq)

    def _done_text(self, final: Done) -> str:
        speed = final.stats.tokens_per_s
        return (
            self.t("app.done", tokens=final.stats.tokens)
            + (self.t("app.done.speed", speed=f"{speed:.0f}") if speed else "")
            + (self.t("app.done.length") if final.reason == "length" else "")
        )

    def _end_answer(self, *, stopped: bool = False, error: str | None = None) -> None:
        answer, self.answer = self.answer, None
        self.stop_button.configure(state="disabled")
        self.progress.hide("reading")
        if answer is None:
            return
        self._update_actions()
        if stopped:
            self.status.say("app.stopped")
        self.session.answered(answer.text)
        if self.archive is not None:
            self.archive.answer_grew()
            self.archive.answer_ended("error" if error else "stopped" if stopped else "complete")
        self.pipeline.finish(answer, stopped=stopped, error=error)

    def _model_failed(self, message: str, *, cancelled: bool = False) -> None:
        """A banner that stays until dismissed (a restored chat must not push the reason out
        of sight), and the controls that need a model disabled. A load cancelled on purpose
        (another model was chosen) is one sentence in the status line, not an error."""
        message = cut(message)
        if self.answer is None:
            self.stop_button.configure(state="disabled")  # (enabled while connecting)
        if cancelled:
            self.status.show(lambda: message)
            return
        print(f"tkchat: {message}", file=sys.stderr)
        self.model_failed = True
        self.model_banner.show(message)
        self.status.say("app.model_failed")
        self.send_button.configure(state="disabled")
        self._update_actions()

    # -- live figures, the watchdog ----------------------------------------------------------------

    def _watch_cancel(self, worker: GenerationWorker) -> None:
        """Note how long the stopped worker took to leave the model loop (live figure)."""
        if worker.is_alive():
            self.scheduler.once("cancel-watch", 5, lambda: self._watch_cancel(worker))
        elif worker.exited_at is not None and worker.cancelled_at is not None:
            self.last_cancel_ms = (worker.exited_at - worker.cancelled_at) * 1000

    def _tokens_so_far(self) -> int:
        worker = self.controller.current
        return worker.tokens if worker is not None else 0

    def open_watchdog(self) -> WatchdogHandle:
        """The heartbeat in a second process, drawing a freeze as it happens (once, or anew)."""
        if self.watchdog is None or not self.watchdog.alive:
            if self.watchdog is not None:
                self.watchdog.close()
            theme, language = self.appearance.palette.name, self.t.lang  # the watchdog's look
            self.watchdog = open_watchdog(self.scheduler, theme=theme, language=language)
        return self.watchdog

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the model, cancel every timer, then destroy: no Tcl errors, no hanging thread.
        An answer still streaming is saved as stopped, as Stop would: a quit is not a crash,
        and the next start must not call it interrupted."""
        if self.closed:
            return
        self.closed = True
        cancelled_load = self.controller.cancel_load()
        self.stop()
        self.catalogue.close()
        self.probe.stop()
        self.scheduler.close()
        self.teaching.close()
        if self.watchdog is not None:
            self.watchdog.close()
        freed = self.controller.shutdown(timeout=2.0)
        if cancelled_load:  # nobody will read it in the window: say it where it can be read
            name, state = self.controller.backend.name, "freed" if freed else "being freed"
            print(f"tkchat: loading {name} was cancelled; its memory is {state}.", file=sys.stderr)
        if self.conversations is not None:
            self.conversations.close()
        if self.remembered.persist:
            self.remembered.change(geometry=self.root.geometry(), language=self.t.lang)
        self.models.close_idle()
        # A style change leaves Tk's <<ThemeChanged>> waiting for an idle moment; sent after
        # the destroy it would only print an error (the idle queue outlives the window).
        self.root.update_idletasks()
        self.root.destroy()
