"""The strings of record and replay (``tkchat record`` / ``tkchat replay``): why a recording
cannot be used, one sentence each, and what the window says while it records or replays."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "recording.unreadable": "The recording {path} cannot be read: {reason}.",
        "recording.too_big": "{path} is larger than {limit}: it is not a tkchat recording.",
        "recording.empty": "{path} is empty: a tkchat recording starts with a header line.",
        "recording.line_too_long": "Line {line} of {path} is longer than {limit} bytes: it is "
        "not a tkchat recording, or a damaged one.",
        "recording.not_json": "Line {line} of {path} is not JSON: it is not a tkchat "
        "recording, or a damaged one.",
        "recording.no_header": "{path} does not start with a tkchat recording header (line 1 "
        'must say "format": "tkchat-recording").',
        "recording.version": "{path} is a version {version} recording, and this tkchat reads "
        "version {supported}: replay it with the tkchat that recorded it.",
        "recording.bad_field": "Line {line} of {path} is damaged: {name} must be {expected}.",
        "recording.unknown_kind": "Line {line} of {path} has an unknown kind {kind}.",
        "recording.backwards": "Line {line} of {path} goes back in time ({t} s after {previous} "
        "s): the lines of a recording are in time order.",
        "recording.after_end": "Line {line} of {path} comes after the answer's end: a recording "
        "ends with its done or error line.",
        "recording.no_end": "{path} has no done or error line: the recording was cut short.",
        "recording.saved": "Recorded {tokens} tokens over {seconds} s into {path}.",
        "recording.not_saved": "The recording could not be written to {path}: {reason}.",
        "recording.replaying": "REPLAY of a run recorded in mode {mode} on {started_at} "
        "({machine}): the model's tokens at their recorded pace, through this window's "
        "pipeline ({now}).",
        "recording.recording": "RECORDING this run into {path}: it is written when the "
        "answer ends or the window closes.",
    },
    "zh": {
        "recording.unreadable": "无法读取录制文件 {path}：{reason}。",
        "recording.too_big": "{path} 大于 {limit}，不是 tkchat 的录制文件。",
        "recording.empty": "{path} 是空的：tkchat 的录制文件以一行文件头开始。",
        "recording.line_too_long": "{path} 的第 {line} 行超过 {limit} 字节：它不是 tkchat "
        "的录制文件，或者已经损坏。",
        "recording.not_json": "{path} 的第 {line} 行不是 JSON：它不是 tkchat 的录制文件，"
        "或者已经损坏。",
        "recording.no_header": "{path} 的开头不是 tkchat 录制文件头（第 1 行应当写着 "
        '"format": "tkchat-recording"）。',
        "recording.version": "{path} 是第 {version} 版的录制文件，而这个 tkchat 只能读第 "
        "{supported} 版：请用录制它的那个 tkchat 回放。",
        "recording.bad_field": "{path} 的第 {line} 行已损坏：{name} 应当是 {expected}。",
        "recording.unknown_kind": "{path} 的第 {line} 行的类型 {kind} 无法识别。",
        "recording.backwards": "{path} 的第 {line} 行时间倒退了（{t} 秒，前一行是 {previous} "
        "秒）：录制文件的各行按时间顺序排列。",
        "recording.after_end": "{path} 的第 {line} 行出现在回答结束之后：录制文件以 done 或 "
        "error 行结尾。",
        "recording.no_end": "{path} 没有 done 或 error 行：录制被中途截断了。",
        "recording.saved": "已把 {tokens} 个 token、{seconds} 秒的过程录制到 {path}。",
        "recording.not_saved": "录制无法写入 {path}：{reason}。",
        "recording.replaying": "回放：{started_at} 在 {machine} 上以 {mode} 模式录制的一次运行："
        "模型的 token 按录制时的节奏到达，经过本窗口的流水线（{now}）。",
        "recording.recording": "正在把这次运行录制到 {path}：回答结束或窗口关闭时写入。",
    },
}
