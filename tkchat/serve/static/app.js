/*
 * app.js — tkchat's browser client: the article's three stages, in a page.
 *
 *   generation   the server's model thread (tkchat serve)
 *   transport    SSE over fetch(), read and parsed in a Web Worker (sse-worker.js)
 *   consumption  this file: text that arrived since the last frame is appended in ONE DOM
 *                update per animation frame; markdown is rendered once, when the answer is done
 *                (or stopped)
 *
 * The page's own event loop is the "UI thread" of the browser: everything below that runs on
 * it competes with clicks, typing and painting. The health bar shows whether it keeps up: a
 * heartbeat clock that must tick every second, the event-loop lag measured by a 5 ms timer
 * probe, and the model's tokens/s next to the page's UI updates/s.
 *
 * Two BROKEN (on purpose) toggles reproduce the usual mistakes, so the same prompt can be seen
 * janky and smooth: (a) reading the stream on the main thread, one DOM update and forced layout
 * per chunk; (b) re-rendering the whole answer's markdown for every chunk.
 *
 * Test hooks, window.tkchat (read by tests/test_browser.py; nothing in the app reads them):
 *   state.chunks       chunk events handled in the current (or last) answer
 *   state.frames       animation frames that wrote streamed text (fixed path: one write each)
 *   state.textUpdates  DOM updates of the answer while it streamed (fixed path: == frames)
 *   state.renders      markdown renders into the DOM (per-chunk mode: one per chunk + the final)
 *   state.reads        network reads of the answer, counted by whichever side read the stream
 *   state.seqs         seq of every event of the answer, in delivery order
 *   state.lastEvent    the last event delivered (a contract object: chunk, progress, done
 *                      or error; or queued, the question's place in the server's line)
 *   state.progress     the last progress event of the answer ({done, total}) or null;
 *                      state.progressEvents: how many came; state.progressShown: whether the
 *                      "reading your message" bar is on screen
 *   state.place        the last `queued` event of the question ({position, waiting, eta_s,
 *                      at_least}) or null; state.placeEvents: how many came;
 *                      state.placeShown: whether "3rd in line, about 20 s" ("at least 20 s":
 *                      a lower bound) is on screen (in the answer and the status)
 *   state.clientId     this tab's name in the server's line (sent as X-Tkchat-Client)
 *   state.status       "idle" | "streaming" | "done" | "stopped" | "error"
 *   state.reader       "worker" | "main-thread": who read the answer's stream
 *   state.text         the answer's full text; state.shownText: the streamed plain text the
 *                      page showed when the answer ended ("" in per-chunk-render mode)
 *   state.lagSamples   lag probe lateness (ms) over the last 5 s; state.longTasks: probes > 50 ms
 *   state.heartbeats   heartbeat clock ticks since the page loaded
 *   send(text), stop(), newChat(), setBroken({mainThread, perChunk})
 */
'use strict';

