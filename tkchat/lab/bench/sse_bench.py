"""``tkchat bench --transport sse``: the same generation, in-process and over HTTP.

Three runs, each a row in the usual JSON ``runs`` list:

- ``in-process`` — the worker drives the bundled model and puts events on a queue (the
  ``raw`` of the window benchmark): the baseline.
- ``sse-tkchat`` — ``tkchat serve`` in its own process, the desktop client's
  :class:`~tkchat.generate.remote.RemoteBackend` reading its Server-Sent Events.
- ``sse-llama-cpp`` — llama-cpp-python's own OpenAI-compatible server on the same model, the
  same client.

Tokens/s counts pieces of text as the client receives them (one per token for both servers)
between the first and the last; TTFT is request → first text at the client. Cancel latency is
client abort → the server's model loop exiting. For ``tkchat serve`` that is measured exactly:
the server reports when its worker left the loop, in ``time.perf_counter`` — the monotonic
clock every process on the machine shares. llama-cpp-python's server reports nothing, so its
row gives a proxy: how much later a one-token request right after the abort finishes than the
same request on an idle server (the time the server kept generating for nobody).
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tkchat.conversation import Message, Sampling
from tkchat.events import Done, Error
from tkchat.generate.backend import Backend, GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.hardware import LLAMA_CPP_SERVER
from tkchat.generate.llama_backend import LlamaBackend, default_n_threads
from tkchat.generate.model_file import bundled_model_path, choose_model_path
from tkchat.generate.remote import RemoteBackend
from tkchat.lab.bench.figures import BENCH_PROMPT, SYSTEM, Check, RunFigures
from tkchat.stats import median, percentile, rounded
from tkchat.transport.channel import EventChannel

BENCH_N_CTX = 4096  # both servers get this context (the app's own default may differ)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


@contextmanager
def server_process(command: list[str], ready_url: str, timeout: float = 90.0) -> Iterator[None]:
    """Run a server subprocess until the block ends; wait until ``ready_url`` answers."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}: {' '.join(command)}")
            try:
                _get_json(ready_url)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {' '.join(command)}") from None
                time.sleep(0.2)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Client:
    """Runs generations through a backend with the app's worker, on this (main) thread."""

    def __init__(self, backend: Backend, tokens: int, seed: int) -> None:
        self.controller = GenerationController(backend, EventChannel())
        backend.load()
        self.sampling = Sampling(max_tokens=tokens, seed=seed, temperature=0.3)

    def request(
        self, prompt: str = BENCH_PROMPT, sampling: Sampling | None = None
    ) -> GenerationRequest:
        return GenerationRequest(
            (Message("system", SYSTEM), Message("user", prompt)), sampling or self.sampling
        )

    def generate(self, request: GenerationRequest) -> tuple[float, float, int]:
        """(tokens/s, TTFT ms, pieces) as this client saw them."""
        channel = EventChannel()
        worker = self.controller.new_worker(request, channel, gen=1)
        worker.start()
        event = self._final(channel)
        if isinstance(event, Error):
            raise RuntimeError(f"generation failed: {event.message}")
        stats = event.stats
        return stats.tokens_per_s or 0.0, stats.ttft_ms or 0.0, stats.tokens

    def abort_after(self, delay: float) -> tuple[float | None, bool]:
        """Start a generation, abort it after ``delay`` s; (abort time, was it still running)."""
        channel = EventChannel()
        worker = self.controller.new_worker(self.request(), channel, gen=1)
        worker.start()
        time.sleep(delay)
        running = worker.is_alive()
        worker.cancel()
        worker.join(30)
        self._final(channel)
        return worker.cancelled_at, running

    @staticmethod
    def _final(channel: EventChannel) -> Done | Error:
        while True:
            event = channel.get(timeout=300)
            if isinstance(event, (Done, Error)):
                return event

    def close(self) -> None:
        self.controller.shutdown()


def _throughput(client: Client, repeats: int) -> dict[str, Any]:
    client.generate(client.request())  # warm-up: caches, connections
    results = [client.generate(client.request()) for _ in range(repeats)]
    return {
        "tokens_per_s": rounded(median([r[0] for r in results]), 1),
        "ttft_ms": rounded(median([r[1] for r in results]), 1),
        "tokens": results[-1][2],
    }


