"""Downloading one GGUF file into the Hugging Face cache: the child process's side.

``python -m tkchat.models.download_child --repo … --file … --endpoint … --cache …`` runs in a
process of its own (started by :mod:`tkchat.models.download_job`), so that Cancel can end it at
once: ``huggingface_hub`` has no way to interrupt a transfer, and a thread blocked in a socket
read cannot be stopped. It writes one JSON object per line on stdout (``meta``, ``progress``,
then ``done`` or ``error``) and nothing else.

What comes from ``huggingface_hub``: the file's URL (:func:`hf_hub_url`, honouring the
endpoint, e.g. a mirror), its metadata (:func:`get_hf_file_metadata`: the commit, the SHA-256
of an LFS file from its ``X-Linked-Etag``, the size from ``X-Linked-Size``, the CDN location
the hub redirects to), the HTTP session, and the hub's errors. The bytes themselves are
streamed here rather than by :func:`hf_hub_download`, whose current versions write each
attempt to a uniquely named temporary file and delete it on failure, so that nothing survives
a crash to resume from. Here the unfinished file is ``blobs/<sha256>.incomplete`` and each
attempt continues it with an HTTP ``Range`` request. The finished file lands where
``hf_hub_download`` would put it (``blobs/<sha256>``, linked from
``snapshots/<commit>/<file>``, ``refs/<revision>``), so the library, the model picker and
llama.cpp all find it.

No token is sent: the catalogue's models are public, and a mirror must not see the user's
Hugging Face credentials.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

PROGRESS_EVERY_S = 0.1
MAX_TRIES = 5  # connections in a row without real progress before giving up ("cut")
REAL_PROGRESS = 1 << 20  # a connection that brings less (and not the end) made no real progress
DISK_MARGIN = 50_000_000  # leave this much free besides the file itself
MIN_RATE = 4096  # bytes a second, on average over RATE_WINDOW_S, or the mirror is too slow
RATE_WINDOW_S = 60.0
EXIT_OK, EXIT_FAILED = 0, 1


class FetchError(Exception):
    """A failure with a kind (see ``tkchat/i18n/catalogue.py``: one sentence per kind) and the
    figures its sentence needs."""

    def __init__(self, kind: str, **fields: Any) -> None:
        super().__init__(kind)
        self.kind = kind
        self.fields = fields


@dataclass(frozen=True)
class FetchRequest:
    repo: str
    file: str
    revision: str
    endpoint: str
    cache: Path
    sha256: str | None = None  # the catalogue's, when it has one
    size: int | None = None
    read_timeout_s: float = 60.0
    rate_window_s: float = RATE_WINDOW_S


class Reporter:
    """Writes the events on ``stream``, one JSON line each, progress at most 10 times a
    second: a figure held back is sent by a small thread a moment later, so the last bytes
    before a stall are reported too. A parent that went away (a broken pipe) ends this
    process: nobody would see the result, and the unfinished file is kept for next time."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._lock = threading.Lock()
        self._last_sent = 0.0
        self._held: dict[str, Any] | None = None
        threading.Thread(target=self._flush_held, name="tkchat-fetch-progress", daemon=True).start()

    def send(self, event: str, **fields: Any) -> None:
        with self._lock:
            if event != "progress":
                self._held = None  # the final event supersedes a held figure
            self._write(event, fields)

    def progress(self, phase: str, done: int, total: int | None, *, force: bool = False) -> None:
        fields = {"phase": phase, "done": done, "total": total}
        with self._lock:
            if force or time.monotonic() - self._last_sent >= PROGRESS_EVERY_S:
                self._held = None
                self._write("progress", fields)
            else:
                self._held = fields

    def _write(self, event: str, fields: dict[str, Any]) -> None:
        """Under the lock: one line, in order with every other."""
        if event == "progress":
            self._last_sent = time.monotonic()
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()

    def _flush_held(self) -> None:
        """The helper thread: send a held figure once it is due."""
        while True:
            time.sleep(PROGRESS_EVERY_S)
            with self._lock:
                held, self._held = self._held, None
                try:
                    if held is not None:
                        self._write("progress", held)
                except (OSError, ValueError):
                    os._exit(EXIT_FAILED)  # the parent is gone


