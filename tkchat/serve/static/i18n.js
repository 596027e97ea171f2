/*
 * i18n.js — the page's words about the server's line, in English and Chinese.
 *
 * The language is the browser's first preferred one (Chinese for any "zh-…", English
 * otherwise), or the page's `?lang=en` / `?lang=zh` when given (a teacher's projector, a
 * screenshot). The desktop window keeps its strings in tkchat/i18n/; the page is a separate
 * program and keeps its own here, in the same two languages.
 *
 *   self.TkI18n.lang          "en" | "zh"
 *   self.TkI18n.t(key, args)   the string for key, with {name} filled from args
 *   self.TkI18n.inLine(place)  "3rd in line, about 20 s" for a `queued` event ("at least 20 s"
 *                              when the server says its estimate is only a lower bound)
 */
'use strict';

(function (scope) {
  const STRINGS = {
    en: {
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

  scope.TkI18n = { lang, t, ordinal, inLine, STRINGS };
})(self);
