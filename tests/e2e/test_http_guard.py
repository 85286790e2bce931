"""A real `council serve` (uvicorn) refuses what the API must not take (docs/architecture.md §11):
foreign Host headers, bodies from callers without the write token, and bodies larger
than COUNCIL_API_MAX_BODY_BYTES, all before the body is read.

Bodies go over a raw socket so the test sees what the server did: how many bytes the
client managed to send before the server answered and closed the connection. A
server that read a 150 MB body would take all 150 MB; here it stops at its limit
plus what the two sockets' buffers hold.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.evidence import show_evidence
from council.web.security import DEFAULT_MAX_BODY_BYTES
from tests.builders import Ledger
from tests.e2e.conftest import serving

TOKEN = "guard-write-token"
READ_TOKEN = "guard-read-token"
HUGE = 150 * 1024 * 1024
# What two loopback sockets can buffer between the client's send and the server's
# read (Linux autotunes each receive buffer up to tcp_rmem's maximum, 6 MiB by default).
BUFFERED = 16 * 1024 * 1024


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_HOME=str(tmp_path),
        COUNCIL_OFFLINE="1",
        COUNCIL_API_TOKEN=TOKEN,
        COUNCIL_API_READ_TOKEN=READ_TOKEN,
    )
    with serving(env, tmp_path / "serve.log") as started:
        assert started["reads_need_token"] is True and started["writes_enabled"] is True
        yield started


def _push(port: int, head: str, chunk: bytes, total: int) -> tuple[int, int, dict[str, Any]]:
    """Send ``head`` then ``chunk`` repeatedly (up to ``total`` bytes) while watching for
    an answer. Returns (body bytes sent by the time the server answered or hung up, the
    answer's status, its headers and JSON body as ``{"headers": ..., "body": ...}``)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
    sock.sendall(head.encode())
    sock.setblocking(False)
    sent, answer = 0, b""
    deadline = time.monotonic() + 120
    try:
        while sent < total and not answer and time.monotonic() < deadline:
            readable, writable, _ = select.select([sock], [sock], [], 1.0)
            if readable:
                answer = sock.recv(65536) or b"(closed)"
            elif writable:
                sent += sock.send(chunk)
        sock.setblocking(True)
        sock.settimeout(10)
        while data := sock.recv(65536):  # the answer ends with the connection
            answer += data
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed on us: what it answered first is in `answer`
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 "), f"no answer after {sent} bytes: {answer[:200]!r}"
    head_part, _, body = answer.partition(b"\r\n\r\n")
    status = int(head_part.split(b" ", 2)[1])
    headers = dict(
        line.decode().lower().split(": ", 1) for line in head_part.split(b"\r\n")[1:] if b": " in line
    )
    return sent, status, {"headers": headers, "body": json.loads(body)}


def _head(port: int, path: str, *, token: str | None, length: int | None) -> str:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    return "\r\n".join(lines) + "\r\n\r\n"


def _chunk(size: int) -> bytes:
    return f"{size:x}\r\n".encode() + b" " * size + b"\r\n"


def test_a_declared_oversize_body_is_refused_before_it_is_read(
    server: dict[str, Any], engine: Engine, uow: UnitOfWork
) -> None:
    port = server["port"]
    evidence = Ledger.new(engine).evidence[0]
    path = f"/evidence/{evidence}/challenge"
    for token, status in ((None, 401), (READ_TOKEN, 403), (TOKEN, 413)):
        # When a 150 MB body is announced (by no token, the read token, the write token)
        sent, got, answer = _push(port, _head(port, path, token=token, length=HUGE), b" " * 65536, HUGE)
        # Then the server answers at once and hangs up: what was sent is what the buffers held
        assert got == status, answer
        assert answer["headers"]["connection"] == "close"
        assert sent < BUFFERED, f"{sent} bytes were taken before the {status}"
    assert "exceeds" in answer["body"]["detail"]
    assert show_evidence(uow, evidence).validity == "valid"


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(
    server: dict[str, Any], engine: Engine, uow: UnitOfWork
) -> None:
    port = server["port"]
    evidence = Ledger.new(engine).evidence[0]
    # When the write-token holder streams a chunked body of no stated length
    sent, status, answer = _push(
        port, _head(port, f"/evidence/{evidence}/challenge", token=TOKEN, length=None), _chunk(65536), HUGE
    )
    # Then it is refused once the limit is passed, not after the whole body
    assert status == 413, answer
    assert answer["body"]["detail"].startswith(f"the request body exceeds {DEFAULT_MAX_BODY_BYTES} bytes")
    assert answer["headers"]["connection"] == "close"
    assert DEFAULT_MAX_BODY_BYTES < sent < DEFAULT_MAX_BODY_BYTES + BUFFERED
    # And an unauthenticated chunked body is refused before its first chunk is read
    sent, status, _ = _push(
        port, _head(port, f"/evidence/{evidence}/challenge", token=None, length=None), _chunk(65536), HUGE
    )
    assert status == 401 and sent < BUFFERED
    assert show_evidence(uow, evidence).validity == "valid"


def test_a_body_within_the_limit_is_read_and_answered(
    server: dict[str, Any], engine: Engine, uow: UnitOfWork, tmp_path: Path
) -> None:
    base = server["url"].rstrip("/")
    evidence = Ledger.new(engine).evidence[0]
    write = {"Authorization": f"Bearer {TOKEN}"}
    # A 1 MB reason is read whole, then refused by validation; a short one is written
    big = httpx.post(f"{base}/evidence/{evidence}/challenge", json={"reason": "x" * 1_000_000}, headers=write)
    assert big.status_code == 422, big.text
    ok = httpx.post(f"{base}/evidence/{evidence}/challenge", json={"reason": "doubted"}, headers=write)
    assert ok.status_code == 200, ok.text
    assert show_evidence(uow, evidence).validity == "challenged"
    # And the server's log (its access log included) names no token
    log = (tmp_path / "serve.log").read_text()
    assert "POST /evidence" in log and TOKEN not in log and READ_TOKEN not in log


def test_only_allowed_hosts_are_answered(server: dict[str, Any]) -> None:
    base = server["url"].rstrip("/")
    read = {"Authorization": f"Bearer {READ_TOKEN}"}
    # A rebinding page's name is refused, even with a token and even on /health
    for path in ("/threads", "/health", "/"):
        refused = httpx.get(f"{base}{path}", headers={**read, "Host": "attacker.example"})
        assert refused.status_code == 400, path
    # Loopback names, on any port, are answered
    for host in (f"127.0.0.1:{server['port']}", "localhost:1"):
        assert httpx.get(f"{base}/threads", headers={**read, "Host": host}).status_code == 200
    # And reads need a token: /health does not
    assert httpx.get(f"{base}/threads").status_code == 401
    assert httpx.get(f"{base}/health").json() == {"ok": True}


def test_allowed_hosts_extend_by_environment_and_a_star_disables_the_check(
    db_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_OFFLINE="1")
    for allowed, host, status in (
        ("council.internal, other.example", "council.internal:8787", 200),
        ("council.internal", "attacker.example", 400),
        ("*", "attacker.example", 200),
    ):
        with serving({**env, "COUNCIL_ALLOWED_HOSTS": allowed}, tmp_path / "serve.log") as started:
            got = httpx.get(f"{started['url']}threads", headers={"Host": host})
        assert got.status_code == status, (allowed, host)


def test_a_token_in_a_query_string_is_refused_and_never_logged(
    server: dict[str, Any], tmp_path: Path
) -> None:
    base = server["url"].rstrip("/")
    read = {"Authorization": f"Bearer {READ_TOKEN}"}
    # A token-named parameter, or a configured token's value under any name, is refused
    for query in (f"token={READ_TOKEN}", "access_token=whatever", f"q={TOKEN}", "API_KEY=x"):
        refused = httpx.get(f"{base}/threads?{query}", headers=read)
        assert refused.status_code == 400, query
        assert "Authorization header" in refused.json()["detail"]
    # An ordinary query is answered
    assert httpx.get(f"{base}/threads?limit=5", headers=read).status_code == 200
    # And the access log holds no query string at all: the tokens never reached it
    log = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert '"GET /threads HTTP/1.1" 400' in log
    assert TOKEN not in log and READ_TOKEN not in log and "limit=5" not in log


def test_every_answer_carries_the_page_security_headers(server: dict[str, Any]) -> None:
    base = server["url"].rstrip("/")
    for path, headers in (
        ("/", {}),
        ("/health", {}),
        ("/threads", {}),
        ("/nowhere", {"Host": "evil.example"}),
    ):
        got = httpx.get(f"{base}{path}", headers=headers)
        policy = got.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy
        assert got.headers["x-frame-options"] == "DENY" and got.headers["x-content-type-options"] == "nosniff"


def test_serve_off_loopback_refuses_to_start_without_a_token(db_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_OFFLINE="1")
    argv = [sys.executable, "-m", "council.cli", "serve", "--host", "0.0.0.0", "--port", "0", "--json"]
    # Given no token, or an empty one (which counts as none)
    for extra in ({}, {"COUNCIL_API_TOKEN": "", "COUNCIL_API_READ_TOKEN": " "}):
        done = subprocess.run(argv, env={**env, **extra}, capture_output=True, text=True, timeout=60)
        # Then it does not start: exit 2, one JSON document, a one-line reason
        assert done.returncode == 2, done.stderr
        assert "--insecure-open" in json.loads(done.stdout)["error"]
        assert len(done.stderr.strip().splitlines()) == 1
    # A token too short to be one is refused too
    done = subprocess.run(
        argv, env={**env, "COUNCIL_API_READ_TOKEN": "short"}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "at least 16" in json.loads(done.stdout)["error"]
    # And --insecure-open says, in so many words, that reads are open: it starts, and warns
    with serving(env, tmp_path / "open.log", "--host", "0.0.0.0", "--insecure-open") as started:
        assert started["reads_need_token"] is False
        assert httpx.get(f"http://127.0.0.1:{started['port']}/health").status_code == 200
    assert "--insecure-open" in (tmp_path / "open.log").read_text(encoding="utf-8")