def fetch(request: FetchRequest, out: Reporter) -> tuple[Path, bool]:
    """Download (or find) the file; returns its readable path in the cache and whether it was
    there already. Raises :class:`FetchError`."""
    from filelock import FileLock, Timeout
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(
        request.repo, request.file, revision=request.revision, endpoint=request.endpoint
    )
    try:
        meta = get_hf_file_metadata(url, token=False, timeout=request.read_timeout_s)
    except Exception as exc:
        _raise_for(exc, request)
    if not meta.commit_hash:
        # A login page, a proxy's error page, a web server that is not a hub: all answer
        # without the hub's headers.
        raise FetchError("not_a_hub", endpoint=request.endpoint)
    sha = (meta.etag or "").lower()
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise FetchError("no_checksum", endpoint=request.endpoint)
    if request.sha256 is not None and sha != request.sha256:
        raise FetchError("checksum_mismatch", endpoint=request.endpoint)
    size = meta.size if meta.size is not None else request.size
    if request.size is not None and meta.size is not None and meta.size != request.size:
        raise FetchError(
            "size_mismatch", endpoint=request.endpoint, got=meta.size, size=request.size
        )

    folder = request.cache / ("models--" + request.repo.replace("/", "--"))
    blob = folder / "blobs" / sha
    pointer = folder / "snapshots" / meta.commit_hash / request.file
    _write_ref(folder, request.revision, meta.commit_hash)
    if pointer.is_file() or (blob.is_file() and size in (None, blob.stat().st_size)):
        _link(blob, pointer)
        return pointer, True

    lock_path = request.cache / ".locks" / folder.name / f"{sha}.lock"  # huggingface_hub's own
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(lock_path), timeout=0):
            partial = folder / "blobs" / f"{sha}.incomplete"
            _download(request, meta.location, partial, sha, size, out)
            os.replace(partial, blob)
    except Timeout:
        raise FetchError("busy") from None
    _link(blob, pointer)
    return pointer, False


def _download(
    request: FetchRequest, location: str, partial: Path, sha: str, size: int | None, out: Reporter
) -> None:
    """Bring ``partial`` to the whole file (continuing what is there), then check it.

    A hostile or broken mirror cannot fill the disk or hold the download for ever: nothing is
    written past the stated size (or, with none stated, past the free space less
    :data:`DISK_MARGIN`), :data:`MAX_TRIES` connections in a row that bring less than
    :data:`REAL_PROGRESS` end it, and so does an average under :data:`MIN_RATE` over
    ``rate_window_s``."""
    import httpx2

    partial.parent.mkdir(parents=True, exist_ok=True)
    have = partial.stat().st_size if partial.exists() else 0
    if size is not None and have > size:
        partial.unlink()  # longer than the file: known wrong, never continued
        have = 0
    out.send("meta", size=size, sha256=sha, have=have)
    free = shutil.disk_usage(partial.parent).free
    need = max(size - have, 0) + DISK_MARGIN if size is not None else 0
    if free < need:
        raise FetchError("no_space", folder=str(partial.parent), need=need, free=free)
    ceiling = size if size is not None else have + max(free - DISK_MARGIN, 0)

    transfer = _Transfer(request, location, partial, size, ceiling, out)
    tries = 0
    # Unbuffered: every chunk reaches the file at once, so a kill loses nothing written and a
    # full disk is reported by the write that hits it.
    with partial.open("ab", buffering=0) as handle:
        done = handle.tell()
        while done < ceiling:
            before = done
            try:
                done, ended = transfer.connect(handle, done)
            except httpx2.TransportError:
                done, ended = handle.tell(), False
            if ended or done >= ceiling:
                break
            tries = 0 if done - before >= REAL_PROGRESS else tries + 1
            if tries >= MAX_TRIES:
                raise FetchError("cut", tries=tries, done=done)
            time.sleep(min(0.5 * tries, 2.0))
    out.progress("download", done, size, force=True)
    if size is None and done >= ceiling:
        raise FetchError("disk_full", folder=str(partial.parent), done=done)
    if size is not None and done != size:
        partial.unlink(missing_ok=True)
        raise FetchError("short", got=done, size=size)
    _verify(partial, sha, out)


