/*
 * markdown.js — a small markdown renderer that model output cannot escape from.
 *
 * Model output is untrusted input: a model can be prompted (or a page it summarises can
 * prompt it) to write <script>, <img onerror=...>, <iframe> or javascript: links. A general
 * markdown library passes raw HTML through by default and needs a separate sanitizer to be
 * configured correctly; this renderer instead cannot produce anything but its own elements:
 *
 *   1. ESCAPE FIRST. The whole answer goes through escapeHtml() before anything else, so every
 *      "<", ">", "&", '"' and "'" the model wrote is plain text from here on. Raw HTML from the
 *      model therefore shows as the characters it is made of. Only a character reference it
 *      wrote ("&lt;") is kept, and can only ever decode to text (see escapeSource).
 *   2. BUILD FROM ESCAPED TEXT. Block and inline rules only wrap the escaped text in a fixed
 *      set of attribute-less tags: p, h1-h6, strong, em, code, pre, ul, ol, li, blockquote,
 *      hr, br. There is no rule that creates a link, an image or an attribute, so a
 *      [x](javascript:...) link or a ![](http://...) image stays visible text.
 *   3. PARSE INERT, THEN CHECK. The HTML is parsed in a <template>, whose content belongs to an
 *      inert document (nothing in it runs or loads), and every element is checked against the
 *      allow-list before it is handed to the page. If anything else ever showed up (a bug in
 *      the rules above), the answer is shown as plain text instead: fail closed.
 *
 * The page's Content-Security-Policy (no inline script, no images) is a second wall; the tests
 * switch it off and check that this file alone holds.
 *
 * Answers are rendered block by block (renderBlocks) so the page can spread a long answer over
 * several frames, and so the cost of one call stays proportional to one block. That cost is
 * linear whatever the model writes (no regex here can backtrack super-linearly; code spans are
 * a scanner), nesting stops at MAX_DEPTH, and a block over BLOCK_BUDGET_MS is shown as plain
 * text: a degenerate answer never freezes the page.
 */
'use strict';

