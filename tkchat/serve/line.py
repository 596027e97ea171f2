"""The fair line: requests wait their turn for the model, first come first served, and are
told their place.

A class shares one model. On a CPU, answering thirty students at once is not faster than
answering them one after another (the model's tokens per second barely grow with parallel
streams), it only makes every answer slow; refusing the twenty-nine with an error is worse.
So a request that finds every slot taken joins a line:

- **First come, first served, one place each.** The line is a FIFO holding at most one
  request of each client; a client's further requests wait behind its own, and the next one
  joins the end of the line when the one before leaves it (for a slot, or because its client
  left: then the next takes its place). So one client that sends five requests at once has all
  five answered, in its own order, and a student who asks meanwhile waits behind one of them
  at most, not four; a client with one request at a time is served exactly first come, first
  served. A request leaves the line for a slot (one slot for a local model; ``--parallel N``
  in front of a server that answers N at once), or when its client leaves (the socket
  closes: :meth:`Line.leave`). A place told is the place if nobody else came: a client's
  second request moves back when another client joins.
- **Fair in model time, not only in turns.** Reading a long prompt holds the model as
  answering does: one request with a 3,500-token prompt took 84 % of the model's time against
  ten short askers, one turn each. So a turn longer than :data:`HEAVY_X` times the median turn
  (and than :data:`HEAVY_MIN_S`) leaves its share owing the excess over a median turn; a share
  that owes gives up its place at the head of the line, a median turn paid back each time,
  while others wait (deficit round robin, paid after the turn, since a turn's cost is known
  only then). Turns of ordinary length owe nothing, so the line stays first come, first
  served; nobody owes once the line has emptied; a share alone in the line is never held
  back. ``counts["deferred"]`` says how often a place was given up.
- **Told its place.** Whenever the line moves, every waiting request is told its position, how
  many wait, and an estimate of its wait (:class:`~tkchat.events.QueuePlace`; None until a
  first turn has been timed): what is known of each turn ahead, priced at the rates of the
  last :data:`TURNS_KEPT` turns (:class:`TurnClock`, :class:`Rates`):

  - a turn reads its prompt, then answers. A waiting request's turn should take a fixed part
    plus its prompt's characters × seconds a character (both fitted to past turns' start →
    first token), plus its ``max_tokens`` × the share of ``max_tokens`` past answers used ×
    seconds an answer token. A prompt is counted in characters: its tokens are counted only
    by the worker, with the model's tokenizer, once its turn has come; the rate is measured,
    so it follows the language and the model. So a long chat or a large ``max_tokens`` ahead
    raises the estimate of everyone behind it. A request joined without its :class:`Need`,
    or before any turn was priced, counts a mean turn.
  - the turn in progress counts its elapsed time: it is expected to end when its expected
    time has passed. Past that, it is a long one: it is expected to run to its
    ``max_tokens`` (its bound, at the measured rate). Past that too (the machine slowed
    down), it could end any moment: it counts nothing more, and the estimate is a lower
    bound (``QueuePlace.at_least``: the page says "at least").
  - the waiting are told again the moment a turn in progress runs past its expected time or
    its bound: the line sets a timer on its own clock (:class:`LineClock`, the event loop's;
    a test steps a clock of its own), besides the places each response asks for every few
    seconds.
- **Bounded.** At most ``LineLimits.waiting`` requests wait; the next is refused at once with
  503 and a ``Retry-After`` (when the first place should free), never left hanging. One
  client has at most ``LineLimits.per_client`` requests in line or being answered: the next
  is refused with 429 and a ``Retry-After`` (when the first of its own should be answered).
- **Who a client is.** A client is its address (beyond the loopback) with, where given, its
  name: the page's per-tab id (``X-Tkchat-Client``) or the OpenAI ``user`` field. Programs
  on this machine that name themselves nowhere (a script, the teacher's own OpenAI client)
  have no ``per_client`` bound and take their turns as one client: every program here is the
  same user. Since a name is the client's own word, a machine beyond the loopback takes its
  turns as one client whatever names it gives, and has at most ``LineLimits.per_address``
  requests in line or being answered.

Everything here runs on the server's event loop (one thread: no locks). The line knows nothing
of HTTP or of workers: it calls ``start`` when an item's turn comes and ``tell`` when an item
should hear its place.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import statistics
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tkchat.events import QueuePlace
from tkchat.serve.errors import RequestRejected

TURNS_KEPT = 20  # the estimate prices turns at the rates of this many of the last turns
RETELL_AFTER_S = 0.05  # a re-tell's timer fires this long after the threshold it waits for
HEAVY_X = 2.0  # a turn this many times the median turn (and HEAVY_MIN_S) leaves a debt
HEAVY_MIN_S = 2.0  # shorter turns never owe: a class of short answers is served in order

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class LineLimits:
    """What ``tkchat serve`` lets a class hold (``--queue``, ``--parallel``,
    ``--max-answer-tokens``, ``--max-prompt-tokens``; see the module)."""

    waiting: int = 64  # requests in line, besides those being answered: 503 past it
    parallel: int = 1  # generations at once
    per_client: int = 8  # requests in line or being answered from one client: 429 past it
    per_address: int = 8  # requests in line or being answered from one address beyond loopback
    answer_tokens: int = 1024  # the longest answer one request gets (its max_tokens is cut to it)
    # the most prompt tokens one request has the model read: reading a prompt holds the model
    # as answering does (a 7,000-token prompt held it 60 % of the time against ten askers)
    prompt_tokens: int = 4096


DEFAULT_LIMITS = LineLimits()


@dataclass(frozen=True, slots=True)
class Client:
    """Who asks: ``address`` None for this machine (the loopback), and the client's own name
    (the page's per-tab id, or the OpenAI ``user`` field), if any."""

    address: str | None
    name: str | None = None

    @property
    def key(self) -> tuple[str, str] | None:
        """Whom ``per_client`` counts; None: an unnamed program on this machine."""
        if self.address is None and self.name is None:
            return None
        return (self.address or "", self.name or "")

    @property
    def share(self) -> str:
        """Whose turns the rounds count: a machine beyond the loopback (whatever names it
        gives), a named program here, or all the unnamed programs here together."""
        if self.address is not None:
            return f"address {self.address}"
        return f"name {self.name}" if self.name is not None else "this machine"


class Timer(Protocol):
    def cancel(self) -> None: ...


class LineClock(Protocol):
    """The line's time: ``monotonic`` seconds, and a callback after a delay (on the loop)."""

    def monotonic(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The server's clock: ``time.monotonic`` and the running event loop's timers. Loop thread."""

    def monotonic(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay, callback)


@dataclass(frozen=True, slots=True)
class Need:
    """What is known of a request before its turn: its prompt's length in characters (every
    message's text) and its answer's bound (``max_tokens``, already cut to the server's)."""

    prompt_chars: int
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Spent:
    """What a turn used, as its worker measured it: seconds from its start to its first token
    (reading the prompt), and the tokens it answered."""

    read_s: float
    tokens: int


@dataclass(frozen=True, slots=True)
class _Turn:
    took: float
    need: Need | None
    spent: Spent | None


class TurnClock:
    """How long turns take, from the last :data:`TURNS_KEPT` (a turn is a slot held from its
    start to its worker leaving the model loop, whatever ended it): their mean and median,
    and the per-token rates that price a turn not yet run (see the module)."""

    def __init__(self) -> None:
        self._turns: deque[_Turn] = deque(maxlen=TURNS_KEPT)

    def add(self, seconds: float, need: Need | None = None, spent: Spent | None = None) -> None:
        self._turns.append(_Turn(max(0.0, seconds), need, spent))

    @property
    def mean(self) -> float | None:
        return sum(t.took for t in self._turns) / len(self._turns) if self._turns else None

    @property
    def median(self) -> float | None:
        """The fair turn's length: a few long turns do not move it (the mean they do)."""
        return statistics.median(t.took for t in self._turns) if self._turns else None

    def rates(self) -> Rates | None:
        """The rates that price a turn, over the kept turns whose figures are known (None:
        none). Reading a prompt is fitted as a line through (characters, seconds to the first
        token): a fixed part (the chat template, the first step) and a part per character,
        by least squares; while the prompts are alike (the longest under twice the
        shortest) the fixed part alone, their mean."""
        priced = [(t.took, t.need, t.spent) for t in self._turns if t.need and t.spent]
        tokens = sum(spent.tokens for _, _, spent in priced)
        bound = sum(need.max_tokens for _, need, _ in priced)
        if not priced or tokens <= 0 or bound <= 0:
            return None
        chars = [float(need.prompt_chars) for _, need, _ in priced]
        reads = [min(spent.read_s, took) for took, _, spent in priced]
        answer = sum(max(0.0, took - spent.read_s) for took, _, spent in priced)
        fixed, per_char = _read_line(chars, reads)
        return Rates(fixed, per_char, answer / tokens, min(1.0, tokens / bound))

    def expected(self, need: Need | None) -> float | None:
        """The seconds a turn with this need should take (a mean turn without one)."""
        rates = self.rates()
        if need is None or rates is None:
            return self.mean
        return rates.read(need) + need.max_tokens * rates.used * rates.per_token

    def bound(self, need: Need | None) -> float | None:
        """The seconds it should take at most: its whole ``max_tokens`` answered."""
        rates = self.rates()
        if need is None or rates is None:
            return self.mean
        return rates.read(need) + need.max_tokens * rates.per_token


@dataclass(frozen=True, slots=True)
class Rates:
    """What a turn costs (see the module): reading its prompt, ``fixed`` seconds and
    ``per_char`` a character; answering, ``per_token`` seconds a token, for the share
    ``used`` of its ``max_tokens`` that answers use."""

    fixed: float
    per_char: float
    per_token: float
    used: float

    def read(self, need: Need) -> float:
        return self.fixed + need.prompt_chars * self.per_char


def _read_line(chars: list[float], reads: list[float]) -> tuple[float, float]:
    """Least squares through (characters, seconds): the fixed part and the slope, neither
    below zero; the mean alone while the prompts are alike."""
    mean_chars, mean_read = statistics.fmean(chars), statistics.fmean(reads)
    if max(chars) < 2 * max(min(chars), 1.0):
        return mean_read, 0.0
    spread = sum((c - mean_chars) ** 2 for c in chars)
    slope = sum((c - mean_chars) * (r - mean_read) for c, r in zip(chars, reads, strict=True))
    slope = max(0.0, slope / spread)
    if mean_read - slope * mean_chars < 0:  # through the origin: all of it per character
        return 0.0, sum(reads) / sum(chars)
    return mean_read - slope * mean_chars, slope


class Line(Generic[T]):
    """The line and the slots it feeds (see the module). Loop thread only."""

    def __init__(
        self,
        limits: LineLimits,
        start: Callable[[T], None],
        tell: Callable[[T, QueuePlace], None],
        clock: LineClock | None = None,
    ) -> None:
        self.limits = limits
        self._start = start
        self._tell = tell
        self.time: LineClock = clock or LoopClock()
        self._timer: Timer | None = None  # the next re-tell (see _arm)
        self._needs: dict[T, Need | None] = {}  # what is known of each item waiting or served
        self._line: deque[T] = deque()  # first come, first served; one request per share
        self._behind: dict[str, deque[T]] = {}  # a share's further requests, in its order
        self._shares: dict[T, str] = {}  # every waiting item -> its share
        self.serving: dict[T, float] = {}  # item -> when its turn began (monotonic)
        self._serving_share: dict[T, str] = {}
        self.owed: dict[str, float] = {}  # share -> model seconds it owes (see the module)
        self.clock = TurnClock()
        self._clients: dict[T, Client] = {}  # items whose client still holds a place
        self._holders: Counter[tuple[str, str]] = Counter()
        self._addresses: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()  # joined, served, left, full, per_client...
        self.closed = False

    # -- joining and leaving --------------------------------------------------------------

    def join(self, item: T, client: Client, need: Need | None = None) -> None:
        """Take ``item`` into the line (and to a free slot at once, if there is one), or refuse
        it: 429 (its client, or its machine, holds its most), 503 (the line is full). No await
        inside: on one loop, two requests cannot both pass a check. ``need`` prices its turn
        in the estimates (a mean turn without it)."""
        self._check(client)
        self.counts["joined"] += 1
        self._hold(item, client)
        self._needs[item] = need
        share = client.share
        self._shares[item] = share
        if share in self._behind:  # it has one in line already: this one waits behind it
            self._behind[share].append(item)
        elif any(self._shares[waiting] == share for waiting in self._line):
            self._behind[share] = deque([item])
        else:
            self._line.append(item)
        self._dispatch()

    def leave(self, item: T) -> None:
        """The client left (or the response ended). A waiting item leaves the line, and those
        behind it move up (its client's next request, if any, takes its place); either way
        its client's place is free for its next request."""
        self.release(item)
        share = self._shares.pop(item, None)
        if share is None:
            return
        self._needs.pop(item, None)
        if item in self._line:
            index = self._line.index(item)
            del self._line[index]
            following = self._next_of(share)
            if following is not None:
                self._line.insert(index, following)
        else:
            self._behind[share].remove(item)
            if not self._behind[share]:
                del self._behind[share]
        self.counts["left"] += 1
        self._tell_everyone()

    def release(self, item: T) -> None:
        """The item's client may ask again (its answer is complete, or it left). Idempotent."""
        client = self._clients.pop(item, None)
        if client is None:
            return
        if client.key is not None:
            self._holders[client.key] -= 1
            if self._holders[client.key] <= 0:
                del self._holders[client.key]
        if client.address is not None:
            self._addresses[client.address] -= 1
            if self._addresses[client.address] <= 0:
                del self._addresses[client.address]

    def close(self) -> None:
        """The server is shutting down: nobody joins, nobody in the line starts."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def finished(self, item: T, *, answered: bool = True, spent: Spent | None = None) -> None:
        """The item's turn is over (its worker left the model loop): the next one starts.
        A turn that answered nothing (refused at once, a prompt too long, a crash) is not
        timed: failures in an instant would pull the estimate of a real turn towards zero.
        ``spent``, with the item's :class:`Need`, is what prices the turns to come."""
        began = self.serving.pop(item, None)
        share = self._serving_share.pop(item, None)
        need = self._needs.pop(item, None)
        if began is not None and answered:
            took = self.time.monotonic() - began
            # before any turn is timed, a fair turn is HEAVY_MIN_S (a long first turn owes too)
            fair = self.clock.median or HEAVY_MIN_S
            if share is not None and took > max(HEAVY_X * fair, HEAVY_MIN_S):
                self.owed[share] = self.owed.get(share, 0.0) + took - fair
            self.clock.add(took, need, spent)
        self._dispatch()

    # -- what the line looks like ---------------------------------------------------------

    @property
    def waiting(self) -> list[T]:
        """Every waiting request, in the order they will start if nobody else joins or leaves
        and every turn from now is a median one: the line, a share that owes giving up its
        place, each client's next request joining the end as the one before starts."""
        line = deque(self._line)
        behind = {share: deque(items) for share, items in self._behind.items()}
        owed = dict(self.owed)
        order: list[T] = []
        while line:
            item = self._next_in(line, owed)
            order.append(item)
            following = behind.get(self._shares[item])
            if following:
                line.append(following.popleft())
        return order

    def _next_in(self, line: deque[T], owed: dict[str, float]) -> T:
        """The item to start next, out of ``line``: its head, unless the head's share owes
        and another share waits; then the head gives up its place (to the end), a median
        turn paid back. Both :meth:`_dispatch` and :attr:`waiting` pick through here."""
        fair = self.clock.median
        while fair:
            share = self._shares[line[0]]
            debt = owed.get(share, 0.0)
            if debt <= 0 or all(self._shares[other] == share for other in line):
                break
            owed[share] = max(0.0, debt - fair)
            line.rotate(-1)
            if line is self._line:
                self.counts["deferred"] += 1
        return line.popleft()

    def place(self, item: T) -> QueuePlace | None:
        """Where ``item`` stands, or None once it is not waiting."""
        if item not in self._shares:
            return None
        waiting = self.waiting
        ahead = waiting.index(item)
        return self._place(ahead + 1, len(waiting), self._starts(waiting[:ahead]))

    def eta(self, position: int) -> float | None:
        """Seconds until the request at ``position`` (1: next) should start (see the module)."""
        ahead: list[T | None] = list(self.waiting[: position - 1])
        ahead += [None] * (position - 1 - len(ahead))  # beyond the line: mean turns
        starts = self._starts(ahead)
        return None if starts is None else round(starts[-1][0], 1)

    def _starts(self, ahead: list[T] | list[T | None]) -> list[tuple[float, bool]] | None:
        """When each request of ``ahead`` (in order) should start, and the one behind them all
        last: seconds from now, and whether that is a lower bound. Each slot frees when its
        turn in progress should end (:meth:`_left`); each request ahead then holds the first
        slot to free for its expected turn. None before any turn was timed."""
        if self.clock.mean is None:
            return None
        now = self.time.monotonic()
        free = [self._left(item, now - began) for item, began in self.serving.items()]
        free += [(0.0, False)] * max(0, self.limits.parallel - len(free))
        heapq.heapify(free)
        starts = []
        for item in ahead:
            at, lower = heapq.heappop(free)
            starts.append((at, lower))
            turn = self.clock.expected(self._needs.get(item) if item is not None else None)
            heapq.heappush(free, (at + (turn or 0.0), lower))
        starts.append(free[0])
        return starts

    def _left(self, item: T, elapsed: float) -> tuple[float, bool]:
        """Seconds the turn in progress should still take, having run ``elapsed``: to its
        expected end; past that, to its bound; past that, nothing more it can be counted on
        for (a lower bound: True)."""
        need = self._needs.get(item)
        for end in (self.clock.expected(need), self.clock.bound(need)):
            if end is not None and elapsed < end:
                return end - elapsed, False
        return 0.0, True

    @staticmethod
    def _place(position: int, waiting: int, starts: list[tuple[float, bool]] | None) -> QueuePlace:
        if starts is None:
            return QueuePlace(position, waiting, None)
        at, lower = starts[position - 1] if len(starts) >= position else starts[-1]
        return QueuePlace(position, waiting, round(at, 1), at_least=lower)

    def retry_after(self) -> int:
        """Whole seconds until a place in a full line should free (at least 1)."""
        eta = self.eta(1)
        return max(1, math.ceil(eta)) if eta is not None else 1

    def client_retry_after(self, key: tuple[str, str]) -> int:
        """Whole seconds until the first of this client's requests should be answered (at
        least 1): the one being answered at the end of its mean turn, or the first waiting at
        the end of its own turn."""
        if self.clock.mean is None:
            return 1
        now = self.time.monotonic()
        ends = []
        for item, client in self._clients.items():
            if client.key != key:
                continue
            if item in self.serving:
                ends.append(self._left(item, now - self.serving[item])[0])
            elif (place := self.place(item)) is not None:
                ends.append(
                    (place.eta_s or 0.0) + (self.clock.expected(self._needs.get(item)) or 0.0)
                )
        return max(1, math.ceil(min(ends))) if ends else 1

    # -- inside -----------------------------------------------------------------------------

    def _check(self, client: Client) -> None:
        if self.closed:
            raise RequestRejected(503, "shutting_down", "The server is shutting down.")
        if client.key is not None and self._holders[client.key] >= self.limits.per_client:
            self.counts["per_client"] += 1
            raise RequestRejected(
                429,
                "per_client",
                f"You already have {self.limits.per_client} questions waiting or being "
                "answered: wait for one of their answers before you ask the next one.",
                {"Retry-After": str(self.client_retry_after(client.key))},
                code="rate_limit_exceeded",
            )
        if client.address is not None and (
            self._addresses[client.address] >= self.limits.per_address
        ):
            self.counts["per_address"] += 1
            raise RequestRejected(
                429,
                "per_address",
                f"Your machine already has {self.limits.per_address} questions waiting or "
                "being answered: wait for one of them to finish.",
                {"Retry-After": str(self.retry_after())},
                code="rate_limit_exceeded",
            )
        slot_free = len(self.serving) < self.limits.parallel
        if not slot_free and len(self._shares) >= self.limits.waiting:
            self.counts["full"] += 1
            retry = self.retry_after()
            raise RequestRejected(
                503,
                "line_full",
                f"The line is full: {len(self._shares)} questions are waiting for the model. "
                f"Try again in about {retry} s.",
                {"Retry-After": str(retry)},
            )

    def _hold(self, item: T, client: Client) -> None:
        self._clients[item] = client
        if client.key is not None:
            self._holders[client.key] += 1
        if client.address is not None:
            self._addresses[client.address] += 1

    def _next_of(self, share: str) -> T | None:
        """The share's next request, out of its own queue (None: it has none)."""
        following = self._behind.get(share)
        if not following:
            return None
        item = following.popleft()
        if not following:
            del self._behind[share]
        return item

    def _dispatch(self) -> None:
        """Fill the free slots from the head of the line (each client's next request joining
        its end), then tell the rest their places."""
        if self.closed:
            return
        moved = False
        while self._line and len(self.serving) < self.limits.parallel:
            item = self._next_in(self._line, self.owed)
            share = self._shares.pop(item)
            following = self._next_of(share)
            if following is not None:
                self._line.append(following)
            self.serving[item] = self.time.monotonic()
            self._serving_share[item] = share
            self.counts["served"] += 1
            moved = True
            self._start(item)
        if not self._line and not self.serving:
            self.owed.clear()  # the line emptied: nobody was kept waiting by what was owed
        if moved or self._line:
            self._tell_everyone()

    def _tell_everyone(self) -> None:
        waiting = self.waiting
        starts = self._starts(waiting)
        for position, item in enumerate(waiting, start=1):
            self._tell(item, self._place(position, len(waiting), starts))
        self._arm()

    def _arm(self) -> None:
        """Set the timer for the next moment a turn in progress runs past its expected end or
        its bound: the waiting are told again then (their estimates jump: see the module)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._line or self.closed or self.clock.mean is None:
            return
        now = self.time.monotonic()
        crossings = []
        for item, began in self.serving.items():
            need, elapsed = self._needs.get(item), now - began
            for end in (self.clock.expected(need), self.clock.bound(need)):
                if end is not None and end > elapsed:
                    crossings.append(end - elapsed)
        if crossings:
            self._timer = self.time.call_later(min(crossings) + RETELL_AFTER_S, self._retell)

    def _retell(self) -> None:
        """The timer fired (loop thread): a turn ran past what was told; tell everyone again."""
        self._timer = None
        if self._line and not self.closed:
            self.counts["retold"] += 1
            self._tell_everyone()
