"""The chat window: wires the transcript, the input, the health bar and the event pump.

Main thread only. The window appears before the model loads (loading runs on a worker);
sending starts a worker through the controller; every result comes back through the pump.
"""

from __future__ import annotations

import subprocess
import sys
import time
import tkinter as tk
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from tkinter import ttk

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.events import Done, Error, ModelFailed, ModelReady
from tkchat.generate.backend import Backend, GenerationRequest, Message, Sampling
from tkchat.generate.controller import GenerationController
from tkchat.generate.factory import make_backend
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.generate.worker import GenerationWorker
from tkchat.i18n import Translator, has_cjk_font
from tkchat.measure.lag_probe import LagProbe
from tkchat.modes import FIXED, MODES, make_pipeline
from tkchat.store import Conversation, StoredMessage, StoreError, sampling_from_settings
from tkchat.store.settings import AppSettings, save_settings
from tkchat.teach.lessons import Lesson, default_language
from tkchat.transport.channel import DEFAULT_HIGH_WATER, UNBOUNDED, EventChannel
from tkchat.ui.context_meter import ContextMeter, ContextWatch
from tkchat.ui.conversation_files import ConversationFiles
from tkchat.ui.fonts import FontSizer
from tkchat.ui.health import HealthBar
from tkchat.ui.history import History, as_messages
from tkchat.ui.lesson_panel import LessonPanel
from tkchat.ui.live_figures import live_figure
from tkchat.ui.menubar import MenuBar
from tkchat.ui.model_switch import ModelSwitch
from tkchat.ui.notice import NoticeBanner
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.pump import EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.settings_dialog import ChatSettingsDialog
from tkchat.ui.sidebar import ConversationSidebar
from tkchat.ui.transcript import BODY_FONT_SIZE, AnswerView, Transcript, UserView

SHOW_BUDGET_S = 0.006  # per callback, when putting a saved conversation on screen


class StatusLine(ttk.Label):
    """One line of status text. (Not a ``StringVar``: a Tk variable collected by the garbage
    collector on a worker thread raises "main thread is not in main loop".)"""

    def __init__(self, master: tk.Misc, text: str) -> None:
        super().__init__(master, text=text, anchor="w")

    def set(self, text: str) -> None:
        self.configure(text=text)

    def get(self) -> str:
        return str(self.cget("text"))


