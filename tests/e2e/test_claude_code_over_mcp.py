"""A real Claude Code process sits on the council through `council mcp` (issue 17).

`claude -p` (isolated HOME and config, offline) is given Council as a stdio MCP
server on this test's database and talks to the fake Anthropic server, whose
script makes the model call Council's tools in turn: ``begin_run``, then
``node_status`` for that run (another run's endorsement is on the node, so a
stance is served), then ``submit_output`` with an endorsement, then a closing
text. Each step's input is made from the results Claude Code sent back (the
run id ``begin_run`` returned). The ledger then holds the run, its claim, and
its exposure to the other run through ``mcp:node_status``, and the two
endorsements form one group, not two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from council.agents.runtimes.claude import QUIET
from council.agents.runtimes.installed import executable
from tests.agent_clis import require_agent_clis
from tests.builders import Ledger
from tests.conftest import CliRunner
from tests.fakes.anthropic_server import Turn, fake_anthropic, say, use
from tests.processes import stop_groups

TOOLS = (
    "list_threads",
    "reentry_packet",
    "begin_run",
    "submit_output",
    "add_evidence",
    "node_status",
    "lint",
)
USED = ("begin_run", "node_status", "submit_output")
MODEL = "claude-sonnet-4-6"
CLOSING = "Recorded my endorsement on Council."


def _script(thread: UUID, version: UUID, evidence: UUID) -> Any:
    """The fake model: begin a run, read the node's status for it, endorse, finish."""

    def next_step(turn: Turn) -> dict[str, Any]:
        tools = {name: turn.tool(name) for name in USED}
        if any(found is None for found in tools.values()):
            return say(f"Council's tools are not offered: {sorted(turn.offered)}")
        failed = [c for c in turn.calls if c.is_error]
        if failed:
            return say(f"{failed[0].name} failed: {failed[0].result}")
        done = {c.name: c for c in turn.calls}
        if tools["begin_run"] not in done:
            return use(
                str(tools["begin_run"]),
                {"thread": str(thread), "agent": "claude-code", "model": MODEL, "provider": "anthropic"},
            )
        run = str(done[str(tools["begin_run"])].document()["id"])
        if tools["node_status"] not in done:
            return use(str(tools["node_status"]), {"version": str(version), "run": run})
        if tools["submit_output"] not in done:
            shown = done[str(tools["node_status"])].document()
            why = (
                f"having read {len(shown['claims'])} other claim(s), the second evidence item supports it too"
            )
            output = {
                "summary": why,
                "claims": [
                    {
                        "node_version_id": str(version),
                        "type": "endorse",
                        "confidence": 0.75,
                        "rationale": why,
                        "cites": [{"evidence_id": str(evidence), "role": "supports"}],
                    }
                ],
            }
            return use(str(tools["submit_output"]), {"run": run, "output": output})
        return say(CLOSING)

    return next_step


def _claude(base_url: str, db_url: str, tmp_path: Path) -> dict[str, Any]:
    """One `claude -p` run with Council as its only MCP server; its final JSON result."""
    home = tmp_path / "claude-home"
    (home / ".claude").mkdir(parents=True)
    server_env = {"COUNCIL_DATABASE_URL": db_url, "COUNCIL_HOME": str(tmp_path), "COUNCIL_OFFLINE": "1"}
    if os.environ.get("PYTHONPATH"):
        server_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    mcp_config = {
        "mcpServers": {
            "council": {
                "type": "stdio",
                "command": sys.executable,
                "args": ["-m", "council.cli", "mcp"],
                "env": server_env,
            }
        }
    }
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake-mcp-1414213562",
        # Connect the MCP servers before the first model call, so its tools are offered.
        "MCP_CONNECTION_NONBLOCKING": "0",
        # ...and wait for them up to a minute, not Claude Code's 5 s (MCP_CONNECT_TIMEOUT_MS):
        # on a loaded machine Council's server had not answered in 5 s and no tool was offered.
        "MCP_CONNECT_TIMEOUT_MS": "60000",
        **QUIET,
    }
    argv = [
        str(executable("claude-code")),
        "-p",
        "--output-format",
        "json",
        "--model",
        MODEL,
        "--max-turns",
        "8",
        "--permission-mode",
        "dontAsk",
        "--strict-mcp-config",
        "--no-session-persistence",
        "--mcp-config",
        json.dumps(mcp_config),
        f"--allowedTools={','.join(f'mcp__council__{name}' for name in TOOLS)}",
        "Join the council on this thread through the council MCP tools.",
    ]
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=120)  # with its model unreachable it would retry forever
    finally:
        stop_groups([proc], grace_s=5)  # and the `council mcp` it started
    assert proc.returncode == 0, (
        f"claude exited {proc.returncode}: {out.decode()[-2000:]} {err.decode()[-2000:]}"
    )
    return dict(json.loads(out))