(function (scope) {
  const ALLOWED_TAGS = new Set([
    'P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'STRONG', 'EM', 'CODE', 'PRE',
    'UL', 'OL', 'LI', 'BLOCKQUOTE', 'HR', 'BR',
  ]);

  const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

  // Cost: every regex below is linear in its input (no nested or overlapping quantifiers
  // that can be retried from many positions), and the inline rules are a scanner or regexes
  // whose span cannot cross the next delimiter. A block nests at most MAX_DEPTH levels deep,
  // and each top-level block gets BLOCK_BUDGET_MS: past it, that block is shown as plain text.
  const MAX_DEPTH = 8;
  const BLOCK_BUDGET_MS = 50;

  /** Plain HTML escaping (NUL becomes U+FFFD, as the HTML parser would). */
  function escapeHtml(text) {
    return String(text).replace(/\0/g, '\uFFFD').replace(/[&<>"']/g, (c) => ENTITIES[c]);
  }

  // A character reference the model wrote ("&lt;", "&#60;", "&copy;") is kept, marked by
  // REF in place of its "&": in text it becomes "&" again and shows as its character (as in
  // the Tk window and CommonMark; escaping it again showed "&lt;" for "<"), in code it becomes
  // "&amp;" and shows as written. Markdown rules never see it as syntax ("&gt; x" is no quote).
  // Safe: a reference can only ever decode to text, since it ends up in a text node.
  const REF = '\u0001';
  const REFERENCE = /&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|([A-Za-z][A-Za-z0-9]{1,31}));|[&<>"']/g;
  const knownNames = new Map(); // name -> whether the HTML parser reads "&name;" whole
  let decoder = null;

  function isNamedReference(name) {
    let known = knownNames.get(name);
    if (known === undefined) {
      // A detached <textarea> parses its content as text (RCDATA): entities are decoded and no
      // element can be made. "&notit;" decodes as "¬it;" (a legacy prefix): not a whole name.
      decoder = decoder || document.createElement('textarea');
      decoder.innerHTML = '&' + name + ';';
      const decoded = decoder.value;
      known = decoded !== '&' + name + ';' && (!decoded.includes(';') || decoded === ';');
      if (knownNames.size < 512) knownNames.set(name, known);
    }
    return known;
  }

  /** Step 1, for markdown: escape everything, keeping the model's own character references. */
  function escapeSource(text) {
    return String(text).replace(/[\0\u0001]/g, '\uFFFD').replace(REFERENCE, (m, name) => {
      if (m.length === 1) return ENTITIES[m];
      return name === undefined || isNamedReference(name) ? REF + m.slice(1) : '&amp;' + m.slice(1);
    });
  }

  const asCode = (escaped) => escaped.replaceAll(REF, '&amp;');

  // Block rules. They run on escaped lines, so a blockquote's ">" is "&gt;" here.
  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;
  const ATX_OPEN = /^ {0,3}(#{1,6})(?:[ \t]|$)/;
  const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}&gt; ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;

  const isBlank = (line) => /^[ \t]*$/.test(line);
  const indentOf = (line) => line.match(/^ */)[0].length;

  /** The end of `text` without its trailing spaces and tabs (a loop: / +$/ is quadratic). */
  function trimmedEnd(text) {
    let end = text.length;
    while (end > 0 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end -= 1;
    return end;
  }

  /** An ATX heading: {level, text} or null; the closing #s go (a scan, not a lazy regex). */
  function heading(line) {
    const m = ATX_OPEN.exec(line);
    if (!m) return null;
    let text = line.slice(m[0].length);
    text = text.slice(0, trimmedEnd(text));
    let hashes = text.length;
    while (hashes > 0 && text[hashes - 1] === '#') hashes -= 1;
    if (hashes === 0) text = '';
    else if (hashes < text.length && (text[hashes - 1] === ' ' || text[hashes - 1] === '\t')) {
      text = text.slice(0, trimmedEnd(text.slice(0, hashes)));
    }
    return { level: m[1].length, text: text.replace(/^[ \t]+/, '') };
  }

  function openFence(line) {
    const m = FENCE.exec(line);
    if (!m) return null;
    if (m[2][0] === '`' && m[3].includes('`')) return null; // ```x`y is inline code, not a fence
    return { indent: m[1].length, char: m[2][0], length: m[2].length };
  }

  function startsBlock(line) {
    return openFence(line) !== null || heading(line) !== null || HR.test(line) ||
      QUOTE.test(line) || ITEM.test(line);
  }

  // Unfenced code: the rules of tkchat/render/code_runs.py, line for line (its docstring says
  // them; tests/test_code_runs.py checks that the window and this page find the same runs).
  // Only top-level lines are asked (depth 0), as the window's block scanner does; the text is
  // whole here, so nothing waits for lines still to come. The lines are escaped: the rules
  // read them as the model wrote them (rawLine).
  const NAME = '[A-Za-z_]\\w*';
  const TARGET = `${NAME}(?:\\.${NAME})*(?:\\[[^\\]]*\\])*`;
  const LOOKS_LIKE_PYTHON = new RegExp('^(?:' + [
    `(?:async[ \\t]+)?def[ \\t]+${NAME}[ \\t]*\\(.*\\)(?:[ \\t]*->.+)?:`,
    `class[ \\t]+${NAME}(?:[ \\t]*\\(.*\\))?:`,
    '(?:if|elif|while)[ \\t]+\\S.*:',
    `for[ \\t]+\\(?${NAME}(?:[ \\t]*,[ \\t]*${NAME})*\\)?[ \\t]+in[ \\t]+\\S.*:`,
    'with[ \\t]+(?:\\S.*[ \\t]+as[ \\t]+\\S.*|[\\w.]+\\(.*\\)):',
    '(?:else|try|finally):',
    'except(?:[ \\t]+\\S.*)?:',
    `import[ \\t]+[\\w.]+(?:[ \\t]+as[ \\t]+${NAME})?(?:[ \\t]*,[ \\t]*[\\w.]+(?:[ \\t]+as[ \\t]+${NAME})?)*`,
    'from[ \\t]+\\.*[\\w.]*[ \\t]+import[ \\t]+\\S.*',
    '(?:return|yield)(?:[ \\t]+\\S.*)?',
    'raise(?:[ \\t]+[\\w.]+(?:\\(.*\\))?)?',
    'pass|break|continue',
    '(?:assert|del|global|nonlocal)[ \\t]+\\S.*',
    `@${NAME}(?:\\.${NAME})*(?:\\(.*\\))?`,
    `\\(?${TARGET}(?:[ \\t]*,[ \\t]*${TARGET})*\\)?[ \\t]*` +
      '(?://|\\*\\*|>>|<<|[-+*/%&|^@])?=(?!=)[ \\t]*\\S.*',
    `${TARGET}\\(.*\\)`,
  ].join('|') + ')$');
  const MAX_CODE_LINE_CHARS = 400; // longer lines never look like Python (and bound a regex)
  const MAX_COMMENTS_ABOVE = 8; // comment lines above a run's code: walked from every line
  const TRAILING_COMMENT = /[ \t]+#[^'"]*$/;
  const CLOSING_BRACKETS = /^[\]})]+[,;:]?$/;
  const RAW = { lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' };

  /** An escaped line as the model wrote it (one pass, so "&amp;lt;" stays "&lt;"). */
  const rawLine = (line) => line.replace(/&(lt|gt|quot|#39|amp);/g, (_, n) => RAW[n])
    .replaceAll(REF, '&');
  function stripSpaces(text) {
    const start = text.replace(/^[ \t]+/, '');
    return start.slice(0, trimmedEnd(start));
  }

  /** Columns of indentation, a tab to the next multiple of 4 (syntax.indent_width). */
  function indentWidth(line) {
    let col = 0;
    for (const ch of line) {
      if (ch === ' ') col += 1;
      else if (ch === '\t') col = (Math.floor(col / 4) + 1) * 4;
      else break;
    }
    return col;
  }

  function looksLikePython(line) {
    const text = stripSpaces(rawLine(line));
    if (!text || text.length > MAX_CODE_LINE_CHARS || (text.endsWith('.') && !text.endsWith('...'))) {
      return false;
    }
    if (LOOKS_LIKE_PYTHON.test(text)) return true;
    const bare = text.replace(TRAILING_COMMENT, '');
    return bare !== text && LOOKS_LIKE_PYTHON.test(bare);
  }

  const isComment = (line) => line.replace(/^[ \t]+/, '').startsWith('#');
  const codeLine = (line) => looksLikePython(line) || CLOSING_BRACKETS.test(stripSpaces(line));
  const bareFence = (line) => openFence(line) !== null && stripSpaces(FENCE.exec(line)[3]) === '';
  const lineAt = (lines, k) => (k < lines.length ? lines[k] : null);

  /** {end, closed} if a run of unfenced Python starts at lines[i], else null (rule 2). */
  function codeRunEnd(lines, i) {
    const first = i;
    while (isComment(lines[i]) && indentWidth(lines[i]) <= 3) {
      i += 1;
      if (i - first > MAX_COMMENTS_ABOVE || lineAt(lines, i) === null) return null;
    }
    const line = lines[i];
    if (indentWidth(line) > 3 || !looksLikePython(line)) return null;
    let k = i + 1;
    let after = lineAt(lines, k);
    while (after !== null && isComment(after)) after = lineAt(lines, ++k);
    if (after === null || isBlank(after)) return null;
    if (k === i + 1 && bareFence(after)) return { end: k + 1, closed: true };
    if (!(looksLikePython(after) || indentWidth(after) > indentWidth(line))) return null;
    return runEnd(lines, k + 1, indentWidth(line));
  }

  /** Rule 3: follow a run from lines[j]. */
  function runEnd(lines, j, base) {
    for (;;) {
      const line = lineAt(lines, j);
      if (line === null) return { end: j, closed: false };
      if (isBlank(line)) {
        let k = j;
        while (lineAt(lines, k) !== null && isBlank(lines[k])) k += 1;
        if (k >= lines.length || !goesOnAfterBlank(lines, k, base)) return { end: j, closed: false };
        j = k;
        continue;
      }
      if (bareFence(line)) return { end: j + 1, closed: true };
      if (openFence(line) !== null) return { end: j, closed: false };
      if (!(codeLine(line) || isComment(line) || indentWidth(line) > base)) {
        return { end: j, closed: false };
      }
      j += 1;
    }
  }

  function goesOnAfterBlank(lines, k, base) {
    const line = lines[k];
    if (openFence(line) !== null) return false;
    if (codeLine(line) || indentWidth(line) > base) return true;
    if (!isComment(line)) return false;
    const after = lineAt(lines, k + 1);
    return after !== null && !isBlank(after) && openFence(after) === null &&
      (codeLine(after) || indentWidth(after) > base);
  }

  /** Thrown when a top-level block runs over its budget; renderBlocks shows it as text. */
  const OVER_BUDGET = new Error('markdown block over its time budget');
  let deadline = Infinity;

  function checkBudget() {
    if (deadline !== Infinity && performance.now() > deadline) throw OVER_BUDGET;
  }

  /**
   * Escaped lines -> a list of blocks, each {html} or, for a paragraph, {para: innerHtml}
   * (kept apart so a tight list item can drop its <p>).
   */
  function parseBlocks(lines, depth) {
    const blocks = [];
    let i = 0;
    while (i < lines.length) {
      if (isBlank(lines[i])) {
        i += 1;
        continue;
      }
      const one = parseBlock(lines, i, depth);
      blocks.push(one.block);
      i = one.next;
    }
    return blocks;
  }

  /** The block starting at the non-blank lines[i]: {block, next}. */
  function parseBlock(lines, i, depth) {
    checkBudget();
    const line = lines[i];
    const nested = depth < MAX_DEPTH; // deeper, quotes and lists are read as paragraph text
    const fence = openFence(line);
    if (fence) {
      // An unclosed fence runs to the end: mid-stream, the answer is usually in one.
      const body = [];
      i += 1;
      while (i < lines.length) {
        const close = FENCE_CLOSE.exec(lines[i]);
        if (close && close[1][0] === fence.char && close[1].length >= fence.length) {
          i += 1;
          break;
        }
        body.push(lines[i].slice(Math.min(fence.indent, indentOf(lines[i]))));
        i += 1;
      }
      return { block: { html: '<pre><code>' + asCode(body.join('\n')) + '</code></pre>' }, next: i };
    }
    const run = depth === 0 ? codeRunEnd(lines, i) : null;
    if (run) { // unfenced code, shown as the fenced code it is (a forgotten opener's closer goes)
      const body = lines.slice(i, run.closed ? run.end - 1 : run.end);
      return { block: { html: '<pre><code>' + asCode(body.join('\n')) + '</code></pre>' }, next: run.end };
    }
    const h = heading(line);
    if (h) {
      return { block: { html: `<h${h.level}>${inline(h.text)}</h${h.level}>` }, next: i + 1 };
    }
    if (HR.test(line)) return { block: { html: '<hr>' }, next: i + 1 };
    if (nested && QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && !isBlank(lines[i])) {
        if (QUOTE.test(lines[i])) inner.push(lines[i].replace(QUOTE, ''));
        else if (startsBlock(lines[i])) break;
        else inner.push(lines[i]); // a lazy continuation of the quoted paragraph
        i += 1;
      }
      const html = '<blockquote>' + toHtml(parseBlocks(inner, depth + 1), false) + '</blockquote>';
      return { block: { html }, next: i };
    }
    if (nested && ITEM.test(line)) {
      const list = parseList(lines, i, depth);
      return { block: { html: list.html }, next: list.next };
    }
    // Leading spaces go; trailing ones stay until inline() has seen them (two = a <br>).
    const para = [line.trimStart()];
    i += 1;
    while (i < lines.length && !isBlank(lines[i]) && !(nested && startsBlock(lines[i])) &&
      !(depth === 0 && codeRunEnd(lines, i))) {
      para.push(lines[i].trimStart());
      i += 1;
    }
    const text = inline(para.join('\n'));
    return { block: { para: text.slice(0, trimmedEnd(text)) }, next: i };
  }

  /** A list starting at lines[start]; items hold blocks of their own (nested lists, code). */
  function parseList(lines, start, depth) {
    const kind = (m) => (/\d/.test(m[2][0]) ? 'ol' + m[2].slice(-1) : 'ul' + m[2]);
    const first = ITEM.exec(lines[start]);
    const listKind = kind(first);
    const items = [];
    let loose = false;
    let i = start;
    for (;;) {
      checkBudget();
      const m = ITEM.exec(lines[i]);
      const gap = m[3].length;
      const contentIndent = m[1].length + m[2].length + (gap === 0 || gap > 4 ? 1 : gap);
      const body = [m[4]];
      i += 1;
      while (i < lines.length) {
        const line = lines[i];
        if (isBlank(line)) {
          let j = i;
          while (j < lines.length && isBlank(lines[j])) j += 1;
          if (j < lines.length && indentOf(lines[j]) >= contentIndent) {
            for (; i < j; i += 1) body.push('');
            loose = true;
            continue;
          }
          break;
        }
        if (indentOf(line) >= contentIndent) body.push(line.slice(contentIndent));
        else if (startsBlock(line)) break;
        else if (depth === 0 && indentWidth(line) === 0 && codeRunEnd(lines, i)) break;
        else body.push(line.trim()); // lazy continuation
        i += 1;
      }
      items.push(body);
      let j = i;
      while (j < lines.length && isBlank(lines[j])) j += 1;
      const next = j < lines.length ? ITEM.exec(lines[j]) : null;
      if (!next || kind(next) !== listKind) break;
      if (j > i) loose = true;
      i = j;
    }
    const tag = listKind.slice(0, 2);
    const html = items
      .map((body) => '<li>' + toHtml(parseBlocks(body, depth + 1), !loose) + '</li>')
      .join('');
    return { html: `<${tag}>${html}</${tag}>`, next: i };
  }

  function toHtml(blocks, tight) {
    return blocks.map((b) => (b.para === undefined ? b.html : tight ? b.para : `<p>${b.para}</p>`))
      .join('');
  }

  /**
   * Code spans, by a scanner: a run of n backticks opens a span that the next run of exactly n
   * closes; a run with no such partner is literal text. The runs of each length are listed
   * once and a cursor per length only moves forward, so the whole scan is linear (the regex
   * it replaces retried every opening run to the end: "x" + 3,000 backticks took seconds).
   */
  function codeSpans(text, keep) {
    const runs = []; // [start, length] of every maximal backtick run
    for (let i = text.indexOf('`'); i !== -1; i = text.indexOf('`', i)) {
      let j = i;
      while (j < text.length && text[j] === '`') j += 1;
      runs.push([i, j - i]);
      i = j;
    }
    if (runs.length < 2) return text;
    const byLength = new Map(); // length -> indices into runs, ascending
    runs.forEach(([, length], k) => {
      if (!byLength.has(length)) byLength.set(length, { runs: [], cursor: 0 });
      byLength.get(length).runs.push(k);
    });
    let out = '';
    let last = 0;
    for (let k = 0; k < runs.length;) {
      const [start, length] = runs[k];
      const same = byLength.get(length);
      while (same.cursor < same.runs.length && same.runs[same.cursor] <= k) same.cursor += 1;
      if (same.cursor === same.runs.length) {
        k += 1; // no closing run of this length: literal backticks
        continue;
      }
      const close = same.runs[same.cursor];
      let code = text.slice(start + length, runs[close][0]).replaceAll('\n', ' ');
      if (code.length > 1 && code[0] === ' ' && code[code.length - 1] === ' ' && /[^ ]/.test(code)) {
        code = code.slice(1, -1);
      }
      out += text.slice(last, start) + keep('<code>' + asCode(code) + '</code>');
      last = runs[close][0] + length;
      k = close + 1;
    }
    return out + text.slice(last);
  }

  /** "  \n" or "\\\n" is a hard line break; per line, without a regex over runs of spaces. */
  function hardBreaks(text) {
    const lines = text.split('\n');
    for (let i = 0; i < lines.length - 1; i += 1) {
      const line = lines[i];
      const end = trimmedEnd(line.replaceAll('\t', 'x')); // spaces only, as before
      if (line.length - end >= 2) lines[i] = line.slice(0, end) + '<br>';
      else if (line.endsWith('\\')) lines[i] = line.slice(0, -1) + '<br>';
    }
    return lines.join('\n');
  }

  /**
   * Inline rules on one escaped paragraph. Code spans and backslash escapes are set aside as
   * numbered placeholders first, so emphasis rules never reach inside them. An emphasis span
   * cannot cross the next delimiter of its kind, so each opener looks no further than that.
   */
  function inline(text) {
    checkBudget();
    const stash = [];
    const keep = (html) => '\0' + (stash.push(html) - 1) + '\0';
    let s = codeSpans(text, keep);
    s = s.replace(/\\([\\`*_{}[\]()#+\-.!|~])/g, (_, c) => keep(c));
    s = s
      .replace(/\*\*(?=\S)((?:[^*]|\*(?!\*))*?\S)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^\w])__(?=\S)((?:[^_]|_(?!_))*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
      .replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, '<em>$1</em>')
      .replace(/(^|[^\w])_(?=\S)([^_]*?\S)_(?!\w)/g, '$1<em>$2</em>');
    s = hardBreaks(s);
    checkBudget();
    return s.replace(/\0(\d+)\0/g, (_, n) => stash[Number(n)]);
  }

  /**
   * Markdown -> one HTML string per top-level block (all text escaped, only allowed tags).
   * A block that takes more than `budgetMs` to build is shown as its plain text instead.
   */
  function renderBlocks(markdown, budgetMs = BLOCK_BUDGET_MS) {
    const lines = escapeSource(markdown).split(/\r\n|\r|\n/);
    const html = [];
    let i = 0;
    while (i < lines.length) {
      if (isBlank(lines[i])) {
        i += 1;
        continue;
      }
      deadline = performance.now() + budgetMs;
      try {
        const one = parseBlock(lines, i, 0);
        html.push(toHtml([one.block], false));
        i = one.next;
      } catch (err) {
        if (err !== OVER_BUDGET) throw err;
        let j = i + 1;
        while (j < lines.length && !isBlank(lines[j])) j += 1;
        html.push('<p>' + asCode(lines.slice(i, j).join('<br>')) + '</p>');
        renderBlocks.fallbacks += 1;
        i = j;
      } finally {
        deadline = Infinity;
      }
    }
    return html.map((h) => h.replaceAll(REF, '&'));
  }
  renderBlocks.fallbacks = 0; // blocks shown as plain text for their budget (a test hook)

  /** Step 3: parse in an inert <template>, check every element, or fall back to plain text. */
  function toFragment(html, sourceText) {
    // (sourceText: what to show if the check fails; a lone block falls back to its own text.)
    const template = document.createElement('template');
    template.innerHTML = html; // template content is inert: nothing in it runs or loads
    const walker = document.createTreeWalker(template.content, NodeFilter.SHOW_ELEMENT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!ALLOWED_TAGS.has(node.tagName) || node.attributes.length > 0) {
        const fallback = document.createDocumentFragment();
        const p = document.createElement('p');
        p.textContent = sourceText === undefined ? template.content.textContent : sourceText;
        fallback.append(p);
        return fallback;
      }
    }
    return template.content;
  }

  /** The whole answer at once, as a DocumentFragment ready to insert. */
  function renderMarkdown(markdown) {
    return toFragment(renderBlocks(markdown).join(''), markdown);
  }

  scope.TkMarkdown = { ALLOWED_TAGS, escapeHtml, renderBlocks, renderMarkdown, toFragment };
})(self);
