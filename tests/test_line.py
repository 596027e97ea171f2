"""The fair line in front of the model (tkchat/serve/line.py): first come first served, told
their place, bounded, one place in line per client, and nothing of one client's
conversation reaching another's answer.

The line alone (its clock made by hand), then the line behind real HTTP (uvicorn on the
loopback, the scripted backend), then the real model's prompt cache.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.client import HTTPResponse
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from starlette.requests import Request  # noqa: E402

from tests.conftest import wait_until  # noqa: E402
from tests.test_server import (  # noqa: E402
    HELLO,
    LONG_ANSWERS,
    Live,
    check_contract,
    hang_up,
    serve,
    serve_bundled_model,
)
from tkchat.conversation import Message  # noqa: E402
from tkchat.events import Done, GenerationEvent, QueuePlace, place_to_wire  # noqa: E402
from tkchat.generate.scripted import ScriptedBackend  # noqa: E402
from tkchat.serve import line as line_module  # noqa: E402
from tkchat.serve.errors import RequestRejected  # noqa: E402
from tkchat.serve.line import (  # noqa: E402
    HEAVY_MIN_S,
    RETELL_AFTER_S,
    Client,
    Line,
    LineLimits,
    Need,
    Spent,
)
from tkchat.serve.routes import client_of  # noqa: E402
from tkchat.transport.sse import SSEMessage, SSEParser, parse_event  # noqa: E402

# -- the line alone ------------------------------------------------------------------------


class Clock:
    """The line's clock, moved by hand: ``now += s`` moves time only; :meth:`advance` moves it
    and fires the timers that fall due, in their order, as the event loop would."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[Timer] = []

    def monotonic(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while due := sorted(
            (t for t in self.timers if not t.cancelled and t.at <= end), key=lambda t: t.at
        ):
            timer = due[0]
            self.timers.remove(timer)
            self.now = max(self.now, timer.at)
            timer.callback()
        self.now = end


@dataclass
class Timer:
    at: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@pytest.fixture
def clock() -> Clock:
    return Clock()


class Recorder:
    """A line of names on a clock of its own, recording whom it started and what it told
    whom."""

    def __init__(self, clock: Clock, limits: LineLimits = line_module.DEFAULT_LIMITS) -> None:
        self.started: list[str] = []
        self.told: dict[str, list[QueuePlace]] = {}
        self.line: Line[str] = Line(limits, self.started.append, self.tell, clock)

    def tell(self, name: str, place: QueuePlace) -> None:
        self.told.setdefault(name, []).append(place)

    def last(self, name: str) -> tuple[int, int, float | None]:
        place = self.told[name][-1]
        return place.position, place.waiting, place.eta_s


def test_first_come_first_served_and_everyone_hears_their_place(clock: Clock) -> None:
    rec = Recorder(clock)
    for name in "abcd":
        rec.line.join(name, Client(None))
    assert rec.started == ["a"] and list(rec.line.waiting) == ["b", "c", "d"]
    assert rec.last("b")[:2] == (1, 3) and rec.last("d")[:2] == (3, 3)
    assert "a" not in rec.told  # served at once: nothing to wait for
    for name in "abc":
        rec.line.finished(name)
    assert rec.started == ["a", "b", "c", "d"] and not rec.line.waiting
    assert rec.last("d")[:2] == (1, 1)


def test_the_estimate_is_the_mean_turn_for_each_turn_ahead(clock: Clock) -> None:
    rec = Recorder(clock)
    for name in "abc":
        rec.line.join(name, Client(None))
    assert rec.last("c")[2] is None  # no turn timed yet: no guess
    clock.now += 10.0
    rec.line.finished("a")  # a 10 s turn; b starts now
    assert rec.last("c") == (1, 1, 10.0)
    clock.now += 4.0  # b has had 4 of its 10 s
    rec.line.join("d", Client(None))
    assert rec.last("c") == (1, 2, 6.0) and rec.last("d") == (2, 2, 16.0)
    clock.now += 30.0  # b runs long: its estimate does not go below zero
    assert rec.line.eta(1) == 0.0


def test_a_turn_that_answered_nothing_is_not_timed(clock: Clock) -> None:
    """Instant failures (a prompt over the cap, a refusal) must not pull the estimate of a
    real turn towards zero."""
    rec = Recorder(clock)
    for name in "abcd":
        rec.line.join(name, Client(None))
    clock.now += 10.0
    rec.line.finished("a")  # a real 10 s turn
    for name in "bc":
        clock.now += 0.01
        rec.line.finished(name, answered=False)  # failed at once
    assert rec.line.clock.mean == 10.0 and rec.started == ["a", "b", "c", "d"]


SHORT_NEED = Need(prompt_chars=100, max_tokens=10)


def priced(clock: Clock) -> Recorder:
    """A line that has timed two turns: 100 prompt characters read in 1 s, 1,100 in 2 s (a
    fixed 0.9 s and 0.001 s a character), then 5 of 10 max_tokens answered in 1 s (0.2 s a
    token, half the bound used). A short turn is then expected to take 0.9 + 0.1 + 10 x 0.5
    x 0.2 = 2 s, at most 3 s."""
    rec = Recorder(clock)
    rec.line.join("first", Client(None), SHORT_NEED)
    rec.line.join("second", Client(None), Need(prompt_chars=1100, max_tokens=10))
    clock.now += 2.0
    rec.line.finished("first", spent=Spent(read_s=1.0, tokens=5))
    clock.now += 3.0
    rec.line.finished("second", spent=Spent(read_s=2.0, tokens=5))
    assert rec.line.clock.expected(SHORT_NEED) == pytest.approx(2.0)
    assert rec.line.clock.bound(SHORT_NEED) == pytest.approx(3.0)
    return rec


def test_a_long_answer_in_progress_makes_the_estimate_grow_as_it_runs_long(clock: Clock) -> None:
    """A 100-token bound in progress is expected to take 1 + 100 x 0.5 x 0.2 = 11 s, at most
    21 s. Its elapsed time counts; once it runs past 11 s it is expected to run to its bound,
    so the wait of the one behind grows; past 21 s too, the estimate is only a lower bound."""
    rec = priced(clock)
    rec.line.join("long", Client(None, "x"), Need(prompt_chars=100, max_tokens=100))
    rec.line.join("b", Client(None, "b"), SHORT_NEED)
    assert rec.started[-1] == "long"
    assert rec.last("b") == (1, 1, 11.0)  # not a mean turn (2 s) from now
    clock.now += 10.0
    before = rec.line.place("b")
    clock.now += 2.0  # 12 s: past what it was expected to take
    after = rec.line.place("b")
    assert before is not None and after is not None
    assert (before.eta_s, before.at_least) == (1.0, False)
    assert (after.eta_s, after.at_least) == (9.0, False)  # grew: to its bound, 21 s
    clock.now += 10.0  # 22 s: past its bound too; it could end any moment
    late = rec.line.place("b")
    assert late is not None and (late.eta_s, late.at_least) == (0.0, True)
    assert place_to_wire(late)["at_least"] is True  # what the page reads ("at least")
    rec.line.join("c", Client(None, "c"), SHORT_NEED)
    assert rec.last("c") == (2, 2, 2.0) and rec.told["c"][-1].at_least  # b's 2 s, at least


def test_a_large_max_tokens_or_a_long_prompt_ahead_raises_the_estimate_behind_it(
    clock: Clock,
) -> None:
    """Behind a short turn in progress (2 s), the one after a short question waits about
    4 s; after a question with max_tokens 100, 2 + 11 = 13 s; after a 5,000-character prompt
    (5.9 s to read), 2 + 6.9 = 8.9 s. One mean turn per place would have told each 4.5 s."""
    etas = {}
    for name, ahead in {
        "short": SHORT_NEED,
        "large max_tokens": Need(prompt_chars=100, max_tokens=100),
        "long prompt": Need(prompt_chars=5000, max_tokens=10),
        "unknown": None,
    }.items():
        rec = priced(clock)
        rec.line.join("now", Client(None, "n"), SHORT_NEED)
        rec.line.join("ahead", Client(None, "a"), ahead)
        rec.line.join("me", Client(None, "m"), SHORT_NEED)
        etas[name] = rec.last("me")[2]
    assert etas == {"short": 4.0, "large max_tokens": 13.0, "long prompt": 8.9, "unknown": 4.5}


def test_the_waiting_are_told_again_when_a_turn_runs_past_its_estimate(clock: Clock) -> None:
    """Nothing else moves the line: the line's own timer re-tells the waiting when the turn in
    progress passes its expected end (11 s), then its bound (21 s), and no more after that."""
    rec = priced(clock)
    rec.line.join("long", Client(None, "x"), Need(prompt_chars=100, max_tokens=100))
    rec.line.join("b", Client(None, "b"), SHORT_NEED)
    told = len(rec.told["b"])
    clock.advance(10.9)
    assert len(rec.told["b"]) == told  # still within its estimate: nothing new to say
    clock.advance(0.2)
    assert len(rec.told["b"]) == told + 1 and rec.line.counts["retold"] == 1
    eta, at_least = rec.told["b"][-1].eta_s, rec.told["b"][-1].at_least
    assert eta == pytest.approx(21.0 - 11.0 - RETELL_AFTER_S, abs=0.1) and not at_least
    clock.advance(10.0)
    assert len(rec.told["b"]) == told + 2 and rec.told["b"][-1].at_least
    clock.advance(100.0)
    assert len(rec.told["b"]) == told + 2  # a lower bound already: no timer left to fire
    clock.advance(1.0)
    rec.line.finished("long", spent=Spent(read_s=1.0, tokens=100))
    assert rec.started[-1] == "b" and not [t for t in clock.timers if not t.cancelled]


def test_a_long_prompt_hog_gets_its_share_of_model_time_not_of_turns(clock: Clock) -> None:
    """Ten askers whose turns take 1 s and a hog whose turns take 30 s (a long prompt to
    read), each asking again the moment its answer ends: in turns, the hog held the model
    30 / 40 of the time (84 % in the real run); counted in model time, its share is about
    one in eleven, and it is still served (never starved). The order told is the order
    served."""
    rec = Recorder(clock)
    cost = {**{f"s{i}": 1.0 for i in range(10)}, "hog": 30.0}
    ask = {name: 0 for name in cost}
    used = dict.fromkeys(cost, 0.0)

    def join(name: str) -> None:
        ask[name] += 1
        rec.line.join(f"{name}#{ask[name]}", Client(None, name))

    for name in cost:
        join(name)
    predicted: list[str] = []
    while clock.now < 1000.0 + 3000.0:
        (running,) = [item for item in rec.line.serving]
        if not predicted:
            predicted = list(rec.line.waiting)
        name = running.split("#")[0]
        clock.now += cost[name]
        used[name] += cost[name]
        rec.line.finished(running)
        rec.line.release(running)  # its answer is complete: its client may ask again
        join(name)
    share = used["hog"] / sum(used.values())
    assert 0.07 <= share <= 0.12, share  # one in eleven: 0.09 (in turns: 0.75)
    assert ask["hog"] >= 8  # served again and again, only less often
    assert rec.line.counts["deferred"] > 0
    started = [item for item in rec.started if item in predicted]
    assert started[: len(predicted)] == predicted[: len(started)]


def test_a_long_first_turn_owes_too(clock: Clock) -> None:
    """The hog asked first, before any turn was timed: its 30 s turn still owes (a fair turn
    is HEAVY_MIN_S until one is timed), so the askers behind it go first next time."""
    rec = Recorder(clock)
    for name in ("hog1", "a", "b"):
        rec.line.join(name, Client(None, name[0]))
    clock.now += 30.0
    rec.line.join("hog2", Client(None, "h"))
    rec.line.finished("hog1")
    assert rec.line.owed == {"name h": 30.0 - HEAVY_MIN_S}
    clock.now += 1.0
    rec.line.join("c", Client(None, "c"))
    rec.line.finished("a")
    clock.now += 1.0
    rec.line.finished("b")
    assert rec.started == ["hog1", "a", "b", "c"]  # hog2 gave its place to c


def test_ordinary_turns_never_reorder_the_line(clock: Clock) -> None:
    """Turns of ordinary length (under twice the median, or under HEAVY_MIN_S) owe nothing:
    first come, first served, exactly."""
    rec = Recorder(clock)
    for name in "abcdef":
        rec.line.join(name, Client(None, name))
    for took, name in zip([1.0, 1.9, 0.5, 1.0, 1.5], "abcde", strict=True):
        clock.now += took
        rec.line.finished(name)
    assert rec.started == list("abcdef") and rec.line.counts["deferred"] == 0
    assert rec.line.owed == {}


def test_a_heavy_share_alone_is_never_held_back_and_debts_end_with_the_line(
    clock: Clock,
) -> None:
    rec = Recorder(clock)
    for name in ("a", "b"):
        rec.line.join(name, Client(None, name))
    clock.now += 1.0
    rec.line.finished("a")  # a median turn: 1 s
    rec.line.join("hog1", Client(None, "hog"))
    clock.now += 1.0
    rec.line.finished("b")  # the hog starts: nobody else waits
    clock.now += 60.0
    rec.line.join("c", Client(None, "c"))
    rec.line.join("hog2", Client(None, "hog"))
    rec.line.finished("hog1")  # 60 s: it owes, and c waits: c first
    assert rec.started[-1] == "c" and rec.line.owed["name hog"] == 59.0  # 60 s less a fair 1
    clock.now += 1.0
    rec.line.finished("c")  # only the hog waits now: it is not held back
    assert rec.started[-1] == "hog2"
    clock.now += 1.0
    rec.line.finished("hog2")  # the line is empty: what was owed is forgiven
    assert rec.line.owed == {}


def test_parallel_slots_share_the_line(clock: Clock) -> None:
    rec = Recorder(clock, LineLimits(parallel=2))
    for name in "abcde":
        rec.line.join(name, Client(None))
    assert rec.started == ["a", "b"]
    clock.now += 10.0
    rec.line.finished("a")  # c starts; b still has its (now estimated) 0 s left
    assert rec.started == ["a", "b", "c"]
    assert [rec.line.eta(p) for p in (1, 2)] == [0.0, 10.0]


def test_a_client_that_leaves_leaves_the_line_and_those_behind_move_up(clock: Clock) -> None:
    rec = Recorder(clock)
    for name in "abcd":
        rec.line.join(name, Client(None))
    rec.line.leave("b")
    assert list(rec.line.waiting) == ["c", "d"] and rec.last("d")[:2] == (2, 2)
    rec.line.finished("a")
    assert rec.started == ["a", "c"]  # b is never started
    assert rec.line.counts["left"] == 1


def test_a_full_line_refuses_with_503_and_retry_after(clock: Clock) -> None:
    rec = Recorder(clock, LineLimits(waiting=2))
    for name in "abc":
        rec.line.join(name, Client(None))
    with pytest.raises(RequestRejected) as caught:
        rec.line.join("d", Client(None))
    assert caught.value.status == 503 and caught.value.kind == "line_full"
    assert caught.value.headers == {"Retry-After": "1"}
    rec.line.finished("a")
    rec.line.join("d", Client(None))  # a place freed
    assert list(rec.line.waiting) == ["c", "d"]


def test_a_clients_parallel_requests_all_wait_their_turns_in_its_order(clock: Clock) -> None:
    """The issue's case: five at once under one ``user`` got two 429s. Now all five wait, in
    the client's order, and a student who asks meanwhile waits behind one of them only."""
    rec = Recorder(clock)
    ann = Client(None, "ann")
    for index in range(1, 6):
        rec.line.join(f"ann{index}", ann)
    assert rec.last("ann5")[:2] == (4, 4)
    rec.line.join("bob1", Client(None, "bob"))
    assert rec.line.waiting == ["ann2", "bob1", "ann3", "ann4", "ann5"]
    assert rec.last("ann5")[:2] == (5, 5)  # told it moved back, behind bob
    rec.line.join("bob2", Client(None, "bob"))  # behind bob's first
    rec.line.join("cy1", Client(None, "cy"))  # a newcomer: at the end of the line
    while rec.line.serving:
        rec.line.finished(rec.started[-1])
    assert rec.started == ["ann1", "ann2", "bob1", "cy1", "ann3", "bob2", "ann4", "ann5"]
    assert rec.line.counts["served"] == 8 and rec.line.counts["per_client"] == 0


def test_one_request_at_a_time_is_first_come_first_served(clock: Clock) -> None:
    """A client whose answer is done and who asks at once goes to the end of the line, as
    anyone would; a client's second request joins the end when its first starts."""
    rec = Recorder(clock)
    ann, bob = Client(None, "ann"), Client(None, "bob")
    rec.line.join("ann1", ann)
    rec.line.join("bob1", bob)
    rec.line.join("bob2", bob)
    rec.line.join("cy1", Client(None, "cy"))
    rec.line.release("ann1")
    rec.line.finished("ann1")  # bob1 starts: bob2 joins the end of the line
    rec.line.join("ann2", ann)
    assert rec.line.waiting == ["cy1", "bob2", "ann2"]


def test_a_request_that_leaves_gives_its_place_to_its_clients_next(clock: Clock) -> None:
    rec = Recorder(clock)
    ann, bob = Client(None, "ann"), Client(None, "bob")
    for index in range(1, 5):
        rec.line.join(f"ann{index}", ann)
    rec.line.join("bob1", bob)
    assert rec.line.waiting == ["ann2", "bob1", "ann3", "ann4"]
    rec.line.leave("ann2")  # she stops her second: her third takes its place
    assert rec.line.waiting == ["ann3", "bob1", "ann4"]
    rec.line.leave("ann4")  # and her last
    assert rec.line.waiting == ["ann3", "bob1"] and rec.last("bob1")[:2] == (2, 2)
    assert rec.line.counts["left"] == 2


def test_a_client_has_a_bounded_share_then_429_with_when_its_first_is_done(
    clock: Clock,
) -> None:
    rec = Recorder(clock, LineLimits(per_client=3))
    rec.line.join("x", Client(None))
    clock.now += 10.0
    rec.line.finished("x")  # one 10 s turn timed
    ann = Client(None, "ann")
    for index in range(1, 4):
        rec.line.join(f"ann{index}", ann)
    clock.now += 4.0  # ann1 has had 4 s of its 10
    with pytest.raises(RequestRejected) as caught:
        rec.line.join("ann4", ann)
    assert caught.value.status == 429 and caught.value.kind == "per_client"
    assert caught.value.headers == {"Retry-After": "6"}  # when ann1 should be done
    rec.line.join("bob1", Client(None, "bob"))  # another client is not affected
    for index in range(3):
        rec.line.join(f"anon-{index}", Client(None))  # programs here without a name: no bound
    rec.line.release("ann1")
    rec.line.finished("ann1")
    rec.line.join("ann4", ann)  # a place of hers freed
    assert rec.line.counts["per_client"] == 1


def test_unnamed_programs_here_take_their_turns_as_one_client(clock: Clock) -> None:
    rec = Recorder(clock)
    for index in range(3):
        rec.line.join(f"script{index}", Client(None))
    rec.line.join("ann1", Client(None, "ann"))
    assert rec.line.waiting == ["script1", "ann1", "script2"]


def test_a_machine_takes_its_turns_as_one_client_whatever_names_it_gives(clock: Clock) -> None:
    rec = Recorder(clock)
    for index in range(1, 4):
        rec.line.join(f"x{index}", Client("192.0.2.7", f"name{index}"))
    rec.line.join("y1", Client("192.0.2.8", "other"))
    assert rec.line.waiting == ["x2", "y1", "x3"]


def test_another_machine_has_a_few_places_at_most_whatever_names_it_gives(clock: Clock) -> None:
    rec = Recorder(clock, LineLimits(per_address=2))
    rec.line.join("x1", Client("192.0.2.7", "one"))
    rec.line.join("x2", Client("192.0.2.7", "two"))
    with pytest.raises(RequestRejected) as caught:
        rec.line.join("x3", Client("192.0.2.7", "three"))
    assert caught.value.status == 429 and caught.value.kind == "per_address"
    rec.line.join("y1", Client("192.0.2.8"))  # another machine is not affected


def _request(host: str, headers: dict[str, str] | None = None) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "headers": raw, "client": (host, 5000)})


