"""``--server URL`` on the command line: a value that is no http(s) address is refused by the
parser, in one sentence and exit status 2, before any window or server starts; a good one is
written the one way the app quotes a server. Nothing is contacted."""

from __future__ import annotations

import pytest

from tkchat.cli import build_parser
from tkchat.cli.from_args import child_model_args

# Every command that parses --server (grep '"--server"' tkchat/): the window, its compare
# windows, the relaying server, and the class bench's server.
COMMANDS = ([], ["compare"], ["serve"], ["bench", "--class", "3"])


@pytest.mark.parametrize(
    ("value", "sentence"),
    [
        (
            "notaurl",
            "'notaurl' is not a server address: give http://HOST[:PORT][/PATH], "
            "https://HOST[:PORT][/PATH] or HOST:PORT",
        ),
        ("ftp://example.org", "only http:// and https:// servers are supported"),
        ("http://:8080", "no host name in the server address 'http://:8080'"),
        ("localhost:eighty", "the port in 'localhost:eighty' is not a number from 0 to 65535"),
    ],
)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: argv[0] if argv else "window")
def test_a_server_that_is_no_url_is_one_sentence_from_the_parser(
    command: list[str], value: str, sentence: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*command, "--server", value])
    assert stopped.value.code == 2
    last_line = capsys.readouterr().err.splitlines()[-1]
    assert last_line.startswith("tkchat") and ": error: argument --server: " in last_line
    assert sentence in last_line


@pytest.mark.parametrize(
    ("value", "normalised"),
    [
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),  # HOST:PORT: http:// is meant
        (" http://127.0.0.1:8080/v1/ ", "http://127.0.0.1:8080"),
        ("http://localhost", "http://localhost:80"),  # a scheme says it is a URL: port 80
        ("https://example.org/llm/v1", "https://example.org:443/llm"),  # a proxy's prefix
        ("[::1]:9000", "http://[::1]:9000"),
    ],
)
def test_a_good_server_is_written_the_one_way_the_app_quotes_it(
    value: str, normalised: str
) -> None:
    args = build_parser().parse_args(["--server", value])
    assert args.server == normalised
    assert child_model_args(args)[2:4] == ["--server", normalised]  # compare's windows too
    for command in COMMANDS[1:]:
        assert build_parser().parse_args([*command, "--server", value]).server == normalised
