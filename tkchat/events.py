"""The event contract shared by every stage (see docs/architecture.md, "Event contract").

Events are small immutable values. A worker thread creates them, the transport carries them,
the Tk main thread consumes them; because they are frozen, no stage can change what another
stage sees. On the wire (SSE) the same events are JSON objects, built by :func:`to_wire`.

Every generation ``gen`` emits ``chunk`` events with ``seq`` = 1, 2, 3, ... and ends with
exactly one ``done`` or ``error`` whose ``seq`` follows the last chunk. While a long prompt is
read, before the first chunk, ``progress`` events (numbered the same way) say how far.

Before a generation exists, ``tkchat serve`` may tell a request its place in the line
(:class:`QueuePlace`, ``queued`` on the wire): it belongs to the request, not to a generation,
so it has no ``gen`` or ``seq``, and it travels as an SSE event named ``queued`` that a client
which does not show the line (the window's remote backend) simply skips.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

FinishReason = Literal["stop", "length", "cancelled"]
FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "length", "cancelled")


@dataclass(frozen=True, slots=True)
class GenerationStats:
    """Figures measured by the worker, in its own clock (``time.perf_counter``)."""

    tokens: int = 0
    ttft_ms: float | None = None  # request start -> first decoded text, worker side
    tokens_per_s: float | None = None  # decode speed: (tokens - 1) / (last - first token)
    elapsed_s: float = 0.0
    finished_at: float = 0.0  # perf_counter when the worker left the model loop
    prompt_tokens: int = 0  # context tokens the model read before answering
    context_dropped: int = 0  # earlier messages left out to fit the context (generate/context.py)
    prompt_reused: int = 0  # of prompt_tokens, those found already evaluated in the model's cache
    prompt_eval_ms: float | None = None  # reading the rest of the prompt (None: not reported)
    # Of prompt_reused, those from a cache kept from earlier (another chat, a model closed and
    # loaded again), and the memory every kept cache takes (a local model's; 0 elsewhere).
    prompt_restored: int = 0
    kept_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of answer text. ``text`` is always whole characters (never split UTF-8)."""

    gen: int
    seq: int
    text: str
    type: Literal["chunk"] = field(default="chunk", init=False)


@dataclass(frozen=True, slots=True)
class Progress:
    """How far the model has read the prompt: ``done`` of ``total`` tokens (``done`` counts
    the tokens it could reuse from its cache too). Sent a few times a second at most, only
    while a prompt takes long enough to be worth a progress bar."""

    gen: int
    seq: int
    done: int
    total: int
    type: Literal["progress"] = field(default="progress", init=False)


@dataclass(frozen=True, slots=True)
class Done:
    """The generation ended normally, by its stop condition, length limit or cancellation."""

    gen: int
    seq: int
    reason: FinishReason
    stats: GenerationStats = GenerationStats()
    type: Literal["done"] = field(default="done", init=False)


@dataclass(frozen=True, slots=True)
class Error:
    """The generation failed. ``kind`` is a short machine-readable name, ``message`` for people."""

    gen: int
    seq: int
    kind: str
    message: str
    stats: GenerationStats = GenerationStats()
    type: Literal["error"] = field(default="error", init=False)


@dataclass(frozen=True, slots=True)
class QueuePlace:
    """A request waiting for the model in ``tkchat serve``'s line: ``position`` 1 is next;
    ``waiting`` requests are in the line in all; ``eta_s`` is the server's estimate of the wait
    (None until it has timed a generation), ``at_least`` True when it is only a lower bound (an
    answer ahead has run past every estimate of it: tkchat/serve/line.py). Sent when the
    request joins the line, whenever its place changes, when an answer ahead runs past its
    estimate, and every few seconds while it waits; never after its generation began."""

    position: int
    waiting: int
    eta_s: float | None
    at_least: bool = False
    type: Literal["queued"] = field(default="queued", init=False)


GenerationEvent = Chunk | Progress | Done | Error
FinalEvent = Done | Error


@dataclass(frozen=True, slots=True)
class Offload:
    """Where a local model runs: whether this llama-cpp-python can offload to a GPU at all
    (``supported``), and how many of the model's ``total`` layers it was given (``layers``:
    0 is the CPU alone; -1 all, where the model does not say how many it has)."""

    supported: bool
    layers: int
    total: int | None = None


