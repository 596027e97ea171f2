"""Measure a long chat's first token after a model switch, with and without kept caches.

    PYTHONPATH=. python tests/tools/kept_switch.py [--tokens 3600]

On the bundled model, through the GenerationController as the window drives it: a generated
chat of about ``--tokens`` tokens is read and answered (the cold read), then a second turn of
the same chat (what "at once" means); then the model is switched to a copy of its file and
back, and the chat asked a third question: with kept caches (the default bound), and again
with the bound at 0 (what tkchat did before caches were kept: the whole chat read again).
Prints each first token's time (the worker's ``ttft_ms``), the tokens evaluated and reused,
and the ratio of the switch case to the second turn (target: at most 1.2).

A measurement, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, Error, GenerationEvent, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.transport.channel import EventChannel

SAMPLING = Sampling(max_tokens=16, seed=1, temperature=0.0)
SYSTEM = Message("system", "You are a helpful assistant.")


def ready(controller: GenerationController) -> None:
    """Wait for the controller's load to end; it must have loaded."""
    while True:
        event = controller.channel.get(timeout=600)
        if isinstance(event, ModelFailed):
            raise SystemExit(event.message)
        if isinstance(event, ModelReady):
            return


def run_to_end(channel: EventChannel, gen: int) -> list[GenerationEvent]:
    events: list[GenerationEvent] = []
    while True:
        event = channel.get(timeout=3600)
        if getattr(event, "gen", None) == gen:
            events.append(event)  # type: ignore[arg-type]
            if isinstance(event, (Done, Error)):
                return events


def chat_of(tokens: int) -> list[Message]:
    """A generated chat of about ``tokens`` tokens (about 75 per turn)."""
    turns = [SYSTEM]
    for n in range(max(1, tokens // 75)):
        turns.append(Message("user", f"Question {n}: what happened on day {n} of the trip?"))
        turns.append(
            Message(
                "assistant",
                f"On day {n} we walked {n % 7 + 3} kilometres along the river, stopped at a "
                f"village with {n * 13 % 97} houses, ate bread and soup, and talked about "
                "the weather, the birds we saw and the road ahead until it was dark.",
            )
        )
    return turns


def ask(controller: GenerationController, chat: list[Message], label: str) -> str:
    gen = controller.start(GenerationRequest(tuple(chat), SAMPLING))
    events = run_to_end(controller.channel, gen)
    final = events[-1]
    assert isinstance(final, Done), final
    s = final.stats
    backend = controller.backend
    assert isinstance(backend, LlamaBackend) and backend.reader is not None
    print(
        f"{label:<34} first token {s.ttft_ms or 0:9.0f} ms · prompt {s.prompt_tokens:,} "
        f"tokens: reused {s.prompt_reused:,} (kept from earlier {s.prompt_restored:,}), "
        f"evaluated {backend.reader.evaluated:,} · kept {s.kept_bytes / 1e6:.0f} MB",
        flush=True,
    )
    return "".join(e.text for e in events if isinstance(e, Chunk))


def switch_away_and_back(controller: GenerationController, path: Path, copy: Path) -> None:
    for model in (copy, path):
        controller.switch_backend(LlamaBackend(str(model)), replace=True)
        ready(controller)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=3600)
    args = parser.parse_args()
    path = bundled_model_path()
    assert path is not None
    controller = GenerationController(LlamaBackend(str(path)), EventChannel())
    controller.load_async()
    ready(controller)
    chat = chat_of(args.tokens)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.gguf"
        shutil.copyfile(path, copy)
        chat.append(Message("user", "Hi, who are you?"))
        chat.append(Message("assistant", ask(controller, chat, "cold read of the chat")))
        chat.append(Message("user", "And what did we eat?"))
        chat.append(Message("assistant", ask(controller, chat, "second turn")))
        switch_away_and_back(controller, path, copy)
        chat.append(Message("user", "Where did we walk?"))
        chat.append(Message("assistant", ask(controller, chat, "after a switch: kept (new)")))
        controller.kept_states.limit = 0
        switch_away_and_back(controller, path, copy)
        chat.append(Message("user", "How far did we walk?"))
        ask(controller, chat, "after a switch: bound 0 (before)")
    controller.shutdown(timeout=60)


if __name__ == "__main__":
    main()
