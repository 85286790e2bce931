"""Which port `council up` gives the web server (council/stack/processes.py), with real
sockets: COUNCIL_WEB_PORT must be free, else 8787 when free, else any free port."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from council.errors import StackError
from council.stack.processes import DEFAULT_WEB_PORT, WEB_HOST, choose_web_port, is_free


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.delenv("COUNCIL_WEB_PORT", raising=False)
    return tmp_path


@pytest.fixture
def listening() -> Iterator[socket.socket]:
    """Another server: a socket listening on a port of its own."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((WEB_HOST, 0))
        sock.listen(1)
        yield sock


def test_an_explicit_port_another_server_holds_is_refused(
    home: Path, listening: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = listening.getsockname()[1]
    monkeypatch.setenv("COUNCIL_WEB_PORT", str(taken))
    with pytest.raises(StackError, match=f"127.0.0.1:{taken} \\(COUNCIL_WEB_PORT\\) is taken"):
        choose_web_port(home)


def test_an_explicit_free_port_is_used(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind((WEB_HOST, 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("COUNCIL_WEB_PORT", str(port))
    assert choose_web_port(home) == port


def test_by_default_8787_when_free_else_another_free_port(home: Path) -> None:
    # Given 8787 held by another server (this test's, unless one already holds it)
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if is_free(WEB_HOST, DEFAULT_WEB_PORT):
            blocker.bind((WEB_HOST, DEFAULT_WEB_PORT))
            blocker.listen(1)
        # When the stack picks its port
        chosen = choose_web_port(home)
        # Then it is another one, free to bind
        assert chosen != DEFAULT_WEB_PORT and is_free(WEB_HOST, chosen)
    finally:
        blocker.close()
    # And once 8787 is free again, it is the one chosen
    if is_free(WEB_HOST, DEFAULT_WEB_PORT):
        assert choose_web_port(home) == DEFAULT_WEB_PORT
