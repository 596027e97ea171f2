"""The strings of the conversation settings dialog, in English and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "settings.title": "Chat settings",
        "settings.conversation": "This conversation",
        "settings.system_prompt": "System prompt:",
        "settings.temperature": "Temperature:",
        "settings.top_p": "Top-p:",
        "settings.max_tokens": "Max tokens:",
        "settings.seed": "Seed:",
        "settings.sampling_hint": "The defaults suit a small model: a low temperature keeps "
        "a 135M model on topic.",
        "settings.window": "Window",
        "settings.font_size": "Font size (pt):",
        "settings.save": "Save",
        "settings.cancel": "Cancel",
        "settings.reset": "Reset to defaults",
        "settings.range": "{low} – {high}",
        "settings.seed_hint": "blank = random each time",
        "settings.font_hint": "default {size}",
        "settings.error.number": "Enter a number from {low} to {high}.",
        "settings.error.integer": "Enter a whole number from {low} to {high}.",
        "settings.error.seed": "Leave blank, or enter a whole number from 0 to {high}.",
        "settings.context": "Context (tokens):",
        "settings.context_hint": "blank = automatic ({automatic}) for {model}; "
        "applies when it loads again",
        "settings.error.context": "Leave blank, or enter a whole number from {low} to {high}.",
        "settings.gpu": "GPU layers:",
        "settings.gpu_hint.with": "blank = automatic: all of them (this llama-cpp-python "
        "can offload to the GPU); 0 = the CPU only; applies when a model loads again",
        "settings.reload": "Save and reload the model",
        "settings.reload_hint": "now rather than at its next load; an answer being written "
        "is stopped, the conversation stays",
        "settings.gpu_hint.without": "blank = automatic: none — CPU only: this "
        "llama-cpp-python was built without GPU support (docs/using.md, “Your GPU”)",
        "settings.error.gpu": "Leave blank, or enter all, or a whole number of layers from 0.",
        "settings.kept": "Kept chats (MB):",
        "settings.kept_hint": "memory for chats the model read earlier, so that one opened "
        "again or a model switched back to reads only what is new; 0 = none; default {default}",
    },
    "zh": {
        "settings.title": "对话设置",
        "settings.conversation": "本对话",
        "settings.system_prompt": "系统提示词：",
        "settings.temperature": "温度：",
        "settings.top_p": "核采样（top-p）：",
        "settings.max_tokens": "最多生成 token 数：",
        "settings.seed": "随机种子：",
        "settings.sampling_hint": "默认值是为小模型调的：温度低一些，135M 的小模型才不容易跑题。",
        "settings.window": "窗口",
        "settings.font_size": "字号（磅）：",
        "settings.save": "保存",
        "settings.cancel": "取消",
        "settings.reset": "恢复默认值",
        "settings.range": "{low} – {high}",
        "settings.seed_hint": "留空则每次随机",
        "settings.font_hint": "默认 {size}",
        "settings.error.number": "请输入 {low} 到 {high} 之间的数。",
        "settings.error.integer": "请输入 {low} 到 {high} 之间的整数。",
        "settings.error.seed": "请留空，或输入 0 到 {high} 之间的整数。",
        "settings.context": "上下文（token）：",
        "settings.context_hint": "留空则自动（{automatic}），仅对 {model}；重新加载时生效",
        "settings.error.context": "请留空，或输入 {low} 到 {high} 之间的整数。",
        "settings.gpu": "GPU 层数：",
        "settings.gpu_hint.with": "留空则自动：全部放到 GPU 上（这个 llama-cpp-python 支持 GPU"
        "卸载）；0 表示只用 CPU；重新加载模型时生效",
        "settings.reload": "保存并重新加载模型",
        "settings.reload_hint": "现在就生效，不必等下次加载；正在生成的回答会停下，对话保留",
        "settings.gpu_hint.without": "留空则自动：不放 —— 只用 CPU：这个 llama-cpp-python "
        "编译时没有 GPU 支持（见 docs/using.md 的“你的 GPU”）",
        "settings.error.gpu": "请留空，或输入 all，或从 0 起的整数层数。",
        "settings.kept": "保留的对话（MB）：",
        "settings.kept_hint": "用来保留模型读过的对话的内存：再打开它或切回它的模型时，"
        "只读新的部分；0 表示不保留；默认 {default}",
    },
}
