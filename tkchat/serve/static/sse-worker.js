/*
 * sse-worker.js — Server-Sent Events over fetch(), read off the main thread.
 *
 * This file is loaded twice, on purpose:
 *   - as a Web Worker (new Worker("/static/sse-worker.js")): it does the POST /chat, reads
 *     response.body and posts parsed events to the page, so waiting for the network, decoding
 *     and JSON parsing never take a turn of the page's event loop;
 *   - as a plain <script> in the page, which only defines `self.TkSSE` (the parser), used by
 *     the BROKEN main-thread reader and by the tests. One parser for both, so the broken mode
 *     differs from the fixed one in *where* it runs, not in how well it parses.
 *
 * Why not EventSource: it can only GET, so it cannot send the chat as a JSON body, and its
 * automatic reconnect would replay a prompt the model has already answered.
 *
 * Protocol with the page (every message carries the request `id` the page chose, so the page
 * can drop whatever still arrives for an answer it has already stopped):
 *   page -> worker  {cmd: "start", id, url, body, token, client}   {cmd: "abort", id}
 *   worker -> page  {id, kind: "open"}
 *                   {id, kind: "events", events: [...]}  all events parsed from one network read
 *                   {id, kind: "closed", reads, bytes}    the server ended the stream
 *                   {id, kind: "aborted", reads, bytes}   Stop reached the fetch
 *                   {id, kind: "failed", status, refused: {message, kind}, retryAfter}
 *                   {id, kind: "failed", message, code, detail}  (no HTTP status: describeFailure)
 */
'use strict';