@dataclass(frozen=True, slots=True)
class ModelReady:
    """The backend finished loading (sent by the loader thread)."""

    name: str
    load_s: float
    n_ctx: int
    n_ctx_train: int | None = None  # what the model was trained with, where it is known
    offload: Offload | None = None  # a local model's GPU offload (None: not a local model)
    type: Literal["model_ready"] = field(default="model_ready", init=False)


@dataclass(frozen=True, slots=True)
class ModelFailed:
    """The backend could not load; ``message`` is shown to the user as is."""

    message: str
    # True: the load was cancelled on purpose (another model chosen, the window closed); the
    # message says so in one sentence and is not an error.
    cancelled: bool = False
    # The model still in use: the one loaded before, which stays when its replacement fails
    # to load (None: there is none, nothing can be sent until another loads).
    kept: str | None = None
    name: str | None = None  # the model that did not load, as the window names it
    # The translator's key of ``message`` (None: it has none): the window says it in the
    # user's language (llama-cpp-python missing: what the local model needs, how to get it).
    key: str | None = None
    type: Literal["model_failed"] = field(default="model_failed", init=False)


@dataclass(frozen=True, slots=True)
class ModelLoading:
    """How far the loader thread is: ``fraction`` from 0 to 1, as llama.cpp reports it."""

    name: str
    fraction: float
    type: Literal["model_loading"] = field(default="model_loading", init=False)


LoadEvent = ModelLoading | ModelReady | ModelFailed
AppEvent = GenerationEvent | LoadEvent


def to_wire(event: GenerationEvent) -> dict[str, Any]:
    """The JSON shape of an event, as in the contract (``error`` nests kind and message)."""
    if isinstance(event, Chunk):
        return {"type": "chunk", "gen": event.gen, "seq": event.seq, "text": event.text}
    if isinstance(event, Progress):
        return {
            "type": "progress",
            "gen": event.gen,
            "seq": event.seq,
            "done": event.done,
            "total": event.total,
        }
    if isinstance(event, Done):
        return {
            "type": "done",
            "gen": event.gen,
            "seq": event.seq,
            "reason": event.reason,
            "stats": asdict(event.stats),
        }
    return {
        "type": "error",
        "gen": event.gen,
        "seq": event.seq,
        "error": {"kind": event.kind, "message": event.message},
    }


def place_to_wire(place: QueuePlace) -> dict[str, Any]:
    """The JSON shape of a place in the line (no ``gen``, no ``seq``: see the module)."""
    return {
        "type": "queued",
        "position": place.position,
        "waiting": place.waiting,
        "eta_s": place.eta_s,
        "at_least": place.at_least,
    }


def to_json(event: GenerationEvent) -> str:
    """One line of JSON; ``ensure_ascii=False`` keeps Chinese and emoji readable on the wire."""
    return json.dumps(to_wire(event), ensure_ascii=False)


def from_wire(data: dict[str, Any]) -> GenerationEvent:
    """Parse the JSON shape back into an event; raises ``ValueError`` on anything malformed
    (the wire is untrusted: a wrong type must not turn into text such as ``"None"``)."""
    try:
        kind = data["type"]
        gen, seq = data["gen"], data["seq"]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (gen, seq)):
            raise ValueError(f"gen and seq must be integers: {data!r}")
        if kind == "chunk":
            return Chunk(gen, seq, _string(data["text"]))
        if kind == "progress":
            done, total = data["done"], data["total"]
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in (done, total)):
                raise ValueError(f"done and total must be integers: {data!r}")
            if not 0 <= done <= total:
                raise ValueError(f"progress out of range: {data!r}")
            return Progress(gen, seq, done, total)
        if kind == "done":
            if data["reason"] not in FINISH_REASONS:
                raise ValueError(f"unknown finish reason: {data['reason']!r}")
            raw = data.get("stats", {})
            if not isinstance(raw, dict):
                raise ValueError(f"stats must be an object: {raw!r}")
            # Known fields only: a newer server may report more (this release added two).
            stats = GenerationStats(**{k: v for k, v in raw.items() if k in _STATS_FIELDS})
            return Done(gen, seq, data["reason"], stats)
        if kind == "error":
            error = data["error"]
            return Error(gen, seq, _string(error["kind"]), _string(error["message"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed event: {data!r}") from exc
    raise ValueError(f"unknown event type: {kind!r}")


_STATS_FIELDS = frozenset(f.name for f in fields(GenerationStats))


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value
