"""Agent-CLI runs on real Celery workers, Redis and Postgres (docs/architecture.md §7):
codex on the real Codex CLI, claude on the real Claude Code, and glm on Claude
Code at a second Anthropic-compatible endpoint — each CLI talking to a local
fake model server (tests/fakes) that first asks it to read an evidence file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import Engine

from council.domain.commands import NewAction
from council.ledger.unit import UnitOfWork
from council.services.claims import add_action
from council.services.consolidation import groups, replay
from council.services.runs import show_run
from tests.agent_clis import KEYS, profiles_toml, require_agent_clis
from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for
from tests.fakes.anthropic_server import fake_anthropic
from tests.fakes.responses_server import fake_responses

AGENTS = "claude,codex,glm"


@pytest.fixture
def cli_env(worker_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    require_agent_clis()
    # Real profiles (no simulation); a lease long enough for CLI runs on a busy machine.
    return {**worker_env, **KEYS, "COUNCIL_SIMULATE": "auto", "COUNCIL_RUN_LEASE_S": "60"}


@contextmanager
def _fake_models(env: dict[str, str], tmp_path: Path, *, delay_s: float = 0.0) -> Iterator[dict[str, Any]]:
    """Three fake endpoints (Responses for codex, Messages for claude, another Messages for
    glm), every one asking to read an evidence file first; the profiles file pointing at them."""
    with ExitStack() as stack:
        responses, codex_seen = stack.enter_context(fake_responses("read", delay_s=delay_s))
        anthropic, claude_seen = stack.enter_context(fake_anthropic("read", delay_s=delay_s))
        glm, glm_seen = stack.enter_context(fake_anthropic("read", delay_s=delay_s))
        path = tmp_path / "profiles.toml"
        path.write_text(profiles_toml(responses=responses, anthropic=anthropic, glm=glm), encoding="utf-8")
        env["COUNCIL_PROFILES"] = str(path)
        yield {"codex": codex_seen, "claude": claude_seen, "glm": glm_seen}


def _seeded(engine: Engine) -> tuple[Ledger, list[Any]]:
    ledger = Ledger.new(engine, evidence_items=4)
    versions = [
        ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])[
            "version_id"
        ],
        ledger.node("The adapter needs a Postgres-only test tier", cites=[ledger.evidence[1]])["version_id"],
        ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[2]])["version_id"],
    ]
    # An unmet pending action keeps one node open through both rounds (round 2 claims beside round 1).
    add_action(
        ledger.uow,
        NewAction(
            thread=ledger.thread_id,
            description="Run the adapter suite on PG 16",
            acceptance_condition="suite green on PG 16",
            version=versions[1],
        ),
        actor="test",
    )
    return ledger, versions


def test_three_cli_agents_deliberate_two_rounds_on_workers_and_a_node_consolidates(
    engine: Engine, uow: UnitOfWork, workers: Workers, cli_env: dict[str, str], tmp_path: Path
) -> None:
    # Given a thread with three open propositions, three CLI agents at fake endpoints, real workers
    ledger, versions = _seeded(engine)
    with _fake_models(cli_env, tmp_path) as seen:
        workers("--queues", "runs,commit,maintenance", env=cli_env)
        # When they deliberate for two rounds
        done = council(
            cli_env,
            "dispatch",
            "--thread",
            str(ledger.thread_id),
            "--agents",
            AGENTS,
            "--mode",
            "deliberative",
            "--rounds",
            "2",
            "--wait",
            "--timeout",
            "400",
            "--json",
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        # Then all six runs succeeded, none simulated, each CLI really called its own endpoint
        assert sorted((r["round"], r["agent"], r["status"]) for r in result["runs"]) == [
            (n, agent, "succeeded") for n in (1, 2) for agent in ("claude", "codex", "glm")
        ], [r.get("error") for r in result["runs"]]
        assert result["simulated"] == []
        for agent, recorder in seen.items():
            assert len(recorder.model_calls()) >= 4, agent  # two runs, each a Read and an answer
            keyed = {"codex": "authorization", "claude": "x-api-key", "glm": "x-api-key"}[agent]
            sent = {r["headers"].get(keyed, "") for r in recorder.model_calls()}
            expected = {"codex": "FAKE_OPENAI_KEY", "claude": "FAKE_ANTHROPIC_KEY", "glm": "FAKE_ZAI_KEY"}[
                agent
            ]
            assert all(KEYS[expected] in value for value in sent)
        # And every run has its request hash, exposures, trace and opened evidence
        for run in result["runs"]:
            shown = show_run(uow, run["id"])
            assert shown.request_sha256 and len(shown.request_sha256) == 64
            assert shown.runtime == ("codex-cli" if run["agent"] == "codex" else "claude-code")
            assert shown.exposures and shown.trace and shown.trace[-1].exit_status == 0
            assert shown.opened_evidence and any(o.opened for o in shown.opened_evidence)
        exposures = rows(
            engine,
            "SELECT r.round, e.run_id, e.kind, e.channel, e.exposed_to_run_id FROM run_exposures e "
            "JOIN agent_runs r ON r.id = e.run_id WHERE r.dispatch_id = :d",
            d=result["dispatch_id"],
        )
        round2_stances = [e for e in exposures if e.round == 2 and e.kind == "stance"]
        assert round2_stances and all(e.channel == "previous_round" for e in round2_stances)
        # And round-2 runs join the components of the round-1 runs whose stances they were shown
        shown_to = {(str(e.exposed_to_run_id), str(e.run_id)) for e in round2_stances}
        merged = 0
        for version in versions:
            components = [set(g.component_runs) for g in groups(uow, version).groups]
            claimers = set().union(*components) if components else set()
            for first, second in shown_to:
                if first in claimers and second in claimers:
                    assert any({first, second} <= c for c in components), (version, first, second)
                    merged += 1
        assert merged > 0
        # And a node consolidated, by the workers, without anyone calling consolidate
        wait_for(
            lambda: bool(rows(engine, "SELECT 1 FROM consolidations")), 90, "a consolidation by the workers"
        )
    live = rows(engine, "SELECT logical_node_id, count(*) AS n FROM consolidations GROUP BY logical_node_id")
    assert live and all(row.n == 1 for row in live)
    for (consolidation_id,) in rows(engine, "SELECT id FROM consolidations"):
        assert replay(uow, consolidation_id).match is True
    actors = {
        r.actor for r in rows(engine, "SELECT actor FROM events WHERE kind = 'consolidation.committed'")
    }
    # (the commit worker, or the run that closed a round deciding its versions before the next)
    assert actors and actors <= {"worker:commit", "worker:round"}


def _cli_side(proc: psutil.Process) -> bool:
    """A guard or an agent CLI (or anything they started), not a Celery process."""
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    return "guard.py" in line or "agent-clis" in line or "codex" in proc.name() or "claude" in proc.name()


def test_a_worker_killed_mid_cli_run_leaves_no_orphan_and_no_duplicated_claim(
    engine: Engine, workers: Workers, cli_env: dict[str, str], tmp_path: Path
) -> None:
    # Given CLI runs in flight on a worker, against models that take 2 s to answer each call
    # (a run opens each file it cites first: four or five calls, within the CLI deadline of 16 s)
    ledger, _ = _seeded(engine)
    with _fake_models(cli_env, tmp_path, delay_s=2.0):
        doomed = workers("--queues", "runs", env={**cli_env, "COUNCIL_RUN_LEASE_S": "20"})
        created = council(
            cli_env, "dispatch", "--thread", str(ledger.thread_id), "--agents", AGENTS, "--json"
        )
        assert created.returncode == 0, created.stderr
        cli_side: list[psutil.Process] = []

        def clis_running() -> bool:
            cli_side[:] = [p for p in psutil.Process(doomed.pid).children(recursive=True) if _cli_side(p)]
            return any("guard.py" not in " ".join(p.cmdline()) for p in cli_side if p.is_running())

        wait_for(clis_running, 60, "an agent CLI running under the worker")
        # When the worker's own processes (main and pool) are SIGKILLed, and nothing else
        celery = [p for p in psutil.Process(doomed.pid).children(recursive=True) if not _cli_side(p)]
        for proc in [*celery, psutil.Process(doomed.pid)]:
            with suppress(psutil.NoSuchProcess):  # one that ended since it was listed
                proc.kill()
        doomed.wait(10)
        # Then every guard and CLI it had started is gone within seconds: no orphan
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in cli_side):
            time.sleep(0.2)
        assert not [p.pid for p in cli_side if _alive(p)], "orphaned agent-CLI processes survived the worker"
        # And a fresh worker (with the sweep) takes over: every run ends, none duplicated a claim
        workers("--queues", "runs,commit,maintenance", "--beat", env={**cli_env, "COUNCIL_RUN_LEASE_S": "20"})
        wait_for(
            lambda: not rows(engine, "SELECT 1 FROM agent_runs WHERE status NOT IN ('succeeded', 'failed')"),
            180,
            "every run to end",
        )
    runs = rows(engine, "SELECT agent, status, attempt, error FROM agent_runs ORDER BY agent")
    assert [r.agent for r in runs] == ["claude", "codex", "glm"]
    assert all(r.status == "succeeded" or (r.status == "failed" and r.error) for r in runs)
    assert any(r.attempt >= 2 for r in runs), "a killed run should have been taken over by a new attempt"
    assert rows(engine, "SELECT run_id, node_version_id FROM claims GROUP BY 1, 2 HAVING count(*) > 1") == []
    applied = rows(
        engine, "SELECT subject_id, count(*) AS n FROM events WHERE kind = 'run.output_applied' GROUP BY 1"
    )
    assert all(row.n == 1 for row in applied)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
