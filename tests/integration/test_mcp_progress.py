"""An MCP tool that waits sends progress notifications (issue 35 part 7): the `ask` tool,
through the SDK's own client, in memory; real Postgres, a recording scheduler (the runs
never end here, so the tool waits out its `wait_s` and answers the outcome so far)."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.shared.memory import create_connected_server_and_client_session

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.mcp import waiting
from council.mcp.server import build_server


def test_the_ask_tool_reports_progress_while_it_waits(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the MCP server, with progress every 0.2 s
    monkeypatch.setattr(waiting, "PROGRESS_EVERY_S", 0.2)
    server = build_server(bootstrap(db_url, scheduler=lambda uow: Recorder()))
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def run() -> tuple[bool, str]:
        async with create_connected_server_and_client_session(server) as session:
            result = await session.call_tool(
                "ask",
                {"question": "Is the cache safe?", "agents": ["claude", "glm"], "rounds": 1, "wait_s": 2},
                progress_callback=progress,
            )
            return bool(result.isError), "".join(getattr(p, "text", "") for p in result.content)

    # When a client asks and the runs do not end within the wait
    is_error, text = asyncio.run(run())
    # Then the client received progress notifications while it waited: runs ended of all
    assert len(seen) >= 3, seen
    # (two agents, each a run in each of the council's three rounds: propose, cross-review, one deliberative)
    assert all(total == 6 and done == 0 for done, total, _ in seen), seen
    assert seen[0][2] == "0 of 6 runs ended, 0 failed"
    # And the answer is the ask document as it stands
    document = json.loads(text)
    assert not is_error, document
    assert document["question"] == "Is the cache safe?" and document["complete"] is False