def test_who_a_client_is() -> None:
    assert client_of(_request("127.0.0.1")) == Client(None, None)
    assert client_of(_request("::1"), "ann") == Client(None, "ann")
    assert client_of(_request("127.0.0.1", {"X-Tkchat-Client": "tab7"}), "ann") == Client(
        None, "tab7"
    )
    assert client_of(_request("192.0.2.7")) == Client("192.0.2.7", None)
    assert Client(None).key is None and Client("192.0.2.7").key == ("192.0.2.7", "")
    with pytest.raises(RequestRejected):
        client_of(_request("127.0.0.1", {"X-Tkchat-Client": "x" * 65}))


# -- the line over HTTP ------------------------------------------------------------------


@pytest.fixture
def slow() -> Iterator[Live]:
    """Answers at 100 tokens/s for minutes, until their client stops them."""
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=LONG_ANSWERS) as live:
        yield live


class Reader:
    """One streaming request, read on a thread of its own: its places, then its events."""

    def __init__(self, live: Live, body: dict[str, Any], name: str | None = None) -> None:
        headers = {"X-Tkchat-Client": name} if name else {}
        self.conn, self.response = live.send("POST", "/chat", body, headers)
        self.ticket = int(self.response.headers.get("x-tkchat-ticket", 0))
        self.joined_at = int(self.response.headers.get("x-tkchat-place", -1))
        self.places: list[dict[str, Any]] = []
        self.events: list[GenerationEvent] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        parser = SSEParser()
        try:
            while piece := self.response.read1(65536):
                for message in parser.feed(piece):
                    self._take(message)
        except Exception:  # hung up on purpose: the socket closed under the read
            pass

    def _take(self, message: SSEMessage) -> None:
        if message.event == "queued":
            self.places.append(json.loads(message.data))
        else:
            self.events.append(parse_event(message))

    def join(self, timeout: float = 30) -> None:
        self._thread.join(timeout)
        self.conn.close()


