"""The pipeline view's strings (tkchat/ui/stages/): its lanes, controls and keys, in English
and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "menu.stages": "Pipeline stages",
        "stages.title": "tkchat — the pipeline, stage by stage",
        "stages.lane.worker": "The worker",
        "stages.lane.queue": "The queue",
        "stages.lane.tick": "The 16 ms tick",
        "stages.lane.main": "The main thread",
        "stages.lane.tk": "Tk",
        "stages.thread.worker": "worker thread",
        "stages.thread.queue": "between the threads",
        "stages.thread.tick": "main thread, in the loop",
        "stages.thread.main": "outside any tick",
        "stages.thread.tk": "insert, markdown, paint",
        "stages.worker.tokens": "tokens made: {tokens} · the latest: “{token}”",
        "stages.worker.none_main": "no worker: the main thread made {tokens} tokens itself",
        "stages.worker.idle": "waiting for a question",
        "stages.queue.depth": "events waiting: {queued} · pieces in the waiting chunk: "
        "{waiting} · merged so far: {merged}",
        "stages.tick.last": "ticks with news: {ticks} · the last one: drained {drained}, "
        "inserts {inserts}, held the loop {ms} ms",
        "stages.main.inserts": "inserts in a handler that never returned to the loop: "
        "{inserts} — no key, click or tick ran meanwhile",
        "stages.main.stepped": "inserts outside the tick: {inserts}, from a timer of its own "
        "in {runs} runs — the loop went on between them",
        "stages.main.free": "free: every insert came from a tick",
        "stages.tk.inserts": "inserts: {inserts} · characters on screen: {chars} · the last "
        "insert: {last}",
        "stages.tk.renders": " · whole-answer renders: {renders}, the last read {rendered} "
        "characters",
        "stages.tk.redraws": " · redraws forced: {redraws}",
        "stages.button.toggle": "Play / pause",
        "stages.button.back": "◀ Back",
        "stages.button.step_tick": "One tick ▶",
        "stages.button.step_token": "One token ▶",
        "stages.button.forward": "Forward ▶▶",
        "stages.speed.full": "Full",
        "stages.speed.slow": "1/{n}",
        "stages.playing": "playing",
        "stages.paused": "paused",
        "stages.caption": "{state} at {speed} · moment {shown} of {kept} · mode {mode}",
        "stages.no_token_steps": "Only a scripted or replayed answer steps one token at a time; "
        "→ steps one tick of any answer.",
        "stages.keys": "Keys: Space play/pause · → one tick · ↓ one token · ← back · "
        "↑ forward · 1 full speed · 2 at 1/10 · 3 at 1/50 · Esc back to the chat (F9 "
        "there brings this view back). Paused, the drawing and the tick stand still; the "
        "window does not.",
    },
    "zh": {
        "menu.stages": "流水线各阶段",
        "stages.title": "tkchat — 流水线，一个阶段一个阶段看",
        "stages.lane.worker": "工作线程",
        "stages.lane.queue": "队列",
        "stages.lane.tick": "16 毫秒刷新",
        "stages.lane.main": "主线程",
        "stages.lane.tk": "Tk",
        "stages.thread.worker": "后台线程",
        "stages.thread.queue": "两个线程之间",
        "stages.thread.tick": "主线程，在事件循环里",
        "stages.thread.main": "不在任何一次刷新里",
        "stages.thread.tk": "插入、markdown、绘制",
        "stages.worker.tokens": "已生成 {tokens} 个 token · 最新的：“{token}”",
        "stages.worker.none_main": "没有工作线程：主线程自己生成了 {tokens} 个 token",
        "stages.worker.idle": "等待提问",
        "stages.queue.depth": "{queued} 个事件在等待 · 等待中的块里有 {waiting} 段 · "
        "到目前合并了 {merged} 段",
        "stages.tick.last": "{ticks} 次有新内容的刷新 · 最近一次取走 {drained} 个事件，"
        "做了 {inserts} 次插入，占用事件循环 {ms} 毫秒",
        "stages.main.inserts": "{inserts} 次插入发生在一个没有回到事件循环的处理函数里："
        "这期间按键、点击和刷新都没有运行",
        "stages.main.stepped": "刷新之外的插入 {inserts} 次，来自它自己的定时器，分 {runs} 次："
        "两次之间事件循环照常运行",
        "stages.main.free": "空闲：每次插入都来自刷新",
        "stages.tk.inserts": "{inserts} 次插入 · 屏幕上 {chars} 个字符 · "
        "最近一次插入 {last} 个字符",
        "stages.tk.renders": " · 整个回答渲染了 {renders} 次，最近一次读了 {rendered} 个字符",
        "stages.tk.redraws": " · 强制重绘 {redraws} 次",
        "stages.button.toggle": "播放 / 暂停",
        "stages.button.back": "◀ 后退",
        "stages.button.step_tick": "一次刷新 ▶",
        "stages.button.step_token": "一个 token ▶",
        "stages.button.forward": "前进 ▶▶",
        "stages.speed.full": "全速",
        "stages.speed.slow": "1/{n}",
        "stages.playing": "播放中",
        "stages.paused": "已暂停",
        "stages.caption": "{state}，速度 {speed} · 第 {shown} 个时刻，共 {kept} 个 · 模式 {mode}",
        "stages.no_token_steps": "只有脚本回答或回放的录制能一个 token 一个 token 地走；"
        "→ 对任何回答都能走一次刷新。",
        "stages.keys": "按键：空格 播放/暂停 · → 一次刷新 · ↓ 一个 token · ← 后退 · ↑ 前进 · "
        "1 全速 · 2 为 1/10 · 3 为 1/50 · Esc 回到对话（在那里按 F9 再回到这里）。"
        "暂停时画面和刷新停住，窗口照常响应。",
    },
}
