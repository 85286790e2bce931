"""Slow and idle connections are not held (issue 30 part 3, issue 44): a real `council serve`
and a real `council mcp --http` close a connection whose request head does not arrive
within COUNCIL_HTTP_HEADER_TIMEOUT_S, however its bytes drip in (slowloris), one that sends
nothing at all, one whose body — sent with the write token — does not arrive whole within
COUNCIL_HTTP_BODY_TIMEOUT_S, and an idle keep-alive connection after
COUNCIL_HTTP_IDLE_TIMEOUT_S. Raw sockets, so the test sees when the server hangs up."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import CliRunner
from tests.e2e.conftest import serving
from tests.e2e.test_mcp_server import TOKEN as MCP_TOKEN
from tests.e2e.test_mcp_server import _mcp_http_server

HEADER_TIMEOUT_S = 2.0
IDLE_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 3.0
MARGIN_S = 3.0  # a loaded machine's scheduling, on top of the stated timeout
DRIP_EVERY_S = 0.5
TOKEN = "timeouts-write-token-0123456789"
TIMEOUTS = {
    "COUNCIL_HTTP_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
    "COUNCIL_HTTP_IDLE_TIMEOUT_S": "1",
    "COUNCIL_HTTP_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
}


@pytest.fixture(params=["serve", "mcp-http"])
def server(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> Iterator[tuple[int, str, str]]:
    """(the port, a path that reads a body, the write token) of a running server."""
    if request.param == "serve":
        env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
        env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_OFFLINE="1", **TIMEOUTS)
        env.update(COUNCIL_API_TOKEN=TOKEN)
        with serving(env, tmp_path / "serve.log") as started:
            yield int(started["port"]), "/threads", TOKEN
    else:
        with _mcp_http_server(db_url, tmp_path, **TIMEOUTS) as url:
            yield int(urlsplit(url).port or 0), urlsplit(url).path, MCP_TOKEN


@pytest.fixture
def port(server: tuple[int, str, str]) -> int:
    return server[0]


def _open_for(port: int, behave: Callable[[socket.socket], None]) -> float:
    """Seconds from connecting until the server closed the connection (``behave`` sends
    what the client sends meanwhile, until the server hangs up on it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    started = time.monotonic()
    try:
        behave(sock)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return time.monotonic() - started


def _closed(sock: socket.socket, wait_s: float) -> bool:
    """Whether the server hung up within ``wait_s`` (whatever it answered first is read)."""
    sock.settimeout(wait_s)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


GIVE_UP_S = 20.0  # a server still holding the connection by then fails the test


def _slowloris(sock: socket.socket) -> None:
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
    for byte in head[: int(GIVE_UP_S / DRIP_EVERY_S)]:
        sock.sendall(bytes([byte]))
        if _closed(sock, DRIP_EVERY_S):
            return


def _silent(sock: socket.socket) -> None:
    _closed(sock, GIVE_UP_S)


def _idle_after_an_answer(sock: socket.socket) -> None:
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sock.settimeout(10)
    assert sock.recv(65536).startswith(b"HTTP/1.1 ")
    _closed(sock, GIVE_UP_S)


@pytest.mark.parametrize(
    ("behave", "limit_s"),
    [
        (_slowloris, HEADER_TIMEOUT_S),
        (_silent, HEADER_TIMEOUT_S),
        (_idle_after_an_answer, max(HEADER_TIMEOUT_S, IDLE_TIMEOUT_S)),
    ],
    ids=["header-byte-every-half-second", "nothing-sent", "idle-keep-alive"],
)
def test_a_connection_is_closed_within_its_stated_timeout(
    port: int, behave: Callable[[socket.socket], None], limit_s: float
) -> None:
    held = _open_for(port, behave)
    assert held < limit_s + MARGIN_S, f"held {held:.1f} s"


def test_a_body_sent_with_the_write_token_has_a_total_deadline(server: tuple[int, str, str]) -> None:
    # Given a request head with the write token, announcing a body that then drips in
    port, path, token = server

    def slow_body(sock: socket.socket) -> None:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n"
            "Content-Length: 100000\r\n\r\n{".encode()
        )
        for _ in range(int(GIVE_UP_S / DRIP_EVERY_S)):
            sock.sendall(b" ")
            if _closed(sock, DRIP_EVERY_S):
                return

    # Then the server hangs up once the body's deadline passes, though bytes keep coming
    held = _open_for(port, slow_body)
    assert BODY_TIMEOUT_S - 0.5 < held < BODY_TIMEOUT_S + MARGIN_S, f"held {held:.1f} s"


def test_a_bad_timeout_is_refused_at_start(cli: CliRunner) -> None:
    result = cli("serve", "--port", "0", "--json", env={"COUNCIL_HTTP_HEADER_TIMEOUT_S": "0"})
    assert result.code == 2 and "COUNCIL_HTTP_HEADER_TIMEOUT_S" in result.stderr
