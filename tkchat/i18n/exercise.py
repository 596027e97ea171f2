"""The strings of the exercises: a pipeline of one's own that cannot be loaded or misbehaves
(``outside.*``, shown in the window and on the command line), and the report of
``tkchat selftest`` (``selftest.*``), which grades it."""

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
        "selftest.no_xdotool": "tkchat selftest needs xdotool (apt-get install xdotool).",
        "selftest.title": "tkchat selftest — mode {mode}, backend {backend}{rate}",
        "selftest.rate": " at {rate} tokens/s",
        "selftest.limit": "Each answer has a wall-clock limit of {seconds} s: a window still "
        "busy then is interrupted (or stopped), and what it had not handled counts with "
        "the time it took.",
        "selftest.section.questions": "The three questions (each within 100 ms):",
        "selftest.section.targets": "The benchmark's targets, against this run's baselines "
        "(idle lag p99 {idle} ms, the model with no window {raw} tokens/s):",
        "selftest.pass": "PASS",
        "selftest.fail": "FAIL",
        "selftest.question.q1": "1. a click on another button while streaming",
        "selftest.question.q2": "2. the model dies mid-answer",
        "selftest.question.q3": "3. scrolling and keystrokes while a long answer streams",
        "selftest.target.lag_p99": "event-loop lag p99 <= {bound} ms",
        "selftest.target.lag_max": "no call into the pipeline works the main thread over "
        "{bound} ms (the bench's lag max)",
        "selftest.target.long_tasks": "no call into the pipeline works the main thread over "
        "{threshold} ms (the bench's long tasks)",
        "selftest.ms": "{ms} ms",
        "selftest.colon": ": ",
        "selftest.target.tokens": "tokens/s >= {ratio} x the model with no window",
        "selftest.target.tk_thread": "Tk called only from the main thread",
        "selftest.target.raised": "nothing raised out of the pipeline",
        "selftest.detail.q1": "worst click handled {ms} ms after it was made",
        "selftest.detail.q3": "worst input handled {ms} ms after it was made",
        "selftest.detail.q2": "error shown {shown} ms after the crash, a click handled {click} "
        "ms after it was made; {message}",
        "selftest.detail.q2_never": "the model never ran long enough to die",
        "selftest.message": "message: “{message}”",
        "selftest.no_message": "no clear error message",
        "selftest.note.no_text": "no text of the answer reached the screen within {seconds} s",
        "selftest.note.interrupted": "the window was still busy {seconds} s after Enter: the "
        "self-test interrupted it",
        "selftest.note.stopped": "the answer had not ended {seconds} s after Enter: the "
        "self-test pressed Stop",
        "selftest.note.never_died": "no 30 tokens were generated within {seconds} s",
        "selftest.note.unhandled": "{missing} of the {events} inputs were never handled (they "
        "count as infinitely late)",
        "selftest.note.tk_blocked": "a Tk call from another thread was stopped, and the answer "
        "could not go on: the self-test pressed Stop",
        "selftest.unmeasured": "not measured (no answer streamed)",
        "selftest.tokens_figure": "{ratio} x ({app} tokens/s with the window, {raw} without)",
        "selftest.busiest_call": "the most, {method}(): {cpu} ms of work, {wall} ms from call "
        "to return (the window's lag max, whatever held it, other programs included: {window} "
        "ms)",
        "selftest.long_calls": "{count} (the window's long tasks, whatever held it, other "
        "programs included: {window})",
        "selftest.tk_none": "none from another thread",
        "selftest.tk_calls": "{count} stopped; the first from the thread “{thread}”: {call}, "
        "from {where}",
        "selftest.raised_none": "nothing",
        "selftest.why": "why: {why}",
        "selftest.why.q1": "the main thread did not get back to the event loop while the "
        "answer streamed: start() or show() loops, waits for the model, or works too long.",
        "selftest.why.q2": "when the model died the window did not end the answer with its "
        "message within 100 ms: is the error event shown, and the answer ended, at once?",
        "selftest.why.q3": "scrolling and keys waited behind the answer: each tick does too "
        "much (a redraw per token, the whole answer rendered again per chunk, no coalescing).",
        "selftest.why.lag_p99": "the event loop is often late: the work per tick is too much "
        "for the rate the tokens come at.",
        "selftest.why.lag_max": "at least once the event loop was late by more than a frame: "
        "one callback did too much at once.",
        "selftest.why.long_tasks": "some callback held the main thread over 50 ms — a freeze "
        "a user feels; often work that grows with the answer, repeated per chunk.",
        "selftest.why.tokens": "the model ran slower than with no window: the main thread "
        "holds the GIL, or the model loop waits for the window.",
        "selftest.why.tk_thread": "widgets belong to the main thread: a worker puts events "
        "on a queue, and show() (on the main thread) writes them.",
        "selftest.why.raised": "an exception escaped start(), show() or finish(); the "
        "window survived only because tkchat caught it.",
        "selftest.grade.pass": "Grade: PASS — all {total} checks pass.",
        "selftest.grade.fail": "Grade: FAIL — {failed} of {total} checks fail: {names}.",
        "selftest.grade.incomplete": "Grade: FAIL — the self-test could not ask every question.",
        "selftest.grade.none": "Not graded: the pipeline could not be used.",
        "selftest.list_separator": "; ",
        "selftest.could_not_finish": "tkchat selftest could not finish: {error}",
        "selftest.gave_up": "The window did not come back even after it was interrupted: the "
        "self-test stops here.",
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
        "selftest.no_xdotool": "tkchat selftest 需要 xdotool（apt-get install xdotool）。",
        "selftest.title": "tkchat 自检 —— 模式 {mode}，后端 {backend}{rate}",
        "selftest.rate": "，速率 {rate} token/s",
        "selftest.limit": "每条回答有 {seconds} 秒的时间上限：到时窗口仍然忙，就会被中断"
        "（或被停止），没处理的输入按实际等待的时间计算。",
        "selftest.section.questions": "三个问题（每个都要在 100 毫秒内）：",
        "selftest.section.targets": "基准测试的目标，以本次运行的基线为准"
        "（空闲时延迟 p99 {idle} 毫秒，不带窗口的模型 {raw} token/s）：",
        "selftest.pass": "通过",
        "selftest.fail": "未通过",
        "selftest.question.q1": "1. 流式输出时点击另一个按钮",
        "selftest.question.q2": "2. 模型在回答中途崩溃",
        "selftest.question.q3": "3. 长回答流式输出时滚动和按键",
        "selftest.target.lag_p99": "事件循环延迟 p99 <= {bound} 毫秒",
        "selftest.target.lag_max": "对管线的每次调用占用主线程工作都不超过 {bound} 毫秒"
        "（基准测试的最大延迟）",
        "selftest.target.long_tasks": "对管线的调用占用主线程工作没有一次超过 {threshold} 毫秒"
        "（基准测试的长任务）",
        "selftest.ms": "{ms} 毫秒",
        "selftest.colon": "：",
        "selftest.target.tokens": "token/s >= 不带窗口时的 {ratio} 倍",
        "selftest.target.tk_thread": "只在主线程调用 Tk",
        "selftest.target.raised": "管线没有抛出异常",
        "selftest.detail.q1": "最慢的一次点击在 {ms} 毫秒后才被处理",
        "selftest.detail.q3": "最慢的一次输入在 {ms} 毫秒后才被处理",
        "selftest.detail.q2": "崩溃后 {shown} 毫秒显示错误，一次点击在 {click} 毫秒后被处理；"
        "{message}",
        "selftest.detail.q2_never": "模型没有运行到崩溃的那一步",
        "selftest.message": "消息：“{message}”",
        "selftest.no_message": "没有清楚的错误消息",
        "selftest.note.no_text": "{seconds} 秒内回答的文字没有出现在屏幕上",
        "selftest.note.interrupted": "按回车 {seconds} 秒后窗口仍然忙：自检中断了它",
        "selftest.note.stopped": "按回车 {seconds} 秒后回答仍未结束：自检按了“停止”",
        "selftest.note.never_died": "{seconds} 秒内没有生成 30 个 token",
        "selftest.note.unhandled": "{events} 次输入中有 {missing} 次始终没有被处理（按无限迟计算）",
        "selftest.note.tk_blocked": "来自其他线程的 Tk 调用被拦下，回答无法继续：自检按了“停止”",
        "selftest.unmeasured": "无法测量（没有回答流式输出）",
        "selftest.tokens_figure": "{ratio} 倍（带窗口 {app} token/s，不带窗口 {raw} token/s）",
        "selftest.busiest_call": "工作最多的一次 {method}()：工作 {cpu} 毫秒，从调用到返回 {wall} "
        "毫秒（窗口的最大延迟，不论原因，包括其他程序的影响：{window} 毫秒）",
        "selftest.long_calls": "{count} 次（窗口的长任务，不论原因，包括其他程序的影响："
        "{window} 次）",
        "selftest.tk_none": "没有来自其他线程的调用",
        "selftest.tk_calls": "拦下了 {count} 次；第一次来自线程“{thread}”：{call}，来自 {where}",
        "selftest.raised_none": "没有",
        "selftest.why": "原因：{why}",
        "selftest.why.q1": "回答流式输出时主线程没有回到事件循环：start() 或 show() 在循环、"
        "在等模型，或者做的事太多。",
        "selftest.why.q2": "模型崩溃后，窗口没有在 100 毫秒内带着错误消息结束这条回答："
        "错误事件是否立刻显示、回答是否立刻结束？",
        "selftest.why.q3": "滚动和按键排在回答后面等待：每个周期做的事太多"
        "（每个 token 重绘一次、每个片段把整条回答重新渲染、没有合并）。",
        "selftest.why.lag_p99": "事件循环经常迟到：按 token 到达的速度，每个周期的工作量太大。",
        "selftest.why.lag_max": "事件循环至少有一次迟到超过一帧：某个回调一次做了太多事。",
        "selftest.why.long_tasks": "有回调占用主线程超过 50 毫秒——用户能感到的卡顿；"
        "常见原因是随回答变长的工作在每个片段上重复。",
        "selftest.why.tokens": "模型比不带窗口时慢：主线程占着 GIL，或者模型循环在等窗口。",
        "selftest.why.tk_thread": "控件属于主线程：工作线程把事件放进队列，"
        "由 show()（在主线程上）写到屏幕。",
        "selftest.why.raised": "有异常从 start()、show() 或 finish() 里抛了出来；"
        "窗口没有崩溃，只是因为 tkchat 接住了它。",
        "selftest.grade.pass": "评分：通过 —— {total} 项检查全部通过。",
        "selftest.grade.fail": "评分：未通过 —— {total} 项检查中有 {failed} 项未通过：{names}。",
        "selftest.grade.incomplete": "评分：未通过 —— 自检没能问完所有问题。",
        "selftest.grade.none": "未评分：这个管线无法使用。",
        "selftest.list_separator": "；",
        "selftest.could_not_finish": "tkchat 自检无法完成：{error}",
        "selftest.gave_up": "窗口被中断后仍然没有恢复：自检到此为止。",
    },
}
