/*
 * i18n.js — every word the page shows, in English and Chinese.
 *
 * The language is the browser's first preferred one (Chinese for any "zh-…", English
 * otherwise), or the page's `?lang=en` / `?lang=zh` when given (a teacher's projector, a
 * screenshot). The desktop window keeps its strings in tkchat/i18n/; the page is a separate
 * program and keeps its own here, in the same two languages.
 *
 *   self.TkI18n.lang          "en" | "zh"
 *   self.TkI18n.t(key, args)   the string for key, with {name} filled from args
 *   self.TkI18n.has(key)       whether key is one of the page's strings
 *   self.TkI18n.inLine(place)  "3rd in line, about 20 s" for a `queued` event ("at least 20 s"
 *                              when the server says its estimate is only a lower bound)
 *   <html lang>                "en" or "zh-CN", set on load with index.html's data-i18n texts
 */
'use strict';

(function (scope) {
  // One entry a line, 'key': 'text' (tests/test_browser_i18n.py reads this block from Python
  // and checks that both languages have the same keys and the same {names}).
  const STRINGS = {
    en: {
      'page.title': 'tkchat — browser client',
      'page.subtitle': 'in the browser',
      'health.label': 'health of the page\'s event loop',
      'health.heartbeat': 'heartbeat',
      'health.heartbeat.tip': 'Ticks every second. If it stops, the page\'s event loop is blocked.',
      'health.lag_now': 'lag now',
      'health.lag_now.tip': 'How late a 5 ms timer fires: the worst in the last quarter second.',
      'health.lag_p99': 'lag p99 (5 s)',
      'health.lag_p99.tip': '99th percentile of the timer\'s lateness over the last 5 seconds.',
      'health.long_tasks': 'long tasks',
      'health.long_tasks.tip': 'Timer firings more than 50 ms late since the page loaded.',
      'health.tokens': 'tokens/s',
      'health.tokens.tip': 'Chunk events received in the last second (one per token).',
      'health.ui_rate': 'UI updates/s',
      'health.ui_rate.tip': 'Updates of the answer in the page in the last second. Smooth: at most one per frame.',
      'unit.ms': 'ms',
      'broken.legend': 'BROKEN (on purpose)',
      'broken.main_thread': 'read the stream on the main thread',
      'broken.main_thread.detail': '(no worker; one DOM update per chunk)',
      'broken.per_chunk': 'render markdown on every chunk',
      'broken.per_chunk.detail': '(the whole answer, again and again)',
      'broken.hint': 'Applies from the next question. With both on, a long answer makes the page janky: watch the heartbeat and the lag.',
      'broken.bar': 'BROKEN (on purpose): {what} — from the next question.',
      'broken.bar.main_thread': 'the stream is read on the main thread',
      'broken.bar.per_chunk': 'markdown is re-rendered on every chunk',
      'broken.bar.and': ' and ',
      'composer.placeholder': 'Ask something. Enter sends, Shift+Enter is a new line, Esc stops.',
      'composer.label': 'your question',
      'button.send': 'Send',
      'button.stop': 'Stop',
      'button.new_chat': 'New chat',
      'option.max_tokens': 'max tokens',
      'option.max_tokens.tip': 'The longest answer to ask for; empty: the server\'s default.',
      'option.max_tokens.default': 'default',
      'progress.tip': 'How far the model has read your message (before the first token).',
      'status.ready': 'ready',
      'status.streaming': 'streaming…',
      'status.streaming_broken': 'streaming (BROKEN mode)…',
      'status.reading': 'reading your message… {done} / {total} tokens',
      'status.reading_eta': ' · about {seconds} s left',
      'status.stopped': 'stopped',
      'status.error': 'error',
      'status.done': 'done ({reason})',
      'status.done.stop': 'stop',
      'status.done.length': 'length',
      'status.tokens': '{tokens} tokens',
      'status.speed': '{speed} tokens/s (server)',
      'status.first_text': 'first text on screen after {ms} ms',
      'note.stopped': '[stopped]',
      'error.event': '{kind}: {message}',
      'error.kind': 'error',
      'error.model_failed': 'the model failed',
      'error.worker_failed': 'the stream worker failed: {message}',
      'error.closed': 'the server closed the stream without a final event',
      'error.chunk_without_text': 'the server sent a chunk without text',
      'error.not_json': 'the server sent an event that is not JSON: {detail}',
      'error.no_type': 'the server sent an event without a type: {detail}',
      'error.connection': 'the connection to the server failed ({message})',
      'refused.unauthorized': '{message}',
      'refused.per_client': '{message}',
      'refused.per_address': '{message}',
      'refused.shutting_down': '{message}',
      'line.place': '{ordinal} in line',
      'line.place_eta': '{ordinal} in line, about {seconds} s',
      'line.place_eta_at_least': '{ordinal} in line, at least {seconds} s',
      'line.waiting': 'waiting for the model: {place}',
      'line.full': 'the line is full; try again in about {seconds} s',
      'token.placeholder': 'the token tkchat serve printed',
      'token.use': 'Use it',
      'token.accepted': 'accepted: ask again.',
      'token.refused': 'not that token; try again',
    },
    zh: {
      'page.title': 'tkchat —— 浏览器客户端',
      'page.subtitle': '浏览器版',
      'health.label': '页面事件循环的健康状况',
      'health.heartbeat': '心跳',
      'health.heartbeat.tip': '每秒跳一下。它一停，就说明页面的事件循环被阻塞了。',
      'health.lag_now': '当前延迟',
      'health.lag_now.tip': '一个 5 毫秒的定时器迟到了多久：最近四分之一秒里最晚的一次。',
      'health.lag_p99': '延迟 p99（5 秒）',
      'health.lag_p99.tip': '最近 5 秒内定时器迟到时间的第 99 百分位数。',
      'health.long_tasks': '长任务',
      'health.long_tasks.tip': '页面打开以来，定时器迟到超过 50 毫秒的次数。',
      'health.tokens': 'tokens/s',
      'health.tokens.tip': '最近一秒收到的文本块事件数（每个 token 一个）。',
      'health.ui_rate': '页面每秒更新',
      'health.ui_rate.tip': '最近一秒页面上回答被更新的次数。流畅的做法：每帧最多一次。',
      'unit.ms': '毫秒',
      'broken.legend': '故障模式（为教学故意为之）',
      'broken.main_thread': '在主线程上读取流',
      'broken.main_thread.detail': '（不用工作线程；每来一块就更新一次 DOM）',
      'broken.per_chunk': '每来一块就渲染一次 Markdown',
      'broken.per_chunk.detail': '（整段回答，一遍又一遍）',
      'broken.hint': '从下一个问题开始生效。两项都打开时，长回答会让页面卡顿：请留意心跳和延迟。',
      'broken.bar': '故障模式（为教学故意为之）：{what} —— 从下一个问题开始。',
      'broken.bar.main_thread': '在主线程上读取流',
      'broken.bar.per_chunk': '每来一块就把 Markdown 重新渲染一遍',
      'broken.bar.and': '，并且',
      'composer.placeholder': '问点什么吧。回车发送，Shift+回车换行，Esc 停止。',
      'composer.label': '你的问题',
      'button.send': '发送',
      'button.stop': '停止',
      'button.new_chat': '新对话',
      'option.max_tokens': '最多生成 token 数',
      'option.max_tokens.tip': '回答最长可以有多少个 token；留空则用服务器的默认值。',
      'option.max_tokens.default': '默认',
      'progress.tip': '模型读你的消息读到了哪里（在第一个 token 之前）。',
      'status.ready': '就绪',
      'status.streaming': '正在生成……',
      'status.streaming_broken': '正在以故障模式生成……',
      'status.reading': '正在读取你的消息…… {done} / {total} 个 token',
      'status.reading_eta': ' · 大约还需 {seconds} 秒',
      'status.stopped': '已停止',
      'status.error': '出错',
      'status.done': '完成（{reason}）',
      'status.done.stop': '已答完',
      'status.done.length': '达到长度上限',
      'status.tokens': '{tokens} 个 token',
      'status.speed': '{speed} tokens/s（服务器）',
      'status.first_text': '{ms} 毫秒后第一段文字出现在屏幕上',
      'note.stopped': '[已停止]',
      'error.event': '模型出错（{kind}）：{message}',
      'error.kind': '出错',
      'error.model_failed': '模型运行失败',
      'error.worker_failed': '读取流的工作线程出错：{message}',
      'error.closed': '服务器关闭了流，却没有发送结束事件',
      'error.chunk_without_text': '服务器发来的文本块里没有文本',
      'error.not_json': '服务器发来的事件不是 JSON：{detail}',
      'error.no_type': '服务器发来的事件没有类型：{detail}',
      'error.connection': '与服务器的连接失败（{message}）',
      'refused.unauthorized': '这个服务器需要它的令牌（链接在服务器启动 15 分钟后失效，会话最长 8 小时）：请在下面输入 tkchat serve 打印的令牌，或打开一个新链接。',
      'refused.per_client': '你已经有问题在排队或正在回答：等其中一个答完再问下一个。',
      'refused.per_address': '你的电脑已经有好几个问题在排队或正在回答：等其中一个答完再问。',
      'refused.shutting_down': '服务器正在关闭。',
      'line.place': '排在第 {n} 位',
      'line.place_eta': '排在第 {n} 位，大约 {seconds} 秒',
      'line.place_eta_at_least': '排在第 {n} 位，至少 {seconds} 秒',
      'line.waiting': '正在等待模型：{place}',
      'line.full': '排队人数已满，请大约 {seconds} 秒后再试',
      'token.placeholder': 'tkchat serve 打印的令牌',
      'token.use': '使用',
      'token.accepted': '已接受：请再问一次。',
      'token.refused': '令牌不对，请再试',
    },
  };

  function chooseLanguage() {
    const asked = new URLSearchParams(scope.location ? scope.location.search : '').get('lang');
    if (asked === 'en' || asked === 'zh') return asked;
    const preferred = (scope.navigator && (scope.navigator.languages || [scope.navigator.language])) || [];
    return String(preferred[0] || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
  }

  const lang = chooseLanguage();

  function t(key, args = {}) {
    const text = STRINGS[lang][key] || STRINGS.en[key] || key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in args ? String(args[name]) : whole));
  }

  /** 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd... */
  function ordinal(n) {
    const tens = n % 100;
    const suffix = tens >= 11 && tens <= 13 ? 'th' : { 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] || 'th';
    return n + suffix;
  }

  /** A `queued` event as words; null when its figures are not sane (the wire is untrusted). */
  function inLine(place) {
    const n = place && place.position;
    if (!Number.isInteger(n) || n < 1) return null;
    const eta = place.eta_s;
    const args = { n, ordinal: ordinal(n) };
    if (typeof eta === 'number' && Number.isFinite(eta) && eta >= 0) {
      const key = place.at_least === true ? 'line.place_eta_at_least' : 'line.place_eta';
      return t(key, { ...args, seconds: Math.max(1, Math.round(eta)) });
    }
    return t('line.place', args);
  }

  /**
   * The page's own words, filled in on load (this file is the first deferred script, so the
   * document is parsed and nothing else has run): `data-i18n` sets an element's text,
   * `data-i18n-title`, `-placeholder` and `-aria-label` set those attributes. index.html
   * keeps the English text too, for a browser that runs no script.
   */
  function translatePage(doc) {
    doc.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
    for (const el of doc.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
    const attributes = { i18nTitle: 'title', i18nPlaceholder: 'placeholder', i18nAriaLabel: 'aria-label' };
    for (const [data, attribute] of Object.entries(attributes)) {
      const selector = '[data-' + data.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()) + ']';
      for (const el of doc.querySelectorAll(selector)) el.setAttribute(attribute, t(el.dataset[data]));
    }
  }

  if (scope.document) translatePage(scope.document);

  /** Whether key has words (for values from the wire, such as a done event's reason). */
  function has(key) {
    return Object.prototype.hasOwnProperty.call(STRINGS.en, key);
  }

  scope.TkI18n = { lang, t, has, ordinal, inLine, translatePage, STRINGS };
})(self);
