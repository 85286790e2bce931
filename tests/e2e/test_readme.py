"""The README's quick start (five minutes with the CLI), run command by command as a new user
would (docs/architecture.md §9): every line of its first bash block must succeed in order, and
its `council ask` establishes an answer through the council's blind cross-review."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from uuid import UUID

import redis

from council.ledger.db import engine_for
from council.ledger.unit import UnitOfWork
from council.services.consolidation import show_consolidation
from tests.conftest import free_port
from tests.rows import query

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Quick start: five minutes with the CLI"


def walkthrough() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    match = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no bash block under {SECTION!r}"
    return match.group(1)


def test_the_walkthrough_names_only_real_commands() -> None:
    block = walkthrough()
    assert "council up" in block and block.rstrip().endswith("council down")
    assert "jq" not in block  # a new machine has Python, not jq


def test_the_walkthrough_runs_command_by_command(db_url: str, redis_url: str, tmp_path: Path) -> None:
    # Given a new user's shell: the project's .venv, no API keys, a fresh home
    # (the test's own database and Redis stand in for the embedded ones)
    redis.Redis.from_url(redis_url).flushdb()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_") and not k.endswith("_API_KEY")}
    env.update(
        COUNCIL_HOME=str(tmp_path / "home"),
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_BROKER_URL=redis_url,
        COUNCIL_WEB_PORT=str(free_port()),
        COUNCIL_OFFLINE="1",
        NO_COLOR="1",
    )
    script = "set -euo pipefail -x\n" + walkthrough()
    # When the block runs in bash from the repository root
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=README.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run(["bash", "-c", ". .venv/bin/activate && council down"], cwd=README.parent, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
    # Then every command succeeded, down included
    assert done.returncode == 0, f"walkthrough failed:\n{done.stderr[-4000:]}\n{done.stdout[-2000:]}"
    assert "not_ready" in done.stdout  # the hand-recorded runs were one group, as the comment says
    # And the council `ask` established an answer through its blind cross-review: a proposition
    # consolidated on independent support groups of different agents' blind runs (one agent
    # proposed it in round 1, others endorsed it in round 2, none shown another's stance)
    question = re.search(r'council ask "([^"]+)"', walkthrough())
    assert question is not None
    # (and its human rendering led with that answer, then each agent's words, then the propositions)
    led = re.search(
        r"^answer [0-9a-f]{8}: .*?^each agent, in its own words:.*?^propositions:", done.stdout, re.M | re.S
    )
    assert led is not None, done.stdout[-3000:]
    blind = consolidated_on_blind_runs(db_url, question.group(1))
    assert blind, "the README's ask consolidated nothing on blind runs"
    for agents_by_group in blind:
        assert len(agents_by_group) >= 2 and len(set(agents_by_group)) == len(agents_by_group)


def consolidated_on_blind_runs(db_url: str, question: str) -> list[list[str]]:
    """For each live consolidation of the thread that asked ``question``: the agent of each of
    its support groups, when every group's runs are one agent's runs of a council's two blind
    rounds (proposing and cross-review)."""
    engine = engine_for(db_url)
    [thread] = query(engine, "SELECT id FROM threads WHERE objective = :q", q=question)
    found = []
    for live in query(engine, "SELECT id FROM consolidations WHERE thread_id = :t AND status = 'live'",
                      t=thread["id"]):  # fmt: skip
        shown = show_consolidation(UnitOfWork(engine), live["id"])
        agents = []
        for group in (g for g in shown.decision["groups"] if g["kind"] == "support"):
            runs = query(engine, "SELECT agent, round, mode FROM agent_runs WHERE id = ANY(:r)",
                         r=[UUID(r) for r in group["runs"]])  # fmt: skip
            if {(r["mode"], r["round"] <= 2) for r in runs} != {("council", True)}:
                break
            if len({r["agent"] for r in runs}) != 1:
                break
            agents.append(runs[0]["agent"])
        else:
            found.append(agents)
    return found
