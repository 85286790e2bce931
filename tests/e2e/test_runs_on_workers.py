"""Council runs on real Celery workers, real Redis and real Postgres (DESIGN §7).

The simulated provider stands in for Claude, Codex and GLM (no network here);
it runs through litellm like a real model would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from sqlalchemy import Engine, text

from council.ledger import actions
from council.ledger.consolidation_reads import groups
from council.ledger.db import unit_of_work
from council.ledger.replay import replay
from tests.builders import Ledger

Workers = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def worker_env(db_url: str, redis_url: str, tmp_path: Path) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()  # no message of an earlier test survives
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    env.update(
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_BROKER_URL=redis_url,
        COUNCIL_HOME=str(tmp_path),
        COUNCIL_SIMULATE="1",
        COUNCIL_OFFLINE="1",
        COUNCIL_RUN_LEASE_S="6",
        COUNCIL_SWEEP_EVERY_S="2",
        COUNCIL_SWEEP_STALE_S="4",
        NO_COLOR="1",
    )
    return env


@pytest.fixture
def workers(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker-{len(started)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "council.cli", "worker", "--concurrency", "2", *extra],
            env={**worker_env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        _kill_tree(proc, signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            _kill_tree(proc, signal.SIGKILL)
            proc.wait(10)


def _kill_tree(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _council(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "council.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


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
    actions.add_action(
        engine,
        thread_id=ledger.thread_id,
        description="Run the adapter suite on PG 16",
        acceptance_condition="suite green on PG 16",
        version_id=versions[1],
        actor="test",
    )
    return ledger, versions


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _rows(engine: Engine, sql: str, **params: Any) -> list[Any]:
    with unit_of_work(engine) as conn:
        return list(conn.execute(text(sql), params))


def test_two_deliberative_rounds_land_lineage_and_consolidate_on_their_own(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a thread with three open propositions and real workers on every queue
    ledger, versions = _seeded(engine)
    workers("--queues", "runs,commit,maintenance")
    # When claude, codex and glm deliberate for two rounds
    done = _council(
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
    exposures = _rows(
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
        components = [set(g["component_runs"]) for g in groups(engine, version)["groups"]]
        claimers = set().union(*components) if components else set()
        for first, second in shown:
            if first in claimers and str(second) in claimers:
                assert any({first, str(second)} <= c for c in components), (version, first, second)
                merged += 1
    assert merged > 0
    # And nodes with enough independent support were consolidated exactly once, by the workers
    _wait_for(
        lambda: not _rows(engine, "SELECT 1 FROM agent_runs WHERE status NOT IN ('succeeded', 'failed')"),
        30,
        "all runs to finish",
    )
    _wait_for(
        lambda: bool(_rows(engine, "SELECT 1 FROM consolidations")), 60, "a consolidation by the workers"
    )
    live = _rows(engine, "SELECT logical_node_id, count(*) AS n FROM consolidations GROUP BY logical_node_id")
    assert live and all(row.n == 1 for row in live)
    for (consolidation_id,) in _rows(engine, "SELECT id FROM consolidations"):
        assert replay(engine, consolidation_id)["match"] is True
    actors = {
        row.actor for row in _rows(engine, "SELECT actor FROM events WHERE kind = 'consolidation.committed'")
    }
    assert actors == {"worker:commit"}


def test_a_worker_killed_mid_run_loses_nothing_and_duplicates_nothing(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given a dispatch whose runs are slow, on a worker that will be killed
    ledger, _ = _seeded(engine)
    slow = {"COUNCIL_SIM_LATENCY_S": "4"}
    doomed = workers("--queues", "runs", env=slow)
    created = _council(
        {**worker_env, **slow},
        "dispatch",
        "--thread",
        str(ledger.thread_id),
        "--agents",
        "claude,codex,glm",
        "--json",
    )
    assert created.returncode == 0, created.stderr
    _wait_for(
        lambda: bool(_rows(engine, "SELECT 1 FROM agent_runs WHERE status = 'running'")), 60, "a running run"
    )
    # When the worker and its children are SIGKILLed mid-run
    for child in psutil.Process(doomed.pid).children(recursive=True):
        child.kill()
    doomed.kill()
    doomed.wait(10)
    # And a fresh worker (with the periodic sweep) takes over
    workers("--queues", "runs,commit,maintenance", "--beat")
    _wait_for(
        lambda: not _rows(engine, "SELECT 1 FROM agent_runs WHERE status NOT IN ('succeeded', 'failed')"),
        120,
        "every run to end",
    )
    # Then every run ended succeeded or failed with a reason, none was lost, no claim duplicated
    runs = _rows(engine, "SELECT agent, status, attempt, error FROM agent_runs ORDER BY agent")
    assert [r.agent for r in runs] == ["claude", "codex", "glm"]
    assert all(r.status == "succeeded" or (r.status == "failed" and r.error) for r in runs)
    assert any(r.attempt >= 2 for r in runs), "the killed run should have been taken over by a new attempt"
    duplicates = _rows(engine, "SELECT run_id, node_version_id FROM claims GROUP BY 1, 2 HAVING count(*) > 1")
    assert duplicates == []
    applied = _rows(
        engine, "SELECT subject_id, count(*) AS n FROM events WHERE kind = 'run.output_applied' GROUP BY 1"
    )
    assert all(row.n == 1 for row in applied)
