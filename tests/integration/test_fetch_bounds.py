"""A fetched body is bounded before it costs (issue 30 part 3): its content codings are
undone a step at a time and counted against the 5 MiB cap as they stream, so a few
kilobytes gzipped twice cannot take the process's memory; a charset or coding that is
not text is refused with its reason. Through the fetch itself (peak memory measured in
a process of its own), the HTTP API and the MCP tool; real local servers, real Postgres.
Loopback stands in for the Internet: 127.0.0.2 counts as public (as in test_url_fetch)."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import zlib
from collections.abc import Iterator
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from mcp.shared.memory import create_connected_server_and_client_session
from sqlalchemy import Engine, text

from council.adapters import sources, url_fetch
from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.validate import MAX_EVIDENCE_BYTES
from council.errors import BadInput
from council.mcp.server import build_server
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger
from tests.fakes.web_server import Site, serving

PUBLIC_STAND_IN = "127.0.0.2"
TOKEN = "fetch-bounds-token-0123456789"
INFLATED = 512 * 1024 * 1024  # what the bomb decodes to: 100 times the cap
PEAK_RSS_LIMIT_KB = 100 * 1024


def _bomb() -> bytes:
    """512 MiB of zeros gzipped, then gzipped again: a few kilobytes on the wire."""
    inner = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    layer = b"".join(inner.compress(block) for _ in range(INFLATED // len(block))) + inner.flush()
    return gzip.compress(layer, 9)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    bomb = _bomb()
    assert len(bomb) < 8 * 1024
    answers = {
        "/bomb": ({"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"}, bomb),
        "/gzipped": (
            {"Content-Type": "text/plain", "Content-Encoding": "gzip"},
            gzip.compress(b"plain text"),
        ),
        "/deflated": (  # "deflate" as often sent: raw, without zlib's header
            {"Content-Type": "text/plain", "Content-Encoding": "deflate"},
            zlib.compress(b"raw deflate", wbits=-zlib.MAX_WBITS),
        ),
        "/utf-7": ({"Content-Type": "text/plain; charset=utf-7"}, b"a lone +2AA- surrogate"),
        "/rot13": ({"Content-Type": "text/plain; charset=rot13"}, b"nopqrs"),
        "/brotli": ({"Content-Type": "text/plain", "Content-Encoding": "br"}, b"\x0b\x02\x80abc\x03"),
        "/latin-1": ({"Content-Type": "text/plain; charset=ISO-8859-1"}, "café".encode("latin-1")),
    }
    with serving(Site(answers=answers), host=PUBLIC_STAND_IN) as base:
        yield base


@pytest.fixture
def stand_in_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    real = url_fetch._public
    monkeypatch.setattr(url_fetch, "_public", lambda address: address == PUBLIC_STAND_IN or real(address))


def test_a_double_gzipped_bomb_is_cut_at_the_cap_with_little_memory(site: str) -> None:
    # Given a 4 KB body that decodes to 512 MiB, fetched in a process of its own
    # (its peak resident set read from /proc: this process's own peak is not inherited)
    script = (
        "import re, sys\n"
        "from council.adapters import url_fetch\n"
        "try:\n"
        "    url_fetch.fetch(sys.argv[1], timeout_s=60, allow_private=True, max_bytes=int(sys.argv[2]))\n"
        "    print('fetched')\n"
        "except url_fetch.TooLarge as exc:\n"
        "    print(exc)\n"
        # VmHWM, not ru_maxrss: that one keeps the parent's peak across fork and exec
        "print(re.search(r'VmHWM:\\s*(\\d+) kB', open('/proc/self/status').read()).group(1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"{site}/bomb", str(MAX_EVIDENCE_BYTES)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome, peak_kb = done.stdout.splitlines()
    # Then the fetch stops at the cap, and the process never held much more than it
    assert int(peak_kb) < PEAK_RSS_LIMIT_KB, f"peak RSS {int(peak_kb) // 1024} MiB"
    assert outcome == f"the body exceeds {MAX_EVIDENCE_BYTES} bytes once decoded"


def test_gzip_and_raw_deflate_bodies_still_decode(site: str) -> None:
    assert url_fetch.fetch(f"{site}/gzipped", timeout_s=10, allow_private=True, max_bytes=100).body == (
        b"plain text"
    )
    assert url_fetch.fetch(f"{site}/deflated", timeout_s=10, allow_private=True, max_bytes=100).body == (
        b"raw deflate"
    )
    assert sources.from_url(f"{site}/latin-1", allow_private=True).content == "café"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/utf-7", "charset 'utf-7' is not supported"),
        ("/rot13", "charset 'rot13' is not supported"),
        ("/brotli", "content coding 'br' is not supported"),
    ],
)
def test_a_body_that_is_not_readable_text_is_bad_input_with_its_reason(
    site: str, path: str, reason: str
) -> None:
    with pytest.raises(BadInput, match=reason) as refused:
        sources.from_url(f"{site}{path}", allow_private=True)
    assert refused.value.exit_code == 2 and "\n" not in str(refused.value)


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1", headers=auth, raise_server_exceptions=False) as test:
        yield test


def _evidence_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM evidence")).scalar_one())


@pytest.mark.usefixtures("stand_in_is_public")
def test_over_the_api_a_fetch_failure_is_502_and_a_body_not_text_is_422(
    client: TestClient, engine: Engine, site: str
) -> None:
    thread = Ledger.new(engine).thread_id
    before = _evidence_rows(engine)
    bomb = client.post(f"/threads/{thread}/evidence", json={"url": f"{site}/bomb"})
    assert bomb.status_code == 502, bomb.text
    assert "exceeds" in bomb.json()["detail"]
    for path in ("/utf-7", "/brotli"):
        refused = client.post(f"/threads/{thread}/evidence", json={"url": f"{site}{path}"})
        assert refused.status_code == 422, refused.text
        assert "not supported" in refused.json()["detail"][0]["msg"]
    assert _evidence_rows(engine) == before


@pytest.mark.usefixtures("stand_in_is_public")
def test_the_mcp_tool_answers_a_bomb_and_a_utf_7_page_with_their_reasons(
    db_url: str, engine: Engine, site: str
) -> None:
    thread: UUID = Ledger.new(engine).thread_id
    before = _evidence_rows(engine)
    server = build_server(bootstrap(db_url, scheduler=lambda uow: Recorder()))

    async def add(*paths: str) -> list[dict[str, object]]:
        answers = []
        async with create_connected_server_and_client_session(server) as session:
            for path in paths:
                result = await session.call_tool(
                    "add_evidence", {"thread": str(thread), "url": f"{site}{path}"}
                )
                assert result.isError
                answers.append(dict(json.loads(result.content[0].text)))  # type: ignore[union-attr]
        return answers

    bomb, utf7 = asyncio.run(add("/bomb", "/utf-7"))
    assert bomb["code"] == 1 and "exceeds" in str(bomb["error"])
    assert utf7["code"] == 2 and "charset 'utf-7' is not supported" in str(utf7["error"])
    assert _evidence_rows(engine) == before
