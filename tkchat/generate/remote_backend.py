"""The remote backend's names where callers first found them.

The code lives in :mod:`tkchat.generate.remote`; this module keeps
``from tkchat.generate.remote_backend import RemoteBackend`` (the benchmark, the tests)
working.
"""

from tkchat.generate.remote import (
    DEFAULT_N_CTX,
    POLL_S,
    RemoteBackend,
    RemoteError,
    split_server_url,
)

__all__ = ["DEFAULT_N_CTX", "POLL_S", "RemoteBackend", "RemoteError", "split_server_url"]