def run_sse_bench(
    *, model: str | None, tokens: int, repeats: int, cancels: int, seed: int
) -> list[RunFigures]:
    """Main thread. Starts and stops both servers itself."""
    path = choose_model_path(model)
    rng = random.Random(seed)
    runs: list[RunFigures] = []
    threads = default_n_threads()

    # The same context as the llama-cpp-python server below: a like-for-like comparison.
    local = Client(LlamaBackend(str(path), n_ctx=BENCH_N_CTX, n_threads=threads), tokens, seed)
    try:
        runs.append(RunFigures(mode="in-process", backend="llama", **_throughput(local, repeats)))
    finally:
        local.close()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with server_process(
        [sys.executable, "-m", "tkchat", "serve", "--port", str(port), "--model", str(path)],
        f"{base}/health",
    ):
        client = Client(RemoteBackend(base), tokens, seed)
        figures: dict[str, Any] = _throughput(client, repeats)
        latencies, after = [], []
        for _ in range(cancels):
            previous = _last_cancel(base, wait=False)
            aborted_at, running = client.abort_after(rng.uniform(0.05, 0.3))
            if not running or aborted_at is None:
                continue
            entry = _last_cancel(base, newer_than=previous)
            if entry is not None and entry.get("exited_at") is not None:
                latencies.append((entry["exited_at"] - aborted_at) * 1000)
                after.append(entry.get("tokens_after_disconnect"))
        client.close()
        p99 = percentile(latencies, 99)
        tps = figures["tokens_per_s"]
        runs.append(
            RunFigures(
                mode="sse-tkchat",
                backend="llama",
                **figures,
                cancel_p50_ms=rounded(percentile(latencies, 50), 2),
                cancel_p99_ms=rounded(p99, 2),
                cancel_p99_token_periods=rounded(p99 * tps / 1000, 2) if p99 and tps else None,
                extra={
                    "cancel_samples": len(latencies),
                    "tokens_after_disconnect_max": max(
                        (a for a in after if a is not None), default=None
                    ),
                },
            )
        )

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    model_path = str(path) if model else str(bundled_model_path() or path)
    with server_process(
        [
            sys.executable,
            "-c",
            LLAMA_CPP_SERVER,
            "--model",
            model_path,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            str(threads),
            "--n_ctx",
            str(BENCH_N_CTX),
        ],
        f"{base}/v1/models",
    ):
        client = Client(RemoteBackend(base), tokens, seed)
        figures = _throughput(client, repeats)
        one = Sampling(max_tokens=1, seed=seed)
        idle = [_timed(client, client.request(sampling=one)) for _ in range(3)]
        proxies = []
        for _ in range(max(3, cancels // 4)):
            _aborted, running = client.abort_after(rng.uniform(0.05, 0.3))
            if running:
                proxies.append(_timed(client, client.request(sampling=one)) - min(idle))
        client.close()
        runs.append(
            RunFigures(
                mode="sse-llama-cpp",
                backend="llama",
                **figures,
                extra={
                    "cancel_proxy_p50_ms": rounded(percentile(proxies, 50), 1),
                    "cancel_proxy_max_ms": rounded(max(proxies) if proxies else None, 1),
                    "cancel_proxy_samples": len(proxies),
                },
            )
        )
    return runs


def _timed(client: Client, request: GenerationRequest) -> float:
    started = time.perf_counter()
    client.generate(request)
    return (time.perf_counter() - started) * 1000


def _last_cancel(
    base: str, *, wait: bool = True, newer_than: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The newest cancel the server recorded; with ``wait``, wait (up to 5 s) for one that
    differs from ``newer_than`` — the server notes it a moment after the disconnect."""
    deadline = time.monotonic() + 5
    while True:
        cancels = _get_json(f"{base}/health").get("cancels") or []
        newest = dict(cancels[-1]) if cancels else None
        if not wait or (newest is not None and newest != newer_than):
            return newest
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def sse_verdicts(runs: list[RunFigures]) -> list[Check]:
    by = {r.mode: r for r in runs}
    local, sse = by.get("in-process"), by.get("sse-tkchat")
    out: list[Check] = []
    if local and sse and local.tokens_per_s and sse.tokens_per_s:
        ratio = sse.tokens_per_s / local.tokens_per_s
        out.append(Check("SSE tokens/s >= 0.95 x in-process", ratio >= 0.95, f"{ratio:.3f} x"))
    if sse is not None and "tokens_after_disconnect_max" in sse.extra:
        worst = sse.extra["tokens_after_disconnect_max"]
        out.append(
            Check(
                "at most one token after the disconnect is seen",
                worst is not None and worst <= 1,
                f"worst {worst}",
            )
        )
    return out
