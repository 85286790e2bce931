"""Stored text is data wherever the CLI shows it (issue 30 §2, docs/architecture.md §11).

Hostile titles, contents, agent and model names, fork labels, reasons and rule
descriptions are written through the faces (the CLI here, MCP for an outside
agent's name); then every human view of the CLI app, enumerated from the app
itself, is rendered: each exits 0, shows the text as written (Rich markup
literal, escape and control sequences gone) and prints no ESC byte. A command
added to the app without a place here fails the test. Real processes, real
Postgres."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger

# Rich markup that crashed the views ("[/x]": closing tag nothing opened), markup
# that would style or link, an emoji code, a CSI colour, an OSC-8 hyperlink, a C1
# CSI, a bell and a right-to-left override.
HOSTILE = "[/x][b]b[/b][link=https://e.x]l[/link]:warning:\x1b[31mr\x1b]8;;https://e.x\x07o\x1b]8;;\x07\x9b1mk\x07\u202e!"
SHOWN = "[/x][b]b[/b][link=https://e.x]l[/link]:warning:rok!"
_ESCAPES = re.compile("[\x1b\x07\x9b\x9d\u202e]")

# Commands that show no stored text: they start or stop processes, or print a URL.
NOT_VIEWS = {
    "up": "starts the stack",
    "down": "stops the stack",
    "status": "shows the stack's processes",
    "restart": "restarts the stack",
    "db upgrade": "migrates",
    "db url": "prints a URL",
    "db psql": "opens psql",
    "worker": "a long-running worker process",
    "serve": "a long-running web server (the page escapes, tests/e2e/test_live_page.py)",
    "mcp": "a long-running MCP server",
    "demo": "starts a stack and runs a fixed scenario",
}


def _through_mcp(db_url: str, cwd: Path, thread: str, version: str) -> str:
    """An outside agent whose name and model are hostile, over `council mcp` (stdio), claims
    with a hostile rationale and forks with a hostile label; its run's id."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {
        "COUNCIL_DATABASE_URL": db_url,
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "council.cli", "mcp"], env=env, cwd=cwd
    )

    async def session() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()

            async def call(tool: str, **arguments: Any) -> dict[str, Any]:
                result = await client.call_tool(tool, arguments)
                assert not result.isError, (tool, result.content)
                return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]

            run = str(
                (await call("begin_run", thread=thread, agent=HOSTILE, model=HOSTILE, provider="zhipu"))["id"]
            )
            output = {
                "summary": HOSTILE,
                "claims": [
                    {"node_version_id": version, "type": "dispute", "confidence": 0.4, "rationale": HOSTILE}
                ],
                "forks": [
                    {"kind": "node", "label": HOSTILE, "divergence_type": "claim", "at_version_id": version}
                ],
            }
            await call("submit_output", run=run, output=output)
            return run

    return asyncio.run(session())


def _through_api(db_url: str) -> tuple[str, str]:
    """A thread and a node whose title, objective and content are hostile, over the HTTP API."""
    from fastapi.testclient import TestClient

    from council.adapters.scheduler import Recorder
    from council.bootstrap import bootstrap
    from council.web.app import create_app
    from council.web.security import Policy

    token = "api-write-token-0123456789"
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(write_token=token))
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app, base_url="http://127.0.0.1", headers=headers) as client:
        made = client.post("/threads", json={"title": HOSTILE, "objective": HOSTILE})
        assert made.status_code == 201, made.text
        thread = made.json()["id"]
        node = client.post(f"/threads/{thread}/nodes", json={"content": HOSTILE})
        assert node.status_code == 201, node.text
    return thread, node.json()["version_id"]


def _app_commands() -> set[str]:
    """Every leaf command of the `council` app, as its words."""
    import typer.main

    from council.cli.main import app, register_commands

    register_commands()

    def walk(command: Any, words: tuple[str, ...]) -> Iterator[str]:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            yield " ".join(words)
            return
        if getattr(command, "invoke_without_command", False):  # acts itself too (`dispatch --thread`)
            yield " ".join(words)
        for name, sub in subcommands.items():
            yield from walk(sub, (*words, name))

    return set(walk(typer.main.get_command(app), ()))


class Shown:
    """Runs human views and checks each one's output."""

    def __init__(self, cli: Any) -> None:
        self.cli = cli
        self.seen: set[str] = set()
        self.problems: list[str] = []

    def json(self, *args: str) -> Any:
        result = self.cli(*args, "--json")
        assert result.code == 0, (args, result.stderr)
        return result.json()

    def human(
        self, command: str, *args: str, literal: bool = True, code: int = 0, env: dict[str, str] | None = None
    ) -> str:
        result = self.cli(*command.split(), *args, env=env)
        self.seen.add(command)
        where = f"`council {command} {' '.join(args)}`"
        if result.code != code:
            self.problems.append(f"{where} exited {result.code}\n{result.stdout}\n{result.stderr}")
        for stream in (result.stdout, result.stderr):
            if "Traceback" in stream or _ESCAPES.search(stream):
                self.problems.append(f"{where} printed a traceback, an escape or a control: {stream!r}")
        if literal and SHOWN not in result.stdout:
            self.problems.append(f"{where} did not show the text as written:\n{result.stdout}")
        return str(result.stdout)


