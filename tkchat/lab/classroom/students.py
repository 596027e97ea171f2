"""One simulated student of ``tkchat bench --class``: a thread that asks, reads, asks again.

Each student has a name (sent as ``X-Tkchat-Client``, as the page sends its tab's), a
conversation of its own (the questions carry the student's name and turn, so an answer that
went to the wrong student can be told: with ``--echo`` the scripted backend begins each answer
with the question it answers), and a seeded random rhythm: it arrives within the first seconds,
then reads each answer for a few seconds before asking the next question, until the class
ends. Every request it sends is recorded as an :class:`Ask`: whether it was answered, refused
(and how) or lost, its ticket, the places it was told, when its turn came, its first text, its
generation.

The student thread does blocking HTTP with the standard library only (``http.client``), like
any program a student might write; the SSE parsing is the transport stage's own.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tkchat.events import Chunk, Done, Error
from tkchat.transport.sse import QUEUED_EVENT, SSEParser, parse_event

CONVERSATION_TURNS = 6  # messages of its own history a student sends again (3 questions back)
TOPICS = (
    "Why does the window stay smooth while the model streams?",
    "What does the worker thread do?",
    "Why is the queue between the threads safe?",
    "What is event-loop lag?",
    "Why render the markdown only once the answer is done?",
    "What happens when I press Stop?",
)


@dataclass
class Ask:
    """One request a student sent, and what became of it (``time.perf_counter`` seconds)."""

    student: str
    turn: int
    question: str
    sent: float
    status: int = 0  # HTTP status (0: no answer at all)
    kind: str = ""  # the refusal's or error's kind
    ticket: int | None = None
    joined_at: int | None = None  # its place when it joined (the server's header; 0: no wait)
    places: list[tuple[float, int, float | None]] = field(default_factory=list)  # t, pos, eta
    turn_at: float | None = None  # the first event that was not a place: the model has it
    first_text_at: float | None = None
    ended: float | None = None
    gen: int | None = None
    seqs: list[int] = field(default_factory=list)
    gens: set[int] = field(default_factory=set)
    final: str | None = None  # "done" or "error"
    reason: str | None = None
    text: str = ""
    tokens: int = 0
    retry_after: float | None = None

    @property
    def answered(self) -> bool:
        return self.final == "done"

    @property
    def lost(self) -> bool:
        """Accepted (200) but no final event: the stream ended without done or error."""
        return self.status == 200 and self.final is None

    @property
    def wait_s(self) -> float | None:
        return None if self.turn_at is None else self.turn_at - self.sent

    def whole(self) -> bool:
        """One generation, seq 1..n with no gap, ending with its final event."""
        return len(self.gens) == 1 and self.seqs == list(range(1, len(self.seqs) + 1))


class Student(threading.Thread):
    """A student in the class (see the module). Runs until ``deadline`` (perf_counter)."""

    def __init__(
        self, name: str, port: int, deadline: float, options: dict[str, Any], seed: int
    ) -> None:
        super().__init__(name=f"student-{name}", daemon=True)
        self.student = name
        self.port = port
        self.deadline = deadline
        self.options = options  # max_tokens, read_s (min, max), arrive_s
        self.random = random.Random(seed)
        self.history: list[dict[str, str]] = []
        self.asks: list[Ask] = []

    def run(self) -> None:
        time.sleep(self.random.uniform(0, self.options["arrive_s"]))
        turn = 0
        while time.perf_counter() < self.deadline:
            turn += 1
            ask = self._ask(turn)
            self.asks.append(ask)
            if ask.answered:
                self.history += [
                    {"role": "user", "content": ask.question},
                    {"role": "assistant", "content": ask.text},
                ]
                self.history = self.history[-CONVERSATION_TURNS:]
                low, high = self.options["read_s"]
                time.sleep(self.random.uniform(low, high))  # reading the answer
            else:
                time.sleep(ask.retry_after or 1.0)  # refused or failed: try again later

    def _ask(self, turn: int) -> Ask:
        question = f"[{self.student}, question {turn}] {self.random.choice(TOPICS)}"
        ask = Ask(self.student, turn, question, time.perf_counter())
        body = {
            "messages": [*self.history, {"role": "user", "content": question}],
            "max_tokens": self.options["max_tokens"],
            "temperature": 0.3,
            "seed": self.random.randrange(1 << 31),
        }
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            conn.request(
                "POST",
                "/chat",
                body=json.dumps(body).encode(),
                headers={"Content-Type": "application/json", "X-Tkchat-Client": self.student},
            )
            response = conn.getresponse()
            ask.status = response.status
            if response.status != 200:
                _refused(ask, response)
            else:
                ask.ticket = _number(response.getheader("x-tkchat-ticket"))
                ask.joined_at = _number(response.getheader("x-tkchat-place"))
                _read(ask, response)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            ask.kind = ask.kind or f"client: {type(exc).__name__}"
        finally:
            ask.ended = time.perf_counter()
            conn.close()
        return ask


def _number(header: str | None) -> int | None:
    return int(header) if header and header.isdigit() else None


def _refused(ask: Ask, response: http.client.HTTPResponse) -> None:
    try:
        ask.kind = str(json.loads(response.read())["error"]["kind"])
    except (ValueError, KeyError, TypeError):
        ask.kind = f"http {response.status}"
    retry = response.getheader("retry-after")
    ask.retry_after = float(retry) if retry and retry.isdigit() else None


def _read(ask: Ask, response: http.client.HTTPResponse) -> None:
    """The stream as it arrives: places, then the generation's events (whole, in order)."""
    parser = SSEParser()
    parts: list[str] = []
    while ask.final is None and (data := response.read1(65536)):
        now = time.perf_counter()
        for message in parser.feed(data):
            if message.event == QUEUED_EVENT:
                place = json.loads(message.data)
                ask.places.append((now, int(place["position"]), place.get("eta_s")))
                continue
            event = parse_event(message)
            if ask.turn_at is None:
                ask.turn_at = now
            ask.gens.add(event.gen)
            ask.seqs.append(event.seq)
            if isinstance(event, Chunk):
                parts.append(event.text)
                if ask.first_text_at is None:
                    ask.first_text_at = now
            elif isinstance(event, Done):
                ask.final, ask.gen, ask.reason = "done", event.gen, event.reason
                ask.tokens = event.stats.tokens
            elif isinstance(event, Error):
                ask.final, ask.gen, ask.reason = "error", event.gen, event.kind
    ask.text = "".join(parts)
