"""The browser page's side of ``python -m tests.tools.hostile``: markdown an answer can use to make
the page's renderer (``tkchat/serve/static/markdown.js``) slow, timed in Chromium.

The page's own ``markdown.js`` is loaded into a blank page of the system Chromium (driven by
Playwright) and renders each input of :data:`INPUTS` — every one of them
:data:`CHARS` characters — as the page would (``renderBlocks`` then ``toFragment``), best of
:data:`REPEATS`. The baseline of the same run is ordinary mixed markdown of the same length:
an adversarial input must cost no more than it, plus :data:`SLACK_MS`.

No Tk; main thread (Playwright's sync API). Needs Playwright and Chromium (the test extras);
without them :func:`measure_page` returns None and the bench says so.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHARS = 20_000
REPEATS = 3
SLACK_MS = 5.0  # an adversarial input may cost ordinary markdown's time plus this
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]
MARKDOWN_JS = Path(__file__).resolve().parents[2] / "tkchat" / "serve" / "static" / "markdown.js"

_BLOCK = (
    "## A heading\n\nSome **bold** and *em* text with `code` and __more__ and _this_.\n"
    "- a list item\n- another with `x < y`\n\n> a quote\n\n```\nfenced code\n```\n\n"
)
ORDINARY = (_BLOCK * (CHARS // len(_BLOCK) + 1))[:CHARS]

# What made the page's earlier renderer super-linear (issue 15), or overflowed its stack.
INPUTS = {
    '`"x"` + backticks': "x" + "`" * CHARS,
    "backtick runs of growing length": "".join("`" * k + "a" for k in range(1, 200)),
    "a code span with a leading space": "` " + "a" * CHARS + "`",
    "unclosed `**`": "**a " * (CHARS // 4),
    "unclosed `*`": "*a " * (CHARS // 3),
    'unclosed `" __a"`': " __a" * (CHARS // 4),
    "unclosed `_`": " _a" * (CHARS // 3),
    "spaces before no break": "a" + " " * CHARS + "b",
    '`"# a"` + spaces': "# a" + " " * CHARS + "b",
    '`"- "` repeated': "- " * (CHARS // 2) + "x",
    '`"> "` repeated': "> " * (CHARS // 2) + "x",
    "`[` repeated": "[" * CHARS,
    '`"[a]("` repeated': "[a](" * (CHARS // 4),
    "`&lt;` repeated": "&lt;" * (CHARS // 4),
}

TIME_JS = """([source, repeats]) => {
  let best = Infinity;
  for (let r = 0; r < repeats; r += 1) {
    const t0 = performance.now();
    TkMarkdown.toFragment(TkMarkdown.renderBlocks(source).join(''));
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}"""


_FALLBACKS_JS = "() => TkMarkdown.renderBlocks.fallbacks"


@dataclass
class PageFigures:
    ordinary_ms: float  # ordinary mixed markdown of CHARS characters (the baseline)
    inputs_ms: dict[str, float]  # each adversarial input
    fallbacks: int  # blocks the page's time budget showed as plain text, while measured

    @property
    def slowest(self) -> tuple[str, float]:
        name = max(self.inputs_ms, key=lambda key: self.inputs_ms[key])
        return name, self.inputs_ms[name]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def measure_page() -> PageFigures | None:
    """Every input rendered in Chromium by the page's markdown.js; None without a browser."""
    executable = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if executable is None:
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto("about:blank")
            page.add_script_tag(path=str(MARKDOWN_JS))
            page.evaluate(TIME_JS, [ORDINARY, 3])  # warm up the JIT on the same work
            # A cold first render may overrun the page's block budget; count from here.
            before = int(page.evaluate(_FALLBACKS_JS))
            ordinary = float(page.evaluate(TIME_JS, [ORDINARY, REPEATS + 2]))
            inputs = {
                name: round(float(page.evaluate(TIME_JS, [source, REPEATS])), 2)
                for name, source in INPUTS.items()
            }
            fallbacks = int(page.evaluate(_FALLBACKS_JS)) - before
            if fallbacks:
                # One block over its 50 ms budget may be the machine's doing (both cores busy
                # stalled the renderer): an input counts only if it needs the budget every
                # time it is rendered again.
                fallbacks = sum(_always_over_budget(page, source) for source in INPUTS.values())
        finally:
            browser.close()
    return PageFigures(round(ordinary, 2), inputs, fallbacks)


def _always_over_budget(page: Any, source: str, tries: int = 3) -> bool:
    """Whether rendering ``source`` needed the page's block budget in each of ``tries``
    renders."""
    for _ in range(tries):
        before = int(page.evaluate(_FALLBACKS_JS))
        page.evaluate(TIME_JS, [source, 1])
        if int(page.evaluate(_FALLBACKS_JS)) == before:
            return False
    return True


def page_verdicts(figures: PageFigures) -> list[tuple[str, bool, str]]:
    bound = figures.ordinary_ms + SLACK_MS
    name, worst = figures.slowest
    return [
        (
            f"page: every adversarial input ≤ ordinary markdown + {SLACK_MS:g} ms",
            worst <= bound,
            f"{name} {worst} ms, ordinary {figures.ordinary_ms} ms",
        ),
        ("page: no block needed the time budget", figures.fallbacks == 0, f"{figures.fallbacks}"),
    ]


def readme_sentence(figures: PageFigures) -> str:
    """docs/security.md's sentence, written from one run."""
    _name, worst = figures.slowest
    return (
        f"In Chromium ({CHARS:,} characters each, best of {REPEATS} renders), the "
        f"{len(figures.inputs_ms)} inputs of `tests/tools/hostile_page.py` cost at most "
        f"{worst} ms each, against {figures.ordinary_ms} ms for ordinary mixed markdown "
        f"of the same length (bound: that plus {SLACK_MS:g} ms); {figures.fallbacks} blocks "
        "needed the time budget"
    )