(function (scope) {
  /**
   * An incremental parser of the text/event-stream format (WHATWG HTML, "Server-sent events").
   *
   * Network reads are arbitrary byte ranges: one read can end in the middle of an event, of a
   * line, of a "\r\n" pair, or of a multi-byte UTF-8 character. So the parser keeps
   *   - a streaming TextDecoder, which holds back the first bytes of a split character;
   *   - a buffer with the unfinished last line;
   *   - whether the last read ended in "\r", so a "\n" starting the next read is not taken
   *     for a second (empty) line, which would dispatch an event too early;
   *   - the data lines and event type of the event being built, dispatched only at the blank
   *     line that ends it.
   */
  class SSEParser {
    constructor() {
      this.decoder = new TextDecoder('utf-8');
      this.buffer = '';
      this.afterCR = false;
      this.started = false;
      this.dataLines = [];
      this.eventType = '';
      this.lastEventId = '';
    }

    /** Feed one network read (a Uint8Array); returns the events it completed. */
    feed(bytes) {
      return this.feedText(this.decoder.decode(bytes, { stream: true }));
    }

    /** Feed already-decoded text (the tests use it to cut strings anywhere). */
    feedText(text) {
      if (!text) return []; // e.g. a read that held only the first bytes of a character
      if (!this.started) {
        this.started = true;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // the spec allows one BOM
      }
      if (this.afterCR && text[0] === '\n') text = text.slice(1); // the rest of a "\r\n"
      this.afterCR = false;
      // The buffer never holds a line terminator, so the search starts at the new text
      // instead of rescanning the buffer: a long line arriving in many pieces stays linear.
      const eol = /\r\n|\r|\n/g;
      eol.lastIndex = this.buffer.length;
      this.buffer += text;
      const events = [];
      let lineStart = 0;
      let match;
      while ((match = eol.exec(this.buffer)) !== null) {
        this.processLine(this.buffer.slice(lineStart, match.index), events);
        lineStart = eol.lastIndex;
      }
      this.afterCR = lineStart === this.buffer.length && this.buffer.endsWith('\r');
      this.buffer = this.buffer.slice(lineStart);
      return events;
    }

    /**
     * The stream ended: flush the decoder. As the spec says, an event without its closing
     * blank line is discarded: a cut connection must not deliver half an event as if whole.
     */
    end() {
      const events = this.feedText(this.decoder.decode());
      this.buffer = '';
      this.dataLines = [];
      this.eventType = '';
      return events;
    }

    processLine(line, events) {
      if (line === '') {
        this.dispatch(events);
        return;
      }
      if (line[0] === ':') return; // a comment: servers send these as keep-alives
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value[0] === ' ') value = value.slice(1);
      if (field === 'data') this.dataLines.push(value);
      else if (field === 'event') this.eventType = value;
      else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
      // "retry" and unknown fields are ignored: an answer is never resumed by reconnecting.
    }

    dispatch(events) {
      if (this.dataLines.length > 0) {
        events.push({
          type: this.eventType || 'message',
          data: this.dataLines.join('\n'), // several data: lines are one value, joined by \n
          id: this.lastEventId,
        });
      }
      this.dataLines = [];
      this.eventType = '';
    }
  }

  /**
   * BROKEN (on purpose), and used by nothing but the tests, which show what it loses: the
   * parser found in many chat front-ends. It treats every network read as whole lines, so an
   * event split across two reads becomes two halves of JSON that fail to parse and are
   * dropped, and a character split across reads (decoded without {stream: true}) becomes
   * U+FFFD.
   */
  function naiveParse(bytes) {
    const events = [];
    for (const line of new TextDecoder().decode(bytes).split('\n')) {
      if (!line.startsWith('data: ')) continue;
      try {
        events.push(JSON.parse(line.slice(6)));
      } catch {
        // a half event: silently lost, which is exactly the bug
      }
    }
    return events;
  }

  const BUSY_RETRIES = 5;
  const BUSY_RETRY_MS = 200;

  /**
   * POST the chat and resolve with the streaming response. A question that finds the model
   * busy waits in the server's line (the stream says where it stands), even behind this tab's
   * own earlier one; only past its share (--per-client) does the server answer 429, for a
   * moment, so it retries briefly instead of showing an error. Used by the worker and by the
   * BROKEN main-thread reader.
   * `token`: the server's, when it listens beyond this machine (null otherwise); `client`:
   * this tab's name in the line (X-Tkchat-Client).
   */
  async function fetchChat(url, body, signal, token = null, client = null) {
    const headers = { 'Content-Type': 'application/json', Accept: 'text/event-stream' };
    if (token) headers.Authorization = 'Bearer ' + token;
    if (client) headers['X-Tkchat-Client'] = client;
    for (let attempt = 0; ; attempt += 1) {
      const response = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        cache: 'no-store',
        signal,
      });
      if (response.status !== 429 || attempt >= BUSY_RETRIES) return response;
      await response.arrayBuffer(); // read the refusal to the end so the connection is reused
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, BUSY_RETRY_MS);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new DOMException('Stopped while waiting for the model', 'AbortError'));
        }, { once: true });
      });
    }
  }

  /**
   * A refused request as {message, kind}: the server's one-line reason (it answers errors as
   * JSON) and its kind ("unauthorized", "line_full"...; null when it gave none), by which the
   * page says it in the reader's language.
   */
  async function describeRefusal(response) {
    const text = await response.text();
    try {
      const data = JSON.parse(text);
      const error = data.error || data.detail || data;
      if (typeof error === 'string') return { message: error, kind: null };
      if (error && typeof error.message === 'string') {
        return { message: error.message, kind: typeof error.kind === 'string' ? error.kind : null };
      }
    } catch {
      // not JSON: fall through to the status line
    }
    return { message: `HTTP ${response.status} ${response.statusText}`.trim(), kind: null };
  }

  /**
   * A stream that failed, as {message, code, detail}: `code` names what the page can say in
   * the reader's language ("not_json", "no_type": a malformed event; "connection": fetch or a
   * read failed, which the browser reports as a TypeError), null for anything else.
   */
  function describeFailure(err) {
    const message = String((err && err.message) || err);
    if (err && typeof err.code === 'string') return { message, code: err.code, detail: err.detail };
    return { message, code: err instanceof TypeError ? 'connection' : null, detail: '' };
  }

  /** An Error the page can put in words (see describeFailure). */
  function malformed(code, message, detail) {
    return Object.assign(new Error(message + detail), { code, detail });
  }

  scope.TkSSE = { SSEParser, naiveParse, fetchChat, describeRefusal, describeFailure };

  // ---- the worker side: only when this file runs as a Web Worker ----------------------------
  const isWorker = typeof WorkerGlobalScope !== 'undefined' && scope instanceof WorkerGlobalScope;
  if (!isWorker) return;

  let current = null; // {id, controller} of the one request in flight

  scope.onmessage = (message) => {
    const msg = message.data;
    if (msg.cmd === 'start') {
      if (current) current.controller.abort(); // the page moved on; free the old connection
      run(msg.id, msg.url, msg.body, msg.token, msg.client);
    } else if (msg.cmd === 'abort' && current && current.id === msg.id) {
      // Aborting the fetch closes the connection; that disconnect is what tells the server
      // to stop the model. Nothing else (no second request, no flag) is needed.
      current.controller.abort();
    }
  };

  async function run(id, url, body, token, client) {
    const controller = new AbortController();
    current = { id, controller };
    let reads = 0;
    let bytes = 0;
    try {
      const response = await fetchChat(url, body, controller.signal, token, client);
      if (!response.ok || !response.body) {
        const refused = await describeRefusal(response);
        const retryAfter = response.headers.get('retry-after');
        scope.postMessage({ id, kind: 'failed', status: response.status, refused, retryAfter });
        return;
      }
      scope.postMessage({ id, kind: 'open' });
      const parser = new SSEParser();
      const reader = response.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        reads += 1;
        bytes += value.byteLength;
        post(id, parser.feed(value));
      }
      post(id, parser.end());
      scope.postMessage({ id, kind: 'closed', reads, bytes });
    } catch (err) {
      if (err && err.name === 'AbortError') {
        scope.postMessage({ id, kind: 'aborted', reads, bytes });
      } else {
        controller.abort(); // a malformed stream: hang up, so the server stops generating too
        scope.postMessage({ id, kind: 'failed', ...describeFailure(err) });
      }
    } finally {
      if (current && current.id === id) current = null;
    }
  }

  /** One postMessage per network read, not per event: each message costs the page a task. */
  function post(id, parsed) {
    if (parsed.length === 0) return;
    // JSON.parse runs here, off the main thread. The wire is untrusted: a malformed event
    // ends the answer with a clear message instead of turning into text.
    const events = [];
    for (const event of parsed) {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        throw malformed('not_json', 'the server sent an event that is not JSON: ', event.data.slice(0, 80));
      }
      if (data === null || typeof data !== 'object' || typeof data.type !== 'string') {
        throw malformed('no_type', 'the server sent an event without a type: ', event.data.slice(0, 80));
      }
      events.push(data);
    }
    scope.postMessage({ id, kind: 'events', events });
  }
})(self);