SHORT = {**HELLO, "max_tokens": 3}


def test_requests_wait_in_order_told_their_place_and_are_all_answered(slow: Live) -> None:
    first = Reader(slow, {**HELLO, "max_tokens": 50_000})
    wait_until(lambda: first.events, what="the first answer to start")
    waiting = []
    for index in range(3):
        waiting.append(Reader(slow, SHORT, name=f"student-{index}"))
        wait_until(lambda i=index: slow.health()["line"]["waiting"] == i + 1, what="a place")
    wait_until(lambda: all(r.places for r in waiting), what="every place told")
    assert [r.places[0]["position"] for r in waiting] == [1, 2, 3]
    assert [r.ticket for r in waiting] == [2, 3, 4]
    assert first.joined_at == 0 and [r.joined_at for r in waiting] == [1, 2, 3]
    hang_up(first.conn)  # the first client leaves: the others are served in their order
    for reader in waiting:
        reader.join()
    gens = []
    for reader in waiting:
        text, final = check_contract(reader.events)
        assert isinstance(final, Done) and text == "## Why the"
        positions = [p["position"] for p in reader.places]
        assert positions == sorted(positions, reverse=True), positions  # only ever forward
        gens.append(final.gen)
    assert gens == sorted(gens)  # served first come, first served
    counts = slow.health()["line"]["counts"]
    assert counts["joined"] == 4 and counts["served"] == 4


