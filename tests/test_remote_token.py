"""The desktop app against ``tkchat serve --allow-remote``, which wants a bearer token.

A real server process, started the way a user starts it (``--host 0.0.0.0 --allow-remote``,
the token read from the URL it prints), reached on the loopback: without a token the load
fails with one sentence that says what to do; with it (the environment variable, the
backend's argument or ``--server-token``) every request is let in: ``/health`` at load, and
the chat itself.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Iterator

import pytest

from tests.test_remote_backend import generate, text_of
from tkchat.cli import build_parser
from tkchat.cli.from_args import backend_options, child_model_args
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.backend import BackendError
from tkchat.generate.factory import make_backend
from tkchat.generate.remote import RemoteBackend, RemoteError
from tkchat.generate.remote.http import TOKEN_ENV_VAR
from tkchat.generate.scripted import SCRIPT
from tkchat.serve import listen

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.test_serve_hardening import cli_server  # noqa: E402


@pytest.fixture(scope="module")
def remote_server() -> Iterator[tuple[str, str]]:
    """(the server's loopback URL, its token). It listens on every address; the token, not
    the address, is what lets a request in."""
    with cli_server("--host", "0.0.0.0", "--allow-remote") as (url, token, _warning):
        assert token
        port = int(url.rsplit(":", 1)[1].strip("/"))
        yield f"http://127.0.0.1:{port}", token


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV_VAR, raising=False)


def test_without_a_token_the_load_says_to_set_the_variable(
    remote_server: tuple[str, str],
) -> None:
    url, _ = remote_server
    with pytest.raises(RemoteError) as caught:
        RemoteBackend(url).load()
    assert caught.value.kind == "unauthorized"
    assert str(caught.value) == (
        f"The server at {url} wants a token for /health: "
        f"set {TOKEN_ENV_VAR} to the token it printed on its terminal"
    )


def test_a_wrong_token_is_refused_in_one_sentence_that_does_not_quote_it(
    remote_server: tuple[str, str],
) -> None:
    url, _ = remote_server
    with pytest.raises(BackendError, match=r"wants a token for /health: it refused the token"):
        RemoteBackend(url, token="not-the-token").load()
    with pytest.raises(BackendError) as caught:
        RemoteBackend(url, token="not-the-token").load()
    assert "not-the-token" not in str(caught.value)


def test_the_environment_variable_lets_the_load_and_the_chat_in(
    remote_server: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, token = remote_server
    monkeypatch.setenv(TOKEN_ENV_VAR, token)
    backend = RemoteBackend(url)
    backend.load()
    assert backend.protocol == "tkchat"  # /health answered: the server named itself
    events = generate(backend, sampling=Sampling(max_tokens=5))
    assert isinstance(events[-1], Done) and events[-1].reason == "length"
    assert text_of(events) and SCRIPT.startswith(text_of(events))


def test_server_token_on_the_command_line_reaches_the_backend(
    remote_server: tuple[str, str],
) -> None:
    url, token = remote_server
    args = build_parser().parse_args(["--server", url, "--server-token", token])
    backend = make_backend(backend_options(args, remote=True))
    backend.load()
    assert isinstance(backend, RemoteBackend) and backend.protocol == "tkchat"
    # a compare window opened from this one gets the same server and token
    assert child_model_args(args)[-4:] == ["--server", url, "--server-token", token]


@pytest.mark.gui
def test_the_window_shows_the_sentence_not_a_traceback(
    remote_server: tuple[str, str], root: tk.Tk, make_app
) -> None:
    url, _ = remote_server
    app = make_app(RemoteBackend(url))
    assert not app.flow.model_ready
    assert app.status.get() == app.t("app.server_failed")
    banner = app.model_banner.text
    assert f"wants a token for /health: set {TOKEN_ENV_VAR}" in banner
    assert "Traceback" not in banner and "neither tkchat nor OpenAI" not in banner
    assert not app.flow.send("hello?")


def test_a_new_token_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token that began with "-" was read by argparse as an option when pasted after
    --server-token (seen in a hog run: "expected one argument"): the server draws again."""
    drawn = iter(["-r4TB0oXf4CYe1gc", "--x", "Ab-cd"])
    monkeypatch.setattr(listen.secrets, "token_urlsafe", lambda _n: next(drawn))
    token = listen.new_token()
    assert token == "Ab-cd"
    assert build_parser().parse_args(["--server-token", token]).server_token == token
