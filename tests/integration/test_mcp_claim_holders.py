"""Claims only from a live run held by the writer, on the MCP face (issue 29 part 5, docs/architecture.md
§7): through the real MCP server (in memory), `submit_output` with a claim is refused, code 2 and
nothing written, on a succeeded worker run, a queued worker run, a failed run, a run another session
holds and a run recorded by hand (open or closed); the session's own open run takes it. Real Postgres."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

from mcp.shared.memory import create_connected_server_and_client_session
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.commands import RecordedRun
from council.ledger.unit import UnitOfWork
from council.mcp.server import build_server
from council.services.execution import execute_run
from council.services.outside import begin_run, end_sessions
from tests.builders import Ledger
from tests.integration.test_counterfactual import row_counts


def _claim(version: str) -> dict[str, Any]:
    return {
        "summary": "endorse",
        "claims": [{"node_version_id": version, "type": "endorse", "confidence": 0.7, "rationale": "r"}],
    }


def test_an_mcp_session_claims_only_on_its_own_open_run(engine: Engine, uow: UnitOfWork, db_url: str) -> None:
    # Given a node and every kind of run an MCP session must not claim for
    ledger = Ledger.new(engine, evidence_items=1)
    version = str(ledger.node("A proposition", cites=[ledger.evidence[0]])["version_id"])
    worker_run = ledger.dispatched("claude")
    assert execute_run(uow, Recorder(), worker_run).status == "succeeded"
    queued = ledger.dispatched("codex")
    other = begin_run(
        uow, RecordedRun(ledger.thread_id, "outside", "openai/gpt-5"), holder="other", actor="t"
    )
    gone = begin_run(uow, RecordedRun(ledger.thread_id, "vanished", "openai/gpt-5"), holder="gone", actor="t")
    end_sessions(uow, ["gone"])
    closed = ledger.run("anthropic")
    still_open = ledger.open_run("openai", actor="alice")
    refused_runs: dict[str, UUID] = {
        "succeeded worker": worker_run,
        "queued worker": queued,
        "another session's": other.id,
        "failed": gone.id,
        "recorded by hand, closed": closed,
        "recorded by hand, open": still_open,
    }
    server = build_server(bootstrap(db_url, scheduler=lambda uow: Recorder()))

    async def session_calls() -> tuple[dict[str, tuple[bool, dict[str, Any]]], dict[str, int], bool, str]:
        answers: dict[str, tuple[bool, dict[str, Any]]] = {}
        async with create_connected_server_and_client_session(server) as session:
            before = row_counts(engine)
            for what, run_id in refused_runs.items():
                # When the session submits a claim on a run it does not hold
                result = await session.call_tool(
                    "submit_output", {"run": str(run_id), "output": _claim(version)}
                )
                text = "".join(getattr(part, "text", "") for part in result.content)
                answers[what] = (result.isError, json.loads(text))
            after = row_counts(engine)
            # While its own open run takes the claim
            began = await session.call_tool(
                "begin_run", {"thread": str(ledger.thread_id), "agent": "mine", "model": "openai/gpt-5"}
            )
            own = json.loads("".join(getattr(part, "text", "") for part in began.content))["id"]
            done = await session.call_tool("submit_output", {"run": own, "output": _claim(version)})
            landed = "".join(getattr(part, "text", "") for part in done.content)
        diff = {table: after[table] - before[table] for table in before if after[table] != before[table]}
        return answers, diff, done.isError, landed

    answers, diff, own_error, landed = asyncio.run(session_calls())
    # Then each is the contract's error, code 2, naming the run
    for what, (is_error, document) in answers.items():
        assert is_error, (what, document)
        assert document["code"] == 2, (what, document)
        assert str(refused_runs[what]) in document["error"], (what, document)
    # And nothing was written
    assert diff == {}
    # And the session's own run took its claim
    assert not own_error, landed
