"""The GBNF grammars of JSON mode: what a local model may write when a client asks for JSON.

llama.cpp samples under a grammar by keeping only the tokens that the grammar allows next, so
the answer is valid JSON by construction, whatever the model's size (a 135M model included):
once the JSON is closed, only the end-of-generation token is allowed. ``json_object`` gets
llama-cpp-python's JSON grammar (any object); ``json_schema`` gets the grammar its
converter (``json_schema_to_gbnf``, a port of llama.cpp's) writes for the schema.

Two things are checked here, before a grammar can reach a sampler: the schema converts (the
converter raises assertion, attribute and type errors for what it does not understand), and
llama.cpp parses the result — its sampler takes a grammar it cannot parse as *no sampler* and
the process crashes at the first token. Each grammar is also bounded in size: a schema of a
few bytes (``"maxItems": 100000``) becomes megabytes of grammar.

Converting is pure Python and can be slow for a big schema: :func:`grammar_for` runs on a
thread of ``tkchat serve``'s pool (never its event loop) or a worker thread, and remembers
the last schemas it converted. llama-cpp-python is imported here only, when a grammar is
first built.
"""

from __future__ import annotations

import functools

# A 1,000-item array of strings makes 17,000 characters; llama.cpp parses it for every answer.
MAX_GRAMMAR_CHARS = 100_000
CACHED_GRAMMARS = 64


class GrammarError(ValueError):
    """The schema cannot be a grammar; ``str(exc)`` says why, for the client."""


def grammar_for(schema: str | None) -> str:
    """Any thread but the event loop. The grammar for ``schema`` (a JSON schema as JSON text;
    None: any JSON object), or :class:`GrammarError`. Remembered per schema text."""
    return _grammar_for(schema)


@functools.lru_cache(maxsize=CACHED_GRAMMARS)
def _grammar_for(schema: str | None) -> str:
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    if schema is None:
        return JSON_GBNF
    try:
        grammar: str = json_schema_to_gbnf(schema)
    except RecursionError as exc:
        raise GrammarError("The schema is nested too deeply.") from exc
    # The converter reports what it does not understand by assertions and by the errors of
    # reading a value of the wrong type ("properties": 5): all of them are the schema's fault.
    except (AssertionError, AttributeError, TypeError, ValueError, KeyError) as exc:
        raise GrammarError(f"The schema cannot be turned into a grammar: {_said(exc)}") from exc
    if len(grammar) > MAX_GRAMMAR_CHARS:
        raise GrammarError(
            f"The schema makes a grammar of {len(grammar):,} characters; this server takes at "
            f"most {MAX_GRAMMAR_CHARS:,} (lower maxItems, maxLength and the like)."
        )
    if not parses(grammar):
        raise GrammarError("The schema makes a grammar that llama.cpp cannot read.")
    return grammar


@functools.lru_cache(maxsize=CACHED_GRAMMARS)
def parses(grammar: str) -> bool:
    """Any thread. Whether llama.cpp reads ``grammar`` (its own parser, without a model: the
    vocabulary matters only for token literals, which JSON grammars do not have)."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(None, grammar.encode("utf-8"), b"root")
    if not sampler:  # a NULL pointer: llama.cpp said why on stderr
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def _said(exc: Exception) -> str:
    text = " ".join((str(exc) or type(exc).__name__).split())  # one line, whatever it held
    return text if len(text) <= 200 else text[:199] + "…"
