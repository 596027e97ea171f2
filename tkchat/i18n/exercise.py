"""The strings of the exercises: a pipeline of one's own that cannot be loaded or misbehaves
(``outside.*``, shown in the window and on the command line). The report of
``tkchat selftest``, which grades it, is :mod:`tkchat.i18n.selftest`."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "app.title.outside": " — your own pipeline: {mode}",
        "outside.not_found": "The pipeline file {path} does not exist.",
        "outside.syntax": "{path} is not valid Python: {message} (line {line}).",
        "outside.raised": "Importing {path} raised {error} (line {line}).",
        "outside.hangs": "Importing {path} did not finish within {seconds} s: is there an "
        "endless loop at the top level of the file?",
        "outside.no_class": "{path} has no class named {name} (classes in it: {found}).",
        "outside.not_class": "{name} in {path} is not a class.",
        "outside.protocol": "{name} in {path} does not fit the pipeline protocol: it needs "
        "{missing}.",
        "outside.init_raised": "Making a {name} from {path} raised {error} (line {line}).",
        "outside.fallback": "{problem} The window uses the fixed pipeline instead; fix the "
        "file and start tkchat again.",
        "outside.banner": "YOUR OWN PIPELINE “{mode}”. Grade it: tkchat selftest --mode {mode}",
        "outside.raised_in": "Your pipeline's {method}() raised {error} (line {line}); the "
        "answer was ended there.",
        "outside.interrupted": "Your pipeline's {method}() had not returned after {reason} "
        "and was interrupted; the answer was ended there.",
        "outside.tk_thread": "Tk was called from the thread “{thread}” ({call}, from {where}): "
        "only the main thread may touch the window, so tkchat stopped that thread there.",
    },
    "zh": {
        "app.title.outside": " —— 你自己的管线：{mode}",
        "outside.not_found": "管线文件 {path} 不存在。",
        "outside.syntax": "{path} 不是合法的 Python：{message}（第 {line} 行）。",
        "outside.raised": "导入 {path} 时抛出了 {error}（第 {line} 行）。",
        "outside.hangs": "导入 {path} 在 {seconds} 秒内没有结束：文件顶层是不是有死循环？",
        "outside.no_class": "{path} 里没有名为 {name} 的类（其中的类：{found}）。",
        "outside.not_class": "{path} 里的 {name} 不是一个类。",
        "outside.protocol": "{path} 里的 {name} 不符合管线协议：它需要 {missing}。",
        "outside.init_raised": "用 {path} 创建 {name} 时抛出了 {error}（第 {line} 行）。",
        "outside.fallback": "{problem} 窗口改用修好的管线（fixed）；改好文件后请重新启动 tkchat。",
        "outside.banner": "你自己的管线“{mode}”。评分：tkchat selftest --mode {mode}",
        "outside.raised_in": "你的管线的 {method}() 抛出了 {error}（第 {line} 行）；"
        "这条回答就此结束。",
        "outside.interrupted": "你的管线的 {method}() 过了 {reason} 仍未返回，已被中断；"
        "这条回答就此结束。",
        "outside.tk_thread": "线程“{thread}”调用了 Tk（{call}，来自 {where}）："
        "只有主线程可以操作窗口，所以 tkchat 在那里停止了这个线程。",
    },
}