def test_a_client_that_leaves_while_waiting_leaves_the_line(slow: Live) -> None:
    first = Reader(slow, {**HELLO, "max_tokens": 50_000})
    wait_until(lambda: first.events, what="the first answer to start")
    second = Reader(slow, SHORT)
    third = Reader(slow, SHORT)
    wait_until(lambda: third.places and third.places[-1]["position"] == 2, what="third in line")
    hang_up(second.conn)
    wait_until(lambda: third.places[-1]["position"] == 1, what="the third to move up")
    assert slow.health()["line"]["waiting"] == 1
    hang_up(first.conn)
    third.join()
    _, final = check_contract(third.events)
    assert isinstance(final, Done)
    assert slow.health()["line"]["counts"]["left"] == 1
    assert slow.health()["generations"] == 2  # the one who left never took the model


def test_a_prompt_over_the_servers_cap_is_refused_or_cut_before_the_model_reads_it() -> None:
    """``--max-prompt-tokens``: a /v1 prompt over it gets OpenAI's 400 before any token
    (the model read nothing); the page's chat loses its oldest turns and is answered."""
    limits = LineLimits(prompt_tokens=60)
    backend = ScriptedBackend(rate=0, tokens=5)
    long_chat = [
        {"role": role, "content": f"turn {i} " + "word " * 20}
        for i, role in enumerate(["user", "assistant"] * 3)
    ] + [{"role": "user", "content": "and now?"}]
    assert backend.count_tokens([Message(m["role"], m["content"]) for m in long_chat]) > 60
    with serve(backend, limits=limits) as live:
        status, _, payload = live.fetch_json(
            "POST", "/v1/chat/completions", {"messages": long_chat, "max_tokens": 5}
        )
        assert status == 400, payload
        error = payload["error"]
        assert (
            error["code"] == "context_length_exceeded" and "--max-prompt-tokens" in error["message"]
        )
        status, _, body = live.fetch("POST", "/chat", {"messages": long_chat, "max_tokens": 5})
        # (a place in the line may come first: the refused request can still be leaving its
        # slot when this one arrives; it is not a generation event, as Live.events says)
        messages = SSEParser().feed(body)
        events = [parse_event(m) for m in messages if m.event in (None, "", "message")]
        done = events[-1]
        assert status == 200 and isinstance(done, Done), events[-1]
        assert 0 < done.stats.prompt_tokens <= 60 and done.stats.context_dropped > 0
        assert live.chat.line.clock.mean is not None  # the answered turn was timed


