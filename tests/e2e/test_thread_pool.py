"""A runs worker on a thread pool: one process runs several agent runs at once.

Runs on real models mostly wait on the network; ``council worker --pool threads``
lets one process wait on many of them. The simulated provider's latency
(``COUNCIL_SIM_LATENCY_S``) stands in for the wait.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import psutil
from sqlalchemy import Engine

from tests.builders import Ledger
from tests.e2e.conftest import Workers, council, rows, wait_for

LATENCY_S = 2.0
THREADS = 6


def _dispatch(env: dict[str, str], thread_id: Any) -> subprocess.CompletedProcess[str]:
    return council(env, "dispatch", "--thread", str(thread_id), "--agents", "claude,codex,glm", "--json")


def _most_at_once(intervals: list[tuple[Any, Any]]) -> int:
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = most = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        running += step
        most = max(most, running)
    return most


def test_one_thread_pool_process_runs_several_runs_at_once(
    engine: Engine, workers: Workers, worker_env: dict[str, str]
) -> None:
    # Given one worker process with a pool of six threads, and model calls that take two seconds
    ledgers = [Ledger.new(engine, evidence_items=2) for _ in range(2)]
    for ledger in ledgers:
        ledger.node("WAL mode is safe for concurrent readers", cites=[ledger.evidence[0]])
    worker = workers(
        "--queues",
        "runs,commit",
        "--pool",
        "threads",
        "--concurrency",
        str(THREADS),
        env={"COUNCIL_SIM_LATENCY_S": str(LATENCY_S)},
    )
    # When two councils of three are dispatched
    for ledger in ledgers:
        sent = _dispatch(worker_env, ledger.thread_id)
        assert sent.returncode == 0, sent.stderr
        assert len(json.loads(sent.stdout)["run_ids"]) == 3
    thread_ids = [ledger.thread_id for ledger in ledgers]
    query = "SELECT status, started_at, finished_at FROM agent_runs WHERE thread_id = ANY(:t)"
    wait_for(
        lambda: [r.status for r in rows(engine, query, t=thread_ids)].count("succeeded") == 6,
        timeout=120,
        what="six runs succeeded",
    )
    # Then they all succeeded in that one process (no pool children), most of them at the same time
    finished = rows(engine, query, t=thread_ids)
    assert {r.status for r in finished} == {"succeeded"}
    assert psutil.Process(worker.pid).children(recursive=True) == []
    assert _most_at_once([(r.started_at, r.finished_at) for r in finished]) >= 4


def test_a_worker_with_an_unknown_pool_or_no_concurrency_is_refused(cli: Any) -> None:
    for args, reason in (
        (["--pool", "gevent"], "--pool must be one of prefork, threads"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
    ):
        result = cli("worker", "--queues", "runs", *args)
        assert result.code == 2 and reason in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
