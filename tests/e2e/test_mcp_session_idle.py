"""An MCP HTTP session that goes quiet expires (issue 30 part 3): a client that begins a
run and vanishes without closing its session (no DELETE) has the session ended after
COUNCIL_MCP_SESSION_IDLE_S, its unanswered run failed with the reason, and its session id
no longer answers. A real `council mcp --http`, raw HTTP, real Postgres."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.test_mcp_server import INITIALIZE, TOKEN, _mcp_http_server, _status

IDLE_S = 2
MARGIN_S = 15.0


def _rpc(client: httpx.Client, url: str, message: dict[str, Any], session: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if session is not None:
        headers["mcp-session-id"] = session
    return client.post(url, json=message, headers=headers)


def _result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


def test_a_vanished_clients_session_expires_and_its_run_fails_with_the_reason(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    thread = str(Ledger.new(engine).thread_id)
    with (
        _mcp_http_server(db_url, tmp_path, COUNCIL_MCP_SESSION_IDLE_S=str(IDLE_S)) as url,
        httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client,
    ):
        # Given a client that opens a session and begins a run
        opened = _rpc(client, url, INITIALIZE, None)
        session = opened.headers["mcp-session-id"]
        _result(opened)
        _rpc(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        call = {"name": "begin_run", "arguments": {"thread": thread, "agent": "vanisher", "model": "gpt-5"}}
        began = _result(
            _rpc(client, url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, session)
        )
        run_id = json.loads(began["result"]["content"][0]["text"])["id"]
        assert _status(engine, run_id)[0] == "running"
        # When it vanishes without closing the session
        started = time.monotonic()
        while _status(engine, run_id)[0] == "running" and time.monotonic() - started < IDLE_S + MARGIN_S:
            time.sleep(0.2)
        # Then its run failed soon after the idle time, saying why
        status, error = _status(engine, run_id)
        assert status == "failed", f"still {status} after {time.monotonic() - started:.1f} s"
        assert "COUNCIL_MCP_SESSION_IDLE_S" in str(error)
        # And the session is gone
        gone = _rpc(client, url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session)
        assert gone.status_code == 404, gone.text


def test_a_bad_idle_time_is_refused_at_start(db_url: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(COUNCIL_DATABASE_URL=db_url, COUNCIL_HOME=str(tmp_path), COUNCIL_API_TOKEN=TOKEN)
    env["COUNCIL_MCP_SESSION_IDLE_S"] = "0"
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", "mcp", "--http", "--port", "0", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "COUNCIL_MCP_SESSION_IDLE_S" in json.loads(done.stdout)["error"]
