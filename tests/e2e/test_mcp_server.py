"""`council mcp` driven by the official MCP client, over stdio and streamable HTTP.

Given a thread with a node and three evidence items, two outside agents each
begin a run, read the blind packet (recording nothing) and endorse the node
citing different evidence; a third reads the node's status with their claims
(recorded as its exposures, `mcp:node_status`) and endorses too. Before the
third: two independent support groups, and the committer consolidates the
node. After it: one group, joined through the third run's exposures, and
still exactly one consolidation. Bad input gets the contract's error and
writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import Engine, text

from tests.builders import MODELS, Ledger
from tests.conftest import CliRunner
from tests.processes import stop_groups

TOKEN = "mcp-test-token-0123456789"
TABLES = (
    "agent_runs",
    "run_attempts",
    "run_exposures",
    "claims",
    "citations",
    "evidence",
    "thread_evidence",
    "logical_nodes",
    "node_versions",
    "consolidations",
    "events",
)
Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _server_env(db_url: str) -> dict[str, str]:
    """What an MCP client gives the server: the database URL (and, here, this tree on the path)."""
    env = {"COUNCIL_DATABASE_URL": db_url}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _stdio(db_url: str, tmp_path: Path) -> Connect:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "council.cli", "mcp"], env=_server_env(db_url), cwd=tmp_path
    )

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, read_timeout_seconds=timedelta(seconds=60)) as session,
        ):
            await session.initialize()
            yield session

    return connect


def _http(url: str, token: str = TOKEN) -> Connect:
    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(60)) as client,
            streamable_http_client(url, http_client=client) as (read, write, _),
            ClientSession(read, write, read_timeout_seconds=timedelta(seconds=60)) as session,
        ):
            await session.initialize()
            yield session

    return connect


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.isError, f"{tool}: {result.content}"
    document = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return dict(document)


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The contract's error: an error result holding {"error": reason, "code": 2}."""
    result = await session.call_tool(tool, arguments)
    document = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.isError, f"{tool} should have been refused: {document}"
    assert document["code"] == 2 and set(document) == {"error", "code"}, document
    return str(document["error"])


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in TABLES}


def endorsement(version_id: UUID, evidence_id: UUID, why: str) -> dict[str, Any]:
    return {
        "summary": why,
        "claims": [
            {
                "node_version_id": str(version_id),
                "type": "endorse",
                "confidence": 0.8,
                "rationale": why,
                "cites": [{"evidence_id": str(evidence_id), "role": "supports"}],
            }
        ],
    }


