"""Re-verification on read is one service call, and every face makes it (docs/architecture.md
§5, lazily): reading provisional memory through the CLI, the HTTP API or MCP queues its
re-verification; a read with no broker still answers. Real Postgres; MCP in memory."""

from __future__ import annotations

import asyncio
import json
from uuid import UUID

from mcp.shared.memory import create_connected_server_and_client_session
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.mcp.server import build_server
from council.services.consolidation import consolidate
from council.services.reversal import change_validity, reverify_touched
from tests.builders import ACTOR, Ledger


def _provisional(engine: Engine) -> tuple[Ledger, UUID]:
    """A thread whose consolidated memory a challenge made provisional; the memory item's id."""
    ledger = Ledger.new(engine)
    done = consolidate(ledger.uow, ledger.ready_node(), actor=ACTOR)
    assert done.outcome == "committed"
    changed = change_validity(
        ledger.uow, None, ledger.evidence[0], action="challenge", reason="doubt", actor=ACTOR
    )
    [item] = [a for a in changed.affected if a.memory_status == "provisional"]
    return ledger, UUID(str(item.memory_item_id))


def test_reading_the_packet_over_mcp_queues_the_reverification_of_provisional_memory(
    engine: Engine, db_url: str
) -> None:
    # Given provisional memory on a thread, and an MCP server whose scheduler records
    ledger, item = _provisional(engine)
    recorder = Recorder()
    server = build_server(bootstrap(db_url, scheduler=lambda uow: recorder))

    async def read() -> dict[str, object]:
        async with create_connected_server_and_client_session(server) as session:
            tool = await session.call_tool("reentry_packet", {"thread": str(ledger.thread_id)})
            await session.read_resource(f"council://threads/{ledger.thread_id}/packet")  # type: ignore[arg-type]
            return dict(json.loads("".join(getattr(p, "text", "") for p in tool.content)))

    served = asyncio.run(read())
    # Then the tool and the resource each queued its re-verification, as the CLI and API do
    assert any(str(m["id"]) == str(item) for m in served["packet"]["memory"])  # type: ignore[index, union-attr]
    assert recorder.reverifications == [[item], [item]]


def test_a_read_answers_when_the_broker_is_down_and_says_why_nothing_was_queued() -> None:
    def down() -> Recorder:
        raise ConnectionError("broker down")

    memory = [{"id": "00000000-0000-4000-8000-000000000001", "status": "provisional"}]
    reason = reverify_touched(down, memory)
    assert reason is not None and "ConnectionError" in reason and "sweep" in reason
    assert reverify_touched(down, [{"id": memory[0]["id"], "status": "stable"}]) is None