class _Pace:
    """The download's average rate over the last ``window_s``: under :data:`MIN_RATE` the
    mirror is too slow (a drip that never stalls long enough to be called stalled)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.since = time.monotonic()
        self.got = 0

    def add(self, count: int, done: int) -> None:
        self.got += count
        elapsed = time.monotonic() - self.since
        if elapsed < self.window_s:
            return
        if self.got < MIN_RATE * elapsed:
            raise FetchError("too_slow", rate=MIN_RATE, seconds=round(self.window_s), done=done)
        self.since, self.got = time.monotonic(), 0


class _Transfer:
    """The GETs of one download: each continues the file from where it stands, writes at
    most up to ``ceiling`` and reports progress (against ``size``, None: unknown)."""

    def __init__(
        self,
        request: FetchRequest,
        location: str,
        partial: Path,
        size: int | None,
        ceiling: int,
        out: Reporter,
    ) -> None:
        import httpx2
        from huggingface_hub import get_session

        from tkchat import __version__

        self.request, self.location, self.partial = request, location, partial
        self.size, self.ceiling, self.out = size, ceiling, out
        self.session = get_session()
        # No token (see the module docstring); byte ranges must count the file's own bytes.
        self.headers = {"User-Agent": f"tkchat/{__version__}", "Accept-Encoding": "identity"}
        self.timeout = httpx2.Timeout(30.0, read=request.read_timeout_s)
        self.pace = _Pace(request.rate_window_s)

    def connect(self, handle: IO[bytes], done: int) -> tuple[int, bool]:
        """One GET from ``done`` on; returns the bytes now in the file and whether the
        server has no more to give (416, a whole body of unknown size, or the ceiling)."""
        from huggingface_hub import hf_raise_for_status

        headers = {**self.headers, **({"Range": f"bytes={done}-"} if done else {})}
        with self.session.stream(
            "GET", self.location, headers=headers, timeout=self.timeout, follow_redirects=True
        ) as response:
            if response.status_code == 416:
                return done, True  # nothing past ``done``: the size check decides
            try:
                hf_raise_for_status(response)
            except Exception as exc:
                _raise_for(exc, self.request)
            if "text/html" in response.headers.get("Content-Type", ""):
                raise FetchError("not_a_hub", endpoint=self.request.endpoint)
            if done and response.status_code == 200:
                handle.seek(0)  # the server ignored the range: start over
                handle.truncate()
                done = 0
            for chunk in response.iter_bytes():  # as they arrive
                chunk = chunk[: self.ceiling - done]  # never past the stated size
                _write(handle, chunk, self.partial, done)
                done += len(chunk)
                self.out.progress("download", done, self.size)
                self.pace.add(len(chunk), done)
                if done >= self.ceiling:
                    return done, True  # what a mirror sends past it is never read
        return done, self.size is None  # a body that ended: whole, if no size was stated


DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)


def _write(handle: IO[bytes], chunk: bytes, partial: Path, done: int) -> None:
    try:
        handle.write(chunk)
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise FetchError("disk_full", folder=str(partial.parent), done=done) from None
        raise


def _kept(request: FetchRequest) -> int:
    """The bytes of unfinished downloads kept for ``request``'s model (to say, not to use)."""
    folder = request.cache / ("models--" + request.repo.replace("/", "--")) / "blobs"
    return sum(p.stat().st_size for p in folder.glob("*.incomplete") if p.is_file())


