"""Every size tkchat lets a server or an answer reach: the one list of budgets.

The window's one promise is that it never freezes. A hostile or broken server (or a model
that loops) can send anything — an error message of megabytes, blank lines forever, one line
without a break, more tokens than were asked for — so everything that reaches memory or the
screen has a bound, and every bound is named here, so that there is one place to read them and
one place to change them. Tk-free and dependency-free: any layer may import it.

What happens at each bound:

- a model's or a server's name (a file name, what a server's ``/health`` or ``/v1/models``
  says) past :data:`MAX_NAME_CHARS` is cut with "…" where it is shown (a request still
  names the model exactly);
- text past :data:`MAX_ERROR_CHARS` in an error or status sentence is cut with "…"
  (:func:`cut`); the full text goes to the log (up to :data:`MAX_LOGGED_ERROR_CHARS`);
- a line or an event larger than :data:`MAX_EVENT_BYTES`, a response larger than
  :data:`MAX_RESPONSE_BYTES`, or :data:`MAX_BYTES_WITHOUT_EVENT` bytes in a row that complete
  no event (blank lines, comments) end the generation with one clear ``error``; so does a
  stream that sends no event for :data:`EVENT_TIMEOUT_S` seconds, whatever keep-alives it
  sends;
- an answer reaching ``max_tokens`` pieces, or :data:`MAX_ANSWER_CHARS` characters, is
  stopped by the worker (the stream is closed) and ends with ``done(reason="length")``;
- search finds text in the first :data:`MAX_INDEXED_CHARS` characters of a message (its
  index entry is bounded, so an answer's end fits on a small disk; all of it is saved);
- a displayed line gets a line end on screen only (the transcript's copy and every export
  keep the original text): a run of :data:`DISPLAY_LINE_CHARS` characters without a space
  at that point, prose at a sentence's end past it, any line at twice it at the latest
  (:mod:`tkchat.render.soft_breaks`);
- a chat template that runs longer than :data:`CHAT_TEMPLATE_BUDGET_S` is stopped and the
  question gets one sentence naming the model file;
- a markdown block over :data:`MAX_MARKDOWN_LINKS`, :data:`MAX_MARKDOWN_EMPHASIS` or
  :data:`MAX_MARKDOWN_NESTING`, or longer than :data:`MAX_RENDERED_BLOCK_CHARS`, is shown as
  plain text, not rendered.
"""

from __future__ import annotations

# -- text shown to the user ------------------------------------------------------------------

MAX_ERROR_CHARS = 300  # an error or status sentence on screen (status line, transcript note)
MAX_NAME_CHARS = 120  # a model's or a server's name (title bar, status line, /health)
MAX_LOGGED_ERROR_CHARS = 64_000  # the same error, in the log: the "full" text, still bounded
MAX_ANSWER_CHARS = 1_000_000  # characters of one answer, whatever backend and max_tokens say
DISPLAY_LINE_CHARS = 1_000  # longest run without a space Tk lays out (a line: twice this)
MAX_STOP_STRINGS = 4  # an OpenAI client's ``stop``: as many as OpenAI allows
MAX_STOP_CHARS = 100  # one stop string; the worker holds back at most this minus one characters

MAX_INDEXED_CHARS = 100_000  # of one message, in the search index (the rest: saved, not indexed)

# -- a model file's chat template (tkchat/generate/chat_template.py) -------------------------

CHAT_TEMPLATE_BUDGET_S = 2.0  # rendering one prompt: a template still running is stopped

# -- markdown rendered in the window (tkchat/render/to_html.py): over these, plain text --------

MAX_MARKDOWN_LINKS = 32  # "[" in one block: Python-Markdown backtracks over each one
MAX_MARKDOWN_EMPHASIS = 256  # "*" and "_" in one block
MAX_MARKDOWN_NESTING = 16  # block quotes or lists opened on one line
MAX_RENDERED_BLOCK_CHARS = 64_000  # a longer block (one paragraph...) stays plain text

# -- bytes from a server ---------------------------------------------------------------------

MAX_EVENT_BYTES = 1 << 20  # one SSE line, or one event's data (an answer chunk is tiny)
MAX_JSON_BYTES = 1 << 20  # a JSON body: /health, /v1/models, an error answer
MAX_RESPONSE_BYTES = 64 << 20  # all bytes of one streamed answer
MAX_BYTES_WITHOUT_EVENT = 2 * MAX_EVENT_BYTES  # bytes in a row completing no event (blank lines)
HANDSHAKE_TIMEOUT_S = 20.0  # a whole GET /health or /v1/models, however slowly it trickles
EVENT_TIMEOUT_S = 60.0  # a streamed answer with no event this long ends (keep-alives or not)
# Caches of chats a local model read earlier, kept in memory (tkchat.generate.prompt_eval.
# KeptStates; Settings, "Kept chats"): this many MB by default, 0 none, at most the maximum.
DEFAULT_KEPT_MB = 512
MAX_KEPT_MB = 1 << 20
MAX_N_CTX = 1 << 24  # a context size a server may claim (16 M tokens; larger is a lie)
MAX_RETRY_DIGITS = 9  # an SSE ``retry:`` field (milliseconds): longer is ignored

ELLIPSIS = "…"


def cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters, "…" marking a cut. Runs of
    whitespace (a server's message can be a whole HTML page) become one space. Linear, and it
    never looks at more than a bounded prefix, so a megabyte of text costs microseconds."""
    head = text[: limit * 4 + 16]  # whitespace runs shrink: a bounded prefix is enough
    line = " ".join(head.split())
    if len(line) <= limit and len(head) == len(text):
        return line
    return line[: limit - 1].rstrip() + ELLIPSIS
