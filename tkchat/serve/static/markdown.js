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
 *      model therefore shows as the characters it is made of.
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
 * several frames, and so the cost of one call stays proportional to one block.
 */
'use strict';

(function (scope) {
  const ALLOWED_TAGS = new Set([
    'P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'STRONG', 'EM', 'CODE', 'PRE',
    'UL', 'OL', 'LI', 'BLOCKQUOTE', 'HR', 'BR',
  ]);

  const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

  /** Step 1. NUL becomes U+FFFD (as the HTML parser would) so it can serve as a placeholder. */
  function escapeHtml(text) {
    return String(text).replace(/\0/g, '\uFFFD').replace(/[&<>"']/g, (c) => ENTITIES[c]);
  }

  // Block rules. They run on escaped lines, so a blockquote's ">" is "&gt;" here.
  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}&gt; ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;

  const isBlank = (line) => /^[ \t]*$/.test(line);
  const indentOf = (line) => line.match(/^ */)[0].length;

  function openFence(line) {
    const m = FENCE.exec(line);
    if (!m) return null;
    if (m[2][0] === '`' && m[3].includes('`')) return null; // ```x`y is inline code, not a fence
    return { indent: m[1].length, char: m[2][0], length: m[2].length };
  }

  function startsBlock(line) {
    return openFence(line) !== null || ATX.test(line) || HR.test(line) || QUOTE.test(line) ||
      ITEM.test(line);
  }

  /**
   * Escaped lines -> a list of blocks, each {html} or, for a paragraph, {para: innerHtml}
   * (kept apart so a tight list item can drop its <p>).
   */
  function parseBlocks(lines) {
    const blocks = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (isBlank(line)) {
        i += 1;
        continue;
      }
      const fence = openFence(line);
      if (fence) {
        // An unclosed fence runs to the end: mid-stream, the answer is usually in one.
        const body = [];
        i += 1;
        while (i < lines.length) {
          const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
          if (close && close[1][0] === fence.char && close[1].length >= fence.length) {
            i += 1;
            break;
          }
          body.push(lines[i].slice(Math.min(fence.indent, indentOf(lines[i]))));
          i += 1;
        }
        blocks.push({ html: '<pre><code>' + body.join('\n') + '</code></pre>' });
        continue;
      }
      let m = ATX.exec(line);
      if (m) {
        const level = m[1].length;
        blocks.push({ html: `<h${level}>${inline(m[2] || '')}</h${level}>` });
        i += 1;
        continue;
      }
      if (HR.test(line)) {
        blocks.push({ html: '<hr>' });
        i += 1;
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        while (i < lines.length && !isBlank(lines[i])) {
          if (QUOTE.test(lines[i])) inner.push(lines[i].replace(QUOTE, ''));
          else if (startsBlock(lines[i])) break;
          else inner.push(lines[i]); // a lazy continuation of the quoted paragraph
          i += 1;
        }
        blocks.push({ html: '<blockquote>' + toHtml(parseBlocks(inner), false) + '</blockquote>' });
        continue;
      }
      m = ITEM.exec(line);
      if (m) {
        const list = parseList(lines, i);
        blocks.push({ html: list.html });
        i = list.next;
        continue;
      }
      // Leading spaces go; trailing ones stay until inline() has seen them (two = a <br>).
      const para = [line.trimStart()];
      i += 1;
      while (i < lines.length && !isBlank(lines[i]) && !startsBlock(lines[i])) {
        para.push(lines[i].trimStart());
        i += 1;
      }
      blocks.push({ para: inline(para.join('\n')).trimEnd() });
    }
    return blocks;
  }

  /** A list starting at lines[start]; items hold blocks of their own (nested lists, code). */
  function parseList(lines, start) {
    const kind = (m) => (/\d/.test(m[2][0]) ? 'ol' + m[2].slice(-1) : 'ul' + m[2]);
    const first = ITEM.exec(lines[start]);
    const listKind = kind(first);
    const items = [];
    let loose = false;
    let i = start;
    for (;;) {
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
    const html = items.map((body) => '<li>' + toHtml(parseBlocks(body), !loose) + '</li>').join('');
    return { html: `<${tag}>${html}</${tag}>`, next: i };
  }

  function toHtml(blocks, tight) {
    return blocks.map((b) => (b.para === undefined ? b.html : tight ? b.para : `<p>${b.para}</p>`))
      .join('');
  }

  /**
   * Inline rules on one escaped paragraph. Code spans and backslash escapes are set aside as
   * numbered placeholders first, so emphasis rules never reach inside them.
   */
  function inline(text) {
    const stash = [];
    const keep = (html) => '\0' + (stash.push(html) - 1) + '\0';
    let s = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_, ticks, body) => {
      let code = body.replace(/\n/g, ' ');
      if (/^ [\s\S]*[^ ][\s\S]* $/.test(code)) code = code.slice(1, -1);
      return keep('<code>' + code + '</code>');
    });
    s = s.replace(/\\([\\`*_{}[\]()#+\-.!|~])/g, (_, c) => keep(c));
    s = s
      .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
      .replace(/\*(?=[^\s*])([\s\S]*?[^\s*])\*/g, '<em>$1</em>')
      .replace(/(^|[^\w])_(?=\S)([\s\S]*?\S)_(?!\w)/g, '$1<em>$2</em>')
      .replace(/(?: {2,}|\\)\n/g, '<br>\n');
    return s.replace(/\0(\d+)\0/g, (_, n) => stash[Number(n)]);
  }

  /** Markdown -> one HTML string per top-level block (all text escaped, only allowed tags). */
  function renderBlocks(markdown) {
    const lines = escapeHtml(markdown).split(/\r\n|\r|\n/);
    return parseBlocks(lines).map((b) => toHtml([b], false));
  }

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