def test_a_full_line_answers_503_in_the_usual_error_shape() -> None:
    limits = LineLimits(waiting=1, answer_tokens=1 << 20)
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=limits) as live:
        first = Reader(live, {**HELLO, "max_tokens": 50_000})
        wait_until(lambda: first.events, what="the first answer")
        second = Reader(live, SHORT)
        wait_until(lambda: second.places, what="the second in line")
        for path in ("/chat", "/v1/chat/completions"):
            status, headers, payload = live.fetch_json("POST", path, SHORT)
            assert status == 503 and int(headers["retry-after"]) >= 1
            error = payload["error"]
            assert error["kind"] == error["code"] == "line_full"
            assert error["type"] == "server_error" and "line is full" in error["message"]
        hang_up(first.conn)
        second.join()
    assert isinstance(second.events[-1], Done)


def test_a_tabs_second_question_waits_behind_its_first_and_then_a_429_past_its_share() -> None:
    """No 429 for a second question from one tab: it is told its place and answered after the
    first; only past ``per_client`` is a request refused, with when its first should end."""
    limits = LineLimits(per_client=2, answer_tokens=1 << 20)
    with serve(ScriptedBackend(rate=100, tokens=100_000), limits=limits) as live:
        first = Reader(live, {**HELLO, "max_tokens": 50_000}, name="tab-1")
        wait_until(lambda: first.events, what="the first answer")
        second = Reader(live, SHORT, name="tab-1")
        wait_until(lambda: second.places, what="the second told its place")
        assert second.places[0]["position"] == 1
        headers = {"X-Tkchat-Client": "tab-1"}
        status, retry, payload = live.fetch_json("POST", "/chat", SHORT, headers)
        assert status == 429 and int(retry["retry-after"]) >= 1
        assert payload["error"]["kind"] == "per_client"
        hang_up(first.conn)  # Stop: the second is answered
        second.join()
        counts = live.health()["line"]["counts"]
    text, final = check_contract(second.events)
    assert isinstance(final, Done) and text == "## Why the"
    assert counts["served"] == 2 and counts["per_client"] == 1