class ChatApp:
    """One chat window around one backend. Main thread only."""

    def __init__(
        self,
        root: tk.Tk,
        controller: GenerationController,
        *,
        sampling: Sampling | None = None,
        system_prompt: str | None = None,
        mode: str = FIXED,
        compare_command: Callable[[str], list[str]] | None = None,
        autosend: str | None = None,
        language: str | None = None,
        backend_factory: Callable[[str], Backend] | None = None,
        show_lessons: bool = False,
        history: bool = False,
        app_settings: AppSettings | None = None,
        persist_settings: bool = False,
    ) -> None:
        """``compare_command(broken_mode)`` gives the command line of ``tkchat compare`` for
        this window's settings; without it there is no Compare button. ``autosend`` is
        sent as soon as the model is ready (``--prompt``, used by ``tkchat compare``).
        ``language`` is "en" or "zh" (default: the system's). ``backend_factory(kind)`` makes
        the "llama" or "scripted" backend a lesson's demo asks for. ``history``: keep the
        conversations in the user's data folder (tkchat/store) and reopen the latest one.
        ``app_settings``: what the user chose last time (tkchat/store/settings.py); with
        ``persist_settings`` every change is written back. ``sampling`` and ``system_prompt``
        override the settings' defaults for new conversations (command-line flags)."""
        self.root = root
        self.controller = controller
        self.channel: EventChannel = controller.channel
        self.settings = app_settings or AppSettings()
        self.persist_settings = persist_settings
        # New conversations start from these; an opened one brings its own.
        self.default_sampling = sampling or self.settings.sampling
        self.default_system_prompt = (
            self.settings.system_prompt if system_prompt is None else system_prompt
        )
        self.sampling = self.default_sampling
        self.system_prompt = self.default_system_prompt
        self.history: list[Message] = []
        self.scheduler = AfterScheduler(root)
        self.consumer = StreamConsumer()
        self.answer: AnswerView | None = None
        self.model_ready = False
        self.closed = False
        self.finished: list[Done | Error] = []  # final events, in order (for tests and bench)
        self.on_final: Callable[[Done | Error], None] | None = None
        self.pipeline: Pipeline = make_pipeline(mode)
        self.mode = mode  # takes effect from the next question
        self.compare_command = compare_command
        self.compare_process: subprocess.Popen[bytes] | None = None
        self.autosend = autosend
        self.last_error: str | None = None
        self.last_cancel_ms: float | None = None
        self.final_handled_at: float | None = None  # perf_counter of the last handle_final
        self.archive: History | None = None  # saved conversations (tkchat/store), if enabled
        self.sidebar: ConversationSidebar | None = None
        self._to_show: deque[StoredMessage] = deque()  # saved messages not yet on screen
        self.editing: UserView | None = None  # the past question being edited, if any
        self._regenerations = 0  # of the last answer (a new question starts again at 0)
        self.settings_dialog: ChatSettingsDialog | None = None
        self.files = ConversationFiles(self)  # File > Export, Import
        self.models = ModelSwitch(self)  # Model > Choose model
        self.t = Translator(language or self.settings.language or default_language())
        self.backend_factory = backend_factory or (lambda kind: make_backend(kind))
        self.backends: dict[str, Backend] = {_kind(controller.backend): controller.backend}
        self._status: Callable[[], str] = lambda: self.t(
            "app.loading", name=controller.backend.name
        )

        root.geometry("900x680")
        root.minsize(520, 360)
        self.fonts = FontSizer(root)
        root.protocol("WM_DELETE_WINDOW", self.close)
        # The chat on the left, the lesson panel (when shown) on the right.
        self.panes = ttk.Panedwindow(root, orient="horizontal")
        self.panes.pack(fill="both", expand=True)
        chat = ttk.Frame(self.panes)
        self.panes.add(chat, weight=3)

        top = ttk.Frame(chat, padding=(8, 6, 8, 0))
        self.language_button = ttk.Button(top, command=self.toggle_language, width=8)
        self.t.bind(self.language_button, "button.language")
        self.language_button.pack(side="right", padx=(6, 0))
        self.lessons_button = ttk.Button(top, command=self.toggle_lessons)
        self.t.bind(self.lessons_button, "button.lessons")
        self.lessons_button.pack(side="right", padx=(6, 0))
        if compare_command is not None:
            compare = ttk.Button(top, command=self.open_compare)
            self.t.bind(compare, "button.compare")
            compare.pack(side="right", padx=(6, 0))
        self.mode_box = ttk.Combobox(top, values=MODES, state="readonly", width=19)
        self.mode_box.set(mode)
        self.mode_box.bind("<<ComboboxSelected>>", lambda _e: self.set_mode(self.mode_box.get()))
        self.mode_box.pack(side="right")
        mode_label = ttk.Label(top)
        self.t.bind(mode_label, "label.mode")
        mode_label.pack(side="right", padx=(12, 4))
        top.pack(side="top", fill="x")
        status_row = ttk.Frame(chat)
        self.status = StatusLine(status_row, "")
        self.context_meter = ContextMeter(status_row, self.t)
        self.context_meter.pack(side="right")
        self.status.pack(side="left", fill="x", expand=True)
        status_row.pack(side="top", fill="x", padx=8, pady=(4, 0))
        self.warning = tk.Label(
            chat,
            anchor="w",
            justify="left",
            padx=8,
            foreground="white",
            background="#b00020",
            font="TkDefaultFont",
            wraplength=860,
        )
        self.warning.bind(
            "<Configure>", lambda e: self.warning.configure(wraplength=max(200, e.width - 20))
        )

        self.probe = LagProbe(self.scheduler)
        self.health = HealthBar(
            chat,
            self.scheduler,
            self.probe,
            self._tokens_so_far,
            lambda: self.transcript.inserts,
            self.t,
        )
        self.health.pack(side="top", fill="x")
        self.storage_banner = NoticeBanner(chat, self.health, self.t)

        bottom = ttk.Frame(chat, padding=8)
        self.input = tk.Text(
            bottom,
            height=3,
            width=20,
            wrap="word",
            undo=True,
            borderwidth=1,
            relief="solid",
            padx=6,
            pady=4,
        )
        self.send_button = ttk.Button(bottom, command=self.send)
        self.t.bind(self.send_button, "button.send")
        self.stop_button = ttk.Button(bottom, command=self.stop, state="disabled")
        self.t.bind(self.stop_button, "button.stop")
        self.regenerate_button = ttk.Button(bottom, command=self.regenerate, state="disabled")
        self.t.bind(self.regenerate_button, "button.regenerate")
        self.input.pack(side="left", fill="both", expand=True)
        self.send_button.pack(side="left", padx=(8, 0))
        self.stop_button.pack(side="left", padx=(6, 0))
        self.regenerate_button.pack(side="left", padx=(6, 0))
        bottom.pack(side="bottom", fill="x")

        self.transcript = Transcript(chat, self.scheduler, self.t)
        self.transcript.pack(side="top", fill="both", expand=True)
        self.transcript.on_edit = self.edit
        self.transcript.on_copied = lambda what: self._say(f"app.copied.{what}")
        self.input.configure(font=self.transcript.body_font)
        self.context = ContextWatch(
            self.context_meter, controller, self.transcript, self.scheduler, self.t
        )
        self.lesson_panel: LessonPanel | None = None
        self.t.on_change(self._relabel)
        self._relabel(self.t.lang)
        if show_lessons:
            self.toggle_lessons()
        if history:
            self.archive = History(
                self.scheduler, on_ready=self._history_ready, on_warning=self._storage_warning
            )
            self.sidebar = ConversationSidebar(
                self.panes,
                translate=self.t,
                on_new=self.new_chat,
                on_select=self.show_conversation,
                on_rename=self._rename,
                on_delete=self._delete,
                on_undo_delete=self._undelete,
                on_search=self._search,
            )
            self.panes.insert(0, self.sidebar, weight=1)
            root.geometry("1140x680")

        commands: dict[str, Callable[[], object]] = {
            "new": self.new_chat,
            "quit": self.close,
            "regenerate": self.regenerate,
            "stop": self.stop,
            "focus_input": self.focus_input,
            "settings": self.open_settings,
            "choose_model": self.models.choose,
            "bigger": lambda: self.change_font_size(+1),
            "smaller": lambda: self.change_font_size(-1),
            "reset_size": lambda: self.set_font_size(BODY_FONT_SIZE),
            "lessons": self.toggle_lessons,
            "language": self.toggle_language,
        }
        if self.sidebar is not None:
            commands.update(
                {
                    "search": self.sidebar.focus_search,
                    "import": self.files.import_,
                    "export_md": lambda: self.files.export("markdown"),
                    "export_json": lambda: self.files.export("json"),
                }
            )
        self.menubar = MenuBar(root, self.t, commands)
        self.input.bind("<Return>", self._on_return)
        self.input.bind("<Shift-Return>", self._on_shift_return)
        # Tk's Text reads Ctrl+A as "start of line" (Emacs); in a chat box it means "all".
        self.input.bind("<Control-a>", self._select_all_input)
        keys: dict[str, Callable[[], object]] = {
            "<Escape>": self._escape,
            "<Control-q>": self.close,
            "<Control-n>": self.new_chat,
            "<Control-l>": self.focus_input,
            "<Control-r>": self.regenerate,
            "<Control-comma>": self.open_settings,
            "<Control-m>": self.models.choose,
            "<Control-plus>": commands["bigger"],
            "<Control-equal>": commands["bigger"],
            "<Control-KP_Add>": commands["bigger"],
            "<Control-minus>": commands["smaller"],
            "<Control-KP_Subtract>": commands["smaller"],
            "<Control-0>": commands["reset_size"],
        }
        if self.sidebar is not None:
            keys["<Control-f>"] = self.sidebar.focus_search
        for sequence, action in keys.items():
            root.bind(sequence, lambda _e, act=action: (act(), "break")[1])
        if self.settings.font_size is not None:
            self.set_font_size(self.settings.font_size, save=False)
        if persist_settings and self.settings.geometry:
            root.geometry(self.settings.geometry.split("+")[0])  # the size; not the place
        self.input.focus_set()

        self.new_chat()
        self.pump = EventPump(self.scheduler, self.channel, self.consumer, self._on_tick)
        self.pump.start()
        self.probe.start()
        self.health.start()

    # -- input ---------------------------------------------------------------------------------

    def _on_return(self, _event: tk.Event) -> str:
        self.send()
        return "break"  # Enter sends; the newline is not inserted

    def _select_all_input(self, _event: tk.Event) -> str:
        self.input.tag_add("sel", "1.0", "end-1c")
        self.input.mark_set("insert", "end-1c")
        return "break"

    def _on_shift_return(self, _event: tk.Event) -> str:
        self.input.insert("insert", "\n")
        return "break"

    def send(self, text: str | None = None) -> bool:
        """Send the input box's text (or ``text``). Returns whether a generation started.
        While a past question is being edited, the box's text replaces it and everything
        after it."""
        prompt = (self.input.get("1.0", "end-1c") if text is None else text).strip()
        if not prompt:
            return False
        if not self._can_generate():
            return False
        if self.controller.is_generating():
            self.stop()  # the partial answer stays, marked stopped; the new one starts at once
        if text is None:
            self.input.delete("1.0", "end")
            if self.editing is not None:
                self._rewind_to(self.editing)
        self.editing = None
        self._regenerations = 0
        self.transcript.add_user(prompt)
        self.history.append(Message("user", prompt))
        if self.archive is not None:
            self.archive.question(
                prompt, system_prompt=self.system_prompt, settings_from=self.sampling
            )
        return self._generate()

    def _can_generate(self) -> bool:
        if (
            not self.model_ready
            or self.showing_conversation
            or (self.archive is not None and not self.archive.ready)
        ):
            # (a question sent before the history is open could not be saved)
            self._say("app.not_ready")
            return False
        return True

    def _generate(self, sampling: Sampling | None = None) -> bool:
        """Answer the chat as it stands (the last message is the user's), with ``sampling``
        or the conversation's."""
        self.answer = self.transcript.begin_answer()
        if self.archive is not None:
            self.archive.answer_started(self.answer)
            self._refresh_sidebar()  # a new conversation shows up at once
        if self.pipeline.name != self.mode:
            self.pipeline = make_pipeline(self.mode)
        # Broken demos are naive all the way: their sender does not coalesce either.
        self.channel.high_water = DEFAULT_HIGH_WATER if self.pipeline.coalesce else UNBOUNDED
        self.stop_button.configure(state="normal")
        if self.pipeline.broken:
            self._say("app.generating_broken", mode=self.mode)
        else:
            self._say("app.generating")
        self.probe.reset_peaks()  # the live figures of a lesson count from this question
        self.pipeline.start(self, GenerationRequest(tuple(self.history), sampling or self.sampling))
        self._update_actions()
        return True

    # -- regenerate, edit and resend -------------------------------------------------------------

    def regenerate(self) -> bool:
        """Ask again for the last answer (Ctrl+R): it is replaced, on screen and on disk."""
        if not self._can_generate():
            return False
        if self.controller.is_generating():
            self.stop()
        entries = self.transcript.entries
        if not entries or not isinstance(entries[-1], AnswerView):
            self._say("app.regenerate_none")
            return False
        self.editing = None
        self._rewind_to(entries[-1])
        # With a fixed seed the same chat gives the same answer: each regenerate of this
        # answer takes the next seed, so it differs and is still reproducible.
        self._regenerations += 1
        seed = self.sampling.seed
        return self._generate(
            None
            if seed is None
            else replace(self.sampling, seed=(seed + self._regenerations) % 2**32)
        )

    def edit(self, view: UserView) -> None:
        """Put a past question in the box; sending it replaces it and all that follows."""
        if self.showing_conversation:
            return
        self.editing = view
        self.input.delete("1.0", "end")
        self.input.insert("1.0", view.text)
        self.focus_input()
        self._say("app.editing", number=self.transcript.entries.index(view) + 1)

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self.editing = None
            self.input.delete("1.0", "end")
            self._say("app.edit_cancelled")

    def _rewind_to(self, view: UserView | AnswerView) -> None:
        """Forget ``view`` and everything after it: screen, model context and saved copy."""
        self.stop()
        keep = self.transcript.entries.index(view)
        self.transcript.remove_from(view)
        self.context.rewound(keep)
        system = 1 if self.history and self.history[0].role == "system" else 0
        del self.history[system + keep :]
        if self.archive is not None:
            self.archive.truncate(keep)
        self._update_actions()

    def _escape(self) -> None:
        """Esc stops an answer; with none running it cancels an edit."""
        if self.controller.is_generating():
            self.stop()
        else:
            self.cancel_edit()

    def focus_input(self) -> None:
        """Ctrl+L: type without reaching for the mouse."""
        self.input.focus_set()
        self.input.mark_set("insert", "end-1c")

    def _update_actions(self) -> None:
        """Regenerate needs an answer to replace."""
        entries = self.transcript.entries
        possible = bool(entries) and isinstance(entries[-1], AnswerView)
        self.regenerate_button.configure(state="normal" if possible else "disabled")
        self.menubar.enable("regenerate", possible)

    def set_mode(self, mode: str) -> None:
        """Choose how the *next* answer travels to the screen (see tkchat/modes.py)."""
        make_pipeline(mode)  # validates the name
        self.mode = mode
        if self.mode_box.get() != mode:
            self.mode_box.set(mode)
        self._show_mode_warning()
        self._set_title()

    def _set_title(self) -> None:
        broken = "" if self.mode == FIXED else self.t("app.title.broken", mode=self.mode)
        self.root.title(self.t("app.title", name=self.controller.backend.name, broken=broken))

    def _show_mode_warning(self) -> None:
        if self.mode == FIXED:
            self.warning.pack_forget()
            return
        self.warning.configure(
            text=self.t("warning.broken", mode=self.mode, summary=self.t(f"mode.{self.mode}"))
        )
        self.warning.pack(side="top", fill="x", after=self.health)

    def _say(self, key: str, **values: object) -> None:
        """Set the status line to one translated message."""
        self._show_status(lambda: self.t(key, **values))

    def _show_status(self, make: Callable[[], str]) -> None:
        """Set the status line; ``make`` is kept to say it again in another language."""
        self._status = make
        self.status.set(make())

    def _relabel(self, _lang: str) -> None:
        """Everything built on the fly, after a language change."""
        self.status.set(self._status())
        self._show_mode_warning()
        self._set_title()
        if self.lesson_panel is not None:
            self.lesson_panel.set_language(self.t.lang)

    def toggle_language(self) -> None:
        """中文 ⇄ English: the whole window and the lessons (remembered)."""
        self.t.set_language("zh" if self.t.lang == "en" else "en")
        self.change_settings(language=self.t.lang)
        if self.t.lang == "zh" and not has_cjk_font(self.root):
            self._say("app.no_cjk_font")

    # -- lessons -------------------------------------------------------------------------------

    def toggle_lessons(self) -> None:
        """Show or hide the lesson panel beside the chat."""
        if self.lesson_panel is None:
            self.lesson_panel = LessonPanel(
                self.panes,
                language=self.t.lang,
                on_setup_demo=self.setup_lesson_demo,
                read_figure=self.live_figure,
                translate=self.t,
            )
            self.panes.add(self.lesson_panel, weight=2)
            width = max(self.root.winfo_width(), 900)
            self.root.geometry(f"{max(width, 1320)}x{max(self.root.winfo_height(), 680)}")
        else:
            self.panes.forget(self.lesson_panel)
            self.lesson_panel.destroy()
            self.lesson_panel = None
            self.health.highlight(None)

    def setup_lesson_demo(self, lesson: Lesson) -> None:
        """A lesson's demo: its mode, its backend (and token rate), its prompt in the box."""
        self.set_mode(lesson.mode)
        self.use_backend(lesson.backend, rate=lesson.rate)
        self.input.delete("1.0", "end")
        self.input.insert("1.0", lesson.prompt or "")
        self.input.focus_set()
        self.health.highlight(lesson.watch)
        self.probe.reset_peaks()
        self._say("app.demo_ready", mode=lesson.mode)

    def use_backend(self, kind: str, *, rate: float | None = None) -> None:
        """Switch to the "llama" or "scripted" backend (made once, then kept loaded)."""
        backend = self.backends.get(kind)
        if backend is None:
            backend = self.backends[kind] = self.backend_factory(kind)
        if isinstance(backend, ScriptedBackend):
            # A lesson's demo answer is long enough (about 4,000 characters) for a freeze to
            # be seen and felt, and the same every time.
            backend.text = long_answer(4_000)
            if rate is not None:
                backend.rate = rate
        if backend is self.controller.backend:
            return
        self.stop()
        self.model_ready = False
        self._say("app.loading", name=backend.name)
        self.controller.switch_backend(backend)

    def live_figure(self, metric: str) -> float | None:
        """The live value of a ``tkchat bench`` figure, for the lesson panel (or None)."""
        return live_figure(self, metric)

    def open_compare(self) -> None:
        """Start ``tkchat compare`` (two windows, broken and fixed) as its own process."""
        if self.compare_command is None:
            return
        if self.compare_process is not None and self.compare_process.poll() is None:
            self._say("app.compare_open")
            return
        broken = self.mode if self.mode != FIXED else "blocking"
        self.compare_process = subprocess.Popen(self.compare_command(broken))
        self._say("app.compare_opened", broken=broken)

    def stop(self) -> None:
        """Ask the worker to stop; the ``done(cancelled)`` event then ends the answer."""
        worker = self.controller.stop()
        if worker is not None:
            self._watch_cancel(worker)
            self._end_answer(stopped=True)
            self.consumer.follow(-1)  # nothing of the stopped generation may show up later

    def new_chat(self) -> None:
        """Start over (Ctrl+N): stop any answer, clear the transcript and the model's context.
        The new conversation starts with the default system prompt and sampling."""
        self.stop()
        self.editing = None
        self.system_prompt, self.sampling = self.default_system_prompt, self.default_sampling
        self.history = [Message("system", self.system_prompt)] if self.system_prompt else []
        self.transcript.clear()
        self.context.reset(self.controller.backend.n_ctx if self.model_ready else None)
        self._update_actions()
        if self.archive is not None:
            self.archive.conversation_id = None  # created with the first question
            self._refresh_sidebar()

    # -- saved conversations ---------------------------------------------------------------------

    def _history_ready(self, conversations: list[Conversation]) -> None:
        """The store is open: reopen the latest conversation, unless one has begun or a
        ``--prompt`` is waiting (a question from the command line starts its own chat, with
        the command line's sampling)."""
        if conversations and not self.transcript.answers and not self.autosend:
            self.show_conversation(conversations[0].id)
        self._refresh_sidebar()
        self._maybe_autosend()

    def _storage_warning(self, text: str) -> None:
        """Saving failed (or will not happen): say so in the status line and in a banner that
        stays until dismissed — the next status would hide the news within seconds."""
        self._show_status(lambda: text)
        self.storage_banner.show(text)

    def _refresh_sidebar(self) -> None:
        if self.sidebar is not None and self.archive is not None and self.archive.ready:
            self.sidebar.set_conversations(
                self.archive.conversations(), self.archive.conversation_id
            )

    def _rename(self, conversation_id: int, title: str) -> None:
        if self.archive is not None:
            self.archive.run(lambda store: store.rename(conversation_id, title))
        self._refresh_sidebar()

    def _delete(self, conversation_id: int) -> None:
        """Soft delete: the sidebar offers Undo for a few seconds."""
        if self.archive is None:
            return
        self.archive.run(lambda store: store.delete(conversation_id))
        if self.archive.conversation_id == conversation_id:
            self.new_chat()
        self._refresh_sidebar()

    def _undelete(self, conversation_id: int) -> None:
        if self.archive is not None:
            self.archive.run(lambda store: store.restore(conversation_id))
        self._refresh_sidebar()

    def _search(self, text: str) -> None:
        if self.sidebar is None or self.archive is None:
            return
        if text.strip():
            self.sidebar.show_search_results(self.archive.search(text))
        else:
            self._refresh_sidebar()

    def _maybe_autosend(self) -> None:
        """Send ``--prompt`` once the model (and the history, if kept) is ready."""
        if not self.autosend or not self.model_ready or self.showing_conversation:
            return
        if self.archive is not None and not self.archive.ready:
            return
        prompt, self.autosend = self.autosend, None
        # after this callback, so a blocking demo does not run inside it
        self.scheduler.once("autosend", 50, lambda: self.send(prompt))

    def show_conversation(self, conversation_id: int) -> None:
        """Put a saved conversation on screen and make it the model's context."""
        if self.archive is None:
            return
        self.stop()
        self.editing = None
        self.transcript.clear()
        self.context.reset(self.controller.backend.n_ctx if self.model_ready else None)
        stored = self.archive.open(conversation_id)
        try:
            conversation = self.archive.store.get(conversation_id) if self.archive.store else None
        except StoreError:
            conversation = None
        if conversation is not None:  # it brings its own system prompt and sampling
            self.system_prompt = conversation.system_prompt
            self.sampling = sampling_from_settings(conversation.settings)
        self.history = as_messages(stored, self.system_prompt)
        # 200 messages inserted in one callback took 85 ms: a long task. Slice them instead.
        self._to_show = deque(stored)
        self.scheduler.once("show-conversation", 0, self._show_some)
        self._refresh_sidebar()

    def _show_some(self) -> None:
        """Main thread: put saved messages on screen until this callback's budget is spent;
        their markdown is then painted by the painter's own slices."""
        started = time.perf_counter()
        while self._to_show and time.perf_counter() - started < SHOW_BUDGET_S:
            message = self._to_show.popleft()
            if message.role == "user":
                self.transcript.add_user(message.content)
            elif message.role == "assistant":
                view = self.transcript.begin_answer()
                self.transcript.append(view, message.content)
                self.transcript.finish(
                    view,
                    stopped=message.status == "stopped",
                    interrupted=message.status == "interrupted",
                    error=self.t("transcript.failed") if message.status == "error" else None,
                )
        if self._to_show:
            self.scheduler.once("show-conversation", 1, self._show_some)
        else:
            self._update_actions()
            self._measure_context()
            self._maybe_autosend()

    @property
    def showing_conversation(self) -> bool:
        """Whether a saved conversation is still being put on screen."""
        return bool(self._to_show)

    # -- events from the pump ------------------------------------------------------------------

    def _on_tick(self, tick: TickResult) -> None:
        for event in tick.app_events:
            if isinstance(event, ModelReady):
                self.model_ready = True
                self.send_button.configure(state="normal")
                self._say(
                    "app.ready", name=event.name, seconds=f"{event.load_s:.1f}", n_ctx=event.n_ctx
                )
                self._set_title()
                self.context_meter.clear(event.n_ctx)
                self._measure_context()
                self._maybe_autosend()
            elif isinstance(event, ModelFailed):
                self._model_failed(event.message)
        if self.answer is not None and tick.chunks:
            self.pipeline.show(self, self.answer, tick.chunks)
            if self.archive is not None:
                self.archive.answer_grew()
            self.context.follow()
        if tick.final is not None:
            self.handle_final(tick.final)

    def handle_final(self, final: Done | Error) -> None:
        """Main thread. The answer's ``done`` or ``error``: end it, say how it went."""
        self.finished.append(final)
        self.final_handled_at = time.perf_counter()
        self.context.after(final)
        if isinstance(final, Error):
            self.last_error = final.message
            self._end_answer(error=final.message)
            self._say("app.error", message=final.message)
        else:
            self._end_answer(stopped=final.reason == "cancelled")
            if final.reason != "cancelled":
                self._show_status(lambda: self._done_text(final))
        if self.on_final is not None:
            self.on_final(final)

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
        if answer is None:
            return
        self._update_actions()
        if stopped:
            self._say("app.stopped")
        self.history.append(Message("assistant", answer.text))
        if self.archive is not None:
            self.archive.answer_grew()
            self.archive.answer_ended("error" if error else "stopped" if stopped else "complete")
        self.pipeline.finish(self, answer, stopped=stopped, error=error)

    def _model_failed(self, message: str) -> None:
        print(f"tkchat: {message}", file=sys.stderr)
        self._say("app.model_failed")
        self.transcript.add_note(message, "error")
        self.send_button.configure(state="disabled")

    # -- settings, model, text size ------------------------------------------------------------

    def open_settings(self) -> None:
        """The conversation's system prompt and sampling, and the text size (Ctrl+,)."""
        if self.settings_dialog is not None and self.settings_dialog.winfo_exists():
            self.settings_dialog.lift()
            return
        self.settings_dialog = ChatSettingsDialog(
            self.root,
            translate=self.t,
            system_prompt=self.system_prompt,
            sampling=self.sampling,
            font_size=self.settings.font_size,
            default_font_size=BODY_FONT_SIZE,
            on_apply=self.apply_settings,
        )

    def apply_settings(self, system_prompt: str, sampling: Sampling, font_size: int | None) -> None:
        """From the next answer on: this conversation's prompt and sampling (saved with it),
        also the defaults of new conversations; the text size for the whole window."""
        self.system_prompt, self.sampling = system_prompt, sampling
        self.default_system_prompt, self.default_sampling = system_prompt, sampling
        chat = [m for m in self.history if m.role != "system"]
        self.history = ([Message("system", system_prompt)] if system_prompt else []) + chat
        if self.archive is not None:
            self.archive.save_settings(system_prompt, sampling)
        size = self.set_font_size(font_size or BODY_FONT_SIZE, save=False)
        self.change_settings(
            system_prompt=system_prompt,
            sampling=sampling,
            font_size=None if size == BODY_FONT_SIZE else size,
        )  # one write
        self._say("app.settings_saved")
        self._measure_context()

    def change_font_size(self, step: int) -> None:
        self.set_font_size(self.fonts.size + step)

    def set_font_size(self, size: int, *, save: bool = True) -> int:
        """The text size setting (View menu, Ctrl+plus/minus/0): the whole window. Returns
        the size used (clamped)."""
        size = self.fonts.apply(size)
        self.transcript.set_font_size(size)
        if self.sidebar is not None:
            self.sidebar.fonts_changed()
        if save:
            self.change_settings(font_size=None if size == BODY_FONT_SIZE else size)
        return size

    def change_settings(self, **changes: object) -> None:
        """Change what is remembered between runs, and write it (if persisting)."""
        self.settings = replace(self.settings, **changes)  # type: ignore[arg-type]
        if not self.persist_settings:
            return
        warning = save_settings(self.settings)
        if warning:
            self._storage_warning(warning)

    def _measure_context(self) -> None:
        if self.model_ready:
            self.context.measure(GenerationRequest(tuple(self.history), self.sampling))

    def _watch_cancel(self, worker: GenerationWorker) -> None:
        """Note how long the stopped worker took to leave the model loop (live figure)."""
        if worker.is_alive():
            self.scheduler.once("cancel-watch", 5, lambda: self._watch_cancel(worker))
        elif worker.exited_at is not None and worker.cancelled_at is not None:
            self.last_cancel_ms = (worker.exited_at - worker.cancelled_at) * 1000

    def _tokens_so_far(self) -> int:
        worker = self.controller.current
        return worker.tokens if worker is not None else 0

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the model, cancel every timer, then destroy: no Tcl errors, no hanging thread."""
        if self.closed:
            return
        self.closed = True
        self.probe.stop()
        self.scheduler.close()
        if self.compare_process is not None and self.compare_process.poll() is None:
            self.compare_process.terminate()
        if self.lesson_panel is not None:
            self.lesson_panel.destroy()
        if self.sidebar is not None:
            self.sidebar.destroy()
        self.controller.shutdown(timeout=2.0)
        if self.archive is not None:
            self.archive.close()
        if self.persist_settings:
            self.change_settings(geometry=self.root.geometry(), language=self.t.lang)
        for backend in self.backends.values():
            if backend is not self.controller.backend:
                backend.close()
        self.root.destroy()


def _kind(backend: Backend) -> str:
    return "scripted" if isinstance(backend, ScriptedBackend) else "llama"
