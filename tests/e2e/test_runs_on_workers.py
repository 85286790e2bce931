"""Council runs on real Celery workers, real Redis and real Postgres (docs/architecture.md §7).

The simulated provider stands in for Claude, Codex and GLM (no network here);
it runs through litellm like a real model would.
"""

from __future__ import annotations

from typing import Any

import psutil
import pytest
from sqlalchemy import Engine

from council.domain.commands import NewAction
from council.ledger.unit import UnitOfWork
from council.services.claims import add_action
from council.services.consolidation import groups, replay
from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for


def _seeded(engine: Engine) -> tuple[Ledger, list[Any]]:
    ledger = Ledger.new(engine, evidence_items=6)
    versions = [
        ledger.node("SQLite parity establishes query-semantics equivalence", cites=[ledger.evidence[0]])[
            "version_id"
        ],
        ledger.node("The adapter needs a Postgres-only test tier", cites=[ledger.evidence[1]])["version_id"],
        ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[2]])["version_id"],
    ]
    # An unmet pending action keeps one node open through both rounds, so its
    # round-2 claims land beside the round-1 claims they were shown.
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


def test_two_deliberative_rounds_land_lineage_and_consolidate_on_their_own(
    engine: Engine, uow: UnitOfWork, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a thread with three open propositions and real workers on every queue
    ledger, versions = _seeded(engine)
    workers("--queues", "runs,commit,maintenance")
    # When claude, codex and glm deliberate for two rounds
    done = council(
        worker_env,
        "dispatch",
        "--thread",
        str(ledger.thread_id),
        "--agents",
        "claude,codex,glm",
        "--mode",
        "deliberative",
        "--rounds",
        "2",
        "--wait",
        "--timeout",
        "240",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    import json

    result = json.loads(done.stdout)
    # Then three runs per round succeeded, each with a request hash and exposures
    assert sorted((r["round"], r["agent"], r["status"]) for r in result["runs"]) == [
        (1, "claude", "succeeded"),
        (1, "codex", "succeeded"),
        (1, "glm", "succeeded"),
        (2, "claude", "succeeded"),
        (2, "codex", "succeeded"),
        (2, "glm", "succeeded"),
    ]
    assert result["simulated"] == ["claude", "codex", "glm"]
    runs = {r["id"]: r for r in result["runs"]}
    assert all(len(r["request_sha256"]) == 64 for r in runs.values())
    exposures = rows(
        engine,
        "SELECT r.round, e.run_id, e.kind, e.channel, e.exposed_to_run_id FROM run_exposures e "
        "JOIN agent_runs r ON r.id = e.run_id WHERE r.dispatch_id = :d",
        d=result["dispatch_id"],
    )
    assert {(e.round, e.kind, e.channel) for e in exposures if e.round == 1} == {
        (1, "proposition", "briefing")
    }
    round2_stances = [e for e in exposures if e.round == 2 and e.kind == "stance"]
    assert round2_stances and all(e.channel == "previous_round" for e in round2_stances)
    assert {str(e.exposed_to_run_id) for e in round2_stances} <= {
        i for i, r in runs.items() if r["round"] == 1
    }
    # And a round-2 run joins the component of every round-1 claimer whose stance it was shown
    shown = {(str(e.exposed_to_run_id), e.run_id) for e in round2_stances}
    merged = 0
    for version in versions:
        components = [set(g.component_runs) for g in groups(uow, version).groups]
        claimers = set().union(*components) if components else set()
        for first, second in shown:
            if first in claimers and str(second) in claimers:
                assert any({first, str(second)} <= c for c in components), (version, first, second)
                merged += 1
    assert merged > 0
    # And nodes with enough independent support were consolidated exactly once, by the workers
    wait_for(
        lambda: not rows(engine, "SELECT 1 FROM agent_runs WHERE status NOT IN ('succeeded', 'failed')"),
        30,
        "all runs to finish",
    )
    wait_for(lambda: bool(rows(engine, "SELECT 1 FROM consolidations")), 60, "a consolidation by the workers")
    live = rows(engine, "SELECT logical_node_id, count(*) AS n FROM consolidations GROUP BY logical_node_id")
    assert live and all(row.n == 1 for row in live)
    for (consolidation_id,) in rows(engine, "SELECT id FROM consolidations"):
        assert replay(uow, consolidation_id).match is True
    actors = {
        row.actor for row in rows(engine, "SELECT actor FROM events WHERE kind = 'consolidation.committed'")
    }
    # (the commit worker, or the run that closed round 1 deciding its versions before round 2)
    assert actors and actors <= {"worker:commit", "worker:round"}


@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_a_worker_killed_mid_run_loses_nothing_and_duplicates_nothing(
    engine: Engine, workers: Workers, worker_env: dict[str, str], pool: str
) -> None:
    # Given a dispatch whose runs are slow, on a worker (pool processes, or threads) that will be killed
    ledger, _ = _seeded(engine)
    slow = {"COUNCIL_SIM_LATENCY_S": "4"}
    doomed = workers("--queues", "runs", "--pool", pool, env=slow)
    created = council(
        {**worker_env, **slow},
        "dispatch",
        "--thread",
        str(ledger.thread_id),
        "--agents",
        "claude,codex,glm",
        "--json",
    )
    assert created.returncode == 0, created.stderr
    wait_for(
        lambda: bool(rows(engine, "SELECT 1 FROM agent_runs WHERE status = 'running'")), 60, "a running run"
    )
    # When the worker and its children are SIGKILLed mid-run
    for child in psutil.Process(doomed.pid).children(recursive=True):
        child.kill()
    doomed.kill()
    doomed.wait(10)
    # And a fresh worker (with the periodic sweep) takes over
    workers("--queues", "runs,commit,maintenance", "--beat")
    wait_for(
        lambda: not rows(engine, "SELECT 1 FROM agent_runs WHERE status NOT IN ('succeeded', 'failed')"),
        120,
        "every run to end",
    )
    # Then every run ended succeeded or failed with a reason, none was lost, no claim duplicated
    runs = rows(engine, "SELECT agent, status, attempt, error FROM agent_runs ORDER BY agent")
    assert [r.agent for r in runs] == ["claude", "codex", "glm"]
    assert all(r.status == "succeeded" or (r.status == "failed" and r.error) for r in runs)
    assert any(r.attempt >= 2 for r in runs), "the killed run should have been taken over by a new attempt"
    duplicates = rows(engine, "SELECT run_id, node_version_id FROM claims GROUP BY 1, 2 HAVING count(*) > 1")
    assert duplicates == []
    applied = rows(
        engine, "SELECT subject_id, count(*) AS n FROM events WHERE kind = 'run.output_applied' GROUP BY 1"
    )
    assert all(row.n == 1 for row in applied)
