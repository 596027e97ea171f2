"""The chat window: builds the widgets and the parts, wires them together, binds the keys,
closes.

Main thread only. The window appears before the model loads (loading runs on a worker).
What Send, Stop, Edit, Regenerate, ◀ ▶ and a chat switch do is the chat flow's
(:mod:`tkchat.ui.chats.flow`), which sees this window only through a Protocol
(:class:`~tkchat.ui.chats.chat_view.ChatView`); every result comes back through the 16 ms
pump. Where the widgets are is :mod:`tkchat.ui.window.layout`; each larger job has its own
part (saved conversations, model switching, export, the context meter, the live figures),
which gets the window's shared services (:class:`~tkchat.ui.base.services.Services`) and what is
its alone.
"""

from __future__ import annotations

import sys
import tkinter as tk
from collections.abc import Callable

from tkchat.consume.stream_consumer import StreamConsumer
from tkchat.course.lessons import default_language
from tkchat.events import ModelFailed, ModelReady
from tkchat.generate.controller import GenerationController
from tkchat.modes import CORRECT_MODES, is_outside_mode
from tkchat.store.settings import AppSettings
from tkchat.threads import WORKER_NICE, favour_the_gui_thread
from tkchat.ui.base.remembered import Remembered
from tkchat.ui.base.services import Services
from tkchat.ui.base.session import ChatSession
from tkchat.ui.base.translator import Translator, has_cjk_font
from tkchat.ui.chats.answer_versions import AnswerVersions
from tkchat.ui.chats.chat_view import Control, FlowParts
from tkchat.ui.chats.context_meter import ContextWatch
from tkchat.ui.chats.conversation_files import ConversationFiles
from tkchat.ui.chats.conversations import ChatHooks, SavedConversations
from tkchat.ui.chats.draft_count import DraftCounter
from tkchat.ui.chats.flow import ChatFlow
from tkchat.ui.lag_probe import LagProbe
from tkchat.ui.look.scaling import design_size, remembered_size, window_size
from tkchat.ui.models.download import ModelCatalogue
from tkchat.ui.models.switch import ModelSwitch
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.pump import EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.settings.chat_settings import ChatSettings
from tkchat.ui.settings.fonts import FontSizer
from tkchat.ui.settings.text_size import TextSize
from tkchat.ui.stages.feed import StageSources
from tkchat.ui.stages.window import StageDoor
from tkchat.ui.teaching.controls import TeachingControls
from tkchat.ui.teaching.demo_setup import LessonDemos
from tkchat.ui.teaching.loop_witness import witness_the_loop
from tkchat.ui.transcript.transcript import BODY_FONT_SIZE
from tkchat.ui.window.appearance import Appearance
from tkchat.ui.window.context_menus import attach_text_menu
from tkchat.ui.window.heap import freeze_loaded_model
from tkchat.ui.window.layout import ButtonCommands, ChatLayout
from tkchat.ui.window.menubar import MenuBar, bind_shortcuts
from tkchat.ui.window.options import AppOptions
from tkchat.ui.window.pipeline_choice import PipelineChoice
from tkchat.ui.window.shortcut_sheet import ShortcutSheet
from tkchat.ui.window.typing_home import TypingHome

__all__ = ["AppOptions", "ChatApp"]  # AppOptions lives in options.py; its callers import it here

WINDOW_SIZE_WITH_SIDEBAR = (1140, 680)  # pixels at 96 dpi (tkchat/ui/look/scaling.py)


