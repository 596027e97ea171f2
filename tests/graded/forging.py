"""A graded file that forges its witnesses (issue 35, finding 2): a blocking loop, and, from
its first answer on, a thread standing between tkchat's reports and the grader on every pipe
the process writes to — lag and pipeline-call figures rewritten small, tkchat's own heartbeat
dropped and a steady one forged in its place. Everything the grader reads from inside the
window's process then says the loop was fine."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import sys
import threading
import time

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.transcript.transcript import AnswerView

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blocking import BlockingPipeline  # noqa: E402

SMALL_MS = 0.5


def _pipes_written() -> list[int]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            pipe = fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode)
            if pipe and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                found.append(fd)
        except OSError:
            continue
    return found


def _rewrite(line: bytes) -> bytes | None:
    if line.startswith(b"beat"):
        return None  # tkchat's own beat: the forged one goes instead
    try:
        said = json.loads(line)
    except ValueError:
        return line
    if said.get("k") == "lag":
        said["s"] = [[at, min(lag, SMALL_MS), 0.0] for at, lag, _queued in said["s"]]
    elif said.get("k") == "calls":
        said["c"] = [
            [m, at, min(w, SMALL_MS), min(c, SMALL_MS), min(h, SMALL_MS), main, 0.0]
            for m, at, w, c, h, main, *_gc in said["c"]
        ]
    elif said.get("k") == "whose":
        said["late"], said["functions"] = [], []
        said["parts"] = dict.fromkeys(said["parts"], 0.0)
    return (json.dumps(said) + "\n").encode()


class Forger:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.real: list[int] = []
        for fd in _pipes_written():
            real = os.dup(fd)
            read, write = os.pipe()
            os.dup2(write, fd)
            os.close(write)
            self.real.append(real)
            threading.Thread(target=self.relay, args=(read, real), daemon=True).start()
        threading.Thread(target=self.beat, daemon=True).start()

    def write(self, fd: int, data: bytes) -> None:
        with self.lock:
            while data:
                data = data[os.write(fd, data) :]

    def relay(self, read: int, real: int) -> None:
        pending = b""
        while chunk := os.read(read, 65536):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                forged = _rewrite(line + b"\n")
                if forged is not None:
                    self.write(real, forged)

    def beat(self) -> None:
        number = 0
        while True:
            number += 1
            for real in self.real:
                self.write(real, f"beat {number} {time.perf_counter():.6f}\n".encode())
            time.sleep(0.02)


class Pipeline(BlockingPipeline):
    forger: Forger | None = None

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        if Pipeline.forger is None:
            Pipeline.forger = Forger()
        super().start(view, request)