async def council_session(
    connect: Connect, owner_engine: Engine, ledger: Ledger, version_id: UUID, cli: CliRunner
) -> None:
    thread = str(ledger.thread_id)
    providers = ("anthropic", "openai", "zhipu")
    async with connect() as first, connect() as second, connect() as third:
        listed = await call(first, "list_threads")
        assert [t["id"] for t in listed["items"]] == [thread]
        tools = {t.name for t in (await first.list_tools()).tools}
        assert tools == {
            "list_threads",
            "reentry_packet",
            "begin_run",
            "submit_output",
            "add_evidence",
            "node_status",
            "lint",
            "ask",
        }

        runs = []
        for session, provider in zip((first, second, third), providers, strict=True):
            begun = await call(
                session, "begin_run", thread=thread, agent=f"outside-{provider}", model=MODELS[provider]
            )
            assert begun["status"] == "running" and begun["provider"] == provider
            runs.append(begun["id"])

        # Two agents judge blind, each citing different evidence.
        outcomes = []
        for i, session in enumerate((first, second)):
            packet = await call(session, "reentry_packet", thread=thread, run=runs[i])
            assert packet["packet"]["blind"] is True and packet["exposures_recorded"] == 0
            assert str(version_id) in {h["version_id"] for h in packet["packet"]["heads"]}
            submitted = await call(
                session,
                "submit_output",
                run=runs[i],
                output=endorsement(version_id, ledger.evidence[i], f"evidence item {i} supports it"),
            )
            assert submitted["status"] == "succeeded" and len(submitted["applied"]["claims"]) == 1
            outcomes += [e["outcome"] for e in submitted["evaluations"]]
        assert outcomes == ["not_ready", "committed"]

        with owner_engine.connect() as conn:
            served = conn.execute(
                text("SELECT count(*) FROM run_exposures WHERE run_id = ANY(CAST(:r AS uuid[]))"),
                {"r": runs[:2]},
            ).scalar_one()
        assert served == 0, "blind reads record nothing"
        before = cli("groups", "--node", str(version_id), "--json").json()
        assert [g["kind"] for g in before["groups"]] == ["support", "support"]
        assert sorted(r for g in before["groups"] for r in g["runs"]) == sorted(runs[:2])

        # Bad input: the contract's error, and not a row written.
        rows = counts(owner_engine)
        assert "no run" in await refused(third, "submit_output", run="0" * 32, output={})
        assert "not one this session began" in await refused(
            first, "submit_output", run=runs[2], output=endorsement(version_id, ledger.evidence[2], "x")
        )
        assert "has ended" in await refused(
            first, "submit_output", run=runs[0], output=endorsement(version_id, ledger.evidence[2], "x")
        )
        assert "contract" in await refused(
            third, "submit_output", run=runs[2], output={"claims": [{"type": "endorse"}]}
        )
        assert "no node version" in await refused(
            third, "submit_output", run=runs[2], output=endorsement(UUID(int=7), ledger.evidence[2], "x")
        )
        assert "no thread" in await refused(third, "reentry_packet", thread="abcdef0123", run=runs[2])
        assert "not one this session began" in await refused(
            second, "node_status", version=str(version_id), run=runs[2]
        )
        assert "too large" in await refused(third, "add_evidence", thread=thread, text="x" * (5 * 2**20 + 1))
        assert "name the run" in await refused(third, "reentry_packet", thread=thread, blind=False)
        assert "too long" in await refused(third, "lint", text="x" * 200_001, thread=thread)
        assert "model" in await refused(third, "begin_run", thread=thread, agent="no-model")
        assert "agent" in await refused(third, "begin_run", thread=thread, agent=" ", model="gpt-5")
        assert "budget" in await refused(third, "reentry_packet", thread=thread, budget=10)
        assert "Unknown tool" in await refused(third, "consolidate", version=str(version_id))
        assert counts(owner_engine) == rows

        # The third reads the others' stances for its run, then endorses.
        status = await call(third, "node_status", version=str(version_id), run=runs[2])
        assert status["support_groups"] == 2 and status["consolidated"] is True
        assert sorted(c["run_id"] for c in status["claims"]) == sorted(runs[:2])
        assert status["exposures_recorded"] == 2
        submitted = await call(
            third,
            "submit_output",
            run=runs[2],
            output=endorsement(version_id, ledger.evidence[2], "having read both, I agree"),
        )
        assert [e["outcome"] for e in submitted["evaluations"]] == ["already_consolidated"]
        assert "has ended" in await refused(
            third, "submit_output", run=runs[2], output=endorsement(version_id, ledger.evidence[2], "x")
        )

    after = cli("groups", "--node", str(version_id), "--json").json()
    assert [g["kind"] for g in after["groups"]] == ["support"]
    assert sorted(after["groups"][0]["runs"]) == sorted(runs)
    with owner_engine.connect() as conn:
        consolidations = conn.execute(
            text("SELECT count(*) FROM consolidations WHERE node_version_id = :v"), {"v": version_id}
        ).scalar_one()
    assert consolidations == 1
    shown = cli("run", "show", runs[2], "--json").json()
    assert {(e["channel"], e["exposed_to_run_id"]) for e in shown["exposures"]} == {
        ("mcp:node_status", runs[0]),
        ("mcp:node_status", runs[1]),
    }
    assert shown["mode"] == "external" and shown["status"] == "succeeded"


