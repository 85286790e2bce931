"""Exclusive alternatives through the HTTP API and MCP, as the CLI takes them (issue 43):
`POST /ask` and the MCP `ask` tool with ``options`` (LABEL=TEXT each, like `ask --option`),
and `POST /threads/{id}/nodes` with ``contradicts``. Bad input is refused with the CLI's
one-line reason (422 over HTTP, code 2 over MCP) and nothing written. Real Postgres, a
recording scheduler."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.shared.memory import create_connected_server_and_client_session
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.mcp.server import build_server
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import Ledger
from tests.rows import counts, row, rows

TOKEN = "alternatives-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BAD_OPTIONS = [
    (["A=yes", "B"], "invalid --option 'B': expected LABEL=TEXT"),
    (["A=yes", "a=no"], "--option label 'a' is given twice"),
    (["A=yes", "B=  "], "--option 'B' has no text"),
    (["A=only one"], "a multiple-choice question takes 2 to 100 --option LABEL=TEXT, got 1"),
]


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", headers=AUTH) as test_client:
        yield test_client


def _option_set(engine: Engine, thread_id: str) -> list[tuple[int, str, str]]:
    [option_set] = rows(engine, "option_sets", "thread_id = :v", v=thread_id)
    members = rows(engine, "option_set_members", "option_set_id = :v", v=option_set["id"])
    return sorted((m["ordinal"], m["label"], option_set["origin"]) for m in members)


def test_ask_over_http_with_options_makes_one_set_on_a_v3_thread(client: TestClient, engine: Engine) -> None:
    # When a multiple-choice question is asked over HTTP
    response = client.post(
        "/ask",
        json={"question": "Which store?", "agents": ["claude"], "rounds": 0, "options": ["A=SQLite", "B=PG"]},
    )
    # Then, as `ask --option`: a thread pinned to v3 whose options are nodes of one set
    assert response.status_code == 202, response.text
    thread_id = response.json()["thread_id"]
    assert row(engine, "threads", "id = :v", v=thread_id)["rule_set_id"] == "council-default-v3"
    assert _option_set(engine, thread_id) == [(0, "A", "ask"), (1, "B", "ask")]
    contents = {r["content"] for r in rows(engine, "node_versions", "thread_id = :v", v=thread_id)}
    assert contents == {"A: SQLite", "B: PG"}


@pytest.mark.parametrize(("options", "reason"), BAD_OPTIONS)
def test_bad_options_over_http_are_422_with_the_reason_and_nothing_written(
    client: TestClient, engine: Engine, options: list[str], reason: str
) -> None:
    before = counts(engine)
    asked = {"question": "Which store?", "agents": ["claude"], "options": options}
    response = client.post("/ask", json=asked)
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert detail["msg"] == reason
    assert counts(engine) == before


def _mcp_ask(db_url: str, options: list[str]) -> tuple[bool, dict[str, Any]]:
    server = build_server(bootstrap(db_url, scheduler=lambda uow: Recorder()))

    async def run() -> tuple[bool, str]:
        async with create_connected_server_and_client_session(server) as session:
            arguments = {"question": "Which store?", "agents": ["claude"], "rounds": 0, "wait_s": 0.1}
            result = await session.call_tool("ask", {**arguments, "options": options})
            return bool(result.isError), "".join(getattr(p, "text", "") for p in result.content)

    is_error, text = asyncio.run(run())
    return is_error, json.loads(text)


def test_the_mcp_ask_takes_options_and_refuses_bad_ones_with_code_2(db_url: str, engine: Engine) -> None:
    # When a multiple-choice question is asked through the MCP tool
    is_error, document = _mcp_ask(db_url, ["A=SQLite", "B=Postgres"])
    # Then its options are one set on the new thread
    assert not is_error, document
    assert _option_set(engine, str(document["thread_id"])) == [(0, "A", "ask"), (1, "B", "ask")]
    # And each bad option is the contract's error, code 2, with the CLI's reason, nothing written
    for options, reason in BAD_OPTIONS:
        before = counts(engine)
        is_error, document = _mcp_ask(db_url, options)
        assert is_error and document == {"error": reason, "code": 2}
        assert counts(engine) == before


def test_node_create_over_http_takes_contradicts_and_refuses_unknown_or_foreign(
    client: TestClient, engine: Engine
) -> None:
    ledger = Ledger.new(engine, evidence_items=0)
    mine = str(ledger.node("the adapter passes")["version_id"])
    foreign = str(Ledger.new(engine, title="other", evidence_items=0).node("elsewhere")["version_id"])
    route = f"/threads/{ledger.thread_id}/nodes"
    before = counts(engine)
    # When a rival names an unknown version, or another thread's, it is refused, nothing written
    for target, status, reason in (
        ("00000000-0000-4000-8000-00000000dead", 404, "no node version with id"),
        (foreign, 404, "belongs to another thread"),  # as for any edge: not a version of this thread
    ):
        response = client.post(route, json={"content": "it fails", "contradicts": [target]})
        assert response.status_code == status, response.text
        assert reason in response.text
        assert counts(engine) == before
    # And a rival of this thread's version is added with its contradicts edge
    response = client.post(route, json={"content": "it fails", "contradicts": [mine]})
    assert response.status_code == 201, response.text
    [edge] = rows(engine, "edges", "from_version_id = :v", v=response.json()["version_id"])
    assert (edge["kind"], str(edge["to_version_id"])) == ("contradicts", mine)
