"""The strings of the lesson panel, in English and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "lesson.setup": "Set up the demo",
        "lesson.plan": "Class plan",
        "lesson.demo": "Demo: mode {mode}, {backend} backend",
        "lesson.demo_rate": "Demo: mode {mode}, {backend} backend at {rate} tokens/s",
        "lesson.watch": "Watch",
        "lesson.watch.heartbeat": "the heartbeat clock in the health bar",
        "lesson.watch.lag": "the event-loop lag in the health bar",
        "lesson.watch.rates": "tokens/s next to updates/s in the health bar",
        "lesson.watch.transcript": "the answer as it arrives in the transcript",
        "lesson.expected": "expected",
        "lesson.now": "now ({metric})",
        "lesson.metric.lag_max_ms": "longest lag",
        "lesson.metric.lag_p99_ms": "lag p99",
        "lesson.metric.long_tasks": "long tasks",
        "lesson.metric.tokens_per_s": "tokens/s",
        "lesson.metric.ui_updates_per_s": "UI updates/s",
        "lesson.metric.ttft_ms": "time to the first token",
        "lesson.metric.cancel_p99_ms": "Stop's delay p99",
        "lesson.metric.render_slice_max_ms": "the longest render slice",
        "lesson.metric.rss_peak_mb": "peak memory",
        "lesson.metric.merged": "pieces merged so far",
        "lesson.metric.chunks": "chunks drawn",
        "lesson.metric.shuffled": "events shuffled",
        "lesson.metric.duplicated": "events duplicated",
        "lesson.metric.delayed": "events delayed",
        "lesson.metric.dropped": "events dropped",
        "lesson.metric.held_back": "events held back until their turn",
        "lesson.metric.duplicates_dropped": "duplicates dropped",
        "lesson.metric.stale_dropped": "stale events dropped",
        "lesson.metric.gaps": "answers ended by a gap",
        "lesson.line": "{label}: {text}",
        "lesson.no_value": "not measured yet",
        "lesson.unavailable": "The lessons could not be loaded: {error}",
        "lesson.copy_code": "Copy code",
        "predict.ask": "Predict",
        "predict.show": "Show the answer",
        "predict.picked": "The class predicted: {choice}",
        "predict.none_picked": "The class picked no answer.",
        "predict.observed_hidden": "*What you see: after the prediction.*",
        "lesson.kept.run": (
            "The figures this lesson quotes were measured on {date} {where}, by `{command}`, "
            "and are kept in {file}. The live figures under the lesson are this machine's, "
            "now: a slower or busier machine shows others."
        ),
        "lesson.kept.machine": "on {machine} (load {load}, idle lag p99 {idle})",
        "lesson.kept.unknown_machine": "(the machine and its load were not recorded)",
        "bench.meaning.failed": (
            "A claim that FAILS means that on this machine, now, the demo does not show what "
            "its lesson says. Do not show that demo in class before reading the lesson again: "
            "if it fails on a quiet machine too, the code the lesson describes has changed and "
            "the lesson is out of date (tell whoever keeps the lessons)."
        ),
        "bench.meaning.busy": (
            "A claim not judged means this machine was too busy to tell: the window waited for "
            "a CPU that other programs held. Close other programs and run the check again; in "
            "class, a busy laptop shows the broken demos' freezes all the same, but the fixed "
            "window's figures less cleanly."
        ),
        "bench.meaning.read_only": (
            "Nothing was written: the lessons keep the figures they quote. "
            "`tkchat bench --lessons --write` keeps this run's instead, on a quiet machine only."
        ),
        "bench.serve_loop.runs": (
            "backend {backend}, one answer of up to {tokens} tokens per server"
        ),
        "bench.serve_loop.broken": (
            "(broken = BROKEN ON PURPOSE: /chat iterates the model on the event loop "
            "(the article's version))"
        ),
        "bench.serve_loop.ratio": "broken / fixed loop lag max: {ratio} x",
        "timeline.caption": "event-loop lag, last {seconds} s",
        "timeline.long_task": "{ms} ms: long task",
        "timeline.text": "text",
        "timeline.now": "now",
        "timeline.ago": "-{seconds} s",
        "timeline.ms": "{value} ms",
        "timeline.s": "{value} s",
        "timeline.recorded": "- - - recorded run",
        "timeline.frozen_ms": "frozen {ms} ms",
        "timeline.frozen_s": "frozen {seconds} s",
        "timeline.pause": "‖ pause",
        "timeline.live": "▶ live",
        "timeline.paused": "paused · ← → or drag: scroll back",
        "timeline.paused_short": "paused · ← →",
        "timeline.paused_now": "paused",
    },
    "zh": {
        "lesson.setup": "准备演示",
        "lesson.plan": "课堂计划",
        "lesson.demo": "演示：{mode} 模式，{backend} 后端",
        "lesson.demo_rate": "演示：{mode} 模式，{backend} 后端，每秒 {rate} 个 token",
        "lesson.watch": "留意",
        "lesson.watch.heartbeat": "状态条上的心跳时钟",
        "lesson.watch.lag": "状态条上的事件循环延迟",
        "lesson.watch.rates": "状态条上并排的“模型 tokens/s”与“窗口每秒更新”",
        "lesson.watch.transcript": "对话记录里逐字到达的回答",
        "lesson.expected": "预期",
        "lesson.now": "当前（{metric}）",
        "lesson.metric.lag_max_ms": "最长延迟",
        "lesson.metric.lag_p99_ms": "延迟 p99",
        "lesson.metric.long_tasks": "长任务次数",
        "lesson.metric.tokens_per_s": "tokens/s",
        "lesson.metric.ui_updates_per_s": "界面每秒更新次数",
        "lesson.metric.ttft_ms": "首个 token 的等待时间",
        "lesson.metric.cancel_p99_ms": "停止的延迟 p99",
        "lesson.metric.render_slice_max_ms": "最长的渲染片段",
        "lesson.metric.rss_peak_mb": "内存峰值",
        "lesson.metric.merged": "累计合并的片段",
        "lesson.metric.chunks": "绘制的片段数",
        "lesson.metric.shuffled": "被打乱的事件",
        "lesson.metric.duplicated": "被重复的事件",
        "lesson.metric.delayed": "被延迟的事件",
        "lesson.metric.dropped": "被丢掉的事件",
        "lesson.metric.held_back": "按序等待的事件",
        "lesson.metric.duplicates_dropped": "丢弃的重复事件",
        "lesson.metric.stale_dropped": "丢弃的过期事件",
        "lesson.metric.gaps": "因缺事件而结束的回答",
        "lesson.line": "{label}：{text}",
        "lesson.no_value": "尚未测得",
        "lesson.unavailable": "无法加载课程：{error}",
        "lesson.copy_code": "复制代码",
        "predict.ask": "先猜一猜",
        "predict.show": "揭晓答案",
        "predict.picked": "全班的预测：{choice}",
        "predict.none_picked": "全班没有选答案。",
        "predict.observed_hidden": "*「你会看到」：预测之后再看。*",
        "lesson.kept.run": (
            "本课引用的数字是 {date} {where}用 `{command}` 测得的，保存在 {file}。"
            "课程下方的实时数字是这台机器此刻的数字：机器更慢或更忙时，数字也不同。"
        ),
        "lesson.kept.machine": "在 {machine} 上（负载 {load}，空闲时延迟 p99 {idle}）",
        "lesson.kept.unknown_machine": "（当时没有记录机器与负载）",
        "bench.meaning.failed": (
            "标为 FAILS 的论断表示：在这台机器上、此刻，演示没有显示课程所说的现象。"
            "重读这一课之前，不要在课上演示它：如果在空闲的机器上也失败，"
            "说明课程所讲的代码已经改了，课程过时了（请告诉维护课程的人）。"
        ),
        "bench.meaning.busy": (
            "未判定的论断表示：这台机器太忙，无法判断——窗口在等其他程序占着的 CPU。"
            "关掉其他程序后再检查一次；在课堂上，忙碌的笔记本照样能演示出错误模式的冻结，"
            "只是修好的窗口的数字没那么干净。"
        ),
        "bench.meaning.read_only": (
            "没有写入任何文件：课程保留它们引用的数字。"
            "`tkchat bench --lessons --write` 才会改为保存这次的数字，而且只在空闲的机器上。"
        ),
        "bench.serve_loop.runs": (
            "后端 {backend}，每个服务器流式输出一个回答，最多 {tokens} 个 token"
        ),
        "bench.serve_loop.broken": (
            "（broken 是故意写坏的服务器：/chat 在事件循环上逐个迭代模型，即文章里的写法；"
            "fixed 是修好的 tkchat serve）"
        ),
        "bench.serve_loop.ratio": "循环延迟最大值：broken 是 fixed 的 {ratio} 倍",
        "timeline.caption": "事件循环延迟，最近 {seconds} 秒",
        "timeline.long_task": "{ms} 毫秒：长任务",
        "timeline.text": "文字",
        "timeline.now": "现在",
        "timeline.ago": "-{seconds} 秒",
        "timeline.ms": "{value} 毫秒",
        "timeline.s": "{value} 秒",
        "timeline.recorded": "- - - 录制的运行",
        "timeline.frozen_ms": "冻结 {ms} 毫秒",
        "timeline.frozen_s": "冻结 {seconds} 秒",
        "timeline.pause": "‖ 暂停",
        "timeline.live": "▶ 实时",
        "timeline.paused": "已暂停 · ← → 或拖动：往回看",
        "timeline.paused_short": "已暂停 · ← →",
        "timeline.paused_now": "暂停时",
    },
}
