"""The strings of ``tkchat selftest``'s report (``selftest.*``), which grades a pipeline, in
English and Chinese. Printed by the grader's process, which has no window."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "selftest.no_xdotool": "tkchat selftest needs xdotool (apt-get install xdotool).",
        "selftest.title": "tkchat selftest — mode {mode}, backend {backend}{rate}",
        "selftest.rate": " at {rate} tokens/s",
        "selftest.file": "File {path}, SHA-256 {sha256}",
        "selftest.isolated": "The pipeline ran in a process of its own, with a throwaway home "
        "and data folder; this process graded it and never imported it.",
        "selftest.fenced": "Fenced: it had namespaces of its own (no network, no signal "
        "reaching this process, nothing it started left running after it); it could still "
        "read the teacher's files by path.",
        "selftest.fenced_hidden": "Fenced: it had namespaces of its own (no network, no "
        "signal reaching this process, nothing it started left running after it), and the "
        "teacher's home, tkchat's data (the teacher's chats) and the class folder were hidden "
        "from it: it saw only Python, tkchat, the model, its own folder and its own home.",
        "selftest.unfenced": "Not fenced (this system offers no user namespaces): it could "
        "signal this process, and a program it started in a session of its own could outlive "
        "the run.",
        "selftest.limit": "Each answer has a wall-clock limit of {seconds} s: a window still "
        "busy then is interrupted (or stopped), and what it had not handled counts with "
        "the time it took.",
        "selftest.retry": "The machine was too busy to judge {names} (what was late fell "
        "mostly outside the pipeline's calls): measuring again, attempt {attempt} of {total}.",
        "selftest.section.questions": "The four questions (each within 100 ms):",
        "selftest.section.targets": "The benchmark's targets, against this run's baselines "
        "(lag p99 idle {idle} ms, with the model running alone {base} ms; the model alone "
        "{raw} tokens/s):",
        "selftest.pass": "PASS",
        "selftest.fail": "FAIL",
        "selftest.busy": "BUSY",
        "selftest.question.q1": "1. a click on another button while streaming",
        "selftest.question.q2": "2. the model dies mid-answer",
        "selftest.question.q3": "3. scrolling and keystrokes while a long answer streams",
        "selftest.question.q4": "4. Stop, pressed mid-answer",
        "selftest.target.lag_p99": "event-loop lag p99 <= {bound} ms",
        "selftest.target.lag_max": "no call into the pipeline holds the event loop over "
        "{bound} ms (the bench's lag max)",
        "selftest.target.long_tasks": "no call into the pipeline holds the event loop over "
        "{threshold} ms (the bench's long tasks)",
        "selftest.target.tokens": "tokens/s >= {ratio} x the model with no window",
        "selftest.target.text_wait": "text reaches the screen within a frame of the model "
        "giving it (90 % of tokens, the loop free) <= {bound} ms",
        "selftest.target.tk_thread": "Tk called only from the main thread",
        "selftest.target.raised": "nothing raised out of the pipeline",
        "selftest.target.figures": "the window's own figures agree with what was seen from "
        "outside (its heartbeat, the X server)",
        "selftest.ms": "{ms} ms",
        "selftest.colon": ": ",
        "selftest.detail.q1": "worst click handled {ms} ms after it was made",
        "selftest.detail.q3": "worst input handled {ms} ms after it was made",
        "selftest.detail.q2": "error shown {shown} ms after the crash, a click handled {click} "
        "ms after it was made; {message}",
        "selftest.detail.q2_never": "the model never ran long enough to die",
        "selftest.detail.q4": "Stop handled {ms} ms after the click; after it, {text} "
        "characters appeared and the model gave {tokens} more tokens, leaving its loop "
        "{loop} ms after Stop",
        "selftest.detail.q4_never": "Stop was never handled",
        "selftest.never": "never",
        "selftest.message": "message: “{message}”",
        "selftest.no_message": "no clear error message",
        "selftest.note.no_text": "no text of the answer reached the screen within {seconds} s",
        "selftest.note.interrupted": "the window was still busy {seconds} s after Enter: the "
        "self-test interrupted it",
        "selftest.note.stopped": "the answer had not ended {seconds} s after Enter: the "
        "self-test pressed Stop",
        "selftest.note.never_died": "the model never gave the {tokens} tokens it was to die "
        "after (the answer ended first, or {seconds} s passed)",
        "selftest.note.unhandled": "{missing} of the {events} inputs were never handled (they "
        "count as infinitely late)",
        "selftest.note.tk_blocked": "a Tk call from another thread was stopped, and the answer "
        "could not go on: the self-test pressed Stop",
        "selftest.note.inside": "of the {total} ms it waited, your pipeline's calls held the "
        "loop {inside} ms (the most in {method}()): late on an idle machine too",
        "selftest.note.outside": "of the {total} ms it waited, your pipeline's calls held the "
        "loop only {inside} ms; the rest was the machine (other programs) or the window's "
        "own drawing — not judged",
        "selftest.note.lag_own": "less the time the main thread waited for a core other "
        "programs held, the window's own lag p99 is {ms} ms",
        "selftest.note.queued": "{count} input(s) over 100 ms were late only by the time the "
        "main thread waited for a core other programs held (up to {ms} ms): on time",
        "selftest.note.path_queued": "on its way from the model's thread to the screen, the "
        "error waited up to {ms} ms for a core other programs held: not counted against you",
        "selftest.note.lag_fail": "the lag your pipeline's calls caused has a p99 of {ms} ms",
        "selftest.note.lag_busy": "the lag your pipeline's calls caused has a p99 of only "
        "{ms} ms; the rest was the machine (other programs) or the window's own drawing — "
        "not judged",
        "selftest.note.tokens_fail": "the main thread spent {share} % of the answers' time "
        "inside your pipeline's calls",
        "selftest.note.tokens_busy": "the main thread spent only {share} % of the answers' "
        "time inside your pipeline's calls: the machine slowed the model — not judged",
        "selftest.note.tokens_slept": "the thread that reads the model slept through {share} % "
        "of each token's extra time, beyond what waiting for a core could explain",
        "selftest.note.attempt": "(judged in attempt {attempt}: the machine was too busy to "
        "judge it before)",
        "selftest.note.q4_ended_before": "the answer had already ended when Stop was handled: "
        "there was nothing left to stop",
        "selftest.note.rare": "{count} call(s) waited over {bound} ms, but rarely — not held "
        "against the pipeline (a thread the machine preempted does that once in a while)",
        "selftest.note.collected": "{count} call(s) over {bound} ms only with the garbage "
        "collector's pauses in them — those pauses are not counted against the pipeline",
        "selftest.note.unlucky": "{count} call(s) that normally return at once waited over "
        "{bound} ms, once — on the machine (the GIL, held by a thread the machine had "
        "preempted; the disk), not on the pipeline: only their work is counted",
        "selftest.note.whose": "whose the late time was (the main thread's stack, "
        "sampled): of {late} ms late, {parts}",
        "selftest.whose.separator": ", ",
        "selftest.whose.pipeline": "{ms} ms in your pipeline ({functions})",
        "selftest.whose.pipeline_unnamed": "{ms} ms in your pipeline",
        "selftest.whose.app": "{ms} ms in tkchat's own code",
        "selftest.whose.tk": "{ms} ms {toolkit}'s redisplay",
        "selftest.whose.other_program": "{ms} ms other programs",
        "selftest.whose.other_threads": "{ms} ms waiting for the GIL (the window's other threads)",
        "selftest.whose.idle": "{ms} ms the loop idle",
        "selftest.whose.unsampled": "{ms} ms not sampled",
        "selftest.note.hidden": "the sampler saw your pipeline's code hold the loop {sampled} "
        "ms of that, its calls only {timed} ms: its work ran outside start(), show() and "
        "finish() — in {function}() — so this is judged on the sampler's account",
        "selftest.note.unseen": "your pipeline's calls held the loop {timed} ms of that, while "
        "the sampler saw its code for {sampled} ms: judged on the calls, which are exact about "
        "their own time",
        "selftest.note.sampled_long": "the sampler saw your pipeline's code hold the loop over "
        "{bound} ms at once {count} time(s), outside its calls (the longest, {function}(): "
        "{ms} ms)",
        "selftest.text_wait": "a token waited {ms} ms (p90) from the model to the screen, "
        "{free} ms of it with the event loop free ({tokens} tokens)",
        "selftest.note.text_busy": "the event loop itself was late (lag p99 {ms} ms) while "
        "the text waited: the threads that carry it waited for cores too — not judged",
        "selftest.text_never": "the model gave {tokens} tokens, and no text of the answers "
        "reached the screen",
        "selftest.unmeasured": "not measured (no answer streamed)",
        "selftest.tokens_figure": "{ratio} x ({app} tokens/s with the window, {raw} without)",
        "selftest.held": "the longest, {method}(): held the loop {held} ms — {cpu} ms of work, "
        "{wait} ms waiting inside the call ({queued} ms more waiting for a core, not "
        "counted; the window's worst lag, whatever held it: {window} ms)",
        "selftest.held_count": "{count} held it longer (the longest, {method}(): {held} ms; "
        "the window's long tasks, whatever held it: {long})",
        "selftest.tk_none": "none from another thread",
        "selftest.tk_calls": "{count} stopped; the first from the thread “{thread}”: {call}, "
        "from {where}",
        "selftest.raised_none": "nothing",
        "selftest.figures_agree": "the heartbeat's longest silence seen from outside, {ms} ms, "
        "shows in the window's own lag figures",
        "selftest.figures_disagree": "the heartbeat was silent for {ms} ms, seen from outside, "
        "while the window reported at most {reported} ms of lag then",
        "selftest.x_disagree": "the X server, outside the window's process, saw the window "
        "not answer for {ms} ms, while the window's own reports say its main loop was never "
        "more than {reported} ms late then, and its heartbeat {beat}",
        "selftest.x_beat.stopped": "stopped too",
        "selftest.x_beat.went_on": "went on beating",
        "selftest.x_refused": "the window's reports name an X window that its process did not "
        "open (the X server had it before the window started)",
        "selftest.note.x_agree": "the X server pinged the window {pings} times from outside; "
        "its longest wait for an answer, {ms} ms, shows in the window's own figures",
        "selftest.note.x_none": "no check through the X server (no libX11 here, or the window "
        "answered none of its pings): the figures were checked against the heartbeat alone",
        "selftest.why.x_disagree": "the window's reports disagree with what the window did: "
        "code in the graded process wrote the figures or the heartbeat the grade reads (or "
        "kept tkchat's own from reaching it), while the X server, outside that process, saw "
        "the main loop stand still. The grade cannot trust them.",
        "selftest.why": "why: {why}",
        "selftest.why.q1": "the main thread was inside your pipeline's calls while the click "
        "waited: start() or show() loops, waits for the model, or works too long.",
        "selftest.why.q2": "when the model died the window did not end the answer with its "
        "message within 100 ms: is the error event shown, and the answer ended, at once?",
        "selftest.why.q3": "scrolling and keys waited behind your pipeline's calls: each tick "
        "does too much (a redraw per token, the whole answer rendered again per chunk, a "
        "sleep).",
        "selftest.why.q4.late": "Stop waited behind your pipeline's calls: the main thread was "
        "not in the event loop when it was pressed.",
        "selftest.why.q4.text": "text appeared after Stop: the answer had ended, yet something "
        "kept writing to it.",
        "selftest.why.q4.model": "the model kept computing after Stop. Stop reaches the model "
        "only through the cancel event of the worker the window knows "
        "(host.controller.start); a model loop given an Event of its own never hears it, and "
        "keeps the model, and a core, busy.",
        "selftest.why.q4.model_late": "Stop reached the model late: it kept computing "
        "{ms} ms after Stop, with the event loop free. The cancel waited for something that "
        "runs only every so often (an asyncio loop stepped by a slow timer, a poll): deliver "
        "it at once, or step the loop every frame.",
        "selftest.why.text_wait": "text waited for the screen while the event loop was free: "
        "the window shows what arrived only every so often (an asyncio loop stepped by a slow "
        "timer, a poll far longer than a frame), so the answer comes in bursts though the "
        "lag looks fine. Show what arrived at every tick (16 ms).",
        "selftest.why.text_never": "nothing of the answers went on screen through "
        "host.transcript while the model gave its tokens.",
        "selftest.why.lag_p99": "the event loop was often late, mostly inside your pipeline's "
        "calls: the work per tick is too much for the rate the tokens come at.",
        "selftest.why.lag_max": "a call into your pipeline did more than a frame's work at once.",
        "selftest.why.long_tasks": "a call into your pipeline worked the main thread over "
        "50 ms — a freeze a user feels; often work that grows with the answer, repeated per "
        "chunk.",
        "selftest.why.waited": "{method}() waited inside the call, call after call (a sleep, "
        "a lock, a join, a read): waiting holds the event loop exactly as long as working "
        "does.",
        "selftest.why.hidden": "{function}() held the event loop outside your pipeline's three "
        "methods: a callback you schedule (after(0, …)), or a coroutine on an asyncio loop "
        "that Tk steps, runs on the main thread too, and its work freezes the window exactly "
        "as if show() did it — make the work small, or move it off the main thread.",
        "selftest.why.tokens": "the model ran slower than with no window, while the main "
        "thread was in your pipeline's calls: the model loop waits for the window.",
        "selftest.why.tokens_slept": "the model ran slower than with no window because the "
        "thread that reads it slept between tokens (a sleep, or a wait on a lock, per token), "
        "not because the machine was busy: the reading loop should only read and queue.",
        "selftest.why.tk_thread": "widgets belong to the main thread, whatever a thread is "
        "called: a worker puts events on a queue, and show() (on the main thread) writes "
        "them.",
        "selftest.why.raised": "an exception escaped start(), show() or finish(); the "
        "window survived only because tkchat caught it.",
        "selftest.why.figures": "the window's process reported figures that its heartbeat, "
        "measured from outside it, contradicts: the grade cannot trust them.",
        "selftest.grade.pass": "Grade: PASS — all {total} checks pass.",
        "selftest.grade.fail": "Grade: FAIL — {failed} of {total} checks fail: {names}.",
        "selftest.grade.busy": "Grade: machine too busy to judge — close other programs and "
        "run again.",
        "selftest.grade.incomplete": "Grade: FAIL — the self-test could not ask every question.",
        "selftest.grade.none": "Not graded: the pipeline could not be used.",
        "selftest.list_separator": "; ",
        "selftest.could_not_finish": "tkchat selftest could not finish: {error}",
        "selftest.gave_up": "The window did not come back even after it was interrupted: the "
        "self-test stops here.",
        "selftest.unanswered": "never asked: the window had not come back from the question "
        "before (over the 20 s limit, and still after it was interrupted)",
        "selftest.why.unanswered": "the window fell so far behind that it could not be used for "
        "tens of seconds — a pipeline that handles each token on its own (no coalescing) falls "
        "ever further behind a fast model, most of all on a busy machine.",
        "selftest.window_ended": "The window's process ended before the window was ready "
        "(exit status {code}).",
        "selftest.class.grading": "grading {file} …",
        "selftest.class.file": "file",
        "selftest.class.grade": "grade",
        "selftest.class.reason": "first reason",
        "selftest.class.timeout": "did not finish within {seconds} s",
        "selftest.class.written": "Written: {file} (SHA-256 {sha256})",
        "selftest.class.not_written": "Not written: {file} ({reason}); the table above is "
        "the only copy.",
        "selftest.class.unreadable": "the file could not be read",
    },
    "zh": {
        "selftest.no_xdotool": "tkchat selftest 需要 xdotool（apt-get install xdotool）。",
        "selftest.title": "tkchat 自检 —— 模式 {mode}，后端 {backend}{rate}",
        "selftest.rate": "，速率 {rate} token/s",
        "selftest.file": "文件 {path}，SHA-256 {sha256}",
        "selftest.isolated": "管线在一个单独的进程里运行，用的是用完即删的主目录和数据文件夹；"
        "评分由本进程完成，本进程从未导入它。",
        "selftest.fenced": "已隔离：它运行在自己的命名空间里（没有网络，发不出能到达本进程的信号，"
        "它启动的程序不会在评分结束后继续运行）；但它仍能按路径读取老师的文件。",
        "selftest.fenced_hidden": "已隔离：它运行在自己的命名空间里（没有网络，发不出能到达本进程的"
        "信号，它启动的程序不会在评分结束后继续运行），老师的主目录、tkchat 的数据（老师的对话）和"
        "全班的文件夹都对它隐藏：它只看得到 Python、tkchat、模型、"
        "它自己所在的文件夹和它自己的主目录。",
        "selftest.unfenced": "未隔离（这个系统不提供用户命名空间）：它能向本进程发信号，"
        "它在自己的会话里启动的程序可能在评分结束后继续运行。",
        "selftest.limit": "每条回答有 {seconds} 秒的时间上限：到时窗口仍然忙，就会被中断"
        "（或被停止），没处理的输入按实际等待的时间计算。",
        "selftest.retry": "机器太忙，无法判断：{names}（迟到的时间大多不在管线的调用里）："
        "重新测量，第 {attempt} 次，共 {total} 次。",
        "selftest.section.questions": "四个问题（每个都要在 100 毫秒内）：",
        "selftest.section.targets": "基准测试的目标，以本次运行的基线为准"
        "（延迟 p99：空闲时 {idle} 毫秒，模型单独运行时 {base} 毫秒；"
        "模型单独运行 {raw} token/s）：",
        "selftest.pass": "通过",
        "selftest.fail": "未通过",
        "selftest.busy": "太忙",
        "selftest.question.q1": "1. 流式输出时点击另一个按钮",
        "selftest.question.q2": "2. 模型在回答中途崩溃",
        "selftest.question.q3": "3. 长回答流式输出时滚动和按键",
        "selftest.question.q4": "4. 回答中途按下“停止”",
        "selftest.target.lag_p99": "事件循环延迟 p99 <= {bound} 毫秒",
        "selftest.target.lag_max": "对管线的每次调用占住事件循环都不超过 {bound} 毫秒"
        "（基准测试的最大延迟）",
        "selftest.target.long_tasks": "对管线的调用占住事件循环没有一次超过 {threshold} 毫秒"
        "（基准测试的长任务）",
        "selftest.target.tokens": "token/s >= 不带窗口时的 {ratio} 倍",
        "selftest.target.text_wait": "模型给出的文字在一帧之内上屏（90% 的 token，"
        "不算事件循环忙的时间）<= {bound} 毫秒",
        "selftest.target.tk_thread": "只在主线程调用 Tk",
        "selftest.target.raised": "管线没有抛出异常",
        "selftest.target.figures": "窗口自己报告的数字与从外部看到的一致（心跳、X 服务器）",
        "selftest.ms": "{ms} 毫秒",
        "selftest.colon": "：",
        "selftest.detail.q1": "最慢的一次点击在 {ms} 毫秒后才被处理",
        "selftest.detail.q3": "最慢的一次输入在 {ms} 毫秒后才被处理",
        "selftest.detail.q2": "崩溃后 {shown} 毫秒显示错误，一次点击在 {click} 毫秒后被处理；"
        "{message}",
        "selftest.detail.q2_never": "模型没有运行到崩溃的那一步",
        "selftest.detail.q4": "点击“停止”后 {ms} 毫秒被处理；此后又出现了 {text} 个字符，"
        "模型又给出了 {tokens} 个 token，在“停止”后 {loop} 毫秒离开循环",
        "selftest.detail.q4_never": "“停止”始终没有被处理",
        "selftest.never": "从未",
        "selftest.message": "消息：“{message}”",
        "selftest.no_message": "没有清楚的错误消息",
        "selftest.note.no_text": "{seconds} 秒内回答的文字没有出现在屏幕上",
        "selftest.note.interrupted": "按回车 {seconds} 秒后窗口仍然忙：自检中断了它",
        "selftest.note.stopped": "按回车 {seconds} 秒后回答仍未结束：自检按了“停止”",
        "selftest.note.never_died": "模型没有给出它该在其后崩溃的 {tokens} 个 token"
        "（回答先结束了，或者过了 {seconds} 秒）",
        "selftest.note.unhandled": "{events} 次输入中有 {missing} 次始终没有被处理（按无限迟计算）",
        "selftest.note.tk_blocked": "来自其他线程的 Tk 调用被拦下，回答无法继续：自检按了“停止”",
        "selftest.note.inside": "等待的 {total} 毫秒里，你的管线的调用占住循环 {inside} 毫秒"
        "（最多的是 {method}()）：在空闲的机器上也会迟到",
        "selftest.note.outside": "等待的 {total} 毫秒里，你的管线的调用只占住循环 {inside} 毫秒；"
        "其余是机器（其他程序）或窗口自己的绘制——不作判断",
        "selftest.note.lag_own": "扣除主线程等待被其他程序占用的 CPU 的时间，窗口自己的延迟 p99 是 "
        "{ms} 毫秒",
        "selftest.note.queued": "有 {count} 次超过 100 毫秒的输入，迟到的只是主线程等待被其他程序"
        "占用的 CPU 的时间（最多 {ms} 毫秒）：算作及时",
        "selftest.note.path_queued": "错误从模型的线程到屏幕的路上，等待被其他程序占用的 CPU "
        "最多 {ms} 毫秒：不算在你头上",
        "selftest.note.lag_fail": "由你的管线的调用造成的延迟，p99 为 {ms} 毫秒",
        "selftest.note.lag_busy": "由你的管线的调用造成的延迟，p99 只有 {ms} 毫秒；其余是机器"
        "（其他程序）或窗口自己的绘制——不作判断",
        "selftest.note.tokens_fail": "回答期间主线程有 {share}% 的时间在你的管线的调用里",
        "selftest.note.tokens_busy": "回答期间主线程只有 {share}% 的时间在你的管线的调用里："
        "是机器让模型变慢了——不作判断",
        "selftest.note.tokens_slept": "读取模型的线程在每个词元多花的时间里有 {share}% 在睡眠，"
        "超出了等待 CPU 核心所能解释的部分",
        "selftest.note.attempt": "（在第 {attempt} 次测量时判断：之前机器太忙，无法判断）",
        "selftest.note.q4_ended_before": "处理“停止”时回答已经结束：没有什么可停的了",
        "selftest.note.rare": "有 {count} 次调用等待超过 {bound} 毫秒，但很少见——"
        "不算在管线头上（机器偶尔会抢占某个线程）",
        "selftest.note.collected": "有 {count} 次调用只是算上垃圾回收的暂停才超过 {bound} 毫秒——"
        "这些暂停不算在管线头上",
        "selftest.note.unlucky": "有 {count} 次平时立刻返回的调用偶尔等待超过 {bound} 毫秒——"
        "等的是机器（GIL 被一个被抢占的线程占着；磁盘），不是管线：只计算它们的工作时间",
        "selftest.note.whose": "迟到的时间是谁的（对主线程调用栈的采样）：迟到的 {late} 毫秒中，"
        "{parts}",
        "selftest.whose.separator": "，",
        "selftest.whose.pipeline": "{ms} 毫秒在你的管线里（{functions}）",
        "selftest.whose.pipeline_unnamed": "{ms} 毫秒在你的管线里",
        "selftest.whose.app": "{ms} 毫秒在 tkchat 自己的代码里",
        "selftest.whose.tk": "{ms} 毫秒是 {toolkit} 的重绘",
        "selftest.whose.other_program": "{ms} 毫秒是其他程序",
        "selftest.whose.other_threads": "{ms} 毫秒在等 GIL（窗口的其他线程）",
        "selftest.whose.idle": "{ms} 毫秒事件循环空闲",
        "selftest.whose.unsampled": "{ms} 毫秒没有采样",
        "selftest.note.hidden": "采样器看到你的管线的代码占住循环 {sampled} 毫秒，它的调用却只占了 "
        "{timed} 毫秒：它的工作是在 start()、show() 和 finish() 之外做的——在 {function}() 里——"
        "所以这一项按采样器的结果判断",
        "selftest.note.unseen": "你的管线的调用占住循环 {timed} 毫秒，采样器只看到它的代码 "
        "{sampled} 毫秒：按调用的计时判断，它对调用自身的时间是精确的",
        "selftest.note.sampled_long": "采样器看到你的管线的代码在它的调用之外 {count} 次一口气"
        "占住循环超过 {bound} 毫秒（最长的一次，{function}()：{ms} 毫秒）",
        "selftest.text_wait": "一个 token 从模型到屏幕等了 {ms} 毫秒（p90），其中 {free} 毫秒"
        "事件循环是空闲的（{tokens} 个 token）",
        "selftest.note.text_busy": "文字等待时事件循环本身也在迟到（延迟 p99 {ms} 毫秒）："
        "传送文字的线程也在等 CPU 核心——不作判断",
        "selftest.text_never": "模型给出了 {tokens} 个 token，回答的文字却一点也没有上屏",
        "selftest.unmeasured": "无法测量（没有回答流式输出）",
        "selftest.tokens_figure": "{ratio} 倍（带窗口 {app} token/s，不带窗口 {raw} token/s）",
        "selftest.held": "最长的一次 {method}()：占住循环 {held} 毫秒——工作 {cpu} 毫秒，"
        "在调用里等待 {wait} 毫秒（另有 {queued} 毫秒在等 CPU，不计入；窗口最大的延迟，"
        "不论原因：{window} 毫秒）",
        "selftest.held_count": "有 {count} 次更长（最长的一次 {method}()：{held} 毫秒；"
        "窗口的长任务，不论原因：{long} 次）",
        "selftest.tk_none": "没有来自其他线程的调用",
        "selftest.tk_calls": "拦下了 {count} 次；第一次来自线程“{thread}”：{call}，来自 {where}",
        "selftest.raised_none": "没有",
        "selftest.figures_agree": "从外部看到的心跳最长停了 {ms} 毫秒，窗口自己的延迟数字里也有",
        "selftest.figures_disagree": "从外部看，心跳停了 {ms} 毫秒，而窗口报告那段时间的延迟"
        "最多只有 {reported} 毫秒",
        "selftest.x_disagree": "在窗口进程之外，X 服务器看到窗口 {ms} 毫秒没有应答，而窗口"
        "自己的报告说那段时间主循环最多只晚了 {reported} 毫秒，心跳{beat}",
        "selftest.x_beat.stopped": "也停了",
        "selftest.x_beat.went_on": "却一直在跳",
        "selftest.x_refused": "窗口的报告指明的 X 窗口不是它的进程打开的（窗口启动之前 X 服务器"
        "里就已经有它了）",
        "selftest.note.x_agree": "X 服务器从外部向窗口发了 {pings} 次探询；等应答最久的一次是 "
        "{ms} 毫秒，窗口自己的数字里也有",
        "selftest.note.x_none": "没有经 X 服务器的核对（这里没有 libX11，或窗口一次探询也没有"
        "应答）：这些数字只与心跳核对过",
        "selftest.why.x_disagree": "窗口的报告与窗口实际的表现不符：被评分的进程里有代码写了"
        "评分读取的数字或心跳（或挡住了 tkchat 自己的），而在那个进程之外的 X 服务器看到主循环"
        "停住了。这个评分无法相信这些报告。",
        "selftest.why": "原因：{why}",
        "selftest.why.q1": "点击等待时，主线程在你的管线的调用里：start() 或 show() 在循环、"
        "在等模型，或者做的事太多。",
        "selftest.why.q2": "模型崩溃后，窗口没有在 100 毫秒内带着错误消息结束这条回答："
        "错误事件是否立刻显示、回答是否立刻结束？",
        "selftest.why.q3": "滚动和按键排在你的管线的调用后面等待：每个周期做的事太多"
        "（每个 token 重绘一次、每个片段把整条回答重新渲染、sleep）。",
        "selftest.why.q4.late": "“停止”排在你的管线的调用后面等待：按下时主线程不在事件循环里。",
        "selftest.why.q4.text": "“停止”之后还出现了文字：回答已经结束，却还有东西在往里写。",
        "selftest.why.q4.model": "“停止”之后模型还在计算。“停止”只能通过窗口所知道的那个工作线程"
        "（host.controller.start）的取消事件传到模型；给模型循环一个自己新建的 Event，"
        "它永远听不到，模型和一个 CPU 核心就一直忙下去。",
        "selftest.why.q4.model_late": "“停止”很晚才传到模型：按下“停止”后它又算了 {ms} 毫秒，"
        "而这期间事件循环是空闲的。取消在等一个隔很久才运行一次的东西（被慢定时器推进的 asyncio "
        "循环、轮询）：要立刻把它送到，或者每一帧都推进循环。",
        "selftest.why.text_wait": "事件循环空闲时，文字却在等待上屏：窗口隔很久才把到达的文字"
        "显示一次（被慢定时器推进的 asyncio 循环、远长于一帧的轮询），所以延迟看起来没问题，"
        "回答却一阵一阵地出现。每个周期（16 毫秒）都要显示已经到达的文字。",
        "selftest.why.text_never": "模型给出 token 的整个过程中，回答的文字没有通过 "
        "host.transcript 上屏。",
        "selftest.why.lag_p99": "事件循环经常迟到，而且大多在你的管线的调用里："
        "按 token 到达的速度，每个周期的工作量太大。",
        "selftest.why.lag_max": "对你的管线的某次调用一次做了超过一帧的工作。",
        "selftest.why.long_tasks": "对你的管线的某次调用让主线程工作了超过 50 毫秒——用户能感到的"
        "卡顿；常见原因是随回答变长的工作在每个片段上重复。",
        "selftest.why.waited": "{method}() 一次又一次在调用里等待（sleep、锁、join、读取）："
        "等待和工作一样长时间地占住事件循环。",
        "selftest.why.hidden": "{function}() 在你的管线的三个方法之外占住了事件循环：你安排的回调"
        "（after(0, …)）、由 Tk 推进的 asyncio 循环上的协程，同样在主线程上运行，"
        "它做的工作和在 show() 里做一样会冻住窗口——"
        "让这份工作变小，或者把它移出主线程。",
        "selftest.why.tokens": "模型比不带窗口时慢，而这时主线程在你的管线的调用里："
        "模型循环在等窗口。",
        "selftest.why.tokens_slept": "模型比不带窗口时慢，是因为读取它的线程在词元之间睡眠"
        "（每个词元一次 sleep 或等锁），而不是因为机器忙：读取循环只应读取并放进队列。",
        "selftest.why.tk_thread": "控件属于主线程，不管线程叫什么名字：工作线程把事件放进队列，"
        "由 show()（在主线程上）写到屏幕。",
        "selftest.why.raised": "有异常从 start()、show() 或 finish() 里抛了出来；"
        "窗口没有崩溃，只是因为 tkchat 接住了它。",
        "selftest.why.figures": "窗口所在进程报告的数字，与在它外部测到的心跳相矛盾："
        "这个评分无法相信它们。",
        "selftest.grade.pass": "评分：通过 —— {total} 项检查全部通过。",
        "selftest.grade.fail": "评分：未通过 —— {total} 项检查中有 {failed} 项未通过：{names}。",
        "selftest.grade.busy": "评分：机器太忙，无法判断——请关闭其他程序后再运行一次。",
        "selftest.grade.incomplete": "评分：未通过 —— 自检没能问完所有问题。",
        "selftest.grade.none": "未评分：这个管线无法使用。",
        "selftest.list_separator": "；",
        "selftest.could_not_finish": "tkchat 自检无法完成：{error}",
        "selftest.gave_up": "窗口被中断后仍然没有恢复：自检到此为止。",
        "selftest.unanswered": "没能提问：窗口在上一问之后一直没有恢复"
        "（超过 20 秒的时限，中断后仍然如此）",
        "selftest.why.unanswered": "窗口落后太多，几十秒都用不了——每个 token 单独处理"
        "（不合并）的流水线，面对快速的模型会越落越远，机器繁忙时尤其如此。",
        "selftest.window_ended": "窗口准备好之前，它所在的进程就结束了（退出状态 {code}）。",
        "selftest.class.grading": "正在评分 {file} …",
        "selftest.class.file": "文件",
        "selftest.class.grade": "评分",
        "selftest.class.reason": "第一个原因",
        "selftest.class.timeout": "没有在 {seconds} 秒内完成",
        "selftest.class.written": "已写入：{file}（SHA-256 {sha256}）",
        "selftest.class.not_written": "没有写入：{file}（{reason}）；上面的表格是唯一的副本。",
        "selftest.class.unreadable": "文件无法读取",
    },
}