def _verify(partial: Path, sha: str, out: Reporter) -> None:
    """Hash the whole file; a file that is not the hub's is deleted, never offered."""
    total = partial.stat().st_size
    digest = hashlib.sha256()
    done = 0
    with partial.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            done += len(block)
            out.progress("verify", done, total)
    out.progress("verify", done, total, force=True)
    if digest.hexdigest() != sha:
        partial.unlink(missing_ok=True)
        raise FetchError("damaged")


def _link(blob: Path, pointer: Path) -> None:
    """``snapshots/<commit>/<file>`` -> ``../../blobs/<sha256>``, as huggingface_hub links
    them (relative, so the cache can move). Where links are not allowed (Windows without
    developer mode) the file itself moves there, as the library does then."""
    if pointer.is_file():
        return
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if pointer.is_symlink():
        pointer.unlink()  # dangling: its blob is gone
    try:
        os.symlink(os.path.relpath(blob, pointer.parent), pointer)
    except OSError:
        os.replace(blob, pointer)


def _write_ref(folder: Path, revision: str, commit: str) -> None:
    """``refs/<revision>`` holds the commit a branch name pointed to (atomically replaced)."""
    if revision == commit:
        return
    ref = folder / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    temporary = ref.with_name(f".{ref.name}.{os.getpid()}.tmp")
    temporary.write_text(commit, encoding="ascii")
    os.replace(temporary, ref)


def _raise_for(exc: Exception, request: FetchRequest) -> NoReturn:
    """The hub's (or the network's) failure as one :class:`FetchError`."""
    import httpx2
    from huggingface_hub import errors

    endpoint = request.endpoint
    if isinstance(exc, FetchError):
        raise exc
    if isinstance(exc, errors.OfflineModeIsEnabled):
        raise FetchError("offline") from None
    if isinstance(exc, errors.GatedRepoError):
        raise FetchError("gated", repo=request.repo) from None
    if isinstance(
        exc,
        (
            errors.RepositoryNotFoundError,
            errors.RevisionNotFoundError,
            errors.RemoteEntryNotFoundError,
        ),
    ):
        raise FetchError(
            "not_found", endpoint=endpoint, repo=request.repo, file=request.file
        ) from None
    if isinstance(exc, errors.HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
        if status == 404:
            raise FetchError(
                "not_found", endpoint=endpoint, repo=request.repo, file=request.file
            ) from None
        if status in (401, 403):
            raise FetchError("gated", repo=request.repo) from None
        raise FetchError("server_error", endpoint=endpoint, status=status) from None
    if isinstance(exc, httpx2.TooManyRedirects):
        raise FetchError("not_a_hub", endpoint=endpoint) from None
    if isinstance(exc, (httpx2.TransportError, OSError)):
        raise FetchError("no_network", endpoint=endpoint) from None
    raise exc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tkchat.models.download_child")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--revision", default="main")
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--cache", required=True, type=Path)
    parser.add_argument("--sha256")
    parser.add_argument("--size", type=int)
    parser.add_argument("--read-timeout", type=float, default=60.0)
    parser.add_argument("--rate-window", type=float, default=RATE_WINDOW_S)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Reporter(sys.stdout)
    request = FetchRequest(
        repo=args.repo,
        file=args.file,
        revision=args.revision,
        endpoint=args.endpoint,
        cache=args.cache,
        sha256=args.sha256,
        size=args.size,
        read_timeout_s=args.read_timeout,
        rate_window_s=args.rate_window,
    )
    try:
        path, already = fetch(request, out)
    except FetchError as exc:
        out.send("error", kind=exc.kind, **exc.fields)
        return EXIT_FAILED
    except Exception as exc:  # one sentence in the window, not a traceback in a pipe
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            # a full disk met before the first byte (a lock file, a ref): the same sentence
            out.send("error", kind="disk_full", folder=str(request.cache), done=_kept(request))
        else:
            out.send("error", kind="failed", detail=f"{type(exc).__name__}: {exc}"[:300])
        return EXIT_FAILED
    out.send("done", path=str(path), already=already)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
