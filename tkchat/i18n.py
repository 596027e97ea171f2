"""Every string the window shows, in English and Chinese, and the switch between them.

Widgets register their text with :meth:`Translator.bind`; switching the language re-labels
them all. Text made on the fly (status lines, health figures) calls the translator each time.
Model output and the model's own error messages are content, not interface, and stay as they
are.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

from tkchat.ui.lesson_panel import PANEL_STRINGS
from tkchat.ui.model_picker import PICKER_STRINGS
from tkchat.ui.settings_dialog import SETTINGS_STRINGS
from tkchat.ui.sidebar import SIDEBAR_STRINGS

LANGUAGES = ("en", "zh")

_APP_STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "app.title": "tkchat — {name}{broken}",
        "app.title.broken": " — BROKEN mode: {mode}",
        "app.loading": "Loading {name} …",
        "app.ready": "Ready — {name}, loaded in {seconds} s, context {n_ctx} tokens",
        "app.not_ready": "The model is not ready yet — your message is kept in the box.",
        "app.generating": "Generating … (Esc stops)",
        "app.generating_broken": "Generating in the BROKEN mode {mode} — the window may freeze",
        "app.done": "Done — {tokens} tokens",
        "app.done.speed": " at {speed} tokens/s",
        "app.done.length": " (length limit reached)",
        "app.stopped": "Stopped.",
        "app.error": "Error: {message}",
        "app.model_failed": "The model failed to load — see the message below.",
        "app.compare_open": "The comparison is already open.",
        "app.compare_opened": "Opened {broken} next to fixed, in two new windows.",
        "app.demo_ready": "Demo ready: mode {mode}. Press Enter to send the prompt.",
        "app.no_cjk_font": "No Chinese font found: install one (e.g. fonts-noto-cjk) to read "
        "the Chinese interface.",
        "button.send": "Send",
        "button.stop": "Stop",
        "button.compare": "Compare side by side",
        "button.lessons": "Lessons",
        "button.language": "中文",
        "label.mode": "Mode:",
        "warning.broken": "⚠ BROKEN MODE “{mode}”, on purpose, for teaching: {summary}.",
        "mode.fixed": "worker thread → queue → one insert every 16 ms; markdown painted in slices",
        "mode.blocking": "the model loop runs in the Send handler, on the main thread",
        "mode.main-thread-reader": "a worker generates, but the main thread loops reading the "
        "stream",
        "mode.per-chunk-render": "every chunk re-renders the whole answer's markdown (the cost "
        "grows)",
        "mode.no-coalesce": "one insert plus a forced redraw per token, no batching",
        "transcript.you": "You",
        "transcript.assistant": "Assistant",
        "transcript.stopped": "[stopped]",
        "transcript.interrupted": "[interrupted: tkchat closed before this answer ended]",
        "transcript.failed": "this answer ended with an error",
        "health.lag": "│ event-loop lag {now} ms (p99 {p99})",
        "health.rates": "│ model {tokens} tokens/s │ window {updates} updates/s",
        "health.ping": "Ping",
        "health.pong": "pong {count} at {time}",
        "transcript.copy": "Copy",
        "transcript.edit": "Edit",
        "transcript.copy_code": "Copy code",
        "app.copied.message": "Copied the message to the clipboard.",
        "app.copied.code": "Copied the code to the clipboard.",
        "app.editing": "Editing message {number}: Enter replaces it and all after it; Esc cancels.",
        "app.edit_cancelled": "Edit cancelled.",
        "app.regenerate_none": "There is no answer to regenerate yet.",
        "app.settings_saved": "Settings saved: they apply from the next answer.",
        "app.nothing_to_export": "Nothing to export yet: send a message first.",
        "app.exported": "Saved {path}",
        "app.export_failed": "Could not save {path}: {reason}",
        "app.imported": "Imported “{title}”.",
        "app.import_failed": "Could not import {path}: {reason}",
        "button.regenerate": "Regenerate",
        "banner.dismiss": "Dismiss",
        "app.wait_loading": "A model is still loading: choose again once it is ready.",
        "context.meter": "context {used} / {n_ctx} tokens",
        "context.meter.dropped": " · {dropped} earlier messages left out",
        "context.dropped_note": "This conversation no longer fits the model's context "
        "({n_ctx} tokens). The model now reads only the latest "
        "messages: the first {dropped} are left out (they stay here "
        "and are saved). Start a new chat for a fresh context.",
        "menu.file": "File",
        "menu.new": "New chat",
        "menu.search": "Search chats",
        "menu.import": "Import conversation (JSON)…",
        "menu.export_md": "Export as Markdown…",
        "menu.export_json": "Export as JSON…",
        "menu.quit": "Quit",
        "menu.chat": "Chat",
        "menu.regenerate": "Regenerate last answer",
        "menu.stop": "Stop",
        "menu.focus_input": "Go to the message box",
        "menu.settings": "Conversation settings…",
        "menu.model": "Model",
        "menu.choose_model": "Choose model…",
        "menu.view": "View",
        "menu.bigger": "Larger text",
        "menu.smaller": "Smaller text",
        "menu.reset_size": "Default text size",
        "menu.lessons": "Lessons",
        "menu.language": "中文 / English",
    },
    "zh": {
        "app.title": "tkchat — {name}{broken}",
        "app.title.broken": " —— 故障模式：{mode}",
        "app.loading": "正在加载 {name} ……",
        "app.ready": "就绪 —— {name}，加载用时 {seconds} 秒，上下文 {n_ctx} 个 token",
        "app.not_ready": "模型还没准备好 —— 你的消息还留在输入框里。",
        "app.generating": "正在生成……（按 Esc 停止）",
        "app.generating_broken": "正在以故障模式 {mode} 生成 —— 窗口可能会卡住",
        "app.done": "完成 —— {tokens} 个 token",
        "app.done.speed": "，每秒 {speed} 个",
        "app.done.length": "（已到长度上限）",
        "app.stopped": "已停止。",
        "app.error": "出错：{message}",
        "app.model_failed": "模型加载失败 —— 见下方说明。",
        "app.compare_open": "对比窗口已经开着了。",
        "app.compare_opened": "已打开两个新窗口：{broken} 与 fixed 并排。",
        "app.demo_ready": "演示已就绪：{mode} 模式。按回车发送提示词。",
        "app.no_cjk_font": "没有找到中文字体：请安装一个（例如 fonts-noto-cjk）"
        "以正常显示中文界面。",
        "button.send": "发送",
        "button.stop": "停止",
        "button.compare": "并排对比",
        "button.lessons": "课程",
        "button.language": "English",
        "label.mode": "模式：",
        "warning.broken": "⚠ 故障模式“{mode}”，为教学故意为之：{summary}。",
        "mode.fixed": "工作线程 → 队列 → 每 16 毫秒插入一次；Markdown 分片渲染",
        "mode.blocking": "模型循环跑在“发送”的处理函数里，也就是主线程上",
        "mode.main-thread-reader": "工作线程负责生成，主线程却在循环里读流",
        "mode.per-chunk-render": "每来一块就把整段回答的 Markdown 重新渲染一遍（越来越慢）",
        "mode.no-coalesce": "每个 token 插入一次并强制重绘，不做合并",
        "transcript.you": "你",
        "transcript.assistant": "助手",
        "transcript.stopped": "[已停止]",
        "transcript.interrupted": "[已中断：这段回答没写完 tkchat 就关闭了]",
        "transcript.failed": "这段回答以出错告终",
        "health.lag": "│ 事件循环延迟 {now} 毫秒（p99 {p99}）",
        "health.rates": "│ 模型 {tokens} tokens/s │ 窗口每秒更新 {updates} 次",
        "health.ping": "点我",
        "health.pong": "第 {count} 次响应，{time}",
        "transcript.copy": "复制",
        "transcript.edit": "编辑",
        "transcript.copy_code": "复制代码",
        "app.copied.message": "已把这条消息复制到剪贴板。",
        "app.copied.code": "已把代码复制到剪贴板。",
        "app.editing": "正在编辑第 {number} 条消息：回车替换它及其后的全部内容；Esc 取消。",
        "app.edit_cancelled": "已取消编辑。",
        "app.regenerate_none": "还没有可以重新生成的回答。",
        "app.settings_saved": "设置已保存：从下一段回答开始生效。",
        "app.nothing_to_export": "还没有可导出的内容：先发一条消息吧。",
        "app.exported": "已保存 {path}",
        "app.export_failed": "无法保存 {path}：{reason}",
        "app.imported": "已导入“{title}”。",
        "app.import_failed": "无法导入 {path}：{reason}",
        "button.regenerate": "重新生成",
        "banner.dismiss": "知道了",
        "app.wait_loading": "还有一个模型正在加载：等它就绪后再选。",
        "context.meter": "上下文 {used} / {n_ctx} 个 token",
        "context.meter.dropped": " · 已略去前 {dropped} 条消息",
        "context.dropped_note": "这段对话已经超出模型的上下文（{n_ctx} 个 token）。模型现在只读"
        "最近的消息：前 {dropped} 条被略去（它们仍显示在这里，也已保存）。"
        "想要完整的上下文，请新建对话。",
        "menu.file": "文件",
        "menu.new": "新对话",
        "menu.search": "搜索对话",
        "menu.import": "导入对话（JSON）……",
        "menu.export_md": "导出为 Markdown……",
        "menu.export_json": "导出为 JSON……",
        "menu.quit": "退出",
        "menu.chat": "对话",
        "menu.regenerate": "重新生成上一段回答",
        "menu.stop": "停止",
        "menu.focus_input": "跳到输入框",
        "menu.settings": "对话设置……",
        "menu.model": "模型",
        "menu.choose_model": "选择模型……",
        "menu.view": "视图",
        "menu.bigger": "放大文字",
        "menu.smaller": "缩小文字",
        "menu.reset_size": "默认文字大小",
        "menu.lessons": "课程",
        "menu.language": "中文 / English",
    },
}

STRINGS: dict[str, dict[str, str]] = {
    lang: {
        **_APP_STRINGS[lang],
        **PANEL_STRINGS[lang],
        **SIDEBAR_STRINGS[lang],
        **SETTINGS_STRINGS[lang],
        **PICKER_STRINGS[lang],
    }
    for lang in LANGUAGES
}

CJK_FAMILIES = (
    "noto sans cjk sc",
    "noto sans cjk",
    "noto serif cjk sc",
    "source han sans",
    "wenquanyi",
    "droid sans fallback",
    "ar pl",
    "microsoft yahei",
    "pingfang sc",
    "simsun",
    "hiragino sans gb",
    "sarasa",
)


class Translator:
    """Main thread only (it configures widgets)."""

    def __init__(self, lang: str) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}")
        self.lang = lang
        self._bound: list[tuple[tk.Misc, str, str]] = []
        self._listeners: list[Callable[[str], None]] = []
        self._prune_at = 64  # forget destroyed widgets once the lists grow past this

    def __call__(self, key: str, **values: object) -> str:
        text = STRINGS[self.lang].get(key)
        if text is None:
            raise KeyError(f"no {self.lang} string for {key!r}")
        return text.format(**values) if values else text

    def bind(self, widget: tk.Misc, key: str, option: str = "text") -> None:
        """Label ``widget`` now and again whenever the language changes."""
        widget.configure({option: self(key)})  # type: ignore[call-arg]
        self._bound.append((widget, option, key))
        self._maybe_prune()

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(lang)`` after every language change (for text built on the fly).
        A widget's bound method is dropped once that widget is destroyed (a closed dialog)."""
        self._listeners.append(listener)
        self._maybe_prune()

    def _maybe_prune(self) -> None:
        """Dialogs come and go: without this, each one opened stayed referenced forever."""
        if len(self._bound) + len(self._listeners) < self._prune_at:
            return
        self._bound = [entry for entry in self._bound if _alive(entry[0])]
        self._listeners = [
            listener for listener in self._listeners if _alive(getattr(listener, "__self__", None))
        ]
        self._prune_at = max(64, 2 * (len(self._bound) + len(self._listeners)))

    def set_language(self, lang: str) -> None:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}")
        self.lang = lang
        for widget, option, key in self._bound:
            if widget.winfo_exists():
                widget.configure({option: self(key)})  # type: ignore[call-arg]
        for listener in self._listeners:
            listener(lang)


def _alive(owner: object) -> bool:
    """False for a destroyed widget; True for anything that is not a widget."""
    if not isinstance(owner, tk.Misc):
        return True
    try:
        return bool(owner.winfo_exists())
    except tk.TclError:  # its whole Tk is gone
        return False


def has_cjk_font(widget: tk.Misc) -> bool:
    """Whether the system has a font that can show Chinese (Tk falls back to it per glyph)."""
    import tkinter.font as tkfont

    families = [name.lower() for name in tkfont.families(widget)]
    return any(name.startswith(wanted) for name in families for wanted in CJK_FAMILIES)
