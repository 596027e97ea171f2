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

- **The teacher's files are hidden** (:func:`fenced` with ``hide``, :func:`hiding_plan`):
  the teacher's home, tkchat's data (the teacher's chats) and the class folder are covered,
  before the fence is made, by empty read-only folders (``tmpfs``), a file by ``/dev/null``,
  except the paths the window needs to run (Python, tkchat, the model, the throwaway home)
  and the folders on the way to them. The covers are made in a namespace of their own, one level
  outside the fence, so inside it they cannot be taken off (the kernel locks mounts a less
  privileged namespace inherits): ``umount`` fails, and what is under them cannot be reached.

Where ``unshare`` is missing or user namespaces are off, the window runs unfenced in a
session of its own, and the grader ends that session's process group after the run: a
daemon that started a session of its own survives there, and the report says the run was
not fenced and that it could read the teacher's files.

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
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

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
# The covers, made one namespace outside the fence: each place named before ``--`` is covered
# (a folder by an empty read-only tmpfs, a file by /dev/null), then the fence runs the rest.
# A place that cannot be covered is left as it is (a file of a kind mount refuses).
COVER = ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c")
COVER_SCRIPT = (
    'while [ "$1" != -- ]; do '
    'mount -t tmpfs -o ro,size=4k tkchat-hidden "$1" 2>/dev/null'
    ' || mount --bind /dev/null "$1" 2>/dev/null; shift; done; shift; exec "$@"'
)


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


@functools.cache
def covers_available() -> bool:
    """Whether :data:`COVER` works here (asked by covering a folder of a throwaway one)."""
    if not fence_available() or shutil.which("mount") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="tkchat-cover-") as folder:
        secret = Path(folder) / "secret"
        secret.mkdir()
        (secret / "x").write_text("x", encoding="utf-8")
        command = [*COVER, COVER_SCRIPT, "sh", str(secret), "--", "test", "!", "-e"]
        try:
            probe = subprocess.run([*command, str(secret / "x")], timeout=PROBE_S)
        except (OSError, subprocess.SubprocessError):
            return False
    return probe.returncode == 0


def fenced(
    command: list[str], *, fence: bool | None = None, hide: Sequence[Path] = ()
) -> list[str]:
    """``command`` run inside the fence where there is one (``fence``: whether to, by default
    whenever :func:`fence_available`), with the places in ``hide`` covered where
    :func:`covers_available` (:func:`hiding_plan` says which). Start it with
    ``start_new_session=True`` and end it with :func:`end_group`, fenced or not."""
    use = fence_available() if fence is None else fence
    if not use:
        return list(command)
    if hide and covers_available():
        return [*COVER, COVER_SCRIPT, "sh", *map(str, hide), "--", *FENCE, *command]
    return [*FENCE, *command]


def hiding_plan(places: Iterable[Path], keep: Iterable[Path]) -> list[Path]:
    """What to cover so that nothing under ``places`` can be read but what is in ``keep``:
    a place whole where nothing kept is in it, else each of its entries by the same rule (the
    folders on the way to a kept path stay, and nothing in a kept path is covered). Symbolic
    links are not followed (covering one would cover where it points) and not covered;
    sockets and other special files are left too. Any thread; reads the folders it walks."""
    kept = [Path(os.path.realpath(path)) for path in keep]
    plan: list[Path] = []
    for place in places:
        if not os.path.lexists(place) or os.path.islink(place):
            continue
        _cover(Path(os.path.realpath(place)), kept, plan)
    return plan


def _cover(path: Path, kept: list[Path], plan: list[Path]) -> None:
    if any(path == done or done in path.parents for done in plan):
        return  # covered already, with a folder above it
    if any(path == k or k in path.parents for k in kept):
        return  # kept, or inside what is kept
    if not any(path in k.parents for k in kept):
        if path.is_dir() or path.is_file():
            plan.append(path)
        return
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return  # unreadable here: unreadable there too
    for entry in entries:
        if not entry.is_symlink():
            _cover(entry, kept, plan)


def end_group(process: subprocess.Popen[bytes]) -> None:
    """After ``process`` (started with ``start_new_session=True``) has ended: kill what is
    left of its session's process group — all there is to end where there is no fence
    (inside the fence the kernel has already ended everything)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left
        os.killpg(process.pid, signal.SIGKILL)