def test_claude_code_records_a_claim_with_lineage_through_council_mcp(
    db_url: str, owner_engine: Engine, engine: Engine, cli: CliRunner, tmp_path: Path
) -> None:
    require_agent_clis()
    # Given a node another run has endorsed, citing the first evidence item
    ledger = Ledger.new(engine)
    version_id = UUID(str(ledger.node()["version_id"]))
    other = ledger.run("openai", "codex")
    ledger.claim(
        other, version_id, confidence=0.8, rationale="item 0 supports it", cites=[ledger.evidence[0]]
    )

    # When Claude Code, scripted by its (fake) model, works through Council's MCP tools
    script = _script(ledger.thread_id, version_id, ledger.evidence[1])
    with fake_anthropic(script=script) as (base_url, seen):
        result = _claude(base_url, db_url, tmp_path)

    # Then it ran to the end, every tool allowed and answered
    assert result["is_error"] is False and result["result"] == CLOSING, result
    assert result["permission_denials"] == [] and result["num_turns"] == 4
    calls = seen.model_calls()
    offered = {str(t["name"]) for t in calls[0]["json"]["tools"]}
    assert {f"mcp__council__{name}" for name in TOOLS} <= offered
    last = Turn.of(calls[-1]["json"])
    assert [c.name for c in last.calls] == [f"mcp__council__{name}" for name in USED]
    assert not any(c.is_error for c in last.calls)
    run_id = UUID(str(last.calls[0].document()["id"]))
    status = last.calls[1].document()
    assert [c["run_id"] for c in status["claims"]] == [str(other)] and status["exposures_recorded"] == 1

    # And the ledger holds its run, its claim and its exposure to the other run
    with owner_engine.connect() as conn:
        run = conn.execute(
            text("SELECT agent, model, provider, mode, status FROM agent_runs WHERE id = :r"), {"r": run_id}
        ).one()
        claims = conn.execute(
            text(
                "SELECT c.node_version_id, c.claim_type, ci.evidence_id FROM claims c "
                "JOIN citations ci ON ci.claim_id = c.id WHERE c.run_id = :r"
            ),
            {"r": run_id},
        ).all()
        exposures = conn.execute(
            text("SELECT kind, channel, exposed_to_run_id FROM run_exposures WHERE run_id = :r"),
            {"r": run_id},
        ).all()
    assert tuple(run) == ("claude-code", MODEL, "anthropic", "external", "succeeded")
    assert [tuple(c) for c in claims] == [(version_id, "endorse", ledger.evidence[1])]
    assert [tuple(e) for e in exposures] == [("stance", "mcp:node_status", other)]

    shown = cli("run", "show", str(run_id), "--json").json()
    assert [(e["channel"], e["exposed_to_run_id"]) for e in shown["exposures"]] == [
        ("mcp:node_status", str(other))
    ]
    assert [(c["node_version_id"], c["claim_type"]) for c in shown["claims"]] == [
        (str(version_id), "endorse")
    ]

    # And its agreement joins the run it read: one support group, not two
    groups = cli("groups", "--node", str(version_id), "--json").json()["groups"]
    assert [g["kind"] for g in groups] == ["support"]
    assert sorted(groups[0]["runs"]) == sorted([str(other), str(run_id)])