class ChatApp(ChatLayout):
    """One chat window around one controller: it builds the parts and wires them, and is the
    view its chat flow (``flow``: send, Stop, regenerate, the answer on its way) sees.
    Main thread only."""

    flow: ChatFlow  # made last, from the parts (:meth:`_build_parts`)

    def __init__(
        self, root: tk.Tk, controller: GenerationController, options: AppOptions | None = None
    ) -> None:
        options = options or AppOptions()
        self.root = root
        self.controller = controller
        controller.worker_nice = WORKER_NICE  # the model yields a core to this window's thread
        favour_the_gui_thread()  # its Tcl calls wait 1 ms for the GIL, not 5
        settings = options.app_settings or AppSettings()
        controller.kept_states.limit = settings.kept_mb * 1_000_000  # chats read earlier
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
        self.closed = False
        self.freeze_heap = options.freeze_heap  # (model_loaded)
        self.forced_redraws = 0  # update_idletasks asked by a broken demo (the pipeline view)
        self._enabled: dict[Control, bool] = {}  # what enable() last set, by control
        self.shortcut_sheet: ShortcutSheet | None = None
        self.typing = TypingHome(root, lambda: self.input, self.scheduler)
        home = self.typing.then
        commands = ButtonCommands(
            home(lambda: self.flow.send()),
            home(lambda: self.flow.stop()),
            home(lambda: self.flow.regenerate()),
            home(self.toggle_language),
        )
        self._build_layout(root, self.t, self.scheduler, self.probe, self._tokens_so_far, commands)
        self.services = Services(
            root, self.scheduler, self.t, self.status, self.remembered, controller, self.session
        )
        self._build_parts(options)
        self.witness = witness_the_loop(self)  # who held the loop: tkchat/trace/, sampled
        self._bind_commands()
        self._restore(options, settings)
        self.flow.new_chat()
        self.pump = EventPump(
            self.scheduler,
            controller.channel,
            self.consumer,
            self.flow.on_tick,
            self.flow.answering.failed,
        )
        self.pump.start()
        self.probe.start()
        self.health.start()

    def _build_parts(self, options: AppOptions) -> None:
        """The parts the chat flow drives, the teaching and look parts, then the flow. A
        part calls into the flow through ``self.flow``, looked up when it calls (the flow
        is made last, from the parts)."""
        self.pipeline_host = PipelineHost(
            self.controller,
            self.consumer,
            self.transcript,
            self._forced_redraw,
            lambda final: self.flow.answering.handle_final(final),
            self.scheduler,
        )
        self.pipelines = PipelineChoice(self.pipeline_host, self.t, self.chat, self.banner_anchor)
        first = self.pipelines(options.mode)  # (fixed, if a pipeline file of one's own fails)
        self.transcript.on_edit = lambda view: self.flow.edit(view)
        self.transcript.on_version = lambda view, step: self.flow.show_version(view, step)
        self.transcript.on_earlier = lambda: self.flow.show_earlier()
        self.transcript_menu = attach_text_menu(self.transcript.text, self.t, editable=False)
        self.input_menu = attach_text_menu(self.input, self.t, editable=True)
        self.transcript.on_copied = lambda what: self.status.say(f"app.copied.{what}")
        self.context = ContextWatch(self.context_meter, self.transcript, self.services)
        self.draft = DraftCounter(
            self.draft_label,
            self.input,
            self.services,
            model_ready=lambda: self.flow.model_ready,
            send=lambda: self.flow.send(),
        )
        self._build_teaching_and_look(options, first.name)
        self._build_saved(options)
        parts = FlowParts(
            self.controller,
            self.consumer,
            self.session,
            self.versions,
            self.context,
            self.draft,
            self.conversations,
        )
        self.flow = ChatFlow(
            self,
            parts,
            scheduler=self.scheduler,
            translate=self.t,
            pipelines=self.pipelines,
            pipeline=first,
            autosend=options.autosend,
        )

    def _build_teaching_and_look(self, options: AppOptions, mode: str) -> None:
        """The lessons' demos and tools, the teaching controls and their live figures, the
        theme, models, text size."""
        self.demos = LessonDemos(
            self.services, self.consumer, self, theme=lambda: self.appearance.palette.name
        )
        if options.chaos is not None:
            self.demos.set_chaos(options.chaos)
        self.fonts = FontSizer(self.root)
        self.stages = StageDoor(  # the pipeline view (F9, View menu, a lesson's demo)
            self.root,
            self.t,
            StageSources(
                self.controller,
                self.transcript,
                lambda: self.flow.answering.pipeline,
                lambda: self.forced_redraws,
            ),
            lambda: self.pump,
            lambda: self.flow.answering.pipeline.name,
            lambda: self.fonts.size,
            self.focus_input,
        )
        self.demos.open_stages = lambda: self.stages.open(front=False)
        self.teaching = TeachingControls(
            self.services,
            self.places,
            self.demos.hooks(options.recorded_lag),
            mode=mode,
            compare_command=self._compare_command(options.compare_command),
            on_mode_changed=self._set_title,
            then_typing=self.typing.then,
        )
        self.appearance: Appearance = Appearance(
            self.services, self.teaching, detect=options.detect_theme
        )
        self.models = ModelSwitch(
            self.services,
            demo_llama=options.demo_llama,
            demo_scripted=options.demo_scripted,
            on_unloading=lambda: self.flow.model_unloading(),
            on_dialog_closed=self.typing.soon,
        )
        self.catalogue = ModelCatalogue(self.services, self.models.load)
        self.fonts.on_change(self.transcript.set_font_size)
        self.fonts.on_change(self.stages.set_font_size)
        self.fonts.on_change(self.teaching.set_font_size)
        self.text_size = TextSize(
            self.fonts,
            self.services,
            self.places,
            sidebar=lambda: self.conversations.sidebar if self.conversations else None,
        )

    def _build_saved(self, options: AppOptions) -> None:
        """Saved conversations (with ``--history``), versions, export and the settings."""
        self.conversations: SavedConversations | None = None
        if options.history:
            chat = ChatHooks(
                new_chat=lambda: self.flow.new_chat(),
                clear_chat=lambda: self.flow.clear_chat(),
                shown=lambda: self.flow.conversation_shown(),
                ready=lambda found: self.flow.history_ready(found),
            )
            self.conversations = SavedConversations(
                self.panes,
                self.services,
                self.transcript,
                chat,
                on_warning=self._storage_warning,
                on_export=lambda cid: self.files.export("markdown", cid),
            )
            sidebar = self.conversations.sidebar
            self.panes.insert(0, sidebar, weight=1)
            # A chat clicked keeps the keys (F2 renames it, Delete deletes it); a letter typed
            # there goes to the box.
            self.typing.letters_to_box(sidebar.tree)
            sidebar.new_button.configure(command=self.typing.then(lambda: self.flow.new_chat()))
            self.fonts.on_change(lambda _size: sidebar.fonts_changed())
            self.root.geometry(window_size(self.root, *WINDOW_SIZE_WITH_SIDEBAR))
        self.archive = self.conversations.archive if self.conversations else None
        self.versions: AnswerVersions = AnswerVersions(self.transcript, self.services, self.archive)
        self.files: ConversationFiles = ConversationFiles(
            self.services, self.archive, lambda cid: self.flow.open_conversation(cid)
        )
        self.chat_settings = ChatSettings(
            self.services,
            self.archive,
            self.text_size,
            model_ready=lambda: self.flow.model_ready,
            measure_context=lambda: self.flow.measure_context(),
            on_closed=self.typing.soon,
            reload_model=lambda undo: self.models.reload(undo),
        )

    def _restore(self, options: AppOptions, settings: AppSettings) -> None:
        """What the user had last time (and asked for on the command line)."""
        self.root.protocol("WM_DELETE_WINDOW", self.close)
        self.flow.model_loading()
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
        size = remembered_size(self.root, settings.window_size, settings.geometry)
        if options.persist_settings and size:
            self.root.geometry(size)  # the size, within this screen; not the place
        self.input.focus_set()

    def _bind_commands(self) -> None:
        """The menu bar, the window's shortcuts and the message box's own keys."""
        commands: dict[str, Callable[[], object]] = {
            "new": lambda: self.flow.new_chat(),
            "quit": self.close,
            "regenerate": lambda: self.flow.regenerate(),
            "previous_version": lambda: self.flow.step_version(-1),
            "next_version": lambda: self.flow.step_version(+1),
            "stop": lambda: self.flow.stop(),
            "stop_or_cancel_edit": lambda: self.flow.escape(),
            "focus_input": self.focus_input,
            "settings": self.chat_settings.open,
            "choose_model": self.models.choose,
            "get_model": self.catalogue.open,
            "bigger": lambda: self.text_size.change(+1),
            "smaller": lambda: self.text_size.change(-1),
            "reset_size": lambda: self.text_size.set(BODY_FONT_SIZE),
            "lessons": self.teaching.toggle_lessons,
            "stages": self.stages.open,
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

    # -- what the chat flow asks of the window (ChatView) -------------------------------------

    def enable(self, control: Control, on: bool) -> None:
        """``control`` usable or greyed. One already so is left alone: each answer's start
        and end set all three, and a configure costs Tk a redraw (the menu item's, a measure
        of the whole menu: about a millisecond, 2026-12-04)."""
        if self._enabled.get(control) == on:
            return
        self._enabled[control] = on
        buttons = {
            "send": self.send_button,
            "stop": self.stop_button,
            "regenerate": self.regenerate_button,
        }
        buttons[control].configure(state="normal" if on else "disabled")
        if control == "regenerate":
            self.menubar.enable("regenerate", on)

    def _compare_command(
        self, command: Callable[[str], list[str]] | None
    ) -> Callable[[str], list[str]] | None:
        """``tkchat compare``'s command line, with this window's language and projector
        mode at the moment Compare is pressed (a Chinese class got two English windows)."""
        if command is None:
            return None
        from tkchat.course.compare import window_args

        return lambda broken: [
            *command(broken),
            *window_args(self.t.lang, self.text_size.projector),
        ]

    def focus_input(self) -> None:
        """Ctrl+L: type without reaching for the mouse."""
        self.typing.into_box()

    def model_loaded(self, event: ModelReady) -> None:
        if self.freeze_heap:
            freeze_loaded_model()  # (tkchat/ui/window/heap.py: full collections walk less)
        self.models.loaded()  # (the recent models: only one that loaded)
        self._set_title()
        self.catalogue.suggest(event.name, self.controller.backend)
        self.context_meter.clear(event.n_ctx)
        self.context_meter.set_trained(event.n_ctx_train)
        self.demos.model_loaded(True)  # (after the ready line: a demo's own line comes back)

    def model_not_loaded(self, event: ModelFailed) -> None:
        self.models.failed(event)
        self.demos.model_loaded(False)

    # -- title, language, shortcuts --------------------------------------------------------------

    def _set_title(self) -> None:
        mode = self.teaching.mode
        if mode in CORRECT_MODES:
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

    def show_shortcuts(self) -> None:
        """F1: every shortcut on one sheet."""
        if self.shortcut_sheet is not None and self.shortcut_sheet.winfo_exists():
            self.shortcut_sheet.lift()
            return
        self.shortcut_sheet = ShortcutSheet(self.root, self.t)
        self.shortcut_sheet.bind("<Destroy>", lambda _e: self.typing.soon(), add="+")

    # -- live figures, storage ---------------------------------------------------------------

    def _forced_redraw(self) -> None:
        """A broken demo has the window redrawn now, inside its handler (counted: the
        pipeline view shows them)."""
        self.forced_redraws += 1
        self.root.update_idletasks()

    def _tokens_so_far(self) -> int:
        running = self.controller.running  # a worker, or an asyncio task (tkchat/aio/)
        return running.tokens if running is not None else 0

    def _storage_warning(self, text: str) -> None:
        """Saving failed (or will not happen): say so in the status line and in a banner that
        stays until dismissed — the next status would hide the news within seconds."""
        self.status.show(lambda: text)
        self.storage_banner.show(text)

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the model, cancel every timer, then destroy: no Tcl errors, no hanging thread.
        An answer still streaming is saved as stopped, as Stop would: a quit is not a crash,
        and the next start must not call it interrupted."""
        if self.closed:
            return
        self.closed = True
        cancelled_load = self.controller.cancel_load()
        self.flow.stop()
        self.catalogue.close()
        self.probe.stop()
        self.stages.close()
        self.scheduler.close()
        self.teaching.close()
        self.demos.close()
        freed = self.controller.shutdown(timeout=2.0)
        if cancelled_load:  # nobody will read it in the window: say it where it can be read
            name, state = self.controller.backend.name, "freed" if freed else "being freed"
            print(f"tkchat: loading {name} was cancelled; its memory is {state}.", file=sys.stderr)
        if self.conversations is not None:
            self.conversations.close()
        if self.remembered.persist:
            geometry = self.root.geometry()  # in pixels; the size also in the design's
            size = design_size(self.root, geometry)
            self.remembered.change(geometry=geometry, window_size=size, language=self.t.lang)
        self.models.close_idle()
        # A style change leaves Tk's <<ThemeChanged>> waiting for an idle moment; sent after
        # the destroy it would only print an error (the idle queue outlives the window).
        self.root.update_idletasks()
        self.root.destroy()