def test_health_shows_the_line_and_stays_fast_while_it_is_long(slow: Live) -> None:
    first = Reader(slow, {**HELLO, "max_tokens": 50_000})
    wait_until(lambda: first.events, what="the first answer")
    readers = [Reader(slow, SHORT) for _ in range(20)]
    wait_until(lambda: slow.health()["line"]["waiting"] == 20, what="twenty in line")
    line = slow.health()["line"]
    assert line["answering"] == 1 and line["capacity"] == 64 and line["parallel"] == 1
    hang_up(first.conn)
    for reader in readers:
        reader.join()
    assert all(isinstance(r.events[-1], Done) for r in readers)
    line = slow.health()["line"]
    assert line["waiting"] == 0 and line["turn_s"] is not None and line["turn_s"] > 0


def test_the_window_client_and_openai_streams_skip_the_place(slow: Live) -> None:
    """A client that does not show the line sees only the standard stream: the place is an SSE
    event named "queued" (skipped by a reader of unnamed events), a comment for OpenAI."""
    first = Reader(slow, {**HELLO, "max_tokens": 50_000})
    wait_until(lambda: first.events, what="the first answer")
    conn, response = slow.send("POST", "/v1/chat/completions", {**SHORT, "stream": True})
    raw = bytearray()

    def read(response: HTTPResponse = response) -> None:
        while piece := response.read1(65536):
            raw.extend(piece)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_until(lambda: b": queued, 1st in line" in raw, what="the place as a comment")
    hang_up(first.conn)
    reader.join(30)
    conn.close()
    assert raw.endswith(b"data: [DONE]\n\n") and b"event: queued" not in raw