def test_three_outside_agents_over_stdio(
    db_url: str, owner_engine: Engine, engine: Engine, cli: CliRunner, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    anyio.run(council_session, _stdio(db_url, tmp_path), owner_engine, ledger, version_id, cli)


@contextmanager
def _mcp_http_server(db_url: str, tmp_path: Path, *args: str, **extra_env: str) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(_server_env(db_url), COUNCIL_API_TOKEN=TOKEN, COUNCIL_HOME=str(tmp_path), **extra_env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "council.cli", "mcp", "--http", "--port", "0", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        serving = json.loads(proc.stdout.readline())
        yield serving["url"]
    finally:
        stop_groups([proc], grace_s=5)


@pytest.fixture
def mcp_http(db_url: str, tmp_path: Path) -> Iterator[str]:
    with _mcp_http_server(db_url, tmp_path) as url:
        yield url


def test_three_outside_agents_over_streamable_http(
    mcp_http: str, owner_engine: Engine, engine: Engine, cli: CliRunner
) -> None:
    assert mcp_http.startswith("http://127.0.0.1:")
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx.post(mcp_http, json={}, headers=headers, timeout=10)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    anyio.run(council_session, _http(mcp_http), owner_engine, ledger, version_id, cli)


def test_http_on_every_address_allow_lists_hosts_and_bounds_bodies(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """Bound to the wildcard address the SDK's DNS-rebinding check is off; the HTTP
    API's guard still refuses a foreign Host, and a body past the bound before it
    is read, with the token or without."""
    before = counts(engine)
    with _mcp_http_server(db_url, tmp_path, "--host", "0.0.0.0", COUNCIL_API_MAX_BODY_BYTES="2048") as url:
        port = url.split(":")[2].split("/")[0]
        local = url.replace("0.0.0.0", "127.0.0.1")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        foreign = httpx.post(local, json={}, headers={**auth, "Host": f"evil.example:{port}"}, timeout=10)
        assert foreign.status_code == 400 and "Host" in foreign.json()["detail"]
        big = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x" * 4096}}
        for headers in (auth, {}):
            too_large = httpx.post(local, json=big, headers=headers, timeout=10)
            assert too_large.status_code == (413 if headers else 401), too_large.text
        chunked = httpx.post(
            local, content=iter([b"{" + b" " * 1500, b" " * 1500 + b"}"]), headers=auth, timeout=10
        )
        assert chunked.status_code == 413 and "COUNCIL_API_MAX_BODY_BYTES" in chunked.json()["detail"]
        hello = json.dumps(INITIALIZE).encode()
        mcp_headers = {
            **auth,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        # A chunked body within the bound reaches the MCP app whole, under any allowed Host.
        for host in ("127.0.0.1", "localhost"):
            answered = httpx.post(
                local,
                content=iter([hello[:10], hello[10:]]),
                headers={**mcp_headers, "Host": f"{host}:{port}"},
                timeout=10,
            )
            assert answered.status_code == 200, answered.text
            assert "protocolVersion" in answered.text
    assert counts(engine) == before


def test_http_answers_a_body_that_is_not_json_as_council_takes_it_with_a_parse_error(
    mcp_http: str, engine: Engine
) -> None:
    """A body that is not UTF-8 made the SDK answer 500 (issue 44); one with NaN or Infinity
    is no JSON a client should send. Each is a JSON-RPC parse error, 400, and nothing runs."""
    before = counts(engine)
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    hello = json.dumps(INITIALIZE).encode()
    for body in (
        hello.replace(b'"2.0"', b'"2.0\xff\xfe"'),  # not UTF-8
        hello.replace(b'"id": 1', b'"id": NaN'),
        hello[:-1] + b', "x": -Infinity}',
    ):
        answer = httpx.post(mcp_http, content=body, headers=headers, timeout=10)
        assert answer.status_code == 400, (body, answer.status_code, answer.text)
        assert answer.json()["error"]["code"] == -32700, answer.text
    # And the server still answers a well-formed one
    assert httpx.post(mcp_http, content=hello, headers=headers, timeout=10).status_code == 200
    assert counts(engine) == before


def test_an_http_session_that_ends_unanswered_ends_its_run_while_the_server_serves_on(
    mcp_http: str, engine: Engine
) -> None:
    ledger = Ledger.new(engine)
    thread = str(ledger.thread_id)

    async def begin(connect: Connect) -> str:
        async with connect() as session:
            return str((await call(session, "begin_run", thread=thread, agent="leaver", model="gpt-5"))["id"])

    async def scenario() -> tuple[str, str]:
        async with _http(mcp_http)() as staying:
            kept = await call(staying, "begin_run", thread=thread, agent="stayer", model="gpt-5")
            left = await begin(_http(mcp_http))  # this client closes its session (DELETE) on exit
            deadline = time.monotonic() + 15
            while _status(engine, left)[0] == "running" and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            # The other session's run is untouched, and the server still answers it
            assert _status(engine, str(kept["id"]))[0] == "running"
            assert (await call(staying, "list_threads"))["items"]
            return left, str(kept["id"])

    left, kept = anyio.run(scenario)
    deadline = time.monotonic() + 15
    while _status(engine, kept)[0] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)  # the staying session has ended too now
    for run_id in (left, kept):
        status, error = _status(engine, run_id)
        assert status == "failed" and "MCP session that began it ended" in str(error)


def _status(engine: Engine, run_id: str) -> tuple[str, str | None]:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT status, error FROM agent_runs WHERE id = :r"), {"r": run_id}).one()
    return str(row.status), row.error


def test_http_refuses_to_start_without_a_token(cli: CliRunner) -> None:
    result = cli("mcp", "--http", "--port", "0", "--json", env={"COUNCIL_API_TOKEN": ""})
    assert result.code == 2 and "COUNCIL_API_TOKEN" in result.json()["error"]


def test_a_packet_with_stances_is_recorded_and_a_blind_one_is_not(
    db_url: str, owner_engine: Engine, engine: Engine, tmp_path: Path
) -> None:
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    disputer = ledger.run("openai")
    ledger.claim(disputer, version_id, "dispute", confidence=0.7, rationale="parity misses locking")

    async def scenario() -> str:
        async with _stdio(db_url, tmp_path)() as session:
            run = (await call(session, "begin_run", thread=str(ledger.thread_id), agent="a", model="gpt-5"))[
                "id"
            ]
            blind = await call(session, "reentry_packet", thread=str(ledger.thread_id), run=run)
            assert blind["exposures_recorded"] == 0 and blind["packet"]["counterarguments"] == []
            seen = await call(session, "reentry_packet", thread=str(ledger.thread_id), run=run, blind=False)
            assert seen["exposures_recorded"] == 1
            assert [c["run_id"] for c in seen["packet"]["counterarguments"]] == [str(disputer)]
            with owner_engine.connect() as conn:
                rows = conn.execute(
                    text("SELECT kind, channel, exposed_to_run_id FROM run_exposures WHERE run_id = :r"),
                    {"r": run},
                ).all()
            assert [tuple(r) for r in rows] == [("stance", "mcp:reentry_packet", disputer)]

            evidence = await session.read_resource(f"council://evidence/{ledger.evidence[0]}")  # type: ignore[arg-type]
            assert json.loads(evidence.contents[0].text)["content"] == "SQLite parity: evidence item 0"  # type: ignore[union-attr]
            packet = await session.read_resource(f"council://threads/{ledger.thread_id}/packet")  # type: ignore[arg-type]
            assert json.loads(packet.contents[0].text)["blind"] is True  # type: ignore[union-attr]
            linted = await call(session, "lint", text="We keep looking.", thread=str(ledger.thread_id))
            assert linted == {"ok": True, "findings": []}
            return str(run)

    run = anyio.run(scenario)
    # The session ended without an answer: its run is not left in flight.
    deadline = time.monotonic() + 10
    while True:
        with owner_engine.connect() as conn:
            status, error = conn.execute(
                text("SELECT status, error FROM agent_runs WHERE id = :r"), {"r": run}
            ).one()
        if status != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == "failed" and "session" in error


def test_stdio_leaves_stdout_to_the_protocol(cli: CliRunner) -> None:
    result = cli("mcp", "--json")
    assert result.code == 2 and "--http" in result.json()["error"]
