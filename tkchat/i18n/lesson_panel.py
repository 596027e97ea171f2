"""The strings of the lesson panel, in English and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "lesson.pick": "Lesson",
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
        "lesson.line": "{label}: {text}",
        "lesson.no_value": "not measured yet",
        "lesson.unavailable": "The lessons could not be loaded: {error}",
    },
    "zh": {
        "lesson.pick": "课程",
        "lesson.setup": "准备演示",
        "lesson.plan": "课堂计划",
        "lesson.demo": "演示：{mode} 模式，{backend} 后端",
        "lesson.demo_rate": "演示：{mode} 模式，{backend} 后端，每秒 {rate} 个 token",
        "lesson.watch": "留意",
        "lesson.watch.heartbeat": "状态条上的心跳时钟",
        "lesson.watch.lag": "状态条上的事件循环延迟",
        "lesson.watch.rates": "状态条上并排的 tokens/s 与 updates/s",
        "lesson.watch.transcript": "对话记录里逐字到达的回答",
        "lesson.expected": "预期",
        "lesson.now": "当前（{metric}）",
        "lesson.line": "{label}：{text}",
        "lesson.no_value": "尚未测得",
        "lesson.unavailable": "无法加载课程：{error}",
    },
}