# -- nothing of one client reaches another ------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Iterator[Live]:
    with serve_bundled_model(1024) as live:
        yield live


SYSTEM = {
    "role": "system",
    "content": "You are a helpful assistant in a classroom of thirty students. Answer each "
    "student briefly and kindly, in plain words, and never make up facts you were not told.",
}  # longer than one chunk of the prompt reader (32 tokens): a prefix worth reusing
ALICE = [
    SYSTEM,
    {"role": "user", "content": "My locker code is 4817. Please remember it."},
    {"role": "assistant", "content": "Of course. Your locker code is 4817."},
    {"role": "user", "content": "Repeat my locker code."},
]
BOB = [SYSTEM, {"role": "user", "content": "What is my locker code?"}]


def ask(live: Live, messages: list[dict[str, str]]) -> str:
    body = {"messages": messages, "max_tokens": 32, "temperature": 0, "seed": 3}
    text, final = check_contract(live.events(body))
    assert isinstance(final, Done), final
    return text


@pytest.mark.model
def test_no_client_sees_another_clients_conversation(model: Live) -> None:
    """llama.cpp #27148 restored another user's conversation from a shared prompt cache under
    load. Here the only cache is the model's prompt prefix, compared token by token: Bob's
    answer right after Alice's (her secret still in the cache, and their chats sharing the
    system prompt's tokens) is the very answer he gets from an empty cache."""
    backend: Any = model.chat.backend
    alice = ask(model, ALICE)
    assert "4817" in alice  # the secret was in the model's cache a moment ago
    bob_after_alice = ask(model, BOB)
    assert backend.reader.reused > 0  # the shared system prompt was reused ...
    with model.chat.controller.model_lock:
        backend.forget_prompt()
    bob_alone = ask(model, BOB)
    assert backend.reader.reused == 0
    assert bob_after_alice == bob_alone  # ... and nothing else of Alice's reached Bob
    assert "4817" not in bob_after_alice