def test_every_human_view_shows_hostile_text_literally(
    cli: Any, engine: Engine, db_url: str, tmp_path: Path, redis_url: str
) -> None:
    views = Shown(cli)
    # Given hostile text written through the CLI, in every field a person reads back
    thread = views.json("thread", "create", "--title", HOSTILE, "--objective", HOSTILE)["id"]
    views.human("thread create", "--title", HOSTILE, "--objective", HOSTILE)
    evidence = views.json("evidence", "add", "--thread", thread, "--text", HOSTILE, "--title", HOSTILE)["id"]
    views.human("evidence add", "--thread", thread, "--text", HOSTILE + " 2", "--title", HOSTILE)
    node = views.json("node", "add", "--thread", thread, "--content", HOSTILE)
    version, logical = node["version_id"], node["logical_node_id"]
    views.human("node add", "--thread", thread, "--content", HOSTILE + " 2", literal=False)
    second = views.json("node", "version", logical, "--content", HOSTILE + " v2")["version_id"]
    views.human("node version", logical, "--content", HOSTILE + " v3", literal=False)
    views.human("node status", second, "--to", "killed", "--reason", HOSTILE, literal=False)
    run = views.json(
        "run", "record", "--thread", thread, "--agent", HOSTILE, "--model", HOSTILE, "--provider", "openai"
    )["id"]
    views.human(
        "run record", "--thread", thread, "--agent", HOSTILE, "--model", HOSTILE, "--provider", "openai"
    )
    views.human(
        "claim add",
        "--run",
        run,
        "--node",
        version,
        "--type",
        "endorse",
        "--confidence",
        "0.8",
        "--rationale",
        HOSTILE,
        "--cites",
        evidence,
        "--interpretation",
        HOSTILE,
        literal=False,
    )
    views.human("run close", run)  # its recorder closes it: it names the hostile agent
    # an outside agent over MCP: its name, model, rationale and fork label
    outside = _through_mcp(db_url, tmp_path, thread, version)
    # a committed consolidation, its memory and a retraction proposal with a hostile reason
    ledger = Ledger(engine, UUID(thread))
    ledger.add_evidence("a first independent source")
    ledger.add_evidence("a second independent source")
    ready = ledger.ready_node(HOSTILE + " ready")
    decided = consolidate(ledger.uow, ready, actor=ACTOR)
    consolidation = decided.consolidation_id
    assert consolidation is not None, (decided.outcome, [r for r in decided.reasons if not r.ok])
    views.human("consolidate", "--node", version, literal=False)
    proposal = views.json("retraction", "propose", "--consolidation", str(consolidation), "--reason", HOSTILE)
    views.human(
        "retraction vote",
        "--proposal",
        proposal["id"],
        "--run",
        run,
        "--vote",
        "endorse",
        "--rationale",
        HOSTILE,
        literal=False,
    )
    views.human("retraction adjudicate", "--proposal", proposal["id"], literal=False)
    other = ledger.ready_node(HOSTILE + " other")
    other_consolidation = consolidate(ledger.uow, other, actor=ACTOR).consolidation_id
    views.human(
        "retraction propose", "--consolidation", str(other_consolidation), "--reason", HOSTILE, literal=False
    )
    fork = views.json(
        "branch",
        "fork",
        "--thread",
        thread,
        "--kind",
        "objective",
        "--label",
        HOSTILE,
        "--divergence",
        "objective",
        "--objective",
        HOSTILE,
    )["id"]
    views.human(
        "branch fork",
        "--thread",
        thread,
        "--kind",
        "objective",
        "--label",
        HOSTILE,
        "--divergence",
        "objective",
        "--objective",
        HOSTILE + " 2",
    )
    views.human("branch close", fork, "--as", "abandoned", "--reason", HOSTILE, literal=False)
    merged = views.json(
        "branch",
        "fork",
        "--thread",
        thread,
        "--kind",
        "objective",
        "--label",
        HOSTILE + " m",
        "--divergence",
        "objective",
        "--objective",
        HOSTILE + " m",
    )["id"]
    views.human("branch merge", merged, "--rationale", HOSTILE, literal=False)
    action = views.json(
        "action", "add", "--thread", thread, "--description", HOSTILE, "--acceptance", HOSTILE
    )
    # an actor's name is stored text too (events, transitions)
    views.human(
        "action add",
        "--thread",
        thread,
        "--description",
        HOSTILE,
        "--acceptance",
        HOSTILE,
        env={"COUNCIL_ACTOR": HOSTILE},
    )
    views.human("action close", action["id"], "--as", "satisfied", "--reason", HOSTILE, literal=False)
    views.human("thread review", thread, "--set", "manual", "--reason", HOSTILE)
    views.human("thread budget", thread, "--usd", "2.5", "--reason", HOSTILE)
    views.human(
        "resolve",
        "--node",
        version,
        "--outcome",
        "true",
        "--source",
        HOSTILE,
        "--reason",
        HOSTILE,
        literal=False,
    )
    for action_word in ("challenge", "reaffirm", "invalidate"):
        views.human(f"evidence {action_word}", evidence, "--reason", HOSTILE, literal=False)
    # a recorded debate whose agents, model and question are hostile
    debate = tmp_path / "debate.jsonl"
    agents = [{"name": HOSTILE, "model": HOSTILE, "provider": "openai"}]
    record = {
        "id": "q1",
        "question": HOSTILE,
        "options": {"A": HOSTILE, "B": "no"},
        "truth": "A",
        "agents": agents,
        "tags": ["hostile"],
        "turns": [{"round": 0, "agent": HOSTILE, "answer": "A"}],
    }
    debate.write_text(json.dumps(record) + "\n", encoding="utf-8")
    views.human("import", str(debate), literal=False)
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {
                "id": "hostile-1",
                "description": HOSTILE,
                "body": {"min_support_groups": 1, "min_support_providers": 1, "dispute_confidence_bar": 1.0},
            }
        )
    )
    stored = views.json("rule-set", "add", str(rules))["rule_set"]["id"]
    views.human("rule-set add", str(rules), literal=False)
    views.human("rule-set pin", stored, literal=False)
    views.human("rule-set list")
    lint = tmp_path / "lint.md"
    lint.write_text(f"We set aside {HOSTILE}.\n", encoding="utf-8")

    # When every view is rendered for a person, then each shows the text as written
    views.human("thread list")
    views.human("thread show", thread)
    views.human("evidence show", evidence)
    views.human("node show", version)
    views.human("branch list", "--thread", thread)
    views.human("events", "--thread", thread)
    views.human("watch", "--thread", thread, "--since", "0", "--timeout", "1")
    views.human("history", "--node", version, literal=False)
    views.human("groups", "--node", version, literal=False)
    views.human("memory list", "--thread", thread)
    views.human("stances", "--thread", thread, literal=False)
    views.human("calibration")
    views.human("reentry", "--thread", thread)
    views.human("lint", str(lint), "--thread", thread, code=1)
    exported = views.human("export", "--thread", thread, literal=False)  # JSON: controls shown escaped
    assert SHOWN[:40] in exported
    views.human("eval", "--tag", "hostile", literal=False)
    views.human("eval", "--thread", thread, "--rule-set", stored, literal=False)
    briefing = views.human("preview", "--thread", thread, "--agent", "claude", literal=False)  # JSON inside
    assert SHOWN[:40] in briefing
    views.human("profiles", literal=False)
    views.human("run show", run)
    views.human("run show", outside)
    # what arrived over the HTTP API reads the same
    api_thread, api_version = _through_api(db_url)
    views.human("thread show", api_thread)
    views.human("node show", api_version)
    views.human("replay", str(consolidation), literal=False)
    views.human("replay", "--rule-set", stored, "--thread", thread, literal=False)
    for _ in range(2):  # the second names its idempotency key (quoted: controls shown escaped)
        said = views.human(
            "dispatch",
            "--thread",
            thread,
            "--agents",
            "claude",
            "--simulate",
            "always",
            "--key",
            HOSTILE,
            env={"COUNCIL_BROKER_URL": redis_url},
            literal=False,
        )
    assert SHOWN[:40] in said
    # the listings cut long text to fit 80 columns: checked for escapes and tracebacks only
    for listing in ("evidence list", "node list", "dispatch list"):
        views.human(listing, "--thread", thread, literal=False)
    views.human("run list", "--thread", thread, literal=False)
    views.human("proposal list", "--thread", thread, literal=False)
    for listing in ("consolidation list", "claim list", "action list"):
        views.human(listing, "--thread", thread, literal=False)
    dispatched = views.json("dispatch", "list", "--thread", thread)["items"][0]["id"]
    views.human("dispatch show", dispatched, literal=False)
    # a question that is itself markup: no worker runs it here, so ask reports the wait ran out
    views.human(
        "ask",
        HOSTILE,
        "--agents",
        "claude",
        "--simulate",
        "always",
        "--timeout",
        "1",
        env={"COUNCIL_BROKER_URL": redis_url},
        code=1,
    )

    assert not views.problems, "\n\n".join(views.problems)
    # And no command of the app was left out
    assert views.seen | set(NOT_VIEWS) == _app_commands(), "a command is neither rendered here nor listed"


def test_an_error_naming_hostile_text_is_one_escaped_line(cli: Any) -> None:
    # Given a reference that is itself markup and escapes, when a command cannot find it
    result = cli("thread", "show", HOSTILE)
    # Then the reason names it literally on one line, exit 2, no traceback, no escape byte
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr and not _ESCAPES.search(result.stderr)
    assert SHOWN[:40] in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", [HOSTILE, "a\x1b[2Jb", "\x9b31mred"])
def test_the_helper_removes_every_escape_and_leaves_markup_literal(value: str) -> None:
    from rich.console import Console

    from council.cli.output import inert

    console = Console(record=True, width=400, emoji=False, force_terminal=False)
    console.print(inert(value))
    text = console.export_text()
    assert not _ESCAPES.search(text)
    assert "\x1b" not in text and "\x9b" not in text