(function () {
  const PROBE_MS = 5; // the lag probe's period, as in the desktop app's after(5) probe
  const LAG_WINDOW_MS = 5000; // p99 is taken over the last five seconds
  const LONG_TASK_MS = 50; // the browser's own Long Tasks threshold
  const SLICE_BUDGET_MS = 8; // final render: at most this much work per frame

  const $ = (id) => document.getElementById(id);
  const t = self.TkI18n.t; // every word the reader sees, in the reader's language (i18n.js)
  const ui = {
    transcript: $('transcript'),
    composer: $('composer'),
    prompt: $('prompt'),
    send: $('send'),
    stop: $('stop'),
    heartbeat: $('heartbeat'),
    lagNow: $('lag-now'),
    lagP99: $('lag-p99'),
    longTasks: $('long-tasks'),
    tokensRate: $('tokens-rate'),
    uiRate: $('ui-rate'),
    status: $('status'),
    brokenMainThread: $('broken-main-thread'),
    brokenPerChunk: $('broken-per-chunk'),
    brokenBar: $('broken-bar'),
    maxTokens: $('max-tokens'),
    newChat: $('new-chat'),
    progress: $('prompt-progress'),
  };

  const state = {
    chunks: 0, frames: 0, textUpdates: 0, renders: 0, reads: 0, seqs: [], lastEvent: null,
    status: 'idle', reader: 'worker', text: '', shownText: '', lagSamples: [], longTasks: 0,
    heartbeats: 0, progress: null, progressEvents: 0, progressShown: false,
    place: null, placeEvents: 0, placeShown: false, clientId: newClientId(),
  };

  const SESSION_KEY = 'tkchat-session';
  let credential = sessionStorage.getItem(SESSION_KEY); // this tab's session, if it has one
  takeJoinCode();
  const history = []; // the conversation, sent whole with every question
  let active = null; // the answer being streamed, or null
  let lastId = 0; // id of the newest request; anything older is stale
  const tokenTimes = []; // when chunk events were handled (last second): tokens/s
  const updateTimes = []; // when the answer's DOM was updated (last second): UI updates/s

  const worker = new Worker('/static/sse-worker.js');
  worker.onmessage = (message) => fromWorker(message.data);
  worker.onerror = (event) => {
    if (active && active.reader === 'worker') finish(active, { error: t('error.worker_failed', { message: event.message }) });
  };

  /**
   * A server that listens beyond this machine needs a credential with every request (see
   * tkchat/serve/guard.py). The link it prints carries a join code after "#join=", never its
   * token: a browser keeps the links it opened, and a lab PC has a next user. The fragment is
   * never sent to the server; the page takes it out of the address bar (and this entry of the
   * history) at once and trades it for a session (POST /session), kept in sessionStorage:
   * this origin's alone (another server on another port of this host cannot read it, as it
   * could a cookie), kept across a reload, gone with the tab. Until the session arrives the
   * code itself is sent.
   */
  function takeJoinCode() {
    const m = /^#join=([A-Za-z0-9_-]{1,256})$/.exec(location.hash);
    if (!m) return;
    window.history.replaceState(null, '', location.pathname + location.search);
    credential = m[1];
    startSession(m[1]);
  }

  /** Trade a join code or the token for a session; resolves to whether this tab has one. */
  async function startSession(secret) {
    try {
      const response = await fetch('/session', {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + secret },
        cache: 'no-store',
      });
      const data = response.ok ? await response.json() : null;
      if (!data || typeof data.session !== 'string') return false;
      credential = data.session;
      sessionStorage.setItem(SESSION_KEY, data.session);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * A 401 (no credential, a link that expired, a session that ended): the server's sentence,
   * and under it a field for the token tkchat serve printed on its terminal. The field is a
   * password field that the browser is asked not to remember; the token goes straight into a
   * session and is not kept.
   */
  function askForToken(note) {
    const form = document.createElement('form');
    form.className = 'token-form';
    const field = document.createElement('input');
    field.type = 'password';
    field.autocomplete = 'off';
    field.placeholder = t('token.placeholder');
    field.setAttribute('aria-label', t('token.placeholder'));
    const button = document.createElement('button');
    button.type = 'submit';
    button.textContent = t('token.use');
    form.append(field, button);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const ok = await startSession(field.value.trim());
      field.value = '';
      if (ok) {
        form.replaceWith(document.createTextNode(' ' + t('token.accepted')));
        ui.prompt.focus();
      } else {
        field.placeholder = t('token.refused');
      }
    });
    note.append(form);
  }

  /**
   * This tab's name in the server's line: the server answers one question at a time per
   * client, and every program on the teacher's machine has the same address, so each tab
   * names itself. Random, in memory only; crypto.getRandomValues works on plain http too.
   */
  function newClientId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return 'tab-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  // ---- asking ---------------------------------------------------------------------------

  function send(text) {
    const prompt = (text === undefined ? ui.prompt.value : String(text)).trim();
    if (!prompt || active) return false;
    ui.prompt.value = '';
    history.push({ role: 'user', content: prompt });
    addMessage('user').textContent = prompt;
    const broken = { mainThread: ui.brokenMainThread.checked, perChunk: ui.brokenPerChunk.checked };
    const req = startAnswer(broken);
    const body = { messages: history.slice() };
    const maxTokens = Number(ui.maxTokens.value);
    if (Number.isInteger(maxTokens) && maxTokens > 0) body.max_tokens = maxTokens;
    if (broken.mainThread) {
      readOnMainThread(req, body);
    } else {
      worker.postMessage({ cmd: 'start', id: req.id, url: '/chat', body, token: credential, client: state.clientId });
    }
    return true;
  }

  function stop() {
    const req = active;
    if (!req) return;
    // Aborting the fetch closes the HTTP connection; the server sees the disconnect and stops
    // the model within a token. The page does not wait for that: the answer ends now.
    abortStream(req);
    finish(req, { stopped: true });
  }

  /** Forget the conversation (the server keeps nothing between requests: it is all here). */
  function newChat() {
    stop();
    history.length = 0;
    ui.transcript.replaceChildren();
    showStatus(t('status.ready'));
    ui.prompt.focus();
  }

  function addMessage(role) {
    const article = document.createElement('article');
    article.className = 'msg ' + role;
    const body = document.createElement('div');
    body.className = 'body';
    article.append(body);
    ui.transcript.append(article);
    followBottom();
    return body;
  }

  function startAnswer(broken) {
    const body = addMessage('assistant');
    const plain = document.createElement('div');
    plain.className = 'plain';
    // Streamed text only ever enters the page as a Text node: whatever the model writes, the
    // browser never parses it as HTML while it streams.
    const textNode = document.createTextNode('');
    plain.append(textNode);
    body.append(plain);
    const req = {
      id: ++lastId, broken, reader: broken.mainThread ? 'main-thread' : 'worker',
      gen: null, nextSeq: 1, early: new Map(), text: '', pending: '', frame: 0,
      body, textNode, abort: null, sentAt: performance.now(), firstShownAt: null,
    };
    Object.assign(state, {
      chunks: 0, frames: 0, textUpdates: 0, renders: 0, reads: 0, seqs: [], lastEvent: null,
      status: 'streaming', reader: req.reader, text: '', shownText: '',
      progress: null, progressEvents: 0, place: null, placeEvents: 0, placeShown: false,
    });
    active = req;
    setStreaming(true);
    showStatus(streamingWords(req));
    return req;
  }

  // ---- receiving ------------------------------------------------------------------------

  function fromWorker(msg) {
    if (msg.id !== lastId) return; // an older answer's leftovers (it was stopped)
    if (typeof msg.reads === 'number') state.reads = msg.reads;
    const req = active;
    if (!req || req.id !== msg.id) return; // this answer has already ended
    if (msg.kind === 'events') {
      for (const event of msg.events) {
        handleEvent(req, event);
        if (active !== req) break; // the final event (or a malformed one) ended it
      }
    } else if (msg.kind === 'closed') {
      finish(req, { error: t('error.closed') });
    } else if (msg.kind === 'failed') {
      const error = msg.status ? refusal(msg.status, msg.retryAfter, msg.refused) : failure(msg);
      finish(req, { error, needsToken: msg.status === 401 });
    } else if (msg.kind === 'aborted') {
      finish(req, { stopped: true });
    }
  }

  /**
   * Contract checks (see tkchat/events.py): events of another generation are dropped, and an
   * event that arrives before its predecessor waits in a reorder buffer until the gap closes.
   * Over one HTTP stream they arrive in order anyway; the checks cost nothing and keep the
   * page correct if a transport ever reorders.
   */
  function handleEvent(req, event) {
    if (typeof event.gen === 'number') {
      if (req.gen === null) req.gen = event.gen;
      else if (event.gen !== req.gen) return;
    }
    if (typeof event.seq === 'number' && event.seq !== req.nextSeq) {
      if (event.seq > req.nextSeq) req.early.set(event.seq, event);
      return; // (an older seq is a duplicate)
    }
    deliver(req, event);
    while (active === req && req.early.has(req.nextSeq)) {
      const next = req.early.get(req.nextSeq);
      req.early.delete(req.nextSeq);
      deliver(req, next);
    }
  }

  function deliver(req, event) {
    state.lastEvent = event;
    if (event.type === 'queued') {
      showPlace(req, event);
      return;
    }
    if (state.placeShown) hidePlace(req); // its turn came: the model has the question now
    if (typeof event.seq === 'number') {
      state.seqs.push(event.seq);
      req.nextSeq = event.seq + 1;
    }
    if (event.type === 'chunk') {
      if (typeof event.text !== 'string') {
        abortStream(req);
        finish(req, { error: t('error.chunk_without_text') });
        return;
      }
      state.chunks += 1;
      if (state.progressShown) hideProgress(req);
      tokenTimes.push(performance.now());
      req.text += event.text;
      state.text = req.text;
      if (req.broken.perChunk) renderWholeAnswer(req);
      else if (req.broken.mainThread) appendNow(req, event.text);
      else queueText(req, event.text);
    } else if (event.type === 'progress') {
      showProgress(req, event);
    } else if (event.type === 'done') {
      finish(req, { reason: event.reason, stats: event.stats });
    } else if (event.type === 'error') {
      const error = event.error || {};
      const kind = error.kind || t('error.kind');
      finish(req, { error: t('error.event', { kind, message: error.message || t('error.model_failed') }) });
    }
  }

  // ---- the server's line: waiting for the model -------------------------------------------

  /**
   * A class shares one model: a question that finds it busy waits its turn in the server's
   * line, and the server says where it stands (position, an estimate of the wait) when it
   * joins, whenever the line moves, and every few seconds. The page shows it in the answer's
   * place and in the status line, in the reader's language (i18n.js).
   */
  function showPlace(req, event) {
    const words = self.TkI18n.inLine(event);
    if (words === null) return; // malformed: ignored, as progress is
    state.place = {
      position: event.position,
      waiting: event.waiting,
      eta_s: event.eta_s,
      at_least: event.at_least === true,
    };
    state.placeEvents += 1;
    state.placeShown = true;
    if (!req.placeNote) {
      req.placeNote = document.createElement('p');
      req.placeNote.className = 'place';
      req.body.prepend(req.placeNote);
    }
    req.placeNote.textContent = words;
    showStatus(t('line.waiting', { place: words }));
  }

  function hidePlace(req) {
    state.placeShown = false;
    if (req.placeNote) {
      req.placeNote.remove();
      req.placeNote = null;
    }
    if (active === req) showStatus(streamingWords(req));
  }

  /**
   * A refused question in words, in the page's language: a full line says when to try again;
   * a refusal the page knows by its kind (sse-worker.js describeRefusal) is said in the
   * reader's language (in English, the server's own sentence); anything else is the server's.
   */
  function refusal(status, retryAfter, refused) {
    const seconds = Number(retryAfter);
    if (status === 503 && Number.isInteger(seconds) && seconds > 0) return t('line.full', { seconds });
    const key = 'refused.' + refused.kind;
    return self.TkI18n.has(key) ? t(key, { message: refused.message }) : refused.message;
  }

  /** A stream that failed without an HTTP status (sse-worker.js names what it knows). */
  function failure(failed) {
    if (failed.code && self.TkI18n.has('error.' + failed.code)) {
      return t('error.' + failed.code, { message: failed.message, detail: failed.detail || '' });
    }
    return failed.message;
  }

  function streamingWords(req) {
    return t(req.broken.mainThread || req.broken.perChunk ? 'status.streaming_broken' : 'status.streaming');
  }

  // ---- a long prompt: how far the server has read it ----------------------------------------

  /**
   * Before the first token the server may be reading a long prompt for a while; it says how
   * far a few times a second. The bar and the status line show it, with an estimate from the
   * speed seen so far. (Malformed figures are ignored: progress is a courtesy, not a promise.)
   */
  function showProgress(req, event) {
    const { done, total } = event;
    if (!Number.isInteger(done) || !Number.isInteger(total) || done < 0 || done > total) return;
    const now = performance.now();
    if (!req.progressStart) req.progressStart = { at: now, done };
    state.progress = { done, total };
    state.progressEvents += 1;
    state.progressShown = true;
    ui.progress.hidden = false;
    ui.progress.max = total || 1;
    ui.progress.value = done;
    let text = t('status.reading', { done: done.toLocaleString('en'), total: total.toLocaleString('en') });
    const elapsed = (now - req.progressStart.at) / 1000;
    const rate = (done - req.progressStart.done) / elapsed;
    if (elapsed >= 0.5 && rate > 0) text += t('status.reading_eta', { seconds: Math.max(1, Math.round((total - done) / rate)) });
    showStatus(text);
  }

  function hideProgress(req) {
    state.progressShown = false;
    ui.progress.hidden = true;
    if (active === req) showStatus(streamingWords(req));
  }

  // ---- the fixed path: one DOM update per animation frame ---------------------------------

  /**
   * Chunks can arrive hundreds of times per frame. Appending each one would make the browser
   * recompute layout for text nobody can see before the next paint; instead all text that
   * arrived since the last frame is appended in one update, just before that frame paints.
   */
  function queueText(req, text) {
    req.pending += text;
    if (!req.frame) req.frame = requestAnimationFrame(() => paintFrame(req));
  }

  function paintFrame(req) {
    req.frame = 0;
    if (writePending(req)) state.frames += 1;
  }

  function writePending(req) {
    if (!req.pending) return false;
    // Text, as with textContent, but appended: the text already shown is not replaced, so the
    // cost of a frame does not grow with the answer. No HTML parsing, ever.
    req.textNode.appendData(req.pending);
    req.pending = '';
    noteUpdate(req);
    followBottom();
    return true;
  }

  function noteUpdate(req) {
    const now = performance.now();
    state.textUpdates += 1;
    updateTimes.push(now);
    if (req.firstShownAt === null) req.firstShownAt = now;
  }

  // ---- BROKEN (on purpose) --------------------------------------------------------------

  /**
   * BROKEN (on purpose), toggle (a): the page reads the stream itself. The `await` does not
   * block, but every network read now resolves as a task on the page's event loop, and in
   * that task the page decodes, parses JSON and writes each chunk into the DOM at once, then
   * scrolls — which forces a synchronous layout per chunk. At hundreds of chunks per second
   * that work crowds out input and painting; the worker does the first part elsewhere and the
   * fixed path batches the rest per frame.
   */
  async function readOnMainThread(req, body) {
    const controller = new AbortController();
    req.abort = () => controller.abort();
    try {
      const response = await self.TkSSE.fetchChat('/chat', body, controller.signal, credential, state.clientId);
      if (!response.ok || !response.body) {
        const refused = await self.TkSSE.describeRefusal(response);
        const error = refusal(response.status, response.headers.get('retry-after'), refused);
        finish(req, { error, needsToken: response.status === 401 });
        return;
      }
      const parser = new self.TkSSE.SSEParser();
      const reader = response.body.getReader();
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        if (req.id === lastId) state.reads += 1;
        for (const event of parser.feed(value)) handleEvent(req, JSON.parse(event.data));
      }
      for (const event of parser.end()) handleEvent(req, JSON.parse(event.data));
      finish(req, { error: t('error.closed') });
    } catch (err) {
      if (err && err.name === 'AbortError') return; // Stop: finish() already ran
      controller.abort();
      finish(req, { error: failure(self.TkSSE.describeFailure(err)) });
    }
  }

  /** Toggle (a)'s consumer: one DOM write and a forced layout per chunk, no batching. */
  function appendNow(req, text) {
    req.textNode.appendData(text);
    noteUpdate(req);
    followBottom();
  }

  /**
   * BROKEN (on purpose), toggle (b): for every chunk, the whole answer's markdown is parsed,
   * built and laid out again (the `el.innerHTML = marked(fullText)` pattern; still through the
   * safe renderer, since the lesson here is cost, not safety). Each render costs more than the
   * last because the answer keeps growing, so the total is quadratic: smooth at first, janky
   * later.
   */
  function renderWholeAnswer(req) {
    req.body.replaceChildren(self.TkMarkdown.renderMarkdown(req.text));
    state.renders += 1;
    noteUpdate(req);
    followBottom();
  }

  /** Close the answer's HTTP stream, wherever it is being read. */
  function abortStream(req) {
    if (req.reader === 'worker') worker.postMessage({ cmd: 'abort', id: req.id });
    else if (req.abort) req.abort();
  }

  // ---- the end of an answer -------------------------------------------------------------

  function finish(req, outcome) {
    if (active !== req) return; // exactly one ending per answer, whoever reports first
    active = null;
    if (req.frame) {
      cancelAnimationFrame(req.frame);
      req.frame = 0;
    }
    writePending(req); // the last text must not wait for a frame that may never come
    state.shownText = req.textNode.isConnected ? req.textNode.data : '';
    if (state.progressShown) hideProgress(req);
    if (state.placeShown || req.placeNote) hidePlace(req);
    setStreaming(false);
    if (outcome.stopped) {
      state.status = 'stopped';
      addNote(req, t('note.stopped'), 'stopped');
      if (req.text) {
        history.push({ role: 'assistant', content: req.text });
        renderFinal(req); // what arrived is an answer too: rendered, not left as raw text
      }
      showStatus(t('status.stopped'));
    } else if (outcome.error) {
      state.status = 'error';
      const note = addNote(req, outcome.error, 'error');
      if (outcome.needsToken) askForToken(note);
      history.pop(); // the question got no answer: leave it out of the next request
      showStatus(t('status.error'));
    } else {
      state.status = 'done';
      history.push({ role: 'assistant', content: req.text });
      renderFinal(req);
      showStatus(describeDone(req, outcome));
    }
  }

  function addNote(req, text, kind) {
    const note = document.createElement('p');
    note.className = 'note ' + kind;
    note.textContent = text;
    req.body.after(note);
    return note;
  }

  /**
   * Plain text while streaming, rich text once: the finished answer's markdown is rendered
   * through markdown.js only (escape first, fixed elements). Blocks are built a few per frame
   * within a time budget, off-screen, then swapped in with one update, so even a long answer
   * never turns its final render into one long task.
   */
  function renderFinal(req) {
    const blocks = self.TkMarkdown.renderBlocks(req.text);
    const target = document.createElement('div');
    target.className = 'md';
    let next = 0;
    const step = () => {
      const started = performance.now();
      while (next < blocks.length && (next === 0 || performance.now() - started < SLICE_BUDGET_MS)) {
        target.append(self.TkMarkdown.toFragment(blocks[next]));
        next += 1;
      }
      if (next < blocks.length) {
        requestAnimationFrame(step);
        return;
      }
      req.body.replaceChildren(target);
      state.renders += 1;
      followBottom();
    };
    step();
  }

  function describeDone(req, outcome) {
    const stats = outcome.stats || {};
    const reason = String(outcome.reason || 'stop');
    const known = self.TkI18n.has('status.done.' + reason);
    const parts = [t('status.done', { reason: known ? t('status.done.' + reason) : reason })];
    if (typeof stats.tokens === 'number') parts.push(t('status.tokens', { tokens: stats.tokens }));
    if (typeof stats.tokens_per_s === 'number') parts.push(t('status.speed', { speed: stats.tokens_per_s.toFixed(0) }));
    if (req.firstShownAt !== null) parts.push(t('status.first_text', { ms: (req.firstShownAt - req.sentAt).toFixed(0) }));
    return parts.join(' · ');
  }

  // ---- health: heartbeat, lag, rates -------------------------------------------------------

  /** A clock that must tick every second; if it stops, the page's event loop is blocked. */
  function heartbeat() {
    state.heartbeats += 1;
    ui.heartbeat.textContent = new Date().toLocaleTimeString('en-GB');
    setTimeout(heartbeat, 1000 - (Date.now() % 1000) + 5); // tick on the second, not drift
  }

  /**
   * The lag probe: a 5 ms timer that re-arms itself and records how late it fires. A timer
   * can only fire when the event loop is free, so its lateness is exactly how long the page
   * could not respond to a click.
   */
  const lagTimes = [];
  let probeDue = 0;
  let worstSinceShown = 0;

  function armProbe() {
    probeDue = performance.now() + PROBE_MS;
    setTimeout(probe, PROBE_MS);
  }

  function probe() {
    const now = performance.now();
    const lag = Math.max(0, now - probeDue);
    lagTimes.push(now);
    state.lagSamples.push(lag);
    worstSinceShown = Math.max(worstSinceShown, lag);
    if (lag > LONG_TASK_MS) state.longTasks += 1;
    armProbe();
  }

  function showHealth() {
    const now = performance.now();
    while (lagTimes.length && lagTimes[0] < now - LAG_WINDOW_MS) {
      lagTimes.shift();
      state.lagSamples.shift();
    }
    const sorted = state.lagSamples.slice().sort((a, b) => a - b);
    const p99 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] : 0;
    ui.lagNow.textContent = worstSinceShown.toFixed(1);
    ui.lagP99.textContent = p99.toFixed(1);
    ui.longTasks.textContent = String(state.longTasks);
    ui.tokensRate.textContent = String(countLastSecond(tokenTimes, now));
    ui.uiRate.textContent = String(countLastSecond(updateTimes, now));
    worstSinceShown = 0;
  }

  function countLastSecond(times, now) {
    while (times.length && times[0] < now - 1000) times.shift();
    return times.length;
  }

  // ---- controls ---------------------------------------------------------------------------

  function setStreaming(streaming) {
    ui.send.disabled = streaming;
    ui.stop.disabled = !streaming;
  }

  function showStatus(text) {
    ui.status.textContent = text;
  }

  function showBroken() {
    const mainThread = ui.brokenMainThread.checked;
    const perChunk = ui.brokenPerChunk.checked;
    const names = [];
    if (mainThread) names.push(t('broken.bar.main_thread'));
    if (perChunk) names.push(t('broken.bar.per_chunk'));
    ui.brokenBar.hidden = names.length === 0;
    ui.brokenBar.textContent = t('broken.bar', { what: names.join(t('broken.bar.and')) });
    document.body.classList.toggle('broken', names.length > 0);
  }

  function setBroken({ mainThread = false, perChunk = false } = {}) {
    ui.brokenMainThread.checked = Boolean(mainThread);
    ui.brokenPerChunk.checked = Boolean(perChunk);
    showBroken();
  }

  // Scroll with the answer only while the reader is at the bottom: reading older text must
  // not be interrupted by new text.
  let stickToBottom = true;
  ui.transcript.addEventListener('scroll', () => {
    const t = ui.transcript;
    stickToBottom = t.scrollHeight - t.scrollTop - t.clientHeight < 40;
  }, { passive: true });

  function followBottom() {
    if (stickToBottom) ui.transcript.scrollTop = ui.transcript.scrollHeight;
  }

  ui.composer.addEventListener('submit', (event) => {
    event.preventDefault();
    send();
  });
  ui.prompt.addEventListener('keydown', (event) => {
    // Enter sends, Shift+Enter is a new line; never while an input method is composing
    // (Enter then confirms a Chinese or Japanese candidate).
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') stop();
  });
  ui.stop.addEventListener('click', stop);
  ui.newChat.addEventListener('click', newChat);
  ui.brokenMainThread.addEventListener('change', showBroken);
  ui.brokenPerChunk.addEventListener('change', showBroken);

  showBroken();
  heartbeat();
  armProbe();
  setInterval(showHealth, 250);
  setStreaming(false);

  window.tkchat = { state, send, stop, setBroken, newChat };
})();
