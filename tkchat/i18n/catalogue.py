"""The strings of the model catalogue (Model > Get a model…, ``tkchat models``), in English and
Chinese, including one sentence for every way a download can fail
(``catalogue.error.<kind>``, the kinds of :mod:`tkchat.models.download_child` and
:mod:`tkchat.models.download_job`)."""

from __future__ import annotations

# Every failure kind has a sentence in both languages (a test checks it).
ERROR_KINDS = (
    "no_network",
    "offline",
    "not_found",
    "gated",
    "server_error",
    "not_a_hub",
    "no_checksum",
    "checksum_mismatch",
    "size_mismatch",
    "no_space",
    "disk_full",
    "busy",
    "stalled",
    "cut",
    "too_slow",
    "short",
    "damaged",
    "cancelled",
    "crashed",
    "bad_endpoint",
    "failed",
)

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "menu.get_model": "Get a model…",
        "catalogue.title": "Get a model",
        "catalogue.column.name": "Model",
        "catalogue.column.size": "Size",
        "catalogue.column.memory": "Memory",
        "catalogue.column.languages": "Answers in",
        "catalogue.column.licence": "Licence",
        "catalogue.column.state": "On this computer",
        "catalogue.lang.en": "English",
        "catalogue.lang.zh": "Chinese",
        "catalogue.state.downloaded": "Downloaded",
        "catalogue.state.partial": "{done} of {size} downloaded",
        "catalogue.state.too_big": "Too big for {free} free",
        "catalogue.state.fits": "Fits",
        "catalogue.unknown": "?",
        "catalogue.details": "{about}\n{repo} · {file} · {licence}",
        "catalogue.checksum.known": "SHA-256 checked against the hub's and the catalogue's.",
        "catalogue.checksum.hub": "SHA-256 checked against the hub's (the catalogue has none).",
        "catalogue.endpoint": "Download from:",
        "catalogue.endpoint_hint": "In mainland China, the mirror https://hf-mirror.com is "
        "usually much faster than huggingface.co.",
        "catalogue.download": "Download and use",
        "catalogue.use": "Use this model",
        "catalogue.cancel": "Cancel download",
        "catalogue.close": "Close",
        "catalogue.memory_free": "This computer has {free} of memory free.",
        "catalogue.starting": "Asking {endpoint} about {file}…",
        "catalogue.progress": "{done} of {total}",
        "catalogue.progress.resumed": " (continued from {resumed})",
        "catalogue.progress.speed": " · {speed}/s",
        "catalogue.progress.left": " · {left} left",
        "catalogue.verifying": "Checking the file's SHA-256: {done} of {total}",
        "catalogue.done": "{title} is downloaded and checked; loading it now.",
        "catalogue.already": "{title} was already downloaded; loading it now.",
        "catalogue.status.downloading": "Downloading {title}: {percent}",
        # short enough for the status line at 1280 px: it was cut ("…get a larger…")
        "catalogue.hint": "Ready. Larger models answer better, and in Chinese: "
        "Model ▸ Get a model…",
        "catalogue.error.no_network": "Cannot reach {endpoint}: check the network connection, "
        "or the address to download from.",
        "catalogue.error.offline": "HF_HUB_OFFLINE is set, so nothing is downloaded; "
        "unset it to download.",
        "catalogue.error.not_found": "{endpoint} has no file {file} in {repo} (HTTP 404): "
        "the name is wrong, or this mirror does not carry it.",
        "catalogue.error.gated": "{repo} asks for a Hugging Face account and accepted terms; "
        "tkchat only downloads open models.",
        "catalogue.error.server_error": "{endpoint} answered with an error (HTTP {status}); "
        "try again later, or another address to download from.",
        "catalogue.error.not_a_hub": "{endpoint} answered with a web page, not the model: it is "
        "not a Hugging Face hub or mirror (a network login page?).",
        "catalogue.error.no_checksum": "{endpoint} did not give the file's SHA-256, so it "
        "cannot be checked; nothing was downloaded.",
        "catalogue.error.checksum_mismatch": "{endpoint} offers a different file than the "
        "catalogue names (its SHA-256 differs); nothing was downloaded.",
        "catalogue.error.size_mismatch": "{endpoint} offers a file of {got}, the catalogue "
        "says {size}; nothing was downloaded.",
        "catalogue.error.no_space": "Not enough free disk space: {need} needed in {folder}, "
        "{free} free. Nothing was downloaded.",
        "catalogue.error.disk_full": "The disk holding {folder} filled up: {done} are kept; "
        "free some space and Download again to continue.",
        "catalogue.error.busy": "This file is already being downloaded, by another tkchat "
        "window or `tkchat models get`.",
        "catalogue.error.stalled": "The download stalled: no data for {seconds} s. "
        "{done} are kept; Download again to continue.",
        "catalogue.error.cut": "The connection broke {tries} times in a row without real "
        "progress; {done} are kept: Download again to continue, or try another address.",
        "catalogue.error.too_slow": "{endpoint} sent less than {rate}/s over {seconds} s; "
        "{done} are kept: Download again to continue, or try another address.",
        "catalogue.error.short": "The server sent only {got} of {size}; the file was deleted "
        "and nothing was loaded. Download again.",
        "catalogue.error.damaged": "The downloaded file is damaged (its SHA-256 is not the "
        "hub's): it was deleted and nothing was loaded. Download again.",
        "catalogue.error.cancelled": "Download cancelled. {done} are kept: the next Download "
        "continues from there.",
        "catalogue.error.crashed": "The download stopped unexpectedly (exit code {code}); "
        "{done} are kept: Download again to continue.",
        "catalogue.error.bad_endpoint": "“{endpoint}” is not a web address to download from; "
        "it should look like https://hf-mirror.com.",
        "catalogue.error.failed": "The download failed: {detail}",
        "catalogue.cli.none": "No model called {name} in the catalogue. `tkchat models list` "
        "shows the names.",
        "catalogue.cli.saved": "Saved to {path}",
        "catalogue.seconds": "{s} s",
        "catalogue.minutes": "{m} min {s} s",
        "catalogue.hours": "{h} h {m} min",
    },
    "zh": {
        "menu.get_model": "获取模型……",
        "catalogue.title": "获取模型",
        "catalogue.column.name": "模型",
        "catalogue.column.size": "下载大小",
        "catalogue.column.memory": "内存",
        "catalogue.column.languages": "擅长语言",
        "catalogue.column.licence": "许可证",
        "catalogue.column.state": "本机状态",
        "catalogue.lang.en": "英文",
        "catalogue.lang.zh": "中文",
        "catalogue.state.downloaded": "已下载",
        "catalogue.state.partial": "已下载 {done} / {size}",
        "catalogue.state.too_big": "太大：可用内存仅 {free}",
        "catalogue.state.fits": "可以运行",
        "catalogue.unknown": "？",
        "catalogue.details": "{about}\n{repo} · {file} · {licence}",
        "catalogue.checksum.known": "SHA-256 会与模型站和目录中的值核对。",
        "catalogue.checksum.hub": "SHA-256 会与模型站给出的值核对（目录中没有）。",
        "catalogue.endpoint": "下载地址：",
        "catalogue.endpoint_hint": "在中国大陆，镜像站 https://hf-mirror.com 通常比 "
        "huggingface.co 快得多。",
        "catalogue.download": "下载并使用",
        "catalogue.use": "使用这个模型",
        "catalogue.cancel": "取消下载",
        "catalogue.close": "关闭",
        "catalogue.memory_free": "本机可用内存 {free}。",
        "catalogue.starting": "正在向 {endpoint} 查询 {file}……",
        "catalogue.progress": "已下载 {done}，共 {total}",
        "catalogue.progress.resumed": "（从 {resumed} 处继续）",
        "catalogue.progress.speed": " · {speed}/秒",
        "catalogue.progress.left": " · 还剩 {left}",
        "catalogue.verifying": "正在核对文件的 SHA-256：{done} / {total}",
        "catalogue.done": "{title} 已下载并核对无误，正在加载。",
        "catalogue.already": "{title} 之前已下载，正在加载。",
        "catalogue.status.downloading": "正在下载 {title}：{percent}",
        "catalogue.hint": "已就绪。更大的模型回答更好，也能用中文：模型 ▸ 获取模型……",
        "catalogue.error.no_network": "无法连接 {endpoint}：请检查网络连接或下载地址。",
        "catalogue.error.offline": "已设置 HF_HUB_OFFLINE，因此不会下载；取消该设置后即可下载。",
        "catalogue.error.not_found": "{endpoint} 上没有 {repo} 中的文件 {file}（HTTP 404）："
        "名称有误，或该镜像没有这个文件。",
        "catalogue.error.gated": "{repo} 需要 Hugging Face 账号并同意条款；"
        "tkchat 只下载开放的模型。",
        "catalogue.error.server_error": "{endpoint} 返回错误（HTTP {status}）；请稍后再试，"
        "或换一个下载地址。",
        "catalogue.error.not_a_hub": "{endpoint} 返回的是网页而不是模型：它不是 Hugging Face "
        "模型站或镜像（也许是网络登录页面？）。",
        "catalogue.error.no_checksum": "{endpoint} 没有给出文件的 SHA-256，无法核对；没有下载。",
        "catalogue.error.checksum_mismatch": "{endpoint} 提供的文件与目录中的不同"
        "（SHA-256 不一致）；没有下载。",
        "catalogue.error.size_mismatch": "{endpoint} 提供的文件大小为 {got}，目录中为 {size}；"
        "没有下载。",
        "catalogue.error.no_space": "磁盘空间不足：{folder} 需要 {need}，只有 {free} 可用。"
        "没有下载。",
        "catalogue.error.disk_full": "{folder} 所在的磁盘已满：已下载的 {done} 会保留；"
        "腾出空间后再次下载即可继续。",
        "catalogue.error.busy": "这个文件正在下载中"
        "（由另一个 tkchat 窗口或 `tkchat models get`）。",
        "catalogue.error.stalled": "下载停滞：{seconds} 秒内没有收到数据。已下载的 {done} "
        "会保留；再次下载即可继续。",
        "catalogue.error.cut": "连接连续中断了 {tries} 次，几乎没有进展；已下载的 {done} 会保留："
        "再次下载即可继续，或换一个下载地址。",
        "catalogue.error.too_slow": "{endpoint} 在 {seconds} 秒内的速度低于 {rate}/s；"
        "已下载的 {done} 会保留：再次下载即可继续，或换一个下载地址。",
        "catalogue.error.short": "服务器只发送了 {got} / {size}；文件已删除，没有加载任何模型。"
        "请重新下载。",
        "catalogue.error.damaged": "下载的文件已损坏（SHA-256 与模型站的不一致）：文件已删除，"
        "没有加载任何模型。请重新下载。",
        "catalogue.error.cancelled": "下载已取消。已下载的 {done} 会保留，下次下载从那里继续。",
        "catalogue.error.crashed": "下载意外中止（退出码 {code}）；已下载的 {done} 会保留："
        "再次下载即可继续。",
        "catalogue.error.bad_endpoint": "“{endpoint}”不是可用的下载地址；"
        "应当形如 https://hf-mirror.com。",
        "catalogue.error.failed": "下载失败：{detail}",
        "catalogue.cli.none": "目录中没有名为 {name} 的模型。`tkchat models list` 会列出名称。",
        "catalogue.cli.saved": "已保存到 {path}",
        "catalogue.seconds": "{s} 秒",
        "catalogue.minutes": "{m} 分 {s} 秒",
        "catalogue.hours": "{h} 小时 {m} 分",
    },
}
