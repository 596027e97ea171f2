"""A fence around the process that runs a student's file: the self-test's window.

The grader runs code it has never read, with the teacher's rights. Where Linux lets an
ordinary user do it, that process gets namespaces of its own (util-linux's ``unshare``, as
:data:`FENCE` spells it: a user namespace that maps the teacher to root inside, and PID,
network and mount namespaces with a ``/proc`` of its own). What that buys, and why each
matters to a class:

- **Nothing it starts outlives its grading.** The window's process is the first process of
  its PID namespace; when it ends, the kernel ends every other process in the namespace —
  a daemon that forked twice and left its session included — before the grader hears that
  it ended. When the grader's deadline kills ``unshare`` instead, ``--kill-child`` passes
  the kill on. A file that would rewrite the grade table after the run has no process left
  to do it with.
- **It cannot reach the grader.** A process number from outside means nothing inside, so
  SIGSTOP to the grader (whose clock keeps the deadline) or to a classmate's window finds no
  one; its ``/proc`` lists only its own processes, so the grader's environment (where the
  teacher's folders are named) cannot be read there.
- **No network.** Only a loopback that is down.

What it does not do: hide files. The process still reads and writes whatever the teacher
can, by path (the report says so). Where ``unshare`` is missing or user namespaces are off,
the window runs unfenced in a session of its own, and the grader ends that session's
process group after the run: a daemon that started a session of its own survives there, and
the report says the run was not fenced.

Any thread (the probe runs once, then its answer is kept).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys

FENCE = (
    "unshare",
    "--user",
    "--map-root-user",
    "--pid",
    "--fork",
    "--kill-child",
    "--net",
    "--mount-proc",
)
PROBE_S = 10.0


@functools.cache
def fence_available() -> bool:
    """Whether :data:`FENCE` works here: Linux, util-linux's ``unshare``, and user namespaces
    an ordinary user may make (asked by making one, the only reliable way to know)."""
    if not sys.platform.startswith("linux") or shutil.which(FENCE[0]) is None:
        return False
    try:
        probe = subprocess.run([*FENCE, "true"], capture_output=True, timeout=PROBE_S)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def fenced(command: list[str], *, fence: bool | None = None) -> list[str]:
    """``command`` run inside the fence where there is one (``fence``: whether to, by default
    whenever :func:`fence_available`). Start it with ``start_new_session=True`` and end it
    with :func:`end_group`, fenced or not."""
    use = fence_available() if fence is None else fence
    return [*FENCE, *command] if use else list(command)


def end_group(process: subprocess.Popen[bytes]) -> None:
    """After ``process`` (started with ``start_new_session=True``) has ended: kill what is
    left of its session's process group — all there is to end where there is no fence
    (inside the fence the kernel has already ended everything)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left
        os.killpg(process.pid, signal.SIGKILL)
