"""``tkchat serve --server URL``: the same page, line and limits in front of a real engine —
here llama-cpp-python's own OpenAI-compatible server on the bundled model (the one
tests/test_remote_backend.py starts), reached through the remote backend the window uses.

What a class gets through the relay: OpenAI clients' answers with usage and stop strings,
several students served one after another through the line (told their place), a student who
leaves stops the engine too, and the command line that starts it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("uvicorn")

from tests import test_remote_backend  # noqa: E402
from tests.conftest import free_port, get_json, wait_until  # noqa: E402
from tests.test_line import Reader  # noqa: E402
from tests.test_remote_backend import disconnects_seen  # noqa: E402
from tests.test_server import Live, check_contract, hang_up, serve  # noqa: E402
from tkchat.events import Done  # noqa: E402
from tkchat.generate.remote import RemoteBackend  # noqa: E402

pytestmark = pytest.mark.model

# llama-cpp-python's server on the bundled model, started once for this module.
llama_server = test_remote_backend.llama_server

COUNT = [{"role": "user", "content": "Count from 1 to 10, one number per line."}]


@pytest.fixture(scope="module")
def relay(llama_server: tuple[str, Path]) -> Iterator[Live]:
    """tkchat serve in front of llama-cpp-python's server, as ``--server URL`` makes it."""
    backend = RemoteBackend(llama_server[0])
    backend.load()
    with serve(backend) as live:
        yield live


def client(live: Live) -> Any:
    return openai.OpenAI(
        base_url=f"http://127.0.0.1:{live.port}/v1", api_key="unused", max_retries=0, timeout=120
    )


def test_an_openai_client_through_the_relay_gets_usage_and_stop(relay: Live) -> None:
    api = client(relay)
    free = api.chat.completions.create(model="any", messages=COUNT, max_tokens=40, temperature=0)
    text = free.choices[0].message.content or ""
    assert "3" in text and free.usage is not None and free.usage.completion_tokens > 0
    stopped = api.chat.completions.create(
        model="any", messages=COUNT, max_tokens=40, temperature=0, stop=["3"]
    )
    assert stopped.choices[0].message.content == text[: text.index("3")]
    assert stopped.choices[0].finish_reason == "stop"
    (model,) = api.models.list().data
    assert model.id.startswith("server SmolLM2-135M-Instruct")


def test_students_through_the_relay_wait_their_turn_and_are_answered_in_order(
    relay: Live,
) -> None:
    story = {
        "messages": [{"role": "user", "content": "Write a long story about a dragon."}],
        "max_tokens": 400,
        "seed": 1,
    }
    first = Reader(relay, story, name="student-1")
    wait_until(lambda: first.events, timeout=60, what="the first answer to start")
    others = [Reader(relay, {**story, "max_tokens": 8}, name=f"student-{i}") for i in (2, 3)]
    wait_until(lambda: all(r.places for r in others), timeout=30, what="both told their place")
    assert [r.places[0]["position"] for r in others] == [1, 2]
    hang_up(first.conn)  # the first student leaves mid-story: the others' turns come
    finals = []
    for reader in others:
        reader.join(120)
        text, final = check_contract(reader.events)
        assert isinstance(final, Done) and text.strip(), reader.events[-1]
        finals.append(final)
    assert finals[0].gen < finals[1].gen  # answered in the order they joined


def test_a_student_who_leaves_stops_the_engine_too(
    relay: Live, llama_server: tuple[str, Path]
) -> None:
    _, log_path = llama_server
    before = disconnects_seen(log_path)
    story = {"messages": [{"role": "user", "content": "Write a long story."}], "max_tokens": 400}
    reader = Reader(relay, story)
    wait_until(lambda: len(reader.events) >= 2, timeout=60, what="the answer to stream")
    hang_up(reader.conn)
    wait_until(lambda: relay.health()["cancels"], timeout=30, what="tkchat's cancel")
    assert relay.health()["cancels"][-1]["tokens_after_disconnect"] <= 1
    wait_until(lambda: disconnects_seen(log_path) > before, timeout=30, what="the engine to see it")


def test_the_command_line_serves_a_lab_engine(llama_server: tuple[str, Path]) -> None:
    port = free_port()
    command = [sys.executable, "-m", "tkchat", "serve", "--server", llama_server[0]]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--queue", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith(f"tkchat serve: http://127.0.0.1:{port}/"), line
        assert "(model server SmolLM2-135M-Instruct.Q4_1.gguf at 127.0.0.1:" in line
        health = get_json(f"http://127.0.0.1:{port}/health")
        assert health["line"]["capacity"] == 5 and health["line"]["parallel"] == 1
        answer = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
        reply = answer.chat.completions.create(model="any", messages=COUNT, max_tokens=4)
        assert reply.choices[0].finish_reason == "length"
    finally:
        proc.terminate()
        proc.wait(20)


def test_parallel_slots_need_a_server() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tkchat", "serve", "--backend", "scripted", "--parallel", "4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "--parallel needs --server" in result.stderr
